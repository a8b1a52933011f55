"""The output projection fused with softmax cross-entropy: the loss of
``logits = x @ weight^T`` (x [M, C], weight [V, C]) against targets [M],
with the [M, V] logits never in memory whole.

The vocabulary is taken in chunks of columns, each chunk's logits
``x @ weight[v0:v1]^T`` a matrix product of the library's (cuBLAS on a GPU,
the CPU's BLAS), at most LOGITS_CHUNK_BYTES of them at a time. Forward: a
Tegula kernel reduces each chunk's rows to their log-sum-exp and picks the
target's logit where the chunk holds it; a second kernel combines the chunks
per row into the loss and the log-sum-exp, which is saved. Backward: each
chunk's logits again, turned in place by a Tegula kernel into ``dlogits =
(softmax - onehot(target)) * dloss``; then ``dweight[v0:v1] = dlogits^T @ x``
(one product per chunk, written once) and ``dx += dlogits @ weight[v0:v1]``.

That backward computes each chunk's logits a second time: four products
of [M, V, C] in all where a materialized [M, V] needs three. So
``linear_cross_entropy``, whose loss is the mean over the rows not ignored,
takes another op where a gradient will be asked for
(``linear_cross_entropy_with_grads``): it walks chunks of rows instead, each
[rows, V] block of logits whole, and one Tegula kernel per row turns it into
the row's loss and, in place, its ``dlogits`` for an upstream gradient of 1
(scaled by 1 / the count of rows not ignored, which a kernel counted
first); then ``dx[rows] = dlogits @ weight`` and ``dweight += dlogits^T @
x[rows]``. Three products; the gradients are outputs of the forward, and
the backward only scales them by the loss's upstream gradient, in float32.
A per-row loss gives no such shortcut: the weight's gradient would need
each row's upstream gradient, so ``linear_cross_entropy_forward`` keeps the
recomputing backward.

The products run at the matrix units' rate, which kernels of tiles that
recompute the logits for each gradient could not approach; the Tegula
kernels are the row passes between them, each reading a chunk once.
Statistics are float32 (float64 for float64 inputs); the logits and
dlogits are in the inputs' dtype, as ``F.linear`` and its backward give
them. Rows whose target is ``ignore_index`` have no loss and no gradient.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows
from ._empty import allocator, sizes_and_strides
from ._layouts import Layouts
from .cross_entropy import IGNORE_INDEX, check_targets, row_logsumexp, row_softmax_grad

# The most memory one chunk of logits takes; a chunk holds at least MIN_CHUNK_COLUMNS columns (or all of V).
LOGITS_CHUNK_BYTES = 128 << 20
MIN_CHUNK_COLUMNS = 256


def chunk_columns(M: int, V: int, itemsize: int) -> int:
    """The columns of a chunk of logits for M rows: as many as LOGITS_CHUNK_BYTES holds, in multiples of
    MIN_CHUNK_COLUMNS, at most V."""
    columns = LOGITS_CHUNK_BYTES // max(1, M * itemsize) // MIN_CHUNK_COLUMNS * MIN_CHUNK_COLUMNS
    return min(V, max(MIN_CHUNK_COLUMNS, columns))


def _block_v(columns: int) -> int:
    return min(tegula.next_power_of_2(columns), 1024)


def chunk_rows(M: int, V: int, itemsize: int) -> int:
    """The rows of a chunk of whole rows of logits [rows, V]: as many as LOGITS_CHUNK_BYTES holds (a multiple
    of 128 from 128 on, which the products' tiles divide), at least 1, at most M."""
    rows = LOGITS_CHUNK_BYTES // max(1, V * itemsize)
    if rows >= 128:
        rows -= rows % 128
    return max(1, min(M, rows))


# The parts are rows of one buffer, each at its own alignment; the kernel stores one scalar a row to them.
@tegula.jit(do_not_specialize_on_alignment=["LSE_PART", "TARGET_PART"])
def linear_cross_entropy_chunk_kernel(LOGITS, TARGETS, LSE_PART, TARGET_PART, width, v0,
                                      BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    # Row `row` of a chunk of logits [M, width] (columns v0 .. v0 + width of the vocabulary): its
    # log-sum-exp, and the target's logit where the chunk holds the target (else 0).
    row = tl.program_id(0).to(tl.int64)  # M * width may pass 2^31
    tl.store(LSE_PART + row, row_logsumexp(LOGITS + row * width, width, BLOCK_V, ACC))
    column = tl.load(TARGETS + row) - v0
    inside = (column >= 0) & (column < width)
    tl.store(TARGET_PART + row, tl.load(LOGITS + row * width + column, mask=inside, other=0.0).to(ACC))


@tegula.jit
def linear_cross_entropy_combine_kernel(LSE_PART, TARGET_PART, TARGETS, LOSS, LSE, M, V, chunks, ignore_index,
                                        BLOCK: tl.constexpr):
    # Each row's log-sum-exp and loss from its chunks' parts.
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = rows < M
    acc = LSE_PART.dtype.element_ty
    m_i = tl.full([BLOCK], float("-inf"), acc)
    l_i = tl.zeros([BLOCK], dtype=acc)
    target_logit = tl.zeros([BLOCK], dtype=acc)
    for chunk in range(0, chunks):
        offs = chunk.to(tl.int64) * M + rows
        lse_chunk = tl.load(LSE_PART + offs, mask=inside, other=0.0)
        m_new = tl.maximum(m_i, lse_chunk)
        l_i = l_i * tl.exp(m_i - m_new) + tl.exp(lse_chunk - m_new)
        m_i = m_new
        target_logit += tl.load(TARGET_PART + offs, mask=inside, other=0.0)
    lse = m_i + tl.log(l_i)
    targets = tl.load(TARGETS + rows, mask=inside, other=ignore_index)
    # A target outside [0, V) picked no logit: its row's loss is NaN (the host checks CPU targets first).
    picked = tl.where((targets >= 0) & (targets < V), lse - target_logit, float("nan"))
    tl.store(LOSS + rows, tl.where(targets != ignore_index, picked, 0.0), mask=inside)
    tl.store(LSE + rows, lse, mask=inside)


@tegula.jit
def linear_cross_entropy_dlogits_kernel(DLOSS, LOGITS, TARGETS, LSE, width, v0, ignore_index,
                                        BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    # Row `row` of a chunk of logits, in place: (softmax - onehot(target)) * dloss, 0 in an ignored row.
    row = tl.program_id(0).to(tl.int64)
    target = tl.load(TARGETS + row)
    scale = tl.where(target != ignore_index, tl.load(DLOSS + row).to(ACC), 0.0)
    row_softmax_grad(LOGITS + row * width, LOGITS + row * width, width, v0, target, tl.load(LSE + row), scale,
                     BLOCK_V, ACC)


@tegula.jit
def linear_cross_entropy_count_kernel(TARGETS, COUNTS, M, ignore_index, BLOCK: tl.constexpr):
    # One program: COUNTS[0] = the rows not ignored, COUNTS[1] = 1 / that (0 when every row is ignored:
    # then every row's gradient is 0 and must not become 0 * inf).
    offsets = tl.arange(0, BLOCK)
    count = tl.zeros([BLOCK], dtype=tl.int64)
    for r0 in range(0, M, BLOCK):
        rows = r0 + offsets
        count += (tl.load(TARGETS + rows, mask=rows < M, other=ignore_index) != ignore_index).to(tl.int64)
    total = tl.sum(count, axis=0).to(COUNTS.dtype.element_ty)
    tl.store(COUNTS, total)
    tl.store(COUNTS + 1, tl.where(total > 0, 1.0 / total, 0.0))


@tegula.jit
def linear_cross_entropy_rows_kernel(LOGITS, TARGETS, LOSSES, COUNTS, V, ignore_index,
                                     BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    # Row `row` of a chunk of whole rows of logits [rows, V]: its loss, then in place its gradient for a
    # mean loss, (softmax - onehot(target)) / count, 0 in an ignored row.
    row = tl.program_id(0).to(tl.int64)  # rows * V may pass 2^31
    logits = LOGITS + row * V
    lse = row_logsumexp(logits, V, BLOCK_V, ACC)
    target = tl.load(TARGETS + row)
    valid = target != ignore_index
    # A target outside [0, V) picks no logit: its row's loss is NaN (the host checks CPU targets first).
    inside = (target >= 0) & (target < V)
    target_logit = tl.load(logits + target, mask=valid & inside, other=0.0).to(ACC)
    tl.store(LOSSES + row, tl.where(valid, tl.where(inside, lse - target_logit, float("nan")), 0.0))
    scale = tl.where(valid, tl.load(COUNTS + 1), 0.0)
    row_softmax_grad(logits, logits, V, 0, target, lse, scale, BLOCK_V, ACC)


@tegula.jit
def linear_cross_entropy_mean_kernel(LOSSES, COUNTS, LOSS, M, BLOCK: tl.constexpr):
    # One program: LOSS[0] = the sum of the rows' losses / the count of rows not ignored (NaN when none is,
    # as torch's mean over no rows).
    offsets = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=LOSS.dtype.element_ty)
    for r0 in range(0, M, BLOCK):
        rows = r0 + offsets
        total += tl.load(LOSSES + rows, mask=rows < M, other=0.0)
    tl.store(LOSS, tl.sum(total, axis=0) / tl.load(COUNTS))


@tegula.jit
def linear_cross_entropy_scale_kernel(SRC, DST, DLOSS, N, BLOCK: tl.constexpr):
    # DST = SRC * DLOSS[0], multiplied in DLOSS's precision and rounded once to DST's dtype.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < N
    scaled = tl.load(SRC + offsets, mask=mask, other=0.0).to(DLOSS.dtype.element_ty) * tl.load(DLOSS)
    tl.store(DST + offsets, scaled.to(DST.dtype.element_ty), mask=mask)


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


# What the arguments' metadata decides (_layouts.py): the chunks and the
# sizes each direction allocates (the chunk sizes in the key), for contiguous inputs with rows; else None (the general path copies them
# first, or has nothing to do).
_FORWARD_LAYOUTS, _BACKWARD_LAYOUTS = Layouts(), Layouts()


def _chunks(x, weight):
    """(the chunks as (first column, width) pairs, the logits buffer's sizes and strides, the row kernels'
    constexprs) for x [M, C] and weight [V, C]."""
    (M, _), V = x.shape, weight.shape[0]
    width = chunk_columns(M, V, x.element_size())
    chunks = tuple((v0, min(width, V - v0)) for v0 in range(0, V, width))
    return chunks, sizes_and_strides((M * width,)), dict(BLOCK_V=_block_v(width), ACC=compute_dtype(x))


def _forward_layout(x, weight, targets, ignore_index):
    """(the chunks, the logits buffer's sizes and strides, the row kernels' constexprs, the losses' sizes and
    strides, the parts', the dtype of both, the combining launch as (grid, scalars, constexprs))."""
    M, V = x.shape[0], weight.shape[0]
    if not M:
        return None
    chunks, buffer, meta = _chunks(x, weight)
    block = 128
    return (chunks, buffer, meta, sizes_and_strides((M,)), sizes_and_strides((2, len(chunks), M)),
            _rows.accumulator(x),
            ((tegula.cdiv(M, block),), (M, V, len(chunks), ignore_index), dict(BLOCK=block)))


def _contiguous_layout(make):
    """`make` for the kept layouts: checked arguments, and None (the general path) unless they are contiguous."""
    def layout(x, weight, targets, *rest):
        _check(x, weight, targets)
        if not (x.is_contiguous() and weight.is_contiguous() and targets.is_contiguous()):
            return None
        return make(x, weight, targets, *rest)
    return layout


def _chunk_logits(buffer, x, weight, v0, width):
    """x @ weight[v0:v0 + width]^T into the first M * width elements of `buffer`, as a contiguous [M, width]."""
    logits = buffer[:x.shape[0] * width].view(x.shape[0], width)
    return torch.mm(x, weight[v0:v0 + width].t(), out=logits)


@custom_op("tegula::linear_cross_entropy", fake=_forward_fake)
def linear_cross_entropy_forward(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                 ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(losses, lse) per row, float32 (float64 for float64 inputs)."""
    layout = _FORWARD_LAYOUTS.lookup((x, weight, targets), (ignore_index, LOGITS_CHUNK_BYTES, MIN_CHUNK_COLUMNS),
                                     _contiguous_layout(_forward_layout), x, weight, targets, ignore_index)
    if layout is None:
        _check(x, weight, targets)
        x, weight, targets = x.contiguous(), weight.contiguous(), targets.contiguous()
        layout = _forward_layout(x, weight, targets, ignore_index)
        if layout is None:  # no rows
            losses = x.new_empty((0,), dtype=_rows.accumulator(x))
            return losses, losses.new_empty((0,))
    check_targets("linear_cross_entropy", targets, weight.shape[0], ignore_index)
    chunks, buffer, meta, rows, parts, dtype, (combine_grid, combine_scalars, combine_constexprs) = layout
    alloc = allocator(x.device)
    losses, lse, parts, buffer = alloc(*rows, dtype), alloc(*rows, dtype), alloc(*parts, dtype), alloc(*buffer, x.dtype)
    lse_part, target_part = parts.unbind(0)
    grid = (x.shape[0],)
    for k, (v0, width) in enumerate(chunks):
        logits = _chunk_logits(buffer, x, weight, v0, width)
        linear_cross_entropy_chunk_kernel[grid](logits, targets, lse_part[k], target_part[k], width, v0, **meta)
    linear_cross_entropy_combine_kernel[combine_grid](lse_part, target_part, targets, losses, lse,
                                                      *combine_scalars, **combine_constexprs)
    return losses, lse


def _backward_fake(dloss, x, weight, targets, lse, ignore_index):
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _backward_layout(x, weight, targets, ignore_index):
    """For contiguous x, weight and targets with rows: (the chunks, the logits buffer's sizes and strides, the
    row kernel's constexprs, dx's sizes and strides, dweight's)."""
    if not x.shape[0]:
        return None
    return (*_chunks(x, weight), sizes_and_strides(tuple(x.shape)), sizes_and_strides(tuple(weight.shape)))


@custom_op("tegula::linear_cross_entropy_backward", fake=_backward_fake)
def linear_cross_entropy_backward(dloss: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                  lse: torch.Tensor, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight) in x's dtype. dweight's rows of a chunk are one product; dx adds the chunks' products
    (in x's dtype: a chunk holds LOGITS_CHUNK_BYTES of logits, so there are few)."""
    layout = _BACKWARD_LAYOUTS.lookup((x, weight, targets, lse, dloss), (ignore_index, LOGITS_CHUNK_BYTES, MIN_CHUNK_COLUMNS),
                                      _contiguous_layout(_backward_layout), x, weight, targets, ignore_index)
    if layout is None or not (lse.is_contiguous() and dloss.is_contiguous()):
        dloss, x, weight, targets, lse = (a.contiguous() for a in (dloss, x, weight, targets, lse))
        layout = _backward_layout(x, weight, targets, ignore_index)
        if layout is None:  # no rows
            return torch.zeros_like(x), torch.zeros_like(weight)
    chunks, buffer, meta, x_rows, w_rows = layout
    alloc = allocator(x.device)
    buffer, dx, dweight = alloc(*buffer, x.dtype), alloc(*x_rows, x.dtype), alloc(*w_rows, weight.dtype)
    grid = (x.shape[0],)
    for k, (v0, width) in enumerate(chunks):
        dlogits = _chunk_logits(buffer, x, weight, v0, width)
        linear_cross_entropy_dlogits_kernel[grid](dloss, dlogits, targets, lse, width, v0, ignore_index, **meta)
        torch.mm(dlogits.t(), x, out=dweight[v0:v0 + width])
        if k == 0:
            torch.mm(dlogits, weight[v0:v0 + width], out=dx)
        else:
            dx.addmm_(dlogits, weight[v0:v0 + width])
    return dx, dweight


def _backward(saved, dloss, _dlse):
    if dloss is None:  # the losses unused (lse carries no gradient)
        return None, None, None, None
    x, weight, targets, lse, ignore_index = saved
    return (*linear_cross_entropy_backward(dloss, x, weight, targets, lse, ignore_index), None, None)


register_autograd(linear_cross_entropy_forward, _backward, non_differentiable=(1,),
                  save=lambda inputs, output: (inputs[0], inputs[1], inputs[2], output[1], inputs[3]))


# --- the mean loss with its gradients, for training ------------------------------------------------------------

def _grad_shapes(x, weight, need_dx, need_dweight) -> tuple:
    """The shapes of dx and dweight: theirs, or (0,) for a gradient nobody asked for."""
    return tuple(x.shape) if need_dx else (0,), tuple(weight.shape) if need_dweight else (0,)


def _with_grads_fake(x, weight, targets, ignore_index, need_dx, need_dweight):
    _check(x, weight, targets)
    dx_shape, dweight_shape = _grad_shapes(x, weight, need_dx, need_dweight)
    return x.new_empty((), dtype=_rows.accumulator(x)), x.new_empty(dx_shape), weight.new_empty(dweight_shape)


_WITH_GRADS_LAYOUTS = Layouts()
_ONE_PROGRAM_BLOCK = 1024  # the count and mean kernels' lanes


def _with_grads_layout(x, weight, targets, ignore_index, need_dx, need_dweight):
    """For contiguous x, weight and targets with rows: (the chunks of rows as (first row, rows) pairs, the
    logits buffer's sizes and strides, the row kernel's constexprs, the sizes and strides of the losses, of
    dx and of dweight (empty where not asked for), the statistics' dtype)."""
    (M, _), V = x.shape, weight.shape[0]
    if not M:
        return None
    rows = chunk_rows(M, V, x.element_size())
    chunks = tuple((r0, min(rows, M - r0)) for r0 in range(0, M, rows))
    dx_shape, dweight_shape = _grad_shapes(x, weight, need_dx, need_dweight)
    return (chunks, sizes_and_strides((rows * V,)), dict(BLOCK_V=_block_v(V), ACC=compute_dtype(x)),
            sizes_and_strides((M,)), sizes_and_strides(dx_shape), sizes_and_strides(dweight_shape),
            _rows.accumulator(x))


@custom_op("tegula::linear_cross_entropy_with_grads", fake=_with_grads_fake)
def linear_cross_entropy_with_grads(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                    ignore_index: int, need_dx: bool, need_dweight: bool
                                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, dx, dweight): the mean loss over the rows not ignored (float32, float64 for float64 inputs;
    NaN when every row is ignored, as torch's mean) and its gradients for an upstream gradient of 1, in the
    inputs' dtypes; a gradient not needed is an empty tensor, and its product is not made (a frozen output
    projection, as in fine-tuning with adapters, saves a third of the work). Its autograd formula scales dx
    and dweight by the loss's actual upstream gradient."""
    layout = _WITH_GRADS_LAYOUTS.lookup((x, weight, targets),
                                        (ignore_index, LOGITS_CHUNK_BYTES, need_dx, need_dweight),
                                        _contiguous_layout(_with_grads_layout), x, weight, targets, ignore_index,
                                        need_dx, need_dweight)
    if layout is None:
        _check(x, weight, targets)
        x, weight, targets = x.contiguous(), weight.contiguous(), targets.contiguous()
        layout = _with_grads_layout(x, weight, targets, ignore_index, need_dx, need_dweight)
        if layout is None:  # no rows
            dx_shape, dweight_shape = _grad_shapes(x, weight, need_dx, need_dweight)
            return (torch.full((), float("nan"), dtype=_rows.accumulator(x), device=x.device),
                    x.new_zeros(dx_shape), weight.new_zeros(dweight_shape))
    check_targets("linear_cross_entropy", targets, weight.shape[0], ignore_index)
    chunks, buffer, meta, rows, x_rows, w_rows, dtype = layout
    (M, _), V = x.shape, weight.shape[0]
    alloc = allocator(x.device)
    buffer, losses = alloc(*buffer, x.dtype), alloc(*rows, dtype)
    counts, loss = alloc((2,), (1,), dtype), alloc((), (), dtype)
    dx, dweight = alloc(*x_rows, x.dtype), alloc(*w_rows, weight.dtype)
    linear_cross_entropy_count_kernel[(1,)](targets, counts, M, ignore_index, BLOCK=_ONE_PROGRAM_BLOCK)
    for r0, n in chunks:
        whole = n == M  # one chunk: the tensors themselves, no views to make
        x_part = x if whole else x[r0:r0 + n]
        logits = torch.mm(x_part, weight.t(), out=buffer[:n * V].view(n, V))
        linear_cross_entropy_rows_kernel[(n,)](logits, targets if whole else targets[r0:],
                                               losses if whole else losses[r0:], counts, V, ignore_index, **meta)
        if need_dx:
            torch.mm(logits, weight, out=dx if whole else dx[r0:r0 + n])
        if need_dweight and r0 == 0:
            torch.mm(logits.t(), x_part, out=dweight)
        elif need_dweight:
            dweight.addmm_(logits.t(), x_part)
    linear_cross_entropy_mean_kernel[(1,)](losses, counts, loss, M, BLOCK=_ONE_PROGRAM_BLOCK)
    return loss, dx, dweight


_SCALE_BLOCK = 2048


@custom_op("tegula::linear_cross_entropy_scale_grads",
           fake=lambda dloss, dx, dweight: (dx.new_empty(dx.shape), dweight.new_empty(dweight.shape)))
def linear_cross_entropy_scale_grads(dloss: torch.Tensor, dx: torch.Tensor,
                                     dweight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """dx and dweight times the 0-dimensional dloss, multiplied in dloss's dtype and rounded once."""
    dloss, dx, dweight = dloss.contiguous(), dx.contiguous(), dweight.contiguous()
    alloc = allocator(dx.device)
    scaled = []
    for grad in (dx, dweight):
        out = alloc(*sizes_and_strides(tuple(grad.shape)), grad.dtype)
        n = grad.numel()
        if n:
            linear_cross_entropy_scale_kernel[(tegula.cdiv(n, _SCALE_BLOCK),)](grad, out, dloss, n,
                                                                               BLOCK=_SCALE_BLOCK)
        scaled.append(out)
    return tuple(scaled)


def _with_grads_backward(saved, dloss, _ddx, _ddweight):
    dx, dweight, need_dx, need_dweight = saved
    if dloss is None:
        return None, None, None, None, None, None
    dx, dweight = linear_cross_entropy_scale_grads(dloss, dx, dweight)
    return dx if need_dx else None, dweight if need_dweight else None, None, None, None, None


register_autograd(linear_cross_entropy_with_grads, _with_grads_backward, non_differentiable=(1, 2),
                  save=lambda inputs, output: (output[1], output[2], inputs[4], inputs[5]))


def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """``cross_entropy(x @ weight^T, targets)`` (mean over the rows not ignored) without the
    logits in memory: x [M, C], weight [V, C] (a Linear layer's weight without bias), targets [M].
    Under ``torch.autocast`` x and weight are cast to its dtype first, as the ``F.linear`` this
    replaces would be; the loss is float32 either way. Where x or weight asks for a gradient, the
    forward computes the gradients too (``linear_cross_entropy_with_grads``, three matrix products
    in all instead of four), and the backward only scales them: evaluate under ``torch.no_grad()``
    when no backward follows."""
    device = x.device.type
    if torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
        x, weight = x.to(dtype), weight.to(dtype)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        return linear_cross_entropy_with_grads(x, weight, targets, ignore_index, x.requires_grad,
                                               weight.requires_grad)[0]
    losses = linear_cross_entropy_forward(x, weight, targets, ignore_index)[0]
    return losses.sum() / (targets != ignore_index).sum()
