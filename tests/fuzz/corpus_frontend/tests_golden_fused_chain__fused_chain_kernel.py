@tegula.jit
def fused_chain_kernel(x_ptr, res_ptr, keep_ptr, bias_ptr, w_ptr, y_ptr, N, stride,
                       alpha, eps, scale, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    base = row * stride
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    keep = tl.load(keep_ptr + base + cols, mask=mask, other=0)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)

    h = x * alpha + bias
    h = 0.5 * h * (1.0 + tl.extra.libdevice.tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))
    h = tl.where(keep != 0, h * scale, 0.0)
    h = h + res
    ms = tl.sum(h * h, axis=0) / N
    r = tl.rsqrt(ms + eps)
    y = h * r * w
    tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
