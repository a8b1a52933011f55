@tegula.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    offsets = start + tl.arange(0, BLOCK)
    in_bounds = offsets < n
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, x + y, mask=in_bounds)
