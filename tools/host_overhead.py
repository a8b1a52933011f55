"""The host time of the Tegula ops a compiled GPT training step calls, with their launches stubbed out: a
proxy, runnable on any machine, for the Python work around the launches (checks, layouts, allocations,
argument lists) that makes the compiled step host-bound on the GPU machine (whose host is several times
slower; the ratios between ops carry over):

    python tools/host_overhead.py [--calls 20000] [--profile OP]

The ops run on CPU tensors shaped as examples/train_gpt.py's GPU_CONFIG shapes them (a smaller batch), in bf16, through the
same direct calls Inductor's graphs make (``torch.ops.tegula.<op>.default._tegula_direct``), with the
descriptor paths of Hopper forced on (``attention_tma.applies``) and every ``kernel[grid](...)`` a no-op. It
prints microseconds per call of each op and the sum over one step's calls.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import time

import torch

import tegula  # noqa: F401

jit = importlib.import_module("tegula.jit")
ops_pkg = importlib.import_module("tegula.torch.ops")
attention_tma = importlib.import_module("tegula.torch.ops.attention_tma")
from tegula.torch._inductor_fallback import DIRECT  # noqa: E402


def _direct(name):
    return getattr(getattr(torch.ops.tegula, name).default, DIRECT)


def _calls():
    """(op name, calls per step, a function making one call) for the ops of GPU_CONFIG's step."""
    # Small batches: CPU allocations of the real sizes would cost page faults the GPU's caching allocator never pays.
    B, T, H, D, C, hidden, V = 1, 16, 8, 64, 512, 1376, 128
    bf16, f32 = torch.bfloat16, torch.float32
    g = torch.Generator().manual_seed(0)

    def randn(*shape, dtype=bf16):
        return torch.randn(*shape, generator=g).to(dtype)

    x, res = randn(B, T, C, dtype=f32), randn(B, T, C)
    w = randn(C, dtype=f32)
    qkv = randn(B, T, 3, H, D)
    cos, sin = randn(T, D // 2, dtype=f32), randn(T, D // 2, dtype=f32)
    scale = D ** -0.5
    out, lse, q, k = _direct("rotary_attention")(qkv, cos, sin, True, scale)
    dout = randn(B, T, H, D)
    h, y = _direct("add_rms_norm")(x, res, w, 1e-6, bf16)
    rstd = _direct("rms_norm")(x, w, 1e-6)[1]
    dx32 = randn(B, T, C, dtype=f32)
    gate_up = randn(B, T, 2 * hidden)
    dy = randn(B, T, hidden)
    xs, head, targets = randn(B * T, C), randn(V, C), torch.randint(0, V, (B * T,), generator=g)
    losses, lse_rows = _direct("linear_cross_entropy")(xs, head, targets, -100)
    dloss = torch.ones(B * T, dtype=f32)
    return [
        ("rotary_attention", 6, lambda: _direct("rotary_attention")(qkv, cos, sin, True, scale)),
        ("rotary_attention_backward", 6,
         lambda: _direct("rotary_attention_backward")(dout, qkv, q, k, out, lse, cos, sin, True, scale)),
        ("rms_norm", 1, lambda: _direct("rms_norm")(x, w, 1e-6)),
        ("rms_norm_backward", 1, lambda: _direct("rms_norm_backward")(dx32, x, w, rstd)),
        ("add_rms_norm", 11, lambda: _direct("add_rms_norm")(x, res, w, 1e-6, bf16)),
        ("add_rms_norm_backward", 11, lambda: _direct("add_rms_norm_backward")(x, y, h, w, 1e-6)),
        ("silu_and_mul", 6, lambda: _direct("silu_and_mul")(gate_up)),
        ("silu_and_mul_backward", 6, lambda: _direct("silu_and_mul_backward")(dy, gate_up)),
        ("linear_cross_entropy", 1, lambda: _direct("linear_cross_entropy")(xs, head, targets, -100)),
        ("linear_cross_entropy_backward", 1,
         lambda: _direct("linear_cross_entropy_backward")(dloss, xs, head, targets, lse_rows, -100)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--profile", metavar="OP", help="a cProfile of this op's calls")
    args = parser.parse_args()
    attention_tma.applies = lambda q: True
    jit.JITFunction.__getitem__ = lambda self, grid: _no_launch
    calls = _calls()
    total = 0.0
    for name, per_step, call in calls:
        call()
        start = time.perf_counter()
        for _ in range(args.calls):
            call()
        us = (time.perf_counter() - start) / args.calls * 1e6
        total += us * per_step
        print(f"{name:32s} {us:7.2f} us a call, {per_step:2d} a step")
        if name == args.profile:
            profile = cProfile.Profile()
            profile.runcall(lambda: [call() for _ in range(args.calls)])
            pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    print(f"{'one step':32s} {total:7.1f} us")


def _no_launch(*args, **kwargs):
    return None


if __name__ == "__main__":
    main()
