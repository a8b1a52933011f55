"""Matrix multiplication ``C = A @ B`` written with tensor descriptors.

The same tiling as examples/matmul.py (``BLOCK_M x BLOCK_N`` tiles of C,
grouped by ``GROUP_M`` tile-rows so neighbours share A in cache), but every
block moves through a tensor descriptor: ``a_desc.load``, ``b_desc.load`` and
``c_desc.store`` name a block by its offsets, and the descriptor knows the
tensor's bounds, so no masks are written. Blocks that stick out of the tensor
load zeros and store nothing outside it. The kernel is persistent: a program
walks the tiles ``program_id, program_id + num_programs, ...``, and on the GPU
the grid has one program per multiprocessor (on the CPU, one per tile).

On Hopper (sm_90) the descriptors become TMA copies, and the K loop a ring of
``num_stages`` stages read by wgmma where they land, filled by a producer
warpgroup that runs on from one tile into the next while the consumers store
the previous tile (docs/backend-cuda.md, "TMA rings" and "Warp
specialization"); elsewhere (sm_80, the CPU) they are lowered to pointer
loads and stores with masks. Triton compiles this source the same way with
its own TMA pipeline, which is why the benchmark times it.

A, B and C must be contiguous (row-major), and rows of a multiple of 16 bytes
(the TMA's stride rule): K and N multiples of 8 for 16-bit types.

Run it: `python examples/matmul_tma.py [--shapes 64x64x64 100x72x88 ...] [--dtypes float32 float16]`.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)
from matmul import bytes_moved, flops, matmul_reference  # noqa: F401  (the pointer matmul's host helpers)

# Two 64-row wgmma slabs of 256 columns, 64 of K per stage (48 KB of bf16 per
# stage); 8 warps, 3 stages, which leave room for the epilogue's staging of
# a 64 KB tile beside the ring (the producer fills the ring meanwhile).
DEFAULT_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
DEFAULT_STAGES = 3


@tegula.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = None):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    # WARP_SPECIALIZE None leaves the producer warpgroup to the compiler
    # (Tegula feeds a ring that fills the multiprocessor with one); True and
    # False ask for it or forbid it, as Triton spells it.
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0), warp_specialize=WARP_SPECIALIZE):
        # Which tile of C: groups of GROUP_M tile-rows, walked column by column.
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
            b = b_desc.load([k, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))


def _scratch(size: int, alignment: int, stream):
    """Launch-time memory for a compiler that keeps descriptors made in a kernel in
    global memory (Triton compiling this source does; Tegula never asks)."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def matmul_tma(a, b, out=None, out_dtype=None, num_warps: int = None, num_stages: int = DEFAULT_STAGES,
               warp_specialize=None, programs: int = None, **blocks):
    """``a @ b`` for contiguous 2-D arrays of one dtype (float32, float16, bfloat16), accumulated in float32.

    NumPy arrays or torch tensors (CUDA tensors run on the GPU). The result has
    ``out_dtype`` (default: a's dtype). ``blocks`` overrides any of ``DEFAULT_BLOCKS``;
    ``warp_specialize`` (None, True, False) is the tile loop's. ``programs``: the grid
    (default: one program per multiprocessor on the GPU, one per tile on the CPU).
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
    meta = {**DEFAULT_BLOCKS, **blocks}
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = _host.empty((M, N), out_dtype or a.dtype, like=a)
    for name, array in (("a", a), ("b", b), ("out", out)):
        if tuple(_host.strides(array)) != (array.shape[1], 1):
            raise coded(ValueError, "E0713", f"matmul_tma takes contiguous arrays; {name} has strides "
                                             f"{_host.strides(array)}")
    if M == 0 or N == 0:
        return out
    if K == 0:
        out[...] = 0
        return out
    tiles = tegula.cdiv(M, meta["BLOCK_M"]) * tegula.cdiv(N, meta["BLOCK_N"])
    if programs is None:
        programs = tiles
        if _host.is_torch(a) and a.is_cuda:
            import torch

            programs = min(tiles, torch.cuda.get_device_properties(a.device).multi_processor_count)
    if _host.is_torch(a) and a.is_cuda:
        tegula.set_allocator(_scratch)
    grid = (programs,)
    matmul_tma_kernel[grid](a, b, out, M, N, K, **meta, WARP_SPECIALIZE=warp_specialize, num_stages=num_stages,
                            **_host.launch_options(num_warps))
    return out


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x8x8", "64x64x64", "100x72x88", "129x64x304", "256x256x256"]


def check(M: int, N: int, K: int, dtype: str = "float32", seed: int = 0, **blocks) -> None:
    """Raises AssertionError unless the kernel's A @ B matches NumPy for random A, B."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((K, N), dtype=np.float32).astype(dtype)
    c = matmul_tma(a, b, out_dtype=np.float32, **blocks)
    atol = (1e-5 if dtype == "float32" else 1e-3) * 8 * max(K, 1) ** 0.5
    assert_close(c, matmul_reference(a, b, np.float32), atol=atol, rtol=1e-4 if dtype == "float32" else 1e-2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, K and N multiples of 8",
                        type=_cli.shape("MxNxK"))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=["float32", "float16"])
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = (int(v) for v in shape.lower().split("x"))
            check(M, N, K, dtype)
            print(f"matmul_tma {M}x{N}x{K} {dtype:<8} matches NumPy (fp32 accumulate)")
    print("OK")


if __name__ == "__main__":
    main()
