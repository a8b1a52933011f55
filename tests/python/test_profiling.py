"""Profiler names and the per-kernel table (tegula.profiling, docs/profiling.md),
without Nsight: NVTX calls land in a stub library built here, which counts
them and keeps the last range's name."""

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tegula
from tegula import _C, profiling
from tegula_bench.kernels import vector_add

STUB = r"""
#include <string.h>
static int pushes, pops;
static char last[256];
int nvtxRangePushA(const char* message) { ++pushes; strncpy(last, message, sizeof last - 1); return pushes - pops - 1; }
int nvtxRangePop(void) { ++pops; return pushes - pops; }
int stub_pushes(void) { return pushes; }
int stub_pops(void) { return pops; }
const char* stub_last(void) { return last; }
"""


@pytest.fixture(scope="module")
def nvtx_stub(tmp_path_factory):
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler to build the NVTX stub")
    folder = tmp_path_factory.mktemp("nvtx")
    (folder / "stub.c").write_text(STUB)
    library = folder / "libnvtxstub.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(folder / "stub.c")], check=True)
    return library


@pytest.fixture
def clean_profiling():
    yield
    profiling.set_nvtx(False)
    profiling.set_timing(False)
    profiling.reset()


def _launch(n=4096):
    x, y = vector_add.make_inputs(n)
    out = np.empty_like(x)
    vector_add.add(x, y, out)
    np.testing.assert_array_equal(out, x + y)
    return vector_add.add_kernel.warmup(x, y, out, n, grid=(1,), BLOCK=vector_add.BLOCK)


def test_launches_are_not_observed_by_default():
    if os.environ.get("TEGULA_NVTX", "0") != "0" or os.environ.get("TEGULA_PROFILE", "0") != "0":
        pytest.skip("this run observes launches")
    assert _C.launch_observer() is None


def test_every_launch_is_inside_a_range_named_after_the_kernel_and_its_key(nvtx_stub, monkeypatch, clean_profiling):
    monkeypatch.setenv("TEGULA_NVTX_LIBRARY", str(nvtx_stub))
    stub = ctypes.CDLL(str(nvtx_stub))  # the same library the observer loads
    stub.stub_last.restype = ctypes.c_char_p
    profiling.set_nvtx(True)
    kernel = _launch()
    _launch()
    assert stub.stub_pushes() == stub.stub_pops() == 2
    assert stub.stub_last().decode() == f"add_kernel [{kernel.key[:12]}]"
    profiling.set_nvtx(False)
    assert _C.launch_observer() is None
    _launch()
    assert stub.stub_pushes() == 2


def test_the_environment_switch_turns_ranges_on(nvtx_stub):
    script = textwrap.dedent(f"""
        import ctypes, sys
        sys.path.insert(0, {os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")!r})
        import numpy as np
        from tegula_bench.kernels import vector_add
        x, y = vector_add.make_inputs(100)
        for _ in range(3):
            vector_add.add(x, y)
        stub = ctypes.CDLL({str(nvtx_stub)!r})
        print(stub.stub_pushes(), stub.stub_pops())
    """)
    env = dict(os.environ, TEGULA_NVTX="1", TEGULA_NVTX_LIBRARY=str(nvtx_stub))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "3"]


def test_a_missing_nvtx_library_is_said(monkeypatch, clean_profiling):
    monkeypatch.setenv("TEGULA_NVTX_LIBRARY", "/nonexistent/libnvToolsExt.so")
    with pytest.raises(OSError, match="NVTX ranges need libnvToolsExt"):
        profiling.set_nvtx(True)
    assert _C.launch_observer() is None


def test_timing_counts_calls_and_time_per_kernel(clean_profiling):
    profiling.set_timing(True)
    for _ in range(5):
        _launch(1 << 16)
    (record,) = [r for r in profiling.records() if r.name == "add_kernel"]
    assert record.calls == 5 and record.total_s > 0
    text = profiling.table()
    row = next(line for line in text.splitlines() if line.startswith("add_kernel"))
    cells = row.split()
    assert cells[2] == "5" and cells[-1].endswith("%")
    assert float(cells[3]) == pytest.approx(record.total_s * 1e3, rel=1e-3, abs=1e-3)


def test_tegula_profile_prints_the_table_at_exit():
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")!r})
        from tegula_bench.kernels import vector_add
        x, y = vector_add.make_inputs(5000)
        for _ in range(4):
            vector_add.add(x, y)
    """)
    env = dict(os.environ, TEGULA_PROFILE="1")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "tegula profile" in done.stderr
    row = next(line for line in done.stderr.splitlines() if line.startswith("add_kernel"))
    assert row.split()[2] == "4"


def test_the_table_at_exit_needs_no_floors_measured(tmp_path):
    """At exit the interpreter starts no new threads: the table uses the floors the cache holds, and
    says how to get them when there are none (it raised at exit, every run, before)."""
    from cache_util import seed_precompiled_prelude

    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")!r})
        from tegula_bench.kernels import vector_add
        x, y = vector_add.make_inputs(5000)
        vector_add.add(x, y)
    """)
    env = dict(os.environ, TEGULA_PROFILE="1", TEGULA_CACHE_DIR=str(seed_precompiled_prelude(tmp_path / "cache")))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    row = next(line for line in done.stderr.splitlines() if line.startswith("add_kernel"))
    assert row.split()[-1] == "unknown", done.stderr
    assert "the cpu floors are not measured yet" in done.stderr


def test_a_floors_file_that_does_not_parse_is_a_miss(tmp_path, monkeypatch):
    from tegula import _floors

    monkeypatch.setenv("TEGULA_CACHE_DIR", str(tmp_path / "cache"))
    path = _floors._path("cpu")
    os.makedirs(os.path.dirname(path))
    for text in ("{", "[" * 400_000, '{"name": 1}'):
        with open(path, "w") as f:
            f.write(text)
        assert _floors.cached_floors("cpu") is None
