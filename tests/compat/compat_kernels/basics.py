"""Elementwise kernels and launch features: vector add (tutorial 01), autotune
and heuristics decorators, a libdevice GELU, a persistent grid-stride kernel,
and a kernel over 3-D tiles."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
else:
    import tegula as triton
    import tegula.language as tl
    from tegula.language.extra import libdevice


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, x + y, mask=in_bounds)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 512}, num_warps=4),
    ],
    key=["n"],
)
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, scale, shift, n, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN_N:
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x * scale + shift)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, x * scale + shift, mask=offs < n)


@triton.jit
def gelu_tanh(x):
    # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), the approximation GPT-2 style models use
    SQRT_2_OVER_PI: tl.constexpr = 0.7978845608028654
    inner = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + libdevice.tanh(inner))


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = gelu_tanh(x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def sum_of_squares_persistent_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    # A fixed grid walks all tiles (the squared-norm step of gradient clipping):
    # each program keeps a running tile of partial sums and adds it to the
    # total with one atomic at the end.
    pid = tl.program_id(0)
    num_tiles = tl.cdiv(n, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for tile in range(pid, num_tiles, tl.num_programs(0)):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        acc += x * x
    tl.atomic_add(total_ptr, tl.sum(acc, axis=0))


@triton.jit
def transpose_and_sum_3d_kernel(x_ptr, xt_ptr, sums_ptr, B, M, N, stride_b, stride_m,
                                BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x[B, M, N] (row stride stride_m, batch stride stride_b) -> xt[B, N, M]
    # (contiguous) and sums[b] = x[b].sum(), on [BLOCK_B, BLOCK_M, BLOCK_N] tiles.
    bs = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    ms = tl.arange(0, BLOCK_M)
    ns = tl.arange(0, BLOCK_N)
    b3 = bs[:, None, None]
    mask = (b3 < B) & (ms[None, :, None] < M) & (ns[None, None, :] < N)
    x = tl.load(x_ptr + b3 * stride_b + ms[None, :, None] * stride_m + ns[None, None, :], mask=mask, other=0.0)
    xt = tl.permute(x, (0, 2, 1))
    mask_t = (b3 < B) & (ns[None, :, None] < N) & (ms[None, None, :] < M)
    tl.store(xt_ptr + b3 * (M * N) + ns[None, :, None] * M + ms[None, None, :], xt, mask=mask_t)
    per_batch = tl.sum(tl.sum(x, axis=2), axis=1)
    tl.store(sums_ptr + bs, per_batch, mask=bs < B)
