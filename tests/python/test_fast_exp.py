"""The IR's approximate exp: tl.exp and tl.math.exp carry `approx`.

On CUDA an `approx` exp on f32 (and on f16/bf16, computed in f32) is
ex2.approx of x * log2(e), as Triton lowers tl.exp, with results below
2^-126 flushed to zero as tl.exp2's are. libdevice.exp stays CUDA's
accurate expf, as in Triton.
The CPU backend and f64 are accurate for both. In swiglu's forward the
approximate form is about 40% fewer instructions than expf's range
reduction, the difference between 90% and 95% of copy bandwidth.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_compile_util import compile_for_cuda
from tegula.language.extra import libdevice
from tegula.language.extra.libdevice import exp as libdevice_exp


@tegula.jit
def exps_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.exp(x), mask=m)
    tl.store(out_ptr + n + offs, tl.math.exp(x + 1.0), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.exp(x + 2.0), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice_exp(x + 3.0), mask=m)
    tl.store(out_ptr + 4 * n + offs, x.exp() * 0.5, mask=m)


@tegula.jit
def exp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=m, other=0.0)), mask=m)


def test_tl_exp_is_approx_and_libdevice_exp_is_not():
    x = np.linspace(-3, 3, 77).astype(np.float32)
    out = np.zeros(5 * x.size, np.float32)
    info = exps_kernel.inspect(x, out, x.size, BLOCK=128)
    exps = [line for line in info.stages["lowered"].splitlines() if re.search(r"= exp\b", line)]
    assert len(exps) == 5, exps
    assert [("approx" in line) for line in exps] == [True, True, False, False, True], exps


def test_cpu_exp_is_accurate_for_both():
    rng = np.random.default_rng(5)
    x = rng.uniform(-80, 80, 77).astype(np.float32)
    out = np.zeros(5 * x.size, np.float32)
    exps_kernel[(1,)](x, out, x.size, BLOCK=128)
    n = x.size
    for k, (shift, scale) in enumerate([(0, 1), (1, 1), (2, 1), (3, 1), (0, 0.5)]):
        want = np.exp((x + np.float32(shift)).astype(np.float64)) * scale
        np.testing.assert_allclose(out[k * n:(k + 1) * n], want, rtol=4 * 2.0 ** -23, err_msg=f"store {k}")


@pytest.mark.parametrize("arch", [80, 90])
def test_cuda_lowers_only_approx_exps_to_ex2(arch, tmp_path):
    text = compile_for_cuda(exps_kernel, "*fp32:16, *fp32:16, i32, 128", arch, tmp_path, emit="cuda,ptx")
    cuda = text[text.index("// ===== cuda ====="):text.index("// ===== ptx =====")]
    kernel = cuda[cuda.index("// ---- kernel ----"):]
    # x.exp() is tl.exp(x) after CSE.
    assert kernel.count("tg_exp_approx(") == 2, "tl.exp, tl.math.exp and x.exp() approximate"
    assert kernel.count("expf(") == 2, "libdevice.exp stays expf"
    ptx = text[text.index("// ===== ptx ====="):]
    assert "ex2.approx.ftz.f32" in ptx


def test_half_exp_is_approx_in_f32(tmp_path):
    text = compile_for_cuda(exp_kernel, "*fp16:16, *fp16:16, i32, 128", 90, tmp_path, emit="cuda")
    kernel = text[text.index("// ---- kernel ----"):]
    assert "tg_exp_approx(" in kernel
    text = compile_for_cuda(exp_kernel, "*fp64:16, *fp64:16, i32, 128", 90, tmp_path / "f64", emit="cuda")
    kernel = text[text.index("// ---- kernel ----"):]
    assert "tg_exp_approx(" not in kernel and "exp(" in kernel, "f64 stays accurate"


def test_exp_accuracy_over_the_range(backend):
    """Within 2^-17 relative over f32's range (the product x * log2(e) is
    rounded before ex2, so the error grows with |x|), exact at 0, inf above
    the range; a subnormal result is exact on the CPU and zero on CUDA."""
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.uniform(-87, 88.5, 4000), rng.uniform(-1, 1, 1000), [0.0, -100.0, 89.0, -95.0]])
    x = x.astype(np.float32)
    out = backend.zeros(x.size, np.float32)
    exp_kernel[(tegula.cdiv(x.size, 1024),)](backend.array(x), out, x.size, BLOCK=1024)
    got = backend.numpy(out).astype(np.float64)
    want = np.exp(x.astype(np.float64))
    normal = (want >= 2.0 ** -126) & (want <= np.finfo(np.float32).max)
    rel = np.abs(got[normal] - want[normal]) / want[normal]
    assert rel.max() < 2.0 ** -17, rel.max()
    assert got[-4] == 1.0 and np.isinf(got[-2])
    if backend.name == "cpu":
        assert 0 < got[-1] < 2.0 ** -126, "exp(-95) is subnormal"
    else:
        assert got[-1] == 0, "exp(-95) flushes to zero, as tl.exp2's subnormal results do"
    assert 0 <= got[-3] < 2.0 ** -140


@tegula.jit
def softmax_sigmoid_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.softmax(x))
    tl.store(out_ptr + BLOCK + offs, tl.softmax(x * 2.0, ieee_rounding=True))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.sigmoid(x))


@tegula.jit
def softmax_runtime_rounding_kernel(x_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.softmax(tl.load(x_ptr + offs), ieee_rounding=flag))


def test_softmax_and_sigmoid_use_tl_exp():
    """As Triton's standard library: softmax is exp(z) / sum with tl.exp and tl.fdiv (IEEE only with
    ieee_rounding=True), sigmoid 1 / (1 + tl.exp(-x)); the results stay exact on the CPU."""
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    out = np.zeros(3 * 64, np.float32)
    info = softmax_sigmoid_kernel.inspect(x, out, BLOCK=64)
    lines = info.stages["lowered"].splitlines()
    exps = [line for line in lines if re.search(r"= exp\b", line)]
    divs = [line for line in lines if re.search(r"= div\b", line)]
    assert len(exps) == 3 and all("approx" in line for line in exps), exps
    assert [("approx" in line) for line in divs] == [True, False, True], divs
    softmax_sigmoid_kernel[(1,)](x, out, BLOCK=64)
    for k, z in enumerate((x, x * 2)):
        e = np.exp(z.astype(np.float64) - z.max())
        np.testing.assert_allclose(out[k * 64:(k + 1) * 64], e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(out[128:], 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6)


def test_softmax_ieee_rounding_must_be_a_constant():
    x = np.ones(16, np.float32)
    with pytest.raises(tegula.CompilationError) as e:
        softmax_runtime_rounding_kernel[(1,)](x, True, BLOCK=16)
    assert e.value.code == "E0601"
    assert "ieee_rounding must be a constant bool" in str(e.value)
