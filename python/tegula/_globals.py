"""What a kernel's source can see: the globals (and closure variables) its body
names, described for the compiler as GlobalValues, and the sources of every
@jit function it calls, transitively."""

from __future__ import annotations

import ast
import functools
import math
import sys
import textwrap
import threading
import types
import weakref

import numpy as np

from . import _C
from .aggregate import is_aggregate_class, is_constexpr_annotation
from .language.core import block_type, constexpr, dtype, pointer_type, tensor
from .language.ops import tensor_descriptor

GV = _C.GlobalValue
Kind = _C.GlobalValue.Kind

_LANGUAGE_PACKAGES = ("tegula.language", "triton.language")
_TOP_LEVEL_MODULES = frozenset({"tegula", "triton"})
# The public namespaces of the tile language, most general first: a function
# exported by several (tl.exp is tl.math.exp) is named by the first.
_LANGUAGE_NAMESPACES = tuple(f"{root}.{space}" for root in ("tegula", "triton")
                             for space in ("language", "language.core", "language.math",
                                           "language.extra.libdevice", "language.extra.cuda.libdevice",
                                           "language.extra.cuda", "language.target_info"))
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def constant_value(value) -> GV | None:
    """The GlobalValue of a compile-time constant, or None if `value` is not one
    (int in int64 range, float, bool, str, None, tl.dtype, tl.constexpr of those)."""
    if isinstance(value, constexpr):
        value = value.value
    if value is None:
        return GV(Kind.None_)
    t = type(value)
    if t is bool:
        return GV(Kind.Bool, int_value=int(value))
    if t is int:
        if _INT64_MIN <= value <= _INT64_MAX:
            return GV(Kind.Int, int_value=value)
        return None
    if t is float:
        return GV(Kind.Float, float_value=value)
    if t is str:
        return GV(Kind.Str, text=value)
    if isinstance(value, dtype) and not isinstance(value, pointer_type):
        return GV(Kind.DType, text=value.canonical_name)
    return None


def _is_triton_object(value, class_name: str) -> bool:
    """Whether `value` is an instance of Triton's class `class_name`. Read by
    duck type: Tegula never imports Triton, which may not be installed."""
    cls = type(value)
    return cls.__name__ == class_name and (cls.__module__ or "").startswith("triton.")


def _triton_constant(value) -> GV | None:
    """A `tl.constexpr(...)` or a dtype made by the real `triton.language`, as
    a kernel module written for Triton holds them (`BLOCK = tl.constexpr(64)`,
    `DTYPE = tl.float16`), or None for anything else."""
    if _is_triton_object(value, "constexpr"):
        return constant_value(getattr(value, "value", None))
    if _is_triton_object(value, "dtype"):
        try:
            return constant_value(dtype(getattr(value, "name", "")))  # Triton's short names are Tegula's
        except ValueError:  # fp8 and the other types Tegula does not have
            return None
    return None


def language_member(value) -> str | None:
    """Where the tile language exports `value` ("triton.language.extra.libdevice.rsqrt"),
    or None if it is not one of its functions. Found by identity in the language's
    namespaces (Tegula's, and Triton's where a kernel module imported it), so an
    alias (`from triton.language import sum as tsum`) means what the original name
    means, and a host function that merely shares a name does not."""
    if not callable(value) or isinstance(value, (dtype, constexpr)):
        return None
    own_name = getattr(value, "__name__", None)
    for module_name in _LANGUAGE_NAMESPACES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        if isinstance(own_name, str) and getattr(module, own_name, None) is value:
            return f"{module_name}.{own_name}"
        for name, member in vars(module).items():  # exported under another name
            if member is value and not name.startswith("_"):
                return f"{module_name}.{name}"
    # A copy of a language function from a second execution of its module (xformers's libdevice_find
    # re-executes libdevice from its import spec): the function its module and name say, as Triton
    # resolves a global by its __module__.
    home = sys.modules.get(getattr(value, "__module__", None) or "")
    original = getattr(home, own_name, None) if isinstance(own_name, str) else None
    if (home is not None and home.__name__ in _LANGUAGE_NAMESPACES and original is not None and original is not value
            and getattr(original, "__qualname__", None) == getattr(value, "__qualname__", None)):
        return language_member(original)
    return None


def _is_user_jit_function(value, jit_function_type) -> bool:
    """A @tegula.jit function defined outside the language packages, which
    language_member (a scan of their namespaces) need not look for."""
    if not isinstance(value, jit_function_type):
        return False
    module = getattr(value.fn, "__module__", None) or ""
    return not module.startswith(("tegula.language", "triton.language"))


# @jit functions passed as constexpr arguments, by the reference their launch
# key holds (their id). Held strongly: a launcher's compiled kernels are keyed
# by that reference, which must never name another function; such functions
# are module-level helpers, which live as long as the program anyway.
_CONSTEXPR_FUNCTIONS: dict = {}


def constexpr_function(value) -> str | None:
    """How a launch key names a function passed as a constexpr argument
    (``kernel[grid](x, ACTIVATION=relu)``, ``func=tl.extra.cuda.smid``):
    "member:PATH" for a function of the tile language, "jit:REF" for a @jit
    function (Tegula's or Triton's), None for anything else."""
    from .jit import JITFunction

    if _is_triton_object(value, "JITFunction") and isinstance(getattr(value, "fn", None), types.FunctionType):
        reference = f"triton-{id(value)}"
        if reference not in _CONSTEXPR_FUNCTIONS:
            _CONSTEXPR_FUNCTIONS[reference] = (value, JITFunction(value.fn))
        return f"jit:{reference}"
    member = None if _is_user_jit_function(value, JITFunction) else language_member(value)
    if member is not None:
        return f"member:{member}"
    if isinstance(value, JITFunction):
        reference = str(id(value))
        _CONSTEXPR_FUNCTIONS.setdefault(reference, (value, value))
        return f"jit:{reference}"
    return None


# @aggregate classes whose instances launches passed, by the reference their launch key holds (the
# class's id). Held strongly, as _CONSTEXPR_FUNCTIONS are: a compiled kernel is keyed by it.
_AGGREGATE_CLASSES: dict = {}


def aggregate_fields(value):
    """An @aggregate instance as a launch passes it: ("agg:REF", its fields' values in order, their
    names), the runtime ones becoming parameters of their own and the tl.constexpr ones constants."""
    from ._errors import coded

    cls = type(value)
    reference = str(id(cls))
    _AGGREGATE_CLASSES.setdefault(reference, cls)
    state = getattr(value, "__dict__", {})
    fields = cls.__aggregate_fields__
    for name in fields:
        if name not in state:
            raise coded(TypeError, "E0702", f"an instance of {cls.__name__} passed to a kernel has no value for its "
                                            f"field '{name}' (made without its __init__, or the field deleted)")
    return "agg:" + reference, tuple(state[name] for name in fields), tuple(fields)


def _aggregate_specs(specs):
    """The runtime tuple specs among `specs` (nested ones too) that are host-built aggregates."""
    for spec in specs:
        if spec.kind == _C.ArgSpec.Kind.Tuple:
            if spec.value.kind == Kind.Str and spec.value.text.startswith("agg:"):
                yield spec
            yield from _aggregate_specs(spec.parts)


def _constexpr_jit_references(value, out: list) -> None:
    """The references to @jit functions a launch key left in `value` (a
    constexpr argument's GlobalValue) and its tuple elements."""
    if value.kind == Kind.JitFunction and value.function < 0:
        out.append(value.text)
    elif value.kind == Kind.Tuple:
        for element in value.elements:
            _constexpr_jit_references(element, out)


def _constexpr_specs(specs):
    """The constexpr specs among `specs` and the elements of their runtime tuples."""
    for spec in specs:
        if spec.kind == _C.ArgSpec.Kind.Constexpr:
            yield spec
        elif spec.kind == _C.ArgSpec.Kind.Tuple:
            yield from _constexpr_specs(spec.parts)


def _resolve_specs(specs: list, index_of: dict, aggregates: dict) -> None:
    """_resolve_constexpr_jit over the constexpr values of `specs`, in place (a runtime tuple's parts are
    copies under nanobind: rebuilt and assigned back); a host-built aggregate's reference becomes its
    class's description (`aggregates`: reference -> GlobalValue)."""
    for spec in specs:
        if spec.kind == _C.ArgSpec.Kind.Constexpr:
            spec.value = _resolve_constexpr_jit(spec.value, index_of)
        elif spec.kind == _C.ArgSpec.Kind.Tuple:
            if spec.value.kind == Kind.Str and spec.value.text.startswith("agg:"):
                spec.value = aggregates[spec.value.text[4:]]
            parts = list(spec.parts)
            _resolve_specs(parts, index_of, aggregates)
            spec.parts = parts


def _resolve_constexpr_jit(value, index_of: dict):
    """`value` with its references to @jit functions replaced by their indices
    in the request (nanobind hands out copies of nested values: rebuilt and
    assigned back, not changed in place)."""
    if value.kind == Kind.JitFunction and value.function < 0:
        value.function, value.text = index_of[id(_CONSTEXPR_FUNCTIONS[value.text][1])], ""
    elif value.kind == Kind.Tuple:
        value.elements = [_resolve_constexpr_jit(e, index_of) for e in value.elements]
    return value


def _opaque_description(value) -> str:
    if isinstance(value, types.ModuleType):
        return f"module '{value.__name__}'"
    # NumPy's and the math module's functions as programs write them: np.exp, math.exp.
    name = getattr(value, "__name__", None)
    if isinstance(name, str) and not isinstance(value, type) and getattr(np, name, None) is value:
        return f"np.{name}"
    if isinstance(value, types.BuiltinFunctionType) and getattr(value, "__module__", None) == "math":
        return f"math.{name}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        module = getattr(value, "__module__", None) or ""
        if module.startswith(("tegula.language", "triton.language")):
            return f"function '{value.__name__}' of {module}, which is not one of the tile language's functions"
        return f"function '{value.__qualname__}' (not a @tegula.jit function)"
    if isinstance(value, type):
        module = getattr(value, "__module__", None)
        return f"class '{value.__qualname__ if module in (None, 'builtins') else module + '.' + value.__qualname__}'"
    if _is_triton_object(value, "dtype"):
        return f"Triton's dtype {getattr(value, 'name', '?')}, which Tegula does not support"
    if type(value) is int:
        return f"int {value} (outside the 64-bit range of kernel constants)"
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value)  # torch.float16
    if isinstance(value, np.dtype):
        return f"np.dtype('{value}')"
    if isinstance(getattr(value, "__name__", None), str):  # a NumPy ufunc, a functools.partial's function
        return f"{type(value).__qualname__} '{value.__name__}'"
    return f"object of type '{type(value).__qualname__}'"


def _referenced_names(code: types.CodeType, out: set[str]) -> None:
    out.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _referenced_names(const, out)


# CPython 3.11 (through 3.11.8, gh-106905) counts the depth of the AST it
# builds in state shared by every thread: two ast.parse calls at once (the
# autotuner compiles its configs in threads) can fail with "SystemError: AST
# constructor recursion depth mismatch". Tegula's parses take turns.
_PARSE_LOCK = threading.Lock()


def parse_dedented(text: str) -> ast.Module:
    """ast.parse of `text` dedented (a method's source), one thread at a time."""
    text = textwrap.dedent(text)
    with _PARSE_LOCK:
        return ast.parse(text)


@functools.lru_cache(maxsize=256)
def _annotation_names(source: str) -> frozenset[str]:
    """Names read by annotations of local variables (``k: tl.constexpr = 2``).
    Python never evaluates those, so they are missing from the code object,
    yet the compiler reads them: a helper that names ``tl`` only there must
    still see it."""
    try:
        tree = parse_dedented(source)
    except SyntaxError:  # the compiler reports it, with its location
        return frozenset()
    return frozenset(name.id for node in _statements(tree.body) if isinstance(node, ast.AnnAssign)
                     for name in ast.walk(node.annotation) if isinstance(name, ast.Name))


@functools.lru_cache(maxsize=256)
def _source_names(source: str) -> frozenset[str]:
    """Every name `source` reads: for a kernel whose text was replaced
    (`_unsafe_update_src`), which its code object no longer describes."""
    try:
        tree = parse_dedented(source)
    except SyntaxError:  # the compiler reports it, with its location
        return frozenset()
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def _statements(body: list):
    """Every statement of `body`, nested blocks included. Annotations are
    statements, so expressions (most of a long kernel's nodes) are skipped."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(reversed(getattr(node, field, None) or ()))


def visible_values(fn: types.FunctionType, source: str | None = None, replaced: bool = False) -> dict:
    """name -> host value for every global or closure variable `fn` names
    (in its code, or in the local annotations of `source`, its text; every
    name of `source` when it `replaced` the text the code was compiled from).
    Builtins and undefined names are left out: the compiler knows the builtins
    it supports and reports the rest where they are used."""
    names: set[str] = set()
    _referenced_names(fn.__code__, names)
    # A code object that names nothing (one made empty and given the text of a file of its own, as Triton's
    # tests do with _testcapi.code_newempty) does not describe the text: read the names from the text.
    replaced = replaced or not names
    if source is not None:
        names |= _source_names(source) if replaced else _annotation_names(source)
    values = {}
    fn_globals = fn.__globals__
    for name in sorted(names):
        if name in fn_globals:
            values[name] = fn_globals[name]
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # a closure variable not assigned yet
            continue
    if source is not None and any(_is_host_module(v) for v in values.values()):
        _add_module_members(values, source)
    return values


def _is_host_module(value) -> bool:
    """A module whose attributes the host resolves for the compiler: any but
    the tile language's and the top-level tegula/triton (the compiler knows
    those names itself)."""
    if not isinstance(value, types.ModuleType):
        return False
    name = value.__name__
    return not (name in _LANGUAGE_PACKAGES or name in _TOP_LEVEL_MODULES
                or name.startswith(("tegula.language.", "triton.language.")))


class _ClassNamespace:
    """A class reached through a host module whose attribute a kernel reads
    (``language.Sum.forward``): described to the compiler as a namespace, as
    a module is, so that the attribute is the global under the dotted name."""

    __slots__ = ("cls",)

    def __init__(self, cls: type):
        self.cls = cls


def _is_namespace_class(value) -> bool:
    """A plain class (not an @aggregate, a named tuple or one of the tile
    language's) whose attributes Triton reads with getattr when a kernel names
    them through a module: ``module.Class.static_jit_method(x)``."""
    if not isinstance(value, type) or is_aggregate_class(value) or _named_tuple_type(value) is not None:
        return False
    return not (getattr(value, "__module__", None) or "").startswith(
        ("tegula.", "triton.", "builtins")) and value.__module__ not in _TOP_LEVEL_MODULES


def _add_module_members(values: dict, source: str) -> None:
    """Adds ``"helpers.f": helpers.f`` to `values` for every ``helpers.f`` the
    source names on a host module ``helpers`` (and ``"a.b.c"`` through a
    module ``a.b``), as Triton resolves a module's attributes when it
    compiles. Past the module, a class's attributes are read the same way
    (``"helpers.Ops.forward"``, Triton's getattr on the class), the class
    itself standing as a namespace. An attribute the module lacks is left out:
    the compiler reports it where it is used."""
    for chain in _attribute_chains(source):
        value = values.get(chain[0])
        dotted = chain[0]
        for i, attr in enumerate(chain[1:]):
            if not _is_host_module(value):
                if i == 0 or not _is_namespace_class(value):
                    break
                values[dotted] = _ClassNamespace(value)
            try:
                value = getattr(value, attr)
            except AttributeError:
                break
            dotted += "." + attr
            values[dotted] = value


@functools.lru_cache(maxsize=256)
def _attribute_chains(source: str) -> tuple:
    """Every ``name.attr[.attr...]`` the source reads, as tuples of names, the
    longest chains only (their prefixes are resolved on the way)."""
    try:
        tree = parse_dedented(source)
    except SyntaxError:  # the compiler reports it, with its location
        return ()
    chains, inner = set(), set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts, base = [node.attr], node.value
        while isinstance(base, ast.Attribute):
            inner.add(id(base))
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and id(node) not in inner:
            chains.add((base.id, *reversed(parts)))
    return tuple(sorted(chains))


_WRAPPED_FUNCTIONS: dict = {}  # id of a function a tl.constexpr wraps -> (it, its ConstexprFunction)
_PLAIN_FUNCTIONS: dict = {}  # id of a plain function a kernel names -> (it, its ConstexprFunction)
_WRAPPED_FUNCTIONS_LOCK = threading.Lock()  # both tables


def _unwrap_callable(value):
    """What a kernel calls through a global ``tl.constexpr`` wrapping a callable
    (``@tl.constexpr def accum_type(dtype): ...``): Triton's constexpr calls
    what it wraps, so a @jit function is that function and a plain one runs
    on the host while the kernel compiles, as a @constexpr_function does.
    Any other value is returned as it is."""
    if not isinstance(value, constexpr):
        return value
    fn = value.value
    if not callable(fn) or isinstance(fn, (type, dtype)):
        return value
    from .constexpr_function import ConstexprFunction
    from .jit import JITFunction

    if isinstance(fn, (JITFunction, ConstexprFunction)) or _is_triton_object(fn, "JITFunction"):
        return fn
    with _WRAPPED_FUNCTIONS_LOCK:
        held = _WRAPPED_FUNCTIONS.get(id(fn))
        if held is None or held[0] is not fn:
            held = _WRAPPED_FUNCTIONS[id(fn)] = (fn, ConstexprFunction(fn))
    return held[1]


# How the launcher reads a watched value again (collect_sources' `watches`; launcher.cpp's WatchVia).
WATCH_ITEM, WATCH_CELL, WATCH_ATTRIBUTE = 0, 1, 2


def _watch(fn: types.FunctionType, name: str, value, watches: list) -> None:
    """Adds to `watches` where `fn` found `value` under `name`: its closure cell, else its module global
    (dotted names of host modules' members are neither); and a tl.constexpr's value, which `x.value = ...`
    changes without rebinding anything."""
    freevars = fn.__code__.co_freevars
    if name in freevars and fn.__closure__:
        watches.append((fn.__closure__[freevars.index(name)], name, value, WATCH_CELL))
    elif fn.__globals__.get(name, watches) is value:
        watches.append((fn.__globals__, name, value, WATCH_ITEM))
    else:
        return
    if isinstance(value, constexpr):
        watches.append((value, "value", value.value, WATCH_ATTRIBUTE))


def collect_sources(root, args=None, watches=None) -> list:
    """FunctionSource of `root` (index 0) and of every @jit function it reaches
    through its globals, each once; GlobalValues refer to them by index.

    `args` (a request's ArgSpecs, changed in place): @jit functions passed
    as constexpr arguments are collected too, after the kernel's, and their
    specs' references become those indices.

    `watches` (a list): gets (holder, name, value, how) for every host value
    the functions read, so a launch can see one changed since (the launcher
    compiles again): WATCH_ITEM, ``holder[name]`` (a module global, an
    aggregate class's member); WATCH_CELL, the closure cell `holder`'s
    contents (a closure variable); WATCH_ATTRIBUTE, ``holder.value`` of a
    ``tl.constexpr`` read as a global or closure variable (changed in place)."""
    from .jit import JITFunction

    sources: list = []
    index_of: dict[int, int] = {}
    triton_helpers: dict = {}  # id of a Triton JITFunction -> its Tegula JITFunction

    def open_function(jit_fn) -> list:
        """Reserves `jit_fn`'s index (depth-first preorder) and returns its frame:
        [function, index, its globals so far, the host values still to see]."""
        index = len(sources)
        index_of[id(jit_fn)] = index
        sources.append(None)
        return [jit_fn, index, {}, iter(visible_values(jit_fn.fn, jit_fn._source, getattr(jit_fn, "_src_replaced", False)).items())]

    # Depth-first with an explicit stack: a chain of helpers as long as
    # Python allows must not exhaust the interpreter's recursion limit here
    # (the compiler reports a chain that is too deep, with its location).
    aggregates: dict[int, GV] = {}  # id of an @aggregate class -> its description

    def aggregate_type(cls, opened: list) -> GV:
        """The description of an @aggregate class; frames of the methods not
        collected yet go to `opened`."""
        if id(cls) in aggregates:
            return aggregates[id(cls)]
        from .aggregate import members

        fields = cls.__aggregate_fields__
        annotations = getattr(cls, "__aggregate_annotations__", None) or getattr(cls, "__annotations__", {})
        defaults = getattr(cls, "__aggregate_defaults__", {})
        described = GV(Kind.AggregateType, text=f"{cls.__qualname__}@{cls.__module__}:{','.join(fields)}")
        aggregates[id(cls)] = described
        if watches is not None:  # a method or constant replaced on the class later compiles the kernel again
            for klass in cls.__mro__[:-1]:
                namespace = vars(klass)
                for name, raw in namespace.items():
                    if not name.startswith("__") or name in ("__init__", "__getitem__", "__aggregate_init__"):
                        watches.append((namespace, name, raw, WATCH_ITEM))
        default_names = [f for f in fields if f in defaults]
        part_defaults = GV(Kind.Tuple, text=",".join(default_names))
        part_defaults.elements = [describe(_triton_value(defaults[f])) for f in default_names]
        names, values = [], []
        for name, (value, static) in members(cls).items():
            if isinstance(value, (property, classmethod)):
                kind = "property" if isinstance(value, property) else "classmethod"
                names.append(name)
                values.append(GV(Kind.Opaque, text=f"`{name}`, a {kind} of {cls.__name__} (a kernel calls "
                                                  f"@jit methods and static methods, not {kind}s)"))
                continue
            function = _aggregate_method(cls, name, value, JITFunction, triton_helpers)
            if function is None:
                values.append(describe(value))
            else:
                if id(function) not in index_of:
                    opened.append(open_function(function))
                values.append(GV(Kind.JitFunction, function=index_of[id(function)]))
            names.append(("@" if static else "") + name)
        part_members = GV(Kind.Tuple, text=",".join(names))
        part_members.elements = values
        part_constexprs = GV(Kind.Tuple, text=",".join(
            f for f in fields if is_constexpr_annotation(annotations.get(f))))
        bases = [klass for klass in cls.__mro__[1:] if is_aggregate_class(klass)]
        part_bases = GV(Kind.Tuple, text=",".join(f"{b.__qualname__}@{b.__module__}" for b in bases))
        described.elements = [part_defaults, part_members, part_constexprs, part_bases]
        return described

    stack = [open_function(root)]
    # Aggregates built on the host and passed to the kernel: their classes' methods are collected too.
    passed_aggregates: dict = {}
    for spec in _aggregate_specs(args or ()):
        reference = spec.value.text[4:]
        if reference not in passed_aggregates:
            opened: list = []
            passed_aggregates[reference] = aggregate_type(_AGGREGATE_CLASSES[reference], opened)
            stack.extend(opened)
    constexprs = list(_constexpr_specs(args or ()))
    references = []
    for spec in constexprs:
        _constexpr_jit_references(spec.value, references)
    pending = [_CONSTEXPR_FUNCTIONS[reference][1] for reference in reversed(references)]
    while stack or pending:
        if not stack:
            fn = pending.pop()
            if id(fn) not in index_of:
                stack.append(open_function(fn))
            continue
        jit_fn, index, globals_, values = stack[-1]
        callee = None
        callees: list = []  # frames to collect before this function's (an aggregate's methods)
        for name, value in values:
            if watches is not None and not isinstance(value, types.ModuleType):  # a module is not rebound
                _watch(jit_fn.fn, name, value, watches)
            value = _unwrap_callable(value)
            member = None if _is_user_jit_function(value, JITFunction) else language_member(value)
            if member is not None:  # before JITFunction: some of Triton's tl functions are @jit
                globals_[name] = GV(Kind.LanguageMember, text=member)
                continue
            if _is_triton_object(value, "JITFunction") and isinstance(getattr(value, "fn", None),
                                                                      types.FunctionType):
                # A helper decorated with @triton.jit: the same source, compiled by Tegula.
                # Wrapped once per collection, so it has one object (and one id).
                if id(value) not in triton_helpers:
                    triton_helpers[id(value)] = JITFunction(value.fn)
                value = triton_helpers[id(value)]
            if isinstance(value, JITFunction):
                if id(value) not in index_of:
                    callee = open_function(value)
                globals_[name] = GV(Kind.JitFunction, function=index_of[id(value)])
                if callee is not None:
                    break
            elif is_aggregate_class(value):
                opened: list = []
                globals_[name] = aggregate_type(value, opened)
                if opened:
                    callees = opened
                    break
            else:
                globals_[name] = describe(value)
        if callee is not None:
            callees = [callee]
        if callees:
            stack.extend(callees)
            continue
        sources[index] = _C.FunctionSource(name=jit_fn.__name__, filename=jit_fn.filename_text,
                                           source=jit_fn._source, first_line=jit_fn.first_line,
                                           globals=globals_)
        must_use = getattr(jit_fn, "_must_use_result", False)
        if must_use:  # the note the error adds, " " for none
            sources[index].must_use_result = must_use if isinstance(must_use, str) and must_use else " "
        stack.pop()
    _resolve_specs(args or [], index_of, passed_aggregates)
    return sources


# The @jit functions kernels run for an aggregate's members that are not @jit functions
# of Tegula's (plain methods, constexpr functions, Triton's @jit): one per class and name.
_AGGREGATE_METHODS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _aggregate_method(cls, name, value, jit_function_type, triton_helpers):
    """The @jit function a kernel runs for the member `value` of the aggregate
    class `cls`, or None for a member that is not a function (a constant)."""
    from .constexpr_function import ConstexprFunction

    if isinstance(value, jit_function_type):
        return value
    if _is_triton_object(value, "JITFunction") and isinstance(getattr(value, "fn", None), types.FunctionType):
        if id(value) not in triton_helpers:
            triton_helpers[id(value)] = jit_function_type(value.fn)
        return triton_helpers[id(value)]
    fn = value.fn if isinstance(value, ConstexprFunction) or _is_triton_object(value, "ConstexprFunction") else value
    if not isinstance(fn, types.FunctionType):
        return None
    made = _AGGREGATE_METHODS.setdefault(cls, {})
    if name not in made or made[name].fn is not fn:
        try:
            wrapped = jit_function_type(fn)
        except (OSError, TypeError):  # no source to compile: the kernel is told where it calls it
            return None
        must_use = getattr(value, "_must_use_result", False)
        if must_use:
            wrapped._must_use_result = must_use
        made[name] = wrapped
    return made[name]


def _triton_value(value):
    """A field default as Tegula describes it (Triton's constexpr wrappers unwrapped)."""
    return value.value if isinstance(value, constexpr) or _is_triton_object(value, "constexpr") else value


def _named_tuple_type(value) -> GV | None:
    """A named tuple class (typing.NamedTuple, collections.namedtuple) as kernels can call it, or None."""
    if not (isinstance(value, type) and issubclass(value, tuple)):
        return None
    fields = getattr(value, "_fields", None)
    if not isinstance(fields, tuple) or not all(isinstance(f, str) and f.isidentifier() for f in fields):
        return None
    defaults = getattr(value, "_field_defaults", {}) or {}
    described = GV(Kind.NamedTupleType, text=f"{value.__name__}:{','.join(fields)}")
    trailing = [f for f in fields if f in defaults]
    if trailing != list(fields[len(fields) - len(trailing):]):
        return None
    values = [constant_value(defaults[f]) for f in trailing]
    if any(v is None for v in values):  # a default a kernel cannot hold: fields without defaults then
        values = []
    described.elements = values
    return described


def describe(value) -> GV:
    """The GlobalValue of a host value that is not a @jit function."""
    from .constexpr_function import ConstexprFunction

    if isinstance(value, ConstexprFunction):
        described = GV(Kind.ConstexprFunction, text=value.reference)
        # A @constexpr_function (or one of Triton's builtins) is given a stand-in for a tile, as Triton gives
        # it the tensor; a plain Python function a kernel calls takes constants only.
        builtin = bool(getattr(value.fn, "__triton_builtin__", False))
        described.elements = [GV(Kind.Str, text=value.source),  # what the cache key sees of it
                              GV(Kind.Bool, int_value=int(builtin or not value.plain))]
        return described
    named = _named_tuple_type(value)
    if named is not None:
        return named
    if isinstance(value, _ClassNamespace):
        return GV(Kind.HostModule, text=_opaque_description(value.cls))
    if isinstance(value, types.ModuleType):
        name = value.__name__
        if name in _LANGUAGE_PACKAGES or name.startswith(("tegula.language.", "triton.language.")):
            return GV(Kind.Language, text=name)
        if name in _TOP_LEVEL_MODULES:
            return GV(Kind.Tegula, text=name)
        return GV(Kind.HostModule, text=_opaque_description(value))
    constant = constant_value(value)
    if constant is None:
        constant = _triton_constant(value)
    if constant is not None:
        return constant
    if isinstance(value, np.generic):  # np.float32(0.5), np.int64(3), np.bool_(True)
        constant = constant_value(value.item())
        if constant is not None:
            return constant
    if _is_plain_function(value):  # math.log2(math.e) in a kernel runs on the host, as in Triton
        return describe(_plain_function(value))
    return GV(Kind.Opaque, text=_opaque_description(value))


def _is_plain_function(value) -> bool:
    """A host function a kernel may call on constants while it compiles: a Python or built-in function (not
    one of the tile language's, which language_member found first) or a NumPy ufunc."""
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        module = getattr(value, "__module__", None) or ""
        return not module.startswith(("tegula.language", "triton.language"))
    return False


def _plain_function(fn):
    """`fn`'s ConstexprFunction, one per function (held with it, so an id is never reused for another)."""
    from .constexpr_function import ConstexprFunction

    with _WRAPPED_FUNCTIONS_LOCK:
        held = _PLAIN_FUNCTIONS.get(id(fn))
        if held is None or held[0] is not fn:
            held = _PLAIN_FUNCTIONS[id(fn)] = (fn, ConstexprFunction(fn, plain=_opaque_description(fn)))
    return held[1]


# --- @constexpr_function calls, made by the compiler while it lowers a kernel ---


class _StandIn(tensor):
    """What a ``@constexpr_function`` or a Triton builtin (``__triton_builtin__``) is given for a kernel value
    that has no host value: a tile or a scalar known only at run time. It tells its ``dtype``, ``shape`` and ``type``; returned, it means that
    value again. The builtin runs while the kernel compiles, so it cannot compute on it."""

    def __init__(self, call: object, index: int, dtype_, shape: tuple):
        self._call, self._index = call, index
        self.dtype, self.shape = dtype_, list(shape)
        self.type = block_type(dtype_, shape) if shape else dtype_
        self.numel = constexpr(math.prod(shape))

    def _no_contents(self, *args, **kwargs):
        raise TypeError(f"{self!r} is known only when the kernel runs: while it compiles, a host function may "
                        "read its dtype and shape or return it, and compute with it only in a @jit function")

    def __repr__(self) -> str:
        return f"<stand-in for a kernel value of type {self.type!r}>"


for _name in ("bool", "index", "int", "float", "getitem", "iter", "len", "neg", "pos", "abs", "invert", "lt", "le",
              "gt", "ge", *(f"{r}{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and",
                                                    "or", "xor", "lshift", "rshift", "matmul") for r in ("", "r"))):
    setattr(_StandIn, f"__{_name}__", _StandIn._no_contents)
del _name


class _DescriptorStandIn(tensor_descriptor):
    """A tensor descriptor's stand-in (see _StandIn): its element ``dtype``, ``block_shape`` and ``block_type``."""

    def __init__(self, call: object, index: int, dtype_, block_shape: tuple):
        self._call, self._index = call, index
        self.dtype, self.block_shape = dtype_, list(block_shape)
        self.block_type = block_type(dtype_, block_shape)

    def __repr__(self) -> str:
        return f"<stand-in for a tensor descriptor of {self.block_type!r} blocks>"


def _stand_in(call: object, value):
    text = value.text.removeprefix("desc:")
    shape = tuple(d.int_value for d in value.elements)
    element_type = _host_argument(GV(Kind.DType, text=text.lstrip("*")))
    if value.text.startswith("desc:"):
        return _DescriptorStandIn(call, value.int_value, element_type, shape)
    if text.startswith("*"):
        element_type = pointer_type(element_type)
    return _StandIn(call, value.int_value, element_type, shape)


def _host_argument(value, call: object = None):
    """A GlobalValue the compiler passes to a constexpr function, as the Python value it stands for; `call`
    marks the stand-ins of one call (GlobalValue.Kind.StandIn) as its own."""
    from . import language

    if value.kind == Kind.StandIn:
        return _stand_in(call, value)
    if value.kind == Kind.Tuple:
        elements = tuple(_host_argument(e, call) for e in value.elements)
        if value.text:  # a named tuple: an instance of a namedtuple class of the same fields
            return _named_tuple_class(value.text)(*elements)
        return elements
    if value.kind == Kind.None_:
        return None
    if value.kind == Kind.Bool:
        return bool(value.int_value)
    if value.kind == Kind.Int:
        return value.int_value
    if value.kind == Kind.Float:
        return value.float_value
    if value.kind == Kind.Str:
        return value.text
    if value.kind == Kind.DType:
        found = getattr(language, value.text, None)
        if isinstance(found, dtype):
            return found
        for candidate in vars(language).values():
            if isinstance(candidate, dtype) and value.text in (candidate.canonical_name, candidate.name):
                return candidate
    raise TypeError(f"no host value for a {value.kind}")


@functools.lru_cache(maxsize=None)
def _named_tuple_class(fields: str):
    import collections

    return collections.namedtuple("NamedTuple", fields.split(","))


def _host_result(value, call: object = None):
    """A constexpr function's result as a GlobalValue, or None when a kernel cannot use it: a stand-in only
    when it is one of this call's (`call`)."""
    if isinstance(value, (_StandIn, _DescriptorStandIn)):
        return GV(Kind.StandIn, int_value=value._index) if value._call is call and call is not None else None
    if isinstance(value, tuple):
        elements = [_host_result(e, call) for e in value]
        if any(e is None for e in elements):
            return None
        fields = getattr(type(value), "_fields", None)
        described = GV(Kind.Tuple, text=",".join(fields) if isinstance(fields, tuple) and len(fields) == len(value)
                       else "")
        described.elements = elements
        return described
    if isinstance(value, np.generic):  # a NumPy function's result: np.float64(1.41...)
        value = value.item()
    return constant_value(value)


def _oversized(value) -> str | None:
    """Why a constexpr function's result is past the bounds of the compile-time values a kernel holds
    (src/frontend/value_bounds.h), or None. Counted before it is converted: a result of ten million
    values took 20 seconds to convert before the compiler refused it."""
    limit, depth_limit = _C.MAX_COMPILE_TIME_VALUES, _C.MAX_COMPILE_TIME_DEPTH
    parts, pending = 0, [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, constexpr):
            item = item.value
        if not isinstance(item, tuple):
            continue
        if depth >= depth_limit:
            return f"returned tuples nested more than {depth_limit} deep, which a kernel cannot hold"
        parts += len(item) + 1
        if parts > limit:
            return (f"returned a tuple of more than {limit} values (counting those of the tuples inside it), "
                    f"which a kernel cannot hold")
        pending.extend((e, depth + 1) for e in item)
    return None


def call_constexpr_function(reference: str, args: list, kwargs: dict) -> tuple:
    """Runs the constexpr function `reference` on the compiler's arguments:
    (its result as a GlobalValue, None), or (None, what to report)."""
    from .constexpr_function import find

    function = find(reference)
    if function is None:
        return None, "is no longer known to this process (a kernel cached from another run?)"
    call = object()
    argument = lambda value: _host_argument(value, call)  # noqa: E731
    if getattr(function.fn, "__triton_builtin__", False):
        # A function marked as one of Triton's builtins is called by Triton's front end with its
        # compile-time arguments as they are there, wrapped in tl.constexpr (and checks for that),
        # its tiles as tensors, and may return a tl.constexpr.
        argument = lambda value: _host_argument(value, call) if value.kind in (Kind.Tuple, Kind.StandIn) \
            else constexpr(_host_argument(value))  # noqa: E731
    try:
        result = function.fn(*(argument(a) for a in args), **{k: argument(v) for k, v in kwargs.items()})
    except Exception as e:  # the message goes into the compile error, at the call's line
        return None, f"raised {type(e).__name__}: {e}"
    if isinstance(result, constexpr):
        result = result.value
    oversized = _oversized(result)
    if oversized:
        return None, oversized
    described = _host_result(result, call)
    if described is None and isinstance(result, (_StandIn, _DescriptorStandIn)):
        return None, "returned a tile it was given by another call; return one of this call's arguments"
    if described is None:
        return None, (f"returned {type(result).__name__} {result!r:.80}, which a kernel cannot use: return an int, "
                      f"float, bool, str, None, dtype or a tuple of them")
    return described, None
