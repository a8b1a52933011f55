"""The row ops' backward split on the GPU: programs per multiprocessor and rows per step of the RMSNorm
backward (tegula/torch/ops/_rows.py) against the copy rate, at train_gpt's shape (16384 rows of 512, float32
as its residual stream and bf16): ``python tools/hopper/rows_bwd_probe.py``. Interleaved CUDA-event medians,
L2 flushed (tegula.testing.CudaTimer). For choosing PROGRAMS_PER_SM and TILE_ELEMENTS."""

import statistics

import torch

from tegula.testing import CudaTimer
from tegula.torch.ops import _rows
from tegula.torch.ops.rms_norm import rms_norm_backward

CANDIDATES = [(2, 2048), (4, 2048), (8, 2048), (2, 8192), (4, 4096), (8, 1024)]


def main() -> None:
    timer = CudaTimer()
    for M, N, dtype in ((16384, 512, torch.float32), (16384, 512, torch.bfloat16), (16384, 4096, torch.bfloat16)):
        x, dy = (torch.randn(M, N, device="cuda", dtype=dtype) for _ in range(2))
        w = torch.randn(N, device="cuda", dtype=dtype)
        rstd = torch.rand(M, device="cuda") + 0.5
        src, dst = torch.randn(2 * M * N, device="cuda", dtype=dtype), torch.empty(2 * M * N, device="cuda", dtype=dtype)

        def copy():
            dst.copy_(src)

        def run(c):
            def go():
                _rows.PROGRAMS_PER_SM, _rows.TILE_ELEMENTS = c
                rms_norm_backward(dy, x, w, rstd)
            return go

        fns = [copy] + [run(c) for c in CANDIDATES]
        for f in fns:
            f()
        torch.cuda.synchronize()
        ms = [statistics.median(s) for s in timer.interleaved(fns, 15)]
        moved = 3 * M * N * x.element_size()  # x and dy read, dx written
        copy_rate = 4 * M * N * x.element_size() / ms[0] / 1e6
        print(f"{M}x{N} {dtype}: copy {copy_rate:.0f} GB/s", flush=True)
        for c, t in zip(CANDIDATES, ms[1:]):
            rate = moved / t / 1e6
            print(f"  programs/SM {c[0]} tile {c[1]}: {t * 1e3:.1f} us, {rate:.0f} GB/s, {rate / copy_rate:.2f} of copy",
                  flush=True)


if __name__ == "__main__":
    main()
