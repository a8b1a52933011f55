"""tegula.torch.ops.linear_cross_entropy's row kernels as the CUDA backend
compiles them for sm_90, run on the host through tests/python/cuda_emulator.py
on a bf16 chunk of logits whose width no block divides: the chunk's
log-sum-exp and target logit, then the in-place dlogits, against float64
references."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import tegula.language as tl  # noqa: E402
from cuda_emulator import emulate, require_emulator  # noqa: E402

lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")  # the module, not the function


def test_cuda_row_kernels_match_the_reference():
    require_emulator()
    import ml_dtypes
    M, width, v0 = 6, 1500, 512  # the chunk holds columns 512 .. 2011; blocks of 1024 end in a tail
    rng = np.random.default_rng(7)
    bf16 = ml_dtypes.bfloat16
    logits = (rng.standard_normal((M, width)) * 3).astype(bf16)
    targets = np.array([512, 2011, 100, 3000, -100, 1700], np.int64)  # first, last, before, after, ignored
    lse_part, target_part = np.zeros(M, np.float32), np.zeros(M, np.float32)
    meta = dict(BLOCK_V=lce._block_v(width), ACC=tl.float32)
    emulate(lce.linear_cross_entropy_chunk_kernel, (M,), logits, targets, lse_part, target_part, width, v0,
            num_warps=4, arch=90, **meta)
    exact = logits.astype(np.float64)
    top = exact.max(axis=1)
    np.testing.assert_allclose(lse_part, top + np.log(np.exp(exact - top[:, None]).sum(axis=1)), rtol=1e-5)
    inside = (targets >= v0) & (targets < v0 + width)
    picked = exact[np.arange(M), np.clip(targets - v0, 0, width - 1)]
    np.testing.assert_allclose(target_part, np.where(inside, picked, 0.0), rtol=1e-6)

    lse = (lse_part + 0.5).astype(np.float32)  # a row's whole log-sum-exp exceeds its chunk's
    dloss = rng.standard_normal(M).astype(np.float32)
    dlogits = logits.copy()
    emulate(lce.linear_cross_entropy_dlogits_kernel, (M,), dloss, dlogits, targets, lse, width, v0, -100,
            num_warps=4, arch=90, **meta)
    onehot = (np.arange(v0, v0 + width)[None, :] == targets[:, None])
    scale = np.where(targets != -100, dloss, 0.0)[:, None]
    want = (np.exp(exact - lse[:, None]) - onehot) * scale
    np.testing.assert_allclose(dlogits.astype(np.float64), want, rtol=1e-2, atol=1e-3)
    assert not dlogits[4].astype(np.float64).any()  # the ignored row


def test_cuda_kernels_of_the_mean_loss_with_gradients_match_the_reference():
    # linear_cross_entropy_with_grads' kernels: the count of rows not ignored over blocks with a tail, each
    # row's loss and in-place gradient over whole rows of a width no block divides, the mean, and the
    # backward's scaling in float32 with one rounding to bf16.
    require_emulator()
    import ml_dtypes
    M, V = 1100, 1500  # the one-program kernels' 1024 lanes end in a tail of 76 rows
    rng = np.random.default_rng(8)
    bf16 = ml_dtypes.bfloat16
    targets = rng.integers(0, V, M).astype(np.int64)
    targets[[0, 7, M - 1]] = -100
    targets[[1, 2]] = [0, V - 1]
    counts = np.zeros(2, np.float32)
    emulate(lce.linear_cross_entropy_count_kernel, (1,), targets, counts, M, -100, BLOCK=lce._ONE_PROGRAM_BLOCK,
            num_warps=4, arch=90)
    np.testing.assert_array_equal(counts, np.array([M - 3, np.float32(1) / np.float32(M - 3)], np.float32))

    rows = 6  # the row kernel on the first rows
    logits = (rng.standard_normal((rows, V)) * 3).astype(bf16)
    exact = logits.astype(np.float64)
    losses = np.full(M, np.nan, np.float32)
    emulate(lce.linear_cross_entropy_rows_kernel, (rows,), logits, targets, losses, counts, V, -100,
            BLOCK_V=lce._block_v(V), ACC=tl.float32, num_warps=4, arch=90)
    top = exact.max(axis=1)
    lse = top + np.log(np.exp(exact - top[:, None]).sum(axis=1))
    keep = targets[:rows] != -100
    picked = exact[np.arange(rows), np.where(keep, targets[:rows], 0)]
    np.testing.assert_allclose(losses[:rows], np.where(keep, lse - picked, 0.0), rtol=1e-5, atol=1e-5)
    onehot = np.arange(V)[None, :] == targets[:rows, None]
    want = (np.exp(exact - lse[:, None]) - onehot) * np.where(keep, 1 / (M - 3), 0.0)[:, None]
    np.testing.assert_allclose(logits.astype(np.float64), want, rtol=1e-2, atol=1e-7)
    assert not logits[0].astype(np.float64).any()  # the ignored row

    losses = rng.random(M).astype(np.float32) * np.where(targets != -100, 1, 0).astype(np.float32)
    loss = np.zeros(1, np.float32)
    emulate(lce.linear_cross_entropy_mean_kernel, (1,), losses, counts, loss, M, BLOCK=lce._ONE_PROGRAM_BLOCK,
            num_warps=4, arch=90)
    np.testing.assert_allclose(loss[0], losses.astype(np.float64).sum() / (M - 3), rtol=1e-6)

    grads = rng.standard_normal(3001).astype(bf16)  # two blocks and a tail
    scaled = np.zeros_like(grads)
    dloss = np.array([1 / 3], np.float32)
    emulate(lce.linear_cross_entropy_scale_kernel, (2,), grads, scaled, dloss, grads.size, BLOCK=lce._SCALE_BLOCK,
            num_warps=4, arch=90)
    np.testing.assert_array_equal(scaled, (grads.astype(np.float32) * dloss[0]).astype(bf16))
