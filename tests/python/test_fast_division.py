"""The IR's approximate division: tl.sigmoid and tl.math.fdiv.

`/` and tl.math.div_rn are IEEE division everywhere. tl.sigmoid's quotient
and tl.math.fdiv (unless ieee_rounding=True) carry `approx`: on CUDA
div.full.f32 (2 ulp, no call to IEEE division's slow path), exact on the CPU
and in f64. The point is registers: a matmul epilogue with sigmoid went from
128 to 219 registers (one block per SM instead of two) with IEEE division.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_compile_util import compile_for_cuda
import matmul_epilogue as mep


@tegula.jit
def divisions_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, x / y, mask=m)
    tl.store(out_ptr + n + offs, tl.math.div_rn(x, y), mask=m)
    tl.store(out_ptr + 2 * n + offs, tl.math.fdiv(x, y), mask=m)
    tl.store(out_ptr + 3 * n + offs, tl.math.fdiv(x, y, ieee_rounding=True), mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.sigmoid(x), mask=m)


@tegula.jit
def runtime_rounding_kernel(x_ptr, flag):
    tl.store(x_ptr, tl.math.fdiv(tl.load(x_ptr), 3.0, ieee_rounding=flag))


def inputs(n=77):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    y = (rng.standard_normal(n) * 3 + np.where(rng.random(n) < 0.5, -0.5, 0.5)).astype(np.float32)
    return x, y


def test_only_sigmoid_and_fdiv_are_approximate():
    x, y = inputs()
    out = np.zeros(5 * x.size, np.float32)
    info = divisions_kernel.inspect(x, y, out, x.size, BLOCK=128)
    divs = [line for line in info.stages["lowered"].splitlines() if re.search(r"= div\b", line)]
    assert len(divs) == 5, divs
    approx = [("approx" in line) for line in divs]
    assert approx == [False, False, True, False, True], divs


def test_cpu_divides_exactly():
    x, y = inputs()
    out = np.zeros(5 * x.size, np.float32)
    divisions_kernel[(1,)](x, y, out, x.size, BLOCK=128)
    n = x.size
    exact = x / y
    for k in range(4):
        np.testing.assert_array_equal(out[k * n:(k + 1) * n], exact)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(out[4 * n:], want, rtol=4 * 2.0 ** -23, atol=4 * 2.0 ** -23)


def test_ieee_rounding_must_be_a_constant():
    x = np.ones(1, np.float32)
    with pytest.raises(tegula.CompilationError) as e:
        runtime_rounding_kernel[(1,)](x, True)
    assert e.value.code == "E0601"
    assert "ieee_rounding must be a constant bool" in str(e.value)


@pytest.mark.parametrize("arch", [80, 90])
def test_cuda_lowers_only_approx_divisions_to_div_full(arch, tmp_path):
    text = compile_for_cuda(divisions_kernel, "*fp32:16, *fp32:16, *fp32:16, i32, 128", arch, tmp_path,
                            emit="cuda,ptx")
    cuda = text[text.index("// ===== cuda ====="):text.index("// ===== ptx =====")]
    kernel = cuda[cuda.index("// ---- kernel ----"):]
    assert kernel.count("tg_div_full(") == 2, "fdiv and sigmoid take div.full"
    # /, div_rn and fdiv(ieee_rounding=True) are one IEEE quotient after CSE,
    # which keeps the approximate fdiv of the same operands apart.
    assert kernel.count("__fdiv_rn(") == 1, "/, div_rn and fdiv(ieee_rounding=True) stay IEEE"
    assert "div.full.f32" in text[text.index("// ===== ptx ====="):]


def test_epilogue_with_sigmoid_fits_two_blocks_per_sm(tmp_path):
    sig = ("*bf16:16, *bf16:16, *bf16:16, *bf16:16, *bf16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, "
           "i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8, True, 'gelu_tanh', True")
    text = compile_for_cuda(mep.matmul_epilogue_kernel, sig, 90, tmp_path, emit="ptxas", num_warps=8)
    registers = int(re.search(r"Used (\d+) registers", text).group(1))
    # 128 with this NVRTC (two 256-thread blocks per SM); IEEE division's
    # slow-path calls made it 219. A margin for other toolchains.
    assert registers < 160, text
