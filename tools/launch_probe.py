"""Where launch time goes inside a long-lived benchmark process (experiment).

    python tools/launch_probe.py [--workloads vector_add,fused_chain,...]

Measures, in one process, the launch row's variants and the pieces under
Tegula's launch (torch getters, the raw driver launch, a pure-Python loop)
fresh, then after running memory-bound benchmark workloads (torch.compile
among them), then with the garbage collector frozen and disabled. Prints one
JSON object per phase.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from tegula_bench import gpu_run, gpu_workloads, launch, triton_twin  # noqa: E402
from tegula_bench.kernels import axpy  # noqa: E402


def per_call_ns(fn, n=2000, rounds=9):
    samples = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter_ns() - start) / n)
    torch.cuda.synchronize()
    return round(statistics.median(samples), 1)


def probe(phase, x, y, out, compiled, triton_kernel):
    stream = torch.cuda.current_stream().cuda_stream
    raw_args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), 3.0, 1]
    k = axpy.axpy_kernel
    result = {
        "phase": phase,
        "python_threads": threading.active_count(),
        "os_threads": len(os.listdir("/proc/self/task")),
        "gc_objects": len(gc.get_objects()),
        "gc_count": gc.get_count(),
        "gc_enabled": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
        "noop_loop_ns": per_call_ns(lambda: None),
        "data_ptr_ns": per_call_ns(x.data_ptr),
        "dtype_ns": per_call_ns(lambda: x.dtype),
        "stream_ns": per_call_ns(lambda: torch.cuda.current_stream()),
        "raw_stream_ns": per_call_ns(lambda: torch._C._cuda_getCurrentRawStream(0)),
        "dlpack_exchange": hasattr(torch.Tensor, "__dlpack_c_exchange_api__"),
        "is_cuda_ns": per_call_ns(lambda: x.is_cuda),
        "raw_stream_launch_ns": per_call_ns(
            lambda: compiled.launch((1, 1, 1), raw_args, torch._C._cuda_getCurrentRawStream(0), 0), n=200),
        "warmup_ns": per_call_ns(lambda: k._launcher.warmup((1,), x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4)),
        "specialization_ns": per_call_ns(
            lambda: k._launcher.specialization(x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4)),
        "tegula_raw_ns": per_call_ns(lambda: compiled.launch((1, 1, 1), raw_args, stream, 0), n=200),
        "tegula_ns": per_call_ns(lambda: k[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4), n=200),
        "triton_ns": per_call_ns(lambda: triton_kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4),
                                 n=200),
        "torch_add_ns": per_call_ns(lambda: torch.add(y, x, alpha=3.0, out=out), n=200),
    }
    outcomes = launch.measure_launch(torch, ("tegula", "raw", "triton", "torch"), 2000, 3, 4)
    result["bench_launch_us"] = {o.variant: round(o.median_ms * 1e3, 2) for o in outcomes}
    print(json.dumps(result), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="vector_add,fused_chain,softmax,layer_norm")
    args = parser.parse_args()
    x = torch.ones(1, device="cuda")
    y = torch.full((1,), 2.0, device="cuda")
    out = torch.zeros(1, device="cuda")
    compiled = axpy.axpy_kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4)
    triton_kernel = triton_twin.load(axpy).axpy_kernel
    triton_kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4)
    torch.cuda.synchronize()
    probe("fresh", x, y, out, compiled, triton_kernel)
    names = tuple(w for w in args.workloads.split(",") if w)
    if names:
        gpu_run.run(names, gpu_workloads.VARIANTS, False, 0.3, dict(gpu_workloads.NUM_WARPS))
        probe("after workloads", x, y, out, compiled, triton_kernel)
    gc.collect()
    gc.freeze()
    probe("gc frozen", x, y, out, compiled, triton_kernel)
    gc.disable()
    probe("gc disabled", x, y, out, compiled, triton_kernel)
    gc.enable()
    gc.unfreeze()
    try:
        # `from torch import`, not `import torch._dynamo`: the latter would bind
        # `torch` as a local name of main() and leave it unbound at the top.
        from torch import _dynamo
        _dynamo.reset()
        from torch._inductor.async_compile import shutdown_compile_workers
        shutdown_compile_workers()
    except Exception as e:  # noqa: BLE001
        print("reset failed:", e)
    gc.collect()
    probe("dynamo reset, workers shut down", x, y, out, compiled, triton_kernel)


if __name__ == "__main__":
    main()
