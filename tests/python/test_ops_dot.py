"""tl.dot against a float64 (or exact integer) matrix product: fp32, fp16,
bf16, fp64 and int8 operands, fp32 accumulation, `acc=`, `out_dtype=`,
`input_precision`, non-square shapes from 16 to 128, and a tiled matmul whose
K loop masks a K that is not a multiple of BLOCK_K.

Error bound per element: the textbook bound for a length-K dot product
accumulated in a format with unit roundoff u, `K * u * (|A| @ |B|)` (the
backend may sum in any order), plus the final rounding to the output type.
The CPU backend computes "ieee" precision whatever `input_precision` says;
the CUDA backend runs fp32 dots at the default "tf32" on tensor cores, which
round each operand to 11 significant bits first: `2^-9 * (|A| @ |B|)` more
(tests/python/test_tensor_cores.py covers the tensor-core paths in depth).
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import check, eps, np_dtype, random, rng_for, to_f64


def dot_bound(a64, b64, k, acc_name, out_name=None, tf32=False):
    bound = 2 * k * eps(acc_name) * (np.abs(a64) @ np.abs(b64))
    if tf32:  # operands rounded to tf32 (CUDA's default for fp32 dots)
        bound += 2.0 ** -9 * (np.abs(a64) @ np.abs(b64))
    if out_name and out_name != acc_name:
        bound += eps(out_name) * np.abs(a64 @ b64)
    return bound + 1e-30


def dot_inputs(name, shape_a, shape_b, seed):
    rng = rng_for("dot", name, seed)
    if name == "int8":
        return random(rng, shape_a, name), random(rng, shape_b, name)
    return random(rng, shape_a, name, low=-2, high=2), random(rng, shape_b, name, low=-2, high=2)


@tegula.jit
def dot_block_kernel(a_ptr, b_ptr, c_ptr, out_ptr, acc_out_ptr, ieee_out_ptr, M: tl.constexpr,
                     N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.load(c_ptr + rm * N + rn)
    d = tl.dot(a, b)
    tl.static_assert(d.shape[0] == M and d.shape[1] == N)
    tl.store(out_ptr + rm * N + rn, d)
    tl.store(acc_out_ptr + rm * N + rn, tl.dot(a, b, acc=c))
    tl.store(ieee_out_ptr + rm * N + rn, tl.dot(a, b, input_precision="ieee", allow_tf32=False))


# (32, 128, 32) and (64, 128, 128) are whole 32 x 32 blocks with k a multiple
# of 32: bf16 x bf16 runs on AMX tiles where the CPU has them.
SHAPES = [(16, 32, 64), (64, 16, 128), (128, 64, 16), (32, 128, 32), (64, 128, 128)]


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=lambda v: str(v))
def test_dot_block(backend, name, M, N, K):
    a, b = dot_inputs(name, (M, K), (K, N), (M, N, K))
    c = random(rng_for("dot-acc", name, M), (M, N), "float32")
    out = backend.zeros((M, N), np.float32)
    acc_out = backend.zeros((M, N), np.float32)
    ieee_out = backend.zeros((M, N), np.float32)
    dot_block_kernel[(1,)](*map(backend.array, (a, b, c)), out, acc_out, ieee_out, M=M, N=N, K=K)
    out, acc_out, ieee_out = backend.numpy(out), backend.numpy(acc_out), backend.numpy(ieee_out)
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    bound = dot_bound(a64, b64, K, "float32")
    default = dot_bound(a64, b64, K, "float32", tf32=name == "float32" and backend.is_cuda)
    check(out, want, "float32", atol=default, rtol=0, what=f"{name} dot {M}x{N}x{K}")
    check(acc_out, want + c, "float32", atol=default + eps("float32") * np.abs(c), rtol=0,
          what=f"{name} dot with acc")
    check(ieee_out, want, "float32", atol=bound, rtol=0, what=f"{name} dot, input_precision=ieee")


@tegula.jit
def dot_typed_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                     OUT: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    d = tl.dot(a, b, out_dtype=OUT)
    tl.static_assert(d.dtype == OUT, "out_dtype sets the result type")
    tl.store(out_ptr + rm * N + rn, d)


@pytest.mark.parametrize("name,out_name", [("int8", "int32"), ("float64", "float64"),
                                           ("float16", "float16"), ("bfloat16", "float32"),
                                           ("float16", "float32")])
def test_dot_out_dtype(backend, name, out_name):
    M, N, K = 32, 16, 64
    a, b = dot_inputs(name, (M, K), (K, N), out_name)
    out = backend.zeros((M, N), np_dtype(out_name))
    dot_typed_kernel[(1,)](backend.array(a), backend.array(b), out, M=M, N=N, K=K, OUT=getattr(tl, out_name))
    out = backend.numpy(out)
    if name == "int8":
        check(out, a.astype(np.int32) @ b.astype(np.int32), "int32", what="int8 dot")
        return
    a64, b64 = to_f64(a), to_f64(b)
    check(out, a64 @ b64, out_name, atol=dot_bound(a64, b64, K, out_name, out_name), rtol=0,
          what=f"{name} dot, out_dtype={out_name}")


@tegula.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr, ACC_FORM: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        k_left = K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        if ACC_FORM:
            acc = tl.dot(a, b, acc)
        else:
            acc += tl.dot(a, b)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("name,out_name,acc_form", [("float32", "float32", True),
                                                    ("float16", "float16", False),
                                                    ("bfloat16", "float32", True),
                                                    ("bfloat16", "bfloat16", False)])
def test_matmul_k_loop_with_masked_tail(backend, name, out_name, acc_form):
    M, N, K = 37, 50, 83  # no dimension a multiple of its block
    BM, BN, BK = 32, 64, 32
    a, b = dot_inputs(name, (M, K), (K, N), "matmul")
    c = backend.zeros((M, N), np_dtype(out_name))
    grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
    matmul_kernel[grid](backend.array(a), backend.array(b), c, M, N, K, K, 1, N, 1, N, 1, BM=BM, BN=BN, BK=BK,
                        ACC_FORM=acc_form)
    c = backend.numpy(c)
    a64, b64 = to_f64(a), to_f64(b)
    tf32 = name == "float32" and backend.is_cuda
    check(c, a64 @ b64, out_name, atol=dot_bound(a64, b64, K, "float32", out_name, tf32=tf32), rtol=0,
          what=f"{name} matmul -> {out_name}")


def test_matmul_transposed_operand_through_strides(backend):
    M, N, K = 20, 24, 40
    rng = rng_for("matmul-strides")
    a = random(rng, (M, K), "float32")
    bt = random(rng, (N, K), "float32")  # B given transposed: B[k, n] = bt[n, k]
    c = backend.zeros((M, N), np.float32)
    grid = (tegula.cdiv(M, 16), tegula.cdiv(N, 16))
    matmul_kernel[grid](backend.array(a), backend.array(bt), c, M, N, K, K, 1, 1, K, N, 1, BM=16, BN=16,
                        BK=16, ACC_FORM=True)
    c = backend.numpy(c)
    a64, b64 = to_f64(a), to_f64(bt).T
    check(c, a64 @ b64, "float32", atol=dot_bound(a64, b64, K, "float32", tf32=backend.is_cuda), rtol=0,
          what="A @ B^T")


@tegula.jit
def bad_dot_kernel(a_ptr, b_ptr, out_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))


def test_dot_of_mixed_dtypes_is_rejected(backend):
    a = backend.zeros((16, 16), np.float16)
    b = backend.zeros((16, 16), np.float32)
    with pytest.raises(tegula.CompilationError, match="same dtype"):
        bad_dot_kernel[(1,)](a, b, backend.zeros((16, 16), np.float32))


@tegula.jit
def attention_block_kernel(q_ptr, k_ptr, v_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr,
                           D: tl.constexpr):
    # One block of attention: dot with a transposed operand, a row softmax,
    # and a second dot with the probabilities narrowed to f16.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, tl.trans(k))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], tl.dot(p.to(tl.float16), v))


def test_attention_block(backend):
    M, N, D = 32, 64, 16
    rng = rng_for("attention")
    q, k, v = (random(rng, shape, "float16") for shape in [(M, D), (N, D), (N, D)])
    out = backend.zeros((M, D), np.float32)
    attention_block_kernel[(1,)](*map(backend.array, (q, k, v)), out, M=M, N=N, D=D)
    out = backend.numpy(out)
    s = to_f64(q) @ to_f64(k).T
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want = p @ to_f64(v)
    # p is rounded to f16 (and exp/sum/divide add a few f32 roundings).
    bound = 2 * eps("float16") * (p @ np.abs(to_f64(v))) + 1e-6
    check(out, want, "float32", atol=bound, rtol=0, what="attention block")


# --- Triton's typing of tl.dot: int8 -> int32, batched (3-D and wider) tiles --------


@tegula.jit
def int8_dot_kernel(a_ptr, b_ptr, out_ptr, acc_out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    d = tl.dot(a, b, out_dtype=tl.int8)  # Triton accumulates int8 in int32 whatever out_dtype says
    tl.static_assert(d.dtype == tl.int32)
    tl.store(out_ptr + rm * N + rn, d)
    acc = tl.full((M, N), 1000, tl.int32)
    tl.store(acc_out_ptr + rm * N + rn, tl.dot(a, b, acc))


def test_int8_dot_accumulates_in_int32(backend):
    M, N, K = 16, 32, 64
    a, b = dot_inputs("int8", (M, K), (K, N), "int32-acc")
    out = backend.zeros((M, N), np.int32)
    acc_out = backend.zeros((M, N), np.int32)
    int8_dot_kernel[(1,)](backend.array(a), backend.array(b), out, acc_out, M=M, N=N, K=K)
    want = a.astype(np.int32) @ b.astype(np.int32)
    check(backend.numpy(out), want, "int32", what="int8 dot")
    check(backend.numpy(acc_out), want + 1000, "int32", what="int8 dot into an int32 acc")


@tegula.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, acc_out_ptr, BATCH, ROWS, B: tl.constexpr,
                       M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, OUT: tl.constexpr,
                       PRECISION: tl.constexpr):
    # [B, M, K] x [B, K, N], only the first BATCH x ROWS entries loaded (a masked tail).
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rk_col, mask=(rb < BATCH) & (rm < ROWS), other=0)
    b = tl.load(b_ptr + rb * K * N + rk_row * N + rn, mask=rb < BATCH, other=0)
    c = tl.load(c_ptr + rb * M * N + rm * N + rn)
    d = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.static_assert(d.shape == [B, M, N])
    tl.store(out_ptr + rb * M * N + rm * N + rn, d)
    tl.store(acc_out_ptr + rb * M * N + rm * N + rn, tl.dot(a, b, c.to(d.dtype), input_precision=PRECISION))


@pytest.mark.parametrize("name,out_name,B,precision", [
    ("float32", "float32", 2, "ieee"), ("float32", "float32", 4, "tf32"), ("float32", "float32", 1, "bf16x3"),
    ("float32", "float32", 2, "TF32x3"), ("float16", "float16", 4, "ieee"), ("bfloat16", "float32", 2, "ieee"),
    ("int8", "int32", 8, "ieee")])
def test_batched_dot(backend, name, out_name, B, precision):
    M, N, K = 16, 32, 16
    batch, rows = max(B - 1, 1), 13
    a, b = dot_inputs(name, (B, M, K), (B, K, N), ("batched", B))
    a[batch:] = 0
    a[:, rows:] = 0
    b[batch:] = 0
    c = random(rng_for("batched-acc", B), (B, M, N), "int8" if name == "int8" else "float16").astype(np_dtype(out_name))
    out = backend.zeros((B, M, N), np_dtype(out_name))
    acc_out = backend.zeros((B, M, N), np_dtype(out_name))
    batched_dot_kernel[(1,)](*map(backend.array, (a, b, c)), out, acc_out, batch, rows, B=B, M=M, N=N, K=K,
                             OUT=getattr(tl, out_name), PRECISION=precision)
    out, acc_out = backend.numpy(out), backend.numpy(acc_out)
    if name == "int8":
        want = a.astype(np.int32) @ b.astype(np.int32)
        check(out, want, "int32", what="batched int8 dot")
        check(acc_out, want + c, "int32", what="batched int8 dot with acc")
        return
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    tf32 = name == "float32" and backend.is_cuda and precision == "tf32"
    bound = np.stack([dot_bound(a64[i], b64[i], K, "float32", out_name, tf32=tf32) for i in range(B)])
    check(out, want, out_name, atol=bound, rtol=0, what=f"batched {name} dot, B={B}")
    check(acc_out, want + to_f64(c), out_name, atol=bound + eps(out_name) * np.abs(to_f64(c)), rtol=0,
          what=f"batched {name} dot with acc")


@tegula.jit
def batch4d_dot_kernel(a_ptr, b_ptr, out_ptr, P: tl.constexpr, Q: tl.constexpr, M: tl.constexpr,
                       N: tl.constexpr, K: tl.constexpr):
    # Two batch dims, as Triton allows: [P, Q, M, K] x [P, Q, K, N].
    a = tl.load(a_ptr + tl.arange(0, P * Q * M * K)).reshape(P, Q, M, K)
    b = tl.load(b_ptr + tl.arange(0, P * Q * K * N)).reshape(P, Q, K, N)
    d = tl.dot(a, b)
    tl.static_assert(d.shape == [P, Q, M, N])
    tl.store(out_ptr + tl.arange(0, P * Q * M * N), d.reshape(P * Q * M * N))


def test_dot_with_two_batch_dims(backend):
    P, Q, M, N, K = 2, 2, 16, 16, 16
    a, b = dot_inputs("float16", (P, Q, M, K), (P, Q, K, N), "4d")
    out = backend.zeros(P * Q * M * N, np.float32)
    batch4d_dot_kernel[(1,)](backend.array(a.reshape(-1)), backend.array(b.reshape(-1)), out, P=P, Q=Q, M=M, N=N, K=K)
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    bound = 2 * K * eps("float32") * (np.abs(a64) @ np.abs(b64)) + 1e-30
    check(backend.numpy(out).reshape(P, Q, M, N), want, "float32", atol=bound, rtol=0, what="4-d dot")


@tegula.jit
def bad_acc_dot_kernel(a_ptr, out_ptr, WHICH: tl.constexpr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    if WHICH == "bf16":
        d = tl.dot(a, a, out_dtype=tl.bfloat16)
    elif WHICH == "acc":
        d = tl.dot(a, a, tl.zeros((16, 16), tl.float16))
    else:
        d = tl.dot(a[None, :, :], a)
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], d)


@pytest.mark.parametrize("which,message", [("bf16", "does not accumulate in bf16"),
                                           ("acc", "acc of tl.dot must be tile<16x16xf32>"),
                                           ("rank", "one rank")])
def test_dot_typing_errors(backend, which, message):
    a = backend.zeros((16, 16), np.float32)
    with pytest.raises(tegula.CompilationError, match=message):
        bad_acc_dot_kernel[(1,)](a, backend.zeros((16, 16), np.float32), WHICH=which)


@pytest.mark.parametrize("name,out_name,precision", [("float16", "float32", "ieee"), ("float32", "float32", "tf32"),
                                                     ("float32", "float32", "bf16x3"), ("int8", "int32", "ieee")])
def test_emulated_cuda_batched_dot(name, out_name, precision):
    # The CUDA backend's code for a batched dot (a tensor-core dot per batch
    # entry), run on the host (tests/python/cuda_emulator.py). Small integer
    # data: every product and sum is exact in each format, tf32 included.
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    B, M, N, K = 2, 16, 32, 16
    rng = rng_for("emulated-batched", name, precision)
    a = random(rng, (B, M, K), name, low=-4, high=4).round().astype(np_dtype(name))
    b = random(rng, (B, K, N), name, low=-4, high=4).round().astype(np_dtype(name))
    c = random(rng, (B, M, N), "int8", low=-4, high=4).astype(np_dtype(out_name))
    out, acc_out = np.zeros((B, M, N), np_dtype(out_name)), np.zeros((B, M, N), np_dtype(out_name))
    emulate(batched_dot_kernel, (1,), a, b, c, out, acc_out, B, 13, B=B, M=M, N=N, K=K, OUT=getattr(tl, out_name),
            PRECISION=precision)
    a[:, 13:] = 0
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert (out == want).all() and (acc_out == want + c).all()
