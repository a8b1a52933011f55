"""Tiled matrix multiplication ``C = A @ B`` with ``tl.dot`` and an fp32 accumulator.

Each program computes one ``BLOCK_M x BLOCK_N`` tile of C by walking K in
steps of ``BLOCK_K``: load a ``BLOCK_M x BLOCK_K`` tile of A and a
``BLOCK_K x BLOCK_N`` tile of B, accumulate their product, advance both
pointer tiles. The last K step is masked, so K need not be a multiple of
``BLOCK_K``; rows and columns of C past M and N are masked at the store.

Program ids are mapped to tiles in groups of ``GROUP_M`` tile-rows: the
programs of one group sweep the same few rows of A across all columns of B,
so neighbouring programs (which run at about the same time) share A tiles in
cache instead of each streaming its own. Strides are arguments (in elements),
so transposed or sliced views work without copies.

Run it: `python examples/matmul.py [--shapes 64x64x64 100x70x90 ...] [--dtypes float32 float16]`.
Shapes are MxNxK; sizes that are not multiples of the blocks exercise the
masked K loop and the masked store. Also checks a transposed operand (passed
through its strides, not copied). Prints each case it checked and OK.
"""

import argparse
import os

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

# Hopper-sized: two 64-row wgmma slabs of 128 columns, 64 of K per stage
# (32 KB of bf16 per pipeline stage); best run with 8 warps, 3 stages.
DEFAULT_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}

# On the CPU a program's tiles live in its core's L2: each K step loads
# BLOCK_M + BLOCK_N rows and columns for BLOCK_M * BLOCK_N products, so larger
# tiles load less per product (docs/benchmarks.md has the measurements); a
# 256x256 fp32 accumulator (256 KB) still fits a 1-2 MB L2 beside its operands.
CPU_BLOCKS = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
# Read once: os.cpu_count() reads /sys on every call, some microseconds each (matmul's host
# time is part of what its benchmark measures).
CPUS = os.cpu_count() or 1


def cpu_blocks(M: int, N: int, threads: int = None) -> dict:
    """CPU_BLOCKS, shrunk for small matrices: no tile larger than the next power of
    two of its side, and halved while there are fewer tiles than threads (each
    thread runs whole programs)."""
    threads = threads or int(os.environ.get("TEGULA_NUM_THREADS", 0) or 0) or CPUS
    bm = min(CPU_BLOCKS["BLOCK_M"], max(16, tegula.next_power_of_2(M)))
    bn = min(CPU_BLOCKS["BLOCK_N"], max(16, tegula.next_power_of_2(N)))
    while tegula.cdiv(M, bm) * tegula.cdiv(N, bn) < threads and max(bm, bn) > 64:
        if bm >= bn:
            bm //= 2
        else:
            bn //= 2
    return {**CPU_BLOCKS, "BLOCK_M": bm, "BLOCK_N": bn}


@tegula.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    # Which tile of C this program owns, walking groups of GROUP_M tile-rows
    # column by column.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    group_first_m = group * GROUP_M
    group_rows = min(tiles_m - group_first_m, GROUP_M)
    within = pid % programs_per_group
    tile_m = group_first_m + within % group_rows
    tile_n = within // group_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    # Out-of-range rows/columns read row 0 / column 0 (wrapped by the modulo)
    # instead of needing a mask in the K loop; the store masks them away.
    a_rows = rows % M
    b_cols = cols % N
    a_tile = a_ptr + a_rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + b_cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    in_c = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=in_c)


def matmul(a, b, out=None, out_dtype=None, num_warps: int = None, **blocks):
    """``a @ b`` for 2-D arrays of one dtype (float32, float16, bfloat16), accumulated in float32.

    NumPy arrays or torch tensors (CUDA tensors run on the GPU). The result has
    ``out_dtype`` (default: a's dtype). ``blocks`` overrides any of ``DEFAULT_BLOCKS``
    (on the GPU) or ``cpu_blocks(M, N)`` (on the CPU).
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise coded(ValueError, "E0713", f"matmul takes [M, K] and [K, N] arrays, got {tuple(a.shape)} and "
                                         f"{tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise coded(ValueError, "E0713", f"matmul takes arrays of one dtype, got {a.dtype} and {b.dtype}")
    unknown = set(blocks) - set(DEFAULT_BLOCKS)
    if unknown:
        raise coded(TypeError, "E0713", f"unknown block parameters {sorted(unknown)}; expected some of "
                                        f"{sorted(DEFAULT_BLOCKS)}")
    M, K = a.shape
    N = b.shape[1]
    on_gpu = _host.is_torch(a) and a.is_cuda
    given_all = len(blocks) == len(DEFAULT_BLOCKS)  # then no default is looked at
    meta = {**(DEFAULT_BLOCKS if on_gpu or given_all else cpu_blocks(M, N)), **blocks}
    if out is None:
        out = _host.empty((M, N), out_dtype or a.dtype, like=a)
    grid = (tegula.cdiv(M, meta["BLOCK_M"]) * tegula.cdiv(N, meta["BLOCK_N"]),)
    if M == 0 or N == 0:
        return out
    if K == 0:
        out[...] = 0
        return out
    sa, sb, sc = _host.strides(a), _host.strides(b), _host.strides(out)
    matmul_kernel[grid](a, b, out, M, N, K, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1],
                        **meta, **_host.launch_options(num_warps))
    return out


def matmul_reference(a, b, out_dtype=None):
    """Eager: ``torch.matmul`` (cuBLAS on a GPU) for torch tensors; for NumPy arrays,
    NumPy's BLAS matmul in float32 (float16 inputs are widened first, as NumPy has no
    fp16 GEMM with an fp32 accumulator)."""
    if _host.is_torch(a):
        import torch

        c = a @ b
        if out_dtype is None:
            return c
        if not isinstance(out_dtype, torch.dtype):  # a NumPy dtype: torch's twin of it
            out_dtype = torch.from_numpy(np.empty(0, dtype=out_dtype)).dtype
        return c.to(out_dtype)
    c = a.astype(np.float32, copy=False) @ b.astype(np.float32, copy=False)
    return c.astype(out_dtype or a.dtype, copy=False)


def make_inputs(M: int, N: int, K: int, dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((K, N), dtype=np.float32).astype(dtype)
    return a, b


def bytes_moved(M: int, N: int, K: int, itemsize: int, out_itemsize: int = None) -> int:
    """A and B read once and C written once: the floor if everything fit in cache."""
    return (M * K + K * N) * itemsize + M * N * (out_itemsize or itemsize)


def flops(M: int, N: int, K: int) -> int:
    """One multiply and one add per (m, n, k)."""
    return 2 * M * N * K


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1x1", "64x64x64", "100x70x90", "129x65x300", "256x256x256"]


def parse_shape(text: str):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def tolerance(dtype: str, K: int):
    # The kernel and BLAS add the K products in different orders; the error
    # grows like sqrt(K) times the size of one product (unit normals here).
    atol = (1e-5 if dtype == "float32" else 1e-3) * 8 * max(K, 1) ** 0.5
    return atol, (1e-4 if dtype == "float32" else 1e-2)


def check(M: int, N: int, K: int, dtype: str = "float32", transpose_b: bool = False,
          seed: int = 0, **blocks) -> None:
    """Raises AssertionError unless the kernel's A @ B matches NumPy for random A, B."""
    a, b = make_inputs(M, N, K, dtype, seed)
    if transpose_b:
        b = np.ascontiguousarray(b.T).T  # same values, column-major strides
    c = matmul(a, b, out_dtype=np.float32, **blocks)
    atol, rtol = tolerance(dtype, K)
    assert_close(c, matmul_reference(a, b, np.float32), atol=atol, rtol=rtol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, e.g. 100x70x90",
                        type=_cli.shape("MxNxK", minimum=0))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"],
                        choices=["float32", "float16"])
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = parse_shape(shape)
            check(M, N, K, dtype)
            print(f"matmul {M}x{N}x{K} {dtype:<8} matches NumPy (fp32 accumulate)")
        M, N, K = parse_shape(args.shapes[-1])
        check(M, N, K, dtype, transpose_b=True)
        print(f"matmul {M}x{N}x{K} {dtype:<8} with B transposed (strides) matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
