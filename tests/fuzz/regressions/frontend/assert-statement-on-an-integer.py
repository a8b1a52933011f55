@tegula.jit
def cssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssshecked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 16, "block too small")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x == x, "nan input")
    assert n 