"""Where swiglu's forward loses to torch.compile's on the GPU: the same arithmetic under other tilings and grid
orders, at the benchmark's shapes: ``python tools/hopper/elementwise_probe.py [--reps 30]``.

Variants of ``y = silu(a) * b`` in bf16 (tegula/torch/ops/swiglu.py's kernel is "rows x cols, rows first"):
- rows x cols, rows first: the op's grid, (cdiv(M, BLOCK_R), cdiv(N, BLOCK_C)), consecutive programs on
  consecutive row blocks of one column block;
- rows x cols, cols first: the same tiles, consecutive programs along a row;
- flat: one dimension over contiguous a and b, BLOCK elements a program;
and torch.compile of the formula. Timed interleaved under tegula.testing.CudaTimer (L2 flushed), medians, as
shares of the copy rate (bytes read and written / a device-to-device copy of the same bytes' time).
"""

import argparse
import statistics
import warnings

import torch

import tegula
import tegula.language as tl
from tegula.testing import CudaTimer


@tegula.jit
def tiled_kernel(a_ptr, b_ptr, y_ptr, M, N, stride_a, stride_b, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                 ROWS_FIRST: tl.constexpr):
    # ROWS_FIRST: program_id(0) walks the row blocks (the op's grid before 06a56e5), else the column blocks.
    row_block, col_block = (tl.program_id(0), tl.program_id(1)) if ROWS_FIRST else (tl.program_id(1),
                                                                                    tl.program_id(0))
    rows = (row_block * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)[:, None]
    cols = (col_block * BLOCK_C + tl.arange(0, BLOCK_C))[None, :]
    mask = (rows < M) & (cols < N)
    a = tl.load(a_ptr + rows * stride_a + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + rows * stride_b + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + rows * N + cols, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def flat_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="16384x8192")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=tegula.RecompileWarning)  # the variants are specializations
    M, N = (int(v) for v in args.shape.split("x"))
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, N, device="cuda", generator=g).bfloat16()
    b = torch.randn(M, N, device="cuda", generator=g).bfloat16()
    want = (torch.nn.functional.silu(a.float()) * b.float()).bfloat16()
    outputs = {}

    def variant(name, launch):
        y = torch.empty_like(a)
        outputs[name] = y
        return name, lambda: launch(y)

    compiled = torch.compile(lambda a, b: (torch.nn.functional.silu(a.float()) * b.float()).to(a.dtype))
    variants = [("torch.compile", lambda: compiled(a, b))]
    for br, bc, warps in ((8, 256, 4), (4, 512, 4), (8, 512, 8), (2, 1024, 4), (1, 2048, 8)):
        for rows_first in (True, False):
            grid = (tegula.cdiv(M, br), tegula.cdiv(N, bc))
            variants.append(variant(f"{'rows' if rows_first else 'cols'} first {br}x{bc} w{warps}",
                                    lambda y, br=br, bc=bc, warps=warps, rows_first=rows_first,
                                    grid=grid if rows_first else grid[::-1]:
                                    tiled_kernel[grid](a, b, y, M, N, N, N, BLOCK_R=br, BLOCK_C=bc,
                                                       ROWS_FIRST=rows_first, num_warps=warps)))
    for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 8)):
        variants.append(variant(f"flat {block} w{warps}", lambda y, block=block, warps=warps:
                                flat_kernel[(tegula.cdiv(M * N, block),)](a, b, y, M * N, BLOCK=block,
                                                                           num_warps=warps)))
    # The floor: a copy that reads and writes as many bytes as the op does (2 M N read, M N written).
    copy_src = torch.empty(3 * M * N // 2, device="cuda", dtype=torch.bfloat16)
    copy_dst = torch.empty_like(copy_src)
    variants.append(("copy (floor)", lambda: copy_dst.copy_(copy_src)))
    for _, fn in variants:
        fn()
    torch.cuda.synchronize()
    for name, y in outputs.items():
        assert (y.float() - want.float()).abs().max() <= 2 ** -6 * want.float().abs().max(), name
    timer = CudaTimer()
    samples = timer.interleaved([fn for _, fn in variants], args.reps)
    medians = {name: statistics.median(s) for (name, _), s in zip(variants, samples)}
    floor = medians["copy (floor)"]
    bytes_moved = 3 * M * N * 2
    print(f"swiglu forward, bf16 [{M}, {N}]: {bytes_moved / 2**20:.0f} MiB read and written; a copy moving as "
          f"many {floor:.4f} ms ({bytes_moved / floor / 1e6:.0f} GB/s)")
    for name, ms in medians.items():
        print(f"{name:28s} {ms:8.4f} ms  {floor / ms:6.3f} of copy")


if __name__ == "__main__":
    main()
