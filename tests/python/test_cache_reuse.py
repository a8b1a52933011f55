"""One build for one generated source (runtime/build_records.h, docs/runtime.md
"Reusing identical builds"): requests under different cache keys whose
generated C++ is the same but for comments (an unused integer of another
divisibility, a num_warps the CPU code ignores, the same kernel under
another name and at another line) run the C++ compiler once; the others copy its shared object. Damaged copies
and records are detected and rebuilt, and processes compiling at once stay
safe.

Each process is a fresh interpreter on a cache of its own, so its
``tegula.runtime_stats()`` say what it did: ``builds`` (compiler runs),
``reused`` (copies), ``disk_hits``, ``disk_rejected``. The compiler is a
wrapper that logs each compile, named by $CXX.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.usefixtures("cpu_only")

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def twice_plus_one(x_ptr, out_ptr, unused, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)

    @tegula.jit
    def same_again(x_ptr, out_ptr, unused, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)

    kernels = {"twice_plus_one": twice_plus_one, "same_again": same_again}
    x = np.random.default_rng(3).standard_normal(300).astype(np.float32)
    for spec in sys.argv[1:]:
        name, unused, warps, block = (spec + ":128").split(":")[:4]
        out = np.zeros_like(x)
        grid = (300 + int(block) - 1) // int(block)
        kernels[name][(grid,)](x, out, int(unused), 300, BLOCK=int(block), num_warps=int(warps))
        np.testing.assert_array_equal(out, x * np.float32(2) + np.float32(1))
    print(json.dumps(tegula.runtime_stats()))
""")

# name:unused:num_warps[:BLOCK]. Four keys, one generated source: but for
# comments (the kernel's name, source locations), the same C++.
SPECS = ("twice_plus_one:16:4", "twice_plus_one:17:4", "twice_plus_one:16:8", "same_again:16:4")

WRAPPER = textwrap.dedent("""\
    #!/bin/sh
    case " $* " in *" -o "*) echo "$*" >> "$TEGULA_TEST_COMPILE_LOG" ;; esac
    exec "$TEGULA_TEST_REAL_CXX" "$@"
""")


@pytest.fixture
def cpu_only(backend):
    if backend.is_cuda:
        pytest.skip("build records are used by the CPU backend")


@pytest.fixture
def setup(tmp_path):
    """(cache, run): `run(*specs)` compiles and checks `specs` in a fresh
    process on `cache`, through the logging compiler; returns its counters."""
    import shutil

    real = shutil.which(os.environ.get("CXX", "").split(" ")[0] or "c++") or shutil.which("g++")
    if real is None:
        pytest.skip("no C++ compiler")
    wrapper = tmp_path / "c++"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o700)
    script = tmp_path / "kernels.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"

    def start(*specs):
        # No precompiled prelude: its background build would be a compile too.
        env = dict(os.environ, TEGULA_CACHE_DIR=str(cache), CXX=str(wrapper), TEGULA_CPU_PCH="0",
                   TEGULA_TEST_REAL_CXX=real, TEGULA_TEST_COMPILE_LOG=str(tmp_path / "compiles.log"),
                   TEGULA_NUM_THREADS="1")
        return subprocess.Popen([sys.executable, str(script), *specs], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def finish(proc):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])

    def run(*specs):
        return finish(start(*specs))

    run.start, run.finish = start, finish
    return cache, run, tmp_path / "compiles.log"


def compiles(log: pathlib.Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def records(cache: pathlib.Path) -> list:
    return sorted(cache.glob("*.build"))


def test_one_source_under_several_keys_is_compiled_once(setup):
    cache, run, log = setup
    counters = run(*SPECS)
    assert compiles(log) == 1
    assert (counters["builds"], counters["reused"], counters["disk_hits"]) == (1, 3, 0)
    artifacts = sorted(cache.glob("*.so"))
    assert len(artifacts) == 4
    assert len({p.read_bytes() for p in artifacts}) == 1  # copies of one build
    assert len({p.stat().st_ino for p in artifacts}) == 4  # each a file of its own
    assert len(records(cache)) == 1

    # Another generated source is another compile.
    counters = run("twice_plus_one:16:4", "twice_plus_one:16:4:64")
    assert compiles(log) == 2
    assert (counters["builds"], counters["disk_hits"]) == (1, 1)


def test_damaged_entries_and_records_are_detected_and_rebuilt(setup):
    cache, run, log = setup
    run(*SPECS)
    (record,) = records(cache)
    recorded_key = record.read_text().splitlines()[1].split(" ")[1]
    library = cache / f"{recorded_key}.so"
    damaged = bytearray(library.read_bytes())
    damaged[len(damaged) // 2] ^= 0x40
    library.write_bytes(bytes(damaged))

    # The damaged entry is refused and rebuilt (not copied from itself); the
    # copies made from it before are intact.
    counters = run(*SPECS)
    assert (counters["builds"], counters["reused"], counters["disk_hits"], counters["disk_rejected"]) == (1, 0, 3, 1)
    assert compiles(log) == 2

    # A truncated record: a new key compiles, and records again.
    record.write_text(record.read_text()[:-4])
    assert (run("twice_plus_one:16:2")["builds"], compiles(log)) == (1, 3)
    assert run("twice_plus_one:16:1")["reused"] == 1
    assert compiles(log) == 3


def test_processes_compiling_one_source_at_once_compile_it_once(setup):
    cache, run, log = setup
    # Each process compiles the keys in another order.
    procs = [run.start(*SPECS[i:], *SPECS[:i]) for i in range(4)]
    counters = [run.finish(p) for p in procs]
    assert compiles(log) == 1, counters
    assert sum(c["builds"] for c in counters) == 1, counters
    assert sum(c["reused"] for c in counters) == 3, counters
    for c in counters:
        assert c["builds"] + c["reused"] + c["disk_hits"] == 4, counters
        assert c["disk_rejected"] == 0, counters
    assert len(records(cache)) == 1
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
