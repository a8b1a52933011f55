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

from tegula.torch import custom_op, register_autograd

from . import _rows, rotary
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


@custom_op("tegula::rotary_attention", fake=_forward_fake)
def rotary_attention_forward(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, causal: bool,
                             scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(out, lse, q, k): out [B, T, H, D], lse [B, H, T] (float32, float64 for float64 qkv), q and k
    rotated, [B, T, H, D]. lse, q and k are for the backward and carry no gradient."""
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


@custom_op("tegula::rotary_attention_backward", fake=_backward_fake)
def rotary_attention_backward(dout: torch.Tensor, qkv: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                              out: torch.Tensor, lse: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                              causal: bool, scale: float) -> torch.Tensor:
    """The gradient of qkv, [B, T, 3, H, D], from out's gradient and the forward's qkv, rotated q and
    k, output and log-sum-exp."""
    qkv = _rows_of(qkv)
    B, T, _, H, D = qkv.shape
    dqkv = qkv.new_empty(B, T, 3, H, D)
    if not dqkv.numel():
        return dqkv
    dq, dk, dv = qkv.new_empty(B, H, T, D), qkv.new_empty(B, H, T, D), qkv.new_empty(B, H, T, D)
    backward_into(_heads_first(dout), _heads_first(q), _heads_first(k), _heads_first(qkv[:, :, 2]),
                  _heads_first(out), lse, causal, scale, dq, dk, dv)
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
