"""Names in kernels are read as Python reads them: NFKC-normalized (PEP 3131), so a parameter
written with a ligature or a compatibility character is the name Python's signature shows, and
keywords, globals and the kernel's body all agree on it."""

import numpy as np

import tegula
import tegula.language as tl

SCALE_µ = 3.0  # MICRO SIGN: Python names this global SCALE_μ (GREEK SMALL LETTER MU)


@tegula.jit
def scaled_kernel(x_ptr, out_ptr, ﬁrst, BLOCK: tl.constexpr):  # the ligature: Python's name is `first`
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * first + SCALE_μ)


def test_names_are_nfkc_normalized_as_python_does():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    scaled_kernel[(1,)](x, out, 2.0, BLOCK=16)
    np.testing.assert_array_equal(out, x * 2 + 3)
    scaled_kernel[(1,)](x, out, first=0.5, BLOCK=16)  # the keyword Python's signature names
    np.testing.assert_array_equal(out, x * 0.5 + 3)
    assert "first" in scaled_kernel.arg_names
