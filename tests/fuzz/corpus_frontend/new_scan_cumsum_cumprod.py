@tegula.jit
def scan_kernel(x_ptr, out_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    c = tl.cumsum(x, 0)
    p = tl.cumprod(x, axis=0, reverse=True)
    tl.store(out_ptr + offs, c + p, mask=mask)
    i = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(idx_ptr + offs, tl.cumsum(i.to(tl.int8), 0, dtype=tl.int32) + (i > 0).cumsum(0), mask=mask)
