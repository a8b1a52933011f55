@tegula.jit
def histogram_kernel(x_ptr, hist_ptr, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bins = tl.minimum(tl.maximum((x * NBINS).to(tl.int32), 0), NBINS - 1)
    old = tl.atomic_add(hist_ptr + bins, 1, mask=mask)
    tl.atomic_or(hist_ptr + NBINS + bins, old & 1, mask=mask, sem="relaxed", scope="cta")
