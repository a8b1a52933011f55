"""Attention's key loop as a TMA ring on sm_90 (backends/cuda/codegen_tma_ring.cpp): two wgmma dots per
iteration, S = Q K^T reading the K block where it lands and O += P V reading the V block, Q staged once before
the loop, P in registers; the PV group stays in flight until the next iteration's QK wait retires it, and the
stage is released then.

examples/flash_attention_tma.py runs in the host CUDA emulator against a float64 reference: ragged sequences
(keys past S read the next head's rows and are masked), causal and not, one and two consumer warpgroups, with and
without the producer warpgroup. Breaking the release or the parity must fail a run. On a GPU, test_tma_gpu.py
runs the same kernel against torch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import EmulatorError, emulate, require_emulator

import flash_attention_tma as fa


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


def _bf16():
    import ml_dtypes

    return ml_dtypes.bfloat16


def run(B, H, S, D, BM, BN, warps, stages, causal, ws=None, dtype="bfloat16", edit_source=None, seed=0):
    q, k, v = fa.make_inputs(B, H, S, D, fa.numpy_dtype(dtype), seed=seed)
    out = np.zeros_like(q)
    lse = np.zeros((B, H, S), np.float32)
    grid = (-(-S // BM), B * H)
    compiled = emulate(fa.attention_tma_kernel, grid, q, k, v, out, lse, B, H, S, 1.0 / D ** 0.5,
                       HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal, TAIL=S % BN != 0, WARP_SPECIALIZE=ws,
                       num_warps=warps, num_stages=stages, edit_source=edit_source, seed=seed)
    want_out, want_lse = fa.attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=causal)
    (atol, rtol), lse_atol = fa.TOLERANCES[dtype]
    np.testing.assert_allclose(out.astype(np.float64), want_out, atol=atol, rtol=rtol, err_msg="attention output")
    np.testing.assert_allclose(lse.astype(np.float64), want_lse, atol=lse_atol, rtol=0, err_msg="log-sum-exp")
    return compiled


def assert_ring(compiled, stages):
    assert f"TMA ring: {stages} stages" in compiled.source, compiled.layouts
    assert compiled.layouts.count("TMA ring through") == 2, compiled.layouts
    assert "is the same in every iteration: staged once" in compiled.source


@pytest.mark.parametrize("B,H,S,D,BM,BN,warps,stages,causal,ws", [
    (1, 2, 150, 64, 64, 64, 4, 2, False, None),    # ragged S: the last key block reaches into the next head
    (1, 2, 150, 64, 64, 64, 4, 3, True, None),     # causal, three stages
    (1, 1, 200, 64, 64, 32, 4, 3, False, True),    # the producer warpgroup feeds one consumer warpgroup
    (2, 1, 100, 32, 64, 32, 4, 2, True, True),     # causal with the producer; 64-byte rows (64-byte swizzle)
    (1, 1, 256, 128, 128, 128, 8, 2, False, None),  # the benchmark's blocks: two consumers, a producer (unasked)
    (1, 1, 1000, 64, 64, 64, 4, 2, False, True),   # 16 key blocks through 2 stages: every stage refilled often
    (1, 1, 1000, 64, 128, 64, 8, 3, True, None),   # the same causal, 3 stages, two consumer warpgroups
    (1, 1, 700, 64, 256, 64, 16, 3, True, True),   # four consumer warpgroups behind the producer, causal
    (1, 2, 300, 64, 256, 64, 16, 3, False, None),  # the same unasked (16 warps), ragged: the D 64 default
])
def test_attention_ring_is_exact(B, H, S, D, BM, BN, warps, stages, causal, ws):
    compiled = run(B, H, S, D, BM, BN, warps, stages, causal, ws)
    assert_ring(compiled, stages)
    specialized = "fed by a producer warpgroup" in compiled.layouts
    assert specialized == (ws is True or BN == 128 or warps >= 16), compiled.layouts
    assert f"{warps // 4} consumer warpgroup(s)" in compiled.layouts or not specialized, compiled.layouts
    # The last dot goes one iteration late only behind a producer warpgroup (codegen_tma_ring.cpp).
    assert ("one iteration late" in compiled.layouts) == specialized, compiled.layouts


def test_attention_ring_structure():
    compiled = run(1, 1, 128, 64, 64, 64, 4, 2, False, ws=True)
    assert "issues its last dot (" in compiled.layouts and "one iteration late" in compiled.layouts
    loop = compiled.source[compiled.source.index("for (unsigned long long k"):]
    loop = loop[:loop.index("tg_wgmma_wait<0>();  // the last iteration")]
    # QK of block k is issued, then PV of block k - 1 behind it (an empty group in the first iteration); the QK
    # wait leaves PV in flight under the softmax; PV retires before the accumulator is rescaled, and the stage it
    # read is released there. After the loop, the last PV group. No CTA barrier per iteration.
    qk = loop.index("tg_wgmma_m64n64k16")
    late = loop.index("const int late_stage = ")
    assert qk < late < loop.index("tg_wgmma_m64n64k16_bf16_rn") < loop.index("tg_wgmma_wait<1>();")
    assert loop.count("tg_wgmma_wait<1>();") == 1 and loop.count("tg_wgmma_wait<0>();") == 1, loop
    assert "an empty group" in loop
    # K and V have barriers of their own: K is released once QK retires, V once PV retires.
    assert loop.index("tg_wgmma_wait<1>();") < loop.index("tg_mbar_arrive(tma_empty") < late + 4000
    assert "its blocks have landed" in loop
    retire = loop.index("tg_wgmma_wait<0>();  // the last dot's group of the previous iteration")
    release_v = re.search(r"tg_mbar_arrive\(tma_empty\d+ \+ 8 \* \(2 \+ previous\)\)", loop)
    assert release_v and retire < release_v.start() < loop.index("][0] = ((unsigned)")
    assert "__syncthreads" not in loop and "tg_named_barrier" not in loop
    drain = compiled.source[compiled.source.index("tg_wgmma_wait<0>();  // the last iteration") - 2000:]
    assert re.search(r"if \(trips\d+ > 0\) \{\n\s*// the group of v\d+ of the last iteration", drain), drain[:2000]


def _without(pattern: str):
    def edit(source: str) -> str:
        edited, count = re.subn(pattern, "", source)
        assert count, pattern
        return edited
    return edit


@pytest.mark.parametrize("ws", [None, True])
def test_attention_ring_missing_release_fails(ws):
    with pytest.raises(EmulatorError):
        run(1, 1, 256, 64, 64, 64, 4, 2, False, ws=ws,
            edit_source=_without(r"if \(k\d+ > 0 && lane == 0\) tg_mbar_arrive\(tma_empty\d+ \+ 8 \* "
                                 r"(previous|\(2 \+ previous\))\);"))


def test_attention_ring_missing_first_dot_release_fails():
    """Behind a producer K and V have barriers of their own: without the release of K after QK retires, the
    producer waits forever."""
    with pytest.raises(EmulatorError):
        run(1, 1, 256, 64, 64, 64, 4, 2, False, ws=True,
            edit_source=_without(r"if \(lane == 0\) tg_mbar_arrive\(tma_empty\d+ \+ 8 \* tma_stage\d+\);"))


def test_attention_ring_missing_retire_fails():
    """Without the wait that retires the previous block's PV group, its stage is released (and refilled) while
    the group still reads it, and the accumulator is rescaled before that product lands in it."""
    with pytest.raises((EmulatorError, AssertionError)):
        run(1, 1, 256, 64, 64, 64, 4, 2, False, ws=True,
            edit_source=_without(r"tg_wgmma_wait<0>\(\);  // the last dot's group of the previous iteration"))


def test_attention_late_group_reads_previous_stage():
    """The late PV group reads the V block of the previous iteration's stage; pointed at this iteration's, the
    output is wrong."""
    def edit(source: str) -> str:
        stage = re.search(r"tma_stage\d+", source).group(0)
        edited, count = re.subn(r"const int late_stage = [^;]*;", f"const int late_stage = {stage};", source)
        assert count == 1
        return edited
    with pytest.raises((EmulatorError, AssertionError)):
        run(1, 1, 256, 64, 64, 64, 4, 3, False, ws=True, edit_source=edit)


@pytest.mark.parametrize("ws", [None, True])
def test_attention_ring_wrong_phase_fails(ws):
    def edit(source: str) -> str:
        edited, count = re.subn(r"(tg_mbar_wait\(tma_full\d+ \+ 8 \* tma_stage\d+, )(tma_phase\d+)\)", r"\1!\2)",
                                source)
        assert count == 1
        return edited
    with pytest.raises((EmulatorError, AssertionError)):
        run(1, 1, 256, 64, 64, 64, 4, 2, False, ws=ws, edit_source=edit)


@tegula.jit
def dual_gemm_kernel(a_ptr, b_ptr, c_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Two products per K step into two accumulators (a gate and an up projection): the ring feeds both dots,
    the second stays in flight and the first one's wait retires it."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [K, N], [N, 1], [BK, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    gate = tl.zeros((BM, BN), dtype=tl.float32)
    up = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        gate = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), gate)
        up = tl.dot(a_desc.load([off_m, k]), c_desc.load([k, off_n]), up)
    rows = off_m + tl.arange(0, BM)
    cols = off_n + tl.arange(0, BN)
    out = gate * tl.sigmoid(gate) * up
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], out, mask=(rows[:, None] < M) & (cols[None, :] < N))


@tegula.jit
def shared_a_kernel(a_ptr, b_ptr, c_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same, with A's block loaded once and read by both products."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [K, N], [N, 1], [BK, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    gate = tl.zeros((BM, BN), dtype=tl.float32)
    up = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        gate = tl.dot(a, b_desc.load([k, off_n]), gate)
        up = tl.dot(a, c_desc.load([k, off_n]), up)
    rows = off_m + tl.arange(0, BM)
    cols = off_n + tl.arange(0, BN)
    out = gate * tl.sigmoid(gate) * up
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], out, mask=(rows[:, None] < M) & (cols[None, :] < N))


@pytest.mark.parametrize("kernel,loads", [("dual_gemm_kernel", 4), ("shared_a_kernel", 3)])
def test_two_accumulating_dots_share_a_ring(kernel, loads):
    from ops_util import random, rng_for, to_f64

    M, N, K = 96, 80, 208  # ragged M and N tiles, a K tail of 16
    rng = rng_for("dual-gemm", M, N, K)
    a, b, c = (random(rng, shape, "bfloat16", low=-1, high=1) for shape in ((M, K), (K, N), (K, N)))
    y = np.zeros((M, N), np.float32)
    compiled = emulate(globals()[kernel], (2, 2), a, b, c, y, M, N, K, BM=64, BN=64, BK=32, num_warps=4,
                       num_stages=3)
    assert compiled.layouts.count("TMA ring through") == loads, compiled.layouts
    gate, up = to_f64(a) @ to_f64(b), to_f64(a) @ to_f64(c)
    np.testing.assert_allclose(y, gate / (1 + np.exp(-gate)) * up, rtol=1e-4, atol=1e-4)


@tegula.jit
def _inner(acc, l_i, m_i, q, desc_k, desc_v, head_row, offs_m, offs_n, lo, hi, qk_scale, N_CTX,
           BLOCK_N: tl.constexpr, MASK: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N):
        k = desc_k.load([head_row + start_n, 0])
        qk = tl.dot(q, k.T)
        if MASK:
            keys = start_n + offs_n
            qk = tl.where((offs_m[:, None] >= keys[None, :]) & (keys[None, :] < N_CTX), qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([head_row + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@tegula.jit
def two_loop_causal_kernel(Q, K, V, Out, Z, H, N_CTX, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    """Triton's tutorial form of causal attention: the blocks below the diagonal without a mask, then the
    diagonal's blocks with it, each loop a ring of its own (the first fed by the producer)."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    y_dim = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    head_row = off_hz * N_CTX
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([head_row + start_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    acc, l_i, m_i = _inner(acc, l_i, m_i, q, desc_k, desc_v, head_row, offs_m, offs_n, 0, start_m * BLOCK_M,
                           qk_scale, N_CTX, BLOCK_N, False)
    acc, l_i, m_i = _inner(acc, l_i, m_i, q, desc_k, desc_v, head_row, offs_m, offs_n, start_m * BLOCK_M,
                           min((start_m + 1) * BLOCK_M, N_CTX), qk_scale, N_CTX, BLOCK_N, True)
    out = acc / l_i[:, None]
    o_ptrs = Out + (head_row + offs_m)[:, None].to(tl.int64) * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=(offs_m < N_CTX)[:, None])


@pytest.mark.parametrize("warps,BN,stages,D", [(4, 32, 3, 64), (8, 64, 2, 64), (8, 64, 3, 128)])
def test_two_causal_loops_each_a_ring(warps, BN, stages, D):
    # The last: the producer warpgroup feeds the first loop, thread 0 the second.
    B, H, S = 1, 2, 200
    BM = 16 * warps
    q, k, v = fa.make_inputs(B, H, S, D, fa.numpy_dtype("bfloat16"), seed=S)
    out = np.zeros_like(q)
    compiled = emulate(two_loop_causal_kernel, (-(-S // BM), B * H), q, k, v, out, B, H, S, 1.0 / D ** 0.5,
                       HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, num_warps=warps, num_stages=stages)
    assert compiled.layouts.count("TMA ring through") == 4, compiled.layouts
    assert ("fed by a producer warpgroup" in compiled.layouts) == (D == 128), compiled.layouts
    want, _ = fa.attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=True)
    (atol, rtol), _ = fa.TOLERANCES["bfloat16"]
    np.testing.assert_allclose(out.astype(np.float64), want, atol=atol, rtol=rtol)
