@tegula.jit
def hinted_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    tl.assume(stride % 16 == 0)
    tl.assume(n > 0)
    pid = tl.program_id(0)
    offs = tl.max_contiguous(tl.multiple_of(pid * BLOCK + tl.arange(0, BLOCK), BLOCK), BLOCK)
    base = tl.multiple_of(x_ptr + pid * stride, 16)
    x = tl.load(base + tl.arange(0, BLOCK), mask=offs < n)
    x = tl.max_constancy(x, 1)
    tl.debug_barrier()
    tl.store(out_ptr + offs, x, mask=offs < n)
