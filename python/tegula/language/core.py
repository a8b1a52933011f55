"""Types and compile-time values of the kernel language.

These objects have meaning on the host side too: ``tl.float16`` can be passed
as a constexpr argument or stored in a global, and ``tl.constexpr`` marks
compile-time parameters. Everything else about them (promotion, casts) is
defined by the compiler.
"""

from __future__ import annotations

import builtins
import operator
import sys
from enum import Enum

from .._errors import coded

__all__ = ["dtype", "pointer_type", "constexpr", "tensor", "PropagateNan", "block_type", "constexpr_type", "tuple_type",
           "const", "tuple", "slice", "condition", "async_task", "void", "pi32_t", "TRITON_MAX_TENSOR_NUMEL",
           "nv_tma_desc_type"]

# Triton's short name -> (name exported by tegula.language, IR scalar, bits).
_SCALARS = {
    "int1": ("int1", "i1", 1),
    "int8": ("int8", "i8", 8),
    "int16": ("int16", "i16", 16),
    "int32": ("int32", "i32", 32),
    "int64": ("int64", "i64", 64),
    "uint8": ("uint8", "u8", 8),
    "uint16": ("uint16", "u16", 16),
    "uint32": ("uint32", "u32", 32),
    "uint64": ("uint64", "u64", 64),
    "fp16": ("float16", "f16", 16),
    "bf16": ("bfloat16", "bf16", 16),
    "fp32": ("float32", "f32", 32),
    "fp64": ("float64", "f64", 64),
    "fp8e4nv": ("float8e4nv", "f8e4m3", 8),  # e4m3fn: bias 7, no inf, max 448
    "fp8e5": ("float8e5", "f8e5m2", 8),      # e5m2: bias 15, inf and NaN, max 57344
    "fp8e4b15": ("float8e4b15", "f8e4b15", 8),  # e4m3, bias 15: no inf or NaN, max 1.875
    # AMD's "fnuz" formats: no inf, no -0, NaN at 0x80 (the code of -0)
    "fp8e4b8": ("float8e4b8", "f8e4b8", 8),     # e4m3fnuz: bias 8, max 240
    "fp8e5b16": ("float8e5b16", "f8e5b16", 8),  # e5m2fnuz: bias 16, max 57344
}

# Floating types: (mantissa bits, exponent bias), as Triton's dtype has them.
_FLOAT_LAYOUT = {"fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127), "fp64": (52, 1023),
                 "fp8e4nv": (3, 7), "fp8e5": (2, 15), "fp8e4b15": (3, 15), "fp8e4b8": (3, 8), "fp8e5b16": (2, 16)}


def _language_path(value) -> str:
    """The module path under which ``value`` is reached: ``triton.language``
    when a ``triton.language`` module holds Tegula's own object under that
    name (a package that re-exports Tegula as ``triton``), else
    ``tegula.language``. ``repr`` is then an expression that gives the object
    back under the name the program uses."""
    triton_language = sys.modules.get("triton.language")
    if triton_language is not None and getattr(triton_language, value.canonical_name, None) is value:
        return "triton.language"
    return "tegula.language"


class dtype:
    """A scalar element type. ``str(tl.float32) == tl.float32.name == "fp32"``, as in Triton;
    ``repr(tl.float32) == "tegula.language.float32"`` (``"triton.language.float32"``
    when reached through a ``triton`` package that re-exports Tegula's names).
    The attributes and predicates are Triton's."""

    __slots__ = ("name", "canonical_name", "scalar", "primitive_bitwidth", "itemsize", "int_signedness",
                 "int_bitwidth", "fp_mantissa_width", "exponent_bias")

    class SIGNEDNESS(Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    # Triton's name lists, in its order, of the types Tegula has (tests build
    # their parameters from them: `map(tl.dtype, tl.dtype.SINT_TYPES)`).
    SINT_TYPES = [n for n in ("int8", "int16", "int32", "int64") if n in _SCALARS]
    UINT_TYPES = [n for n in ("int1", "uint8", "uint16", "uint32", "uint64") if n in _SCALARS]
    FP_TYPES = [n for n in ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
                if n in _SCALARS]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    def __init__(self, name: str):
        if name not in _SCALARS:
            raise coded(ValueError, "E0207", f"unknown dtype {name!r}; known: {', '.join(_SCALARS)}")
        self.name = name
        canonical, scalar, bits = _SCALARS[name]
        #: the attribute name in tegula.language ("float32"); what the compiler is told
        self.canonical_name = canonical
        #: the tile IR scalar ("f32")
        self.scalar = scalar
        self.primitive_bitwidth = bits
        self.itemsize = bits // 8
        if name in _FLOAT_LAYOUT:
            self.fp_mantissa_width, self.exponent_bias = _FLOAT_LAYOUT[name]
        else:
            self.int_signedness = dtype.SIGNEDNESS.UNSIGNED if name.startswith("u") else dtype.SIGNEDNESS.SIGNED
            self.int_bitwidth = bits

    def is_floating(self) -> bool:
        return self.name.startswith(("fp", "bf"))

    def is_standard_floating(self) -> bool:
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def is_fp8(self) -> bool:
        return self.name.startswith("fp8")

    # By Triton's name lists: int1 is unsigned, and a pointer type is no int.
    def is_int(self) -> bool:
        return self.name in dtype.SINT_TYPES or self.name in dtype.UINT_TYPES

    def is_bool(self) -> bool:
        return self.scalar == "i1"

    def is_int_signed(self) -> bool:
        return self.name in dtype.SINT_TYPES

    def is_int_unsigned(self) -> bool:
        return self.name in dtype.UINT_TYPES

    def is_ptr(self) -> bool:
        return False

    def is_void(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_const(self) -> bool:
        return False

    def kind(self) -> "dtype.KIND":
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        return dtype.KIND.FLOATING if self.is_floating() else dtype.KIND.INTEGRAL

    def get_int_max_value(self) -> int:
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        if self.is_int_unsigned():
            return 2 ** self.int_bitwidth - 1
        raise coded(TypeError, "E0304", f"get_int_max_value of {self.name}, which is not an int type")

    def get_int_min_value(self) -> int:
        if self.is_int_signed():
            return -2 ** (self.int_bitwidth - 1)
        if self.is_int_unsigned():
            return 0
        raise coded(TypeError, "E0304", f"get_int_min_value of {self.name}, which is not an int type")

    @staticmethod
    def is_dtype(type_str) -> bool:
        return type_str in _SCALARS

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("tegula.dtype", self.name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{_language_path(self)}.{self.canonical_name}"


def _is_named(name: str):
    def predicate(self) -> bool:
        return self.name == name
    predicate.__name__ = predicate.__qualname__ = f"is_{name}"
    return predicate


# One predicate per type, as Triton has them (tl.float16.is_fp16(), tl.float8e4b8.is_fp8e4b8(), ...).
for _name in _SCALARS:
    setattr(dtype, f"is_{_name}", _is_named(_name))
del _name


class pointer_type(dtype):
    """The type of a pointer to ``element_ty`` (``tl.pointer_type(tl.float32)``)."""

    __slots__ = ("element_ty", "address_space", "const")

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        if not isinstance(element_ty, dtype):
            raise coded(TypeError, "E0304", f"pointer_type needs a tl.dtype, got {type(element_ty).__name__}")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"pointer<{element_ty.name}>"
        self.canonical_name = f"pointer_type({element_ty.canonical_name})"
        self.scalar = f"ptr<{element_ty.scalar}>"
        self.primitive_bitwidth = 64
        self.itemsize = 8

    def is_ptr(self) -> bool:
        return True

    def is_const(self) -> bool:
        return self.const

    def is_floating(self) -> bool:
        return False

    def __eq__(self, other) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("tegula.pointer_type", self.element_ty.name))

    def __repr__(self) -> str:
        return f"{_language_path(self.element_ty)}.pointer_type({self.element_ty!r})"



class nv_tma_desc_type(pointer_type):
    """Triton 3.2/3.3's type of a host TMA descriptor argument (``tl.nv_tma_desc_type``): a constant pointer to
    its 128 bytes. Code of that era tests for the name (``"nv_tma_desc_type" in dir(tl)``) before it passes
    descriptors; in Tegula a descriptor argument is such a pointer (docs/language.md, "Triton 3.2/3.3's
    experimental descriptors"), and an annotation of this type is a ``*u8`` parameter."""

    __slots__ = ()

    def __init__(self, const: bool = True, address_space: int = 0):
        super().__init__(uint8, const=const, address_space=address_space)
        self.name = "nv_tma_desc_type"


class constexpr:
    """A compile-time constant.

    As an annotation (``BLOCK: tl.constexpr``) it makes a kernel parameter part
    of the specialization key; as a value (``tl.constexpr(4)``) it wraps a
    global constant that kernels may read.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __eq__(self, other) -> bool:
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return self.value.__index__()

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __call__(self, *args, **kwargs):
        # A wrapped function (`@tl.constexpr def f(dtype): ...`); kernels call it while they compile.
        return self.value(*args, **kwargs)


def _unwrapped(value):
    return value.value if isinstance(value, constexpr) else value


def _constexpr_operator(name: str, op, reflected: bool = False):
    def method(self, other):
        return constexpr(op(_unwrapped(other), self.value) if reflected else op(self.value, _unwrapped(other)))
    method.__name__ = method.__qualname__ = name
    return method


# Host code computes with constexpr globals as with their values (`assert n <= LIMIT`,
# `BLOCK * 2`), and gets constexprs back, as Triton's do.
for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("pow", operator.pow), ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)):
    setattr(constexpr, f"__{_name}__", _constexpr_operator(f"__{_name}__", _op))
    setattr(constexpr, f"__r{_name}__", _constexpr_operator(f"__r{_name}__", _op, reflected=True))
for _name, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("ne", operator.ne)):
    setattr(constexpr, f"__{_name}__", _constexpr_operator(f"__{_name}__", _op))
for _name, _op in (("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert), ("abs", abs)):
    setattr(constexpr, f"__{_name}__", (lambda op: lambda self: constexpr(op(self.value)))(_op))
del _name, _op


class tensor:
    """The type of tile values inside a kernel; only meaningful as an annotation."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("tl.tensor values only exist inside a @tegula.jit kernel")


class block_type(dtype):
    """The type of a tile: ``shape`` elements of ``element_ty`` (what ``x.type`` is for a tile)."""

    __slots__ = ("element_ty", "shape", "numel")

    def __init__(self, element_ty: dtype, shape):
        if not isinstance(element_ty, dtype):
            raise coded(TypeError, "E0304", f"block_type needs a tl.dtype, got {type(element_ty).__name__}")
        self.element_ty = element_ty
        self.shape = builtins.tuple(int(d) for d in shape)
        self.numel = 1
        for d in self.shape:
            self.numel *= d
        self.name = f"<{self.shape}, {element_ty.name}>"
        self.canonical_name = f"block_type({element_ty.canonical_name}, {list(self.shape)})"
        self.scalar = element_ty.scalar
        self.primitive_bitwidth = element_ty.primitive_bitwidth

    def __eq__(self, other) -> bool:
        return isinstance(other, block_type) and (other.element_ty, other.shape) == (self.element_ty, self.shape)

    def __hash__(self) -> int:
        return hash(("tegula.block_type", self.element_ty.name, self.shape))

    def __repr__(self) -> str:
        return f"tl.block_type({self.element_ty!r}, {list(self.shape)})"


class constexpr_type:
    """The type of a compile-time constant (what ``.type`` is for a constexpr)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, constexpr_type) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("tegula.constexpr_type", self.value))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


class tuple_type:
    """The type of a tuple of kernel values (what ``.type`` is for one that
    holds tensors): its elements' types, and its field names when it has them."""

    __slots__ = ("types", "fields")

    def __init__(self, types, fields=None):
        self.types = builtins.list(types)
        self.fields = None if fields is None else builtins.list(fields)

    def __iter__(self):
        return iter(self.types)

    def __getitem__(self, index):
        return self.types[index]

    def __len__(self) -> int:
        return len(self.types)

    def __eq__(self, other) -> bool:
        return isinstance(other, tuple_type) and (other.types, other.fields) == (self.types, self.fields)

    def __hash__(self) -> int:
        return hash(("tegula.tuple_type", builtins.tuple(map(str, self.types))))

    @property
    def name(self) -> str:
        if self.fields is None:
            return "[" + ",".join(str(t) for t in self.types) + "]"
        return "[" + ",".join(f"{k}:{t}" for k, t in zip(self.fields, self.types)) + "]"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        fields = "" if self.fields is None else f", fields={self.fields!r}"
        return f"tl.tuple_type({self.types!r}{fields})"


class const:
    """Annotation of a pointer parameter whose memory the kernel only reads
    (``x_ptr: tl.const``): a store or atomic through it is a compile error."""


class tuple(builtins.tuple):
    """``tl.tuple(items)``: a tuple of kernel values, as @jit functions take and return them.

    ``tl.tuple.named(fields, items)`` is one whose elements are also read by
    field name, as an aggregate keeps a named tuple given for a field."""

    @classmethod
    def named(cls, fields, items) -> "tuple":
        made = cls(items)
        made.__dict__["_fields"] = builtins.tuple(fields)
        return made

    def __getattr__(self, name):
        fields = self.__dict__.get("_fields") or ()
        if name in fields:
            return self[fields.index(name)]
        raise AttributeError(f"tl.tuple has no attribute '{name}'")


def aggregate_replace(instance, **changes):
    """A copy of the @aggregate instance with the fields named in `changes`
    set to their values, in kernels and in host code alike."""
    from ..aggregate import aggregate_replace as replace

    return replace(instance, **changes)


class slice:
    """A slice ``start:stop:step`` as kernels write it inside ``[]``."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


class async_task:
    """``with tl.async_task(task_ids):`` a block Triton's warp specialization
    gives to some warp groups; in Tegula every thread runs it."""

    __slots__ = ("task_ids", "options")

    def __init__(self, task_ids, **options):
        self.task_ids = task_ids
        self.options = options

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class condition:
    """``while tl.condition(cond, disable_licm=False):`` a loop condition with
    compiler options; inside a kernel it is ``cond``."""

    __slots__ = ("condition", "disable_licm")

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = disable_licm


int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")

#: the type of nothing (what a function without a result returns)
void = dtype.__new__(dtype)
void.name = void.canonical_name = void.scalar = "void"
void.primitive_bitwidth = 0
#: a pointer to int32
pi32_t = pointer_type(int32)
#: the largest number of elements a tile may have, as in Triton
TRITON_MAX_TENSOR_NUMEL = 1 << 20
# Triton's constant for a defaulted constexpr parameter (`descending: tl.constexpr = tl.core.CONSTEXPR_0` in
# libraries' sort helpers): the constant 0.
CONSTEXPR_0 = constexpr(0)



def str_to_ty(name, c=None):
    """The dtype a type string of Triton's signatures names (Triton's
    ``tl.str_to_ty``): "fp32", "bf16", "i32", "u8", "u1" (bool), "void",
    "*fp16" (a pointer to fp16), "*kfp16" (a pointer to const fp16). The
    second argument, Triton's code generator context, is not used."""
    if not isinstance(name, str) or not name:
        raise coded(TypeError, "E0207", f"str_to_ty takes a type string such as 'fp32' or '*i32', got {name!r}")
    if name[0] == "*":
        const = name[1:2] == "k"
        return pointer_type(str_to_ty(name[2:] if const else name[1:]), const=const)
    if name == "void":
        return void
    if name == "u1":
        return int1
    if name[0] in "iu" and name[1:].isdigit():
        name = ("int" if name[0] == "i" else "uint") + name[1:]
    if name not in _SCALARS:
        raise coded(ValueError, "E0207", f"str_to_ty: unknown type string {name!r}; known: i1..i64, u1..u64, "
                                         f"{', '.join(n for n in _SCALARS if not n.startswith(('int', 'uint')))}, "
                                         f"void, and '*' before any of them for a pointer")
    return dtype(name)


def get_int_dtype(bitwidth: int, signed: bool) -> dtype:
    """The integer dtype of `bitwidth` bits (Triton's ``tl.core.get_int_dtype``): int1 for 1 bit,
    else int8..int64 or uint8..uint64 by `signed`. Libraries call it from constexpr functions."""
    bits, signed = int(_unwrapped(bitwidth)), bool(_unwrapped(signed))
    if bits == 1:
        return int1
    if bits in (8, 16, 32, 64):
        return dtype(("int" if signed else "uint") + str(bits))
    raise coded(ValueError, "E0207", f"get_int_dtype: no integer type of {bits} bits; Tegula has 1, 8, 16, 32, 64")


def _unwrap_if_constexpr(o):
    """The value a constexpr wraps, else `o` itself (Triton's ``tl.core._unwrap_if_constexpr``, which
    libraries' helpers call inside kernels on constexpr parameters; there it is the identity)."""
    return o.value if isinstance(o, constexpr) else o


#: every scalar dtype, by the name tegula.language exports it under
DTYPES = {d.canonical_name: d for d in (int1, int8, int16, int32, int64, uint8, uint16, uint32,
                                        uint64, float16, bfloat16, float32, float64, float8e4nv, float8e5,
                                        float8e4b15, float8e4b8, float8e5b16)}


def only_in_kernel(name: str):
    """Raised by every tl function called from ordinary Python code."""
    raise RuntimeError(f"tl.{name} can only be used inside a @tegula.jit kernel")


class PropagateNan:
    """How tl.minimum / tl.maximum / tl.clamp treat NaN (the compiler reads the member name)."""

    NONE = "none"
    ALL = "all"


def __getattr__(name: str):
    # Triton's triton.language.core holds every builtin (tl.core.view, tl.core.reduce), and host code
    # inspects them there (the parameters of tl.core.view tell which calling convention a Triton
    # release has). Tegula keeps the markers in ops.py and math.py, which import this module, so
    # the names are looked up there on first use rather than imported.
    from . import math, ops

    for module in (ops, math):
        if name in module.__all__:
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
