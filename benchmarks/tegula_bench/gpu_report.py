"""The rows of the GPU report (schema ``tegula-bench-gpu/1``), one per workload and variant."""

from __future__ import annotations

from typing import Optional

from .gpu_workloads import Case
from .launch import LAUNCH_BURST

SCHEMA = "tegula-bench-gpu/1"


def case_rows(case: Case, outcomes, copy_bytes_per_s: Optional[float]) -> list:
    """Rows in the report's schema; a compute-bound workload's floor is its reference's
    rate in the same run (matmul: cuBLAS, attention: SDPA)."""
    peak, per_call = None, case.bytes
    if case.tokens:
        per_call = case.tokens
        ref = next((o for o in outcomes if o.variant == case.reference and o.median_ms), None)
        peak = case.tokens / (ref.median_ms / 1e3) if ref else None
    elif case.compute_bound:
        per_call = case.flops
        floor = case.floor or case.reference
        peer = next((o for o in outcomes if o.variant == floor and o.median_ms), None)
        peak = case.flops / (peer.median_ms / 1e3) if peer else None
    rows = []
    for o in outcomes:
        ms = o.median_ms
        workload, variant = case.row_of(o.variant)
        row = {"workload": workload, "variant": variant, "ms": ms, "rate": None,
               "unit": "tokens/s" if case.tokens else "TFLOP/s" if case.compute_bound else "GB/s",
               "floor_frac": None,
               "shape": case.shape, "dtype": case.dtype, "bytes": case.bytes, "flops": case.flops,
               "num_warps": (o.num_warps or case.num_warps) if variant in ("tegula", "triton") else None,
               "samples": len(o.samples), "min_ms": min(o.samples) if o.samples else None,
               "max_ms": max(o.samples) if o.samples else None, "check": o.check, "error": o.error,
               "note": o.note}
        if ms:
            per_s = per_call / (ms / 1e3)
            row["rate"] = per_s / (1 if case.tokens else 1e12 if case.compute_bound else 1e9)
            limit = peak if case.compute_bound or case.tokens else copy_bytes_per_s
            row["floor_frac"] = per_s / limit if limit else None
        rows.append(row)
    return rows


def launch_rows(outcomes, launches: int, num_warps: int) -> list:
    rows = []
    for o in outcomes:
        ms = o.median_ms
        rows.append({"workload": "launch", "variant": o.variant, "ms": ms,
                     "rate": ms * 1e3 if ms is not None else None, "unit": "us", "floor_frac": None,
                     "shape": f"axpy (6 arguments), 1 element, host time in bursts of {LAUNCH_BURST} launches",
                     "dtype": "float32",
                     "bytes": None, "flops": None, "num_warps": num_warps, "samples": len(o.samples),
                     "min_ms": min(o.samples) if o.samples else None,
                     "max_ms": max(o.samples) if o.samples else None, "check": o.check, "error": o.error})
    return rows


def compile_rows(measured: dict) -> list:
    """Rows in seconds (unit ``s``): the median first call to result."""
    rows = []
    for workload, outcomes in measured.items():
        cache = "an empty cache" if workload.startswith("compile_cold") else "a warm cache"
        backend = ", CPU backend" if workload.endswith("_cpu") else ""
        for o in outcomes:
            ms = o.median_ms
            rows.append({"workload": workload, "variant": o.variant, "ms": ms,
                         "rate": ms / 1e3 if ms is not None else None, "unit": "s", "floor_frac": None,
                         "shape": f"vector add, first call in a fresh process, {cache}{backend}", "dtype": "float32",
                         "bytes": None, "flops": None, "num_warps": None, "samples": len(o.samples),
                         "min_ms": min(o.samples) if o.samples else None,
                         "max_ms": max(o.samples) if o.samples else None, "check": o.check, "error": o.error})
    return rows


def error_rows(workload: str, variants, error: str) -> list:
    """Rows for a workload whose inputs could not even be made."""
    return [{"workload": workload, "variant": v, "ms": None, "rate": None, "unit": None, "floor_frac": None,
             "shape": None, "dtype": None, "bytes": None, "flops": None, "num_warps": None, "samples": 0,
             "min_ms": None, "max_ms": None, "check": "error", "error": error} for v in variants]

