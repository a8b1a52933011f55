"""linear_cross_entropy against eager torch and torch.compile of the same formula at the benchmark's size
(x 4096 x 2048, W 32768 x 2048, bf16): forward and forward + backward, medians of CUDA-event timings, and the
peak memory each allocates beyond its inputs.

    python3 tools/hopper/lce_probe.py [--rows 4096] [--dim 2048] [--vocab 32768] [--reps 20]
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def peak(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    from tegula.torch import ops
    M, C, V = args.rows, args.dim, args.vocab
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(M, C, device="cuda", generator=gen) * 0.5).bfloat16().requires_grad_()
    w = (torch.randn(V, C, device="cuda", generator=gen) * 0.02).bfloat16().requires_grad_()
    targets = torch.randint(0, V, (M,), device="cuda", generator=gen)

    def eager(x, w):
        return F.cross_entropy(F.linear(x, w).float(), targets)

    variants = {"torch": eager, "torch.compile": torch.compile(eager),
                "tegula": lambda x, w: ops.linear_cross_entropy(x, w, targets)}
    want = eager(x, w)
    want_grads = torch.autograd.grad(want, (x, w))
    flops = 2 * M * V * C
    for name, fn in variants.items():
        got = fn(x, w)
        grads = torch.autograd.grad(got, (x, w))
        err = max(float((g.float() - r.float()).abs().max() / r.float().abs().max()) for g, r in zip(grads, want_grads))
        with torch.no_grad():
            fwd = timed(lambda: fn(x, w), args.reps)
        both = timed(lambda: torch.autograd.grad(fn(x, w), (x, w)), args.reps)
        mem = peak(lambda: torch.autograd.grad(fn(x, w), (x, w)))
        print(f"{name:>14}: fwd {fwd:7.3f} ms ({flops / fwd / 1e9:6.1f} TFLOP/s)  fwd+bwd {both:7.3f} ms "
              f"({3 * flops / both / 1e9:6.1f} TFLOP/s)  peak {mem:7.1f} MiB  loss {float(got):.5f} "
              f"(torch {float(want):.5f})  grads' max error / max {err:.2e}")


if __name__ == "__main__":
    main()
