"""Where the host time of one launch goes, on the GPU machine.

Times, per call, in microseconds (wall clock over many back-to-back calls,
synchronized once at the end, median of rounds):
  - the pieces the launch path touches on a torch tensor (dtype, is_cuda,
    data_ptr(), get_device()) and torch's raw current-stream getter;
  - `kernel[grid]` alone (the grid launcher object);
  - the whole launch `kernel[grid](...)` (the benchmark's `launch` row);
  - `CompiledKernel.launch` with the arguments already converted
    (the driver call plus argument packing: the floor of any launch path);
  - a torch op (`out.add_(x)`), for scale.
Prints a table; `--json PATH` writes the numbers too.

    python tools/launch_profile.py [--json out.json]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

import tegula

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from tegula_bench.kernels import axpy  # noqa: E402

CALLS = 20_000
ROUNDS = 7


def per_call_us(fn, calls=CALLS, rounds=ROUNDS, sync=True) -> float:
    """Per call over `calls` back-to-back calls, synchronized at the end: when
    the GPU runs each launched kernel slower than the host queues them, this is
    the GPU's rate, not the host's."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if sync:
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def issue_us(fn, calls=256, rounds=41) -> float:
    """Host time only: `calls` launches (fewer than the launch queue holds)
    timed before the synchronization, the GPU idle at the start of each round."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    x = torch.ones(1, device="cuda")
    y = torch.full((1,), 2.0, device="cuda")
    out = torch.zeros(1, device="cuda")
    kernel = axpy.axpy_kernel
    grid = (1,)
    compiled = kernel[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4)
    torch.cuda.synchronize()
    assert float(out[0]) == 5.0, float(out[0])
    stream = torch.cuda.current_stream().cuda_stream
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    addresses = [x.data_ptr(), y.data_ptr(), out.data_ptr(), 3.0]
    runtime_args = addresses + [1]  # x, y, out, alpha, n (BLOCK is a constexpr)
    rows = {}

    def noop():
        pass

    rows["python call of an empty function"] = per_call_us(noop, sync=False)
    rows["tensor.dtype"] = per_call_us(lambda: x.dtype, sync=False)
    rows["tensor.is_cuda"] = per_call_us(lambda: x.is_cuda, sync=False)
    rows["tensor.data_ptr()"] = per_call_us(lambda: x.data_ptr(), sync=False)
    rows["tensor.get_device()"] = per_call_us(lambda: x.get_device(), sync=False)
    if raw_stream is not None:
        rows["torch._C._cuda_getCurrentRawStream(0)"] = per_call_us(lambda: raw_stream(0), sync=False)
    rows["kernel[grid] (no call)"] = per_call_us(lambda: kernel[grid], sync=False)
    try:
        rows["CompiledKernel.launch (args converted)"] = per_call_us(
            lambda: compiled.launch((1, 1, 1), runtime_args, stream, 0))
    except Exception as e:  # noqa: BLE001 - the signature may have changed; report and go on
        rows["CompiledKernel.launch (args converted)"] = float("nan")
        print(f"launch failed: {e}")
    rows["kernel[grid](x, y, out, 3.0, 1, BLOCK=, num_warps=)"] = per_call_us(
        lambda: kernel[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4))
    rows["kernel[grid](x, y, out, 3.0, 1, BLOCK=) (no num_warps)"] = per_call_us(
        lambda: kernel[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK))
    rows["torch out.add_(x)"] = per_call_us(lambda: out.add_(x))
    # The same, host side only (before the queue fills).
    try:
        rows["issue only: launch"] = issue_us(lambda: compiled.launch((1, 1, 1), runtime_args, stream, 0))
    except Exception:  # noqa: BLE001
        rows["issue only: launch"] = float("nan")
    rows["issue only: kernel[grid](..., num_warps=)"] = issue_us(
        lambda: kernel[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4))
    rows["issue only: kernel[grid](...)"] = issue_us(lambda: kernel[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK))
    rows["issue only: torch out.add_(x)"] = issue_us(lambda: out.add_(x))
    try:
        import triton  # noqa: F401
        from tegula_bench import triton_twin

        twin = triton_twin.load(axpy).axpy_kernel
        rows["issue only: triton kernel[grid](...)"] = issue_us(
            lambda: twin[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4))
        rows["triton kernel[grid](...), back to back"] = per_call_us(
            lambda: twin[grid](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=4))
    except Exception as e:  # noqa: BLE001
        print(f"triton: {e}")
    torch.cuda.synchronize()

    width = max(len(k) for k in rows)
    print(f"{'what':<{width}}  us per call")
    for name, us in rows.items():
        print(f"{name:<{width}}  {us:8.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tegula": tegula.__version__, "torch": torch.__version__, "us": rows}, f, indent=1)


if __name__ == "__main__":
    main()
