@tegula.jit
def dropout_kernel(x_ptr, out_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.rand(seed, offs)
    keep = r > 0.5
    tl.store(out_ptr + offs, tl.where(keep, x / 0.5, 0.0), mask=mask)
    a, b, c, d = tl.randint4x(seed, offs, n_rounds=7)
    z = tl.randn(seed, offs + 1)
    u1, u2, u3, u4 = tl.rand4x(seed, offs)
    tl.store(out_ptr + n + offs, z + (a ^ b).to(tl.float32) + u4 + tl.randint(seed, offs).to(tl.float32), mask=mask)
