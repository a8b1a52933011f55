"""Attention with its backward: ``softmax(q k^T * scale) v`` over q, k, v of
shape [B, H, S, D] (batch, heads, sequence, head dim: a power of two >= 16),
causal or not, without the score matrix in memory (the FlashAttention-2
scheme).

Forward: one program per BLOCK_M query rows of one (batch, head) walks the
keys in blocks of BLOCK_N with an online softmax (running maximum and sum),
and stores each row's log-sum-exp besides the output. Backward, from the
saved log-sum-exp, which gives each probability back as ``exp(s - lse)``:

- per query block (one program each), over the key blocks it sees:
  ``dQ += dS K * scale`` with ``dS = P * (dO V^T - delta)`` and ``delta =
  rowsum(dO * O)``, which this program computes for its rows first and also
  stores for the next kernel;
- per key block, over the query blocks that can see it: ``dV += P^T dO``
  and ``dK += dS^T Q * scale``, computed transposed so K and V stay in
  registers, with the delta the dQ kernel stored.

Each gradient is written by exactly one program: no atomics. Scores and
statistics are float32 (float64 for float64 inputs); half-precision
probabilities are rounded to the input dtype before they meet V or dO in a
product, as the forward does. float32 products keep float32's precision:
IEEE on the CPU, on the GPU three TF32 tensor-core products per product
(``dot_precision``: ``"tf32x3"``, as torch's float32 attention kernels do),
never plain TF32. Tile sizes, warps and stages are chosen per backend and
head dim, each kernel its own (``attention_config``: 32 x 32 tiles on the
CPU; an override for sweeps).
"""

from __future__ import annotations

import math

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, dot_precision, register_autograd

from . import _rows, attention_config, attention_tma


@tegula.jit
def _load_rows(ptr, base, rows, S, stride_s, HEAD_DIM: tl.constexpr):
    # Rows `rows` of one head's [S, HEAD_DIM] matrix at `base` (rows stride_s apart); zeros past S.
    return tl.load(ptr + base + rows[:, None] * stride_s + tl.arange(0, HEAD_DIM)[None, :], mask=rows[:, None] < S,
                   other=0.0)


@tegula.jit
def _head_base(H, stride_b, stride_h):
    # Where (batch, head) program_id(1) = batch * H + head starts in a [B, H, S, D] tensor of these strides.
    bh = tl.program_id(1).to(tl.int64)
    return (bh // H) * stride_b + (bh % H) * stride_h


@tegula.jit
def _visible(queries, keys, S, CAUSAL: tl.constexpr):
    # Which (query, key) pairs count, for index tiles broadcast against each other (either orientation).
    visible = (queries < S) & (keys < S)
    if CAUSAL:
        visible = visible & (queries >= keys)
    return visible


# q, k, v and dO come in with any strides over [B, H, S] (the head dim
# contiguous): each is passed with its batch, head and row strides (sqb, sqh,
# sqs, ...), so the transposed and interleaved views a model hands over (q, k,
# v split from one projection, [B, S, H, D] seen as [B, H, S, D]) are read in
# place. Outputs, LSE and delta are contiguous.
#
# In the loops below every tile a product reads is loaded from a pointer tile
# the loop advances by a fixed step, in the orientation the product wants
# (K as [HEAD_DIM, BLOCK_N] for q k^T, and so on; a matrix both products read
# is loaded twice, once each way), with a mask on the induction variable
# alone: the form the CUDA backend pipelines (docs/backend-cuda.md,
# "Software pipelining"); the products accumulate in place (``tl.dot(a, b,
# acc)``), which lets the last one of an iteration stay in flight on Hopper.
# The CPU backend runs the same code.


@tegula.jit
def attention_forward_kernel(Q, K, V, O, LSE, S, H, sqb, sqh, sqs, skb, skh, sks, svb, svh, svs, sob, soh, sos,
                             scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             CAUSAL: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q = _load_rows(Q, _head_base(H, sqb, sqh), rows, S, sqs, HEAD_DIM)
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], dtype=ACC)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=ACC)
    hi = S
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, S)
    kt_ptrs = K + _head_base(H, skb, skh) + offs_n[None, :] * sks + dims[:, None]
    v_ptrs = V + _head_base(H, svb, svh) + offs_n[:, None] * svs + dims[None, :]
    # Key 0 is visible to every row, so each row's maximum is finite after the first block.
    for start_n in range(0, hi, BLOCK_N):
        keys = start_n + offs_n
        kt = tl.load(kt_ptrs, mask=keys[None, :] < S, other=0.0)
        s = tl.dot(q, kt, input_precision=PRECISION).to(ACC) * scale
        visible = keys[None, :] < S
        if CAUSAL:
            visible = visible & (rows[:, None] >= keys[None, :])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptrs, mask=keys[:, None] < S, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        m_i = m_new
        kt_ptrs += BLOCK_N * sks
        v_ptrs += BLOCK_N * svs
    tl.store(LSE + head * S + rows, m_i + tl.log(l_i), mask=rows < S)
    tl.store(O + _head_base(H, sob, soh) + rows[:, None] * sos + dims[None, :],
             (acc / l_i[:, None]).to(O.dtype.element_ty), mask=rows[:, None] < S)


@tegula.jit
def attention_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, S, H, sqb, sqh, sqs, skb, skh, sks, svb, svh, svs, sdb,
                          sdh, sds, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          CAUSAL: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    head = tl.program_id(1).to(tl.int64)
    keys = start_n + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    offs_m = tl.arange(0, BLOCK_M)
    kv_offsets = head * S * HEAD_DIM + keys[:, None] * HEAD_DIM + dims[None, :]
    k = _load_rows(K, _head_base(H, skb, skh), keys, S, sks, HEAD_DIM)
    v = _load_rows(V, _head_base(H, svb, svh), keys, S, svs, HEAD_DIM)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=ACC)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=ACC)
    lo = 0
    if CAUSAL:
        lo = (start_n // BLOCK_M) * BLOCK_M  # earlier queries see none of these keys
    # Q and dO each twice: transposed for the products with K and V, as rows for dK and dV.
    q_base, do_base = _head_base(H, sqb, sqh), _head_base(H, sdb, sdh)
    qt_ptrs = Q + q_base + (lo + offs_m)[None, :] * sqs + dims[:, None]
    q_ptrs = Q + q_base + (lo + offs_m)[:, None] * sqs + dims[None, :]
    dot_ptrs = DO + do_base + (lo + offs_m)[None, :] * sds + dims[:, None]
    do_ptrs = DO + do_base + (lo + offs_m)[:, None] * sds + dims[None, :]
    for start_m in range(lo, S, BLOCK_M):
        rows = start_m + offs_m
        qt = tl.load(qt_ptrs, mask=rows[None, :] < S, other=0.0)
        lse = tl.load(LSE + head * S + rows, mask=rows < S, other=0.0)
        delta = tl.load(DELTA + head * S + rows, mask=rows < S, other=0.0)
        visible = _visible(rows[None, :], keys[:, None], S, CAUSAL)
        s_t = tl.dot(k, qt, input_precision=PRECISION).to(ACC) * scale
        p_t = tl.where(visible, tl.exp(s_t - lse[None, :]), 0.0)
        do = tl.load(do_ptrs, mask=rows[:, None] < S, other=0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION)
        dot = tl.load(dot_ptrs, mask=rows[None, :] < S, other=0.0)
        dp_t = tl.dot(v, dot, input_precision=PRECISION).to(ACC)
        ds_t = p_t * (dp_t - delta[None, :])
        q = tl.load(q_ptrs, mask=rows[:, None] < S, other=0.0)
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=PRECISION)
        qt_ptrs += BLOCK_M * sqs
        q_ptrs += BLOCK_M * sqs
        dot_ptrs += BLOCK_M * sds
        do_ptrs += BLOCK_M * sds
    tl.store(DK + kv_offsets, (dk * scale).to(DK.dtype.element_ty), mask=keys[:, None] < S)
    tl.store(DV + kv_offsets, dv.to(DV.dtype.element_ty), mask=keys[:, None] < S)


@tegula.jit
def attention_dq_kernel(Q, K, V, DO, O, LSE, DQ, DELTA, S, H, sqb, sqh, sqs, skb, skh, sks, svb, svh, svs, sdb, sdh,
                        sds, sob, soh, sos, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q = _load_rows(Q, _head_base(H, sqb, sqh), rows, S, sqs, HEAD_DIM)
    do = _load_rows(DO, _head_base(H, sdb, sdh), rows, S, sds, HEAD_DIM)
    lse = tl.load(LSE + head * S + rows, mask=rows < S, other=0.0)
    o = _load_rows(O, _head_base(H, sob, soh), rows, S, sos, HEAD_DIM)
    delta = tl.sum(o.to(ACC) * do.to(ACC), axis=1)
    tl.store(DELTA + head * S + rows, delta, mask=rows < S)  # for the dK/dV kernel, launched after this one
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=ACC)
    hi = S
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, S)
    # K twice: transposed for q k^T, as rows for dS K; V transposed for dO v^T.
    k_base, v_base = _head_base(H, skb, skh), _head_base(H, svb, svh)
    kt_ptrs = K + k_base + offs_n[None, :] * sks + dims[:, None]
    k_ptrs = K + k_base + offs_n[:, None] * sks + dims[None, :]
    vt_ptrs = V + v_base + offs_n[None, :] * svs + dims[:, None]
    for start_n in range(0, hi, BLOCK_N):
        keys = start_n + offs_n
        kt = tl.load(kt_ptrs, mask=keys[None, :] < S, other=0.0)
        visible = _visible(rows[:, None], keys[None, :], S, CAUSAL)
        s = tl.dot(q, kt, input_precision=PRECISION).to(ACC) * scale
        p = tl.where(visible, tl.exp(s - lse[:, None]), 0.0)
        vt = tl.load(vt_ptrs, mask=keys[None, :] < S, other=0.0)
        dp = tl.dot(do, vt, input_precision=PRECISION).to(ACC)
        ds = p * (dp - delta[:, None])
        k = tl.load(k_ptrs, mask=keys[:, None] < S, other=0.0)
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PRECISION)
        kt_ptrs += BLOCK_N * sks
        k_ptrs += BLOCK_N * sks
        vt_ptrs += BLOCK_N * svs
    tl.store(DQ + head * S * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :],
             (dq * scale).to(DQ.dtype.element_ty), mask=rows[:, None] < S)


def _check(q, k, v):
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape or not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"attention takes q, k, v of one shape [B, H, S, D] and one dtype, got {tuple(q.shape)} "
                         f"{q.dtype}, {tuple(k.shape)} {k.dtype} and {tuple(v.shape)} {v.dtype}")
    D = q.shape[-1]
    if D < 16 or D & (D - 1):
        raise ValueError(f"attention needs a head dim that is a power of two >= 16 (a tile size), got {D}")
    if q.dtype not in _rows.FLOATING:
        raise ValueError(f"attention takes q, k, v of a floating dtype (float16, bfloat16, float32, float64), got "
                         f"{q.dtype}")


def _in_place(t: torch.Tensor) -> torch.Tensor:
    """t as the kernels read it: any strides over [B, H, S], the head dim contiguous."""
    return t if t.stride(-1) == 1 else t.contiguous()


def _strides(t: torch.Tensor) -> tuple:
    return t.stride(0), t.stride(1), t.stride(2)


def _config(q):
    return attention_config.choose(q.device.type, q.shape[-1], str(q.dtype).removeprefix("torch."))


def _grid(q, block: int):
    """One program per `block` rows (or keys) of each (batch, head)."""
    B, H, S, _ = q.shape
    return (tegula.cdiv(S, block), B * H)


def _output_like(q: torch.Tensor) -> torch.Tensor:
    """The forward's output, [B, H, S, D] in q's order of dimensions: when q's heads sit side by side in
    its rows (a [B, S, H, D] tensor seen as [B, H, S, D], as a model's head split makes it), out is that
    view too, so that merging the heads back into [B, S, H * D] needs no copy."""
    B, H, S, D = q.shape
    if H > 1 and S > 1 and q.stride(1) < q.stride(2):
        return q.new_empty_strided((B, H, S, D), (S * H * D, D, H * D, 1))  # a transposed [B, S, H, D]
    return q.new_empty(B, H, S, D)


def _forward_fake(q, k, v, causal, scale):
    _check(q, k, v)
    return _output_like(q), q.new_empty(q.shape[:-1], dtype=_rows.accumulator(q))


@custom_op("tegula::attention", fake=_forward_fake)
def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                      scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse): out like q, lse [B, H, S] (float32, float64 for float64 inputs)."""
    _check(q, k, v)
    out = _output_like(q)
    lse = q.new_empty(*q.shape[:-1], dtype=_rows.accumulator(q))
    forward_into(q, k, v, causal, scale, out, lse)
    return out, lse


def forward_into(q, k, v, causal: bool, scale: float, out, lse) -> None:
    """The forward's launches: out ([B, H, S, D], any strides with the head dim contiguous) and lse
    (contiguous [B, H, S]) from q, k, v (read in place where their strides allow)."""
    q, k, v = _in_place(q), _in_place(k), _in_place(v)
    if not q.numel():
        return
    if attention_tma.applies(q) and not attention_config.overridden():
        attention_tma.forward(q, k, v, causal, scale, out, lse)
        return
    tiles = _config(q).fwd
    _, H, S, D = q.shape
    attention_forward_kernel[_grid(q, tiles.block_m)](
        q, k, v, out, lse, S, H, *_strides(q), *_strides(k), *_strides(v), *_strides(out), scale, HEAD_DIM=D,
        BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, CAUSAL=causal, ACC=compute_dtype(q),
        PRECISION=dot_precision(q), **tiles.options())


def _backward_fake(do, q, k, v, out, lse, causal, scale):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


@custom_op("tegula::attention_backward", fake=_backward_fake)
def attention_backward(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                       lse: torch.Tensor, causal: bool,
                       scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) from the forward's inputs, output and log-sum-exp."""
    dq, dk, dv = q.new_empty(*q.shape), k.new_empty(*k.shape), v.new_empty(v.shape)
    backward_into(do, q, k, v, out, lse, causal, scale, dq, dk, dv)
    return dq, dk, dv


def backward_into(do, q, k, v, out, lse, causal: bool, scale: float, dq, dk, dv) -> None:
    """The backward's launches: dq, dk, dv (contiguous [B, H, S, D]) from the forward's inputs (read in
    place where their strides allow), output and log-sum-exp."""
    do, q, k, v, out = (_in_place(t) for t in (do, q, k, v, out))
    if not q.numel():
        return
    lse = lse.contiguous()
    if attention_tma.applies(q) and not attention_config.overridden():
        attention_tma.backward(do, q, k, v, out, lse, causal, scale, dq, dk, dv)
        return
    _, H, S, D = q.shape
    meta = dict(HEAD_DIM=D, ACC=compute_dtype(q))
    delta = torch.empty_like(lse)  # rowsum(dO * O), stored by the dQ kernel for the dK/dV kernel
    config = _config(q)
    dkdv, dqt, precision = config.dkdv, config.dq, dot_precision(q)
    strides = (*_strides(q), *_strides(k), *_strides(v), *_strides(do))
    attention_dq_kernel[_grid(q, dqt.block_m)](q, k, v, do, out, lse, dq, delta, S, H, *strides, *_strides(out),
                                               scale, BLOCK_M=dqt.block_m, BLOCK_N=dqt.block_n, CAUSAL=causal,
                                               PRECISION=precision, **meta, **dqt.options())
    attention_dkdv_kernel[_grid(q, dkdv.block_n)](q, k, v, do, lse, delta, dk, dv, S, H, *strides, scale,
                                                  BLOCK_M=dkdv.block_m, BLOCK_N=dkdv.block_n, CAUSAL=causal,
                                                  PRECISION=precision, **meta, **dkdv.options())


def precompile(q: torch.Tensor, causal: bool, config, kernels=("fwd", "dkdv", "dq")) -> None:
    """Compiles (or loads) the named kernels for inputs like q under ``config`` (an
    ``attention_config.AttentionConfig``) without launching them; the compiler
    releases the GIL, so threads compile several configurations at once
    (tools/attention_sweep.py)."""
    q = _in_place(q)
    _, H, S, D = q.shape
    stats = torch.empty(q.shape[:-1], dtype=_rows.accumulator(q), device=q.device)
    meta = dict(HEAD_DIM=D, CAUSAL=causal, ACC=compute_dtype(q), PRECISION=dot_precision(q))
    # Every input with q's strides, as the sweep passes them.
    pointers = {"fwd": (q, q, q, q, stats, S, H, *_strides(q) * 4),
                "dkdv": (q, q, q, q, stats, stats, q, q, S, H, *_strides(q) * 4),
                "dq": (q, q, q, q, q, stats, q, stats, S, H, *_strides(q) * 5)}
    kernel = {"fwd": attention_forward_kernel, "dkdv": attention_dkdv_kernel, "dq": attention_dq_kernel}
    for name in kernels:
        tiles = getattr(config, name)
        kernel[name].warmup(*pointers[name], 1.0, BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, **meta,
                            **tiles.options())


def _backward(saved, do, _dlse):
    if do is None:  # out unused (lse carries no gradient)
        return None, None, None, None, None
    return (*attention_backward(do, *saved), None, None)


register_autograd(attention_forward, _backward, non_differentiable=(1,),
                  save=lambda inputs, output: (*inputs[:3], output[0], output[1], inputs[3], inputs[4]))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              scale: float = None) -> torch.Tensor:
    """``softmax(q k^T * scale) v`` for q, k, v of shape [B, H, S, D] (D a power of two >= 16), like
    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)``;
    scale defaults to 1/sqrt(D)."""
    if scale is None:
        _check(q, k, v)  # before the default scale divides by the head dim
        scale = 1.0 / math.sqrt(q.shape[-1])
    return attention_forward(q, k, v, causal, scale)[0]
