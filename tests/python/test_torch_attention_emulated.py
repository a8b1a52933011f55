"""tegula.torch.ops.attention's kernels as the CUDA backend compiles them for
sm_90 with their CUDA launch configuration (attention_config's defaults),
run on the host through tests/python/cuda_emulator.py: forward, dK/dV and dQ
against a float64 reference on bf16 inputs whose sequence length no tile
divides (masked tails), causal and not, and on float32 inputs (train_gpt's
model on a GPU); and every loop of the three kernels pipelined in bf16. What a GPU run of the ops would compute, without a GPU.

Tolerances: the largest difference over the reference's largest magnitude,
2% for the output and 3% for the gradients (bf16 rounds each output, and
the probabilities and dS before their products), as tools/attention_sweep.py
checks against SDPA; float32 (products at "tf32x3", as the op asks on
CUDA) 1e-5 and 1e-4; the log-sum-exp to 1e-3 absolute (fp32 scores of exact bf16
products)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import tegula.language as tl  # noqa: E402
from cuda_emulator import emulate, require_emulator  # noqa: E402
from ops_util import np_dtype  # noqa: E402
from tegula.torch.ops import attention_config as ac  # noqa: E402

attention = importlib.import_module("tegula.torch.ops.attention")  # the module, not the function


def reference(q, k, v, do, scale, causal):
    """float64 (out, lse, dq, dk, dv) of softmax(q k^T * scale) v for [S, D] matrices."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = q @ k.T * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(axis=1, keepdims=True)))[:, 0]
    p = np.exp(s - lse[:, None])
    out = p @ v
    dp = do @ v.T
    ds = p * (dp - (do * out).sum(axis=1, keepdims=True))
    return out, lse, ds @ k * scale, ds.T @ q * scale, p.T @ do


def relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("D,causal,dtype", [(64, False, "bfloat16"), (64, True, "bfloat16"), (128, True, "bfloat16"),
                                            (64, True, "float32")])  # float32: train_gpt's attention on a GPU
def test_cuda_code_of_the_default_configuration_matches_the_reference(D, causal, dtype):
    require_emulator()
    S = 150 if D == 64 else 100  # no tile divides it
    rng = np.random.default_rng(D + causal)
    q, k, v, do = (rng.standard_normal((S, D)).astype(np_dtype(dtype)) for _ in range(4))
    scale = 1.0 / np.sqrt(D)
    want_out, want_lse, want_dq, want_dk, want_dv = reference(q, k, v, do, scale, causal)
    config = ac.default("cuda", D, dtype)
    # float32 products at "tf32x3" as the op chooses on CUDA (tegula.torch.dot_precision)
    meta = dict(HEAD_DIM=D, CAUSAL=causal, ACC=tl.float32, PRECISION="tf32x3" if dtype == "float32" else "ieee")

    def launch(kernel, tiles, rows_per_program, *args):
        return emulate(kernel, (-(-S // rows_per_program), 1), *args, num_warps=tiles.num_warps,
                       num_stages=tiles.num_stages, arch=90, BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, **meta)

    out, lse = np.zeros_like(q), np.zeros(S, np.float32)
    # One head: H = 1, each input's (batch, head, row) strides those of a contiguous [1, 1, S, D].
    strides = (S * D, S * D, D)
    fwd = launch(attention.attention_forward_kernel, config.fwd, config.fwd.block_m, q, k, v, out, lse, S, 1,
                 *strides * 4, scale)
    value_tolerance, grad_tolerance = (0.02, 0.03) if dtype == "bfloat16" else (1e-5, 1e-4)
    assert relative_error(out, want_out) <= value_tolerance
    assert np.abs(lse - want_lse).max() <= 1e-3

    # The backward from the forward's own output, as the op runs it.
    # dQ first: it stores delta = rowsum(dO * O), which the dK/dV kernel reads.
    delta = np.full(S, np.nan, np.float32)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    dq_kernel = launch(attention.attention_dq_kernel, config.dq, config.dq.block_m, q, k, v, do, out, lse, dq, delta,
                       S, 1, *strides * 5, scale)
    want_delta = (out.astype(np.float64) * do.astype(np.float64)).sum(axis=1)
    assert np.abs(delta - want_delta).max() <= 1e-4 * np.abs(want_delta).max() + 1e-6
    dkdv = launch(attention.attention_dkdv_kernel, config.dkdv, config.dkdv.block_n, q, k, v, do, lse, delta, dk,
                  dv, S, 1, *strides * 4, scale)
    for name, got, want in (("dq", dq, want_dq), ("dk", dk, want_dk), ("dv", dv, want_dv)):
        assert relative_error(got, want) <= grad_tolerance, name
    # Each kernel's loop runs as a software pipeline (cp.async into a ring of stages): its products run on
    # tensor cores, float32's as three TF32 products each.
    for compiled in (fwd, dkdv, dq_kernel):
        assert "// software pipeline:" in compiled.source
        assert ("tg_split_tf32(f" in compiled.source) == (dtype == "float32")  # a call, not the prelude's helper
