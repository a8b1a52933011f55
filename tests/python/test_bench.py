"""The benchmark command. On the CPU, `python benchmarks/run.py --cpu --quick --json PATH`
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

import tegula
from tegula_bench import cpu_report, cpu_workloads, gpu_report, gpu_run, gpu_workloads, plots, render, triton_twin
from tegula_bench.kernels import (_host, attention, fused_chain, layer_norm, matmul, matmul_epilogue, matmul_fp8,
                                  matmul_persistent, matmul_tma, softmax, vector_add)
from tegula_bench.outcome import Outcome
from tegula_bench.targets import criteria

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"
KERNEL_MODULES = (attention, fused_chain, layer_norm, matmul, matmul_epilogue, matmul_fp8, matmul_persistent,
                  matmul_tma, softmax, vector_add)

ROW_KEYS = {"workload", "shape", "dtype", "variant", "baseline", "bytes", "flops", "bound", "exceeds_llc",
            "eager_bytes",
            "median_ms", "min_ms", "max_ms", "samples", "samples_ms", "rate", "rate_unit",
            "speedup", "floor_ms", "floor_share", "check", "error", "note"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "quick.json"
    done = subprocess.run([sys.executable, str(BENCH), "--cpu", "--quick", "--json", str(path)],
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
    for workload in cpu_workloads.WORKLOADS:
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


def test_the_chain_has_its_hand_fused_cpp_row(report):
    # benchmarks/reference/fused_chain.cpp, built with the CPU backend's compiler
    # and flags, checked against NumPy like every other peer (issue 22).
    variants = {r["variant"]: r for r in report["rows"] if r["workload"] == "fused_chain"}
    assert variants["c++"]["check"] == "ok" and variants["c++"]["median_ms"] > 0


def test_only_selects_workloads(tmp_path):
    path = tmp_path / "only.json"
    plots = path.parent / "plots"
    done = subprocess.run([sys.executable, str(BENCH), "--cpu", "--quick", "--only", "softmax",
                           "--json", str(path), "--plot", str(plots)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert {row["workload"] for row in json.loads(path.read_text())["rows"]} == {"softmax"}
    assert [p.name for p in plots.iterdir()] == ["softmax-float32.png"]
    assert (plots / "softmax-float32.png").read_bytes()[:4] == b"\x89PNG"


def test_unknown_workload_is_a_usage_error():
    done = subprocess.run([sys.executable, str(BENCH), "--only", "fft"],
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
    lines = cpu_report.format_table(rows).splitlines()
    assert lines[0].split() == ["workload", "variant", "time", "(ms)", "GB/s", "|", "GFLOP/s", "speedup",
                                "of", "floor"]
    assert lines[2].split() == ["softmax", "2x3", "float32", "numpy", "2.000", "1.5", "GB/s", "baseline",
                                "25%"]
    assert lines[3].split() == ["softmax", "2x3", "float32", "tegula", "0.500", "6.0", "GB/s", "4.00x",
                                "100%"]
    assert lines[4].split()[:5] == ["softmax", "2x3", "float32", "torch", "failed:"]


def test_a_share_of_floor_measured_in_cache_is_marked():
    # The quick mode's workloads fit in the last-level cache, where a copy
    # floor measured beyond it can be passed ("153% of floor"): the cell says so.
    row = {"workload": "softmax", "shape": "96x300", "dtype": "float32", "variant": "tegula", "baseline": False,
           "median_ms": 0.01, "rate": 60.0, "rate_unit": "GB/s", "speedup": 4.0, "floor_share": 1.53,
           "check": "ok", "error": None, "bound": "memory", "exceeds_llc": False}
    assert cpu_report.format_table([row]).splitlines()[2].split()[-3:] == ["153%", "(in", "cache)"]
    beyond = dict(row, exceeds_llc=True, floor_share=0.8)
    assert cpu_report.format_table([beyond]).splitlines()[2].split()[-1] == "80%"


def test_plots_draw_time_and_share_of_floor_against_size_a_line_per_variant():
    cpu = {"workload": "softmax", "dtype": "float32", "bound": "memory", "flops": 1}
    gpu = {"workload": "matmul", "dtype": "bfloat16", "unit": "TFLOP/s", "bytes": 1}
    rows = [dict(cpu, variant="tegula", bytes=b, median_ms=t, floor_share=f)
            for b, t, f in ((4000, 0.2, 0.5), (1000, 0.1, 0.25))]
    rows += [dict(cpu, variant="numpy", bytes=1000, median_ms=0.3, floor_share=None)]
    rows += [dict(gpu, variant="tegula", flops=2e12, ms=3.0, floor_frac=0.9)]
    rows += [{"workload": "launch", "dtype": "float32", "variant": "raw", "bytes": None, "flops": None, "ms": 0.01}]
    groups = plots._groups(rows)
    assert set(groups) == {("softmax", "float32"), ("matmul", "bfloat16")}  # no work, no plot
    unit, variants = groups[("softmax", "float32")]
    assert unit == "bytes moved" and variants["tegula"] == [(1000, 0.1, 0.25), (4000, 0.2, 0.5)]
    fig = plots.figure("softmax float32", unit, variants)
    time_ax, share_ax = fig.axes
    assert time_ax.get_ylabel() == "time (ms)" and share_ax.get_ylabel() == "share of floor (%)"
    assert time_ax.get_xlabel() == share_ax.get_xlabel() == "size (bytes moved)"
    assert [line.get_label() for line in time_ax.lines] == ["numpy", "tegula"]
    assert list(time_ax.lines[1].get_xdata()) == [1000, 4000] and list(time_ax.lines[1].get_ydata()) == [0.1, 0.2]
    assert [line.get_label() for line in share_ax.lines][:1] == ["tegula"]  # numpy has no floor share
    assert list(share_ax.lines[0].get_ydata()) == [25.0, 50.0]
    assert groups[("matmul", "bfloat16")][0] == "operations"


def test_rows_beyond_llc_exceed_it():
    llc = 260 << 20
    rows = cpu_workloads._rows_beyond(llc, lambda m: m * 4096 * 8, 1024)
    assert rows % 1024 == 0 and rows * 4096 * 8 >= 1.5 * llc > (rows - 1024) * 4096 * 8


def test_launch_rows_time_the_launch_path_and_the_bare_launch(report):
    # Issue 15: the launch row (kernel[grid](...)) beside the bare launch of the
    # kernel it compiled (variant raw), in the same run.
    rows = {r["variant"]: r for r in report["rows"] if r["workload"] == "launch"}
    assert set(rows) == {"tegula", "raw"}
    for row in rows.values():
        assert row["check"] == "ok" and row["error"] is None, row
        assert row["rate_unit"] == "us" and row["rate"] == pytest.approx(row["median_ms"] * 1e3)
        assert row["samples"] == len(row["samples_ms"]) >= 2 and row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        assert row["baseline"] is False and row["floor_ms"] is None and row["bytes"] is None
    # The bare launch does less than the whole path: binding and specialization are left out.
    assert rows["raw"]["median_ms"] < rows["tegula"]["median_ms"]
    assert cpu_report.launch_ratio(report["rows"]) == pytest.approx(rows["tegula"]["median_ms"] /
                                                                    rows["raw"]["median_ms"])


def test_only_launch_on_the_cpu_measures_the_launch_rows(tmp_path):
    path = tmp_path / "launch.json"
    done = subprocess.run([sys.executable, str(BENCH), "--cpu", "--quick", "--only", "launch", "--json", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = json.loads(path.read_text())["rows"]
    assert {(r["workload"], r["variant"]) for r in rows} == {("launch", "tegula"), ("launch", "raw")}
    ratio = rows[0]["median_ms"] / rows[1]["median_ms"]
    assert (f"launch: tegula's launch path takes {ratio:.2f}x the compiled kernel's bare launch (raw); "
            f"issue 15's target is at most 1.2x") in done.stdout


def test_bad_num_warps_is_a_usage_error():
    done = subprocess.run([sys.executable, str(BENCH), "--num-warps", "softmax=0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert ("--num-warps takes WORKLOAD=N with WORKLOAD one of vector_add, fused_chain, softmax, "
            "layer_norm, matmul, launch, attention, attention_causal, matmul_epilogue, matmul_persistent, "
            "matmul_tma, matmul_fp8, attention_tma, got 'softmax=0'") in done.stderr
    assert gpu_workloads.parse_num_warps(["softmax=16", "launch=1"]) == {"softmax": 16, "launch": 1}


def test_gpu_without_a_gpu_says_why():
    usable, why = _host.cuda_usable()
    if usable:
        pytest.skip("this machine has a usable GPU")
    done = subprocess.run([sys.executable, str(BENCH), "--gpu", "--quick"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"[bench] --gpu: no usable CUDA GPU: {why}" in done.stderr


# --- the Triton twin ------------------------------------------------------------------------


@pytest.mark.parametrize("module", KERNEL_MODULES, ids=lambda m: m.__name__)
def test_twin_rewrites_only_the_tegula_imports(module):
    source = pathlib.Path(module.__file__).read_text()
    twin = triton_twin.rewrite_imports(source)
    before, after = source.splitlines(), twin.splitlines()
    assert len(before) == len(after)  # line numbers in Triton's messages match the real file
    changed = {(a, b) for a, b in zip(before, after) if a != b}
    expected = {("import tegula", "import triton as tegula"),
                ("import tegula.language as tl", "import triton.language as tl")}
    if module is fused_chain:
        expected.add(("from tegula.language.extra import libdevice",
                      "from triton.language.extra import libdevice"))
    assert changed == expected
    assert any(line.startswith("import _host") for line in after)  # the array helpers stay as they are


def test_twin_rewriting_keeps_comments_and_line_endings():
    source = "import tegula  # the compiler\r\nimport tegula.language as tl\r\nx = 'import tegula'\r\n"
    assert triton_twin.rewrite_imports(source) == (
        "import triton as tegula  # the compiler\r\nimport triton.language as tl\r\nx = 'import tegula'\r\n")


@pytest.mark.parametrize("line", ["from tegula import jit", "import tegula.language",
                                  "from tegula.language import core", "import tegula.testing"])
def test_twin_refuses_imports_it_cannot_rewrite(line):
    with pytest.raises(ValueError) as info:
        triton_twin.rewrite_imports(f"import numpy as np\n{line}\n", "k.py")
    assert str(info.value) == (
        f"k.py:2: cannot make a Triton twin of this import: {line!r}; write 'import tegula', "
        f"'import tegula.language as tl' or 'from tegula.language.extra import libdevice'")


def test_twin_module_holds_triton_kernels_of_the_same_source():
    triton = pytest.importorskip("triton")
    for module in KERNEL_MODULES:
        twin = triton_twin.load(module)
        assert triton_twin.load(module) is twin  # made once
        assert sys.modules[triton_twin.twin_name(module)] is twin
        kernels = [name for name, value in vars(module).items() if isinstance(value, tegula.JITFunction)]
        assert kernels, module.__name__
        for name in kernels:
            assert isinstance(getattr(twin, name), triton.runtime.JITFunction), name
            assert getattr(twin, name).src.strip() in getattr(module, name).src


# Signatures of each example kernel at the benchmark's GPU dtypes, for compiling without a GPU.
TRITON_SIGNATURES = [
    (vector_add, "add_kernel", "*fp32 *fp32 *fp32 i32", {"BLOCK": 1024}),
    (fused_chain, "fused_chain_kernel", "*bf16 *bf16 *i1 *fp32 *fp32 *bf16 i32 i32 fp32 fp32 fp32",
     {"BLOCK_N": 4096}),
    (softmax, "softmax_kernel", "*fp32 *fp32 i32 i32 i32", {"BLOCK_N": 8192}),
    (layer_norm, "layer_norm_kernel", "*bf16 *bf16 *bf16 *bf16 *fp32 *fp32 i32 i32 i32 fp32", {"BLOCK_N": 8192}),
    (matmul, "matmul_kernel", "*fp16 *fp16 *fp16" + " i32" * 9,
     {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}),
    (attention, "attention_fwd_kernel", "*bf16 *bf16 *bf16 *bf16 *fp32" + " i32" * 18 + " fp32",
     {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}),
    (attention, "attention_fwd_kernel", "*bf16 *bf16 *bf16 *bf16 *fp32" + " i32" * 18 + " fp32",
     {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True}),
    (matmul_epilogue, "matmul_epilogue_kernel", "*bf16 *bf16 *bf16 *bf16 *bf16" + " i32" * 11,
     {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "HAS_BIAS": True, "ACTIVATION": "gelu_tanh",
      "HAS_RESIDUAL": True}),
    (matmul_persistent, "matmul_persistent_kernel", "*bf16 *bf16 *bf16" + " i32" * 9,
     {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "NUM_PROGRAMS": 132}),
    (matmul_tma, "matmul_tma_kernel", "*bf16 *bf16 *bf16 i32 i32 i32",
     {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "WARP_SPECIALIZE": None}),
    (matmul_tma, "matmul_tma_kernel", "*bf16 *bf16 *bf16 i32 i32 i32",
     {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "WARP_SPECIALIZE": True}),
    (matmul_fp8, "matmul_fp8_kernel", "*fp8e4nv *fp8e4nv *bf16 *fp32 *fp32 i32 i32 i32",
     {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8, "WARP_SPECIALIZE": None}),
]


@pytest.mark.parametrize("module,kernel,types,constexprs", TRITON_SIGNATURES,
                         ids=[kernel for _, kernel, _, _ in TRITON_SIGNATURES])
def test_every_reference_kernel_is_valid_triton(module, kernel, types, constexprs):
    """Triton compiles each twin kernel to a Hopper cubin (no GPU needed: ptxas ships with Triton)."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = getattr(triton_twin.load(module), kernel)
    runtime = [name for name in fn.arg_names if name not in constexprs]
    signature = dict(zip(runtime, types.split()))
    signature.update({name: "constexpr" for name in constexprs})
    compiled = triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32))
    assert ".entry " + kernel in compiled.asm["ptx"]


# --- the GPU report, from made-up measurements -----------------------------------------------


def _made_up_report():
    softmax_case = gpu_workloads.Case("softmax", "2x4", "float32", bytes=4_000_000, flops=10, num_warps=8,
                                      variants={})
    matmul_case = gpu_workloads.Case("matmul_bf16", "8x8x8", "bfloat16", bytes=100, flops=2_000_000_000,
                                     num_warps=4, variants={}, reference="cublas", compute_bound=True)
    rows = gpu_report.case_rows(softmax_case, [
        Outcome("torch", [4.0, 3.0, 5.0], "reference"),
        Outcome("tegula", [1.0, 1.0, 2.0], "ok"),
        Outcome("triton", [1.25], "mismatch", "3 of 8 elements differ"),
        Outcome("torch.compile", [], "error", "ImportError: no triton\nsecond line")], 5e9)
    rows += gpu_report.case_rows(matmul_case, [Outcome("cublas", [1.0], "reference"),
                                               Outcome("tegula", [4.0], "ok")], 5e9)
    rows += gpu_report.launch_rows([Outcome("tegula", [0.008, 0.009], "ok"), Outcome("raw", [0.005], "ok"),
                                    Outcome("triton", [0.012], "ok")], 10000, 4)
    return {"schema": gpu_report.SCHEMA, "gpu": "NVIDIA H200", "driver": "570.1",
            "versions": {"torch": "2.11", "triton": "3.6.0", "tegula": "0.1.0", "cuda": "13.0"},
            "commit": "abc1234", "quick": False, "date": "2026-11-30T00:00:00+00:00",
            "floors": {"copy": {"bytes_per_s": 5e9, "bytes_per_copy": 2 << 30}},
            "rows": rows, "criteria": criteria(rows)}


def test_gpu_rows_follow_the_issue_schema():
    rows = _made_up_report()["rows"]
    for row in rows:
        assert {"workload", "variant", "ms", "rate", "unit", "floor_frac"} <= set(row)
        assert row["variant"] in gpu_workloads.VARIANTS
    by = {(r["workload"], r["variant"]): r for r in rows}
    tegula = by["softmax", "tegula"]  # 4 MB in 1 ms (median) = 4 GB/s, 80% of a 5 GB/s copy
    assert (tegula["ms"], tegula["unit"], tegula["num_warps"]) == (1.0, "GB/s", 8)
    assert tegula["rate"] == pytest.approx(4.0) and tegula["floor_frac"] == pytest.approx(0.8)
    assert by["softmax", "torch"]["num_warps"] is None
    assert by["softmax", "triton"]["check"] == "mismatch"
    failed = by["softmax", "torch.compile"]
    assert (failed["ms"], failed["rate"], failed["floor_frac"], failed["check"]) == (None, None, None, "error")
    # A matmul's floor is cuBLAS's rate in the same run.
    assert by["matmul_bf16", "cublas"]["floor_frac"] == pytest.approx(1.0)
    assert by["matmul_bf16", "tegula"]["rate"] == pytest.approx(0.5)  # TFLOP/s
    assert by["matmul_bf16", "tegula"]["floor_frac"] == pytest.approx(0.25)
    launch = by["launch", "tegula"]
    assert (launch["unit"], launch["floor_frac"]) == ("us", None)
    assert launch["rate"] == pytest.approx(8.5)


def test_gpu_targets_are_decided_from_the_rows():
    targets = {c["what"]: c for c in _made_up_report()["criteria"]}
    share = targets["softmax: tegula's share of copy bandwidth"]
    assert (share["pass"], share["target"]) == (False, ">= 0.9") and share["value"] == pytest.approx(0.8)
    # Faster than Triton, but Triton's output is wrong: the comparison is not a pass.
    versus = targets["softmax: tegula time / triton time"]
    assert versus["value"] == pytest.approx(0.8) and versus["pass"] is False
    launch = targets["launch: tegula host time per launch / triton's"]
    assert launch["value"] == pytest.approx(0.0085 / 0.012) and launch["pass"] is True
    bare = targets["launch: tegula host time per launch / the compiled kernel's bare launch (raw)"]
    assert bare["value"] == pytest.approx(0.0085 / 0.005) and (bare["target"], bare["pass"]) == ("<= 1.2", False)
    assert targets["fused_chain: torch eager time / tegula time"] == {
        "what": "fused_chain: torch eager time / tegula time", "value": None, "target": ">= 5", "pass": None}
    # Issue 5: bf16 matmul at 95% of cuBLAS's rate, at 4096^3 and at 8192^3.
    matmul_share = targets["matmul_bf16: tegula's share of cuBLAS's TFLOP/s"]
    assert matmul_share["value"] == pytest.approx(0.25) and matmul_share["target"] == ">= 0.95"
    assert matmul_share["pass"] is False
    assert targets["matmul_bf16_8192: tegula's share of cuBLAS's TFLOP/s"]["pass"] is None  # not measured
    assert targets["matmul_bf16: tegula time / triton time"]["pass"] is None


def test_gpu_markdown_table():
    lines = render.format_markdown(_made_up_report()).splitlines()
    assert lines[0] == "# Tegula GPU benchmarks: NVIDIA H200"
    assert lines[2] == ("2026-11-30T00:00:00+00:00; driver 570.1, CUDA 13.0; torch 2.11, triton 3.6.0, "
                        "tegula 0.1.0; commit abc1234")
    assert lines[4].startswith("Copy bandwidth 5 GB/s (y.copy_(x), 1024 MiB, read + write, median).")
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| ")]
    assert cells[0] == ["workload", "shape", "dtype", "variant", "ms", "rate", "of floor", "/ tegula", "check"]
    assert cells[2] == ["softmax", "2x4", "float32", "torch", "4.0000", "1 GB/s", "20%", "4.00", "reference"]
    assert cells[3] == ["softmax", "2x4", "float32", "tegula", "1.0000", "4 GB/s", "80%", "1.00", "ok"]
    assert cells[4][-1] == "MISMATCH: 3 of 8 elements differ"
    assert cells[5][4:] == ["-", "-", "-", "-", "error: ImportError: no triton"]
    assert cells[7][3:6] == ["tegula", "4.0000", "0.50 TFLOP/s"]
    assert cells[8][3:6] == ["tegula", "0.0085", "8.50 us"]
    assert cells[9][3:] == ["raw", "0.0050", "5.00 us", "-", "0.59", "ok (tegula / raw: 1.70)"]
    assert "- FAIL softmax: tegula's share of copy bandwidth: 0.800 (target >= 0.9)" in lines
    assert "- n/a  fused_chain: tegula time / torch.compile time: not measured (target <= 1)" in lines


def test_render_rewrites_the_markdown_of_a_saved_report(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(_made_up_report()))
    done = subprocess.run([sys.executable, str(BENCH), "--render", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (tmp_path / "bench.md").read_text() == render.format_markdown(_made_up_report())
    assert render.markdown_path("out/r.json") == "out/r.md"
    assert render.markdown_path("out/r") == "out/r.md"


def test_attention_rows_are_measured_against_sdpa():
    # The floor of an attention row is SDPA's rate in the same run; the row
    # names the SDPA backend that ran; both issue-5 targets are decided.
    case = gpu_workloads.Case("attention_causal", "4x32x4096x128", "bfloat16", bytes=1, flops=6_000_000_000,
                              num_warps=8, variants={}, reference="sdpa", compute_bound=True)
    rows = gpu_report.case_rows(case, [Outcome("sdpa", [1.0], "reference", note="cuDNN"),
                                       Outcome("tegula", [1.25], "ok"), Outcome("triton", [1.3], "ok")], 5e9)
    by = {r["variant"]: r for r in rows}
    assert by["sdpa"]["floor_frac"] == pytest.approx(1.0) and by["sdpa"]["note"] == "cuDNN"
    assert by["tegula"]["rate"] == pytest.approx(4.8) and by["tegula"]["floor_frac"] == pytest.approx(0.8)
    targets = {c["what"]: c for c in criteria(rows)}
    share = targets["attention_causal: tegula's share of SDPA's TFLOP/s"]
    assert (share["pass"], share["target"]) == (False, ">= 0.85") and share["value"] == pytest.approx(0.8)
    versus = targets["attention_causal: tegula time / triton time"]
    assert versus["pass"] is True and versus["value"] == pytest.approx(1.25 / 1.3)
    assert targets["attention: tegula time / triton time"]["pass"] is None
    report = {**_made_up_report(), "rows": rows, "criteria": criteria(rows)}
    lines = render.format_markdown(report).splitlines()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| ")]
    assert cells[2][3:] == ["sdpa", "1.0000", "6.00 TFLOP/s", "100%", "0.80", "reference (cuDNN)"]
    assert "- FAIL attention_causal: tegula's share of SDPA's TFLOP/s: 0.800 (target >= 0.85)" in lines
    assert "- PASS attention_causal: tegula time / triton time: 0.962 (target <= 1)" in lines


def test_exit_status_fails_on_wrong_results_and_tegula_errors_only():
    rows = _made_up_report()["rows"]
    assert gpu_run.exit_status(rows) == 1  # triton's mismatch
    peers_failing = [r for r in rows if r["check"] != "mismatch"]
    assert gpu_run.exit_status(peers_failing) == 0  # torch.compile's error is only reported
    assert gpu_run.exit_status(peers_failing + [{"variant": "tegula", "check": "error"}]) == 1


# --- host wrappers on torch tensors ---------------------------------------------------------------


def test_host_helpers_on_numpy():
    x = np.zeros((4, 6), np.float16)[:, :5]
    assert _host.strides(x) == (6, 1) and _host.numel(x) == 20 and not _host.is_torch(x)
    assert _host.empty(3, np.float32, like=x).dtype == np.float32
    assert _host.launch_options(None) == {} and _host.launch_options(8) == {"num_warps": 8}


@pytest.fixture(scope="module")
def tensors(backend):
    """torch tensors of the backend under test: CUDA on the GPU, else CPU tensors."""
    torch = pytest.importorskip("torch")
    device = "cuda" if backend.is_cuda else "cpu"
    return torch, device


def test_wrappers_take_torch_tensors_and_match_torch(tensors):
    torch, device = tensors
    g = torch.Generator(device=device).manual_seed(0)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device=device, generator=g).to(dtype)

    x, y = randn(1000), randn(1000)
    out = vector_add.add(x, y, num_warps=4)
    assert out.device == x.device and torch.equal(out, vector_add.add_reference(x, y))

    a = randn(33, 700)
    torch.testing.assert_close(softmax.softmax(a, num_warps=8), softmax.softmax_reference(a),
                               atol=1e-6, rtol=1e-5)

    bf16 = torch.bfloat16
    xb, w, b = randn(17, 300, dtype=bf16), randn(300, dtype=bf16), randn(300, dtype=bf16)
    y, mean, rstd = layer_norm.layer_norm(xb, w, b, num_warps=4)
    assert (y.dtype, mean.dtype, mean.device) == (torch.bfloat16, torch.float32, xb.device)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(xb, (300,), w, b, layer_norm.EPS),
                               atol=1e-2, rtol=1.6e-2)
    ref_y, ref_mean, ref_rstd = layer_norm.layer_norm_reference(xb, w, b)
    torch.testing.assert_close(mean, ref_mean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rstd, ref_rstd, atol=1e-5, rtol=1e-4)

    ma, mb = randn(70, 50, dtype=torch.float16), randn(50, 40, dtype=torch.float16)
    torch.testing.assert_close(matmul.matmul(ma, mb, num_warps=4), (ma.float() @ mb.float()).half(),
                               atol=0.05, rtol=4e-3)

    cx, cr = randn(9, 1000, dtype=torch.bfloat16), randn(9, 1000, dtype=torch.bfloat16)
    keep = torch.rand(9, 1000, device=device, generator=g) >= fused_chain.P_DROP
    bias, weight = randn(1000), randn(1000)
    fused = fused_chain.fused_chain(cx, cr, keep, bias, weight, num_warps=4)
    eager = fused_chain.eager_chain(cx, cr, keep, bias, weight)
    assert fused.dtype == eager.dtype == torch.bfloat16
    torch.testing.assert_close(fused, eager, atol=1e-2, rtol=1.6e-2)


# --- on a GPU ---------------------------------------------------------------------------------


def test_quick_gpu_run_end_to_end(backend, tmp_path):
    if not backend.is_cuda:
        pytest.skip("needs --backend cuda")
    path = tmp_path / "gpu.json"
    # torch.compile is left out: compiling four functions takes minutes, not a test's seconds.
    variants = [a for v in ("tegula", "triton", "torch", "cublas", "sdpa") for a in ("--variant", v)]
    done = subprocess.run([sys.executable, str(BENCH), "--gpu", "--quick", "--json", str(path),
                           *variants], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GPU_CHECK_COMMIT": "test"})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(path.read_text())
    assert report["schema"] == gpu_report.SCHEMA and report["commit"] == "test"
    assert {"gpu", "driver", "versions", "rows", "floors", "criteria"} <= set(report)
    assert (tmp_path / "gpu.md").read_text() == render.format_markdown(report)
    rows = {(r["workload"], r["variant"]): r for r in report["rows"]}
    for workload in ("vector_add", "fused_chain", "softmax", "layer_norm", "matmul_fp16", "matmul_bf16",
                     "matmul_bf16_8192", "matmul_tma_bf16", "matmul_tma_bf16_8192", "matmul_tma_fp16", "matmul_tma_fp16_8192", "matmul_fp8",
                     "matmul_fp8_8192", "matmul_autotune",
                     "matmul_autotune_best", "matmul_epilogue", "matmul_persistent",
                     "attention", "attention_causal"):
        mine = rows[workload, "tegula"]
        assert mine["check"] == "ok" and mine["ms"] > 0 and mine["floor_frac"] > 0, mine
        if workload.startswith("matmul_autotune"):
            assert mine["note"] and mine["num_warps"] in (4, 8), mine  # the config it launched
            continue  # no Triton variant
        if report["versions"]["triton"]:
            assert rows[workload, "triton"]["check"] == "ok", rows[workload, "triton"]
    assert rows["launch", "tegula"]["unit"] == "us" and rows["launch", "tegula"]["rate"] > 0


def test_do_bench_rejects_an_unknown_device():
    import tegula.testing

    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or None, got 'tpu'"):
        tegula.testing.do_bench(lambda: None, device="tpu")


def test_do_bench_on_the_gpu_uses_cuda_events(backend):
    if not backend.is_cuda:
        pytest.skip("needs --backend cuda")
    import torch

    import tegula.testing

    x = torch.ones(1 << 24, device="cuda")
    samples = tegula.testing.do_bench(lambda: x.mul_(1.0), warmup=5, rep=20, return_mode="all")
    assert samples and all(0 < ms < 1000 for ms in samples)
    timer = tegula.testing.CudaTimer()
    fast, slow = timer.interleaved([lambda: x[:1024].add_(1), lambda: x.add_(1).add_(1)], 5)
    assert len(fast) == len(slow) == 5 and sorted(fast)[2] < sorted(slow)[2]


def test_render_refuses_what_is_not_a_gpu_report(tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"schema": "tegula-bench/1"}))
    done = subprocess.run([sys.executable, str(BENCH), "--render", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"{path} is not a GPU report (schema 'tegula-bench/1', expected 'tegula-bench-gpu/1')\n"
    assert not (tmp_path / "cpu.md").exists()


def test_torch_peer_reads_bfloat16_arrays():
    # The CPU run's bf16 matmul hands torch ml_dtypes arrays, which torch.from_numpy cannot read: the peer views
    # their bits as torch.bfloat16 instead (sharing the memory), and multiplies what NumPy multiplies.
    pytest.importorskip("torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from tegula_bench.peers import TorchPeer

    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((33, 17 + i)).astype(ml_dtypes.bfloat16) for i in range(2))
    b = b[:17].copy()
    out = TorchPeer().matmul(a, b)()
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(out.float().numpy(), want, rtol=2 ** -7, atol=1e-2)
