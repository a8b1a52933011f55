"""The CPU workloads: each example kernel at one or more sizes, on NumPy inputs.

Memory-bound sizes are chosen so the bytes moved exceed the last-level cache
(read from sysfs), otherwise the floor would measure the cache, not DRAM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .kernels import fused_chain, layer_norm, matmul, softmax, vector_add

WORKLOADS = ("vector_add", "fused_chain", "softmax", "layer_norm", "matmul")
BASELINE = "numpy"  # the eager baseline on a CPU; on a GPU it would be torch eager


@dataclass
class Case:
    """One workload at one size: its inputs, the work it must do, and how to check it."""

    workload: str
    shape: str
    dtype: str
    inputs: dict
    bytes: int
    flops: int
    compute_bound: bool = False
    tolerance: tuple = (None, None)  # (atol, rtol) for checking peers against the baseline
    check_rows: Optional[int] = None  # compare only the first/last rows of big outputs
    note: str = ""
    # What NumPy's op-by-op execution moves: eager_bytes / bytes is the speedup
    # fusion should reach on a memory-bound machine (the performance contract).
    eager_bytes: Optional[int] = None


def _rows_beyond(llc: int, bytes_moved: Callable[[int], int], minimum: int,
                 multiple: int = 1024) -> int:
    """The smallest multiple of `multiple` rows (>= minimum) whose bytes moved
    exceed 1.5x the last-level cache, so the data streams from DRAM."""
    row_bytes = bytes_moved(2) - bytes_moved(1)
    rows = -(-int(1.5 * llc) // row_bytes)
    return max(minimum, -(-rows // multiple) * multiple)


def _eager_chain_bytes(M: int, N: int) -> int:
    """fused_chain.eager_bytes at M rows, extrapolated from runs on one and two
    rows (the count is linear in M) instead of running the chain at full size."""
    one, two = (fused_chain.eager_bytes(*fused_chain.make_inputs(m, N)) for m in (1, 2))
    return one + (M - 1) * (two - one)


def _bfloat16():
    """NumPy's bfloat16 dtype (ml_dtypes', which Tegula uses for bf16 arrays), or None."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


def build_cases(names, quick: bool, llc: int) -> list[Case]:
    cases = []
    f32 = np.float32
    if "vector_add" in names:
        n = 65_539 if quick else _rows_beyond(llc, lambda n: vector_add.bytes_moved(n, 4), 1 << 24,
                                              multiple=1 << 20)
        cases.append(Case("vector_add", f"n={n}", "float32", dict(zip("xy", vector_add.make_inputs(n))),
                          vector_add.bytes_moved(n, 4), vector_add.flops(n), check_rows=1 << 16,
                          eager_bytes=vector_add.eager_bytes_moved(n, 4)))
    if "fused_chain" in names:
        shapes = [(96, 300)] if quick else [(4096, 4096)]
        if not quick and fused_chain.bytes_moved(4096, 4096, 4) < llc:
            shapes.append((_rows_beyond(llc, lambda m: fused_chain.bytes_moved(m, 4096, 4), 4096), 4096))
        for M, N in shapes:
            x, residual, keep, bias, weight = fused_chain.make_inputs(M, N)
            cases.append(Case("fused_chain", f"{M}x{N}", "float32",
                              dict(x=x, residual=residual, keep=keep, bias=bias, weight=weight),
                              fused_chain.bytes_moved(M, N, 4), 20 * M * N,
                              tolerance=(1e-4, 1e-4), check_rows=256,
                              eager_bytes=_eager_chain_bytes(M, N)))
    if "softmax" in names:
        M, N = (96, 300) if quick else (_rows_beyond(llc, lambda m: softmax.bytes_moved(m, 4096, 4), 4096), 4096)
        cases.append(Case("softmax", f"{M}x{N}", "float32", {"x": softmax.make_inputs(M, N)},
                          softmax.bytes_moved(M, N, 4), softmax.flops(M, N),
                          tolerance=(1e-7, 1e-4), check_rows=256,
                          eager_bytes=softmax.eager_bytes_moved(M, N, 4)))
    if "layer_norm" in names:
        M, N = (96, 300) if quick else (_rows_beyond(llc, lambda m: layer_norm.bytes_moved(m, 4096, 4), 4096), 4096)
        x, weight, bias = layer_norm.make_inputs(M, N)
        cases.append(Case("layer_norm", f"{M}x{N}", "float32", dict(x=x, weight=weight, bias=bias),
                          layer_norm.bytes_moved(M, N, 4), layer_norm.flops(M, N),
                          tolerance=(1e-4, 1e-4), check_rows=256,
                          eager_bytes=layer_norm.eager_bytes_moved(M, N, 4)))
    if "matmul" in names:
        bf16 = _bfloat16()
        sizes = [(67, np.float32), (67, np.float16)] if quick else \
                [(512, f32), (1024, f32), (2048, f32), (1024, np.float16)] + ([(1024, bf16)] if bf16 else [])
        for size, dtype in sizes:
            a, b = matmul.make_inputs(size, size, size, dtype)
            itemsize = np.dtype(dtype).itemsize
            # Sums of `size` products of unit normals grow like sqrt(size).
            # bf16 results keep 8 bits: rounding them is most of the difference.
            atol = {f32: 2e-5, np.float16: 2e-3}.get(dtype, 1.6e-2) * size ** 0.5 * 8
            name = np.dtype(dtype).name
            cases.append(Case("matmul", f"{size}x{size}x{size}", name,
                              dict(a=a, b=b), matmul.bytes_moved(size, size, size, itemsize),
                              matmul.flops(size, size, size), compute_bound=True,
                              tolerance=(atol, {f32: 1e-3, np.float16: 1e-2}.get(dtype, 2e-2)),
                              note="" if dtype == f32 else f"{name} in/out, fp32 accumulate; "
                              "the NumPy baseline widens to fp32 and uses BLAS"))
    return cases

