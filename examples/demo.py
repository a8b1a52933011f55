"""The main job: the case-study chain of the design document, eager against fused.

    python examples/demo.py [--cpu] [--size MxN] [--dtype float32|float16|bfloat16] [--json]

With a CUDA GPU (and without ``--cpu``) both sides run there on torch CUDA
tensors, with the design's I/O: x and residual bf16, keep bool, bias and
weight fp32, y bf16 (default size 16384x4096). Eager is PyTorch op by op;
fused is one Tegula kernel on the same tensors; both are timed with CUDA
events (L2 flushed before each call, median of interleaved runs).

On the CPU eager is NumPy, op by op (NumPy has no bfloat16, so the demo uses
float32 or float16 I/O and says so), fused is the same Tegula kernel
compiled for the CPU, timed on the host clock (median of interleaved runs
after warm-up). Either way the outputs are checked against each other and
reported with the bytes each side moves. The kernel and both eager versions
are examples/fused_chain.py; ``make demo`` builds Tegula and runs this.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import _host  # array helpers shared by the examples (and whether a GPU is usable)
import fused_chain as chain  # examples/fused_chain.py: the kernel, the eager chain, the byte counts

# Warps per program of the fused kernel on the GPU (the benchmark uses the same).
GPU_NUM_WARPS = 4


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


def gpu_usable() -> bool:
    return _host.cuda_usable()[0]


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


def run_gpu(M: int, N: int, dtype_name: str, reps: int, show_progress: bool) -> dict:
    """The chain on the current CUDA device: PyTorch eager against the fused kernel."""
    import torch

    from tegula.testing import CudaTimer

    dtype = getattr(torch, dtype_name)
    _progress(show_progress, f"making inputs {M}x{N} on {torch.cuda.get_device_name()}: x, residual "
                             f"{dtype_name}, keep bool, bias/weight float32")
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, N, device="cuda", generator=g).to(dtype)
    residual = torch.randn(M, N, device="cuda", generator=g).to(dtype)
    keep = torch.rand(M, N, device="cuda", generator=g) >= chain.P_DROP
    bias = torch.randn(N, device="cuda", generator=g)
    weight = torch.randn(N, device="cuda", generator=g)
    out = torch.empty_like(x)

    def fused():
        return chain.fused_chain(x, residual, keep, bias, weight, out=out, num_warps=GPU_NUM_WARPS)

    def eager():
        return chain.eager_chain(x, residual, keep, bias, weight)

    _progress(show_progress, "compiling the fused kernel for the GPU (served from the cache after the "
                             "first run)")
    t0 = time.perf_counter()
    fused()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0

    _progress(show_progress, "checking fused against eager")
    traffic = chain._Traffic()
    expected = chain.eager_chain(x, residual, keep, bias, weight, traffic=traffic).float()
    scale = expected.abs().clamp_min(1.0)
    max_rel_err = float(((out.float() - expected).abs() / scale).max())
    del expected, scale

    _progress(show_progress, f"timing eager and fused with CUDA events, interleaved ({reps} rounds)")
    timer = CudaTimer()
    eager(), fused()
    eager_ms, fused_ms = (float(np.median(samples)) for samples in timer.interleaved([eager, fused], reps))
    fused_bytes = chain.bytes_moved(M, N, x.element_size())
    return {
        "backend": "cuda",
        "device": torch.cuda.get_device_name(),
        "shape": [M, N],
        "dtype": dtype_name,
        "eager_s": eager_ms / 1e3,
        "fused_s": fused_ms / 1e3,
        "speedup": eager_ms / fused_ms,
        "max_rel_err": max_rel_err,
        "agree": max_rel_err <= (1e-3 if dtype_name == "float32" else 2e-2),
        "eager_bytes": int(traffic.bytes),
        "fused_bytes": int(fused_bytes),
        "first_call_s": compile_s,
    }


def print_report(r: dict) -> None:
    M, N = r["shape"]
    print(f"Tegula demo: the case-study chain on [{M} x {N}], {r['dtype']} I/O, backend {r['backend']}"
          + (f" ({r['device']})" if r.get("device") else ""))
    if r["backend"] == "cuda":
        print("  (x and residual in the I/O dtype, keep bool, bias/weight fp32, as in the design; "
              "times from CUDA events)")
        eager_name = "PyTorch eager (op by op)"
    else:
        print("  (NumPy has no bfloat16, so both sides use the I/O dtype above; keep is bool, "
              "bias/weight fp32)")
        eager_name = "NumPy eager (op by op)"
    print()
    print(f"  {'variant':<26}{'time':>12}{'bytes moved':>16}{'GB/s':>10}{'speedup':>10}")
    for name, secs, nbytes, speed in (
            (eager_name, r["eager_s"], r["eager_bytes"], 1.0),
            ("Tegula fused kernel", r["fused_s"], r["fused_bytes"], r["speedup"])):
        print(f"  {name:<26}{secs * 1e3:>9.3f} ms{nbytes / 1e6:>13.1f} MB{nbytes / secs / 1e9:>10.2f}"
              f"{speed:>9.2f}x")
    print()
    verdict = "agree" if r["agree"] else "DISAGREE"
    print(f"  outputs {verdict}: max relative error {r['max_rel_err']:.2e}")
    print(f"  fused is {r['speedup']:.1f}x faster and moves {r['eager_bytes'] / r['fused_bytes']:.1f}x fewer bytes")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python examples/demo.py", description=__doc__.splitlines()[0])
    p.add_argument("--cpu", action="store_true", help="run on the CPU even when a CUDA GPU is usable")
    p.add_argument("--size", help="MxN (default 16384x4096 on a GPU, 4096x4096 on the CPU)")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"],
                   help="I/O dtype of x, residual and y (default bfloat16 on a GPU, float32 on the CPU; "
                        "bfloat16 needs the GPU)")
    p.add_argument("--reps", type=int, help="timed rounds per variant (default 20 on a GPU, 5 on the CPU)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    args = p.parse_args(argv)
    # Checked before gpu_usable(), which can take seconds (it may import torch).
    if args.size is not None:
        try:
            M, N = (int(v) for v in args.size.lower().split("x"))
            if M <= 0 or N <= 0:
                raise ValueError
        except ValueError:
            p.error(f"--size must look like 4096x4096, got {args.size!r}")
    if args.reps is not None and args.reps < 1:
        p.error(f"--reps must be at least 1, got {args.reps}")
    on_gpu = not args.cpu and gpu_usable()
    if args.size is None:
        M, N = (16384, 4096) if on_gpu else (4096, 4096)
    reps = args.reps if args.reps is not None else (20 if on_gpu else 5)
    if on_gpu:
        result = run_gpu(M, N, args.dtype or "bfloat16", reps, show_progress=not args.json)
    else:
        if args.dtype == "bfloat16":
            p.error("--dtype bfloat16 needs a CUDA GPU (NumPy, the CPU's eager side, has no bfloat16)")
        result = run(M, N, np.dtype(args.dtype or "float32"), reps, show_progress=not args.json)
    if args.json:
        keys = ("backend", "shape", "dtype", "eager_s", "fused_s", "speedup", "max_rel_err")
        print(json.dumps({k: result[k] for k in keys}))
    else:
        print_report(result)
    return 0 if result["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
