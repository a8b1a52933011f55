"""Random numbers: tl.philox, philox_impl, randint, randint4x, rand, rand4x,
randn, randn4x, uint_to_uniform_float and pair_uniform_to_normal.

The integer outputs and the uniform floats are compared bit for bit with a
NumPy implementation of Philox-4x32-10 / 4x64-10 written here, keyed the way
Triton keys it (seed widened to 64 bits and split into the key; randint's
counter (low half of the offset, high half, 0, 0), so 64-bit offsets give
32-bit words as in Triton since May 2025). The reference itself is pinned by the Random123
known-answer vectors. Since the same reference checks every backend, a pass
on the CPU and on the GPU means the two backends produce identical bits.
randn goes through log/sqrt/cos, which differ between math libraries by an
ulp, so it is compared within a small tolerance; its moments are checked too.
"""

import inspect
import os

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import rng_for

# --- the reference -------------------------------------------------------------------

_WIDTHS = {  # round multipliers A (c0), B (c2), key increments KA, KB
    32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
    64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B),
}


def philox_impl_ref(counter, k0, k1, rounds=10, bits=32):
    """Philox-4xW on counters (arrays of Python ints) and keys, as unsigned words."""
    a, b, ka, kb = _WIDTHS[bits]
    mask = (1 << bits) - 1
    # Python ints (tolist) so the products never overflow.
    c0, c1, c2, c3 = [np.array(np.asarray(c).tolist(), dtype=object) & mask for c in counter]
    k0, k1 = int(k0) & mask, int(k1) & mask
    for _ in range(rounds):
        pb, pa = c2 * b, c0 * a
        c0, c1, c2, c3 = (pb >> bits) ^ c1 ^ k0, pb & mask, (pa >> bits) ^ c3 ^ k1, pa & mask
        k0, k1 = (k0 + ka) & mask, (k1 + kb) & mask
    dtype = np.uint32 if bits == 32 else np.uint64
    return [np.array(list(c), dtype=dtype) if c.ndim else dtype(int(c)) for c in (c0, c1, c2, c3)]


def key_of_seed(seed, bits=32):
    """Triton's keying: the seed as 64 bits; 32-bit words split it, 64-bit words use it whole."""
    seed64 = int(seed) & (2**64 - 1)
    return (seed64 & 0xFFFFFFFF, seed64 >> 32) if bits == 32 else (seed64, 0)


def randint4x_ref(seed, offsets, rounds=10):
    """Philox-4x32 on the counter (low half of the offset's 64-bit pattern, its high half, 0, 0): a 32-bit offset
    (passed as its unsigned value) has a high half of 0."""
    patterns = np.array([int(o) & (2**64 - 1) for o in np.asarray(offsets).ravel().tolist()], dtype=object)
    patterns = patterns.reshape(np.shape(offsets))
    zero = patterns * 0
    return philox_impl_ref([patterns & 0xFFFFFFFF, patterns >> 32, zero, zero], *key_of_seed(seed), rounds, 32)


def uniform_ref(words):
    """uint_to_uniform_float: ~x for negative x (as signed), one conversion, one product."""
    words = np.asarray(words)
    signed = words.view(np.int32 if words.dtype.itemsize == 4 else np.int64)
    magnitude = np.where(signed < 0, ~signed, signed)
    scale = np.float32(4.6566127342e-10 if words.dtype.itemsize == 4 else 1.0842020432385337e-19)
    return magnitude.astype(np.float32) * scale


def normal_ref(u1, u2):
    """Box-Muller as Triton writes it, in f32 up to the transcendental functions (f64 here)."""
    u1 = np.maximum(np.float32(1e-7), u1)
    theta = (np.float32(6.283185307179586) * u2).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1.astype(np.float64)))
    return r * np.cos(theta), r * np.sin(theta)


def same_bits(actual, expected, what=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype.itemsize == expected.dtype.itemsize, what
    a = actual.view(f"u{actual.dtype.itemsize}")
    e = expected.view(f"u{expected.dtype.itemsize}")
    bad = np.flatnonzero(a != e)
    assert bad.size == 0, f"{what}: {bad.size} of {a.size} differ, first at {bad[:5]}: {a[bad[:5]]} != {e[bad[:5]]}"


# Random123's known-answer vectors: counter words, key words, output words.
KAT32 = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]
KAT64 = [
    ([0] * 4, [0, 0], [0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B]),
    ([2**64 - 1] * 4, [2**64 - 1] * 2,
     [0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6, 0xA09CAEBF594F0BA0]),
    ([0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89],
     [0x452821E638D01377, 0xBE5466CF34E90C6C],
     [0xA528F45403E61D95, 0x38C72DBD566E9788, 0xA5A1610E72FD18B5, 0x57BD43B5E52B7FE6]),
]


@pytest.mark.parametrize("bits", [32, 64])
def test_reference_reproduces_random123_known_answers(bits):
    for counter, key, expected in KAT32 if bits == 32 else KAT64:
        got = philox_impl_ref([[c] for c in counter], key[0], key[1], bits=bits)
        assert [int(w[0]) for w in got] == expected


# --- philox_impl and philox ------------------------------------------------------------


@tegula.jit
def philox_impl_kernel(c_ptr, k_ptr, out_ptr, ROUNDS: tl.constexpr, B: tl.constexpr):
    i = tl.arange(0, B)
    c0 = tl.load(c_ptr + i)
    c1 = tl.load(c_ptr + B + i)
    c2 = tl.load(c_ptr + 2 * B + i)
    c3 = tl.load(c_ptr + 3 * B + i)
    k0 = tl.load(k_ptr + i)
    k1 = tl.load(k_ptr + B + i)
    r0, r1, r2, r3 = tl.philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=ROUNDS)
    tl.static_assert(r0.dtype == c0.dtype, "words keep the counters' unsigned type")
    tl.store(out_ptr + i, r0)
    tl.store(out_ptr + B + i, r1)
    tl.store(out_ptr + 2 * B + i, r2)
    tl.store(out_ptr + 3 * B + i, r3)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("rounds", [10, 7])
def test_philox_impl_known_answers_and_random_counters(backend, bits, rounds):
    dtype = np.uint32 if bits == 32 else np.uint64
    B = 8
    kats = KAT32 if bits == 32 else KAT64
    rng = rng_for("philox_impl", bits)
    counters = rng.integers(0, 2**bits, size=(4, B), dtype=dtype, endpoint=False)
    keys = rng.integers(0, 2**bits, size=(2, B), dtype=dtype, endpoint=False)
    for j, (counter, key, _) in enumerate(kats):
        counters[:, j] = counter
        keys[:, j] = key
    out = backend.zeros((4, B), dtype)
    philox_impl_kernel[(1,)](backend.array(counters), backend.array(keys), out, ROUNDS=rounds, B=B)
    out = backend.numpy(out)
    for col in range(B):
        ref = philox_impl_ref([[int(counters[w, col])] for w in range(4)], keys[0, col], keys[1, col], rounds, bits)
        assert [int(out[w, col]) for w in range(4)] == [int(r[0]) for r in ref], col
        if rounds == 10 and col < len(kats):
            assert [int(out[w, col]) for w in range(4)] == kats[col][2]


@tegula.jit
def philox_seed_kernel(out_ptr, seed, B: tl.constexpr):
    i = tl.arange(0, B)
    r = tl.philox(seed, i, 7, i * 3, 0)  # constants and tiles mix as counters
    for w in tl.static_range(4):
        tl.store(out_ptr + w * B + i, r[w])


def test_philox_keys_from_the_seed(backend):
    B = 16
    i = np.arange(B)
    for seed in (0, 99, -5, 2**40 + 17):
        out = backend.zeros((4, B), np.uint32)
        philox_seed_kernel[(1,)](out, seed, B=B)
        s = seed & (2**64 - 1)
        ref = philox_impl_ref([list(i), [7] * B, list(i * 3), [0] * B], s & 0xFFFFFFFF, s >> 32)
        for w in range(4):
            same_bits(backend.numpy(out)[w], ref[w], f"seed {seed} word {w}")


# --- randint, randint4x ---------------------------------------------------------------


@tegula.jit
def randint4x_kernel(out_ptr, seed, base, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r0, r1, r2, r3 = tl.randint4x(seed, offs + base)
    tl.static_assert(r0.dtype == tl.uint32, "32-bit offsets give uint32 words")
    tl.store(out_ptr + offs, r0, mask=m)
    tl.store(out_ptr + n + offs, r1, mask=m)
    tl.store(out_ptr + 2 * n + offs, r2, mask=m)
    tl.store(out_ptr + 3 * n + offs, r3, mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.randint(seed, offs + base), mask=m)


@pytest.mark.parametrize("seed", [0, 1234, -7, 2**35 + 3, 2**31 + 1])
def test_randint4x_bits(backend, seed):
    n, block = 1000, 128  # a masked tail
    base = -300  # negative offsets are their bit patterns
    out = backend.zeros((5, n), np.uint32)
    randint4x_kernel[(tegula.cdiv(n, block),)](out, seed, base, n, BLOCK=block)
    out = backend.numpy(out)
    offsets = np.arange(n, dtype=np.int64) + base
    ref = randint4x_ref(seed, offsets.astype(np.int32).view(np.uint32).astype(np.int64))
    for w in range(4):
        same_bits(out[w], ref[w], f"word {w}")
    same_bits(out[4], ref[0], "randint is the first word")


@tegula.jit
def randint4x_64_kernel(out_ptr, seed, base, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r0, r1, r2, r3 = tl.randint4x(seed, offs.to(tl.int64) + base)
    tl.static_assert(r0.dtype == tl.uint32, "64-bit offsets run Philox-4x32 on their two halves")
    tl.store(out_ptr + offs, r0, mask=m)
    tl.store(out_ptr + n + offs, r1, mask=m)
    tl.store(out_ptr + 2 * n + offs, r2, mask=m)
    tl.store(out_ptr + 3 * n + offs, r3, mask=m)


@pytest.mark.parametrize("seed,base", [(5, 2**40 - 150), (-1, 2**32 - 150), (2**50 + 11, -150)])
def test_randint4x_64_bit_offsets(backend, seed, base):
    # Offsets crossing 2^32 (the high word starts counting), 2^40 and zero (negative offsets: all-ones high words).
    n = 300
    out = backend.zeros((4, n), np.uint32)
    randint4x_64_kernel[(tegula.cdiv(n, 64),)](out, seed, base, n, BLOCK=64)
    ref = randint4x_ref(seed, np.arange(n, dtype=np.int64) + base)
    for w in range(4):
        same_bits(backend.numpy(out)[w], ref[w], f"word {w}")


@tegula.jit
def randint_rounds_kernel(out_ptr, seed, ROUNDS: tl.constexpr, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.randint(seed, i, n_rounds=ROUNDS))


@pytest.mark.parametrize("rounds", [0, 1, 7, 12])
def test_randint_n_rounds(backend, rounds):
    out = backend.zeros(32, np.uint32)
    randint_rounds_kernel[(1,)](out, 42, ROUNDS=rounds, B=32)
    same_bits(backend.numpy(out), randint4x_ref(42, np.arange(32), rounds)[0])


@tegula.jit
def constexpr_seed_kernel(out_ptr, SEED: tl.constexpr, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.randint(SEED, i + 3))
    tl.store(out_ptr + B + i, tl.randint(SEED, 3))  # a scalar offset


def test_constant_seed_folds_to_the_same_bits(backend):
    B = 32
    out = backend.zeros((2, B), np.uint32)
    constexpr_seed_kernel[(1,)](out, SEED=-123456789, B=B)
    out = backend.numpy(out)
    same_bits(out[0], randint4x_ref(-123456789, np.arange(B) + 3)[0])
    assert (out[1] == randint4x_ref(-123456789, [3])[0][0]).all()


# --- rand, rand4x, uint_to_uniform_float ------------------------------------------------


@tegula.jit
def rand_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = tl.rand(seed, offs)
    tl.static_assert(r.dtype == tl.float32)
    tl.store(out_ptr + offs, r, mask=m)
    u0, u1, u2, u3 = tl.rand4x(seed, offs)
    tl.store(out_ptr + n + offs, u0, mask=m)
    tl.store(out_ptr + 2 * n + offs, u1, mask=m)
    tl.store(out_ptr + 3 * n + offs, u2, mask=m)
    tl.store(out_ptr + 4 * n + offs, u3, mask=m)


@pytest.mark.parametrize("seed", [7, -99])
def test_rand_and_rand4x_bits(backend, seed):
    n = 777
    out = backend.zeros((5, n), np.float32)
    rand_kernel[(tegula.cdiv(n, 256),)](out, seed, n, BLOCK=256)
    out = backend.numpy(out)
    words = randint4x_ref(seed, np.arange(n))
    same_bits(out[0], uniform_ref(words[0]), "rand")
    for w in range(4):
        same_bits(out[1 + w], uniform_ref(words[w]), f"rand4x {w}")
    assert (out >= 0).all() and (out < 1).all()


@tegula.jit
def rand64_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs.to(tl.int64) * 1000003), mask=offs < n)


def test_rand_with_64_bit_offsets(backend):
    n = 200
    out = backend.zeros(n, np.float32)
    rand64_kernel[(tegula.cdiv(n, 64),)](out, 3, n, BLOCK=64)
    same_bits(backend.numpy(out), uniform_ref(randint4x_ref(3, np.arange(n) * 1000003)[0]))


@tegula.jit
def uniform_kernel(x_ptr, y_ptr, out_ptr, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.uint_to_uniform_float(tl.load(x_ptr + i)))
    tl.store(out_ptr + B + i, tl.uint_to_uniform_float(tl.load(y_ptr + i)))


def test_uint_to_uniform_float_edges(backend):
    B = 8
    x = np.array([0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**31 + 1, 12345, 2**24 + 1], dtype=np.uint32)
    y = np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**62, 12345, 2**53 + 1], dtype=np.uint64)
    out = backend.zeros((2, B), np.float32)
    uniform_kernel[(1,)](backend.array(x), backend.array(y), out, B=B)
    out = backend.numpy(out)
    same_bits(out[0], uniform_ref(x), "32-bit")
    same_bits(out[1], uniform_ref(y), "64-bit")
    assert (out < 1).all() and (out >= 0).all() and out[0, 2] > 0.99999


# --- randn, randn4x, pair_uniform_to_normal ----------------------------------------------


@tegula.jit
def randn_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.randn(seed, offs), mask=m)
    n0, n1, n2, n3 = tl.randn4x(seed, offs)
    tl.store(out_ptr + n + offs, n0, mask=m)
    tl.store(out_ptr + 2 * n + offs, n1, mask=m)
    tl.store(out_ptr + 3 * n + offs, n2, mask=m)
    tl.store(out_ptr + 4 * n + offs, n3, mask=m)


def test_randn_and_randn4x(backend):
    n = 1000
    out = backend.zeros((5, n), np.float32)
    randn_kernel[(tegula.cdiv(n, 512),)](out, 2024, n, BLOCK=512)
    out = backend.numpy(out).astype(np.float64)
    u = [uniform_ref(w) for w in randint4x_ref(2024, np.arange(n))]
    first, _ = normal_ref(u[0], u[1])
    n0, n1 = normal_ref(u[0], u[1])
    n2, n3 = normal_ref(u[2], u[3])
    for k, ref in enumerate([first, n0, n1, n2, n3]):
        np.testing.assert_allclose(out[k], ref, rtol=2e-5, atol=2e-5, err_msg=f"output {k}")


@tegula.jit
def pair_kernel(u_ptr, v_ptr, out_ptr, B: tl.constexpr):
    i = tl.arange(0, B)
    a, b = tl.pair_uniform_to_normal(tl.load(u_ptr + i), tl.load(v_ptr + i))
    tl.store(out_ptr + i, a)
    tl.store(out_ptr + B + i, b)


def test_pair_uniform_to_normal_clamps_zero(backend):
    B = 8
    u = np.array([0.0, 1e-9, 1e-7, 0.25, 0.5, 0.75, 0.999, 0.9999999], dtype=np.float32)
    v = np.array([0.0, 0.1, 0.2, 0.25, 0.5, 0.6, 0.9, 0.99], dtype=np.float32)
    out = backend.zeros((2, B), np.float32)
    pair_kernel[(1,)](backend.array(u), backend.array(v), out, B=B)
    out = backend.numpy(out)
    a, b = normal_ref(u, v)
    np.testing.assert_allclose(out[0], a, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(out[1], b, rtol=2e-5, atol=2e-5)
    assert np.isfinite(out).all()  # u = 0 is clamped to 1e-7, not log(0)


# --- statistics and determinism ----------------------------------------------------------


@tegula.jit
def stats_kernel(u_ptr, z_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(u_ptr + offs, tl.rand(seed, offs), mask=m)
    tl.store(z_ptr + offs, tl.randn(seed, offs), mask=m)


def draw(backend, seed, n, block):
    u, z = backend.zeros(n, np.float32), backend.zeros(n, np.float32)
    stats_kernel[(tegula.cdiv(n, block),)](u, z, seed, n, BLOCK=block)
    return backend.numpy(u), backend.numpy(z)


def test_moments_seeds_and_determinism(backend):
    n = 1 << 16
    u, z = draw(backend, 17, n, 1024)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    # Each tenth of [0, 1) gets its share.
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert (abs(counts - n / 10) < 0.05 * n / 10).all(), counts
    # The same seed and offsets give the same numbers, whatever the block size.
    u2, z2 = draw(backend, 17, n, 256)
    same_bits(u2, u, "rand, other block size")
    same_bits(z2, z, "randn, other block size")
    # Another seed gives other numbers.
    u3, _ = draw(backend, 18, n, 1024)
    assert (u3 == u).mean() < 0.001


# --- errors ---------------------------------------------------------------------------------


def _where(fn, needle):
    lines, first = inspect.getsourcelines(fn.fn)
    for i, text in enumerate(lines):
        col = text.find(needle)
        if col >= 0 and not text.lstrip().startswith(("@", "def ")):
            return first + i, col + 1
    raise AssertionError(needle)


def _error(kernel, needle, text, *args, **kwargs):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    message = str(info.value)
    line, col = _where(kernel, needle)
    assert f"{os.path.basename(__file__)}:{line}:{col}: error[E" in message.splitlines()[0], message
    assert text in message, message


@tegula.jit
def float_offsets_kernel(out_ptr, seed, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.rand(seed, i.to(tl.float32)))


@tegula.jit
def short_offsets_kernel(out_ptr, seed, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.randint(seed, i.to(tl.int16)))


@tegula.jit
def float_seed_kernel(out_ptr, seed, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.rand(seed, i))


@tegula.jit
def many_rounds_kernel(out_ptr, seed, B: tl.constexpr):
    i = tl.arange(0, B)
    tl.store(out_ptr + i, tl.randint(seed, i, n_rounds=100))


def test_errors_are_located(backend):
    out = backend.zeros(16, np.float32)
    _error(float_offsets_kernel, "i.to(tl.float32)", "the counters of tl.rand must be integers", out, 1, B=16)
    _error(short_offsets_kernel, "i.to(tl.int16)", "tl.randint needs 32- or 64-bit counters, but one is int16",
           out, 1, B=16)
    _error(float_seed_kernel, "seed, i", "the seed of tl.rand must be an integer", out, 1.5, B=16)
    _error(many_rounds_kernel, "n_rounds=100", "n_rounds of tl.randint must be between 0 and 64, got 100",
           out, 1, B=16)


# --- the CUDA backend, without a GPU -----------------------------------------------------


def test_cuda_compiles_random_kernels_for_sm80_and_sm90(tmp_path):
    from cuda_compile_util import compile_for_cuda

    for arch in (80, 90):
        compile_for_cuda(randint4x_kernel, "*u32:16, i32, i32, i32, 128", arch, tmp_path)
        compile_for_cuda(randint4x_64_kernel, "*u64:16, i64, i64, i32, 64", arch, tmp_path)
        compile_for_cuda(randn_kernel, "*fp32:16, i32, i32, 256", arch, tmp_path)


@tegula.jit
def random_module_kernel(x_ptr, out_ptr, seed, n, BLOCK: tl.constexpr):
    # Triton's tl.random module: the same functions under the submodule's name.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.random.uint_to_uniform_float(x), mask=offs < n)
    tl.store(out_ptr + BLOCK + offs, tl.random.rand(seed, offs), mask=offs < n)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_the_random_module_and_the_limits_of_uniform_floats(backend, dtype):
    # The smallest and largest integer map to the same float, the largest below 1 (Triton's test_rand_limits).
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, -1, 0, 12345], dtype=dtype)
    out = backend.zeros((2, 8), np.float32)
    random_module_kernel[(1,)](backend.array(x), out, 7, 5, BLOCK=8)
    got = backend.numpy(out)
    same_bits(got[0, :5], uniform_ref(x))
    assert got[0, 0] == got[0, 1] and 1.0 - np.finfo(np.float32).eps <= got[0, 0] < 1.0
    same_bits(got[1, :5], uniform_ref(randint4x_ref(7, np.arange(5))[0]))
