@tegula.jit
def scale_bias_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, M, N,
                      stride_xm, stride_xn, stride_om, stride_on,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < M
    col_mask = cols < N
    mask = row_mask[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    scale = tl.load(scale_ptr + cols, mask=col_mask, other=0.0)
    bias = tl.load(bias_ptr + rows, mask=row_mask, other=0.0)
    y = x * scale[None, :] + bias[:, None]
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on, y, mask=mask)
