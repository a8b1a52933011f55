"""Attention through tensor descriptors, for Hopper: the forward as
examples/flash_attention_tma.py writes it, and the backward.

The backward of ``attention.py`` (FlashAttention-2's: dK and dV per key
block over the query blocks that see it, dQ per query block over its key
blocks, from the forward's log-sum-exp and ``delta = rowsum(dO * O)``),
written with descriptors over the ``[B * H * S, D]`` rows of contiguous
q, k, v and dO. On sm_90 each loop's blocks then move through a TMA ring
read by wgmma where they land, fed by a producer warpgroup; the block read
twice (Q in dK/dV: ``k @ q.T`` and ``ds_t @ q``; dO: ``p_t @ do`` and
``v @ do.T``; K in dQ) is copied once and read both ways; the last product
of an iteration runs under the next iteration's exponentials
(docs/backend-cuda.md, "TMA rings"). Blocks that run past a head's S read
the next head's rows (or zeros past the tensor): query rows past S get a
log-sum-exp of +inf, so their probabilities are 0; keys past S are masked
in the one block that holds them, and their gradients are not stored.

Probabilities and their gradients are float32; both are rounded to the
input dtype before they meet dO or Q, as in ``attention.py``.
"""

from __future__ import annotations

import functools

import torch

import tegula
import tegula.language as tl

from ._empty import empty

LOG2E = 1.4426950408889634


@tegula.jit
def _rows(T, ROWS, COLS, STRIDE, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    # T as the [ROWS, COLS] matrix of rows_view (row stride STRIDE), read in BLOCK x HEAD_DIM blocks.
    return tl.make_tensor_descriptor(T, [ROWS, COLS], [STRIDE, 1], [BLOCK, HEAD_DIM])


@tegula.jit
def _first_row(bh, H, RB, RH):
    # The matrix row holding row 0 of (batch, head) bh = b * H + h.
    return (bh // H) * RB + (bh % H) * RH


@tegula.jit
def attention_fwd_tma_kernel(Q, K, V, O, LSE, Q_ROWS, Q_COLS, Q_STRIDE, Q_RB, Q_RH, Q_CH, K_ROWS, K_COLS, K_STRIDE, K_RB, K_RH, K_CH, V_ROWS, V_COLS, V_STRIDE, V_RB, V_RH, V_CH, H, S, O_SB, O_SH, O_SS, scale, HEAD_DIM: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, TAIL: tl.constexpr):
    # Grid: (cdiv(S, BLOCK_M), B * H). q, k, v through rows_view; O through its strides over [B, H, S]
    # (head dim contiguous), LSE contiguous. The scores in base 2
    # (exp2 with log2(e) folded into the scale).
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    desc_q = _rows(Q, Q_ROWS, Q_COLS, Q_STRIDE, HEAD_DIM, BLOCK_M)
    row_q, col_q = _first_row(bh, H, Q_RB, Q_RH), (bh % H) * Q_CH
    desc_k = _rows(K, K_ROWS, K_COLS, K_STRIDE, HEAD_DIM, BLOCK_N)
    row_k, col_k = _first_row(bh, H, K_RB, K_RH), (bh % H) * K_CH
    desc_v = _rows(V, V_ROWS, V_COLS, V_STRIDE, HEAD_DIM, BLOCK_N)
    row_v, col_v = _first_row(bh, H, V_RB, V_RH), (bh % H) * V_CH
    rows = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([row_q + start_m, col_q])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = scale * LOG2E
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, S)
    else:
        hi = S
    for start_n in tl.range(0, hi, BLOCK_N):
        k = desc_k.load([row_k + start_n, col_k])
        s = tl.dot(q, k.T)
        keys = start_n + offs_n
        if CAUSAL:  # the first block holds every row's own key: each row's maximum is finite from it on
            if start_n + BLOCK_N > start_m:
                s = tl.where(rows[:, None] >= keys[None, :], s, float("-inf"))
        elif TAIL:
            if start_n + BLOCK_N > S:
                s = tl.where(keys[None, :] < S, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row_v + start_n, col_v])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    tl.store(LSE + bh * S + rows, (m_i + tl.math.log2(l_i)) / LOG2E, mask=rows < S)
    head = (bh // H).to(tl.int64) * O_SB + (bh % H).to(tl.int64) * O_SH
    offsets = head + rows[:, None].to(tl.int64) * O_SS + tl.arange(0, HEAD_DIM)[None, :]
    tl.store(O + offsets, (acc * (1.0 / l_i)[:, None]).to(O.dtype.element_ty), mask=rows[:, None] < S)


@tegula.jit
def _store_rows(PTR, OFF, bh, rows, g, H, S, SB, SH, SS, COS, SIN, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    # g ([BLOCK, HEAD_DIM], float32) into rows `rows` of (batch, head) bh of the [B, H, S, HEAD_DIM] tensor at
    # PTR + OFF of (batch, head, row) strides SB, SH, SS (the head dim contiguous), in PTR's dtype. With COS and
    # SIN (rotary_embedding's [S, HEAD_DIM / 2] tables), g is the gradient of rows that rotation made, and the
    # gradient of the rows before it is stored: the halves x1, x2 became x1 c - x2 s and x2 c + x1 s, so the
    # gradients g1, g2 give g1 c + g2 s and g2 c - g1 s. Rows past S are not stored.
    base = OFF + (bh // H).to(tl.int64) * SB + (bh % H).to(tl.int64) * SH + rows[:, None].to(tl.int64) * SS
    inside = rows[:, None] < S
    if COS is None:
        tl.store(PTR + base + tl.arange(0, HEAD_DIM)[None, :], g.to(PTR.dtype.element_ty), mask=inside)
    else:
        HALF: tl.constexpr = HEAD_DIM // 2
        g1, g2 = tl.split(tl.permute(tl.reshape(g, [BLOCK, 2, HALF]), [0, 2, 1]))
        half = tl.arange(0, HALF)
        table = rows[:, None] * HALF + half[None, :]
        c = tl.load(COS + table, mask=inside, other=0.0)
        s = tl.load(SIN + table, mask=inside, other=0.0)
        tl.store(PTR + base + half[None, :], (g1 * c + g2 * s).to(PTR.dtype.element_ty), mask=inside)
        tl.store(PTR + base + HALF + half[None, :], (g2 * c - g1 * s).to(PTR.dtype.element_ty), mask=inside)


@tegula.jit
def _delta(DO, O, bh, rows, row_do, col_do, DO_STRIDE, O_SB, O_SH, O_SS, H, S, HEAD_DIM: tl.constexpr):
    # rowsum(dO * O) of rows `rows` of (batch, head) bh, float32, from plain loads of both (dO through its
    # rows_view; O [B, H, S, D] of strides O_SB, O_SH, O_SS), zeros past S.
    dims = tl.arange(0, HEAD_DIM)
    do = tl.load(DO + (row_do + rows)[:, None].to(tl.int64) * DO_STRIDE + col_do + dims[None, :],
                 mask=rows[:, None] < S, other=0.0)
    o_base = (bh // H).to(tl.int64) * O_SB + (bh % H).to(tl.int64) * O_SH
    o = tl.load(O + o_base + rows[:, None].to(tl.int64) * O_SS + dims[None, :], mask=rows[:, None] < S, other=0.0)
    return tl.sum(do.to(tl.float32) * o.to(tl.float32), axis=1)


@tegula.jit
def attention_delta_tma_kernel(DO, O, DELTA, DO_STRIDE, DO_RB, DO_RH, DO_CH, H, S, O_SB, O_SH, O_SS,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    # Grid: (cdiv(S, BLOCK_M), B * H). delta alone, for the one-kernel backward, which reads all of it from the start.
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    delta = _delta(DO, O, bh, rows, _first_row(bh, H, DO_RB, DO_RH), (bh % H) * DO_CH, DO_STRIDE, O_SB, O_SH, O_SS,
                   H, S, HEAD_DIM)
    tl.store(DELTA + bh * S + rows, delta, mask=rows < S)


@tegula.jit
def attention_dkdv_tma_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, Q_ROWS, Q_COLS, Q_STRIDE, Q_RB, Q_RH, Q_CH, K_ROWS, K_COLS, K_STRIDE, K_RB, K_RH, K_CH, V_ROWS, V_COLS, V_STRIDE, V_RB, V_RH, V_CH, DO_ROWS, DO_COLS, DO_STRIDE, DO_RB, DO_RH, DO_CH, H, S, scale,
                              DK_OFF, DV_OFF, G_SB, G_SH, G_SS, COS, SIN, HEAD_DIM: tl.constexpr,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                              AHEAD: tl.constexpr = False, DP_FIRST: tl.constexpr = False):
    # Grid: (cdiv(S, BLOCK_N), B * H). q, k, v, dO through rows_view; LSE, DELTA contiguous; dK at DK + DK_OFF and
    # dV at DV + DV_OFF, both of (batch, head, row) strides G_SB, G_SH, G_SS; with COS and SIN (None: none) dK is
    # rotated back (_store_rows).
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    desc_q = _rows(Q, Q_ROWS, Q_COLS, Q_STRIDE, HEAD_DIM, BLOCK_M)
    row_q, col_q = _first_row(bh, H, Q_RB, Q_RH), (bh % H) * Q_CH
    desc_do = _rows(DO, DO_ROWS, DO_COLS, DO_STRIDE, HEAD_DIM, BLOCK_M)
    row_do, col_do = _first_row(bh, H, DO_RB, DO_RH), (bh % H) * DO_CH
    desc_k = _rows(K, K_ROWS, K_COLS, K_STRIDE, HEAD_DIM, BLOCK_N)
    row_k, col_k = _first_row(bh, H, K_RB, K_RH), (bh % H) * K_CH
    desc_v = _rows(V, V_ROWS, V_COLS, V_STRIDE, HEAD_DIM, BLOCK_N)
    row_v, col_v = _first_row(bh, H, V_RB, V_RH), (bh % H) * V_CH
    keys = start_n + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    k = desc_k.load([row_k + start_n, col_k])
    v = desc_v.load([row_v + start_n, col_v])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    qk_scale = scale * LOG2E
    lo = 0
    if CAUSAL:
        lo = (start_n // BLOCK_M) * BLOCK_M  # earlier queries see none of these keys
    # Each block's log-sum-exp, read right after the first product: a plain load issued where it is used
    # stalls the iteration on its latency, which the TMA ring hides for the blocks but not for this. With
    # AHEAD it is loaded one iteration ahead, which costs a vector of registers that head dim 128's
    # accumulators leave no room for (it spills there). delta's latency hides under the exponentials.
    # Rows past S: +inf, so their probabilities are 0 (their blocks hold the next head's rows).
    if AHEAD:
        lse2_next = tl.load(LSE + bh * S + lo + offs_m, mask=lo + offs_m < S, other=float("inf")) * LOG2E
    for start_m in tl.range(lo, S, BLOCK_M, warp_specialize=True):
        q = desc_q.load([row_q + start_m, col_q])
        do = desc_do.load([row_do + start_m, col_do])
        rows = start_m + offs_m
        if AHEAD:
            lse2 = lse2_next
            ahead = rows + BLOCK_M
            lse2_next = tl.load(LSE + bh * S + ahead, mask=ahead < S, other=float("inf")) * LOG2E
        else:
            lse2 = tl.load(LSE + bh * S + rows, mask=rows < S, other=float("inf")) * LOG2E
        delta = tl.load(DELTA + bh * S + rows, mask=rows < S, other=0.0)
        s_t = tl.dot(k, q.T)
        if DP_FIRST:  # both score products back to back on the tensor cores, the exponentials after them
            dp_t = tl.dot(v, do.T)
        p_t = tl.math.exp2(s_t * qk_scale - lse2[None, :])
        if CAUSAL:
            if start_m < start_n + BLOCK_N:  # a block on the diagonal: queries before a key do not see it
                p_t = tl.where(rows[None, :] >= keys[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        if not DP_FIRST:
            dp_t = tl.dot(v, do.T)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)
    _store_rows(DK, DK_OFF, bh, keys, dk * scale, H, S, G_SB, G_SH, G_SS, COS, SIN, HEAD_DIM, BLOCK_N)
    _store_rows(DV, DV_OFF, bh, keys, dv, H, S, G_SB, G_SH, G_SS, None, None, HEAD_DIM, BLOCK_N)


@tegula.jit
def attention_dq_tma_kernel(Q, K, V, DO, O, LSE, DQ, DELTA, Q_ROWS, Q_COLS, Q_STRIDE, Q_RB, Q_RH, Q_CH, K_ROWS, K_COLS, K_STRIDE, K_RB, K_RH, K_CH, V_ROWS, V_COLS, V_STRIDE, V_RB, V_RH, V_CH, DO_ROWS, DO_COLS, DO_STRIDE, DO_RB, DO_RH, DO_CH, H, S, scale, O_SB, O_SH, O_SS, DQ_SB, DQ_SH, DQ_SS, COS, SIN,
                            HEAD_DIM: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                            TAIL: tl.constexpr, DP_FIRST: tl.constexpr = False):
    # Grid: (cdiv(S, BLOCK_M), B * H). O [B, H, S, D] with (batch, head, row) strides O_SB, O_SH, O_SS; dQ of strides
    # DQ_SB, DQ_SH, DQ_SS, rotated back with COS and SIN (None: not; _store_rows). DELTA: this program's rows of
    # rowsum(dO * O), stored for attention_dkdv_tma_kernel, which runs after this one.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    desc_q = _rows(Q, Q_ROWS, Q_COLS, Q_STRIDE, HEAD_DIM, BLOCK_M)
    row_q, col_q = _first_row(bh, H, Q_RB, Q_RH), (bh % H) * Q_CH
    desc_do = _rows(DO, DO_ROWS, DO_COLS, DO_STRIDE, HEAD_DIM, BLOCK_M)
    row_do, col_do = _first_row(bh, H, DO_RB, DO_RH), (bh % H) * DO_CH
    desc_k = _rows(K, K_ROWS, K_COLS, K_STRIDE, HEAD_DIM, BLOCK_N)
    row_k, col_k = _first_row(bh, H, K_RB, K_RH), (bh % H) * K_CH
    desc_v = _rows(V, V_ROWS, V_COLS, V_STRIDE, HEAD_DIM, BLOCK_N)
    row_v, col_v = _first_row(bh, H, V_RB, V_RH), (bh % H) * V_CH
    rows = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([row_q + start_m, col_q])
    do = desc_do.load([row_do + start_m, col_do])
    lse2 = tl.load(LSE + bh * S + rows, mask=rows < S, other=float("inf")) * LOG2E
    delta = _delta(DO, O, bh, rows, row_do, col_do, DO_STRIDE, O_SB, O_SH, O_SS, H, S, HEAD_DIM)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = scale * LOG2E
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, S)
    else:
        hi = S
    for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=True):
        k = desc_k.load([row_k + start_n, col_k])
        v = desc_v.load([row_v + start_n, col_v])
        keys = start_n + offs_n
        s = tl.dot(q, k.T)
        if DP_FIRST:  # both score products back to back on the tensor cores, the exponentials after them
            dp = tl.dot(do, v.T)
        p = tl.math.exp2(s * qk_scale - lse2[:, None])
        if CAUSAL:
            if start_n + BLOCK_N > start_m:  # a block on the diagonal (or S's end, past which keys come later)
                p = tl.where((rows[:, None] >= keys[None, :]) & (keys[None, :] < S), p, 0.0)
        elif TAIL:
            if start_n + BLOCK_N > S:
                p = tl.where(keys[None, :] < S, p, 0.0)
        if not DP_FIRST:
            dp = tl.dot(do, v.T)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    _store_rows(DQ, 0, bh, rows, dq * scale, H, S, DQ_SB, DQ_SH, DQ_SS, COS, SIN, HEAD_DIM, BLOCK_M)
    # After the loop: warp specialization keeps stores out of the code before it (the producer's copies would not
    # wait for them).
    tl.store(DELTA + bh * S + rows, delta, mask=rows < S)


@tegula.jit
def attention_bwd_tma_kernel(Q, K, V, DO, LSE, DELTA, DQ32, DK, DV, Q_ROWS, Q_COLS, Q_STRIDE, Q_RB, Q_RH, Q_CH, K_ROWS, K_COLS, K_STRIDE, K_RB, K_RH, K_CH, V_ROWS, V_COLS, V_STRIDE, V_RB, V_RH, V_CH, DO_ROWS, DO_COLS, DO_STRIDE, DO_RB, DO_RH, DO_CH, H, S,
                             scale, HEAD_DIM: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                             TAIL: tl.constexpr, DQ_ROWS: tl.constexpr = False, DQ_TMA: tl.constexpr = False,
                             DQ32_ROWS=1):
    # The dK/dV loop that also adds each query block's share of dQ (dS K, unscaled) into DQ32 (float32, zeroed
    # by the caller): five products per step where the two kernels above take seven. Grid: (cdiv(S, BLOCK_N), B * H).
    # dQ goes in by atomics of its elements (transposed first with DQ_ROWS), or with DQ_TMA as one block reduced
    # by the TMA into DQ32 seen as the [DQ32_ROWS = B * H * S, HEAD_DIM] matrix.
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    desc_q = _rows(Q, Q_ROWS, Q_COLS, Q_STRIDE, HEAD_DIM, BLOCK_M)
    row_q, col_q = _first_row(bh, H, Q_RB, Q_RH), (bh % H) * Q_CH
    desc_do = _rows(DO, DO_ROWS, DO_COLS, DO_STRIDE, HEAD_DIM, BLOCK_M)
    row_do, col_do = _first_row(bh, H, DO_RB, DO_RH), (bh % H) * DO_CH
    desc_k = _rows(K, K_ROWS, K_COLS, K_STRIDE, HEAD_DIM, BLOCK_N)
    row_k, col_k = _first_row(bh, H, K_RB, K_RH), (bh % H) * K_CH
    desc_v = _rows(V, V_ROWS, V_COLS, V_STRIDE, HEAD_DIM, BLOCK_N)
    row_v, col_v = _first_row(bh, H, V_RB, V_RH), (bh % H) * V_CH
    tl.assume(S > 0)  # so head_row + start_m is known >= 0: a TMA reduction needs its block inside DQ32
    head_row = bh * S
    if DQ_TMA:
        desc_dq = tl.make_tensor_descriptor(DQ32, [DQ32_ROWS, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    keys = start_n + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    k = desc_k.load([row_k + start_n, col_k])
    v = desc_v.load([row_v + start_n, col_v])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    qk_scale = scale * LOG2E
    lo = 0
    if CAUSAL:
        lo = (start_n // BLOCK_M) * BLOCK_M
    for start_m in tl.range(lo, S, BLOCK_M, warp_specialize=True):
        q = desc_q.load([row_q + start_m, col_q])
        do = desc_do.load([row_do + start_m, col_do])
        rows = start_m + offs_m
        lse2 = tl.load(LSE + bh * S + rows, mask=rows < S, other=float("inf")) * LOG2E
        delta = tl.load(DELTA + bh * S + rows, mask=rows < S, other=0.0)
        s_t = tl.dot(k, q.T)
        p_t = tl.math.exp2(s_t * qk_scale - lse2[None, :])
        if CAUSAL:
            if start_m < start_n + BLOCK_N:
                p_t = tl.where(rows[None, :] >= keys[:, None], p_t, 0.0)
        elif TAIL:
            if start_n + BLOCK_N > S:  # keys past S (the next head's) have no share in dQ
                p_t = tl.where(keys[:, None] < S, p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        dp_t = tl.dot(v, do.T)
        ds_t = (p_t * (dp_t - delta[None, :])).to(q.dtype)
        if DQ_TMA:
            # dQ = dS K: dS^T's registers are staged with rows along the queries and read as dS, K's tile as it
            # lies, so dQ's registers run along its rows into the TMA's block.
            dq = tl.dot(tl.trans(ds_t), k)
            if TAIL or BLOCK_M > BLOCK_N:
                if start_m + BLOCK_M > S:
                    # Query rows past S are the next head's rows of DQ32: zeroed, they add nothing there. (Their
                    # probabilities are 0 already, but a non-finite dO of the next head would make 0 * inf.)
                    # Past the last head's rows, outside the matrix, the TMA writes nothing.
                    dq = tl.where(rows[:, None] < S, dq, 0.0)
            desc_dq.atomic_add([head_row + start_m, 0], dq)
        else:
            # dQ^T = K^T dS^T: K^T read from K's tile, dS^T (the consumers' registers) staged in every step.
            dq_t = tl.dot(k.T, ds_t)
            if DQ_ROWS:  # transposed back through shared memory: each warp's atomics then run along dQ's rows
                tl.atomic_add(DQ32 + (head_row + rows)[:, None].to(tl.int64) * HEAD_DIM + offs_d[None, :], dq_t.T,
                              mask=rows[:, None] < S, sem="relaxed")
            else:
                tl.atomic_add(DQ32 + (head_row + rows)[None, :].to(tl.int64) * HEAD_DIM + offs_d[:, None], dq_t,
                              mask=rows[None, :] < S, sem="relaxed")
        dk = tl.dot(ds_t, q, dk)
    offsets = (head_row + keys)[:, None].to(tl.int64) * HEAD_DIM + offs_d[None, :]
    tl.store(DK + offsets, (dk * scale).to(DK.dtype.element_ty), mask=keys[:, None] < S)
    tl.store(DV + offsets, dv.to(DV.dtype.element_ty), mask=keys[:, None] < S)


@tegula.jit
def scale_cast_kernel(X, Y, n, scale, BLOCK: tl.constexpr):
    # Y = (X * scale) in Y's dtype: dQ out of its float32 sums.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(Y + offs, (x * scale).to(Y.dtype.element_ty), mask=offs < n)


# (BLOCK_M, BLOCK_N, num_warps, num_stages) of each kernel, by head dim. The forward's are those of
# examples/flash_attention_tma.py, whose kernel this one's is (measured there: 1.00 / 0.98 of SDPA at D 128,
# 0.92 / 0.91 at D 64; docs/benchmarks.md); the backward's the fastest of tools/hopper/attention_bwd_probe.py
# on the H200 (benchmarks/results/2026-12-03-h200-attention-bwd-probe.txt).
FWD = {64: (256, 64, 16, 3), 128: (128, 128, 8, 2)}
# Sequences up to SHORT_S take these forward tiles instead, by head dim and causality: smaller query
# blocks make more programs for the GPU and less causal imbalance between them (measured at train_gpt's
# 32 x 8 heads x 512, tools/hopper/attention_tma_probe.py; benchmarks/results/2026-12-03-h200-session23.md).
SHORT_S = 1024
FWD_SHORT = {64: {False: (128, 64, 8, 3), True: (64, 64, 4, 3)}}
# A fifth field of DKDV: AHEAD (the log-sum-exp loaded a block ahead: at D 64 0.73 -> 0.82 of SDPA;
# benchmarks/results/2026-12-04-h200-session26.md). The last field of DKDV (its sixth) and of DQ (its fifth):
# DP_FIRST. An entry is one tuple for both kinds of attention, or a pair (without causality, with it):
# tiles_for. DP_FIRST and the tiles differ by causality because the probe's rankings did
# (tools/hopper/attention_bwd_probe.py --dp-first and --d64-full; the figures in docs/torch.md).
DKDV = {64: ((64, 128, 8, 3, True), (64, 128, 8, 3, True, True)), 128: (64, 128, 8, 3, False, True)}
DQ = {64: ((128, 128, 8, 3), (128, 64, 8, 3, True)), 128: (128, 64, 8, 3)}
# The one-kernel backward (attention_bwd_tma_kernel) by head dim, as (BLOCK_M, BLOCK_N, warps, stages, DQ_ROWS)
# or (..., DQ_ROWS, DQ_TMA) (DQ_TMA: dQ reduced by the TMA, DQ_ROWS then unused); the other head dims take the
# two kernels.
FUSED = {}
# Rows per program of the one-kernel backward's delta kernel (attention_delta_tma_kernel).
DELTA_ROWS = 64


def applies(q: torch.Tensor) -> bool:
    """Whether the descriptor backward runs for these inputs: CUDA tensors on an sm_90 device, 16-bit, head
    dim 64 or 128 (the others keep attention.py's kernels)."""
    return (q.is_cuda and q.dtype in (torch.bfloat16, torch.float16) and q.shape[-1] in DKDV
            and _capability(q.device.index if q.device.index is not None else torch.cuda.current_device()) == (9, 0))


@functools.lru_cache(maxsize=None)
def _capability(device: int) -> tuple:
    return torch.cuda.get_device_capability(device)


def rows_view(shape, strides, element_size: int, address: int = 0):
    """(rows, cols, stride, row_b, row_h, col_h): t, a [B, H, S, D] view with its head dim contiguous (its shape,
    strides in elements, element size and address), as the
    [rows, cols] matrix of row stride `stride` whose row b * row_b + h * row_h + s holds t[b, h, s] from column
    h * col_h on. The views a model hands over need no copy: contiguous [B, H, S, D] (a head's rows one after
    another), [B, S, H, D] seen as [B, H, S, D] (heads side by side in a row), q, k, v split from one
    projection (rows of 3 H D). None when t's strides or address allow no such matrix a TMA descriptor can
    describe (16-byte aligned start and row stride)."""
    B, H, S, D = shape
    sb, sh, ss, sd = strides
    if sd != 1 or address % 16 or (ss * element_size) % 16 or ss < D:
        return None
    row_b = 0 if B == 1 else sb // ss if sb % ss == 0 else None
    if row_b is None:
        return None
    if H == 1:
        row_h, col_h, cols = 0, 0, D
    elif sh % ss == 0:
        row_h, col_h, cols = sh // ss, 0, D
    elif (H - 1) * sh + D <= ss:
        row_h, col_h, cols = 0, sh, (H - 1) * sh + D
    else:
        return None
    rows = (B - 1) * row_b + (H - 1) * row_h + S
    return rows, cols, ss, row_b, row_h, col_h


def _viewed(t: torch.Tensor) -> tuple:
    """t (or its contiguous copy, when its strides allow no rows_view) and its rows_view."""
    view = rows_view(t.shape, t.stride(), t.element_size(), t.data_ptr())
    if view is None:  # a copy with the standard strides (contiguous() keeps odd strides of size-1 dims)
        t = torch.empty(t.shape, dtype=t.dtype, device=t.device).copy_(t)
        view = rows_view(t.shape, t.stride(), t.element_size(), t.data_ptr())
    return t, view


def forward(q, k, v, causal: bool, scale: float, out, lse) -> None:
    """out ([B, H, S, D], any strides with the head dim contiguous) and lse [B, H, S] float32 from q, k, v
    (read in place through rows_view)."""
    (q, vq), (k, vk), (v, vv) = _viewed(q), _viewed(k), _viewed(v)
    launch_forward(q, k, v, out, lse, (vq, vk, vv), q.shape, out.stride()[:3], causal, scale)


def launch_forward(q, k, v, out, lse, views, shape, out_strides, causal: bool, scale: float) -> None:
    """forward's launch, with q, k and v's rows_views, their [B, H, S, D] shape and out's (b, h, s) strides
    given: q, k, v and out are tensors (or views) holding those first elements at those layouts."""
    tiles = forward_tiles(shape[2], shape[3], causal)
    run_forward(forward_launch(views, shape, out_strides, causal, scale, tiles), q, k, v, out, lse)


def run_forward(launch, q, k, v, out, lse) -> None:
    """The forward's launch as forward_launch describes it, on these tensors."""
    grid, scalars, constexprs = launch
    attention_fwd_tma_kernel[grid](q, k, v, out, lse, *scalars, **constexprs)


def forward_tiles(S: int, D: int, causal: bool):
    """(BLOCK_M, BLOCK_N, warps, stages) of the forward over sequences of S at head dim D (None: no tiles)."""
    return FWD_SHORT[D][causal] if S <= SHORT_S and D in FWD_SHORT else FWD.get(D)


def forward_launch(views, shape, out_strides, causal: bool, scale: float, tiles) -> tuple:
    """(grid, the arguments after the tensors q, k, v, out and lse, the constexprs) of the forward's launch:
    what an op keeps in its layout (_layouts.py) to launch again."""
    B, H, S, D = shape
    bm, bn, warps, stages = tiles
    return ((tegula.cdiv(S, bm), B * H), (*views[0], *views[1], *views[2], H, S, *out_strides, scale),
            dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, TAIL=S % bn != 0, num_warps=warps,
                 num_stages=stages))


def backward(do, q, k, v, out, lse, causal: bool, scale: float, dq, dk, dv, cos=None, sin=None) -> None:
    """dq, dk, dv ([B, H, S, D], any strides with the head dim contiguous, dk's and dv's alike) from do, q, k, v
    (read in place through rows_view), the forward's out ([B, H, S, D], the head dim contiguous) and lse. With
    cos and sin (rotary_embedding's [S, D / 2] tables, contiguous), q and k are rotated ones, and dq and dk are
    stored rotated back: the gradients of q and k before the rotation."""
    (q, vq), (k, vk), (v, vv), (do, vdo) = _viewed(q), _viewed(k), _viewed(v), _viewed(do)
    launch_backward(do, q, k, v, out, out.stride()[:3], lse, (vq, vk, vv, vdo), q.shape, causal, scale, dq, dk, dv,
                    cos, sin)


def launch_backward(do, q, k, v, out, out_strides, lse, views, shape, causal: bool, scale: float, dq, dk, dv,
                    cos=None, sin=None) -> None:
    """backward's launches, with the rows_views of q, k, v and do, their [B, H, S, D] shape and out's (batch,
    head, row) strides given."""
    B, H, S, D = shape
    delta = empty((B, H, S), torch.float32, lse.device)  # rowsum(dO * O)
    if D in FUSED and cos is None and all(t.is_contiguous() for t in (dq, dk, dv)):
        attention_delta_tma_kernel[(tegula.cdiv(S, DELTA_ROWS), B * H)](
            do, out, delta, *views[3][2:], H, S, *out_strides, HEAD_DIM=D, BLOCK_M=DELTA_ROWS)
        bm, bn, warps, stages, dq_rows, dq_tma = (*FUSED[D], False)[:6]
        dq32 = torch.zeros(shape, dtype=torch.float32, device=dq.device)  # [B * H * S, D] rows for DQ_TMA
        attention_bwd_tma_kernel[(tegula.cdiv(S, bn), B * H)](
            q, k, v, do, lse, delta, dq32, dk, dv, *views[0], *views[1], *views[2], *views[3], H, S, scale, HEAD_DIM=D,
            BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, TAIL=S % bn != 0, DQ_ROWS=dq_rows, DQ_TMA=dq_tma,
            DQ32_ROWS=B * H * S, num_warps=warps, num_stages=stages)
        n = dq32.numel()
        scale_cast_kernel[(tegula.cdiv(n, 4096),)](dq32, dq, n, scale, BLOCK=4096, num_warps=8)
        return
    if dk.stride() != dv.stride():
        raise ValueError(f"attention_tma.backward takes dk and dv of one layout, got strides {dk.stride()} and "
                         f"{dv.stride()}")
    grads = (dq.stride()[:3], dk.stride()[:3], 0, 0)
    run_backward(backward_launches(views, shape, out_strides, grads, causal, scale, (DQ[D], DKDV[D])), q, k, v, do,
                 out, lse, dq, dk, dv, delta, cos, sin)


def run_backward(launches, q, k, v, do, out, lse, dq, dk, dv, delta, cos=None, sin=None) -> None:
    """The two-kernel backward's launches as backward_launches describes them, on these tensors (delta: a
    float32 [B, H, S] buffer; cos and sin: rotary tables whose rotation dq and dk are stored without, or None)."""
    (dq_grid, dq_scalars, dq_constexprs), (dkdv_grid, dkdv_scalars, dkdv_constexprs) = launches
    # dQ first: its programs store delta, which the dK/dV programs read.
    attention_dq_tma_kernel[dq_grid](q, k, v, do, out, lse, dq, delta, *dq_scalars, cos, sin, **dq_constexprs)
    attention_dkdv_tma_kernel[dkdv_grid](q, k, v, do, lse, delta, dk, dv, *dkdv_scalars, cos, sin,
                                         **dkdv_constexprs)


def backward_launches(views, shape, out_strides, grads, causal: bool, scale: float, tiles) -> tuple:
    """The two-kernel backward's launches, each (grid, the arguments between the tensors and cos, sin, the
    constexprs), dQ's then dK/dV's, for the rows_views of q, k, v and do, grads = (dq's (batch, head, row)
    strides, dk's and dv's, dk's offset and dv's from the tensors passed for them) and (DQ[D], DKDV[D]) = tiles:
    what an op keeps in its layout to launch again. The tensors: dQ's q, k, v, do, out, lse, dq, delta; dK/dV's
    q, k, v, do, lse, delta, dk, dv."""
    B, H, S, D = shape
    dq_strides, g_strides, dk_off, dv_off = grads
    flat_views = (*views[0], *views[1], *views[2], *views[3], H, S, scale)
    dq_tiles, dkdv = (tiles_for(entry, causal) for entry in tiles)
    bm, bn, warps, stages, dp_first = (*dq_tiles, False)[:5]
    dq = ((tegula.cdiv(S, bm), B * H), (*flat_views, *out_strides, *dq_strides),
          dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, TAIL=S % bn != 0, DP_FIRST=dp_first,
               num_warps=warps, num_stages=stages))
    bm, bn, warps, stages, ahead, dp_first = (*dkdv, False, False)[:6]
    return dq, ((tegula.cdiv(S, bn), B * H), (*flat_views, dk_off, dv_off, *g_strides),
                dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, AHEAD=ahead, DP_FIRST=dp_first,
                     num_warps=warps, num_stages=stages))


def tiles_for(entry: tuple, causal: bool) -> tuple:
    """The tiles of a DQ or DKDV entry for one launch: its tuple, or from a (without causality, with it) pair
    of tuples the one for `causal`."""
    return entry[causal] if isinstance(entry[0], tuple) else entry

