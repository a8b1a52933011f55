"""Layer norm forward kernels written four more ways, for tools/layer_norm_variants.py
(the fourth, "ln_base", is the benchmark's own, examples/layer_norm.py).

Kept in a module of their own with only Tegula's two import lines, so that
the benchmark's Triton twin (benchmarks/tegula_bench/triton_twin.py) can
compile the very same text with Triton.
"""

import tegula
import tegula.language as tl


@tegula.jit
def ln_early_wb(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, x_row_stride, y_row_stride, eps,
                BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0)
    b = tl.load(b_ptr + cols, mask=in_row, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(in_row, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    y = centred * rstd * w.to(tl.float32) + b.to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@tegula.jit
def ln_evict(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, x_row_stride, y_row_stride, eps,
             BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(in_row, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0, eviction_policy="evict_last").to(tl.float32)
    b = tl.load(b_ptr + cols, mask=in_row, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@tegula.jit
def ln_sumsq(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, x_row_stride, y_row_stride, eps,
             BLOCK_N: tl.constexpr):
    # One-pass statistics (sum and sum of squares): one reduction round fewer,
    # numerically weaker; measured only to see what the second round costs.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    var = tl.sum(x * x, axis=0) / N - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@tegula.jit
def ln_ieee(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, x_row_stride, y_row_stride, eps,
            BLOCK_N: tl.constexpr):
    # The base kernel with its divisions and square root asked for as IEEE
    # operations by name (div_rn, sqrt_rn): both compilers then round exactly.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    mean = tl.math.div_rn(tl.sum(x, axis=0), N.to(tl.float32))
    centred = tl.where(in_row, x - mean, 0.0)
    var = tl.math.div_rn(tl.sum(centred * centred, axis=0), N.to(tl.float32))
    rstd = tl.math.div_rn(1.0, tl.sqrt_rn(var + eps))
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
