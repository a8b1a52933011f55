"""Where the time of a training step of examples/train_gpt.py goes, per kernel.

    python tools/profile_train_step.py [--device cuda] [--ops tegula torch] [--steps 5] [--rows 25]
                                       [--precision float32|bfloat16] [--compile]

For each variant, trains a few warm-up steps (compiling), then records
`--steps` steps under torch.profiler and prints the ranges and kernels that
took the most device time (self time, summed over the steps, in ms per
step). Tegula's launches run inside ranges named after their kernels
(tegula.profiling.set_nvtx): a row "attention_dkdv_kernel [key]" holds that
kernel's device time (every Tegula kernel's own symbol is the ABI's
``tegula_kernel``). The per-step total counts device kernels only.
``--compile`` profiles each variant under torch.compile(fullgraph=True), as
the example's ``--compile`` trains it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
import time
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import tegula.profiling

ROOT = Path(__file__).resolve().parents[1]


def load_example():
    sys.path.insert(0, str(ROOT / "examples"))  # its own imports (_cli)
    spec = importlib.util.spec_from_file_location("train_gpt", ROOT / "examples" / "train_gpt.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_gpt"] = module
    spec.loader.exec_module(module)
    return module


def profile_variant(example, ops_name: str, device: str, steps: int, rows: int, precision: str,
                    compiled: bool = False) -> None:
    config = example.default_config(device)
    if precision:
        config = dataclasses.replace(config, precision=precision)
    autocast = example.forward_precision(config, device)
    model = example.make_model(config, ops_name).to(device)
    optimizer = example.make_optimizer(model, config)
    if compiled:
        model = torch.compile(model, fullgraph=True)
        ops_name += " (compiled)"
    data = example.batches(example.markov_corpus(config.vocab, 50_000), config, config.seed)

    def step():
        tokens, targets = next(data)
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = model(tokens.to(device), targets.to(device))
        loss.backward()
        optimizer.step()

    for _ in range(3):
        step()
    if device == "cuda":  # the wall time of a step, unprofiled
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        print(f"\n== --ops {ops_name} on {device}, {config.precision}: "
              f"{(time.perf_counter() - start) * 1e3 / steps:.2f} ms per step (wall clock)")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    if device == "cuda":
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
    averages = prof.key_averages()
    key = "self_cpu_time_total"
    if device == "cuda":  # torch 2.4 renamed the CUDA totals to device totals
        key = next((k for k in ("self_device_time_total", "self_cuda_time_total")
                    if averages and hasattr(averages[0], k)), "self_device_time_total")
    events = sorted(averages, key=lambda e: getattr(e, key, 0.0), reverse=True)
    kernels = [e for e in events if e.device_type != DeviceType.CPU] if device == "cuda" else events
    total = sum(getattr(e, key, 0.0) for e in kernels) or 1.0
    print(f"\n== --ops {ops_name} on {device}, {config.precision}: {total / 1e3 / steps:.2f} ms of "
          f"{'device' if device == 'cuda' else 'host'} self time per step ({steps} steps)")
    print(f"{'ms/step':>9} {'share':>6} {'calls/step':>10}  name")
    for e in events[:rows]:
        t = getattr(e, key, 0.0)
        print(f"{t / 1e3 / steps:9.3f} {t / total:6.1%} {e.count / steps:10.1f}  {e.key[:110]}")
    if device == "cuda":  # where the host's time goes: the step is host-bound when this exceeds the device's
        host = sorted((e for e in averages if e.device_type == DeviceType.CPU), key=lambda e: e.self_cpu_time_total,
                      reverse=True)
        total = sum(e.self_cpu_time_total for e in host) or 1.0
        print(f"-- host self time: {total / 1e3 / steps:.2f} ms per step")
        for e in host[:rows]:
            t = e.self_cpu_time_total
            print(f"{t / 1e3 / steps:9.3f} {t / total:6.1%} {e.count / steps:10.1f}  {e.key[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--ops", nargs="+", choices=["torch", "tegula"], default=["tegula", "torch"])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--precision", choices=["float32", "bfloat16"],
                        help="the example's precision (default: its configuration's)")
    parser.add_argument("--compile", action="store_true", help="profile each variant under torch.compile")
    args = parser.parse_args()
    example = load_example()
    tegula.profiling.set_nvtx(args.device == "cuda")
    for name in args.ops:
        profile_variant(example, name, args.device, args.steps, args.rows, args.precision, args.compile)


if __name__ == "__main__":
    main()
