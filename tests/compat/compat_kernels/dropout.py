"""Low-memory dropout (tutorial 04): the keep mask is recomputed from a seed
and the element offsets with tl.rand, so it never has to be stored."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def dropout_backward_kernel(dy_ptr, dx_ptr, n, p, seed, BLOCK: tl.constexpr):
    # The same seed and offsets give the same mask as the forward pass.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dy = tl.load(dy_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(dx_ptr + offs, tl.where(keep, dy / (1 - p), 0.0), mask=mask)
