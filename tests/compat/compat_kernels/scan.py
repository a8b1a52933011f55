"""Counting, scanning and sorting: a histogram, chunked cumulative sums, a
first-order linear recurrence by associative_scan over a tuple, row argmax
(greedy decoding) and top-k by sorting packed (value, index) keys."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    counts = tl.histogram(x, NUM_BINS)
    # Lanes past the end read 0 and were counted in bin 0: take them back out.
    padding = BLOCK - tl.sum(mask.to(tl.int32), axis=0)
    bins = tl.arange(0, NUM_BINS)
    counts -= tl.where(bins == 0, padding, 0)
    tl.atomic_add(hist_ptr + bins, counts)


@triton.jit
def cumsum_rows_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # Rows longer than a tile: scan each chunk and carry the running total.
    row = tl.program_id(0)
    carry = tl.zeros([1], dtype=out_ptr.dtype.element_ty)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0).to(out_ptr.dtype.element_ty)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * stride + cols, y, mask=mask)
        carry += tl.sum(x, axis=0)


@triton.jit
def reverse_cumsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0, reverse=True), mask=mask)


@triton.jit
def affine_combine(a_left, b_left, a_right, b_right):
    # Composing h -> a_left h + b_left, then h -> a_right h + b_right.
    return a_left * a_right, b_left * a_right + b_right


@triton.jit
def linear_recurrence_kernel(a_ptr, b_ptr, h_ptr, stride, seq_len, BLOCK: tl.constexpr):
    # h[t] = a[t] * h[t-1] + b[t], h[-1] = 0: the scan of the decaying sums in
    # linear attention and state-space layers.
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK)
    mask = t < seq_len
    a = tl.load(a_ptr + row * stride + t, mask=mask, other=1.0)
    b = tl.load(b_ptr + row * stride + t, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=affine_combine)
    tl.store(h_ptr + row * stride + t, h, mask=mask)


@triton.jit
def argmax_rows_kernel(logits_ptr, index_ptr, value_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(logits_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(index_ptr + row, tl.argmax(x, axis=0))
    value, where = tl.max(x, axis=0, return_indices=True)
    tl.store(value_ptr + row, value)
    tl.device_assert(where == tl.argmax(x, axis=0), "max and argmax disagree")


@triton.jit
def topk_rows_kernel(x_ptr, values_ptr, indices_ptr, stride, n_cols, K: tl.constexpr, BLOCK: tl.constexpr):
    # Pack each float into an int64 whose order is the float's order (high
    # half) and its column (low half, reversed so that among equal values the
    # smaller column sorts first), sort once descending and keep the first K.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    bits = x.to(tl.int32, bitcast=True)
    ordered = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    keys = (ordered.to(tl.int64) << 32) | (BLOCK - 1 - cols).to(tl.int64)
    top = tl.sort(keys, descending=True)
    top_ordered = (top >> 32).to(tl.int32)
    top_bits = tl.where(top_ordered < 0, top_ordered ^ 0x7FFFFFFF, top_ordered)
    top_cols = BLOCK - 1 - (top & 0xFFFFFFFF).to(tl.int32)
    out = tl.arange(0, BLOCK)
    tl.store(values_ptr + row * K + out, top_bits.to(tl.float32, bitcast=True), mask=out < K)
    tl.store(indices_ptr + row * K + out, top_cols, mask=out < K)
