"""The output projection fused with softmax cross-entropy: the loss of
``logits = x @ weight^T`` (x [M, C], weight [V, C]) against targets [M],
without the [M, V] logits in memory.

Forward: a program owns BLOCK_M rows and one run of the vocabulary, which
it walks in blocks of BLOCK_V; each logits tile is a product over C in
chunks of BLOCK_C, folded into an online log-sum-exp (running maximum and
sum per row), and the target's logit is picked out of the tile that holds
it. The runs' maxima, sums and target logits are then combined per row by
a second kernel: with few row blocks the vocabulary is split into runs so
that the machine is full. Backward, from the
saved log-sum-exp, recomputes each tile and its gradient ``dlogits =
(softmax - onehot(target)) * dloss``:

- dx: a program per row block and run of the vocabulary walks its run,
  adding ``dlogits @ W`` into that run's partial gradient;
- dweight: a program per vocabulary block and run of rows walks its rows,
  adding ``dlogits^T @ x`` into that run's partial gradient. With few
  vocabulary blocks the rows are split into runs so that the machine is
  full; the runs' partial gradients are summed afterwards (as in _rows.py).

Each program owns the rows of the gradient it writes (no atomics); its
first block stores them, later ones add to them, chunk by chunk of C (every
run holds at least one block, so every partial is written: no zero fill,
no read of it). Logits and
statistics are float32 (float64 for float64 inputs); float32 products keep
float32's accuracy (IEEE on the CPU, three TF32 products on the GPU:
``tegula.torch.dot_precision``). Rows whose target is ``ignore_index`` have no loss
and no gradient. Tiles are chosen per backend and dtype (``tiles``): small
ones on the CPU, tensor-core sized ones for 16-bit inputs on CUDA.
"""

from __future__ import annotations

import dataclasses

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, dot_precision, register_autograd

from . import _rows
from ._empty import allocator, sizes_and_strides
from ._layouts import Layouts
from .cross_entropy import IGNORE_INDEX, check_targets

@dataclasses.dataclass(frozen=True)
class Tiles:
    block_m: int
    block_v: int
    block_c: int
    num_warps: int = None

    def meta(self, x: torch.Tensor) -> dict:
        meta = dict(BLOCK_M=self.block_m, BLOCK_V=self.block_v, BLOCK_C=self.block_c, ACC=compute_dtype(x),
                    PRECISION=dot_precision(x))
        if self.num_warps:
            meta["num_warps"] = self.num_warps
        return meta


CPU_TILES = Tiles(16, 32, 32)
# 16-bit inputs on CUDA: tensor-core dots of 64 x 64 x 64 on one warpgroup.
CUDA_TILES = Tiles(64, 64, 64, 4)


def tiles(x: torch.Tensor) -> Tiles:
    """The tiles of the kernels for inputs like x."""
    return CUDA_TILES if x.device.type == "cuda" and x.element_size() == 2 else CPU_TILES


@tegula.jit
def _load_chunk(ptr, rows, cs, R, C):
    # ptr[rows, cs] of a row-major [R, C] matrix; zeros outside it.
    return tl.load(ptr + rows[:, None].to(tl.int64) * C + cs[None, :], mask=(rows[:, None] < R) & (cs[None, :] < C),
                   other=0.0)


@tegula.jit
def _add_product(ptr, rows, cs, R, C, a, b, first, ACC: tl.constexpr, PRECISION: tl.constexpr):
    # ptr[rows, cs] += a @ b for a gradient of shape [R, C] that this program alone writes there; its
    # first block (`first`) stores a @ b over whatever the buffer held.
    ptrs = ptr + rows[:, None].to(tl.int64) * C + cs[None, :]
    inside = (rows[:, None] < R) & (cs[None, :] < C)
    prior = tl.load(ptrs, mask=inside & (not first), other=0.0)
    tl.store(ptrs, prior + tl.dot(a, b, input_precision=PRECISION).to(ACC), mask=inside)


@tegula.jit
def _logits_tile(X, W, rows, cols, M, V, C, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
                 BLOCK_C: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr):
    # x[rows] @ W[cols]^T as a [BLOCK_M, BLOCK_V] tile, -inf in the columns past V.
    logits = tl.zeros([BLOCK_M, BLOCK_V], dtype=ACC)
    for c0 in range(0, C, BLOCK_C):
        cs = c0 + tl.arange(0, BLOCK_C)
        x = _load_chunk(X, rows, cs, M, C)
        w = _load_chunk(W, cols, cs, V, C)
        logits += tl.dot(x, tl.trans(w), input_precision=PRECISION).to(ACC)
    return tl.where(cols[None, :] < V, logits, float("-inf"))


@tegula.jit
def linear_cross_entropy_forward_kernel(X, W, TARGETS, MAX_PART, SUM_PART, TARGET_PART, M, V, C, vocab_per_run,
                                        BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_C: tl.constexpr,
                                        ACC: tl.constexpr, PRECISION: tl.constexpr):
    # Program (i, j): the running maximum, sum and target logit of row block i over vocabulary run j.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    run = tl.program_id(1)
    v_start = run * vocab_per_run
    v_end = tl.minimum(v_start + vocab_per_run, V)  # columns past it count as past V
    targets = tl.load(TARGETS + rows, mask=rows < M, other=-1)
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], dtype=ACC)
    target_logit = tl.zeros([BLOCK_M], dtype=ACC)
    # A run's first block holds a column below v_end, so each row's maximum is finite from then on.
    for v0 in range(v_start, v_end, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        logits = _logits_tile(X, W, rows, cols, M, v_end, C, BLOCK_M, BLOCK_V, BLOCK_C, ACC, PRECISION)
        m_new = tl.maximum(m_i, tl.max(logits, axis=1))
        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m_i = m_new
        is_target = (cols[None, :] == targets[:, None]) & (cols[None, :] < v_end)
        target_logit += tl.sum(tl.where(is_target, logits, 0.0), axis=1)
    offs = run.to(tl.int64) * M + rows
    tl.store(MAX_PART + offs, m_i, mask=rows < M)
    tl.store(SUM_PART + offs, l_i, mask=rows < M)
    tl.store(TARGET_PART + offs, target_logit, mask=rows < M)


@tegula.jit
def linear_cross_entropy_combine_kernel(MAX_PART, SUM_PART, TARGET_PART, TARGETS, LOSS, LSE, M, V, runs,
                                        ignore_index, BLOCK: tl.constexpr):
    # Each row's log-sum-exp and loss from its vocabulary runs' parts.
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = rows < M
    acc = MAX_PART.dtype.element_ty
    m_i = tl.full([BLOCK], float("-inf"), acc)
    l_i = tl.zeros([BLOCK], dtype=acc)
    target_logit = tl.zeros([BLOCK], dtype=acc)
    for run in range(0, runs):
        offs = run.to(tl.int64) * M + rows
        m_run = tl.load(MAX_PART + offs, mask=inside, other=0.0)
        m_new = tl.maximum(m_i, m_run)
        l_i = l_i * tl.exp(m_i - m_new) + tl.load(SUM_PART + offs, mask=inside, other=0.0) * tl.exp(m_run - m_new)
        m_i = m_new
        target_logit += tl.load(TARGET_PART + offs, mask=inside, other=0.0)
    lse = m_i + tl.log(l_i)
    targets = tl.load(TARGETS + rows, mask=inside, other=ignore_index)
    # A target outside [0, V) picked no logit: its row's loss is NaN (the host checks CPU targets first).
    picked = tl.where((targets >= 0) & (targets < V), lse - target_logit, float("nan"))
    tl.store(LOSS + rows, tl.where(targets != ignore_index, picked, 0.0), mask=inside)
    tl.store(LSE + rows, lse, mask=inside)


@tegula.jit
def _logits_gradient(X, W, TARGETS, LSE, DLOSS, rows, cols, M, V, C, ignore_index, BLOCK_M: tl.constexpr,
                     BLOCK_V: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr,
                     PRECISION: tl.constexpr):
    # (softmax - onehot(target)) * dloss for the tile, 0 in ignored rows and past M or V.
    targets = tl.load(TARGETS + rows, mask=rows < M, other=ignore_index)
    lse = tl.load(LSE + rows, mask=rows < M, other=0.0)
    scale = tl.where(targets != ignore_index, tl.load(DLOSS + rows, mask=rows < M, other=0.0).to(ACC), 0.0)
    logits = _logits_tile(X, W, rows, cols, M, V, C, BLOCK_M, BLOCK_V, BLOCK_C, ACC, PRECISION)
    probabilities = tl.exp(logits - lse[:, None])
    return (probabilities - tl.where(cols[None, :] == targets[:, None], 1.0, 0.0)) * scale[:, None]


@tegula.jit
def linear_cross_entropy_dx_kernel(X, W, TARGETS, LSE, DLOSS, DX, M, V, C, ignore_index, vocab_per_run,
                                   BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_C: tl.constexpr,
                                   ACC: tl.constexpr, PRECISION: tl.constexpr):
    # Program (i, j) adds row block i's gradient over vocabulary run j into DX[j].
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    run = tl.program_id(1)
    v_start = run * vocab_per_run
    v_end = tl.minimum(v_start + vocab_per_run, V)  # columns past it count as past V
    partial = DX + run.to(tl.int64) * M * C
    for v0 in range(v_start, v_end, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        dlogits = _logits_gradient(X, W, TARGETS, LSE, DLOSS, rows, cols, M, v_end, C, ignore_index, BLOCK_M,
                                   BLOCK_V, BLOCK_C, ACC, PRECISION).to(W.dtype.element_ty)
        for c0 in range(0, C, BLOCK_C):
            cs = c0 + tl.arange(0, BLOCK_C)
            _add_product(partial, rows, cs, M, C, dlogits, _load_chunk(W, cols, cs, v_end, C), v0 == v_start, ACC,
                         PRECISION)


@tegula.jit
def linear_cross_entropy_dw_kernel(X, W, TARGETS, LSE, DLOSS, DW, M, V, C, ignore_index, rows_per_program,
                                   BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_C: tl.constexpr,
                                   ACC: tl.constexpr, PRECISION: tl.constexpr):
    # Program (i, j) adds vocabulary block i's gradient over run j of the rows into DW[j].
    cols = tl.program_id(0) * BLOCK_V + tl.arange(0, BLOCK_V)
    run = tl.program_id(1)
    row_start = run * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)  # rows past it count as past M
    partial = DW + run.to(tl.int64) * V * C
    for m0 in range(row_start, row_end, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        dlogits = _logits_gradient(X, W, TARGETS, LSE, DLOSS, rows, cols, row_end, V, C, ignore_index, BLOCK_M,
                                   BLOCK_V, BLOCK_C, ACC, PRECISION).to(X.dtype.element_ty)
        for c0 in range(0, C, BLOCK_C):
            cs = c0 + tl.arange(0, BLOCK_C)
            _add_product(partial, cols, cs, V, C, tl.trans(dlogits), _load_chunk(X, rows, cs, row_end, C),
                         m0 == row_start, ACC, PRECISION)


# The most memory the partial weight gradients of the row runs may take.
PARTIAL_BYTES = 64 << 20


def _runs(items: int, block: int, other_blocks: int, device: torch.device, cap: int) -> tuple:
    """(runs, items per run) of a pass that launches `other_blocks` programs per
    run of `items`: enough programs to fill the machine, each run a whole
    number of `block`s, at most `cap` runs."""
    blocks = tegula.cdiv(items, block)
    runs = max(1, min(blocks, tegula.cdiv(_rows.program_target(device), other_blocks), cap))
    per_run = tegula.cdiv(blocks, runs) * block
    return tegula.cdiv(items, per_run), per_run


def _check(x, weight, targets):
    if (x.dim() != 2 or weight.dim() != 2 or weight.shape[1] != x.shape[1] or x.dtype != weight.dtype
            or targets.shape != x.shape[:1] or targets.dtype != torch.int64):
        raise ValueError(f"linear_cross_entropy takes x [M, C], weight [V, C] of x's dtype and int64 targets [M], "
                         f"got {tuple(x.shape)} {x.dtype}, {tuple(weight.shape)} {weight.dtype} and "
                         f"{tuple(targets.shape)} {targets.dtype}")
    if x.dtype not in _rows.FLOATING:
        raise ValueError(f"linear_cross_entropy takes x and weight of a floating dtype, got {x.dtype}")
    if weight.shape[0] == 0:
        raise ValueError("linear_cross_entropy takes a weight of at least one class (row), got V = 0")


def _forward_fake(x, weight, targets, ignore_index):
    _check(x, weight, targets)
    losses = x.new_empty(x.shape[:1], dtype=_rows.accumulator(x))
    return losses, losses.new_empty(losses.shape)


# What the arguments' metadata decides (_layouts.py), with ignore_index, the tiles and the _rows tables (the
# backward's also PARTIAL_BYTES) in the key: the sizes each direction allocates and its launches, for contiguous
# inputs with rows; else None (the general path copies them first, or has nothing to launch).
_FORWARD_LAYOUTS, _BACKWARD_LAYOUTS = Layouts(), Layouts()


def _forward_layout(x, weight, targets, ignore_index, t):
    """(the losses' sizes and strides, the parts', the dtype of both, the forward launch, the combining launch)
    for contiguous x, weight and targets (launches as (grid, the arguments after the tensors, the constexprs))."""
    (M, C), V = x.shape, weight.shape[0]
    if not M:
        return None
    row_blocks = tegula.cdiv(M, t.block_m)
    runs, vocab_per_run = _runs(V, t.block_v, row_blocks, x.device, cap=1 << 16)
    block = 128
    return (sizes_and_strides((M,)), sizes_and_strides((3, runs, M)), _rows.accumulator(x),
            ((row_blocks, runs), (M, V, C, vocab_per_run), t.meta(x)),
            ((tegula.cdiv(M, block),), (M, V, runs, ignore_index), dict(BLOCK=block)))


def _contiguous_layout(make):
    """`make` for the kept layouts: checked arguments, and None (the general path) unless they are contiguous."""
    def layout(x, weight, targets, *rest):
        _check(x, weight, targets)
        if not (x.is_contiguous() and weight.is_contiguous() and targets.is_contiguous()):
            return None
        return make(x, weight, targets, *rest)
    return layout


@custom_op("tegula::linear_cross_entropy", fake=_forward_fake)
def linear_cross_entropy_forward(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                 ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(losses, lse) per row, float32 (float64 for float64 inputs)."""
    t = tiles(x)
    layout = _FORWARD_LAYOUTS.lookup((x, weight, targets), (ignore_index, t, _rows.tables()),
                                     _contiguous_layout(_forward_layout), x, weight, targets, ignore_index, t)
    if layout is None:
        _check(x, weight, targets)
        x, weight, targets = x.contiguous(), weight.contiguous(), targets.contiguous()
        layout = _forward_layout(x, weight, targets, ignore_index, t)
        if layout is None:  # no rows
            losses = x.new_empty((0,), dtype=_rows.accumulator(x))
            return losses, losses.new_empty((0,))
    check_targets("linear_cross_entropy", targets, weight.shape[0], ignore_index)
    rows, parts, dtype, (grid, scalars, constexprs), (combine_grid, combine_scalars, combine_constexprs) = layout
    alloc = allocator(x.device)
    losses, lse, parts = alloc(*rows, dtype), alloc(*rows, dtype), alloc(*parts, dtype)
    max_part, sum_part, target_part = parts.unbind(0)
    linear_cross_entropy_forward_kernel[grid](x, weight, targets, max_part, sum_part, target_part, *scalars,
                                              **constexprs)
    linear_cross_entropy_combine_kernel[combine_grid](max_part, sum_part, target_part, targets, losses, lse,
                                                      *combine_scalars, **combine_constexprs)
    return losses, lse


def _backward_fake(dloss, x, weight, targets, lse, ignore_index):
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _backward_layout(x, weight, targets, ignore_index, t):
    """For contiguous x, weight and targets with rows: for dx, then for dweight, (the partial gradients' sizes,
    strides and dtype, the kernel's launch, the partial sums' launch, which adds the runs' parts and casts them to
    the gradient's dtype), launches as (grid, the arguments after the tensors, the constexprs)."""
    (M, C), V = x.shape, weight.shape[0]
    if not M:
        return None
    accumulator = _rows.accumulator(x)
    meta = t.meta(x)
    row_blocks, vocab_blocks = tegula.cdiv(M, t.block_m), tegula.cdiv(V, t.block_v)
    runs, vocab_per_run = _runs(V, t.block_v, row_blocks, x.device,
                                cap=max(1, PARTIAL_BYTES // max(1, M * C * accumulator.itemsize)))
    dx = ((*sizes_and_strides((runs, M, C)), accumulator),
          ((row_blocks, runs), (M, V, C, ignore_index, vocab_per_run), meta), _rows.partials_launch(runs, M * C))
    runs, rows_per_run = _runs(M, t.block_m, vocab_blocks, x.device,
                               cap=max(1, PARTIAL_BYTES // max(1, V * C * accumulator.itemsize)))
    dw = ((*sizes_and_strides((runs, V, C)), accumulator),
          ((vocab_blocks, runs), (M, V, C, ignore_index, rows_per_run), meta), _rows.partials_launch(runs, V * C))
    return sizes_and_strides((M, C)), sizes_and_strides((V, C)), dx, dw


@custom_op("tegula::linear_cross_entropy_backward", fake=_backward_fake)
def linear_cross_entropy_backward(dloss: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                  lse: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight); the gradients are accumulated in float32 (float64) and then cast to x's dtype."""
    t = tiles(x)
    # The kernels read x, weight and targets as contiguous rows: a kept layout only for contiguous ones (as the
    # forward's). PARTIAL_BYTES bounds the runs' partial gradients: in the key, as the tables are.
    layout = _BACKWARD_LAYOUTS.lookup((x, weight, targets, lse, dloss),
                                      (ignore_index, t, _rows.tables(), PARTIAL_BYTES),
                                      _contiguous_layout(_backward_layout), x, weight, targets, ignore_index, t)
    if layout is None or not (lse.is_contiguous() and dloss.is_contiguous()):
        dloss, x, weight, targets, lse = (a.contiguous() for a in (dloss, x, weight, targets, lse))
        layout = _backward_layout(x, weight, targets, ignore_index, t)
        if layout is None:  # no rows
            return torch.zeros_like(x), torch.zeros_like(weight)
    x_rows, w_rows, dx_plan, dw_plan = layout
    alloc = allocator(x.device)
    args = (x, weight, targets, lse, dloss)
    grads = []
    for kernel, plan, rows, dtype in ((linear_cross_entropy_dx_kernel, dx_plan, x_rows, x.dtype),
                                      (linear_cross_entropy_dw_kernel, dw_plan, w_rows, weight.dtype)):
        partials, (grid, scalars, constexprs), (sum_grid, sum_scalars, sum_constexprs) = plan
        partial, grad = alloc(*partials), alloc(*rows, dtype)
        kernel[grid](*args, partial, *scalars, **constexprs)
        _rows.sum_partials_kernel[sum_grid](partial, grad, *sum_scalars, **sum_constexprs)  # the runs' sum, cast
        grads.append(grad)
    return tuple(grads)


def _backward(saved, dloss, _dlse):
    if dloss is None:  # the losses unused (lse carries no gradient)
        return None, None, None, None
    x, weight, targets, lse, ignore_index = saved
    return (*linear_cross_entropy_backward(dloss, x, weight, targets, lse, ignore_index), None, None)


register_autograd(linear_cross_entropy_forward, _backward, non_differentiable=(1,),
                  save=lambda inputs, output: (inputs[0], inputs[1], inputs[2], output[1], inputs[3]))


def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """``cross_entropy(x @ weight^T, targets)`` (mean over the rows not ignored) without the
    logits in memory: x [M, C], weight [V, C] (a Linear layer's weight without bias), targets [M].
    Under ``torch.autocast`` x and weight are cast to its dtype first, as the ``F.linear`` this
    replaces would be; the loss is float32 either way."""
    device = x.device.type
    if torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
        x, weight = x.to(dtype), weight.to(dtype)
    losses = linear_cross_entropy_forward(x, weight, targets, ignore_index)[0]
    return losses.sum() / (targets != ignore_index).sum()
