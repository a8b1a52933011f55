"""Residual add and RMSNorm in one pass over the last dimension:

    h = x + residual;  y = h * rstd * w  with  rstd = 1 / sqrt(mean(h^2) + eps) per row

h (the new residual stream) keeps x's dtype; y is stored in a dtype of its
own, by default the autocast dtype when autocast is on (the next projection's
input, so no separate cast runs), else x's dtype. residual may be narrower
than x (a bf16 projection's output added to a float32 stream).

Forward: one program per row, the row one tile; it stores h and y, and y is
computed from h as stored (rounded to x's dtype). Backward: rstd again from
h as stored (the backward reads every row of h anyway, so keeping rstd from
the forward would only add an output to allocate and hand around); with
``hhat = h * rstd`` and ``g = w * dy``,
``dh_total = dh + rstd * (g - hhat * mean(hhat * g))``, written once as dx
(x's dtype), which is also residual's gradient (converted when residual is
narrower, the only case that costs a second tensor);
``dw = sum over rows of dy * hhat``, each program keeping its part in
registers (see _rows.py for how the parts are added). When h's gradient is
None the kernel is specialized without it (nothing is read for it).
"""

from __future__ import annotations

from typing import Optional

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows
from ._empty import allocator, sizes_and_strides
from ._layouts import Layouts

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_DTYPE_NAMES = ", ".join(str(d) for d in FLOAT_DTYPES)


@tegula.jit
def add_rms_norm_forward_kernel(x_ptr, res_ptr, w_ptr, h_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr,
                                ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # M * N may pass 2^31
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
    res = tl.load(res_ptr + row * N + cols, mask=mask, other=0.0).to(ACC)
    h_stored = (x + res).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * N + cols, h_stored, mask=mask)
    h = h_stored.to(ACC)  # the norm of h as stored, the h the backward reads
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def add_rms_norm_backward_kernel(dh_ptr, dy_ptr, h_ptr, w_ptr, dx_ptr, dw_partial_ptr, M, N, eps,
                                 rows_per_program, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, ACC: tl.constexpr,
                                 AHEAD: tl.constexpr):
    # dh_ptr None (h unused): that term folds away. ROWS rows per step (_rows.rows_per_step); AHEAD:
    # each step's tiles are loaded during the step before (_rows.load_ahead).
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw = tl.zeros([ROWS, BLOCK_N], dtype=ACC)
    row_start = pid * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    if AHEAD:
        h_next = _rows.load_step(h_ptr, row_start, row_end, N, cols, mask, ROWS)
        dy_next = _rows.load_step(dy_ptr, row_start, row_end, N, cols, mask, ROWS)
        if dh_ptr is not None:
            dh_next = _rows.load_step(dh_ptr, row_start, row_end, N, cols, mask, ROWS)
    for r0 in range(row_start, row_end, ROWS):
        if AHEAD:
            h, dy = h_next.to(ACC), dy_next.to(ACC)
            if dh_ptr is not None:
                dh_in = dh_next.to(ACC)
                dh_next = _rows.load_step(dh_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
            h_next = _rows.load_step(h_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
            dy_next = _rows.load_step(dy_ptr, r0 + ROWS, row_end, N, cols, mask, ROWS)
        else:
            h = _rows.load_step(h_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
            dy = _rows.load_step(dy_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
            if dh_ptr is not None:
                dh_in = _rows.load_step(dh_ptr, r0, row_end, N, cols, mask, ROWS).to(ACC)
        rstd = (1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps))[:, None]
        hhat = h * rstd
        g = w[None, :] * dy
        dh = (g - hhat * (tl.sum(hhat * g, axis=1) / N)[:, None]) * rstd
        if dh_ptr is not None:
            dh = dh + dh_in
        rows = r0 + tl.arange(0, ROWS)
        tile = rows.to(tl.int64)[:, None] * N + cols[None, :]
        tl.store(dx_ptr + tile, dh.to(dx_ptr.dtype.element_ty), mask=(rows < row_end)[:, None] & mask[None, :])
        dw += dy * hhat
    tl.store(dw_partial_ptr + pid * N + cols, tl.sum(dw, axis=0), mask=mask)


def _check_dtype(what: str, dtype) -> None:
    if not isinstance(dtype, torch.dtype) or dtype not in FLOAT_DTYPES:
        raise ValueError(f"add_rms_norm takes {what} of dtype {_DTYPE_NAMES}, got {dtype}")


def _check(x, residual, weight, out_dtype):
    _check_dtype("x", x.dtype)
    if residual.shape != x.shape:
        raise ValueError(f"add_rms_norm takes residual of x's shape {tuple(x.shape)}, got {tuple(residual.shape)}")
    _check_dtype("residual", residual.dtype)
    _rows.check_weights("add_rms_norm", x, weight)
    _check_dtype("out_dtype", out_dtype)


def _forward_fake(x, residual, weight, eps, out_dtype):
    _check(x, residual, weight, out_dtype)
    return x.new_empty(x.shape), x.new_empty(x.shape, dtype=out_dtype)


# What the arguments' metadata decides (_layouts.py), with eps, out_dtype and the _rows tables in the key: for
# contiguous rows, the sizes the op allocates and its launches; else None (the general path copies them first).
_FORWARD_LAYOUTS, _BACKWARD_LAYOUTS = Layouts(), Layouts()


def _forward_layout(x, residual, weight, eps, out_dtype):
    _check(x, residual, weight, out_dtype)
    _rows.check_eps("add_rms_norm", eps)
    if not (x.is_contiguous() and residual.is_contiguous() and weight.is_contiguous()):
        return None
    return sizes_and_strides(x.shape), _forward_launch(x, eps)


def _forward_launch(x, eps) -> tuple:
    """(grid, the arguments after the tensors x, residual, weight, h and y, the constexprs) of the forward's
    launch over x's contiguous rows."""
    M, N = _rows.shape_of_rows(x)
    return (M,), (N, eps), dict(BLOCK_N=tegula.next_power_of_2(N), ACC=compute_dtype(x))


@custom_op("tegula::add_rms_norm", fake=_forward_fake)
def add_rms_norm_forward(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                         out_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(h, y): h like x, y of out_dtype."""
    # eps's type in the key too: True == 1 (and hashes alike), but only the layout's build checks eps.
    layout = _FORWARD_LAYOUTS.lookup((x, residual, weight), (out_dtype, eps, eps.__class__), _forward_layout, x,
                                     residual, weight, eps, out_dtype)
    if layout is not None:
        rows, (grid, scalars, constexprs) = layout
        alloc = allocator(x.device)
        h, y = alloc(*rows, x.dtype), alloc(*rows, out_dtype)
        add_rms_norm_forward_kernel[grid](x, residual, weight, h, y, *scalars, **constexprs)
        return h, y
    _check(x, residual, weight, out_dtype)
    _rows.check_eps("add_rms_norm", eps)
    x, residual, weight = x.contiguous(), residual.contiguous(), weight.contiguous()  # the kernels take addresses
    h = torch.empty_like(x, memory_format=torch.contiguous_format)
    y = torch.empty_like(x, dtype=out_dtype, memory_format=torch.contiguous_format)
    grid, scalars, constexprs = _forward_launch(x, eps)
    add_rms_norm_forward_kernel[grid](x, residual, weight, h, y, *scalars, **constexprs)
    return h, y


def _backward_fake(dh, dy, h, weight, eps):
    return h.new_empty(h.shape), weight.new_empty(weight.shape)


@custom_op("tegula::add_rms_norm_backward", fake=_backward_fake)
def add_rms_norm_backward(dh: Optional[torch.Tensor], dy: torch.Tensor, h: torch.Tensor, weight: torch.Tensor,
                          eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight) from the forward's h (its rstd computed again); dh None counts as zero. dx, in h's
    dtype, is the gradient of h = x + residual, so of both x and residual."""
    tensors = (dy, h, weight) if dh is None else (dy, h, weight, dh)
    layout = _BACKWARD_LAYOUTS.lookup(tensors, (dh is None, eps, _rows.tables()), _backward_layout, dh, dy, h, weight,
                                      eps)
    alloc = allocator(h.device)
    if layout is not None:
        rows, plan = layout
        dx = alloc(*rows, h.dtype)
        return dx, _run_backward(plan, dh, dy, h, weight, dx, alloc)
    h, weight = h.contiguous(), weight.contiguous()  # the kernels take only addresses and N
    dx = torch.empty_like(h, memory_format=torch.contiguous_format)
    dh = None if dh is None else dh.contiguous()
    return dx, _run_backward(_backward_plan(h, eps), dh, dy.contiguous(), h, weight, dx, alloc)


def _backward_layout(dh, dy, h, weight, eps):
    if not (h.is_contiguous() and dy.is_contiguous() and (dh is None or dh.is_contiguous()) and
            weight.is_contiguous()):
        return None
    return sizes_and_strides(h.shape), _backward_plan(h, eps)


def _backward_plan(h, eps) -> tuple:
    """What the backward over h's contiguous rows launches (_rows.backward_split): (the partial sums' sizes,
    strides and dtype, the backward kernel's launch, the partial sums' launch)."""
    M, N, programs, rows_per_program, constexprs, partials, sums = _rows.backward_split(h)
    return partials, ((programs,), (M, N, eps, rows_per_program), constexprs), sums


def _run_backward(plan, dh, dy, h, weight, dx, alloc) -> torch.Tensor:
    """The backward's launches as _backward_plan describes them; returns dweight."""
    partials, (grid, scalars, constexprs), sums = plan
    dw_partial = alloc(*partials)
    add_rms_norm_backward_kernel[grid](dh, dy, h, weight, dx, dw_partial, *scalars, **constexprs)
    return _rows.summed(dw_partial, sums, weight, alloc)


def _backward(saved, dh, dy):
    h, weight, eps, residual_dtype = saved
    if dy is None:  # y unused: h's gradient passes to both inputs, none to weight
        if dh is None:
            return None, None, None, None, None
        dx, dw = dh, None
    else:
        dx, dw = add_rms_norm_backward(dh, dy, h, weight, eps)
    # One tensor for both inputs, as torch's own add gives its gradient (autograd never writes into a
    # gradient it hands to two places); a narrower residual gets its own copy.
    return dx, (dx if residual_dtype == dx.dtype else dx.to(residual_dtype)), dw, None, None


register_autograd(add_rms_norm_forward, _backward,
                  save=lambda inputs, output: (output[0], inputs[2], inputs[3], inputs[1].dtype))


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                 out_dtype: Optional[torch.dtype] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(h, y): ``h = x + residual`` in x's dtype and ``y = rms_norm(h) * weight`` (weight of shape [N],
    x's dtype) in out_dtype. out_dtype None: the autocast dtype when autocast is enabled for x's
    device, else x's dtype. residual has x's shape and a floating dtype (it may be narrower than x)."""
    if out_dtype is None:
        device_type = x.device.type
        out_dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else x.dtype
    return add_rms_norm_forward(x, residual, weight, eps, out_dtype)
