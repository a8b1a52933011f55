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


@custom_op("tegula::linear_cross_entropy", fake=_forward_fake)
def linear_cross_entropy_forward(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                 ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(losses, lse) per row, float32 (float64 for float64 inputs)."""
    _check(x, weight, targets)
    x, weight, targets = x.contiguous(), weight.contiguous(), targets.contiguous()
    (M, C), V = x.shape, weight.shape[0]
    check_targets("linear_cross_entropy", targets, V, ignore_index)
    losses = torch.empty(M, dtype=_rows.accumulator(x), device=x.device)
    lse = torch.empty_like(losses)
    if not M:
        return losses, lse
    t = tiles(x)
    row_blocks = tegula.cdiv(M, t.block_m)
    runs, vocab_per_run = _runs(V, t.block_v, row_blocks, x.device, cap=1 << 16)
    parts = torch.empty((3, runs, M), dtype=losses.dtype, device=x.device)
    linear_cross_entropy_forward_kernel[(row_blocks, runs)](x, weight, targets, parts[0], parts[1], parts[2], M, V, C,
                                                            vocab_per_run, **t.meta(x))
    block = 128
    linear_cross_entropy_combine_kernel[(tegula.cdiv(M, block),)](parts[0], parts[1], parts[2], targets, losses, lse,
                                                                  M, V, runs, ignore_index, BLOCK=block)
    return losses, lse


def _backward_fake(dloss, x, weight, targets, lse, ignore_index):
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


@custom_op("tegula::linear_cross_entropy_backward", fake=_backward_fake)
def linear_cross_entropy_backward(dloss: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                  lse: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight); the gradients are accumulated in float32 (float64) and then cast to x's dtype."""
    dloss, x, weight, targets = dloss.contiguous(), x.contiguous(), weight.contiguous(), targets.contiguous()
    (M, C), V = x.shape, weight.shape[0]
    accumulator = _rows.accumulator(x)
    if not M:
        return torch.zeros_like(x), torch.zeros_like(weight)
    args = (x, weight, targets, lse, dloss)
    t = tiles(x)
    row_blocks = tegula.cdiv(M, t.block_m)
    runs, vocab_per_run = _runs(V, t.block_v, row_blocks, x.device,
                                cap=max(1, PARTIAL_BYTES // max(1, M * C * accumulator.itemsize)))
    dx_partials = torch.empty((runs, M, C), dtype=accumulator, device=x.device)  # every run writes its part
    linear_cross_entropy_dx_kernel[(row_blocks, runs)](*args, dx_partials, M, V, C, ignore_index, vocab_per_run,
                                                       **t.meta(x))
    dx = dx_partials[0] if runs == 1 else _rows.sum_partials(dx_partials.view(runs, M * C), accumulator).view(M, C)
    vocab_blocks = tegula.cdiv(V, t.block_v)
    runs, rows_per_run = _runs(M, t.block_m, vocab_blocks, x.device,
                               cap=max(1, PARTIAL_BYTES // max(1, V * C * accumulator.itemsize)))
    partials = torch.empty((runs, V, C), dtype=accumulator, device=x.device)
    linear_cross_entropy_dw_kernel[(vocab_blocks, runs)](*args, partials, M, V, C, ignore_index, rows_per_run,
                                                         **t.meta(x))
    if runs == 1:
        return dx.to(x.dtype), partials[0].to(weight.dtype)
    return dx.to(x.dtype), _rows.sum_partials(partials.view(runs, V * C), weight.dtype).view(V, C)


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
