"""``@tegula.constexpr_function``: a Python function kernels call on constants.

Triton's ``@triton.constexpr_function``: the function runs on the host while
the kernel compiles, on the values of its (constexpr) arguments, and its
result is a constant of the kernel::

    @tegula.constexpr_function
    def log2(n):
        return n.bit_length() - 1

    @tegula.jit
    def kernel(x_ptr, N: tl.constexpr):
        SHIFT: tl.constexpr = log2(N)

Arguments and results are ints, floats, bools, strs, None, dtypes and tuples
of them. Called from host code it is the plain function. The function's
source is part of the kernel's cache key (an edit recompiles); its result is
assumed to depend on nothing but its arguments, as Triton assumes.
"""

from __future__ import annotations

import functools
import inspect

from .language.core import constexpr

# Every constexpr function by the reference kernels' globals hold. Held
# strongly: compiled kernels name them by that reference, which must never
# name another function; they are module-level functions, which live as long
# as the program anyway.
_FUNCTIONS: dict = {}


class ConstexprFunction:
    """A function run on the host while kernels compile (``constexpr_function``)."""

    def __init__(self, fn, plain: str = ""):
        """`plain`: for a Python function a kernel calls without its being a constexpr function (math.log2, a
        helper without a decorator), how errors name it; Triton runs such calls on constants too."""
        if not callable(fn):
            raise TypeError(f"@constexpr_function decorates a function, got {type(fn).__name__}")
        self.fn = fn
        self.plain = plain
        functools.update_wrapper(self, fn)
        # "qualname#module#id", then "#" and `plain` for a plain function: the compiler names the function by
        # the part before the first '#', and a plain one's errors by the part after the third.
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        self.reference = f"{name}#{getattr(fn, '__module__', None) or '?'}#{id(self)}"
        if plain:
            self.reference += "#" + plain
        _FUNCTIONS[self.reference] = self
        try:
            self.source = inspect.getsource(fn)
        except (OSError, TypeError):  # defined where no file holds it: its code object stands for it
            code = getattr(fn, "__code__", None)
            self.source = repr((code.co_code, code.co_consts)) if code is not None else repr(fn)

    def __call__(self, *args, **kwargs):
        unwrap = lambda v: v.value if isinstance(v, constexpr) else v  # noqa: E731
        return self.fn(*(unwrap(a) for a in args), **{k: unwrap(v) for k, v in kwargs.items()})

    def __get__(self, instance, owner=None):
        """A method of a class (an aggregate's `def get_x(self)`): bound to the instance it is read from."""
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def __repr__(self) -> str:
        qualname, module = self.reference.split("#")[:2]
        return f"<tegula.ConstexprFunction {module}.{qualname}>"


def constexpr_function(fn) -> ConstexprFunction:
    """Marks ``fn`` as a function kernels may call on constants while they
    compile (Triton's ``constexpr_function``); see the module's docstring."""
    return fn if isinstance(fn, ConstexprFunction) else ConstexprFunction(fn)


def find(reference: str) -> ConstexprFunction | None:
    return _FUNCTIONS.get(reference)


def must_use_result(x, s=True):
    """Triton's ``must_use_result``: a kernel that calls the decorated @jit
    function as a statement, dropping its result, fails to compile (E0410),
    with ``s`` (a str) added to the message. ``@must_use_result`` or
    ``@must_use_result("why")``, above ``@jit``."""
    if isinstance(x, str):
        return lambda fn: must_use_result(fn, x)
    x._must_use_result = s
    return x
