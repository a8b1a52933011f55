"""Row-wise softmax (tutorial 02: a persistent loop over rows) and the
cross-entropy loss of LLM training (chunked online logsumexp forward, fused
softmax-minus-one-hot backward)."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, NUM_STAGES: tl.constexpr):
    # Each program handles rows pid, pid + P, pid + 2P...; a whole row fits one tile.
    first_row = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(first_row, n_rows, step, num_stages=NUM_STAGES):
        cols = tl.arange(0, BLOCK_SIZE)
        valid = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=valid, other=-float("inf"))
        shifted = x - tl.max(x, axis=0)
        e = tl.exp(shifted)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_stride + cols, y, mask=valid)


@triton.jit
def softmax_builtin_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * stride + cols, tl.softmax(x), mask=mask)


@triton.jit
def softmax_rows_keep_dims_kernel(out_ptr, in_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    # BLOCK_R rows per program; keep_dims=True leaves [BLOCK_R, 1] row statistics.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(in_ptr + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=1, keep_dims=True))
    tl.store(out_ptr + offs, e / tl.sum(e, axis=1, keep_dims=True), mask=mask)


@triton.jit
def cross_entropy_fwd_kernel(logits_ptr, targets_ptr, loss_ptr, lse_ptr, stride, n_cols, ignore_index,
                             BLOCK: tl.constexpr):
    # One program per row; the vocabulary is read in chunks of BLOCK columns,
    # keeping a running max and a running sum of exponentials.
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride
    target = tl.load(targets_ptr + row)
    running_max = -float("inf")
    running_sum = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    lse = running_max + tl.log(running_sum)
    ignored = target == ignore_index
    target_logit = tl.load(row_ptr + tl.where(ignored, 0, target)).to(tl.float32)  # never read outside the row
    loss = tl.where(ignored, 0.0, lse - target_logit)
    tl.store(loss_ptr + row, loss)
    tl.store(lse_ptr + row, lse)


@triton.jit
def cross_entropy_bwd_kernel(logits_ptr, targets_ptr, lse_ptr, dloss_ptr, dlogits_ptr, stride, n_cols,
                             ignore_index, BLOCK: tl.constexpr):
    # d loss / d logits = (softmax(logits) - one_hot(target)) * dloss, zero for ignored rows.
    row = tl.program_id(0).to(tl.int64)
    target = tl.load(targets_ptr + row)
    lse = tl.load(lse_ptr + row)
    scale = tl.where(target == ignore_index, 0.0, tl.load(dloss_ptr + row))
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        p = tl.exp(x - lse)
        grad = tl.where(cols == target, p - 1.0, p) * scale
        tl.store(dlogits_ptr + row * stride + cols, grad.to(dlogits_ptr.dtype.element_ty), mask=mask)
