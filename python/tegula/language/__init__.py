"""``tegula.language`` (imported as ``tl``): the names kernels use.

The language is source-compatible with the core of ``triton.language``. The
functions here are markers for IDEs and documentation: the compiler resolves
``tl.<name>`` inside ``@tegula.jit`` kernels, and calling them from ordinary
Python raises RuntimeError. Dtypes and ``constexpr`` are real host objects.
"""

from . import extra, math, random, target_info
from .core import (
    TRITON_MAX_TENSOR_NUMEL,
    aggregate_replace,
    async_task,
    bfloat16,
    block_type,
    condition,
    const,
    constexpr_type,
    pi32_t,
    slice,
    tuple,
    tuple_type,
    void,
    PropagateNan,
    constexpr,
    dtype,
    float16,
    float32,
    float64,
    float8e4nv,
    float8e5,
    float8e4b15,
    float8e4b8,
    float8e5b16,
    int1,
    int8,
    int16,
    int32,
    int64,
    nv_tma_desc_type,
    pointer_type,
    str_to_ty,
    tensor,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .math import *  # noqa: F401,F403  (tl.exp and tl.math.exp are the same marker)
from .ops import *  # noqa: F401,F403
from .math import __all__ as _math_names
from .ops import __all__ as _op_names
from . import standard  # noqa: E402  (Triton's module path of the standard library: tl.standard.*)

__all__ = [
    "extra", "math", "random", "target_info", "constexpr", "dtype", "pointer_type", "nv_tma_desc_type", "tensor",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8",
    "float8e5b16",
    "block_type", "constexpr_type", "tuple_type", "const", "tuple", "slice", "condition", "async_task", "void", "pi32_t",
    "TRITON_MAX_TENSOR_NUMEL", "str_to_ty", "aggregate_replace",
    *_math_names, *_op_names,
]
