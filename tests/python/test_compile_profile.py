"""Compile time: where it goes (TEGULA_PROFILE_COMPILE, _C.compile_with_profile),
the CPU backend's precompiled prelude, and the benchmark's compile rows."""

import json
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C

from cache_util import seed_precompiled_prelude

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"

CPU_BUILD_PHASES = ["setup", "key", "disk cache", "frontend", "passes", "codegen", "c++", "store", "load"]


@tegula.jit
def scale(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


def _request(kernel, args, constexprs):
    request, _ = kernel._request_for(*args, **constexprs)
    return request


def test_phases_of_a_build_then_of_a_disk_hit_then_in_memory(tmp_path):
    x = np.zeros(64, dtype=np.float32)
    request = _request(scale, (x, x, 64), {"FACTOR": 3, "BLOCK": 64})
    options = _C.CompileOptions(backend="cpu", cache_dir=str(seed_precompiled_prelude(tmp_path)))
    kernel, phases = _C.compile_with_profile(request, options)
    assert [name for name, _ in phases] == CPU_BUILD_PHASES
    assert all(seconds >= 0 for _, seconds in phases)
    assert max(phases, key=lambda p: p[1])[0] == "c++"  # the system compiler dominates
    again, phases = _C.compile_with_profile(request, options)
    assert again is kernel and [name for name, _ in phases] == ["setup", "key", "in memory"]
    del kernel, again  # the in-process table holds kernels weakly: the next one comes from disk
    _, phases = _C.compile_with_profile(request, options)
    assert [name for name, _ in phases] == ["setup", "key", "disk cache"]


def test_cuda_phases(tmp_path):
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")
    x = np.zeros(64, dtype=np.float32)
    request = _request(scale, (x, x, 64), {"FACTOR": 2, "BLOCK": 64})
    for arch in (90, 80):
        options = _C.CompileOptions(backend="cuda", cuda_arch=arch, cache_dir=str(tmp_path))
        _, phases = _C.compile_with_profile(request, options)
        # One load-or-build for every backend: the image just stored is loaded as a hit would be.
        assert [name for name, _ in phases] == ["setup", "key", "disk cache", "frontend", "passes", "codegen",
                                                "nvrtc", "store", "load"]


def test_profile_line_on_stderr(tmp_path):
    script = tmp_path / "profiled.py"
    script.write_text(
        "import numpy as np\n"
        "import tegula, tegula.language as tl\n"
        "@tegula.jit\n"
        "def copy(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs))\n"
        "x = np.arange(16, dtype=np.float32); out = np.zeros_like(x)\n"
        "copy[(1,)](x, out, BLOCK=16)\n"
        "assert (out == x).all()\n")
    env = {**os.environ, "TEGULA_PROFILE_COMPILE": "1", "TEGULA_CACHE_DIR": str(seed_precompiled_prelude(tmp_path / "cache"))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    match = re.fullmatch(r"tegula: compiled 'copy' \(cpu\) in ([0-9.]+ m?s): (.*)", line)
    assert match, line
    names = [re.fullmatch(r"(.+) [0-9.]+ m?s", part).group(1) for part in match.group(2).split(", ")]
    assert names == ["python"] + CPU_BUILD_PHASES


# --- the precompiled prelude ------------------------------------------------------------------


def _compiler_is_gcc() -> bool:
    from shutil import which

    cxx = (os.environ.get("CXX") or "").split()
    compiler = which(cxx[0]) if cxx else (which("c++") or which("g++"))
    if not compiler:
        return False
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    return "clang" not in version.splitlines()[0] if version else False


def _wait_for(pattern: str, folder: pathlib.Path, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = sorted(folder.glob(pattern))
        if found:
            return found
        time.sleep(0.2)
    return []


def test_precompiled_prelude_is_built_once_and_survives_damage(tmp_path):
    if not _compiler_is_gcc():
        pytest.skip("the precompiled prelude is a GCC feature")
    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)

    def build(factor):
        request = _request(scale, (x, out, 300), {"FACTOR": factor, "BLOCK": 128})
        kernel = _C.compile(request, _C.CompileOptions(backend="cpu", cache_dir=str(tmp_path)))
        kernel.launch((3, 1, 1), [_C.data_address(x), _C.data_address(out), 300])
        np.testing.assert_array_equal(out, x * factor)

    # Headers of earlier preludes or flags: only the newest two stay beside the new one.
    for age in range(4):
        for suffix in (".h", ".h.gch"):
            old = tmp_path / f"prelude-old{age}{suffix}"
            old.write_text("old")
            os.utime(old, (time.time() - 1000 * (age + 1),) * 2)
    build(2)  # no header yet: compiled whole, then the header starts building in the background
    assert sorted(p.name for p in tmp_path.glob("prelude-old*")) == [
        "prelude-old0.h", "prelude-old0.h.gch", "prelude-old1.h", "prelude-old1.h.gch"]
    for old in tmp_path.glob("prelude-old*"):
        old.unlink()
    assert len(list(tmp_path.glob("prelude-*.h"))) == 1
    binaries = _wait_for("prelude-*.h.gch", tmp_path, 240)
    assert len(binaries) == 1, "the precompiled prelude was not built"
    build(3)  # with the header
    binaries[0].write_bytes(b"not a precompiled header")
    build(4)  # a damaged header never fails a compile
    assert not list(tmp_path.glob(".tegula-*")), "temporary files were left behind"


# --- the benchmark's rows ----------------------------------------------------------------------


def test_cpu_bench_compile_rows(tmp_path):
    path = tmp_path / "compile.json"
    done = subprocess.run([sys.executable, str(BENCH), "--cpu", "--quick", "--only", "compile",
                           "--json", str(path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["workload"]: row for row in json.loads(path.read_text())["rows"]}
    assert set(rows) == {"compile_cold", "compile_warm"}
    for row in rows.values():
        assert row["variant"] == "tegula" and row["rate_unit"] == "s" and row["check"] == "ok", row
        assert row["rate"] > 0 and row["samples"] == 1
    assert rows["compile_warm"]["rate"] < rows["compile_cold"]["rate"]


def test_gpu_report_compile_and_launch_rows():
    from tegula_bench import gpu_report
    from tegula_bench.outcome import Outcome
    from tegula_bench.targets import criteria

    rows = gpu_report.compile_rows({
        "compile_cold": [Outcome("tegula", [400.0, 500.0, 450.0], "ok"), Outcome("triton", [1190.0], "ok")],
        "compile_warm": [Outcome("tegula", [20.0], "ok"), Outcome("triton", [], "error", "ImportError: triton")],
        "compile_cold_cpu": [Outcome("tegula", [600.0, 700.0, 650.0], "ok")],
        "compile_warm_cpu": [Outcome("tegula", [30.0], "ok")]})
    rows += gpu_report.launch_rows([Outcome("tegula", [0.003], "ok"), Outcome("triton", [0.012], "ok")], 10000, 4)
    by = {(r["workload"], r["variant"]): r for r in rows}
    cold = by["compile_cold", "tegula"]
    assert (cold["unit"], cold["samples"], cold["check"]) == ("s", 3, "ok")
    assert cold["rate"] == pytest.approx(0.45) and cold["ms"] == pytest.approx(450.0)
    assert by["compile_warm", "triton"]["rate"] is None and by["compile_warm", "triton"]["check"] == "error"
    assert "6 arguments" in by["launch", "tegula"]["shape"]
    targets = {c["what"]: c for c in criteria(rows)}
    assert targets["compile_cold: tegula first call / triton's"]["value"] == pytest.approx(450 / 1190)
    assert targets["compile_cold: tegula first call / triton's"]["pass"] is True
    assert targets["compile_warm: tegula first call / triton's"]["pass"] is None  # triton not measured
    assert "CPU backend" in by["compile_cold_cpu", "tegula"]["shape"]
    assert "empty cache" in by["compile_cold_cpu", "tegula"]["shape"]
    assert "warm cache" in by["compile_warm_cpu", "tegula"]["shape"]
    on_cpu = targets["compile_cold_cpu: tegula first call on the CPU backend / triton's"]
    assert on_cpu["value"] == pytest.approx(650 / 1190) and on_cpu["pass"] is True
    half = targets["launch: tegula host time per launch / triton's (issue 7)"]
    assert half["value"] == pytest.approx(0.25) and half["target"] == "<= 0.5" and half["pass"] is True
    assert targets["launch: tegula host time per launch in us"]["value"] == pytest.approx(3.0)
    assert targets["launch: tegula host time per launch in us"]["pass"] is True


def test_gpu_bench_measures_the_cpu_backend_compile_too():
    from tegula_bench import gpu_measure, gpu_report

    measured = gpu_measure.measure_compile(("tegula",), quick=True)
    assert set(measured) == {"compile_cold", "compile_warm", "compile_cold_cpu", "compile_warm_cpu"}
    for workload in ("compile_cold_cpu", "compile_warm_cpu"):
        (outcome,) = measured[workload]
        assert outcome.variant == "tegula" and outcome.check == "ok", outcome.error
        assert len(outcome.samples) == 1 and outcome.samples[0] > 0
    assert measured["compile_warm_cpu"][0].samples[0] < measured["compile_cold_cpu"][0].samples[0]
    rows = {(r["workload"], r["variant"]): r for r in gpu_report.compile_rows(measured)}
    assert rows["compile_cold_cpu", "tegula"]["unit"] == "s"
