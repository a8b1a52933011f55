"""The row ops' backward split on the GPU: programs per multiprocessor and rows per step of the RMSNorm
and add_rms_norm backwards (tegula/torch/ops/_rows.py) against the copy rate, at train_gpt's shape (16384
rows of 512, float32 as its residual stream and bf16): ``python tools/hopper/rows_bwd_probe.py``.
Interleaved CUDA-event medians, L2 flushed (tegula.testing.CudaTimer). Each row is one backward with its
partial-gradient sum. For choosing PROGRAMS_PER_SM, TILE_ELEMENTS and LOAD_AHEAD (each step's tiles loaded
during the step before, or in the step)."""

import statistics

import torch

from tegula.testing import CudaTimer
from tegula.torch.ops import _rows
from tegula.torch.ops.add_rms_norm import add_rms_norm_backward
from tegula.torch.ops.rms_norm import rms_norm_backward

# (programs per SM, tile elements, load ahead)
CANDIDATES = [(p, t, ahead) for ahead in (False, True) for p, t in ((2, 2048), (4, 2048), (8, 1024), (2, 8192))]


def main() -> None:
    timer = CudaTimer()
    for M, N, dtype in ((16384, 512, torch.float32), (16384, 512, torch.bfloat16), (16384, 4096, torch.bfloat16)):
        x, dy = (torch.randn(M, N, device="cuda", dtype=dtype) for _ in range(2))
        w = torch.randn(N, device="cuda", dtype=dtype)
        rstd = torch.rand(M, device="cuda") + 0.5
        src, dst = torch.randn(2 * M * N, device="cuda", dtype=dtype), torch.empty(2 * M * N, device="cuda", dtype=dtype)

        def copy():
            dst.copy_(src)

        dh = torch.randn(M, N, device="cuda", dtype=dtype)
        # (name, the backward, bytes it must move): rms_norm reads x and dy and writes dx; add_rms_norm
        # reads dh, dy and h and writes dx (its rstd is computed again from h).
        ops = [("rms_norm", lambda: rms_norm_backward(dy, x, w, rstd), 3),
               ("add_rms_norm", lambda: add_rms_norm_backward(dh, dy, x, w, 1e-6), 4)]

        def run(c, backward):
            def go():
                _rows.PROGRAMS_PER_SM, _rows.TILE_ELEMENTS = c[:2]
                _rows.LOAD_AHEAD = {"cuda": c[2]}
                backward()
            return go

        fns = [copy] + [run(c, backward) for _, backward, _ in ops for c in CANDIDATES]
        for f in fns:
            f()
        torch.cuda.synchronize()
        ms = [statistics.median(s) for s in timer.interleaved(fns, 15)]
        copy_rate = 4 * M * N * x.element_size() / ms[0] / 1e6
        print(f"{M}x{N} {dtype}: copy {copy_rate:.0f} GB/s", flush=True)
        times = iter(ms[1:])
        for name, _, tensors in ops:
            for c in CANDIDATES:
                t = next(times)
                rate = tensors * M * N * x.element_size() / t / 1e6
                print(f"  {name} programs/SM {c[0]} tile {c[1]} {'ahead' if c[2] else 'in step'}: {t * 1e3:.1f} us, {rate:.0f} GB/s, "
                      f"{rate / copy_rate:.2f} of copy", flush=True)


if __name__ == "__main__":
    main()
