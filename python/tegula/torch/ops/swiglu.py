"""SwiGLU's gate: ``y = silu(a) * b`` elementwise, ``silu(a) = a * sigmoid(a)``.

Backward, with ``s = sigmoid(a)``: ``da = dy * b * s * (1 + a * (1 - s))``
and ``db = dy * a * s``; one kernel recomputes s and writes both.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

BLOCK = 1024


@tegula.jit
def swiglu_forward_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr, ACC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(ACC)
    tl.store(y_ptr + offs, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def swiglu_backward_kernel(dy_ptr, a_ptr, b_ptr, da_ptr, db_ptr, n, BLOCK: tl.constexpr, ACC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(ACC)
    s = tl.sigmoid(a)
    tl.store(da_ptr + offs, (dy * b * s * (1.0 + a * (1.0 - s))).to(da_ptr.dtype.element_ty), mask=mask)
    tl.store(db_ptr + offs, (dy * a * s).to(db_ptr.dtype.element_ty), mask=mask)


def _check_same_shape(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"swiglu takes a and b of one shape and dtype, got {tuple(a.shape)} {a.dtype} and "
                         f"{tuple(b.shape)} {b.dtype}")


def _forward_fake(a, b):
    _check_same_shape(a, b)
    return a.new_empty(a.shape)


@custom_op("tegula::swiglu", fake=_forward_fake)
def swiglu_forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _check_same_shape(a, b)
    a, b = a.contiguous(), b.contiguous()
    y = torch.empty_like(a)
    n = a.numel()
    swiglu_forward_kernel[(tegula.cdiv(n, BLOCK),)](a, b, y, n, BLOCK=BLOCK, ACC=compute_dtype(a))
    return y


@custom_op("tegula::swiglu_backward", fake=lambda dy, a, b: (a.new_empty(a.shape), b.new_empty(b.shape)))
def swiglu_backward(dy: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dy, a, b = dy.contiguous(), a.contiguous(), b.contiguous()
    da, db = torch.empty_like(a), torch.empty_like(b)
    n = a.numel()
    swiglu_backward_kernel[(tegula.cdiv(n, BLOCK),)](dy, a, b, da, db, n, BLOCK=BLOCK, ACC=compute_dtype(a))
    return da, db


register_autograd(swiglu_forward, lambda saved, dy: swiglu_backward(dy, *saved), save=lambda inputs, output: inputs)


def swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``silu(a) * b`` for a and b of one shape (a the gate projection, b the up projection)."""
    return swiglu_forward(a, b)
