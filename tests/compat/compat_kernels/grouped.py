"""Pointer arrays and fp8: a grouped GEMM whose groups' matrices are reached
through tables of addresses (tutorial 08's pattern: `tl.load(ptrs + g)
.to(tl.pointer_type(tl.float16))`), and an fp8 quantize/dequantize pair with a
per-row scale (the pattern of fp8 training kernels)."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds, group_size,
                          NUM_SM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_N)
        num_tiles = num_m_tiles * num_n_tiles
        while tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles:
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_bn = tile_n_idx * BLOCK_N + tl.arange(0, BLOCK_N)
            offs_k = tl.arange(0, BLOCK_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_K)):
                k_mask = offs_k < k - kk * BLOCK_K
                a = tl.load(a_ptrs, mask=(offs_am[:, None] < gm) & k_mask[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_bn[None, :] < gn), other=0.0)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_cn = tile_n_idx * BLOCK_N + tl.arange(0, BLOCK_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c, mask=(offs_cm[:, None] < gm) & (offs_cn[None, :] < gn))
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


@triton.jit
def fp8_quantize_kernel(x_ptr, q_ptr, scale_ptr, n_cols, BLOCK: tl.constexpr, FP8_MAX: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    scale = tl.max(tl.abs(x), axis=0) / FP8_MAX
    scale = tl.where(scale == 0, 1.0, scale)
    tl.store(q_ptr + row * n_cols + cols, (x / scale).to(q_ptr.dtype.element_ty), mask=mask)
    tl.store(scale_ptr + row, scale)


@triton.jit
def fp8_dequantize_kernel(q_ptr, scale_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, q.to(tl.float32) * tl.load(scale_ptr + row), mask=mask)
