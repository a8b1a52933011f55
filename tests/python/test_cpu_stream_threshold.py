"""When a CPU launch streams its stores (src/backends/cpu/prelude_stream.h):
when it moves more bytes than the last-level cache that a core shares, read
from sysfs as `tegula._floors.last_level_cache` (and the benchmark's sizes)
read it. glibc's sysconf may report a whole socket's L3 instead: 384 MB on
a two-vCPU EPYC whose cores share 32 MB, where launches of 32-384 MB then
wrote through the cache, reading every line first.

The generated prelude's threshold is printed by a small program built from
the prelude of a kernel that streams, and compared with sysfs's value and
with $TEGULA_STREAM_STORES's overrides.
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula._floors import last_level_cache


@tegula.jit
def scale_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets) * 2)


def threshold_program(tmp_path):
    x = np.zeros(4096, np.float32)
    source = scale_kernel.inspect(x, x, BLOCK=4096).source
    assert "tg_stream_threshold()" in source, "a whole 16 KB tile store streams when the launch is large"
    prelude = source.split("// ---- kernel ----")[0]
    main = tmp_path / "threshold.cpp"
    main.write_text(prelude + '\nint main() { std::printf("%.0f\\n", tg_stream_threshold()); return 0; }\n')
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    binary = tmp_path / "threshold"
    subprocess.run([compiler, "-O1", "-std=c++17", "-march=native", str(main), "-o", str(binary)], check=True,
                   capture_output=True, timeout=300)
    return binary


def run_threshold(binary, forced=None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TEGULA_STREAM_STORES"}
    if forced is not None:
        env["TEGULA_STREAM_STORES"] = forced
    return subprocess.run([str(binary)], check=True, capture_output=True, text=True, env=env,
                          timeout=60).stdout.strip()


def test_launches_stream_beyond_the_cache_a_core_shares(backend, tmp_path):
    if backend.name != "cpu":
        pytest.skip("streamed stores are the CPU backend's")
    binary = threshold_program(tmp_path)
    cache = last_level_cache()
    if cache["source"].startswith("/sys/"):
        assert int(run_threshold(binary)) == cache["bytes"], f"the threshold is not {cache['source']}'s size"
    else:
        assert int(run_threshold(binary)) > 0
    assert run_threshold(binary, "0") == "inf"
    assert run_threshold(binary, "1") == "0"
    assert int(run_threshold(binary, "2")) == int(run_threshold(binary)), "only 0 and 1 override"
