"""Normalization layers: layer norm forward and backward (tutorial 05's
pattern: per-row dx, weight gradients accumulated in groups under a spin lock
made of atomic_cas/atomic_xchg, then reduced), RMSNorm forward and backward
(weight gradient by atomic_add), and a Welford mean/variance reduction."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                          BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centered = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = centered * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_bwd_dx_kernel(dx_ptr, dy_ptr, partial_dw_ptr, partial_db_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr,
                             locks_ptr, stride, N, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)

    # Rows row, row + GROUP_SIZE, ... add their dw and db into one row of the
    # partial buffers. locks_ptr[g] guards group g; locks_ptr[GROUP_SIZE + g]
    # counts the rows already added (the first one stores instead of adding).
    dw = (dy * xhat).to(w.dtype)
    db = dy.to(w.dtype)
    group = row % GROUP_SIZE
    lock = locks_ptr + group
    count = locks_ptr + GROUP_SIZE + group
    partial_dw_ptrs = partial_dw_ptr + group * N + cols
    partial_db_ptrs = partial_db_ptr + group * N + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    rows_done = tl.load(count)
    if rows_done > 0:
        dw += tl.load(partial_dw_ptrs, mask=mask)
        db += tl.load(partial_db_ptrs, mask=mask)
    tl.store(partial_dw_ptrs, dw, mask=mask)
    tl.store(partial_db_ptrs, db, mask=mask)
    tl.store(count, rows_done + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def layer_norm_bwd_dwdb_kernel(partial_dw_ptr, partial_db_ptr, dw_ptr, db_ptr, G, N,
                               BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    for first in range(0, G, BLOCK_G):
        rows = first + tl.arange(0, BLOCK_G)
        mask = (rows[:, None] < G) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(partial_dw_ptr + offs, mask=mask, other=0.0)
        db += tl.load(partial_db_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < N)


@triton.jit
def rms_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, rstd_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_bwd_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, dw_ptr, stride, M, N, BLOCK_N: tl.constexpr):
    # A fixed number of programs strides over the rows; each keeps its share of
    # dw in registers and adds it to the fp32 dw with one atomic_add.
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd
        wdy = w * dy
        dx = rstd * (wdy - xhat * (tl.sum(wdy * xhat, axis=0) / N))
        tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
    tl.atomic_add(dw_ptr + cols, dw, mask=mask)


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    share_b = tl.where(n == 0.0, 0.0, n_b / n)
    delta = mean_b - mean_a
    return mean_a + delta * share_b, m2_a + m2_b + delta * delta * n_a * share_b, n


@triton.jit
def welford_kernel(x_ptr, mean_ptr, var_ptr, stride, N, BLOCK: tl.constexpr):
    # Per row: every lane keeps its own (mean, M2, count) over the chunks it
    # sees, then one tl.reduce merges the lanes with Chan's formula.
    row = tl.program_id(0)
    mean = tl.zeros([BLOCK], dtype=tl.float32)
    m2 = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        count_new = count + mask.to(tl.float32)
        delta = x - mean
        mean = mean + tl.where(mask, delta / tl.maximum(count_new, 1.0), 0.0)
        m2 = m2 + tl.where(mask, delta * (x - mean), 0.0)
        count = count_new
    row_mean, row_m2, row_count = tl.reduce((mean, m2, count), 0, welford_combine)
    tl.store(mean_ptr + row, row_mean)
    tl.store(var_ptr + row, row_m2 / row_count)
