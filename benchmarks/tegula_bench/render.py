"""The GPU report as Markdown, and the report's files (JSON, and the .md beside it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

from . import log
from .gpu_report import SCHEMA


def _cell(value, spec: str = "", missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def _markdown_table(header, lines) -> list:
    widths = [max(len(str(line[i])) for line in [header] + lines) for i in range(len(header))]
    fmt = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return [fmt(header), "| " + " | ".join("-" * w for w in widths) + " |"] + [fmt(line) for line in lines]


def _rate(row: dict) -> str:
    if row["rate"] is None:
        return "-"
    return f"{row['rate']:.0f} GB/s" if row["unit"] == "GB/s" else f"{row['rate']:.2f} {row['unit']}"


def format_markdown(report: dict) -> str:
    """The report as markdown: what ran where, the table, the targets."""
    versions, copy = report["versions"], report["floors"]["copy"]
    out = [f"# Tegula GPU benchmarks: {report['gpu']}", "",
           f"{report['date']}; driver {report['driver'] or 'unknown'}, CUDA {versions.get('cuda')}; "
           f"torch {versions.get('torch')}, triton {versions.get('triton') or 'not installed'}, "
           f"tegula {versions.get('tegula')}; commit {report['commit']}"
           + (" (quick run)" if report["quick"] else "")
           + (" (PARTIAL: the run stopped before its end)" if report.get("partial") else ""),
           "",
           f"Copy bandwidth {_cell(copy.get('bytes_per_s') and copy['bytes_per_s'] / 1e9, '.0f')} GB/s "
           f"(y.copy_(x), {copy.get('bytes_per_copy', 0) // 2 >> 20} MiB, read + write, median). "
           "Times: CUDA events, L2 flushed before each call, median after warm-up, variants interleaved. "
           "`of floor`: rate / copy bandwidth (matmul: / cuBLAS, attention: / SDPA); "
           "`/ tegula`: time / tegula's time.", ""]
    tegula_ms = {r["workload"]: r["ms"] for r in report["rows"] if r["variant"] == "tegula" and r["ms"]}
    lines = []
    for r in report["rows"]:
        check = r["check"] if not r["error"] else f"{r['check']}: {r['error'].splitlines()[0][:90]}"
        if r.get("note"):
            check += f" ({r['note'][:90]})"
        if r["check"] == "mismatch":
            check = "MISMATCH" + check[len("mismatch"):]
        mine = tegula_ms.get(r["workload"])
        if (r["workload"], r["variant"]) == ("launch", "raw") and r["ms"] and mine:
            # The compiled kernel's bare launch: what the whole launch path costs over it.
            check += f" (tegula / raw: {mine / r['ms']:.2f})"
        lines.append([r["workload"], r["shape"] or "-", r["dtype"] or "-", r["variant"],
                      _cell(r["ms"], ".4f"),
                      _rate(r),
                      _cell(r["floor_frac"] and 100 * r["floor_frac"], ".0f") + ("%" if r["floor_frac"] else ""),
                      f"{r['ms'] / mine:.2f}" if r["ms"] and mine else "-",
                      check.replace("|", "/")])
    out += _markdown_table(["workload", "shape", "dtype", "variant", "ms", "rate", "of floor", "/ tegula",
                            "check"], lines)
    out += ["", "Targets (issues 4, 5, 7 and 15, \"Done when\"):", ""]
    for c in report["criteria"]:
        verdict = {True: "PASS", False: "FAIL", None: "n/a "}[c["pass"]]
        out.append(f"- {verdict} {c['what']}: {_cell(c['value'], '.3f', 'not measured')} (target {c['target']})")
    return "\n".join(out) + "\n"



def markdown_path(json_path: str) -> str:
    """bench.json -> bench.md (a name without .json gets .md added)."""
    path = Path(json_path)
    return str(path.with_suffix(".md") if path.suffix == ".json" else path.with_name(path.name + ".md"))


def write_report(report: dict, json_path: Optional[str], write_md: bool, quiet: bool = False) -> None:
    if not json_path:
        return
    Path(json_path).parent.mkdir(parents=True, exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    if not quiet:
        log(f"wrote {json_path}")
    if write_md:
        with open(markdown_path(json_path), "w") as f:
            f.write(format_markdown(report))
        log(f"wrote {markdown_path(json_path)}")


def render(json_path: str) -> int:
    """Prints the markdown of a saved GPU report and writes it beside the JSON."""
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {json_path}: {e}", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        schema = report.get("schema") if isinstance(report, dict) else None
        print(f"{json_path} is not a GPU report (schema {schema!r}, expected {SCHEMA!r})", file=sys.stderr)
        return 2
    text = format_markdown(report)
    print(text, end="")
    with open(markdown_path(json_path), "w") as f:
        f.write(text)
    return 0

