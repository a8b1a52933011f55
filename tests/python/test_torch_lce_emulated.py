"""tegula.torch.ops.linear_cross_entropy's forward kernel as the CUDA backend
compiles it for sm_90 with the tiles it uses for 16-bit inputs on CUDA (64 x
64 x 64 on one warpgroup), run on the host through
tests/python/cuda_emulator.py: each (row block, vocabulary run)'s running
maximum, sum of exponentials and target logit against a float64 reference,
with row, vocabulary and C tails no tile divides."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import tegula.language as tl  # noqa: E402
from cuda_emulator import emulate, require_emulator  # noqa: E402

lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")  # the module, not the function


def test_cuda_forward_kernel_matches_the_reference():
    require_emulator()
    import ml_dtypes
    M, V, C = 70, 150, 136  # every block size ends in a masked tail
    rng = np.random.default_rng(7)
    bf16 = ml_dtypes.bfloat16
    x = (rng.standard_normal((M, C)) * 0.5).astype(bf16)
    w = (rng.standard_normal((V, C)) * 0.5).astype(bf16)
    targets = rng.integers(0, V, M).astype(np.int64)
    t = lce.CUDA_TILES
    runs, per_run = 2, 128  # two vocabulary runs, the second short (22 columns)
    parts = np.zeros((3, runs, M), np.float32)
    compiled = emulate(lce.linear_cross_entropy_forward_kernel, (-(-M // t.block_m), runs), x, w, targets,
                       parts[0], parts[1], parts[2], M, V, C, per_run, num_warps=t.num_warps, arch=90,
                       BLOCK_M=t.block_m, BLOCK_V=t.block_v, BLOCK_C=t.block_c, ACC=tl.float32, PRECISION="ieee")
    assert "tensor cores" in compiled.source
    logits = x.astype(np.float64) @ w.astype(np.float64).T
    for run in range(runs):
        part = logits[:, run * per_run:(run + 1) * per_run]
        top = part.max(axis=1)
        np.testing.assert_allclose(parts[0, run], top, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(parts[1, run], np.exp(part - top[:, None]).sum(axis=1), rtol=1e-4)
        inside = (targets >= run * per_run) & (targets < (run + 1) * per_run)
        want = np.where(inside, logits[np.arange(M), targets], 0.0)
        np.testing.assert_allclose(parts[2, run], want, rtol=1e-4, atol=1e-4)
