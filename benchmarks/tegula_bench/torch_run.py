"""The tegula.torch workloads (``torch_workloads``) in a CPU run: the same
Cases the GPU run measures, on CPU tensors and the host clock, their rows in
the CPU report's schema (``tegula-bench/1``) with the reference (eager torch,
or SDPA) as the baseline of ``speedup``. A peer that fails (torch.compile
without a working compiler) is reported as ``unavailable``, not as a failure
of the run; a Tegula variant that fails, or any wrong result, is one."""

from __future__ import annotations

from tegula.testing import HostTimer

from . import log
from .gpu_measure import measure_case
from .torch_workloads import CASE_LISTS

VARIANTS = ("tegula", "torch", "torch.compile", "sdpa")
CHECKS = {"reference": "baseline", "ok": "ok", "mismatch": "failed", "unchecked": "unchecked"}


def _unit(case) -> tuple:
    """(rate unit, work per call, scale of the rate)."""
    if case.tokens:
        return "tokens/s", case.tokens, 1.0
    if case.compute_bound:
        return "GFLOP/s", case.flops, 1e9
    return "GB/s", case.bytes, 1e9


def cpu_rows(case, outcomes) -> list:
    unit, work, scale = _unit(case)
    reference = next((o.median_ms for o in outcomes if o.variant == case.reference and o.median_ms), None)
    rows = []
    for o in outcomes:
        median = o.median_ms
        check = CHECKS.get(o.check, o.check)
        if o.check == "error":
            check = "error" if o.variant == "tegula" else "unavailable"
        rows.append({
            "workload": case.workload, "shape": case.shape, "dtype": case.dtype, "variant": o.variant,
            "baseline": o.variant == case.reference, "bytes": case.bytes or None, "flops": case.flops or None,
            "bound": "compute" if case.compute_bound else None if case.tokens else "memory", "exceeds_llc": None,
            "eager_bytes": None, "median_ms": median, "min_ms": min(o.samples) if o.samples else None,
            "max_ms": max(o.samples) if o.samples else None, "samples": len(o.samples),
            "samples_ms": [round(t, 4) for t in o.samples],
            "rate": work / (median / 1e3) / scale if median else None, "rate_unit": unit,
            "speedup": reference / median if median and reference else None, "floor_ms": None,
            "floor_share": None, "check": check, "error": o.error, "note": o.note})
    return rows


def run(names, quick: bool, budget_s: float) -> list:
    """Measures the torch workload groups in `names` on the CPU; returns their rows."""
    import torch

    min_reps, max_reps = (3, 5) if quick else (5, 30)
    timer = HostTimer()
    rows = []
    for name in names:
        log(f"{name}: building the cases (CPU tensors)")
        for case in CASE_LISTS[name](torch, "cpu", quick):
            outcomes = measure_case(torch, timer, case, VARIANTS, budget_s, min_reps, max_reps, on_gpu=False)
            case.variants = {}
            rows += cpu_rows(case, outcomes)
    return rows
