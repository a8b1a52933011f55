"""FP8 matrix multiplication with per-tensor scales: ``C = (A @ B^T) * scale_a * scale_b``.

A is [M, K] and B is [N, K], both float8 e4m3 (``tl.float8e4nv``) or both
e5m2, row-major: the layout ``torch._scaled_mm`` takes (its second operand
is B^T, column-major). Products accumulate in float32; the scales, two
float32 scalars in memory, multiply the accumulator once per tile, and C
is bfloat16 (or what ``out_dtype`` asks for).

The kernel is examples/matmul_tma.py's persistent descriptor matmul with B
read as ``b.T``. On Hopper the fp8 blocks land in shared memory by TMA and
wgmma reads them there as fp8 (``m64nNk32 ... e4m3.e4m3``): both operands'
rows run along K, which is why B is stored [N, K]. A producer warpgroup feeds
the ring (docs/backend-cuda.md). Elsewhere (the CPU, sm_80) the fp8 values
are widened to f16, which holds every one of them exactly, and the sums are
the same float32 sums.

Run it: `python examples/matmul_fp8.py [--shapes 64x64x64 100x72x96 ...]`.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

# 128-byte rows of fp8 along K: 128 of K per stage, 48 KB per stage as the
# bf16 matmul's 64; 8 warps, 3 stages beside the epilogue's staging.
DEFAULT_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}
DEFAULT_STAGES = 3


@tegula.jit
def matmul_fp8_kernel(a_ptr, b_ptr, c_ptr, scale_a_ptr, scale_b_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = None):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0), warp_specialize=WARP_SPECIALIZE):
        group = tile // tiles_per_group
        group_first_m = group * GROUP_M
        group_rows = min(tiles_m - group_first_m, GROUP_M)
        # A tile's group has rows left: so the offsets are >= 0 and C's block is stored by the TMA
        # without a run-time check (a TMA store must start inside the tensor).
        tl.assume(group_rows > 0)
        within = tile % tiles_per_group
        off_m = (group_first_m + within % group_rows) * BLOCK_M
        off_n = (within // group_rows) * BLOCK_N

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([off_m, k])
            b = b_desc.load([off_n, k])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], (acc * scale).to(c_ptr.dtype.element_ty))


def _scratch(size: int, alignment: int, stream):
    """Launch-time memory for a compiler that keeps descriptors made in a kernel in
    global memory (Triton compiling this source does; Tegula never asks)."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K


def matmul_fp8(a, b, scale_a, scale_b, out=None, out_dtype=None, num_warps: int = None,
               num_stages: int = DEFAULT_STAGES, programs: int = None, **blocks):
    """``(a @ b.T) * scale_a * scale_b`` for fp8 a [M, K] and b [N, K] (contiguous, one fp8
    dtype), scales one-element float32 arrays; NumPy (ml_dtypes) or torch (CUDA tensors run
    on the GPU). The result has ``out_dtype`` (default: bfloat16). ``programs``: the grid
    (default: one program per multiprocessor on the GPU, one per tile on the CPU)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise coded(ValueError, "E0713", f"matmul_fp8 takes [M, K] and [N, K] arrays, got {tuple(a.shape)} and "
                                         f"{tuple(b.shape)}")
    if a.dtype != b.dtype or "float8" not in str(a.dtype):
        raise coded(ValueError, "E0713", f"matmul_fp8 takes two arrays of one fp8 dtype, got {a.dtype} and {b.dtype}")
    unknown = set(blocks) - set(DEFAULT_BLOCKS)
    if unknown:
        raise coded(TypeError, "E0713", f"unknown block parameters {sorted(unknown)}; expected some of "
                                        f"{sorted(DEFAULT_BLOCKS)}")
    meta = {**DEFAULT_BLOCKS, **blocks}
    M, K = a.shape
    N = b.shape[0]
    if out is None:
        if out_dtype is None:  # bfloat16 of the arrays' library
            if _host.is_torch(a):
                import torch

                out_dtype = torch.bfloat16
            else:
                import ml_dtypes

                out_dtype = ml_dtypes.bfloat16
        out = _host.empty((M, N), out_dtype, like=a)
    for name, array in (("a", a), ("b", b), ("out", out)):
        if tuple(_host.strides(array)) != (array.shape[1], 1):
            raise coded(ValueError, "E0713", f"matmul_fp8 takes contiguous arrays; {name} has strides "
                                             f"{_host.strides(array)}")
    if M == 0 or N == 0:
        return out
    tiles = tegula.cdiv(M, meta["BLOCK_M"]) * tegula.cdiv(N, meta["BLOCK_N"])
    if programs is None:
        programs = tiles
        if _host.is_torch(a) and a.is_cuda:
            import torch

            programs = min(tiles, torch.cuda.get_device_properties(a.device).multi_processor_count)
    if _host.is_torch(a) and a.is_cuda:
        tegula.set_allocator(_scratch)
    matmul_fp8_kernel[(programs,)](a, b, out, scale_a, scale_b, M, N, K, **meta, num_stages=num_stages,
                                   **_host.launch_options(num_warps))
    return out


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["64x64x64", "100x72x96", "129x64x320", "256x256x256"]


def check(M: int, N: int, K: int, dtype: str = "float8_e4m3fn", seed: int = 0, **options) -> None:
    """Raises AssertionError unless the kernel matches NumPy (float64 of the fp8 values) for random A, B."""
    import ml_dtypes

    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((M, K)) * 2).astype(getattr(ml_dtypes, dtype))
    b = (rng.standard_normal((N, K)) * 2).astype(getattr(ml_dtypes, dtype))
    scale_a, scale_b = np.array([0.5], np.float32), np.array([0.25], np.float32)
    c = matmul_fp8(a, b, scale_a, scale_b, out_dtype=np.float32, **options)
    want = (a.astype(np.float64) @ b.astype(np.float64).T) * 0.125
    atol = 1e-5 * np.abs(want).max() + 1e-6
    assert_close(c, want.astype(np.float32), atol=atol, rtol=1e-5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, K a multiple of 16",
                        type=_cli.shape("MxNxK"))
    parser.add_argument("--dtypes", nargs="+", default=["float8_e4m3fn", "float8_e5m2"],
                        choices=["float8_e4m3fn", "float8_e5m2"])
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = (int(v) for v in shape.lower().split("x"))
            check(M, N, K, dtype, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
            print(f"matmul_fp8 {shape} {dtype}  matches NumPy (fp32 accumulate)")
    print("OK")


if __name__ == "__main__":
    main()
