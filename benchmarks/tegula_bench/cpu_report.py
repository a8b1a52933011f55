"""The CPU report (schema ``tegula-bench/1``): its rows and the text table."""

from __future__ import annotations

import statistics

import numpy as np

from .cpu_measure import Result
from .cpu_workloads import BASELINE


def make_rows(results: list[Result], floors: dict, llc: int) -> list[dict]:
    rows = []
    baseline = {}
    for r in results:
        if r.variant == BASELINE and r.samples:
            baseline[id(r.case)] = r.median_ms
    for r in results:
        c = r.case
        median = r.median_ms
        rate = floors["peak"]["flops_per_s"] if c.compute_bound else floors["copy"]["bytes_per_s"]
        floor_ms = ((c.flops if c.compute_bound else c.bytes) / rate * 1e3) if rate else None
        base = baseline.get(id(c))
        row = {
            "workload": c.workload, "shape": c.shape, "dtype": c.dtype, "variant": r.variant,
            "baseline": r.variant == BASELINE, "bytes": c.bytes, "flops": c.flops,
            "bound": "compute" if c.compute_bound else "memory", "exceeds_llc": c.bytes > llc,
            "eager_bytes": c.eager_bytes,
            "median_ms": median, "min_ms": min(r.samples) if r.samples else None,
            "max_ms": max(r.samples) if r.samples else None, "samples": len(r.samples),
            "samples_ms": [round(t, 4) for t in r.samples],
            "rate": None, "rate_unit": "GFLOP/s" if c.compute_bound else "GB/s",
            "speedup": None, "floor_ms": floor_ms, "floor_share": None,
            "check": r.check, "error": r.error or None, "note": c.note or None,
        }
        if median:
            row["rate"] = (c.flops if c.compute_bound else c.bytes) / (median / 1e3) / 1e9
            row["floor_share"] = floor_ms / median if floor_ms else None
            if base:
                row["speedup"] = base / median
        rows.append(row)
    return rows


def compile_rows(result: dict) -> list[dict]:
    """The compile_cold and compile_warm rows of a ``compile_probe.measure`` result
    (seconds, in ``rate``; the same keys as every row)."""
    rows = []
    for which in ("cold", "warm"):
        samples_ms = [s * 1e3 for s in result[which]]
        median = statistics.median(samples_ms) if samples_ms else None
        rows.append({
            "workload": f"compile_{which}", "shape": "vector add, first call", "dtype": "float32",
            "variant": "tegula", "baseline": False, "bytes": None, "flops": None, "bound": None,
            "exceeds_llc": None, "eager_bytes": None, "median_ms": median,
            "min_ms": min(samples_ms) if samples_ms else None, "max_ms": max(samples_ms) if samples_ms else None,
            "samples": len(samples_ms), "samples_ms": [round(t, 1) for t in samples_ms],
            "rate": median / 1e3 if median is not None else None, "rate_unit": "s", "speedup": None,
            "floor_ms": None, "floor_share": None, "check": "error" if result["error"] else "ok",
            "error": result["error"],
            "note": "fresh process, " + ("empty cache" if which == "cold" else "cache warm"),
        })
    return rows


def format_table(rows: list[dict]) -> str:
    header = ("workload", "variant", "time (ms)", "GB/s | GFLOP/s", "speedup", "of floor")
    lines = [header]
    for row in rows:
        name = f"{row['workload']} {row['shape']} {row['dtype']}"
        if row["median_ms"] is None:
            lines.append((name, row["variant"], f"{row['check']}: {(row['error'] or '').splitlines()[0][:60]}",
                          "", "", ""))
            continue
        lines.append((name, row["variant"], f"{row['median_ms']:.3f}",
                      f"{row['rate']:.3f} s" if row["rate_unit"] == "s" else f"{row['rate']:.1f} {row['rate_unit']}",
                      "baseline" if row["baseline"] else
                      (f"{row['speedup']:.2f}x" if row["speedup"] else "-"),
                      f"{100 * row['floor_share']:.0f}%" if row["floor_share"] else "-"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for k, line in enumerate(lines):
        out.append("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(line, widths))).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def print_report(report: dict) -> None:
    machine, software, floors = report["machine"], report["software"], report["floors"]
    llc = machine["llc"]
    print(f"Tegula benchmarks, {machine['date']}: {machine['cpu_model']}, "
          f"{machine['usable_cpus']} CPUs, L{llc['level']} {llc['bytes'] / 2**20:.0f} MiB, "
          f"NumPy {software['numpy']} ({software['blas'].get('summary', 'BLAS unknown')})")
    peak = floors["peak"]
    print(f"floor: copy {floors['copy']['bytes_per_s'] / 1e9:.1f} GB/s (np.copyto, read+write), "
          + (f"matmul peak {peak['flops_per_s'] / 1e9:.1f} GFLOP/s (NumPy BLAS {peak['shape']})"
             if peak["flops_per_s"] else "no matmul"))
    print(f"load average: {machine['load_average_start']} at start, "
          f"{machine['load_average_end']} at end")
    print()
    print(format_table(report["rows"]))


def json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
