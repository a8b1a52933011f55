@tegula.jit
def sort_kernel(x_ptr, out_ptr, idx_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sort(x, descending=True)
    f = tl.flip(s)
    i = tl.load(idx_ptr + offs) % BLOCK
    i = tl.where(i < 0, i + BLOCK, i)
    g = tl.gather(f, i, 0)
    h = tl.histogram(i, BLOCK, mask=offs < 10)
    tl.store(out_ptr + offs, g + x.sort())
    tl.store(idx_ptr + offs, h)
