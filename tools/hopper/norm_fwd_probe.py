"""Rows and warps of add_rms_norm's forward program on the GPU, against a copy of the same bytes and
torch.compile's fused add + RMSNorm: ``python tools/hopper/norm_fwd_probe.py [--shapes 16384x512 ...]
[--reps 30]``.

Each candidate (ROWS rows per program, num_warps) launches add_rms_norm_forward_kernel directly; the copy
moves what the kernel moves (reads x and residual, writes h and y) as two tensor copies; everything runs
interleaved under tegula.testing.CudaTimer (L2 flushed), medians. For choosing _rows.FORWARD_TILES.
"""

import argparse
import statistics

import torch

import tegula
import tegula.language as tl
from tegula.testing import CudaTimer
from tegula.torch.ops import add_rms_norm as arn

CANDIDATES = [(1, 1), (1, 2), (1, 4), (2, 2), (2, 4), (4, 4), (4, 8), (8, 4), (8, 8), (16, 8)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["16384x512", "8192x2048"])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    timer = CudaTimer()
    for text in args.shapes:
        M, N = (int(v) for v in text.split("x"))
        g = torch.Generator(device="cuda").manual_seed(M + N)
        x, res = (torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
        w = torch.randn(N, device="cuda", dtype=torch.bfloat16, generator=g)
        h, y = torch.empty_like(x), torch.empty_like(x)
        h_copy, y_copy = torch.empty_like(x), torch.empty_like(x)
        block_n = tegula.next_power_of_2(N)

        def launch(rows, warps):
            return lambda: arn.add_rms_norm_forward_kernel[(tegula.cdiv(M, rows),)](
                x, res, w, h, y, M, N, 1e-6, BLOCK_N=block_n, ACC=tl.float32, ROWS=rows, num_warps=warps)

        def reference(x, res, w):
            hh = x + res
            return hh, (hh.float() * torch.rsqrt(hh.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

        compiled = torch.compile(reference)
        want_h, want_y = reference(x, res, w)
        fns, names = [], []
        for rows, warps in CANDIDATES:
            fn = launch(rows, warps)
            fn()
            torch.cuda.synchronize()
            err = (y.float() - want_y.float()).abs().max().item() / want_y.float().abs().max().item()
            if not torch.equal(h, want_h) or err > 2e-2:
                print(f"{text} rows {rows} warps {warps}: wrong (h equal {torch.equal(h, want_h)}, y {err:.2e})")
                continue
            fns.append(fn)
            names.append(f"rows {rows:2d} warps {warps}")
        fns += [lambda: (h_copy.copy_(x), y_copy.copy_(res)), lambda: compiled(x, res, w)]
        names += ["copy of the same bytes", "torch.compile"]
        for _ in range(3):
            compiled(x, res, w)
        times = [statistics.median(t) for t in timer.interleaved(fns, args.reps)]
        moved = 4 * x.numel() * x.element_size()
        copy = times[-2]
        for name, t in zip(names, times):
            print(f"{text} {name:24s} {t * 1e3:7.1f} us  {moved / t / 1e6:7.0f} GB/s  {copy / t:.3f} of the copy's rate")


if __name__ == "__main__":
    main()
