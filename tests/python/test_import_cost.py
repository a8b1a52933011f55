"""`import tegula` stays light: it imports neither torch nor ml_dtypes (whose
import costs more than the rest of the package). NumPy's bf16 and fp8 arrays
still launch, through the ml_dtypes their owner imported, also when that
import comes after tegula's and after a launch that refused another dtype."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ml_dtypes")

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import tegula
    import tegula.language as tl

    assert "ml_dtypes" not in sys.modules and "torch" not in sys.modules, sorted(sys.modules)

    @tegula.jit
    def twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m).to(tl.float32) * 2, mask=m)

    n = 97
    y = np.zeros(n, np.float32)
    try:
        twice[(1,)](np.zeros(n, np.complex64), y, n, BLOCK=128)
        raise SystemExit("complex64 was accepted")
    except TypeError as e:
        assert "unsupported dtype complex64" in str(e), e

    import ml_dtypes
    rng = np.random.default_rng(3)
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        x = rng.uniform(-4, 4, n).astype(getattr(ml_dtypes, name))
        twice[(1,)](x, y, n, BLOCK=128)
        np.testing.assert_array_equal(y, 2 * x.astype(np.float32))
        print(name, "ok")
""")


def test_import_is_light_and_ml_dtypes_arrays_launch_after_a_late_import(tmp_path):
    program = tmp_path / "late_ml_dtypes.py"
    program.write_text(PROGRAM)
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["bfloat16", "ok", "float8_e4m3fn", "ok", "float8_e5m2", "ok"]
