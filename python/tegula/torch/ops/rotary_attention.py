"""Rotary position embedding and attention in one op, over one fused
projection's output:

    out = attention(rotary(q), rotary(k), v)  with  q, k, v = qkv.unbind(2)

qkv has shape [B, T, 3, H, D] (D a power of two >= 16), cos and sin [T, D/2]
(``rotary_tables``); out is [B, T, H, D], so merging its heads for the next
projection is a view. It computes what ``rotary_qkv`` followed by
``attention`` computes, with the same kernels, in one custom op each way: a
compiled training step then makes one op call less per layer and direction,
and hands around fewer tensors (each output of a custom op is a call and a
metadata check in Inductor's wrapper). v is read where it is in qkv, never
copied; q and k are rotated into tensors of their own, which the backward
reads (they are outputs of the op, as the log-sum-exp is, and carry no
gradient).

Backward: attention's backward gives the gradients of the rotated q and k
and of v; one rotary_qkv kernel turns them into qkv's gradient
[B, T, 3, H, D].
"""

from __future__ import annotations

import math

import torch

import tegula.language as tl
from tegula.torch import custom_op, register_autograd

from . import _rows, attention_config, attention_tma, rotary
from ._empty import allocator, sizes_and_strides
from ._layouts import Layouts
from .attention import backward_into, forward_into  # the package's `attention` is the function


def _check(qkv, cos, sin):
    if qkv.dim() != 5 or qkv.shape[2] != 3:
        raise ValueError(f"rotary_attention takes qkv of shape [B, T, 3, H, D], got {tuple(qkv.shape)}")
    D = qkv.shape[-1]
    if D < 16 or D & (D - 1):
        raise ValueError(f"rotary_attention needs a head dim that is a power of two >= 16 (a tile size), got {D}")
    rotary._check_qkv(qkv, cos, sin)


def _rows_of(qkv: torch.Tensor) -> torch.Tensor:
    return qkv if qkv.stride(-1) == 1 else qkv.contiguous()  # the kernels read rows of the head dim


def _heads_first(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2)  # [B, T, H, D] seen as attention's [B, H, T, D]


def _forward_fake(qkv, cos, sin, causal, scale):
    _check(qkv, cos, sin)
    B, T, _, H, D = qkv.shape
    return (qkv.new_empty(B, T, H, D), qkv.new_empty(B, H, T, dtype=_rows.accumulator(qkv)),
            qkv.new_empty(B, T, H, D), qkv.new_empty(B, T, H, D))


# --- Hopper's descriptor attention, with what the metadata decides worked out once ---------------------------
#
# A training step calls the op with the same shapes, strides and dtypes at every step. The general path
# derives the same things from them at every call (checks, heads-first views, their rows_views, strides,
# grids and argument lists), a few dozen torch calls that cost a compiled step more host time than the op's
# launches. On an sm_90 GPU with 16-bit qkv the op keeps all of it by the metadata of its arguments, the
# scalars and the tile tables' entries (Layouts): the sizes it allocates and each launch's grid, arguments
# after the tensors and constexprs, as the general path's launch functions describe them
# (attention_tma.forward_launch, backward_launches; rotary.qkv_rows_launch). Anything else (other devices,
# odd strides, a sweep's configuration, the one-kernel backward) takes the general path.

_FORWARD_LAYOUTS, _BACKWARD_LAYOUTS = Layouts(), Layouts()
FAST = True  # False: every call takes the general path (tests compare the two)


def _heads_first_view(shape, strides, element_size, address):
    """rows_view of a [B, T, H, D] layout seen as [B, H, T, D]."""
    B, T, H, D = shape
    return attention_tma.rows_view((B, H, T, D), (strides[0], strides[2], strides[1], strides[3]), element_size,
                                   address)


def _fast(qkv) -> bool:
    """Whether a call may take the kept layouts: a 5-dimensional qkv, no sweep's configuration in this context
    (the environment's is read when a layout is built)."""
    return FAST and qkv.dim() == 5 and not attention_config.in_use()


def _forward_layout(qkv, cos, sin, causal, scale, tiles):
    """(the sizes and strides of q, k and out, those of lse, the rotary launch, the attention launch) for the
    descriptor path, or None."""
    _check(qkv, cos, sin)
    B, T, _, H, D = qkv.shape
    if (not attention_tma.applies(qkv) or tiles is None or attention_config.overridden() or qkv.stride(-1) != 1
            or not (cos.is_contiguous() and sin.is_contiguous()) or not B * T * H):
        return None
    sb, st, slot, sh, _ = qkv.stride()
    size = qkv.element_size()
    fresh = (T * H * D, H * D, D, 1)  # the strides of a new [B, T, H, D]; its address is aligned
    rotated = _heads_first_view((B, T, H, D), fresh, size, 0)
    v = _heads_first_view((B, T, H, D), (sb, st, sh, 1), size, qkv.data_ptr() + 2 * slot * size)
    if rotated is None or v is None:
        return None
    return (sizes_and_strides((B, T, H, D)), sizes_and_strides((B, H, T)),
            rotary.qkv_rows_launch(1.0, B * T * H, T, H, D, slot, 0, (sb, st, sh) * 3 + (T * H * D, H * D, D),
                                   tl.float32),
            attention_tma.forward_launch((rotated, rotated, v), (B, H, T, D), (T * H * D, D, H * D), causal, scale,
                                         tiles))


def _fast_forward(qkv, cos, sin, causal, scale):
    if not _fast(qkv):
        return None
    tiles = attention_tma.forward_tiles(qkv.shape[1], qkv.shape[4], causal)
    layout = _FORWARD_LAYOUTS.lookup((qkv, cos, sin), (causal, scale, tiles, rotary.BLOCK_R), _forward_layout, qkv,
                                     cos, sin, causal, scale, tiles)
    if layout is None:
        return None
    rows, stats, (grid, scalars, constexprs), attention = layout
    alloc, dtype = allocator(qkv.device), qkv.dtype
    q, k, out, lse = alloc(*rows, dtype), alloc(*rows, dtype), alloc(*rows, dtype), alloc(*stats, torch.float32)
    rotary.rotary_qkv_kernel[grid](qkv, qkv, None, q, k, None, cos, sin, *scalars, **constexprs)
    attention_tma.run_forward(attention, q, k, qkv.select(2, 2), out, lse)
    return out, lse, q, k


@custom_op("tegula::rotary_attention", fake=_forward_fake)
def rotary_attention_forward(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, causal: bool,
                             scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(out, lse, q, k): out [B, T, H, D], lse [B, H, T] (float32, float64 for float64 qkv), q and k
    rotated, [B, T, H, D]. lse, q and k are for the backward and carry no gradient."""
    result = _fast_forward(qkv, cos, sin, causal, scale)
    if result is not None:
        return result
    _check(qkv, cos, sin)
    qkv = _rows_of(qkv)
    B, T, _, H, D = qkv.shape
    q, k, out = qkv.new_empty(B, T, H, D), qkv.new_empty(B, T, H, D), qkv.new_empty(B, T, H, D)
    lse = qkv.new_empty(B, H, T, dtype=_rows.accumulator(qkv))
    if not out.numel():
        return out, lse, q, k
    sb, st, slot, sh, _ = qkv.stride()
    rotary.launch_qkv_rows((qkv, qkv, None), (q, k, None), cos, sin, 1.0, B * T * H, T, H, D, slot, 0,
                           (sb, st, sh) * 3 + (T * H * D, H * D, D))
    forward_into(_heads_first(q), _heads_first(k), _heads_first(qkv[:, :, 2]), causal, scale, _heads_first(out),
                 lse)
    return out, lse, q, k


def _backward_fake(dout, qkv, q, k, out, lse, cos, sin, causal, scale):
    return qkv.new_empty(qkv.shape)


def _backward_layout(dout, qkv, q, k, out, lse, cos, sin, causal, scale, tiles):
    """(the sizes and strides of dqkv, of delta, the attention launches) for the descriptor path, or None. The
    kernels store dq, dk and dv in dqkv's slots, dq and dk rotated back."""
    B, T, _, H, D = qkv.shape
    tensors = (dout, q, k, out)
    if (not attention_tma.applies(qkv) or None in tiles or attention_config.overridden() or qkv.stride(-1) != 1
            or any(t.shape != (B, T, H, D) or t.stride(-1) != 1 for t in tensors)
            or tuple(lse.shape) != (B, H, T) or not lse.is_contiguous() or lse.dtype != torch.float32
            or not (cos.is_contiguous() and sin.is_contiguous()) or not B * T * H):
        return None
    size = qkv.element_size()
    sb, st, slot, sh, _ = qkv.stride()
    v = _heads_first_view((B, T, H, D), (sb, st, sh, 1), size, qkv.data_ptr() + 2 * slot * size)
    vq, vk, vdo = (_heads_first_view((B, T, H, D), t.stride(), size, t.data_ptr()) for t in (q, k, dout))
    if None in (v, vq, vk, vdo):
        return None
    out_strides = (out.stride(0), out.stride(2), out.stride(1))  # (b, h, s)
    slots = (3 * T * H * D, D, 3 * H * D)  # the (b, h, s) strides of dqkv's slots
    return (sizes_and_strides((B, T, 3, H, D)), sizes_and_strides((B, H, T)),
            attention_tma.backward_launches((vq, vk, v, vdo), (B, H, T, D), out_strides,
                                            (slots, slots, H * D, 2 * H * D), causal, scale, tiles))


def _fast_backward(dout, qkv, q, k, out, lse, cos, sin, causal, scale):
    if not _fast(qkv):
        return None
    D = qkv.shape[4]
    if attention_tma.FUSED.get(D) is not None:  # the one-kernel backward: the general path
        return None
    tiles = (attention_tma.DQ.get(D), attention_tma.DKDV.get(D))
    layout = _BACKWARD_LAYOUTS.lookup((dout, qkv, q, k, out, lse, cos, sin), (causal, scale, tiles), _backward_layout,
                                      dout, qkv, q, k, out, lse, cos, sin, causal, scale, tiles)
    if layout is None:
        return None
    packed, stats, attention = layout
    alloc = allocator(qkv.device)
    dqkv, delta = alloc(*packed, qkv.dtype), alloc(*stats, torch.float32)
    attention_tma.run_backward(attention, q, k, qkv.select(2, 2), dout, out, lse, dqkv, dqkv, dqkv, delta, cos, sin)
    return dqkv


@custom_op("tegula::rotary_attention_backward", fake=_backward_fake)
def rotary_attention_backward(dout: torch.Tensor, qkv: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                              out: torch.Tensor, lse: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                              causal: bool, scale: float) -> torch.Tensor:
    """The gradient of qkv, [B, T, 3, H, D], from out's gradient and the forward's qkv, rotated q and
    k, output and log-sum-exp."""
    result = _fast_backward(dout, qkv, q, k, out, lse, cos, sin, causal, scale)
    if result is not None:
        return result
    qkv = _rows_of(qkv)
    B, T, _, H, D = qkv.shape
    dqkv = qkv.new_empty(B, T, 3, H, D)
    if not dqkv.numel():
        return dqkv
    heads_first = [_heads_first(t) for t in (dout, q, k, qkv[:, :, 2], out)]
    if (attention_tma.applies(qkv) and not attention_config.overridden() and attention_tma.FUSED.get(D) is None
            and cos.is_contiguous() and sin.is_contiguous()):
        # The descriptor kernels store the gradients in dqkv's slots themselves, dq and dk rotated back.
        attention_tma.backward(*heads_first, lse.contiguous(), causal, scale,
                               *(_heads_first(dqkv[:, :, i]) for i in range(3)), cos, sin)
        return dqkv
    dq, dk, dv = qkv.new_empty(B, H, T, D), qkv.new_empty(B, H, T, D), qkv.new_empty(B, H, T, D)
    backward_into(*heads_first, lse, causal, scale, dq, dk, dv)
    # dq, dk and dv are [B, H, T, D]: their (b, t, h) strides are (H T D, D, T D).
    grads = (H * T * D, D, T * D)
    rotary.launch_qkv_rows((dq, dk, dv), (dqkv, dqkv, dqkv), cos, sin, -1.0, B * T * H, T, H, D, 0, H * D,
                           grads * 3 + (3 * T * H * D, 3 * H * D, D))
    return dqkv


def _backward(saved, dout, _dlse, _dq, _dk):
    # lse, q and k carry no gradient (non_differentiable below): out's is the only one, None when unused.
    if dout is None:
        return None, None, None, None, None
    return rotary_attention_backward(dout, *saved), None, None, None, None


register_autograd(rotary_attention_forward, _backward, non_differentiable=(1, 2, 3),
                  save=lambda inputs, output: (inputs[0], output[2], output[3], output[0], output[1], *inputs[1:]))


def rotary_attention(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, causal: bool = False,
                     scale: float = None) -> torch.Tensor:
    """``attention`` of q and k rotated by ``rotary_embedding`` and v, all three from one projection's
    output qkv ([B, T, 3, H, D], D a power of two >= 16; cos and sin [T, D/2]), as [B, T, H, D]: what
    ``rotary_qkv`` and ``attention`` (on the heads-first views) compute, in one op each way. scale
    defaults to 1/sqrt(D)."""
    return rotary_attention_forward(qkv, cos, sin, causal, 1.0 / math.sqrt(qkv.shape[-1]) if scale is None
                                    else scale)[0]
