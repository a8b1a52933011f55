"""tl.dot_scaled with NVFP4 operands: e2m1 values (two per byte) scaled per
16 elements of K by float8e4nv (e4m3) factors, against a NumPy reference."""

import numpy as np

import tegula
import tegula.language as tl

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)


def e2m1_values(nibbles):
    return np.where(nibbles & 8, -1.0, 1.0).astype(np.float32) * E2M1[nibbles & 7]


def e4m3_values(bits):
    """float8e4nv (e4m3fn) bytes as float32: bias 7, no infinities, 0x7f/0xff NaN."""
    bits = bits.astype(np.int32)
    sign = np.where(bits & 0x80, -1.0, 1.0)
    e, m = (bits >> 3) & 15, bits & 7
    value = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
    return (sign * np.where((bits & 0x7F) == 0x7F, np.nan, value)).astype(np.float32)


@tegula.jit
def nvfp4_dot(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    ka, kg = tl.arange(0, K // 2), tl.arange(0, K // 16)
    a = tl.load(a_ptr + rm[:, None] * (K // 2) + ka[None, :])  # [M, K/2] packed along K
    b = tl.load(b_ptr + ka[:, None] * N + rn[None, :])  # [K/2, N] packed along K
    sa = tl.load(sa_ptr + rm[:, None] * (K // 16) + kg[None, :])  # [M, K/16] float8e4nv
    sb = tl.load(sb_ptr + rn[:, None] * (K // 16) + kg[None, :])  # [N, K/16]
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1")
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], c)


def test_nvfp4_scales_multiply_groups_of_sixteen():
    rng = np.random.default_rng(7)
    M, N, K = 32, 16, 64
    a = rng.integers(0, 256, (M, K // 2), dtype=np.uint8)
    b = rng.integers(0, 256, (K // 2, N), dtype=np.uint8)
    # Scales between 2^-3 and 2^3 (no NaN): exponent fields 4..10, any mantissa.
    sa = (rng.integers(4, 11, (M, K // 16)) << 3 | rng.integers(0, 8, (M, K // 16))).astype(np.uint8)
    sb = (rng.integers(4, 11, (N, K // 16)) << 3 | rng.integers(0, 8, (N, K // 16))).astype(np.uint8)
    out = np.zeros((M, N), np.float32)
    nvfp4_dot[(1,)](a, tegula.reinterpret(sa, tl.float8e4nv), b, tegula.reinterpret(sb, tl.float8e4nv), out,
                    M=M, N=N, K=K)
    # Unpack along K: the low nibble is the first element.
    av = np.stack([e2m1_values(a & 15), e2m1_values(a >> 4)], axis=2).reshape(M, K)
    bv = np.stack([e2m1_values(b & 15), e2m1_values(b >> 4)], axis=1).reshape(K, N)
    av *= np.repeat(e4m3_values(sa), 16, axis=1)
    bv *= np.repeat(e4m3_values(sb), 16, axis=1).T
    # The scaled operands are rounded to bf16 before the product, as Triton rounds them.
    def bf16(x):
        bits = x.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)
    want = bf16(av).astype(np.float64) @ bf16(bv).astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
