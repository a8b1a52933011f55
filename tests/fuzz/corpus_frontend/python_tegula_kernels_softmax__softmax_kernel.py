@tegula.jit
def softmax_kernel(x_ptr, y_ptr, N, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=-float("inf"))
    x = x.to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
