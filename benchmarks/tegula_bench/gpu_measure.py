"""Timing on the GPU: every variant built, warmed up and checked against the
reference, then timed interleaved with CUDA events (``tegula.testing.CudaTimer``:
the L2 flushed before each call, the median); the copy bandwidth of the floor;
the first calls of ``compile_probe``.
"""

from __future__ import annotations

import statistics
from typing import Optional

from tegula.testing import CudaTimer

from . import compile_probe, gpu_workloads, log
from .gpu_workloads import Case
from .outcome import Outcome, describe_error


def _first(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def compare(torch, got, want, atol: float, rtol: float, atol_per_rms: bool = False) -> Optional[str]:
    """None when |got - want| <= atol + rtol * |want| everywhere (NaN matching NaN),
    else what differs. Runs on the device: outputs here are too big to copy back.

    ``atol_per_rms``: atol is in units of want's root mean square (at least 1). An
    output that sums many rows of random sign (a norm's weight gradient) carries
    the rounding of its terms, about eps times its rms, at every entry, however
    small the entry's sum came out."""
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    g, w = got.float().flatten(), want.float().flatten()
    if atol_per_rms and w.numel():
        atol *= max(1.0, float(torch.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0).square().mean().sqrt()))
    diff = (g - w).abs()
    bad = ~((diff <= atol + rtol * w.abs()) | (torch.isnan(g) & torch.isnan(w)))
    count = int(bad.sum())
    if count == 0:
        return None
    worst = int(torch.argmax(torch.where(bad, torch.nan_to_num(diff, nan=float("inf")), -1.0)))
    return (f"{count} of {g.numel()} elements differ beyond atol={atol:g}, rtol={rtol:g}; worst at "
            f"flat index {worst}: got {float(g[worst]):g}, expected {float(w[worst]):g}")


def compare_each(torch, got, want, atol: float, rtol: float, atol_per_rms: bool = False) -> Optional[str]:
    """``compare`` of each pair of a tuple of outputs; None when all match."""
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        error = compare(torch, g, w, atol, rtol, atol_per_rms)
        if error:
            return f"output {i}: {error}"
    return None


def measure_case(torch, timer: CudaTimer, case: Case, variants, budget_s: float, min_reps: int,
                 max_reps: int, on_gpu: bool = True) -> list:
    """Builds, warms up and checks every selected variant, then times them interleaved.
    ``on_gpu`` False: the variants run on the host (``torch_run``'s CPU cases) and
    `timer` is a host clock with CudaTimer's interface."""
    names = [v for v in case.variants if case.row_of(v)[1] in variants]
    names.sort(key=lambda v: v != case.reference)  # the reference first: the others are checked against it
    outcomes, runners, reference_out = [], [], None
    if case.check_with is not None:
        try:
            check = case.check_with()
            reference_out = check() if case.compare_all else _first(check())
            del check
        except Exception as e:  # noqa: BLE001 - without it the variants stay unchecked
            log(f"{case.workload}: the check's reference failed: {describe_error(e).splitlines()[0][:200]}")
    for name in names:
        outcome = Outcome(name)
        outcomes.append(outcome)
        try:
            log(f"{case.workload} {case.shape}: preparing {name}"
                + (" (compiles)" if name.startswith(("tegula", "triton", "torch.compile")) else ""))
            fn = case.variants[name]()
            outcome.note = getattr(fn, "note", None)
            outcome.num_warps = getattr(fn, "num_warps", None)
            fn()  # compiles on first use
            out = fn() if case.compare_all else _first(fn())
            if on_gpu:
                torch.cuda.synchronize()
            if name == case.reference:
                outcome.check = "reference"
                if case.check_with is None:
                    reference_out = out
            elif name in case.unchecked:
                outcome.check = "unchecked"
            elif reference_out is not None:
                outcome.error = (compare_each if case.compare_all else compare)(torch, out, reference_out,
                                                                                 *case.tolerance,
                                                                                 case.atol_per_rms)
                outcome.check = "mismatch" if outcome.error else "ok"
            del out
        except Exception as e:  # noqa: BLE001 - one variant's failure is a row, not the end of the run
            outcome.check, outcome.error = "error", describe_error(e)
            log(f"{case.workload}: {name} failed: {outcome.error.splitlines()[0][:200]}")
            continue
        if outcome.check == "mismatch":
            log(f"{case.workload}: {name} does not match {case.reference}: {outcome.error}")
        runners.append((outcome, fn))
    reference_out = None
    if not runners:
        return outcomes
    fns = [fn for _, fn in runners]
    try:
        first = timer.interleaved(fns, 1)
        round_ms = sum(samples[0] for samples in first) + 0.1 * len(fns)  # + the L2 flushes
        reps = int(min(max_reps, max(min_reps, budget_s * 1e3 / max(round_ms, 1e-3))))
        log(f"{case.workload} {case.shape}: timing {len(fns)} variants x {reps} rounds, interleaved")
        for (outcome, _), samples in zip(runners, timer.interleaved(fns, reps)):
            outcome.samples = samples
    except Exception as e:  # noqa: BLE001
        for outcome, _ in runners:
            outcome.check, outcome.error = "error", f"while timing: {describe_error(e)}"
        log(f"{case.workload}: timing failed: {describe_error(e)}")
    return outcomes


def measure_copy(torch, timer: CudaTimer, nbytes: int, reps: int, when: str) -> dict:
    """Device-to-device copy rate, bytes read + written per second, of y.copy_(x)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=gpu_workloads.DEVICE).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    samples = timer.interleaved([lambda: dst.copy_(src)], reps)[0]
    median = statistics.median(samples)
    return {"when": when, "bytes_per_copy": 2 * nbytes, "reps": reps, "median_ms": median,
            "min_ms": min(samples), "bytes_per_s": 2 * nbytes / (median / 1e3),
            "best_bytes_per_s": 2 * nbytes / (min(samples) / 1e3)}



def measure_compile(variants, quick: bool) -> dict:
    """compile_cold and compile_warm outcomes (ms per first call) of tegula and
    triton: fresh processes on an empty, then a warm cache (compile_probe).
    Tegula's CPU backend is measured too (compile_cold_cpu, compile_warm_cpu):
    issue 7 asks for its cold first call against Triton's in the same run."""
    measured = {"compile_cold": [], "compile_warm": [], "compile_cold_cpu": [], "compile_warm_cpu": []}
    probes = [(name, "cuda", "") for name in ("tegula", "triton") if name in variants]
    if "tegula" in variants:
        probes.append(("tegula", "cpu", "_cpu"))
    for name, device, suffix in probes:
        log(f"compile: {name} ({device}), first calls in fresh processes")
        result = compile_probe.measure(name, device, rounds=1 if quick else 3)
        for which in ("cold", "warm"):
            samples = [s * 1e3 for s in result[which]]
            check = "error" if result["error"] else "ok"
            measured[f"compile_{which}{suffix}"].append(Outcome(name, samples, check, result["error"]))
        if result["error"]:
            log(f"compile: {name} ({device}) failed: {result['error'].splitlines()[0][:200]}")
    return {workload: outcomes for workload, outcomes in measured.items() if outcomes}

