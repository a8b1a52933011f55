"""Rotary position embedding (the rotate-half form of GPT-NeoX and Llama).

x has shape [..., T, H, D] (positions, heads, head dim; D even) and cos and
sin have shape [T, D/2]. With x1 the first half of a head and x2 the second,
``y1 = x1 * cos - x2 * sin`` and ``y2 = x2 * cos + x1 * sin``. The map is a
rotation by the position's angles, so its backward is the rotation by the
opposite angles: the same kernel with sin negated. The tables are constants
of the model (no gradient flows to them).

Each program rotates BLOCK_R rows (one head at one position each) as a
[BLOCK_R, D/2] tile.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

BLOCK_R = 16


@tegula.jit
def rotary_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, R, T, H, half, sin_sign, stride_b, stride_t, stride_h,
                  BLOCK_R: tl.constexpr, BLOCK_HALF: tl.constexpr, ACC: tl.constexpr):
    # x is read through its strides over [B, T, H] (its head dim contiguous); y is contiguous.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_HALF)
    mask = (rows < R)[:, None] & (cols < half)[None, :]
    position = (rows // H) % T
    wide = rows.to(tl.int64)
    source = (wide // (T * H)) * stride_b + ((wide // H) % T) * stride_t + (wide % H) * stride_h
    x_first = source[:, None] + cols[None, :]
    first = wide[:, None] * (2 * half) + cols[None, :]
    table = position[:, None] * half + cols[None, :]
    x1 = tl.load(x_ptr + x_first, mask=mask, other=0.0).to(ACC)
    x2 = tl.load(x_ptr + x_first + half, mask=mask, other=0.0).to(ACC)
    c = tl.load(cos_ptr + table, mask=mask, other=0.0).to(ACC)
    s = tl.load(sin_ptr + table, mask=mask, other=0.0).to(ACC) * sin_sign
    tl.store(y_ptr + first, (x1 * c - x2 * s).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + first + half, (x2 * c + x1 * s).to(y_ptr.dtype.element_ty), mask=mask)


def _check(x, cos, sin):
    if x.dim() < 3 or x.shape[-1] % 2:
        raise ValueError(f"rotary_embedding takes x of shape [..., T, H, D] with D even, got {tuple(x.shape)}")
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
    # Read in place when the head dim is contiguous and the leading dims merge into one batch dim.
    rows = x if x.stride(-1) == 1 else x.contiguous()
    try:
        rows = rows.view(-1, T, H, D)
    except RuntimeError:
        rows = rows.contiguous().view(-1, T, H, D)
    y = x.new_empty(x.shape)
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


def rotary_tables(T: int, D: int, base: float = 10000.0, dtype=torch.float32, device=None) -> tuple:
    """(cos, sin) of shape [T, D/2]: position t, pair i turns by ``t * base^(-2i/D)``.
    Plain torch: the tables are built once per model, not per step."""
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=device) / D)
    angles = torch.outer(torch.arange(T, dtype=torch.float64, device=device), inv_freq)
    return angles.cos().to(dtype), angles.sin().to(dtype)
