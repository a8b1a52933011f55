"""Rotary position embedding (the rotate-half form of GPT-NeoX and Llama).

x has shape [..., T, H, D] (positions, heads, head dim; D even) and cos and
sin have shape [T, D/2]. With x1 the first half of a head and x2 the second,
``y1 = x1 * cos - x2 * sin`` and ``y2 = x2 * cos + x1 * sin``. The map is a
rotation by the position's angles, so its backward is the rotation by the
opposite angles: the same kernel with sin negated. The tables are constants
of the model (no gradient flows to them).

Each program rotates BLOCK_R rows (one head at one position each) as a
[BLOCK_R, D/2] tile.

``rotary_qkv`` takes the output of one fused q/k/v projection, [..., T, 3,
H, D], and returns q and k rotated and v, as three [..., T, H, D] tensors,
in one pass. Its backward writes the gradient of the projection's output in
one pass too; with ``qkv.unbind(-3)`` and two rotary_embedding calls,
autograd would stack dq, dk and dv in another pass over memory.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows

BLOCK_R = 64  # rows per program: tools/hopper/rotary_probe.py on the H200 (benchmarks/results/2026-12-03-h200-session23.md)


@tegula.jit
def rotary_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, R, T, H, half, sin_sign, stride_b, stride_t, stride_h,
                  BLOCK_R: tl.constexpr, BLOCK_HALF: tl.constexpr, ACC: tl.constexpr):
    # x is read through its strides over [B, T, H] (its head dim contiguous); y is contiguous.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_HALF)
    mask = (rows < R)[:, None] & (cols < half)[None, :]
    wide = rows.to(tl.int64)
    bt = wide // H  # two divisions of 64-bit integers (each a long instruction sequence) for b, t and h
    b = bt // T
    t, h = bt - b * T, wide - bt * H
    x_first = (b * stride_b + t * stride_t + h * stride_h)[:, None] + cols[None, :]
    first = wide[:, None] * (2 * half) + cols[None, :]
    table = t[:, None] * half + cols[None, :]
    x1 = tl.load(x_ptr + x_first, mask=mask, other=0.0).to(ACC)
    x2 = tl.load(x_ptr + x_first + half, mask=mask, other=0.0).to(ACC)
    c = tl.load(cos_ptr + table, mask=mask, other=0.0).to(ACC)
    s = tl.load(sin_ptr + table, mask=mask, other=0.0).to(ACC) * sin_sign
    tl.store(y_ptr + first, (x1 * c - x2 * s).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + first + half, (x2 * c + x1 * s).to(y_ptr.dtype.element_ty), mask=mask)


def _batched(x: torch.Tensor, T: int, H: int, D: int) -> torch.Tensor:
    """x ([..., T, H, D], head dim contiguous) as [B, T, H, D], a view where the leading dims merge."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    if x.dim() == 4:  # already [B, T, H, D]: no view to make (a view costs about a microsecond)
        return x
    try:
        return x.view(-1, T, H, D)
    except RuntimeError:
        return x.contiguous().view(-1, T, H, D)


def _check(x, cos, sin):
    if x.dim() < 3 or x.shape[-1] % 2:
        raise ValueError(f"rotary_embedding takes x of shape [..., T, H, D] with D even, got {tuple(x.shape)}")
    if x.dtype not in _rows.FLOATING:
        raise ValueError(f"rotary_embedding takes x of a floating dtype (float16, bfloat16, float32, float64), "
                         f"got {x.dtype}")
    want = (x.shape[-3], x.shape[-1] // 2)
    if tuple(cos.shape) != want or tuple(sin.shape) != want:
        raise ValueError(f"rotary_embedding takes cos and sin of shape {want} for x of shape {tuple(x.shape)}, "
                         f"got {tuple(cos.shape)} and {tuple(sin.shape)}")


def _fake(x, cos, sin, sin_sign):
    _check(x, cos, sin)
    return x.new_empty(x.shape)


@custom_op("tegula::rotary_embedding", fake=_fake)
def rotary_forward(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, sin_sign: float) -> torch.Tensor:
    """x rotated by the angles whose cosines and sines (times sin_sign) the tables hold."""
    _check(x, cos, sin)
    T, H, D = x.shape[-3:]
    rows = _batched(x, T, H, D)  # read in place where the strides allow
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    R = x.numel() // D
    rotary_kernel[(tegula.cdiv(R, BLOCK_R),)](rows, cos.contiguous(), sin.contiguous(), y, R, T, H, D // 2, sin_sign,
                                              *rows.stride()[:3], BLOCK_R=BLOCK_R,
                                              BLOCK_HALF=tegula.next_power_of_2(D // 2), ACC=compute_dtype(x))
    return y


def _backward(saved, dy):
    cos, sin, sin_sign = saved
    return rotary_forward(dy, cos, sin, -sin_sign), None, None, None


register_autograd(rotary_forward, _backward, save=lambda inputs, output: (inputs[1], inputs[2], inputs[3]))


def rotary_embedding(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x ([..., T, H, D]) with rotary position embedding from cos and sin ([T, D/2])."""
    return rotary_forward(x, cos, sin, 1.0)


# Six row sets of [R, D] addressed through (batch, position, head) strides: three sources and three
# destinations. q and k are rotated (sin_sign -1 undoes the rotation, for the backward), v is copied
# (unless v_out is None).
# k and v start src_slot and 2 * src_slot elements past their pointers (dst_slot for the outputs): the
# three slots of one [..., T, 3, H, D] tensor pass as that tensor three times, without views.
@tegula.jit
def rotary_qkv_kernel(q_ptr, k_ptr, v_ptr, q_out, k_out, v_out, cos_ptr, sin_ptr, R, T, H, half, sin_sign,
                      src_slot, dst_slot, sq_b, sq_t, sq_h, sk_b, sk_t, sk_h, sv_b, sv_t, sv_h, so_b, so_t, so_h,
                      BLOCK_R: tl.constexpr, BLOCK_HALF: tl.constexpr, ACC: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_HALF)
    mask = (rows < R)[:, None] & (cols < half)[None, :]
    wide = rows.to(tl.int64)
    bt = wide // H  # two divisions of 64-bit integers (each a long instruction sequence) for b, t and h
    b = bt // T
    t, h = bt - b * T, wide - bt * H
    table = t[:, None] * half + cols[None, :]
    c = tl.load(cos_ptr + table, mask=mask, other=0.0).to(ACC)
    s = tl.load(sin_ptr + table, mask=mask, other=0.0).to(ACC) * sin_sign
    out = (b * so_b + t * so_t + h * so_h)[:, None] + cols[None, :]
    q = (b * sq_b + t * sq_t + h * sq_h)[:, None] + cols[None, :]
    x1 = tl.load(q_ptr + q, mask=mask, other=0.0).to(ACC)
    x2 = tl.load(q_ptr + q + half, mask=mask, other=0.0).to(ACC)
    tl.store(q_out + out, (x1 * c - x2 * s).to(q_out.dtype.element_ty), mask=mask)
    tl.store(q_out + out + half, (x2 * c + x1 * s).to(q_out.dtype.element_ty), mask=mask)
    k = (b * sk_b + t * sk_t + h * sk_h + src_slot)[:, None] + cols[None, :]
    k_at = out + dst_slot
    x1 = tl.load(k_ptr + k, mask=mask, other=0.0).to(ACC)
    x2 = tl.load(k_ptr + k + half, mask=mask, other=0.0).to(ACC)
    tl.store(k_out + k_at, (x1 * c - x2 * s).to(k_out.dtype.element_ty), mask=mask)
    tl.store(k_out + k_at + half, (x2 * c + x1 * s).to(k_out.dtype.element_ty), mask=mask)
    if v_out is not None:  # None: q and k only (rotary_attention reads v where it is)
        v = (b * sv_b + t * sv_t + h * sv_h + 2 * src_slot)[:, None] + cols[None, :]
        v_at = out + 2 * dst_slot
        tl.store(v_out + v_at, tl.load(v_ptr + v, mask=mask, other=0.0).to(v_out.dtype.element_ty), mask=mask)
        tl.store(v_out + v_at + half, tl.load(v_ptr + v + half, mask=mask, other=0.0).to(v_out.dtype.element_ty),
                 mask=mask)


def _check_qkv(qkv, cos, sin):
    if qkv.dim() < 4 or qkv.shape[-3] != 3 or qkv.shape[-1] % 2:
        raise ValueError(f"rotary_qkv takes qkv of shape [..., T, 3, H, D] with D even, got {tuple(qkv.shape)}")
    if qkv.dtype not in _rows.FLOATING:
        raise ValueError(f"rotary_qkv takes qkv of a floating dtype (float16, bfloat16, float32, float64), got "
                         f"{qkv.dtype}")
    want = (qkv.shape[-4], qkv.shape[-1] // 2)
    if tuple(cos.shape) != want or tuple(sin.shape) != want:
        raise ValueError(f"rotary_qkv takes cos and sin of shape {want} for qkv of shape {tuple(qkv.shape)}, "
                         f"got {tuple(cos.shape)} and {tuple(sin.shape)}")


def _launch_qkv(sources, destinations, cos, sin, sin_sign, T, H, D, src_slot=0, dst_slot=0, strides=None):
    """Rotates q and k of sources (three [..., T, H, D] tensors, or one [B, T, 3, H, D] tensor three times
    with src_slot its slot stride) into destinations (the same two forms, dst_slot for the second), and
    copies v. strides: the (b, t, h) strides of the three sources and the destinations, when the caller
    has them (then no views are made)."""
    if strides is None:
        # Three tensors each way: any leading dims, viewed as one batch dim (copied when they do not merge).
        sources = [_batched(x, T, H, D) for x in sources]
        destinations = [_batched(x, T, H, D) for x in destinations]
        # The destinations are three new tensors alike or the three slots of one: they share strides, and
        # _batched views them, never copies them.
        strides = [stride for x in (*sources, destinations[0]) for stride in x.stride()[:3]]
    if not destinations[0].numel():
        return
    R = destinations[0].numel() // (3 * D if dst_slot else D)
    launch_qkv_rows(sources, destinations, cos, sin, sin_sign, R, T, H, D, src_slot, dst_slot, strides)


def launch_qkv_rows(sources, destinations, cos, sin, sin_sign, R, T, H, D, src_slot, dst_slot, strides) -> None:
    """rotary_qkv_kernel over R rows of (batch, position, head), every stride given: sources and
    destinations as in _launch_qkv (v's source and destination None: q and k only)."""
    grid, scalars, constexprs = qkv_rows_launch(sin_sign, R, T, H, D, src_slot, dst_slot, strides,
                                                compute_dtype(sources[0]))
    rotary_qkv_kernel[grid](*sources, *destinations, cos.contiguous(), sin.contiguous(), *scalars, **constexprs)


def qkv_rows_launch(sin_sign, R, T, H, D, src_slot, dst_slot, strides, acc) -> tuple:
    """(grid, the arguments after the tensors, the constexprs) of launch_qkv_rows's launch (its tensors: the
    three sources, the three destinations, cos and sin), accumulating in `acc`: what an op keeps in its layout
    to launch again."""
    return ((tegula.cdiv(R, BLOCK_R),), (R, T, H, D // 2, sin_sign, src_slot, dst_slot, *strides),
            dict(BLOCK_R=BLOCK_R, BLOCK_HALF=tegula.next_power_of_2(D // 2), ACC=acc))


def _qkv_fake(qkv, cos, sin):
    _check_qkv(qkv, cos, sin)
    shape = (*qkv.shape[:-3], qkv.shape[-2], qkv.shape[-1])
    return qkv.new_empty(*shape), qkv.new_empty(*shape), qkv.new_empty(*shape)


@custom_op("tegula::rotary_qkv", fake=_qkv_fake)
def rotary_qkv_forward(qkv: torch.Tensor, cos: torch.Tensor,
                       sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q, k, v), each [..., T, H, D]: q and k rotated, v a copy."""
    outputs = _qkv_fake(qkv, cos, sin)
    if qkv.dim() == 5 and qkv.stride(-1) == 1:  # a model's [B, T, 3, H, D]: its slots read in place
        sb, st, slot, sh, _ = qkv.stride()
        _, T, _, H, D = qkv.shape
        _launch_qkv((qkv, qkv, qkv), outputs, cos, sin, 1.0, T, H, D, src_slot=slot,
                    strides=(sb, st, sh) * 3 + (T * H * D, H * D, D))
    else:
        _launch_qkv(qkv.unbind(-3), outputs, cos, sin, 1.0, *outputs[0].shape[-3:])
    return outputs


@custom_op("tegula::rotary_qkv_backward",
           fake=lambda dq, dk, dv, cos, sin: dq.new_empty((*dq.shape[:-2], 3, *dq.shape[-2:])))
def rotary_qkv_backward(dq: torch.Tensor, dk: torch.Tensor, dv: torch.Tensor, cos: torch.Tensor,
                        sin: torch.Tensor) -> torch.Tensor:
    """The gradient of qkv, [..., T, 3, H, D]: dq and dk rotated back, dv in place."""
    dqkv = dq.new_empty(*dq.shape[:-2], 3, *dq.shape[-2:])
    grads = (dq, dk, dv)
    if all(g.dim() == 4 and g.stride(-1) == 1 for g in grads):  # a model's [B, T, H, D] gradients
        _, T, H, D = dq.shape
        _launch_qkv(grads, (dqkv, dqkv, dqkv), cos, sin, -1.0, T, H, D, dst_slot=H * D,
                    strides=(*dq.stride()[:3], *dk.stride()[:3], *dv.stride()[:3], 3 * T * H * D, 3 * H * D, D))
    else:
        _launch_qkv(grads, dqkv.unbind(-3), cos, sin, -1.0, *dq.shape[-3:])
    return dqkv


def _qkv_backward(saved, dq, dk, dv):
    cos, sin = saved
    like = next(g for g in (dq, dk, dv) if g is not None)
    dq, dk, dv = (torch.zeros_like(like) if g is None else g for g in (dq, dk, dv))
    return rotary_qkv_backward(dq, dk, dv, cos, sin), None, None


register_autograd(rotary_qkv_forward, _qkv_backward, save=lambda inputs, output: (inputs[1], inputs[2]))


def rotary_qkv(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple:
    """(q, k, v) of one fused projection's output qkv ([..., T, 3, H, D]), each [..., T, H, D], with rotary
    position embedding applied to q and k (as ``rotary_embedding``) and v as it is."""
    return rotary_qkv_forward(qkv, cos, sin)


def rotary_tables(T: int, D: int, base: float = 10000.0, dtype=torch.float32, device=None) -> tuple:
    """(cos, sin) of shape [T, D/2]: position t, pair i turns by ``t * base^(-2i/D)``.
    Plain torch: the tables are built once per model, not per step."""
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=device) / D)
    angles = torch.outer(torch.arange(T, dtype=torch.float64, device=device), inv_freq)
    return angles.cos().to(dtype), angles.sin().to(dtype)
