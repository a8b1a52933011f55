"""The case-study chain of the design as a training op:

    u = x * alpha + bias;  h = dropout(gelu_tanh(u)) + residual;  y = rms_norm(h) * weight

with ``dropout(g) = g * keep / (1 - p)`` for a mask ``keep`` the caller draws
(so the forward and backward see the same one, and runs are reproducible).

Forward: one program per row, as in examples/fused_chain.py, also storing
the row's rstd. Backward: each program walks a run of rows, recomputes u and
h from x, residual and keep, and goes back through the chain: the RMSNorm
step (as in rms_norm.py) gives dh, which is dresidual; dropout and GELU's
derivative give du, so ``dx = du * alpha``; dweight and dbias are summed
over rows as in _rows.py.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.language.extra import libdevice
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows

_GELU_SCALE = tl.constexpr(0.7978845608028654)  # sqrt(2 / pi)
_GELU_CUBIC = tl.constexpr(0.044715)


@tegula.jit
def _chain_to_norm(x_ptr, res_ptr, keep_ptr, bias, row, cols, mask, N, alpha, keep_scale, ACC: tl.constexpr):
    # u = x * alpha + bias and h = dropout(gelu_tanh(u)) + residual for one row; also tanh's value and the mask.
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
    res = tl.load(res_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
    keep = tl.load(keep_ptr + row * N + cols, mask=mask, other=0) != 0
    u = x * alpha + bias
    t = libdevice.tanh(_GELU_SCALE * (u + _GELU_CUBIC * u * u * u))
    h = tl.where(keep, 0.5 * u * (1.0 + t) * keep_scale, 0.0) + res
    return u, t, keep, tl.where(mask, h, 0.0)


@tegula.jit
def chain_forward_kernel(x_ptr, res_ptr, keep_ptr, bias_ptr, w_ptr, y_ptr, rstd_ptr, N, alpha, keep_scale, eps,
                         BLOCK_N: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    u, t, keep, h = _chain_to_norm(x_ptr, res_ptr, keep_ptr, bias, row, cols, mask, N, alpha, keep_scale, ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(rstd_ptr + row, rstd)


@tegula.jit
def chain_backward_kernel(dy_ptr, x_ptr, res_ptr, keep_ptr, bias_ptr, w_ptr, rstd_ptr, dx_ptr, dres_ptr,
                          dw_partial_ptr, dbias_partial_ptr, M, N, rows_per_program, alpha, keep_scale,
                          BLOCK_N: tl.constexpr, ACC: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw = tl.zeros([BLOCK_N], dtype=ACC)
    dbias = tl.zeros([BLOCK_N], dtype=ACC)
    row_start = pid * rows_per_program
    for row32 in range(row_start, tl.minimum(row_start + rows_per_program, M)):
        row = row32.to(tl.int64)
        u, t, keep, h = _chain_to_norm(x_ptr, res_ptr, keep_ptr, bias, row, cols, mask, N, alpha, keep_scale, ACC)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
        rstd = tl.load(rstd_ptr + row)
        hhat = h * rstd
        g = w * dy
        dh = (g - hhat * (tl.sum(hhat * g, axis=0) / N)) * rstd
        # d gelu_tanh(u) / du = 0.5 (1 + t) + 0.5 u (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 u^2)
        dgelu = 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * _GELU_SCALE * (1.0 + 3.0 * _GELU_CUBIC * u * u)
        du = tl.where(keep & mask, dh * keep_scale * dgelu, 0.0)
        tl.store(dres_ptr + row * N + cols, dh.to(dres_ptr.dtype.element_ty), mask=mask)
        tl.store(dx_ptr + row * N + cols, (du * alpha).to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * hhat
        dbias += du
    tl.store(dw_partial_ptr + pid * N + cols, dw, mask=mask)
    tl.store(dbias_partial_ptr + pid * N + cols, dbias, mask=mask)


def _check(x, residual, keep, bias, weight, p=0.0, eps=0.0):
    _rows.check_weights("fused_chain", x, bias, weight)
    _rows.check_eps("fused_chain", eps)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"fused_chain takes a dropout probability p in [0, 1), got {p!r}")
    if residual.shape != x.shape or keep.shape != x.shape or residual.dtype != x.dtype:
        raise ValueError(f"fused_chain takes residual (x's dtype) and keep of x's shape {tuple(x.shape)}, got "
                         f"{tuple(residual.shape)} {residual.dtype} and {tuple(keep.shape)}")


def _forward_fake(x, residual, keep, bias, weight, alpha, p, eps):
    _check(x, residual, keep, bias, weight, p, eps)
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1], dtype=_rows.accumulator(x))


@custom_op("tegula::fused_chain", fake=_forward_fake)
def chain_forward(x: torch.Tensor, residual: torch.Tensor, keep: torch.Tensor, bias: torch.Tensor,
                  weight: torch.Tensor, alpha: float, p: float, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd): y like x, rstd per row (float32, float64 for float64 x)."""
    _check(x, residual, keep, bias, weight, p, eps)
    bias, weight = bias.contiguous(), weight.contiguous()  # the kernels take only addresses and N
    rows = _rows.rows_of(x)
    M, N = rows.shape
    y = torch.empty_like(rows)
    rstd = torch.empty(M, dtype=_rows.accumulator(x), device=x.device)
    chain_forward_kernel[(M,)](rows, _rows.rows_of(residual), _rows.rows_of(keep), bias, weight, y, rstd, N, alpha,
                               1.0 / (1.0 - p), eps, BLOCK_N=tegula.next_power_of_2(N), ACC=compute_dtype(x))
    return y.view(x.shape), rstd.view(x.shape[:-1])


def _backward_fake(dy, x, residual, keep, bias, weight, rstd, alpha, p):
    return (x.new_empty(x.shape), residual.new_empty(residual.shape), bias.new_empty(bias.shape),
            weight.new_empty(weight.shape))


@custom_op("tegula::fused_chain_backward", fake=_backward_fake)
def chain_backward(dy: torch.Tensor, x: torch.Tensor, residual: torch.Tensor, keep: torch.Tensor, bias: torch.Tensor,
                   weight: torch.Tensor, rstd: torch.Tensor, alpha: float,
                   p: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dresidual, dbias, dweight)."""
    bias, weight = bias.contiguous(), weight.contiguous()
    rows = _rows.rows_of(x)
    M, N = rows.shape
    dx, dres = torch.empty_like(rows), torch.empty_like(rows)
    programs, rows_per_program = _rows.row_split(M, x.device)
    block_n = tegula.next_power_of_2(N)
    dw_partial = torch.empty((programs, N), dtype=_rows.accumulator(x), device=x.device)
    dbias_partial = torch.empty_like(dw_partial)
    chain_backward_kernel[(programs,)](_rows.rows_of(dy), rows, _rows.rows_of(residual), _rows.rows_of(keep), bias,
                                       weight, rstd.contiguous(), dx, dres, dw_partial, dbias_partial, M, N,
                                       rows_per_program, alpha, 1.0 / (1.0 - p),
                                       BLOCK_N=block_n, ACC=compute_dtype(x), num_warps=_rows.backward_warps(block_n))
    return (dx.view(x.shape), dres.view(x.shape), _rows.sum_partials(dbias_partial, bias.dtype),
            _rows.sum_partials(dw_partial, weight.dtype))


def _backward(saved, dy, _drstd):
    if dy is None:  # y unused (rstd carries no gradient)
        return None, None, None, None, None, None, None, None
    x, residual, keep, bias, weight, rstd, alpha, p = saved
    dx, dres, dbias, dw = chain_backward(dy, x, residual, keep, bias, weight, rstd, alpha, p)
    return dx, dres, None, dbias, dw, None, None, None


register_autograd(chain_forward, _backward, non_differentiable=(1,),
                  save=lambda inputs, output: (*inputs[:5], output[1], inputs[5], inputs[6]))


def fused_chain(x: torch.Tensor, residual: torch.Tensor, keep: torch.Tensor, bias: torch.Tensor,
                weight: torch.Tensor, alpha: float = 0.5, p: float = 0.1, eps: float = 1e-6) -> torch.Tensor:
    """``rms_norm(dropout(gelu_tanh(x * alpha + bias)) + residual) * weight`` over the last dimension;
    ``keep`` (x's shape, nonzero where an element is kept) is the dropout mask, p its drop rate."""
    return chain_forward(x, residual, keep, bias, weight, alpha, p, eps)[0]
