@tegula.jit
def checked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 16, "block too small")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x == x, "nan input")
    assert n > 0, "empty"
    tl.static_print("BLOCK", BLOCK)
    if tl.program_id(0) == 0:
        tl.device_print("x", x)
    tl.store(out_ptr + offs, x, mask=offs < n)
