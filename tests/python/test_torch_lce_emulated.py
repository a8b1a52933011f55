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
