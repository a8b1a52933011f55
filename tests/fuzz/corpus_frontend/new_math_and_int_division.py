@tegula.jit
def math_kernel(x_ptr, out_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.atan2(x, 1.0 + tl.abs(x)) + tl.math.hypot(x, 2.0) + tl.math.log1p(tl.abs(x)) + tl.math.fmod(x, 3.0)
    y = y + tl.math.pow(tl.abs(x), 1.5) + tl.math.cbrt(x) + tl.math.copysign(1.0, x) + tl.math.erfc(x)
    i = tl.load(idx_ptr + offs, mask=mask, other=1)
    q = i // 3 + i % 7 + tl.umulhi(i, i) + tl.cdiv(i, 4) + i.to(tl.uint32) // 5
    y = tl.where(tl.math.isnan(y) | tl.math.isinf(y), 0.0, y) + tl.math.signbit(x)
    tl.store(out_ptr + offs, y + q.to(tl.float32) + tl.clamp(x, -1.0, 1.0) + tl.fma(x, x, x), mask=mask)
