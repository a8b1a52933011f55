"""Fused softmax (tutorial 02) and cross-entropy forward and backward, against NumPy."""

import numpy as np
import pytest

from compat_kernels import softmax
from compat_kernels.softmax import triton
from compat_util import assert_close, randn, rng


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("n_rows, n_cols", [(37, 781), (5, 64)])
def test_fused_softmax(rt, n_rows, n_cols):
    x = randn(10, n_rows, n_cols) * 4
    out = rt.zeros((n_rows, n_cols), "float32")
    block = triton.next_power_of_2(n_cols)
    programs = min(n_rows, 8)  # fewer programs than rows: the loop strides
    softmax.softmax_kernel[(programs,)](out, rt.array(x), n_cols, n_cols, n_rows, n_cols,
                                        BLOCK_SIZE=block, NUM_STAGES=2)
    assert_close(rt.numpy(out), softmax_ref(x), atol=1e-6, rtol=1e-5)


def test_softmax_builtin_and_keep_dims(rt):
    n_rows, n_cols = 10, 100
    x = randn(14, n_rows, n_cols) * 3
    out = rt.zeros((n_rows, n_cols), "float32")
    softmax.softmax_builtin_kernel[(n_rows,)](out, rt.array(x), n_cols, n_cols, BLOCK=128)
    assert_close(rt.numpy(out), softmax_ref(x), atol=1e-6, rtol=1e-5)
    out = rt.zeros((n_rows, n_cols), "float32")
    softmax.softmax_rows_keep_dims_kernel[(triton.cdiv(n_rows, 4),)](out, rt.array(x), n_rows, n_cols,
                                                                     BLOCK_R=4, BLOCK_C=128)
    assert_close(rt.numpy(out), softmax_ref(x), atol=1e-6, rtol=1e-5)


def cross_entropy_inputs(rt, n_rows, vocab, dtype, ignore_index):
    logits = randn(11, n_rows, vocab) * 3
    targets = rng(12).integers(0, vocab, n_rows).astype(np.int64)
    targets[::5] = ignore_index
    x = rt.array(logits, dtype)
    return x, rt.numpy(x).astype(np.float64), targets


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cross_entropy_forward_and_backward(rt, dtype):
    n_rows, vocab, ignore_index = 19, 1000, -100
    x, logits, targets = cross_entropy_inputs(rt, n_rows, vocab, dtype, ignore_index)
    t = rt.array(targets)
    loss, lse = rt.zeros(n_rows, "float32"), rt.zeros(n_rows, "float32")
    softmax.cross_entropy_fwd_kernel[(n_rows,)](x, t, loss, lse, vocab, vocab, ignore_index, BLOCK=256)

    m = logits.max(axis=1, keepdims=True)
    lse_ref = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
    kept = targets != ignore_index
    loss_ref = np.where(kept, lse_ref - logits[np.arange(n_rows), np.where(kept, targets, 0)], 0.0)
    assert_close(rt.numpy(lse), lse_ref, atol=1e-5, rtol=1e-5)
    assert_close(rt.numpy(loss), loss_ref, atol=1e-5, rtol=1e-5)

    dloss = rng(13).random(n_rows).astype(np.float32)
    dlogits = rt.zeros((n_rows, vocab), dtype)
    softmax.cross_entropy_bwd_kernel[(n_rows,)](x, t, lse, rt.array(dloss), dlogits, vocab, vocab,
                                                ignore_index, BLOCK=256)
    grad_ref = softmax_ref(logits)
    grad_ref[np.arange(n_rows), np.where(kept, targets, 0)] -= kept
    grad_ref *= np.where(kept, dloss, 0)[:, None]
    tol = 1e-6 if dtype == "float32" else 4e-3
    assert_close(rt.numpy(dlogits), grad_ref, atol=tol, rtol=1e-2 if dtype == "bfloat16" else 1e-5)
