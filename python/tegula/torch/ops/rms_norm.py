"""RMSNorm over the last dimension: ``y = x * rstd * w`` with
``rstd = 1 / sqrt(mean(x^2) + eps)`` per row.

Forward: one program per row, the row one tile; it also stores rstd, which
the backward reuses. Backward: with ``xhat = x * rstd`` and ``g = w * dy``,
``dx = rstd * (g - xhat * mean(xhat * g))`` and ``dw = sum over rows of
dy * xhat``; each program walks a run of rows and keeps its part of dw in
registers (see _rows.py for how the parts are added).
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows
from ._empty import allocator, sizes_and_strides
from ._layouts import Layouts


@tegula.jit
def rms_norm_forward_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, N, eps, BLOCK_N: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # M * N may pass 2^31
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(rstd_ptr + row, rstd)


@tegula.jit
def rms_norm_backward_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, dw_partial_ptr, M, N, rows_per_program,
                             BLOCK_N: tl.constexpr, ROWS: tl.constexpr, ACC: tl.constexpr, AHEAD: tl.constexpr):
    # ROWS rows per step (_rows.rows_per_step), so narrow rows still make a large tile; AHEAD: each
    # step's tiles are loaded during the step before (_rows.load_ahead).
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw = tl.zeros([ROWS, BLOCK_N], dtype=ACC)
    row_start = pid * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    if AHEAD:
        x_next = _rows.load_step(x_ptr, row_start, row_end, N, cols, mask, ROWS)
        dy_next = _rows.load_step(dy_ptr, row_start, row_end, N, cols, mask, ROWS)
    for r0 in range(row_start, row_end, ROWS):
        rows = r0 + tl.arange(0, ROWS)
        inside = rows < row_end
        if AHEAD:
            x, dy = x_next.to(ACC), dy_next.to(ACC)
            x_next = _rows.load_step(x_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
            dy_next = _rows.load_step(dy_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
        else:
            x = _rows.load_step(x_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
            dy = _rows.load_step(dy_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
        rstd = tl.load(rstd_ptr + rows, mask=inside, other=0.0)[:, None]
        xhat = x * rstd
        g = w[None, :] * dy
        dx = (g - xhat * (tl.sum(xhat * g, axis=1) / N)[:, None]) * rstd
        tile = rows.to(tl.int64)[:, None] * N + cols[None, :]
        tl.store(dx_ptr + tile, dx.to(dx_ptr.dtype.element_ty), mask=inside[:, None] & mask[None, :])
        dw += dy * xhat
    tl.store(dw_partial_ptr + pid * N + cols, tl.sum(dw, axis=0), mask=mask)


def _forward_fake(x, weight, eps):
    _rows.check_weights("rms_norm", x, weight)
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1], dtype=_rows.accumulator(x))


# What the arguments' metadata decides (_layouts.py), with eps and the _rows tables in the key: for contiguous
# rows, the sizes the op allocates and its launches; else None (the general path copies them first).
_FORWARD_LAYOUTS, _BACKWARD_LAYOUTS = Layouts(), Layouts()


def _forward_layout(x, weight, eps):
    _rows.check_weights("rms_norm", x, weight)
    _rows.check_eps("rms_norm", eps)
    if not (x.is_contiguous() and weight.is_contiguous()) or not x.shape[-1]:
        return None  # empty rows: the general path
    return sizes_and_strides(x.shape), sizes_and_strides(x.shape[:-1]), _forward_launch(x, eps)


def _forward_launch(x, eps) -> tuple:
    """(grid, the arguments after the tensors x, weight, y and rstd, the constexprs) of the forward's launch
    over x's contiguous rows."""
    M, N = _rows.shape_of_rows(x)
    return (M,), (N, eps), dict(BLOCK_N=tegula.next_power_of_2(N), ACC=compute_dtype(x))


@custom_op("tegula::rms_norm", fake=_forward_fake)
def rms_norm_forward(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd): y like x, rstd per row (float32, float64 for float64 x)."""
    # eps's type in the key too: True == 1 (and hashes alike), but only the layout's build checks eps.
    layout = _FORWARD_LAYOUTS.lookup((x, weight), (eps, eps.__class__), _forward_layout, x, weight, eps)
    if layout is not None:
        rows, stats, (grid, scalars, constexprs) = layout
        alloc = allocator(x.device)
        y, rstd = alloc(*rows, x.dtype), alloc(*stats, _rows.accumulator(x))
        rms_norm_forward_kernel[grid](x, weight, y, rstd, *scalars, **constexprs)
        return y, rstd
    _rows.check_weights("rms_norm", x, weight)
    _rows.check_eps("rms_norm", eps)
    x, weight = x.contiguous(), weight.contiguous()  # the kernels take only addresses and N
    y = x.new_empty(x.shape)
    rstd = x.new_empty(x.shape[:-1], dtype=_rows.accumulator(x))
    if not x.shape[-1]:  # rows of no elements: no program runs; their mean square is 0 / 0, as torch's mean says
        return y, rstd.fill_(float("nan"))
    grid, scalars, constexprs = _forward_launch(x, eps)
    rms_norm_forward_kernel[grid](x, weight, y, rstd, *scalars, **constexprs)
    return y, rstd


def _backward_fake(dy, x, weight, rstd):
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _backward_layout(dy, x, weight, rstd):
    if not (dy.is_contiguous() and x.is_contiguous() and weight.is_contiguous() and rstd.is_contiguous()):
        return None
    M, N, programs, rows_per_program, constexprs, partials, sums = _rows.backward_split(x)
    return sizes_and_strides(x.shape), partials, ((programs,), (M, N, rows_per_program), constexprs), sums


@custom_op("tegula::rms_norm_backward", fake=_backward_fake)
def rms_norm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight) from the forward's input and saved rstd."""
    layout = _BACKWARD_LAYOUTS.lookup((dy, x, weight, rstd), _rows.tables(), _backward_layout, dy, x, weight, rstd)
    if layout is None:
        x, dy, weight, rstd = x.contiguous(), dy.contiguous(), weight.contiguous(), rstd.contiguous()
        layout = _backward_layout(dy, x, weight, rstd)
    rows, partials, (grid, scalars, constexprs), sums = layout
    alloc = allocator(x.device)
    dx, dw_partial = alloc(*rows, x.dtype), alloc(*partials)
    rms_norm_backward_kernel[grid](dy, x, weight, rstd, dx, dw_partial, *scalars, **constexprs)
    return dx, _rows.summed(dw_partial, sums, weight, alloc)


def _backward(saved, dy, _drstd):
    if dy is None:  # y unused (rstd carries no gradient)
        return None, None, None
    x, weight, rstd = saved
    dx, dw = rms_norm_backward(dy, x, weight, rstd)
    return dx, dw, None


register_autograd(rms_norm_forward, _backward, non_differentiable=(1,),
                  save=lambda inputs, output: (inputs[0], inputs[1], output[1]))


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of x over its last dimension, scaled by weight (shape [N])."""
    return rms_norm_forward(x, weight, eps)[0]
