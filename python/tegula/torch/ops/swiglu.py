"""SwiGLU's gate: ``y = silu(a) * b`` elementwise, ``silu(a) = a * sigmoid(a)``.

Backward, with ``s = sigmoid(a)``: ``da = dy * b * s * (1 + a * (1 - s))``
and ``db = dy * a * s``; one kernel recomputes s and writes both.

Two ops share the kernels: ``swiglu(a, b)`` takes the gate and the up
projection as two tensors, and ``silu_and_mul(x)`` takes them as the two
halves of one projection's output ``x = [a | b]``. The second one's backward
writes ``[da | db]`` into one tensor: with ``a, b = x.chunk(2, -1)`` and
``swiglu(a, b)``, autograd would concatenate da and db in another pass over
memory.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows
from ._empty import allocator, empty, sizes_and_strides
from ._layouts import Layouts

# A program's tile: BLOCK_R rows by BLOCK_C columns of the [M, N] rows of the last dimension. The grid
# is one-dimensional, the tiles of a row of tiles consecutive (program p takes column block p % cdiv(N,
# BLOCK_C) of row block p // cdiv(N, BLOCK_C)): programs that run together then read neighbouring
# memory, which measured 3-4% faster on an H100 than consecutive row blocks of one column block
# (tools/hopper/elementwise_probe.py).
BLOCK_R, BLOCK_C = 8, 256


@tegula.jit
def _tile(M, N, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """(rows [BLOCK_R, 1] as int64, columns [1, BLOCK_C], their mask) of this program's tile."""
    pid = tl.program_id(0)
    column_blocks = tl.cdiv(N, BLOCK_C)
    rows = ((pid // column_blocks) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)[:, None]
    cols = ((pid % column_blocks) * BLOCK_C + tl.arange(0, BLOCK_C))[None, :]
    return rows, cols, (rows < M) & (cols < N)


# a and b are read through their row strides (a gate and an up projection are
# often two halves of one [M, 2N] output), b from offset_b elements past b_ptr
# (N with a_ptr and b_ptr both that output: no slice to make on the host); y,
# da and db are contiguous.
@tegula.jit
def swiglu_forward_kernel(a_ptr, b_ptr, y_ptr, M, N, stride_a, stride_b, offset_b, BLOCK_R: tl.constexpr,
                          BLOCK_C: tl.constexpr, ACC: tl.constexpr):
    rows, cols, mask = _tile(M, N, BLOCK_R, BLOCK_C)
    a = tl.load(a_ptr + rows * stride_a + cols, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + offset_b + rows * stride_b + cols, mask=mask, other=0.0).to(ACC)
    tl.store(y_ptr + rows * N + cols, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=mask)


# da and db are written with row stride stride_out: N for two tensors, 2N for the halves of one (db
# offset_db elements past db_ptr).
@tegula.jit
def swiglu_backward_kernel(dy_ptr, a_ptr, b_ptr, da_ptr, db_ptr, M, N, stride_dy, stride_a, stride_b, stride_out,
                           offset_b, offset_db, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr):
    rows, cols, mask = _tile(M, N, BLOCK_R, BLOCK_C)
    dy = tl.load(dy_ptr + rows * stride_dy + cols, mask=mask, other=0.0).to(ACC)
    a = tl.load(a_ptr + rows * stride_a + cols, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + offset_b + rows * stride_b + cols, mask=mask, other=0.0).to(ACC)
    s = tl.sigmoid(a)
    out = rows * stride_out + cols
    tl.store(da_ptr + out, (dy * b * s * (1.0 + a * (1.0 - s))).to(da_ptr.dtype.element_ty), mask=mask)
    tl.store(db_ptr + offset_db + out, (dy * a * s).to(db_ptr.dtype.element_ty), mask=mask)


def _grid(M: int, N: int) -> tuple:
    return (tegula.cdiv(M, BLOCK_R) * tegula.cdiv(N, BLOCK_C),)


def _check_same_shape(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"swiglu takes a and b of one shape and dtype, got {tuple(a.shape)} {a.dtype} and "
                         f"{tuple(b.shape)} {b.dtype}")
    if a.dtype not in _rows.FLOATING:
        raise ValueError(f"swiglu takes a and b of a floating dtype (float16, bfloat16, float32, float64), got {a.dtype}")


def _forward_fake(a, b):
    _check_same_shape(a, b)
    return a.new_empty(a.shape)


@custom_op("tegula::swiglu", fake=_forward_fake)
def swiglu_forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _check_same_shape(a, b)
    y = a.new_empty(a.shape)
    if a.numel():
        a2, b2 = _rows.strided_rows(a), _rows.strided_rows(b)
        M, N = a2.shape
        swiglu_forward_kernel[_grid(M, N)](a2, b2, y, M, N, a2.stride(0), b2.stride(0), 0, BLOCK_R=BLOCK_R,
                                           BLOCK_C=BLOCK_C, ACC=compute_dtype(a))
    return y


@custom_op("tegula::swiglu_backward", fake=lambda dy, a, b: (a.new_empty(a.shape), b.new_empty(b.shape)))
def swiglu_backward(dy: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    da, db = a.new_empty(a.shape), b.new_empty(b.shape)
    if a.numel():
        dy2, a2, b2 = _rows.strided_rows(dy), _rows.strided_rows(a), _rows.strided_rows(b)
        M, N = a2.shape
        swiglu_backward_kernel[_grid(M, N)](dy2, a2, b2, da, db, M, N, dy2.stride(0), a2.stride(0), b2.stride(0), N,
                                            0, 0, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, ACC=compute_dtype(a))
    return da, db


register_autograd(swiglu_forward, lambda saved, dy: swiglu_backward(dy, *saved), save=lambda inputs, output: inputs)


def swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``silu(a) * b`` for a and b of one shape (a the gate projection, b the up projection)."""
    return swiglu_forward(a, b)


# --- the halves of one tensor ---------------------------------------------------------------------------


def _check_halves(x):
    if x.dim() < 1 or x.shape[-1] % 2:
        raise ValueError(f"silu_and_mul takes x of shape [..., 2N] (the gate and up halves), got {tuple(x.shape)}")
    if x.dtype not in _rows.FLOATING:
        raise ValueError(f"silu_and_mul takes x of a floating dtype (float16, bfloat16, float32, float64), got "
                         f"{x.dtype}")


def _halves(x):
    """x's halves as kernel arguments (a, b, M, N, stride_a, stride_b, offset_b): a contiguous x is passed
    itself for both, b offset_b = N elements on (no views to make); else [M, N] row views of each half."""
    N = x.shape[-1] // 2
    if x.is_contiguous():
        return x, x, x.numel() // (2 * N), N, 2 * N, 2 * N, N
    rows = _rows.strided_rows(x)
    a, b = rows[:, :N], rows[:, N:]
    return a, b, rows.shape[0], N, a.stride(0), b.stride(0), 0


def _halves_fake(x):
    _check_halves(x)
    return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))


# What a contiguous x's metadata decides (_layouts.py), with the tile sizes in the key: the sizes the op
# allocates and its launch; None for the rest (the general path below, which also reads strided rows).
_FORWARD_LAYOUTS, _BACKWARD_LAYOUTS = Layouts(), Layouts()


def _forward_layout(x):
    _check_halves(x)
    if not (x.is_contiguous() and x.numel()):
        return None
    M, N = x.numel() // x.shape[-1], x.shape[-1] // 2
    return (sizes_and_strides((*x.shape[:-1], N)),
            (_grid(M, N), (M, N, 2 * N, 2 * N, N), dict(BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, ACC=compute_dtype(x))))


def _backward_layout(dy, x):
    if (not (dy.is_contiguous() and x.is_contiguous() and x.numel()) or x.shape[-1] % 2
            or dy.shape != (*x.shape[:-1], x.shape[-1] // 2)):
        return None
    M, N = x.numel() // x.shape[-1], x.shape[-1] // 2
    # dx is new, contiguous: its halves are da at 0 and db N elements on, rows 2N apart.
    return (sizes_and_strides(x.shape),
            (_grid(M, N), (M, N, N, 2 * N, 2 * N, 2 * N, N, N),
             dict(BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, ACC=compute_dtype(x))))


# Both read rows of any stride (_halves, strided_rows): a buffer Inductor padded passes without a copy.
@custom_op("tegula::silu_and_mul", fake=_halves_fake, tags=(torch.Tag.needs_fixed_stride_order,))
def silu_and_mul_forward(x: torch.Tensor) -> torch.Tensor:
    layout = _FORWARD_LAYOUTS.lookup((x,), (BLOCK_R, BLOCK_C), _forward_layout, x)
    if layout is not None:
        rows, (grid, scalars, constexprs) = layout
        y = allocator(x.device)(*rows, x.dtype)
        swiglu_forward_kernel[grid](x, x, y, *scalars, **constexprs)
        return y
    _check_halves(x)
    y = empty((*x.shape[:-1], x.shape[-1] // 2), x.dtype, x.device)
    if x.numel():
        a, b, M, N, stride_a, stride_b, offset_b = _halves(x)
        swiglu_forward_kernel[_grid(M, N)](a, b, y, M, N, stride_a, stride_b, offset_b, BLOCK_R=BLOCK_R,
                                           BLOCK_C=BLOCK_C, ACC=compute_dtype(x))
    return y


@custom_op("tegula::silu_and_mul_backward", fake=lambda dy, x: x.new_empty(x.shape),
           tags=(torch.Tag.needs_fixed_stride_order,))
def silu_and_mul_backward(dy: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    layout = _BACKWARD_LAYOUTS.lookup((dy, x), (BLOCK_R, BLOCK_C), _backward_layout, dy, x)
    if layout is not None:
        rows, (grid, scalars, constexprs) = layout
        dx = allocator(x.device)(*rows, x.dtype)
        swiglu_backward_kernel[grid](dy, x, x, dx, dx, *scalars, **constexprs)
        return dx
    dx = empty(x.shape, x.dtype, x.device)
    if x.numel():
        a, b, M, N, stride_a, stride_b, offset_b = _halves(x)
        stride_dy = N
        if not dy.is_contiguous():
            dy = _rows.strided_rows(dy)
            stride_dy = dy.stride(0)
        # dx is new, contiguous: its halves are da at 0 and db N elements on, rows 2N apart.
        swiglu_backward_kernel[_grid(M, N)](dy, a, b, dx, dx, M, N, stride_dy, stride_a, stride_b, 2 * N, offset_b, N,
                                            BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, ACC=compute_dtype(x))
    return dx


register_autograd(silu_and_mul_forward, lambda saved, dy: (silu_and_mul_backward(dy, *saved),),
                  save=lambda inputs, output: inputs)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``silu(a) * b`` for ``a, b = x.chunk(2, dim=-1)``: the gate and up projections as the two halves of
    one [..., 2N] tensor (one linear layer computing both). Its gradient is one [..., 2N] tensor too."""
    return silu_and_mul_forward(x)
