"""``--plot DIR``: one PNG per workload (and dtype) of a report: the time and
the share of floor against the size of the work, each variant a line. Size
is the bytes the kernel must move, or the operations for compute-bound
workloads; rows without work (launch, compile) are not drawn."""

from __future__ import annotations

import os
from collections import defaultdict

from tegula._report import _pyplot  # the clear error when matplotlib is missing


def require_matplotlib() -> None:
    """Raises ImportError with what to install, before any measuring."""
    _pyplot()


def _fields(row: dict):
    """(time ms, share of floor, size, size unit) of a CPU or GPU row, or None."""
    time_ms = row.get("median_ms", row.get("ms"))
    share = row.get("floor_share", row.get("floor_frac"))
    compute = row.get("bound") == "compute" or row.get("unit") == "TFLOP/s"
    size = row.get("flops") if compute else row.get("bytes")
    if time_ms is None or not size:
        return None
    return time_ms, share, size, "operations" if compute else "bytes moved"


def _groups(rows: list) -> dict:
    """{(workload, dtype): (size unit, {variant: [(size, time ms, share), ...] by size})}."""
    groups = {}
    for row in rows:
        fields = _fields(row)
        if fields is None:
            continue
        time_ms, share, size, unit = fields
        _, variants = groups.setdefault((row["workload"], row["dtype"]), (unit, defaultdict(list)))
        variants[row["variant"]].append((size, time_ms, share))
    for _, variants in groups.values():
        for points in variants.values():
            points.sort()
    return groups


def figure(title: str, unit: str, variants: dict):
    """The figure of one workload: time (log) and share of floor against size, a line per variant."""
    plt = _pyplot()
    fig, (time_ax, share_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    for variant, points in sorted(variants.items()):
        time_ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=variant)
        shared = [(p[0], 100 * p[2]) for p in points if p[2] is not None]
        if shared:
            share_ax.plot([s for s, _ in shared], [f for _, f in shared], marker="o", label=variant)
    for ax in (time_ax, share_ax):
        ax.set_xscale("log")
        ax.set_xlabel(f"size ({unit})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    time_ax.set_yscale("log")
    time_ax.set_ylabel("time (ms)")
    share_ax.set_ylabel("share of floor (%)")
    share_ax.axhline(100, color="black", linewidth=0.8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def write_plots(rows: list, folder: str) -> list:
    """Writes the PNGs into `folder` (made if needed); returns their paths."""
    plt = _pyplot()
    os.makedirs(folder, exist_ok=True)
    paths = []
    for (workload, dtype), (unit, variants) in sorted(_groups(rows).items()):
        fig = figure(f"{workload} {dtype}", unit, variants)
        path = os.path.join(folder, f"{workload}-{dtype}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
