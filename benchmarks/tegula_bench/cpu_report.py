"""The CPU report (schema ``tegula-bench/1``): its rows and the text table."""

from __future__ import annotations

import statistics

import numpy as np

from .cpu_measure import Result
from .cpu_workloads import BASELINE
from .launch import LAUNCH_BURST
from .targets import LAUNCH_RAW_TARGET


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


def _host_row(workload: str, shape: str, variant: str, samples_ms: list, unit: str, digits: int, check: str,
              error, note: str) -> dict:
    """A row that times the host, not the work (no bytes, no floor, no baseline):
    the median in ``median_ms`` and, in ``unit`` (s or us), in ``rate``."""
    median = statistics.median(samples_ms) if samples_ms else None
    scale = {"s": 1e-3, "us": 1e3}[unit]
    return {
        "workload": workload, "shape": shape, "dtype": "float32", "variant": variant, "baseline": False,
        "bytes": None, "flops": None, "bound": None, "exceeds_llc": None, "eager_bytes": None, "median_ms": median,
        "min_ms": min(samples_ms) if samples_ms else None, "max_ms": max(samples_ms) if samples_ms else None,
        "samples": len(samples_ms), "samples_ms": [round(t, digits) for t in samples_ms],
        "rate": median * scale if median is not None else None, "rate_unit": unit, "speedup": None,
        "floor_ms": None, "floor_share": None, "check": check, "error": error, "note": note,
    }


def compile_rows(result: dict) -> list[dict]:
    """The compile_cold and compile_warm rows of a ``compile_probe.measure`` result
    (seconds, in ``rate``; the same keys as every row)."""
    return [_host_row(f"compile_{which}", "vector add, first call", "tegula", [s * 1e3 for s in result[which]], "s",
                      1, "error" if result["error"] else "ok", result["error"],
                      "fresh process, " + ("empty cache" if which == "cold" else "cache warm"))
            for which in ("cold", "warm")]


LAUNCH_NOTES = {"tegula": "kernel[grid](...) on NumPy arrays: the whole launch path",
                "raw": "the compiled kernel's own launch, arguments already converted: no binding"}


def launch_rows(outcomes) -> list[dict]:
    """The launch rows of ``launch.measure_cpu_launch`` (microseconds per launch, in ``rate``)."""
    return [_host_row("launch", "axpy (6 arguments), 1 element", o.variant, o.samples, "us", 6, o.check, o.error,
                      f"{LAUNCH_NOTES[o.variant]}; host time in bursts of {LAUNCH_BURST} launches")
            for o in outcomes]


def launch_ratio(rows: list[dict]):
    """The tegula launch row's time over the raw one's (issue 15: at most 1.2), or None."""
    ms = {r["variant"]: r["median_ms"] for r in rows if r["workload"] == "launch" and r["median_ms"]}
    return ms["tegula"] / ms["raw"] if "tegula" in ms and "raw" in ms else None


# Marks a share of floor whose workload fits in the last-level cache: the copy
# floor is measured beyond the caches, so such a share may pass 100% and
# says how fast the cache is (the quick mode's small sizes).
IN_CACHE_MARK = " (in cache)"


def _floor_cell(row: dict) -> str:
    if not row["floor_share"]:
        return "-"
    in_cache = row.get("bound") == "memory" and row.get("exceeds_llc") is False
    return f"{100 * row['floor_share']:.0f}%" + (IN_CACHE_MARK if in_cache else "")


def format_table(rows: list[dict]) -> str:
    header = ("workload", "variant", "time (ms)", "GB/s | GFLOP/s", "speedup", "of floor")
    lines = [header]
    for row in rows:
        name = f"{row['workload']} {row['shape']} {row['dtype']}"
        if row["median_ms"] is None:
            lines.append((name, row["variant"], f"{row['check']}: {(row['error'] or '').splitlines()[0][:60]}",
                          "", "", ""))
            continue
        rate = {"s": f"{row['rate']:.3f} s", "us": f"{row['rate']:.2f} us"}.get(
            row["rate_unit"], f"{row['rate']:.1f} {row['rate_unit']}")
        lines.append((name, row["variant"], f"{row['median_ms']:.5f}" if row["rate_unit"] == "us" else
                      f"{row['median_ms']:.3f}", rate,
                      "baseline" if row["baseline"] else
                      (f"{row['speedup']:.2f}x" if row["speedup"] else "-"),
                      _floor_cell(row)))
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
    if any(IN_CACHE_MARK in _floor_cell(row) for row in report["rows"] if row["median_ms"] is not None):
        print(f"\n{IN_CACHE_MARK.strip()}: the workload fits in the L{llc['level']} cache, so the copy floor "
              f"(measured beyond it) does not bound it and its share may pass 100%; run without --quick for "
              f"sizes that stream from DRAM")
    ratio = launch_ratio(report["rows"])
    if ratio is not None:
        print(f"\nlaunch: tegula's launch path takes {ratio:.2f}x the compiled kernel's bare launch (raw); "
              f"issue 15's target is at most {LAUNCH_RAW_TARGET:g}x")


def json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
