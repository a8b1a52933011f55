"""Attention through descriptors (tegula/torch/ops/attention_tma.py) in the host CUDA emulator, as sm_90
compiles it: TMA rings fed by a producer warpgroup, the last product issued one iteration late; in the backward
the blocks read both ways (Q, dO; K) copied once. Gradients against float64 NumPy on ragged sequences (the last blocks
read the next head's rows), causal and not. On a GPU, tests/python/test_torch_attention*.py run the op."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("torch")

from cuda_emulator import emulate, require_emulator  # noqa: E402

from tegula.torch.ops import attention_tma as at  # noqa: E402


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


def _bf16():
    import ml_dtypes

    return ml_dtypes.bfloat16


def reference(q, k, v, do, causal, scale):
    """lse, delta and the float64 gradients (dq, dk, dv) of softmax(q k^T * scale) v."""
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    S = q.shape[2]
    if causal:
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lse = (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
    p = np.exp(s - lse[..., None])
    o = p @ v
    delta = (do * o).sum(-1)
    dv = np.einsum("bhqk,bhqd->bhkd", p, do)
    dp = do @ np.swapaxes(v, -1, -2)
    ds = p * (dp - delta[..., None])
    dq = ds @ k * scale
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q) * scale
    return lse, delta, dq, dk, dv


def output(q, k, v, causal, scale):
    """softmax(q k^T * scale) v in float64: the forward's output, from which the dQ kernel computes delta."""
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def stored(x, layout):
    """x [B, H, S, D] stored as the kernels may find it, and its rows_view: "bhsd" contiguous, "bshd" as
    [B, S, H, D] (q and k after a rotary embedding of [B, T, H, D], seen as [B, H, T, D]), "qkv" as one of
    three [B, S, 3, H, D] projections (v split from a fused projection; the store holds the first)."""
    B, H, S, D = x.shape
    if layout == "bhsd":
        return x, at.rows_view(x.shape, (H * S * D, S * D, D, 1), 2)
    if layout == "bshd":
        return np.ascontiguousarray(np.swapaxes(x, 1, 2)), at.rows_view(x.shape, (S * H * D, D, H * D, 1), 2)
    store = np.zeros((B, S, 3, H, D), x.dtype)
    store[:, :, 0] = np.swapaxes(x, 1, 2)
    return store, at.rows_view(x.shape, (S * 3 * H * D, D, 3 * H * D, 1), 2)


def unrotated(g, cos, sin):
    """The gradient of rows before rotary_embedding's rotation from the gradient g of the rotated rows ([B, H, S,
    D]; cos, sin [S, D/2]): the halves x1, x2 became x1 c - x2 s and x2 c + x1 s."""
    half = g.shape[-1] // 2
    g1, g2 = g[..., :half], g[..., half:]
    return np.concatenate([g1 * cos + g2 * sin, g2 * cos - g1 * sin], axis=-1)


@pytest.mark.parametrize("B,H,S,D,causal,stages,ahead,rotary,dp_first", [
    (1, 2, 200, 64, False, 2, False, False, False),  # ragged: the last blocks reach into the next head
    (1, 2, 200, 64, True, 3, True, False, False),    # causal, ragged; the log-sum-exp loaded a block ahead
    (2, 1, 256, 32, True, 2, False, False, False),   # whole blocks, 64-byte rows
    (1, 2, 200, 64, False, 3, True, False, False),
    (1, 2, 200, 64, True, 3, True, True, False),     # rotary_attention's: dq, dk, dv into a [B, S, 3, H, D], rotated back
    (2, 2, 128, 32, False, 2, False, True, False),
    (1, 2, 200, 64, True, 3, True, True, True),      # the second score product issued first, in both kernels
    (1, 2, 200, 128, False, 3, False, False, True),
])
def test_backward_kernels_match_float64(B, H, S, D, causal, stages, ahead, rotary, dp_first):
    rng = np.random.default_rng(S + D + causal)
    bf16 = _bf16()
    q, k, v, do = (rng.standard_normal((B, H, S, D)).astype(bf16) for _ in range(4))
    scale = 1.0 / D ** 0.5
    f64 = [x.astype(np.float64) for x in (q, k, v, do)]
    lse, want_delta, want_dq, want_dk, want_dv = reference(*f64, causal, scale)
    lse = lse.astype(np.float32)
    # The forward's output as the op stores it for q of [B, S, H, D]: [B, S, H, D] seen as [B, H, S, D].
    out = np.ascontiguousarray(np.swapaxes(output(*f64[:3], causal, scale).astype(bf16), 1, 2))
    out_strides = (S * H * D, D, H * D)
    delta = np.full((B, H, S), np.nan, np.float32)  # the dQ kernel stores all of it
    if rotary:  # every gradient in its slot of one [B, S, 3, H, D] (NaN where nothing is stored), dq, dk rotated back
        angles = rng.uniform(0, 2 * np.pi, (S, D // 2))
        cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        want_dq, want_dk = unrotated(want_dq, cos, sin), unrotated(want_dk, cos, sin)
        dqkv = np.full((B, S, 3, H, D), np.nan, np.float32).astype(bf16)
        dq = dk = dv = dqkv
        slots = (S * 3 * H * D, D, 3 * H * D)
        grads = (slots, slots, H * D, 2 * H * D)
    else:
        cos = sin = None
        dq, dk, dv = (np.zeros_like(q) for _ in range(3))
        grads = ((H * S * D, S * D, D), (H * S * D, S * D, D), 0, 0)
    # Read in place through rows_view: q, dO as [B, S, H, D], k contiguous, v one third of a fused projection.
    (q, vq), (k, vk), (v, vv), (do, vdo) = (stored(x, l) for x, l in zip((q, k, v, do), ("bshd", "bhsd", "qkv", "bshd")))
    dq_launch, dkdv_launch = at.backward_launches((vq, vk, vv, vdo), (B, H, S, D), out_strides, grads, causal, scale,
                                                  ((128, 64, 8, stages, dp_first),
                                                   (64, 128, 8, stages, ahead, dp_first)))
    assert dq_launch[2]["DP_FIRST"] == dkdv_launch[2]["DP_FIRST"] == dp_first
    assert dq_launch[0] == (-(-S // 128), B * H) and dkdv_launch[0] == (-(-S // 128), B * H)
    dqk = emulate(at.attention_dq_tma_kernel, dq_launch[0], q, k, v, do, out, lse, dq, delta, *dq_launch[1], cos, sin,
                  **dq_launch[2])
    assert np.abs(delta - want_delta).max() <= 2e-2 * np.abs(want_delta).max()
    dkdv = emulate(at.attention_dkdv_tma_kernel, dkdv_launch[0], q, k, v, do, lse, delta, dk, dv, *dkdv_launch[1],
                   cos, sin, **dkdv_launch[2])
    if rotary:
        dq, dk, dv = (np.swapaxes(dqkv[:, :, i], 1, 2) for i in range(3))
    for compiled in (dkdv, dqk):
        # Two ring blocks per stage (each read both ways by two dots), fed by the producer, the last dot late.
        assert compiled.layouts.count("TMA ring through") == 2, compiled.layouts
        assert "fed by a producer warpgroup" in compiled.layouts, compiled.layouts
        assert "one iteration late" in compiled.layouts, compiled.layouts
    for name, got, want in (("dq", dq, want_dq), ("dk", dk, want_dk), ("dv", dv, want_dv)):
        got = got.astype(np.float64)
        error = np.abs(got - want).max() / np.abs(want).max()
        assert error < 2e-2, f"{name}: largest difference {error:.3g} of the largest magnitude"


def test_tables_choose_tiles_by_causality(monkeypatch):
    # An entry of one tuple holds for both kinds of attention; a pair of tuples gives each its own.
    monkeypatch.setitem(at.DQ, 64, ((128, 128, 8, 3), (128, 64, 8, 3, True)))
    monkeypatch.setitem(at.DKDV, 64, (64, 128, 8, 3, True, True))
    view = (400, 64, 64, 200, 0, 0)
    grads = ((200 * 64 * 2, 200 * 64, 64), (200 * 64 * 2, 200 * 64, 64), 0, 0)
    for causal, block_n in ((False, 128), (True, 64)):
        dq, dkdv = at.backward_launches((view,) * 4, (1, 2, 200, 64), (200 * 64 * 2, 200 * 64, 64), grads, causal,
                                        0.125, (at.DQ[64], at.DKDV[64]))
        assert dq[0] == (2, 2) and dq[2]["BLOCK_N"] == block_n and dq[2]["DP_FIRST"] is causal
        assert dkdv[2]["DP_FIRST"] is True and dkdv[2]["AHEAD"] is True


@pytest.mark.parametrize("B,H,S,D,bm,causal,stages,dq_rows", [
    (1, 2, 200, 128, 64, False, 2, False),  # ragged: keys past S belong to the next head and add nothing to dQ
    (1, 2, 200, 128, 64, True, 3, True),    # dQ^T transposed back before its atomics
    (1, 1, 300, 64, 128, True, 2, True),
])
def test_one_kernel_backward_matches_float64(B, H, S, D, bm, causal, stages, dq_rows):
    # attention_bwd_tma_kernel: the dK/dV loop adding dQ by atomics, the dS^T operand staged in every step, then
    # scale_cast_kernel.
    rng = np.random.default_rng(S + D + causal + 7)
    bf16 = _bf16()
    q, k, v, do = (rng.standard_normal((B, H, S, D)).astype(bf16) for _ in range(4))
    scale = 1.0 / D ** 0.5
    lse, delta, want_dq, want_dk, want_dv = reference(*(x.astype(np.float64) for x in (q, k, v, do)), causal, scale)
    lse, delta = lse.astype(np.float32), delta.astype(np.float32)
    dq32 = np.zeros((B, H, S, D), np.float32)
    dq, dk, dv = (np.zeros_like(q) for _ in range(3))
    (q, vq), (k, vk), (v, vv), (do, vdo) = (stored(x, l) for x, l in zip((q, k, v, do), ("bshd", "bshd", "qkv", "bhsd")))
    compiled = emulate(at.attention_bwd_tma_kernel, (-(-S // 128), B * H), q, k, v, do, lse, delta, dq32, dk, dv,
                       *vq, *vk, *vv, *vdo, H, S, scale, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=128, CAUSAL=causal, TAIL=S % 128 != 0,
                       DQ_ROWS=dq_rows, num_warps=8, num_stages=stages)
    assert compiled.layouts.count("TMA ring through") == 2, compiled.layouts
    assert "fed by a producer warpgroup" in compiled.layouts and "one iteration late" in compiled.layouts
    if dq_rows:  # along dQ's rows, four consecutive floats per vector reduction
        assert "tg_red_add_f32x4<tg_relaxed, tg_gpu>" in compiled.source
    emulate(at.scale_cast_kernel, (-(-dq32.size // 4096),), dq32, dq, dq32.size, scale, BLOCK=4096, num_warps=8)
    for name, got, want in (("dq", dq, want_dq), ("dk", dk, want_dk), ("dv", dv, want_dv)):
        error = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
        assert error < 2e-2, f"{name}: largest difference {error:.3g} of the largest magnitude"


def one_kernel_backward(B, H, S, D, bm, bn, warps, causal, stages, seed, **variant):
    """attention_bwd_tma_kernel's DQ32 (and dk, dv) at one configuration, the float64 reference and the
    CompiledKernel."""
    rng = np.random.default_rng(seed)
    bf16 = _bf16()
    q, k, v, do = (rng.standard_normal((B, H, S, D)).astype(bf16) for _ in range(4))
    scale = 1.0 / D ** 0.5
    want = reference(*(x.astype(np.float64) for x in (q, k, v, do)), causal, scale)
    lse, delta = want[0].astype(np.float32), want[1].astype(np.float32)
    dq32 = np.zeros((B, H, S, D), np.float32)
    dk, dv = np.zeros_like(q), np.zeros_like(q)
    (q, vq), (k, vk), (v, vv), (do, vdo) = (stored(x, l) for x, l in zip((q, k, v, do), ("bshd", "bhsd", "qkv", "bhsd")))
    compiled = emulate(at.attention_bwd_tma_kernel, (-(-S // bn), B * H), q, k, v, do, lse, delta, dq32, dk, dv,
                       *vq, *vk, *vv, *vdo, H, S, scale, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                       TAIL=S % bn != 0, num_warps=warps, num_stages=stages, **variant)
    return compiled, dq32 * scale, dk, dv, want[2:]


def max_error(got, want):
    return np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()


@pytest.mark.parametrize("B,H,S,D,bm,bn,warps,causal", [
    (1, 2, 200, 64, 128, 128, 8, False),  # the probe's DQ_TMA candidates: 128 x 128 at D 64,
    (1, 2, 200, 64, 128, 128, 8, True),
    (1, 2, 200, 64, 64, 128, 4, True),    # 64 x 128 at D 64 (one consumer warpgroup: 8 warps form no ring)
    (2, 1, 200, 64, 64, 128, 4, False),
    (1, 2, 200, 128, 64, 128, 8, False),  # 64 x 128 at D 128
    (1, 2, 200, 128, 64, 128, 8, True),
    (1, 2, 200, 64, 64, 64, 4, True),     # --short's
])
def test_one_kernel_backward_reduces_dq_through_tma(B, H, S, D, bm, bn, warps, causal):
    # DQ_TMA: each step's dQ block (dq_t.T, staged from dq_t's registers) is reduced into DQ32, seen as the
    # [B * H * S, D] matrix, by the TMA. S = 200 is no multiple of the blocks: the last query block's rows past S
    # are the next head's (zeroed, they add nothing there) or past the matrix (the TMA leaves them alone).
    tma, dq, dk, dv, (want_dq, want_dk, want_dv) = one_kernel_backward(
        B, H, S, D, bm, bn, warps, causal, 2, S + D + causal, DQ_TMA=True, DQ32_ROWS=B * H * S)
    assert tma.layouts.count("TMA ring through") == 2, tma.layouts
    assert "fed by a producer warpgroup" in tma.layouts and "one iteration late" in tma.layouts, tma.layouts
    assert re.search(r"desc_atomic at .*attention_tma.py:\d+:\d+: TMA through tg_map\d", tma.layouts), tma.layouts
    kernel = tma.source[tma.source.index("---- kernel ----"):]
    assert "tg_tma_reduce_add_2d" in kernel and "tg_atom_add" not in kernel and "tg_red_add" not in kernel
    assert "stages the operand's registers transposed" in kernel, "dq_t.T went through shared memory twice"
    # Nothing in the loop waits for the reductions' writes: the loop reads LSE and DELTA, not DQ32.
    assert "TMA reductions, written" not in kernel
    for name, got, want in (("dq", dq, want_dq), ("dk", dk, want_dk), ("dv", dv, want_dv)):
        assert max_error(got, want) < 2e-2, f"{name}: largest difference {max_error(got, want):.3g}"
    # The pointer atomics' DQ32 of the same kernel: the same sums, added in another order.
    _, dq_atomics, _, _, _ = one_kernel_backward(B, H, S, D, bm, bn, warps, causal, 2, S + D + causal)
    assert max_error(dq, dq_atomics.astype(np.float64)) < 1e-5


def test_rows_past_s_must_not_reach_the_next_head():
    # The last query block of head 0 holds rows 200..255, head 1's rows 0..55 of DQ32. Their probabilities are 0
    # (LSE +inf there), so their dQ is too; the kernel zeroes them besides (the select before the TMA's
    # reduction). With LSE 0 instead of +inf past S (the load's `other` edited), only that zeroing keeps head 0's
    # tail out of head 1's rows.
    def lse_zero_past_s(source):
        assert source.count("__int_as_float(0x7f800000)") == 1, "the LSE load's other is no longer the only +inf"
        return source.replace("__int_as_float(0x7f800000)", "0.0f")

    def unmasked(source):
        at_reduction = source.index("// TMA reduction (add)")
        select = source.rindex(" ? ", 0, at_reduction)
        start, end = source.rindex("=", 0, select) + 1, source.index(";", select)
        kept = source[start:end].split(" ? ")[1].split(" : ")[0]
        return source[:start] + " " + kept + source[end:]

    B, H, S, D = 1, 2, 200, 64
    for edit, head_1_right in ((lse_zero_past_s, True), (lambda s: unmasked(lse_zero_past_s(s)), False)):
        _, dq, _, _, (want_dq, _, _) = one_kernel_backward(B, H, S, D, 64, 128, 4, False, 2, 11, DQ_TMA=True,
                                                           DQ32_ROWS=B * H * S, edit_source=edit)
        assert max_error(dq[:, 0], want_dq[:, 0]) < 2e-2  # head 0's own rows are right either way
        assert (max_error(dq[:, 1, :56], want_dq[:, 1, :56]) < 2e-2) == head_1_right


@pytest.mark.parametrize("B,H,S,D,causal", [
    (1, 2, 200, 64, False),   # ragged: 256 rows, four consumer warpgroups (the D 64 default)
    (1, 2, 200, 64, True),
    (1, 1, 300, 128, True),   # 128 x 128 blocks, 2 stages (the D 128 default)
])
def test_forward_kernel_matches_float64(B, H, S, D, causal):
    rng = np.random.default_rng(S + D + causal + 1)
    bf16 = _bf16()
    q, k, v = (rng.standard_normal((B, H, S, D)).astype(bf16) for _ in range(3))
    scale = 1.0 / D ** 0.5
    f64 = [x.astype(np.float64) for x in (q, k, v)]
    s = np.einsum("bhqd,bhkd->bhqk", f64[0], f64[1]) * scale
    if causal:
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    want_lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
    want = np.exp(s - want_lse[..., None]) @ f64[2]
    # out in [B, S, H, D] storage seen as [B, H, S, D], as the op allocates it for such q.
    out_bshd, lse = np.zeros((B, S, H, D), q.dtype), np.zeros((B, H, S), np.float32)
    out = out_bshd.transpose(0, 2, 1, 3)
    bm, bn, warps, stages = at.FWD[D]
    (q, vq), (k, vk), (v, vv) = (stored(x, l) for x, l in zip((q, k, v), ("bshd", "bshd", "qkv")))
    compiled = emulate(at.attention_fwd_tma_kernel, (-(-S // bm), B * H), q, k, v, out_bshd, lse, *vq, *vk, *vv, H,
                       S, S * H * D, D, H * D, scale, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, TAIL=S % bn != 0, num_warps=warps,
                       num_stages=stages)
    assert compiled.layouts.count("TMA ring through") == 2, compiled.layouts
    assert "fed by a producer warpgroup" in compiled.layouts and "one iteration late" in compiled.layouts
    np.testing.assert_allclose(out.astype(np.float64), want, atol=2e-2, rtol=2e-2, err_msg="attention output")
    np.testing.assert_allclose(lse, want_lse, atol=1e-3, rtol=0, err_msg="log-sum-exp")


@pytest.mark.parametrize("config", [(64, 64, 4, 3, False), (64, 64, 4, 3, False, True)])
def test_backward_takes_five_and_six_field_configurations(monkeypatch, config):
    # backward() through FUSED's tuples, on torch CPU tensors (the CPU backend: DQ_TMA's desc.atomic_add is the
    # pointer atomic there): the old 5-field form and the 6th field choosing the TMA's reduction of dQ.
    import torch

    B, H, S, D = 1, 2, 200, 64
    g = torch.Generator().manual_seed(5)
    q, k, v, do = (torch.randn(B, H, S, D, generator=g).to(torch.bfloat16) for _ in range(4))
    scale = D ** -0.5
    f64 = [t.double().numpy() for t in (q, k, v, do)]
    lse, _, *want = reference(*f64, False, scale)
    out = torch.tensor(output(*f64[:3], False, scale)).to(torch.bfloat16)
    monkeypatch.setitem(at.FUSED, D, config)
    grads = [torch.empty_like(q) for _ in range(3)]
    at.backward(do, q, k, v, out, torch.tensor(lse, dtype=torch.float32), False, scale, *grads)
    for name, got, w in zip(("dq", "dk", "dv"), grads, want):
        assert max_error(got.double().numpy(), w) < 2e-2, name
