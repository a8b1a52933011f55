"""LayerNorm over the last dimension: ``y = (x - mean) * rstd * w + b``.

Forward: one program per row, the row one tile; it stores mean and rstd for
the backward. Backward: with ``xhat = (x - mean) * rstd`` and ``g = w * dy``,
``dx = rstd * (g - xhat * mean(xhat * g) - mean(g))``, ``dw = sum over rows
of dy * xhat`` and ``db = sum over rows of dy``; each program walks a run of
rows and keeps its parts of dw and db in registers (see _rows.py).
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows


@tegula.jit
def layer_norm_forward_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK_N: tl.constexpr,
                              ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # M * N may pass 2^31
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(ACC)
    tl.store(y_ptr + row * N + cols, (centred * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@tegula.jit
def layer_norm_backward_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_partial_ptr, db_partial_ptr,
                               M, N, rows_per_program, BLOCK_N: tl.constexpr, ROWS: tl.constexpr,
                               ACC: tl.constexpr, AHEAD: tl.constexpr):
    # ROWS rows per step (_rows.rows_per_step), so narrow rows still make a large tile; AHEAD: each
    # step's tiles are loaded during the step before (_rows.load_ahead).
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw = tl.zeros([ROWS, BLOCK_N], dtype=ACC)
    db = tl.zeros([ROWS, BLOCK_N], dtype=ACC)
    row_start = pid * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    if AHEAD:
        x_next = _rows.load_step(x_ptr, row_start, row_end, N, cols, mask, ROWS)
        dy_next = _rows.load_step(dy_ptr, row_start, row_end, N, cols, mask, ROWS)
    for r0 in range(row_start, row_end, ROWS):
        rows = r0 + tl.arange(0, ROWS)
        inside = rows < row_end
        m2 = inside[:, None] & mask[None, :]
        if AHEAD:
            x, dy = x_next.to(ACC), dy_next.to(ACC)
            x_next = _rows.load_step(x_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
            dy_next = _rows.load_step(dy_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
        else:
            x = _rows.load_step(x_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
            dy = _rows.load_step(dy_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
        mean = tl.load(mean_ptr + rows, mask=inside, other=0.0)[:, None]
        rstd = tl.load(rstd_ptr + rows, mask=inside, other=0.0)[:, None]
        xhat = tl.where(m2, (x - mean) * rstd, 0.0)
        g = w[None, :] * dy
        dx = (g - xhat * (tl.sum(xhat * g, axis=1) / N)[:, None] - (tl.sum(g, axis=1) / N)[:, None]) * rstd
        tile = rows.to(tl.int64)[:, None] * N + cols[None, :]
        tl.store(dx_ptr + tile, dx.to(dx_ptr.dtype.element_ty), mask=m2)
        dw += dy * xhat
        db += dy
    tl.store(dw_partial_ptr + pid * N + cols, tl.sum(dw, axis=0), mask=mask)
    tl.store(db_partial_ptr + pid * N + cols, tl.sum(db, axis=0), mask=mask)


def _forward_fake(x, weight, bias, eps):
    _rows.check_weights("layer_norm", x, weight, bias)
    stats = x.new_empty(x.shape[:-1], dtype=_rows.accumulator(x))
    return x.new_empty(x.shape), stats, stats.new_empty(stats.shape)


@custom_op("tegula::layer_norm", fake=_forward_fake)
def layer_norm_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, mean, rstd): y like x, mean and rstd per row (float32, float64 for float64 x)."""
    _rows.check_weights("layer_norm", x, weight, bias)
    _rows.check_eps("layer_norm", eps)
    x, weight, bias = x.contiguous(), weight.contiguous(), bias.contiguous()  # the kernels take addresses and N
    M, N = _rows.shape_of_rows(x)
    y = x.new_empty(x.shape)
    mean = x.new_empty(x.shape[:-1], dtype=_rows.accumulator(x))
    rstd = mean.new_empty(mean.shape)
    layer_norm_forward_kernel[(M,)](x, weight, bias, y, mean, rstd, N, eps, BLOCK_N=tegula.next_power_of_2(N),
                                    ACC=compute_dtype(x))
    return y, mean, rstd


def _backward_fake(dy, x, weight, mean, rstd):
    return x.new_empty(x.shape), weight.new_empty(weight.shape), weight.new_empty(weight.shape)


@custom_op("tegula::layer_norm_backward", fake=_backward_fake)
def layer_norm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor,
                        rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dweight, dbias) from the forward's input and saved statistics."""
    x, dy, weight = x.contiguous(), dy.contiguous(), weight.contiguous()
    M, N = _rows.shape_of_rows(x)
    dx = x.new_empty(x.shape)
    block_n = tegula.next_power_of_2(N)
    step = _rows.rows_per_step(block_n)
    programs, rows_per_program = _rows.row_split(M, x.device, step)
    dw_partial = torch.empty((programs, N), dtype=_rows.accumulator(x), device=x.device)
    db_partial = torch.empty_like(dw_partial)
    layer_norm_backward_kernel[(programs,)](dy, x, weight, mean.contiguous(), rstd.contiguous(), dx,
                                            dw_partial, db_partial, M, N, rows_per_program,
                                            BLOCK_N=block_n, ROWS=step, ACC=compute_dtype(x),
                                            AHEAD=_rows.load_ahead(x.device), num_warps=_rows.backward_warps(block_n * step))
    return (dx, _rows.sum_partials(dw_partial, weight.dtype),
            _rows.sum_partials(db_partial, weight.dtype))


def _backward(saved, dy, _dmean, _drstd):
    if dy is None:  # y unused (mean and rstd carry no gradient)
        return None, None, None, None
    return (*layer_norm_backward(dy, *saved), None)


register_autograd(layer_norm_forward, _backward, non_differentiable=(1, 2),
                  save=lambda inputs, output: (inputs[0], inputs[1], output[1], output[2]))


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm of x over its last dimension, with weight and bias of shape [N]."""
    return layer_norm_forward(x, weight, bias, eps)[0]
