"""Persistent matmul ``C = A @ B``: a fixed grid of programs, each looping over tiles.

Instead of one program per output tile, the grid has ``NUM_PROGRAMS``
programs (on a GPU: one per SM, or fewer if there are fewer tiles); program
``p`` computes tiles ``p, p + NUM_PROGRAMS, p + 2 * NUM_PROGRAMS, ...``. Tiles
are numbered in the grouped-M order of ``matmul.py``, so the
programs working at one time still share A tiles in cache. The K loop of
each tile is the tiled matmul's (masked last step, fp32 accumulator).
Launching once per SM avoids the tail wave of a one-tile-per-program grid and
the per-program start-up cost.

Run it: `python examples/matmul_persistent.py [--shapes 64x64x64 100x77x50 ...]
[--dtypes float32 float16 bfloat16] [--programs 1 4 ...]`. Shapes are MxNxK;
each shape runs with every program count (on the CPU; a GPU defaults to one
program per SM), so programs run one tile, several, or an uneven share.
Prints each case it checked and OK.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

DEFAULT_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
# Programs on the CPU backend: enough that every program runs several tiles
# in the tests, few enough to stay cheap.
CPU_PROGRAMS = 4


@tegula.jit
def matmul_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tiles_m * tiles_n
    programs_per_group = GROUP_M * tiles_n
    ks = tl.arange(0, BLOCK_K)
    for tile in tl.range(pid, num_tiles, NUM_PROGRAMS):
        group = tile // programs_per_group
        group_first_m = group * GROUP_M
        group_rows = min(tiles_m - group_first_m, GROUP_M)
        within = tile % programs_per_group
        tile_m = group_first_m + within % group_rows
        tile_n = within // group_rows

        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        # Rows/columns past M/N wrap to valid ones; the store masks them away.
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


def default_programs(like) -> int:
    """Programs to launch at most: the GPU's SM count for CUDA tensors, else ``CPU_PROGRAMS``."""
    if _host.is_torch(like) and like.device.type == "cuda":
        import torch

        return torch.cuda.get_device_properties(like.device).multi_processor_count
    return CPU_PROGRAMS


def matmul_persistent(a, b, out=None, out_dtype=None, num_programs: int = None, num_warps: int = None,
                      num_stages: int = None, **blocks):
    """``a @ b`` for 2-D arrays of one dtype, accumulated in float32, by a
    persistent grid of ``min(num_programs, tiles)`` programs (``num_programs``
    defaults to ``default_programs(a)``)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise coded(ValueError, "E0713", f"matmul_persistent takes [M, K] and [K, N] arrays, got "
                                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise coded(ValueError, "E0713", f"matmul_persistent takes arrays of one dtype, got {a.dtype} and {b.dtype}")
    unknown = set(blocks) - set(DEFAULT_BLOCKS)
    if unknown:
        raise coded(TypeError, "E0713", f"unknown block parameters {sorted(unknown)}; expected some of "
                                        f"{sorted(DEFAULT_BLOCKS)}")
    if num_programs is not None and num_programs < 1:
        raise coded(ValueError, "E0713", f"num_programs must be at least 1, got {num_programs}")
    meta = {**DEFAULT_BLOCKS, **blocks}
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = _host.empty((M, N), out_dtype or a.dtype, like=a)
    if M == 0 or N == 0:
        return out
    if K == 0:
        out[...] = 0
        return out
    tiles = tegula.cdiv(M, meta["BLOCK_M"]) * tegula.cdiv(N, meta["BLOCK_N"])
    programs = min(num_programs or default_programs(a), tiles)
    options = _host.launch_options(num_warps)
    if num_stages is not None:
        options["num_stages"] = num_stages
    sa, sb, sc = _host.strides(a), _host.strides(b), _host.strides(out)
    matmul_persistent_kernel[(programs,)](a, b, out, M, N, K, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1],
                                          NUM_PROGRAMS=programs, **meta, **options)
    return out


def matmul_reference(a, b, out_dtype=None):
    """Eager ``a @ b``: torch (cuBLAS on a GPU) for torch tensors, NumPy in float32
    (float64 for float64 inputs) otherwise."""
    if _host.is_torch(a):
        c = a @ b
        return c if out_dtype is None else c.to(out_dtype)
    wide = np.float64 if a.dtype == np.float64 else np.float32
    return (a.astype(wide) @ b.astype(wide)).astype(out_dtype or a.dtype)


def make_inputs(M: int, N: int, K: int, dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((K, N), dtype=np.float32).astype(dtype)
    return a, b


def bytes_moved(M: int, N: int, K: int, itemsize: int) -> int:
    return (M * K + K * N + M * N) * itemsize


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1x1", "64x64x64", "100x77x50", "300x260x70"]
TOLERANCES = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2.0 ** -10), "bfloat16": (1.6e-2, 2.0 ** -7)}


def parse_shape(text: str):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def check(M: int, N: int, K: int, dtype: str = "float32", num_programs: int = None, seed: int = 0,
          **blocks) -> None:
    """Raises AssertionError unless the kernel's A @ B matches float64 for random A, B
    (B scaled by 1/sqrt(K), so C has unit-size entries)."""
    a, b = make_inputs(M, N, K, numpy_dtype(dtype), seed)
    b = (b.astype(np.float32) / np.float32(max(K, 1) ** 0.5)).astype(a.dtype)
    c = matmul_persistent(a, b, num_programs=num_programs, **blocks)
    atol, rtol = TOLERANCES[dtype]
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                               atol=atol, rtol=rtol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, e.g. 100x77x50",
                        type=_cli.shape("MxNxK", minimum=0))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=list(TOLERANCES))
    parser.add_argument("--programs", nargs="+", type=_cli.integer(1), default=[1, 3], help="programs in the grid")
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = parse_shape(shape)
            for programs in args.programs:
                check(M, N, K, dtype, programs, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)
                print(f"matmul_persistent {M}x{N}x{K} {dtype:<8} {programs} programs "
                      "matches the float64 reference")
    print("OK")


if __name__ == "__main__":
    main()
