"""The main job: the case-study chain of the design document, eager against fused.

    python -m tegula.demo [--size 4096x4096] [--dtype float32|float16] [--json]

Eager is NumPy, op by op (NumPy has no bfloat16, so the demo uses float32 or
float16 I/O and says so). Fused is one Tegula kernel. Both are checked against
each other, timed (median of interleaved runs after warm-up), and reported with
the bytes each moves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import tegula
from tegula.kernels import fused_chain as chain


def _progress(enabled: bool, text: str) -> None:
    if enabled:
        print(f"  .. {text}", file=sys.stderr, flush=True)


def _median_interleaved(fns, reps: int, min_time: float = 0.5):
    """Runs the callables round-robin (A, B, A, B, ...) and returns each one's median seconds."""
    times = [[] for _ in fns]
    start = time.perf_counter()
    rep = 0
    while rep < reps or (time.perf_counter() - start < min_time and rep < 10 * reps):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
        rep += 1
    return [float(np.median(t)) for t in times]


def backend_name() -> str:
    return "cpu"


def run(M: int, N: int, dtype, reps: int, show_progress: bool) -> dict:
    _progress(show_progress, f"making inputs {M}x{N} {np.dtype(dtype).name}")
    x, residual, keep, bias, weight = chain.make_inputs(M, N, dtype)
    out = np.empty_like(x)

    _progress(show_progress, "compiling the fused kernel (served from the cache after the first run)")
    t0 = time.perf_counter()
    chain.fused_chain(x, residual, keep, bias, weight, out=out)
    compile_s = time.perf_counter() - t0

    _progress(show_progress, "checking fused against eager")
    expected = chain.eager_chain(x, residual, keep, bias, weight)
    diff = np.abs(out.astype(np.float64) - expected.astype(np.float64))
    scale = np.maximum(np.abs(expected.astype(np.float64)), 1.0)
    max_rel_err = float(np.max(diff / scale))

    _progress(show_progress, f"timing eager and fused, interleaved ({reps} rounds)")
    eager_s, fused_s = _median_interleaved(
        [lambda: chain.eager_chain(x, residual, keep, bias, weight),
         lambda: chain.fused_chain(x, residual, keep, bias, weight, out=out)], reps)
    eager_bytes = chain.eager_bytes(x, residual, keep, bias, weight)
    fused_bytes = chain.bytes_moved(M, N, np.dtype(dtype).itemsize)
    tolerance = 1e-3 if np.dtype(dtype) == np.float32 else 2e-2
    return {
        "backend": backend_name(),
        "shape": [M, N],
        "dtype": np.dtype(dtype).name,
        "eager_s": eager_s,
        "fused_s": fused_s,
        "speedup": eager_s / fused_s,
        "max_rel_err": max_rel_err,
        "agree": max_rel_err <= tolerance,
        "eager_bytes": int(eager_bytes),
        "fused_bytes": int(fused_bytes),
        "first_call_s": compile_s,
    }


def print_report(r: dict) -> None:
    M, N = r["shape"]
    print(f"Tegula demo: the case-study chain on [{M} x {N}], {r['dtype']} I/O, backend {r['backend']}")
    print("  (NumPy has no bfloat16, so both sides use the I/O dtype above; keep is bool, bias/weight fp32)")
    print()
    print(f"  {'variant':<22}{'time':>12}{'bytes moved':>16}{'GB/s':>10}{'speedup':>10}")
    for name, secs, nbytes, speed in (
            ("NumPy eager (op by op)", r["eager_s"], r["eager_bytes"], 1.0),
            ("Tegula fused kernel", r["fused_s"], r["fused_bytes"], r["speedup"])):
        print(f"  {name:<22}{secs * 1e3:>9.2f} ms{nbytes / 1e6:>13.1f} MB{nbytes / secs / 1e9:>10.2f}{speed:>9.2f}x")
    print()
    verdict = "agree" if r["agree"] else "DISAGREE"
    print(f"  outputs {verdict}: max relative error {r['max_rel_err']:.2e}")
    print(f"  fused is {r['speedup']:.1f}x faster and moves {r['eager_bytes'] / r['fused_bytes']:.1f}x fewer bytes")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tegula.demo", description=__doc__.splitlines()[0])
    p.add_argument("--size", default="4096x4096", help="MxN (default 4096x4096)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    p.add_argument("--reps", type=int, default=5, help="timed rounds per variant (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    args = p.parse_args(argv)
    try:
        M, N = (int(v) for v in args.size.lower().split("x"))
        if M <= 0 or N <= 0:
            raise ValueError
    except ValueError:
        p.error(f"--size must look like 4096x4096, got {args.size!r}")
    result = run(M, N, np.dtype(args.dtype), args.reps, show_progress=not args.json)
    if args.json:
        keys = ("backend", "shape", "dtype", "eager_s", "fused_s", "speedup", "max_rel_err")
        print(json.dumps({k: result[k] for k in keys}))
    else:
        print_report(result)
    return 0 if result["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
