"""``@tegula.aggregate``: a class whose instances kernels build, pass and return.

Triton's ``@triton.aggregate``. The annotated names of the class are its
fields; its methods run as kernel code when a kernel calls them::

    @tegula.aggregate
    class Tile:
        ptr: tl.tensor
        rows: tl.tensor
        BLOCK: tl.constexpr

        @tegula.jit
        def load(self):
            offs = tl.arange(0, self.BLOCK)
            return tl.load(self.ptr + offs, mask=offs < self.rows)

    @tegula.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr):
        t = Tile(x_ptr, n, BLOCK)
        x = t.load()

Without an ``__init__`` of its own the class takes its fields positionally or
by name, in the order they are declared (base classes' first), with the
class-level values of the annotated names as defaults. An instance is
immutable once ``__init__`` returns; ``aggregate_replace(obj, f=v)`` makes a
copy with fields changed. docs/language.md ("Aggregates") says what kernels
can do with one.
"""

from __future__ import annotations

import builtins
import typing

from .language.core import constexpr, tuple as tl_tuple

_MISSING = object()


def is_aggregate_class(value) -> bool:
    """A class made by ``@tegula.aggregate`` (or by Triton's ``@triton.aggregate``)."""
    return isinstance(value, type) and bool(getattr(value, "__tegula_aggregate__", False)
                                            or getattr(value, "__triton_aggregate__", False))


def is_constexpr_annotation(annotation) -> bool:
    """tl.constexpr (Tegula's or Triton's), also as the text a string annotation or
    ``from __future__ import annotations`` leaves ("tl.constexpr")."""
    if annotation is constexpr:
        return True
    if isinstance(annotation, str):
        return annotation.strip().split(".")[-1] == "constexpr"
    cls = annotation if isinstance(annotation, type) else None
    return (cls is not None and cls.__name__ == "constexpr" and (cls.__module__ or "").startswith("triton."))


def _is_class_variable(annotation) -> bool:
    """typing.ClassVar[...] (or its text): a class attribute, not a field, as for dataclasses."""
    if isinstance(annotation, str):
        return annotation.strip().split("[")[0].split(".")[-1] == "ClassVar"
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def _fields_of(cls) -> tuple[dict, dict]:
    """(field -> annotation, field -> default), base classes' fields first."""
    annotations: dict = {}
    defaults: dict = {}
    for base in reversed(cls.__mro__[1:]):
        if base is object:
            continue
        if not is_aggregate_class(base):
            raise TypeError(f"@aggregate class {cls.__qualname__}: its base {base.__qualname__} is not an "
                            f"aggregate. Aggregates can only inherit from other aggregates: make "
                            f"{base.__qualname__} an @aggregate too, or hold it in a field")
        annotations.update(base.__aggregate_annotations__)
        defaults.update(base.__aggregate_defaults__)
    own = cls.__dict__.get("__annotations__", {})
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve (a class defined later): the raw text is read
        hints = {}
    for name in own:
        annotation = hints.get(name, own[name])
        if _is_class_variable(annotation):
            continue
        annotations[name] = annotation
        value = cls.__dict__.get(name, _MISSING)
        # A tl.constexpr is callable (it calls the function it may hold), yet a field's default.
        if value is not _MISSING and (not callable(value) or isinstance(value, constexpr)):
            defaults[name] = value
    return annotations, defaults


def _wrap(value, annotation):
    """A field's value as Triton's aggregates hold it on the host: tuples as
    ``tl.tuple``, a constexpr field's value as ``tl.constexpr``."""
    if isinstance(value, builtins.tuple) and not isinstance(value, tl_tuple):
        fields = getattr(value, "_fields", None)
        # A plain number (or string, None) in a tuple is a tl.constexpr there, as in Triton.
        wrapped = tl_tuple(_wrap(v, constexpr if isinstance(v, (bool, int, float, str, type(None))) else None)
                           for v in value)
        if fields:
            wrapped = tl_tuple.named(fields, wrapped)
        return wrapped
    if is_constexpr_annotation(annotation) and not isinstance(value, constexpr):
        return constexpr(value)
    return value


def _unwrap_function(fn):
    """The Python function behind a @jit, @constexpr_function or plain one."""
    return getattr(fn, "fn", fn)


def aggregate(cls):
    """Makes `cls` an aggregate (see the module's docstring). Returns `cls`."""
    if not isinstance(cls, type):
        raise TypeError(f"@aggregate decorates a class, got {type(cls).__name__}")
    annotations, defaults = _fields_of(cls)
    for name in annotations:
        if name.startswith("__") or name in ("_aggregate_ready",):
            raise TypeError(f"@aggregate class {cls.__qualname__}: `{name}` cannot be a field name")
    slots = cls.__dict__.get("__slots__")
    if slots is not None:
        slots = (slots,) if isinstance(slots, str) else tuple(slots)
        if "__dict__" not in slots or any(name in slots for name in annotations):
            raise TypeError(f"@aggregate class {cls.__qualname__}: an aggregate keeps its fields in the "
                            f"instance's __dict__; remove __slots__")
    user_init = cls.__dict__.get("__init__")
    if user_init is not None and getattr(user_init, "__tegula_aggregate_init__", False):
        # Made by @aggregate: applied again to this class, its own __init__ is the one kept then.
        user_init = cls.__dict__.get("__aggregate_init__")
    field_names = builtins.tuple(annotations)

    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_aggregate_ready", False)
        if user_init is not None:
            _unwrap_function(user_init)(self, *args, **kwargs)
        else:
            if len(args) > len(field_names):
                raise TypeError(f"{cls.__name__}() takes {len(field_names)} fields but {len(args)} were given")
            for index, name in enumerate(field_names):
                if index < len(args):
                    if name in kwargs:
                        raise TypeError(f"{cls.__name__}() got multiple values for the field '{name}'")
                    value = args[index]
                elif name in kwargs:
                    value = kwargs.pop(name)
                elif name in defaults:
                    value = defaults[name]
                else:
                    raise TypeError(f"{cls.__name__}() is missing the field '{name}'")
                setattr(self, name, value)
            if kwargs:
                raise TypeError(f"{cls.__name__}() has no field '{next(iter(kwargs))}'")
        for name in field_names:
            if name not in self.__dict__:
                raise AttributeError(f"{cls.__name__}.__init__ did not set the field '{name}'")
        object.__setattr__(self, "_aggregate_ready", True)

    def __setattr__(self, name, value):
        if name not in annotations:
            raise AttributeError(f"{cls.__name__} has no field '{name}'")
        if self.__dict__.get("_aggregate_ready", False):
            raise AttributeError(f"cannot assign to field '{name}' on immutable aggregate {cls.__name__}: its "
                                 f"fields are set only in __init__; aggregate_replace(obj, {name}=...) makes a "
                                 f"changed copy")
        object.__setattr__(self, name, _wrap(value, annotations[name]))

    def __repr__(self):
        inner = ", ".join(f"{name}={self.__dict__.get(name, '?')!r}" for name in field_names)
        return f"{cls.__name__}({inner})"

    __init__.__tegula_aggregate_init__ = True
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = __init__
    cls.__setattr__ = __setattr__
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = __repr__
    cls.__tegula_aggregate__ = True
    cls.__aggregate_fields__ = field_names
    cls.__aggregate_annotations__ = annotations
    cls.__aggregate_defaults__ = defaults
    cls.__aggregate_init__ = user_init  # None: the fields' constructor
    return cls


def aggregate_replace(instance, **changes):
    """A copy of the aggregate `instance` with the fields named in `changes`
    set to their values (as ``dataclasses.replace``)."""
    cls = type(instance)
    if not is_aggregate_class(cls):
        raise TypeError(f"aggregate_replace() expects an aggregate instance, got {cls.__name__}")
    fields = cls.__aggregate_fields__
    for name in changes:
        if name not in fields:
            raise TypeError(f"{cls.__name__} has no field '{name}'")
    values = {name: getattr(instance, name) for name in fields}
    values.update(changes)
    copy = object.__new__(cls)
    object.__setattr__(copy, "_aggregate_ready", False)
    for name, value in values.items():
        setattr(copy, name, value)
    object.__setattr__(copy, "_aggregate_ready", True)
    return copy


def members(cls) -> dict:
    """name -> (value, is_static) for what kernels may reach through the class:
    its functions (methods, static methods, the user's ``__init__``) and its
    class-level constants, base classes' first. Dunder names other than
    ``__init__`` and ``__getitem__`` are left out."""
    found: dict = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        for name, raw in vars(klass).items():
            if name.startswith("__") and name not in ("__init__", "__getitem__"):
                continue
            if name in ("_aggregate_ready",) or name in getattr(cls, "__aggregate_fields__", ()):
                continue
            static = isinstance(raw, staticmethod)
            value = raw.__func__ if static else raw
            if name == "__init__":
                if getattr(value, "__tegula_aggregate_init__", False) or getattr(value, "__triton_builtin__", False):
                    continue  # the fields' constructor, which the compiler knows
            found[name] = (value, static)
    user_init = getattr(cls, "__aggregate_init__", None)
    if user_init is None and getattr(cls, "__triton_aggregate__", False):
        attrs = getattr(cls, "hash_attrs", None) or [None]
        if attrs[0] is not None and not getattr(attrs[0], "__triton_builtin__", False):
            user_init = attrs[0]  # Triton keeps a user's __init__ there
    found.pop("__init__", None)
    if user_init is not None:
        found["__init__"] = (user_init, False)
    return found
