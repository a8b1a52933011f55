"""The GPU run (``--gpu``): the example kernels on one CUDA GPU, beside their peers.

Each workload runs as several *variants* on the same CUDA tensors, in one run
(``peers``): ``tegula`` (the example module's host wrapper; the launch runs
on the GPU because its arguments are CUDA tensors), ``triton`` (the same
wrapper of the module's Triton twin, with the same ``num_warps``), ``torch``
(PyTorch eager, op by op: the reference the others are checked against),
``torch.compile``, ``cublas`` (for matmul: its reference and its floor) and
``sdpa`` (for attention).

Two workloads measure the host rather than the GPU: ``launch`` (the host time
of one launch of a 6-argument kernel, in microseconds; ``launch``) and
``compile`` (rows ``compile_cold`` and ``compile_warm``: the vector-add
kernel's first call to its result in a fresh process, with an empty and with
a warm cache, in seconds; ``compile_cold_cpu`` and ``compile_warm_cpu``:
Tegula's CPU backend the same way; see ``compile_probe``).

One timing method for all: CUDA events on torch's current stream, a 256 MiB
write before each call to flush the L2, variants interleaved round-robin, the
median after warm-up (compilation happens during warm-up). The floor of a
memory-bound workload is its minimal byte count over the device-to-device
copy bandwidth measured in the same run (``y.copy_(x)`` of 1 GiB, bytes read
plus written); a matmul's floor is cuBLAS's rate in the same run. A variant
that fails to build, compile, run or match the reference is a row that says
so; it never stops the run. ``docs/benchmarks.md`` describes the report.
"""

from __future__ import annotations

import datetime
import functools
import platform
from typing import Callable, Optional

from tegula.testing import L2_FLUSH_BYTES, CudaTimer

from . import gpu_workloads, log, torch_workloads
from .gpu_measure import measure_case, measure_compile, measure_copy
from .gpu_report import SCHEMA, case_rows, compile_rows, error_rows, launch_rows
from .gpu_workloads import BUILDERS, CASE_LISTS, NUM_WARPS, VARIANTS, WORKLOADS, parse_num_warps
from .launch import LAUNCH_BURST, LAUNCHES, measure_launch
from .machine import commit, describe_device, driver_version, versions
from .outcome import describe_error
from .render import format_markdown, write_report
from .targets import criteria

COPY_BYTES = 1 << 30


def run(names, variants, quick: bool, budget_s: float, num_warps: dict,
        on_progress: Optional[Callable[[dict], None]] = None) -> dict:
    """Measures the workloads in `names` (in that order) with the selected variants.
    After each workload and case, `on_progress` gets the report so far (``"partial": true``),
    so that a run stopped by a time limit still leaves what it measured."""
    import torch

    device = describe_device(torch)
    report = {"schema": SCHEMA, "gpu": device["name"], "driver": driver_version(), "versions": versions(torch),
              "commit": commit(), "quick": quick,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device, "host": {"hostname": platform.node(), "platform": platform.platform()}}
    log(f"{device['name']} ({device['arch']}, {device['multiprocessors']} SMs), driver {report['driver']}; "
        f"torch {report['versions']['torch']}, triton {report['versions']['triton']}")
    min_reps, max_reps = (3, 10) if quick else (10, 100)
    launches = 1000 if quick else LAUNCHES
    report["method"] = {"timing": "CUDA events on torch's current stream", "l2_flush_bytes": L2_FLUSH_BYTES,
                        "statistic": "median", "interleaved": True, "min_reps": min_reps, "max_reps": max_reps,
                        "budget_s_per_case": budget_s, "num_warps": num_warps,
                        "launch": f"host wall time of {launches} launches per round in bursts of {LAUNCH_BURST} "
                                  f"(GPU idle at each burst's start), median of bursts"}
    timer = CudaTimer(device=gpu_workloads.DEVICE)
    copy_bytes, copy_reps = ((64 << 20), 5) if quick else (COPY_BYTES, 25)
    copy_runs = [measure_copy(torch, timer, copy_bytes, copy_reps, "before")]
    log(f"copy bandwidth: {copy_runs[0]['bytes_per_s'] / 1e9:.0f} GB/s")

    measured = []  # (Case or workload name, outcomes or rows); inputs are dropped once measured
    for name in names:
        if name == "launch":
            measured.append(("launch", measure_launch(torch, variants, launches, 2 if quick else 5,
                                                      num_warps["launch"])))
        elif name == "compile":
            measured.append(("compile", measure_compile(variants, quick)))
        else:
            try:
                warps = num_warps.get(name)  # None where the workload's configs choose them
                if name in torch_workloads.CASE_LISTS:
                    cases = torch_workloads.CASE_LISTS[name](torch, gpu_workloads.DEVICE, quick)
                elif name in CASE_LISTS:
                    cases = CASE_LISTS[name](torch, quick, warps)
                else:
                    cases = [BUILDERS[name](torch, quick, warps)]
            except Exception as e:  # noqa: BLE001
                log(f"{name}: could not make the inputs: {describe_error(e)}")
                cases = []
                measured.append((name, error_rows(name, variants, describe_error(e))))
            for index, case in enumerate(cases):
                outcomes = measure_case(torch, timer, case, variants, budget_s, min_reps, max_reps)
                case.variants = {}
                measured.append((case, outcomes))
                if on_progress is not None and index + 1 < len(cases):  # a long group keeps its cases too
                    on_progress(_assemble(report, measured, copy_runs, launches, num_warps["launch"],
                                          final=False))
            del cases
            torch.cuda.empty_cache()
        if on_progress is not None:
            on_progress(_assemble(report, measured, copy_runs, launches, num_warps["launch"], final=False))
    copy_runs.append(measure_copy(torch, timer, copy_bytes, copy_reps, "after"))
    return _assemble(report, measured, copy_runs, launches, num_warps["launch"], final=True)


def _assemble(report: dict, measured: list, copy_runs: list, launches: int, launch_warps: int,
              final: bool) -> dict:
    """Fills the report's floors, rows and targets from what has been measured."""
    # The faster copy: noise only slows a copy down, and the floor should be
    # what this GPU can do.
    best = max(copy_runs, key=lambda r: r["bytes_per_s"])
    report["floors"] = {"copy": {"bytes_per_s": best["bytes_per_s"], "bytes_per_copy": best["bytes_per_copy"],
                                 "runs": copy_runs}, "cublas_flops_per_s": {}, "sdpa_flops_per_s": {}}
    rows = []
    for case, outcomes in measured:
        if case == "launch":
            rows += launch_rows(outcomes, launches, launch_warps)
        elif case == "compile":
            rows += compile_rows(outcomes)
        elif isinstance(case, str):
            rows += outcomes  # error rows of a workload without inputs
        else:
            rows += case_rows(case, outcomes, best["bytes_per_s"])
            if case.compute_bound:
                floor = case.floor or case.reference
                peer = next((o for o in outcomes if o.variant == floor and o.median_ms), None)
                report["floors"].setdefault(f"{floor}_flops_per_s", {})[case.workload] = \
                    case.flops / (peer.median_ms / 1e3) if peer else None
    report["partial"] = not final
    report["rows"] = rows
    report["criteria"] = criteria(rows)
    return report


def exit_status(rows: list) -> int:
    """1 when a variant computed a wrong result or a Tegula variant failed; a peer
    that is missing or fails (no Triton, a torch.compile error) is only reported."""
    bad = [r for r in rows if r["check"] == "mismatch" or (r["variant"] == "tegula" and r["check"] == "error")]
    return 1 if bad else 0


def main(args) -> int:
    names = tuple(args.only) if args.only else WORKLOADS
    variants = tuple(args.variant) if args.variant else VARIANTS
    num_warps = {**NUM_WARPS, **parse_num_warps(args.num_warps)}
    budget = args.budget if args.budget is not None else (0.1 if args.quick else 1.5)
    progress = None
    if args.json:
        progress = functools.partial(write_report, json_path=args.json, write_md=False, quiet=True)
    report = run(names, variants, args.quick, budget, num_warps, progress)
    print(format_markdown(report), end="")
    write_report(report, args.json, not args.no_md)
    if args.plot:
        from .plots import write_plots
        for path in write_plots(report["rows"], args.plot):
            log(f"wrote {path}")
    return exit_status(report["rows"])
