"""Matrix products: a tiled matmul with grouped program ordering for L2
reuse and an autotuned configuration (tutorial 03's pattern, with a fused
activation from a @jit helper), the same with block pointers, and a small
fused attention forward (online softmax, tutorial 06's algorithm without its
hardware-specific parts)."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 4}, num_warps=4, num_stages=2),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    # Programs are numbered so that GROUP_M consecutive rows of C tiles are
    # walked column by column: neighbours share tiles of A and B in cache.
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    first_tile_m = group * GROUP_M
    rows_in_group = min(tiles_m - first_tile_m, GROUP_M)
    tile_m = first_tile_m + ((pid % programs_per_group) % rows_in_group)
    tile_n = (pid % programs_per_group) // rows_in_group
    tl.assume(tile_m >= 0)
    tl.assume(tile_n >= 0)

    # Rows and columns past the edge wrap around (% M, % N): loads stay in
    # bounds without masks and the store below drops them.
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(tl.float16)

    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


@triton.jit
def matmul_block_ptr_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                            stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile_m = tl.program_id(0)
    tile_n = tl.program_id(1)
    a_blocks = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                 offsets=(tile_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_blocks = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                 offsets=(0, tile_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_blocks, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blocks, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_blocks = tl.advance(a_blocks, (0, BLOCK_K))
        b_blocks = tl.advance(b_blocks, (BLOCK_K, 0))
    c_blocks = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                 offsets=(tile_m * BLOCK_M, tile_n * BLOCK_N), block_shape=(BLOCK_M, BLOCK_N),
                                 order=(1, 0))
    tl.store(c_blocks, acc.to(tl.float16), boundary_check=(0, 1))


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, seq_len, stride_head, stride_tok,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    # q, k, v, o: [heads, seq_len, HEAD_DIM]; program (i, h) computes rows
    # i*BLOCK_M... of head h, streaming K and V in blocks of BLOCK_N keys.
    block_m = tl.program_id(0)
    head = tl.program_id(1)
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    keys = tl.arange(0, BLOCK_N)
    base = head * stride_head
    q = tl.load(q_ptr + base + rows[:, None] * stride_tok + dims[None, :], mask=rows[:, None] < seq_len,
                other=0.0)
    row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    if CAUSAL:
        end = tl.minimum((block_m + 1) * BLOCK_M, seq_len)
    else:
        end = seq_len
    for start in range(0, end, BLOCK_N):
        cols = start + keys
        k_t = tl.load(k_ptr + base + cols[None, :] * stride_tok + dims[:, None], mask=cols[None, :] < seq_len,
                      other=0.0)
        scores = tl.dot(q, k_t) * qk_scale
        visible = cols[None, :] < seq_len
        if CAUSAL:
            visible = visible & (cols[None, :] <= rows[:, None])
        scores = tl.where(visible, scores, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        p = tl.math.exp2(scores - new_max[:, None])
        correction = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * correction + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + cols[:, None] * stride_tok + dims[None, :], mask=cols[:, None] < seq_len,
                    other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max
    out = acc / row_sum[:, None]
    tl.store(o_ptr + base + rows[:, None] * stride_tok + dims[None, :], out.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < seq_len)
