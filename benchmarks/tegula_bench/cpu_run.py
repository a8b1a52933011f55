"""The CPU run (``--cpu``): the example kernels against eager baselines and a floor.

Every workload runs each available *peer* (Tegula, NumPy eager, and PyTorch
eager / torch.compile when installed) on the same inputs, checks the outputs
against the baseline, then times the peers interleaved (``cpu_measure``). Each
row is also compared with a *floor*, the time the work needs at the speed
limits measured in the same run (copy bandwidth; NumPy's BLAS matmul rate).

Every run (and ``--only launch``) adds the ``launch`` rows: the host time of
one launch of a 6-argument kernel, ``tegula`` (``kernel[grid](...)``) and
``raw`` (the compiled kernel's bare launch), in microseconds (``launch``).
Full runs (and ``--only compile``) add the rows ``compile_cold`` and
``compile_warm``: the vector-add kernel's first call to its result in a fresh
process, with an empty and with a warm kernel cache, in seconds
(``compile_probe``). ``docs/benchmarks.md`` explains the columns and records
measured results.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import compile_probe, launch, log
from .cpu_measure import measure, measure_floors
from .cpu_report import compile_rows, json_default, launch_rows, make_rows, print_report
from .cpu_workloads import WORKLOADS, build_cases
from .machine import describe_machine, describe_software, load_average
from .peers import PEERS
from .plots import write_plots
from .torch_workloads import TORCH_WORKLOADS


def run(names, quick: bool, budget: float, compile_times: bool = False, launch_times: bool = False,
        torch_names=()) -> dict:
    """Measures the floors and every workload in `names`; returns the whole report."""
    min_reps, max_reps = (3, 5) if quick else (7, 50)
    machine = describe_machine()
    llc = machine["llc"]["bytes"]
    log(f"{machine['cpu_model']}, {machine['usable_cpus']} usable CPUs, last-level cache "
        f"L{machine['llc']['level']} {llc / 2**20:.0f} MiB ({machine['llc']['source']})")
    software = describe_software()
    log(f"NumPy {software['numpy']}; BLAS: {software['blas'].get('summary', 'unknown')}")
    if software["env"].get("OPENBLAS_CORETYPE"):
        log(f"note: OPENBLAS_CORETYPE={software['env']['OPENBLAS_CORETYPE']} forces OpenBLAS's "
            f"kernel choice; NumPy's matmul (the peak) may be slower than this CPU allows")
    peers = [p for p in PEERS if p.available()]
    log("peers: " + ", ".join(p.name for p in peers))
    cases = build_cases(names, quick, llc)

    # The floors are measured before and after the workloads and the better
    # of the two kept: on a shared machine one of them may catch a busy moment.
    floor_runs = [measure_floors(cases, quick, "before")]
    results = []
    for case in cases:
        results += measure(case, peers, budget, min_reps, max_reps)
        case.inputs = {}  # free the big arrays before the next case
    floor_runs.append(measure_floors(cases, quick, "after"))
    floors = {
        "copy": max((run["copy"] for run in floor_runs), key=lambda copy: copy["bytes_per_s"]),
        "peak": max((run["peak"] for run in floor_runs), key=lambda peak: peak["flops_per_s"] or 0.0),
        "runs": floor_runs,
    }
    rows = make_rows(results, floors, llc)
    if launch_times:
        rows += launch_rows(launch.measure_cpu_launch(1000 if quick else launch.LAUNCHES, 2 if quick else 5))
    if torch_names:
        from . import torch_run
        rows += torch_run.run(torch_names, quick, budget)
    if compile_times:
        log("compile: first calls of vector add in fresh processes")
        rows += compile_rows(compile_probe.measure("tegula", "cpu", rounds=1 if quick else 3))
    machine["load_average_end"] = load_average()
    return {"schema": "tegula-bench/1", "quick": quick, "machine": machine, "software": software,
            "floors": floors, "rows": rows}


def main(args) -> int:
    """The CPU run of the command's options (``cli``); the exit status."""
    budget = args.budget if args.budget is not None else (0.2 if args.quick else 4.0)
    names = tuple(n for n in (args.only or WORKLOADS) if n in WORKLOADS)
    if args.only and "matmul_autotune" in args.only:
        log("matmul_autotune (autotuned against the best config by hand) is measured on the GPU only; skipped")
    compile_times = "compile" in args.only if args.only else not args.quick
    launch_times = "launch" in args.only if args.only else True
    torch_names = tuple(n for n in (args.only or ()) if n in TORCH_WORKLOADS)
    report = run(names, args.quick, budget, compile_times, launch_times, torch_names)
    print_report(report)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)  # as the GPU run's write_report does
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=json_default)
            f.write("\n")
        log(f"wrote {args.json}")
    if args.plot:
        for path in write_plots(report["rows"], args.plot):
            log(f"wrote {path}")
    return 1 if any(row["check"] in ("failed", "error") for row in report["rows"]) else 0
