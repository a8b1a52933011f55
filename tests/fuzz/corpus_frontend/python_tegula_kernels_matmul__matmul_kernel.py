@tegula.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    # Which tile of C this program owns, walking groups of GROUP_M tile-rows
    # column by column.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    group_first_m = group * GROUP_M
    group_rows = min(tiles_m - group_first_m, GROUP_M)
    within = pid % programs_per_group
    tile_m = group_first_m + within % group_rows
    tile_n = within // group_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    # Out-of-range rows/columns read row 0 / column 0 (wrapped by the modulo)
    # instead of needing a mask in the K loop; the store masks them away.
    a_rows = rows % M
    b_cols = cols % N
    a_tile = a_ptr + a_rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + b_cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    in_c = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=in_c)
