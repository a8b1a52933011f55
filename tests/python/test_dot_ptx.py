"""The PTX of tl.dot on the CUDA backend, without a GPU: which tensor-core
instruction each operand type and input precision takes, and that the
loads of the operands and the store of the result are vector accesses
(what Triton's own tests check in `kernel.asm["ptx"]`). NVRTC compiles the
generated CUDA here; the numbers are checked in test_tensor_cores.py.
"""

from __future__ import annotations

import re

import pytest

import tegula
import tegula.language as tl
from cuda_compile_util import compile_for_cuda


@tegula.jit
def dot_store_kernel(x_ptr, sxm, sxk, y_ptr, syk, syn, z_ptr, szm, szn, M: tl.constexpr, N: tl.constexpr,
                     K: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    # z = x @ y for one tile, every operand at runtime strides (a stride of 1
    # and strides divisible by 16 are specialized, as at launch).
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk)
    y = tl.load(y_ptr + rk[:, None] * syk + rn[None, :] * syn)
    z = tl.dot(x, y, input_precision=PRECISION, out_dtype=OUT)
    tl.store(z_ptr + rm[:, None] * szm + rn[None, :] * szn, z)


def stride(v: int) -> str:
    return "i32:1" if v == 1 else "i32:16"


def ptx_of(arch, tmp_path, M, N, K, warps, dtype, precision="ieee", out="fp32", z_dtype=None,
           a_cols=False, b_cols=False, z_cols=False):
    """The PTX of dot_store_kernel for one case: `*_cols` put that matrix in
    column-major order (its stride 1 along the rows)."""
    sx = (1, M) if a_cols else (K, 1)
    sy = (1, K) if b_cols else (N, 1)
    sz = (1, M) if z_cols else (N, 1)
    sig = ",".join([f"*{dtype}:16", *map(stride, sx), f"*{dtype}:16", *map(stride, sy),
                    f"*{z_dtype or out}:16", *map(stride, sz), str(M), str(N), str(K), f"'{precision}'", out])
    text = compile_for_cuda(dot_store_kernel, sig, arch, tmp_path, emit="ptx", num_warps=warps)
    return text


MMA = r"(?:mma|wgmma\.mma_async)\.sync\.aligned\.m\d+n\d+"


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("precision,instruction", [
    ("tf32", MMA + r"k8(?:\.row\.col)?\.f32\.tf32\.tf32"),
    ("tf32x3", MMA + r"k8(?:\.row\.col)?\.f32\.tf32\.tf32"),
    ("bf16x3", MMA + r"k16(?:\.row\.col)?\.f32\.bf16\.bf16"),
    ("bf16x6", MMA + r"k16(?:\.row\.col)?\.f32\.bf16\.bf16"),
])
@pytest.mark.parametrize("shape", [(16, 16, 16, 4), (64, 64, 64, 4), (64, 128, 32, 8)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp32_precisions_take_tensor_cores(arch, precision, instruction, shape, tmp_path):
    M, N, K, warps = shape
    ptx = ptx_of(arch, tmp_path, M, N, K, warps, "fp32", precision)
    assert re.search(instruction, ptx), f"no {instruction} for fp32 at {precision}"
    # Each (row tile, column tile, K step) takes 1, 3 or 6 products.
    products = len(re.findall(r"mma\.sync\.aligned", ptx))
    assert products % {"tf32": 1, "tf32x3": 3, "bf16x3": 3, "bf16x6": 6}[precision] == 0, products


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("shape", [(16, 16, 16, 4), (64, 64, 64, 4), (128, 128, 64, 8)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp16_result_accumulates_in_fp16(arch, shape, tmp_path):
    M, N, K, warps = shape
    ptx = ptx_of(arch, tmp_path, M, N, K, warps, "fp16", out="fp16")
    assert re.search(MMA + r"k16(?:\.row\.col)?\.f16\.f16\.f16", ptx)
    assert not re.search(MMA + r"k16(?:\.row\.col)?\.f32\.f16\.f16", ptx)


@pytest.mark.parametrize("arch", [80, 90])
def test_int8_dot_saturates(arch, tmp_path):
    ptx = ptx_of(arch, tmp_path, 64, 64, 64, 4, "i8", out="i32")
    assert "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32" in ptx


@pytest.mark.parametrize("dtype,out,z_dtype", [("fp32", "fp32", "fp32"), ("fp16", "fp32", "fp16"),
                                               ("fp16", "fp16", "fp16")])
@pytest.mark.parametrize("layout", ["rows", "z_cols", "a_cols", "b_cols"])
@pytest.mark.parametrize("shape", [(32, 32, 32, 4), (64, 128, 128, 4), (64, 64, 64, 4)],
                         ids=lambda s: "x".join(map(str, s)))
def test_operand_loads_and_result_store_are_vectors(dtype, out, z_dtype, layout, shape, tmp_path):
    M, N, K, warps = shape
    for precision in (["tf32", "ieee"] if dtype == "fp32" else ["ieee"]):
        ptx = ptx_of(90, tmp_path, M, N, K, warps, dtype, precision, out, z_dtype,
                     a_cols=layout == "a_cols", b_cols=layout == "b_cols", z_cols=layout == "z_cols")
        assert "ld.global.v4" in ptx, f"{layout} {precision}: operand loads not 16-byte vectors"
        assert "st.global.v4" in ptx, f"{layout} {precision}: result store not 16-byte vectors"


@tegula.jit
def dot_scaled_kernel(a_ptr, sa0, sa1, scale_ptr, b_ptr, sb0, sb1, out_ptr, M: tl.constexpr, N: tl.constexpr,
                      K: tl.constexpr, A_TYPE: tl.constexpr, B_TYPE: tl.constexpr):
    # out = dot_scaled(a, scale, b) for one tile, a an fp8 (or packed fp4)
    # [M, K] with one e8m0 scale per 32 of K, b a 16-bit [K, N].
    KA: tl.constexpr = K // 2 if A_TYPE == "e2m1" else K
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * sa0 + tl.arange(0, KA)[None, :] * sa1)
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * sb0 + tl.arange(0, N)[None, :] * sb1)
    scale = tl.load(scale_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, scale, A_TYPE, b, None, B_TYPE)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c.to(out_ptr.dtype.element_ty))


@pytest.mark.parametrize("a_type,b_type", [("e4m3", "fp16"), ("e5m2", "bf16"), ("e2m1", "bf16")])
@pytest.mark.parametrize("a_cols,b_cols", [(False, False), (True, True), (True, False)])
@pytest.mark.parametrize("shape", [(64, 128, 64), (128, 128, 128), (32, 64, 64)], ids=lambda s: "x".join(map(str, s)))
def test_dot_scaled_operands_and_result_are_vectors(a_type, b_type, a_cols, b_cols, shape, tmp_path):
    M, N, K = shape
    ka = K // 2 if a_type == "e2m1" else K
    b = "fp16" if b_type == "fp16" else "bf16"
    sa = (1, M) if a_cols else (ka, 1)
    sb = (1, K) if b_cols else (N, 1)
    sig = ",".join(["*u8:16", *map(stride, sa), "*u8:16", f"*{b}:16", *map(stride, sb), f"*{b}:16", str(M), str(N),
                    str(K), f"'{a_type}'", f"'{b_type}'"])
    ptx = compile_for_cuda(dot_scaled_kernel, sig, 90, tmp_path, emit="ptx", num_warps=4)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx
    assert re.search(MMA + r"k16(?:\.row\.col)?\.f32\.(?:f|bf)16\.(?:f|bf)16", ptx)
