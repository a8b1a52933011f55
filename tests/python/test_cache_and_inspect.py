"""The on-disk kernel cache across processes, inspect(), warmup(), and how a
compile error reaches Python."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cache_util import seed_precompiled_prelude
from vector_add import add_kernel

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

LAUNCH_AND_REPORT = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    sys.path.insert(0, {str(EXAMPLES)!r})
    import tegula
    from vector_add import add
    x = np.arange(1000, dtype=np.float32)
    assert (add(x, x) == 2 * x).all()
    print(json.dumps(tegula.runtime_stats()))
""")


def _run_in_new_process(cache_dir):
    env = dict(os.environ, TEGULA_CACHE_DIR=str(cache_dir))
    done = subprocess.run([sys.executable, "-c", LAUNCH_AND_REPORT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_loads_from_disk(tmp_path):
    cache = seed_precompiled_prelude(tmp_path / "cache")
    first = _run_in_new_process(cache)
    assert first["builds"] == 1 and first["disk_hits"] == 0
    second = _run_in_new_process(cache)
    assert second["builds"] == 0 and second["disk_hits"] == 1
    assert second["frontend_runs"] == 0


def test_inspect_shows_ir_and_source():
    x = np.zeros(64, dtype=np.float32)
    info = add_kernel.inspect(x, x, x, 64, BLOCK=64)
    assert "program_id" in info.ir
    assert "tegula_kernel" in info.source
    stages = list(info.stages)
    assert stages[0] == "lowered"  # then one entry per stage that changed the IR
    assert info.ir == info.stages[stages[-1]]
    assert [p[0] for p in info.params][:3] == ["x_ptr", "y_ptr", "out_ptr"]
    assert len(info.key) == 64
    text = str(info)
    assert "=== kernel add_kernel" in text and "--- IR after lowered ---" in text
    assert "--- generated source ---" in text


def test_warmup_compiles_without_launching():
    x = np.zeros(64, dtype=np.float32)
    out = np.full(64, 3.0, dtype=np.float32)
    kernel = add_kernel.warmup(x, x, out, 64, BLOCK=64, grid=(1,))
    assert kernel.name == "add_kernel"
    np.testing.assert_array_equal(out, 3.0)


@tegula.jit
def kernel_with_an_undefined_name(x_ptr):
    tl.store(x_ptr, undefined_value)  # noqa: F821


def test_compile_error_points_at_the_source():
    lines = pathlib.Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "tl.store(x_ptr, undefined_value)" in text)
    col = lines[line - 1].index("undefined_value") + 1
    with pytest.raises(tegula.CompilationError) as info:
        kernel_with_an_undefined_name[(1,)](np.zeros(1, dtype=np.float32))
    message = str(info.value)
    assert f"{kernel_with_an_undefined_name.filename}:{line}:{col}: error[E0201]:" in message
    assert info.value.code == "E0201"
    assert "undefined_value" in message
    assert "^" in message
    assert isinstance(info.value, Exception)
