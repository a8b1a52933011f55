"""Softmax cross-entropy of logits [M, V] against integer targets [M].

Per row: ``loss = logsumexp(logits) - logits[target]``, and 0 for rows whose
target is ``ignore_index``. Forward: one program per row walks the row in
chunks of BLOCK_V with an online log-sum-exp (a running maximum and a sum
rescaled when the maximum grows, per lane), and stores the log-sum-exp for
the backward. Backward: ``dlogits = (softmax - onehot(target)) * dloss`` per
row, from the saved log-sum-exp, chunk by chunk again.

The op returns the per-row losses; ``cross_entropy`` averages them over the
rows that are not ignored.
"""

from __future__ import annotations

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype, custom_op, register_autograd

from . import _rows

IGNORE_INDEX = -100


@tegula.jit
def row_logsumexp(row_ptr, width, BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    """The log-sum-exp of row_ptr[0:width], walked in chunks of BLOCK_V with an online maximum per lane."""
    cols = tl.arange(0, BLOCK_V)
    # Finite start: a lane that only ever sees masked (-inf) logits must not compute -inf - -inf.
    running_max = tl.full([BLOCK_V], -1.0e30, ACC)
    running_sum = tl.zeros([BLOCK_V], dtype=ACC)
    for c0 in range(0, width, BLOCK_V):
        x = tl.load(row_ptr + c0 + cols, mask=c0 + cols < width, other=float("-inf")).to(ACC)
        new_max = tl.maximum(running_max, x)
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.exp(x - new_max)
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    return row_max + tl.log(tl.sum(running_sum * tl.exp(running_max - row_max), axis=0))


@tegula.jit
def row_softmax_grad(src_ptr, dst_ptr, width, first_column, target, lse, scale,
                     BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    """dst[0:width] = (exp(src - lse) - onehot(target)) * scale, for the columns first_column .. + width of a
    row (dst may be src)."""
    cols = tl.arange(0, BLOCK_V)
    for c0 in range(0, width, BLOCK_V):
        mask = c0 + cols < width
        x = tl.load(src_ptr + c0 + cols, mask=mask, other=0.0).to(ACC)
        grad = (tl.exp(x - lse) - tl.where(first_column + c0 + cols == target, 1.0, 0.0)) * scale
        tl.store(dst_ptr + c0 + cols, grad.to(dst_ptr.dtype.element_ty), mask=mask)


@tegula.jit
def cross_entropy_forward_kernel(logits_ptr, targets_ptr, loss_ptr, lse_ptr, V, ignore_index,
                                 BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # M * V may pass 2^31
    lse = row_logsumexp(logits_ptr + row * V, V, BLOCK_V, ACC)
    target = tl.load(targets_ptr + row)
    valid = target != ignore_index
    # A target outside [0, V) reads nothing and makes the row's loss NaN (the host checks CPU targets first).
    inside = (target >= 0) & (target < V)
    target_logit = tl.load(logits_ptr + row * V + target, mask=valid & inside, other=0.0).to(ACC)
    tl.store(loss_ptr + row, tl.where(valid, tl.where(inside, lse - target_logit, float("nan")), 0.0))
    tl.store(lse_ptr + row, lse)


@tegula.jit
def cross_entropy_backward_kernel(dloss_ptr, logits_ptr, targets_ptr, lse_ptr, dlogits_ptr, V, ignore_index,
                                  BLOCK_V: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    target = tl.load(targets_ptr + row)
    scale = tl.where(target != ignore_index, tl.load(dloss_ptr + row).to(ACC), 0.0)
    row_softmax_grad(logits_ptr + row * V, dlogits_ptr + row * V, V, 0, target, tl.load(lse_ptr + row), scale,
                     BLOCK_V, ACC)


def _block_v(V: int) -> int:
    return min(tegula.next_power_of_2(V), 1024)


def _check(logits, targets):
    if logits.dim() != 2 or targets.shape != logits.shape[:1] or targets.dtype != torch.int64:
        raise ValueError(f"cross_entropy takes logits [M, V] and int64 targets [M], got {tuple(logits.shape)} and "
                         f"{tuple(targets.shape)} {targets.dtype}")
    _rows.check_rows("cross_entropy", logits)
    if logits.shape[1] == 0:
        raise ValueError("cross_entropy takes logits of at least one class, got V = 0")


def check_targets(op: str, targets: torch.Tensor, V: int, ignore_index: int) -> None:
    """Raises ValueError for a target outside [0, V) that is not ignore_index, as torch does, where that
    costs no wait: for targets in host memory. (On a GPU such a row's loss is NaN instead.)"""
    if targets.device.type != "cpu" or targets.numel() == 0:
        return
    wrong = ((targets < 0) | (targets >= V)) & (targets != ignore_index)
    if bool(wrong.any()):
        row = int(wrong.nonzero()[0, 0])
        raise ValueError(f"{op}: target {int(targets[row])} of row {row} is out of bounds for {V} classes "
                         f"(and is not ignore_index {ignore_index})")


def _forward_fake(logits, targets, ignore_index):
    _check(logits, targets)
    losses = logits.new_empty(logits.shape[:1], dtype=_rows.accumulator(logits))
    return losses, losses.new_empty(losses.shape)


@custom_op("tegula::cross_entropy", fake=_forward_fake)
def cross_entropy_forward(logits: torch.Tensor, targets: torch.Tensor,
                          ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(losses, lse) per row, float32 (float64 for float64 logits)."""
    _check(logits, targets)
    logits, targets = logits.contiguous(), targets.contiguous()
    M, V = logits.shape
    check_targets("cross_entropy", targets, V, ignore_index)
    losses = torch.empty(M, dtype=_rows.accumulator(logits), device=logits.device)
    lse = torch.empty_like(losses)
    cross_entropy_forward_kernel[(M,)](logits, targets, losses, lse, V, ignore_index, BLOCK_V=_block_v(V),
                                       ACC=compute_dtype(logits))
    return losses, lse


@custom_op("tegula::cross_entropy_backward", fake=lambda dloss, logits, targets, lse, ignore_index:
           logits.new_empty(logits.shape))
def cross_entropy_backward(dloss: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor, lse: torch.Tensor,
                           ignore_index: int) -> torch.Tensor:
    logits = logits.contiguous()
    M, V = logits.shape
    dlogits = torch.empty_like(logits)
    cross_entropy_backward_kernel[(M,)](dloss.contiguous(), logits, targets.contiguous(), lse, dlogits, V,
                                        ignore_index, BLOCK_V=_block_v(V), ACC=compute_dtype(logits))
    return dlogits


def _backward(saved, dloss, _dlse):
    if dloss is None:  # the losses unused (lse carries no gradient)
        return None, None, None
    logits, targets, lse, ignore_index = saved
    return cross_entropy_backward(dloss, logits, targets, lse, ignore_index), None, None


register_autograd(cross_entropy_forward, _backward, non_differentiable=(1,),
                  save=lambda inputs, output: (inputs[0], inputs[1], output[1], inputs[2]))


def cross_entropy_losses(logits: torch.Tensor, targets: torch.Tensor,
                         ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """The loss of each row (0 where the target is ignore_index), like
    ``torch.nn.functional.cross_entropy(..., reduction="none")``."""
    return cross_entropy_forward(logits, targets, ignore_index)[0]


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """The mean loss over the rows whose target is not ignore_index, like
    ``torch.nn.functional.cross_entropy`` (logits [M, V], targets [M]).
    The mean itself is a torch reduction over the op's per-row losses."""
    losses = cross_entropy_losses(logits, targets, ignore_index)
    return losses.sum() / (targets != ignore_index).sum()
