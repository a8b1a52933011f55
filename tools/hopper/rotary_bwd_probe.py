"""What storing the attention backward's gradients into qkv's gradient costs, rotated back or not, at the
training step's shape: ``python tools/hopper/rotary_bwd_probe.py [--shape 32x8x512] [--dims 64] [--reps 20]``.

Three runs of the two-kernel backward (tegula/torch/ops/attention_tma.py, causal, bf16), interleaved under
tegula.testing.CudaTimer (L2 flushed), medians: dq, dk, dv into [B, H, S, D] buffers of their own; into their
slots of one [B, S, 3, H, D] gradient (rows 3 H D apart); and into those slots rotated back by rotary tables
(rotary_attention's backward). The first against the second is the strided stores' cost, the second against
the third the rotation's (the tables' loads and the arithmetic).
"""

import argparse
import importlib
import statistics

import torch

from tegula.testing import CudaTimer

at = importlib.import_module("tegula.torch.ops.attention_tma")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="32x8x512")
    parser.add_argument("--dims", nargs="+", type=int, default=[64])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    B, H, S = (int(v) for v in args.shape.split("x"))
    timer = CudaTimer()
    for D in args.dims:
        g = torch.Generator(device="cuda").manual_seed(D)
        qkv = torch.randn(B, S, 3, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))  # [B, H, S, D] views
        do = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
        out = torch.empty(B, S, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
        scale = D ** -0.5
        at.forward(q, k, v, True, scale, out, lse)
        angles = torch.rand(S, D // 2, device="cuda", generator=g) * 6.283
        cos, sin = angles.cos().contiguous(), angles.sin().contiguous()
        own = [torch.empty(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        dqkv = torch.empty_like(qkv)
        slots = [dqkv[:, :, i].transpose(1, 2) for i in range(3)]
        runs = {
            "own [B, H, S, D] buffers": lambda: at.backward(do, q, k, v, out, lse, True, scale, *own),
            "qkv gradient's slots": lambda: at.backward(do, q, k, v, out, lse, True, scale, *slots),
            "slots, rotated back": lambda: at.backward(do, q, k, v, out, lse, True, scale, *slots, cos, sin),
        }
        for run in runs.values():
            run()
        torch.cuda.synchronize()
        times = [statistics.median(t) for t in timer.interleaved(list(runs.values()), args.reps)]
        for name, t in zip(runs, times):
            print(f"D {D} {name:26s} {t * 1e3:7.1f} us  {t / times[0]:.3f} of the first")


if __name__ == "__main__":
    main()
