"""Host-side cost of one launch of a tiny kernel, Tegula against Triton and torch.

    python tools/launch_overhead.py [--launches 20000]

The kernel is the same vector add source for Tegula and Triton (one 1024-wide
block, so the GPU finishes each launch faster than the host queues the next:
the time per launch is the host's). Each variant runs `launches` times after a
warm-up; the median of five such rounds is reported in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import tegula

try:  # one source for both compilers: tegula.jit accepts kernels written against triton.language
    import triton
    import triton.language as tl
except ImportError:
    triton = None
    import tegula.language as tl


def add_body(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def per_launch_us(launch, launches: int) -> float:
    for _ in range(200):
        launch()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(launches):
            launch()
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - start) / launches * 1e6)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20000)
    args = parser.parse_args()

    n = 1024
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    results = {}

    kernel = tegula.jit(add_body)
    kernel[(1,)](x, y, out, n, BLOCK=1024)
    torch.testing.assert_close(out, x + y)
    results["tegula"] = per_launch_us(lambda: kernel[(1,)](x, y, out, n, BLOCK=1024), args.launches)

    try:
        triton_kernel = triton.jit(add_body)
        triton_kernel[(1,)](x, y, out, n, BLOCK=1024)
        results["triton"] = per_launch_us(lambda: triton_kernel[(1,)](x, y, out, n, BLOCK=1024), args.launches)
    except Exception as e:  # the comparison is optional (no triton): say why it is missing
        print(f"triton: not measured ({type(e).__name__}: {e})")

    results["torch.add"] = per_launch_us(lambda: torch.add(x, y, out=out), args.launches)
    for name, us in results.items():
        print(f"{name:10s} {us:6.2f} us per launch")


if __name__ == "__main__":
    main()
