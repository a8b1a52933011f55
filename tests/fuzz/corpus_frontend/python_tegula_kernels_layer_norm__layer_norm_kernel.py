@tegula.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, x_row_stride,
                      y_row_stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(in_row, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
