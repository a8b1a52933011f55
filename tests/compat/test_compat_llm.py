"""Rotary embeddings, SwiGLU forward and backward, and the embedding lookup
and its scatter-add backward, against NumPy."""

import numpy as np
import pytest

from compat_kernels import llm
from compat_kernels.llm import triton
from compat_util import assert_close, randn, rng


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rotary_embedding(rt, dtype):
    tokens, heads, half, max_pos = 13, 5, 24, 64
    x = randn(50, tokens, heads, 2 * half).astype(dtype)
    pos = rng(51).integers(0, max_pos, tokens).astype(np.int32)
    inv_freq = 10000.0 ** (-np.arange(half) / half)
    angles = np.arange(max_pos)[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    out = rt.zeros(x.shape, dtype)
    llm.rope_kernel[(tokens,)](rt.array(x), out, rt.array(cos), rt.array(sin), rt.array(pos), heads,
                               heads * 2 * half, 2 * half, half, HALF=half, BLOCK_H=8, BLOCK_D=32)
    x64 = x.astype(np.float64)
    x1, x2 = x64[..., :half], x64[..., half:]
    c, s = cos[pos][:, None, :], sin[pos][:, None, :]
    ref = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    tol = 1e-5 if dtype == "float32" else 2e-3
    assert_close(rt.numpy(out), ref, atol=tol, rtol=tol)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_swiglu_forward_and_backward(rt, dtype):
    rows, cols, block = 7, 1100, 512
    gate_d, up_d, dout_d = (rt.array(randn(52 + i, rows, cols) * 2, dtype) for i in range(3))
    gate, up, dout = (rt.numpy(a).astype(np.float64) for a in (gate_d, up_d, dout_d))
    grid = (rows, triton.cdiv(cols, block))
    out = rt.zeros((rows, cols), dtype)
    llm.swiglu_fwd_kernel[grid](gate_d, up_d, out, cols, cols, BLOCK=block)
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert_close(rt.numpy(out), gate * sigmoid(gate) * up, atol=tol, rtol=tol)

    dgate, dup = rt.zeros((rows, cols), dtype), rt.zeros((rows, cols), dtype)
    llm.swiglu_bwd_kernel[grid](dout_d, gate_d, up_d, dgate, dup, cols, cols, BLOCK=block)
    sig = sigmoid(gate)
    assert_close(rt.numpy(dup), dout * gate * sig, atol=tol, rtol=tol)
    assert_close(rt.numpy(dgate), dout * up * sig * (1 + gate * (1 - sig)), atol=tol, rtol=tol)


def test_embedding_forward_and_backward(rt):
    vocab, dim, tokens = 50, 96, 203
    weight = randn(55, vocab, dim)
    ids = rng(56).integers(0, vocab, tokens).astype(np.int64)  # ids repeat: the backward must add
    grid = (triton.cdiv(tokens, 16), triton.cdiv(dim, 64))
    out = rt.zeros((tokens, dim), "float32")
    ids_d = rt.array(ids)
    llm.embedding_fwd_kernel[grid](ids_d, rt.array(weight), out, tokens, dim, BLOCK_T=16, BLOCK_D=64)
    np.testing.assert_array_equal(rt.numpy(out), weight[ids])

    dout = randn(57, tokens, dim)
    dweight = rt.zeros((vocab, dim), "float32")
    llm.embedding_bwd_kernel[grid](ids_d, rt.array(dout), dweight, tokens, dim, BLOCK_T=16, BLOCK_D=64)
    ref = np.zeros((vocab, dim))
    np.add.at(ref, ids, dout.astype(np.float64))
    assert_close(rt.numpy(dweight), ref, atol=1e-5, rtol=1e-5)
