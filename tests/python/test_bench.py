"""The benchmark command. On the CPU, `python -m tegula.bench --cpu --quick --json PATH`
end to end: it runs, checks every kernel against its baseline, and writes the
documented JSON report. For the GPU run, what needs no GPU: the Triton twin's
source rewriting (and, where Triton is installed, that every kernel module
compiles under Triton for sm_90), the report's rows, targets and markdown from
made-up measurements, the host wrappers on torch tensors; with a GPU
(`--backend cuda`), a quick GPU run end to end."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tegula import _bench_gpu, _triton_twin, bench
from tegula.kernels import _host, fused_chain, layer_norm, matmul, softmax, vector_add

KERNEL_MODULES = (fused_chain, layer_norm, matmul, softmax, vector_add)

ROW_KEYS = {"workload", "shape", "dtype", "variant", "baseline", "bytes", "flops", "bound", "exceeds_llc",
            "eager_bytes",
            "median_ms", "min_ms", "max_ms", "samples", "samples_ms", "rate", "rate_unit",
            "speedup", "floor_ms", "floor_share", "check", "error", "note"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "quick.json"
    done = subprocess.run([sys.executable, "-m", "tegula.bench", "--cpu", "--quick", "--json", str(path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[bench]" in done.stderr  # progress goes to stderr ...
    assert "workload" in done.stdout and "of floor" in done.stdout  # ... the table to stdout
    return json.loads(path.read_text())


def test_report_describes_the_machine_and_software(report):
    assert report["schema"] == "tegula-bench/1"
    assert report["quick"] is True
    machine = report["machine"]
    assert {"date", "cpu_model", "logical_cpus", "usable_cpus", "llc"} <= set(machine)
    assert machine["llc"]["bytes"] > 0 and machine["llc"]["level"] >= 1
    software = report["software"]
    assert {"python", "numpy", "tegula", "blas", "env"} <= set(software)
    assert software["blas"], "the BLAS NumPy uses must be reported"


def test_floors_are_measured(report):
    copy = report["floors"]["copy"]
    assert copy["bytes_per_s"] == max(copy["single_thread_bytes_per_s"], copy["all_threads_bytes_per_s"])
    assert copy["bytes_per_s"] > 1e8
    assert report["floors"]["peak"]["flops_per_s"] > 1e8
    # Measured before and after the workloads; the better run is the floor.
    runs = report["floors"]["runs"]
    assert [run["when"] for run in runs] == ["before", "after"]
    assert copy["bytes_per_s"] == max(run["copy"]["bytes_per_s"] for run in runs)
    assert report["floors"]["peak"]["flops_per_s"] == max(run["peak"]["flops_per_s"] for run in runs)


def test_every_workload_has_a_checked_tegula_row_and_a_baseline(report):
    rows = report["rows"]
    assert all(set(row) == ROW_KEYS for row in rows)
    for workload in bench.WORKLOADS:
        mine = [r for r in rows if r["workload"] == workload]
        assert {r["variant"] for r in mine} >= {"tegula", "numpy"}, workload
        for row in mine:
            assert row["error"] is None, row
            assert row["check"] == ("baseline" if row["variant"] == "numpy" else "ok"), row
            assert row["samples"] == len(row["samples_ms"]) >= 3
            assert row["min_ms"] <= row["median_ms"] <= row["max_ms"]
            assert row["floor_ms"] > 0 and row["floor_share"] > 0 and row["rate"] > 0
            assert row["rate_unit"] == ("GFLOP/s" if workload == "matmul" else "GB/s")
            if row["baseline"]:
                assert row["speedup"] == pytest.approx(1.0)
            if row["bound"] == "memory":  # eager never moves less than the fused kernel
                assert row["eager_bytes"] >= row["bytes"]
            else:
                assert row["eager_bytes"] is None


def test_only_selects_workloads(tmp_path):
    path = tmp_path / "only.json"
    done = subprocess.run([sys.executable, "-m", "tegula.bench", "--cpu", "--quick", "--only", "softmax",
                           "--json", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert {row["workload"] for row in json.loads(path.read_text())["rows"]} == {"softmax"}


def test_unknown_workload_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "tegula.bench", "--only", "fft"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "invalid choice: 'fft'" in done.stderr


def test_table_formats_failures_and_speedups():
    rows = [
        {"workload": "softmax", "shape": "2x3", "dtype": "float32", "variant": "numpy", "baseline": True,
         "median_ms": 2.0, "rate": 1.5, "rate_unit": "GB/s", "speedup": 1.0, "floor_share": 0.25,
         "check": "baseline", "error": None},
        {"workload": "softmax", "shape": "2x3", "dtype": "float32", "variant": "tegula", "baseline": False,
         "median_ms": 0.5, "rate": 6.0, "rate_unit": "GB/s", "speedup": 4.0, "floor_share": 1.0,
         "check": "ok", "error": None},
        {"workload": "softmax", "shape": "2x3", "dtype": "float32", "variant": "torch", "baseline": False,
         "median_ms": None, "check": "failed", "error": "AssertionError: arrays are not close\nmore"},
    ]
    lines = bench.format_table(rows).splitlines()
    assert lines[0].split() == ["workload", "variant", "time", "(ms)", "GB/s", "|", "GFLOP/s", "speedup",
                                "of", "floor"]
    assert lines[2].split() == ["softmax", "2x3", "float32", "numpy", "2.000", "1.5", "GB/s", "baseline",
                                "25%"]
    assert lines[3].split() == ["softmax", "2x3", "float32", "tegula", "0.500", "6.0", "GB/s", "4.00x",
                                "100%"]
    assert lines[4].split()[:5] == ["softmax", "2x3", "float32", "torch", "failed:"]


def test_rows_beyond_llc_exceed_it():
    llc = 260 << 20
    rows = bench._rows_beyond(llc, lambda m: m * 4096 * 8, 1024)
    assert rows % 1024 == 0 and rows * 4096 * 8 >= 1.5 * llc > (rows - 1024) * 4096 * 8
