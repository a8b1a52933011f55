"""Grouped and block-pointer matmuls and a fused attention forward, against NumPy."""

import numpy as np
import pytest

from compat_kernels import matmul
from compat_kernels.matmul import triton
from compat_util import assert_close, randn


def matmul_inputs(rt, M, N, K):
    a = randn(30, M, K).astype(np.float16)
    b = randn(31, K, N).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return rt.array(a), rt.array(b), ref


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_grouped_matmul(rt, activation):
    M, N, K = 150, 70, 100
    a, b, ref = matmul_inputs(rt, M, N, K)
    c = rt.zeros((M, N), "float16")
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul.matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, ACTIVATION=activation)
    if activation:
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    assert_close(rt.numpy(c), ref, atol=2e-2, rtol=1e-2)


def test_block_pointer_matmul(rt):
    M, N, K = 90, 50, 70
    a, b, ref = matmul_inputs(rt, M, N, K)
    c = rt.zeros((M, N), "float16")
    matmul.matmul_block_ptr_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    assert_close(rt.numpy(c), ref, atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_forward(rt, causal):
    heads, seq, dim = 3, 50, 32
    q, k, v = (randn(32 + i, heads, seq, dim).astype(np.float16) for i in range(3))
    out = rt.zeros((heads, seq, dim), "float16")
    scale = dim ** -0.5
    matmul.attention_fwd_kernel[(triton.cdiv(seq, 32), heads)](
        rt.array(q), rt.array(k), rt.array(v), out, scale, seq, seq * dim, dim,
        HEAD_DIM=dim, BLOCK_M=32, BLOCK_N=16, CAUSAL=causal)
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * scale
    if causal:
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    ref = np.einsum("hqk,hkd->hqd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))
    assert_close(rt.numpy(out), ref, atol=1e-2, rtol=1e-2)
