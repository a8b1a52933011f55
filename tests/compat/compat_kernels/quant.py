"""Per-row int8 quantization and dequantization, and a fused AdamW step
(the optimizer update of mixed-precision training in one pass over memory)."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
else:
    import tegula as triton
    import tegula.language as tl
    from tegula.language.extra import libdevice


@triton.jit
def quantize_rowwise_kernel(x_ptr, q_ptr, scale_ptr, stride_x, stride_q, n_cols,
                            BLOCK: tl.constexpr, N_CHUNKS: tl.constexpr):
    # Symmetric int8: scale = max|x| / 127 per row, q = round(x / scale).
    # A row spans N_CHUNKS tiles; both passes over it are unrolled.
    row = tl.program_id(0)
    absmax = tl.zeros([BLOCK], dtype=tl.float32)
    for chunk in tl.static_range(N_CHUNKS):
        cols = chunk * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        absmax = tl.maximum(absmax, tl.abs(x))
    scale = tl.maximum(tl.max(absmax, axis=0), 1e-8) / 127.0
    tl.store(scale_ptr + row, scale)
    for chunk in tl.static_range(N_CHUNKS):
        cols = chunk * BLOCK + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        q = tl.clamp(libdevice.rint(x / scale), -127.0, 127.0)
        tl.store(q_ptr + row * stride_q + cols, q.to(tl.int8), mask=mask)


@triton.jit
def dequantize_rowwise_kernel(q_ptr, scale_ptr, out_ptr, n_rows, n_cols,
                              BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    q = tl.load(q_ptr + offs, mask=mask, other=0)
    scale = tl.load(scale_ptr + rows, mask=rows < n_rows, other=0.0)
    tl.store(out_ptr + offs, q.to(tl.float32) * scale[:, None], mask=mask)


@triton.jit
def adamw_step_kernel(param_ptr, grad_ptr, exp_avg_ptr, exp_avg_sq_ptr, n, lr, beta1, beta2, eps, weight_decay,
                      bias_correction1, bias_correction2, BLOCK: tl.constexpr):
    # fp32 master weights and moments, updated in place; gradients in any float type.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    param = tl.load(param_ptr + offs, mask=mask)
    grad = tl.load(grad_ptr + offs, mask=mask).to(tl.float32)
    exp_avg = tl.load(exp_avg_ptr + offs, mask=mask)
    exp_avg_sq = tl.load(exp_avg_sq_ptr + offs, mask=mask)

    param = param * (1.0 - lr * weight_decay)
    exp_avg = beta1 * exp_avg + (1.0 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1.0 - beta2) * grad * grad
    denom = tl.sqrt(exp_avg_sq / bias_correction2) + eps
    param = param - (lr / bias_correction1) * exp_avg / denom

    tl.store(param_ptr + offs, param, mask=mask)
    tl.store(exp_avg_ptr + offs, exp_avg, mask=mask)
    tl.store(exp_avg_sq_ptr + offs, exp_avg_sq, mask=mask)
