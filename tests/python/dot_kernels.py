"""The tile-level dot kernels that tests/python/test_tensor_cores.py checks
everywhere (CPU, emulated sm_80/sm_90 code, a GPU) and tools/dot_selftest.py
runs on the GPU machine: one source for both, so the self-test measures the
kernels the tests pin."""

import tegula
import tegula.language as tl


@tegula.jit
def dot_tile_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                    PRECISION: tl.constexpr, B_TRANSPOSED: tl.constexpr):
    # out = a @ b + c for one tile; b is given as [K, N], or as [N, K] and
    # transposed in the kernel (its registers then run along K).
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    if B_TRANSPOSED:
        b = tl.trans(tl.load(b_ptr + rn[:, None] * K + rk[None, :]))
    else:
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    d = tl.dot(a, b, c, input_precision=PRECISION)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], d)


@tegula.jit
def dot_epilogue_kernel(a_ptr, b_ptr, bias_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # relu(a @ b + bias) narrowed to out's dtype, all on the accumulator.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.dot(a, b)
    acc = acc + tl.load(bias_ptr + rn)[None, :]
    acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc.to(out_ptr.dtype.element_ty))


@tegula.jit
def matmul_loop_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr, ACC: tl.constexpr):
    # A K loop whose last step is masked, rows and columns masked too.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        k_left = K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))
