"""A CPU kernel that touches memory outside the process's (a missing mask, a
wrong size) raises SIGSEGV on the thread running it. The launch catches it
and raises tegula.DeviceError (E0909) naming the kernel, the address and the
programs, instead of the signal ending the process; later launches, faulting
or not, run as before. A fault outside a kernel still ends the process."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the CPU backend's signal handling is Linux's")


@tegula.jit
def store_far(out_ptr, far, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # Programs below `far` store in bounds; the others 2**40 elements away.
    where = tl.where(tl.program_id(0) < far, offs.to(tl.int64), offs.to(tl.int64) + 2**40)
    tl.store(out_ptr + where, offs.to(tl.float32) * 2, mask=offs < n)


def _in_bounds(n, block):
    out = np.zeros(n, np.float32)
    store_far[(tegula.cdiv(n, block),)](out, 1 << 30, n, BLOCK=block)
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.float32) * 2)


@pytest.mark.parametrize("programs, far", [(1, 0), (37, 36), (64, 0)])
def test_a_faulting_launch_is_a_device_error_and_the_next_launches_run(programs, far):
    block = 32
    n = programs * block - 5
    out = np.zeros(n, np.float32)
    for _ in range(3):  # the thread that took the fault takes the next one too
        with pytest.raises(tegula.DeviceError) as caught:
            store_far[(programs,)](out, far, n, BLOCK=block)
        error = caught.value
        assert error.kind == "memory" and error.kernel == "store_far"
        assert error.code == "E0909"
        text = str(error)
        assert text.startswith("kernel `store_far`: segmentation fault at address 0x")
        assert "a load or store outside the memory of the process" in text
        assert "hint: a mask missing" in text and "debug=True" in text
        if programs == 1:
            assert "in program (0, 0, 0):" in text
        _in_bounds(1000, 64)  # in-bounds launches on every thread still run and compute


def test_debug_mode_names_the_store_that_faults():
    out = np.zeros(100, np.float32)
    with pytest.raises(tegula.DeviceError) as caught:
        store_far[(4,)](out, 2, 100, BLOCK=32, debug=True)
    assert caught.value.kind == "store" and caught.value.code == "E0907"


def test_a_fault_outside_a_kernel_still_ends_the_process(tmp_path):
    script = tmp_path / "outside.py"
    script.write_text(textwrap.dedent("""
        import ctypes, numpy as np, tegula, tegula.language as tl
        @tegula.jit
        def one(out_ptr):
            tl.store(out_ptr, 1.0)
        out = np.zeros(1, np.float32)
        one[(1,)](out)  # the handler is installed
        assert out[0] == 1.0
        ctypes.string_at(8)  # a fault of the process's own
        print("survived")
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -11, (done.returncode, done.stdout, done.stderr[-2000:])
    assert "survived" not in done.stdout
