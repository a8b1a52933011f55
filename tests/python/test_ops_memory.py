"""Loads and stores: masks and `other` over every dtype and over sizes with
masked tails, scalar loads and stores, pointer arithmetic, 2-D and 3-D
pointer tiles with strides, broadcasting of masks and values, conversion on
store, and the guarantee that masked-off lanes touch no memory.
"""

import re
import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import ALL, check, grid1, random, rng_for, run_isolated


@tegula.jit
def masked_copy_kernel(x_ptr, padded_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    tl.store(padded_ptr + offs, x)  # every lane: the tail shows `other`
    tl.store(out_ptr + offs, x, mask=m)  # masked: the tail keeps its sentinel


def run_masked_copy(backend, name, n, block):
    rng = rng_for("copy", name, n, block)
    x = random(rng, n, name)
    programs = grid1(n, block)[0]
    padded = backend.zeros(programs * block, x.dtype)
    sentinel = random(rng, n + block, name)
    out = backend.array(sentinel)
    masked_copy_kernel[(programs,)](backend.array(x), padded, out, n, BLOCK=block)
    padded, out = backend.numpy(padded), backend.numpy(out)
    check(padded[:n], x, name, ulps=0, atol=0, what=f"{name} loaded values")
    check(padded[n:], np.ones(padded.size - n, dtype=x.dtype), name, ulps=0, atol=0,
          what=f"{name} `other` in masked lanes")
    check(out[:n], x, name, ulps=0, atol=0, what=f"{name} stored values")
    check(out[n:], sentinel[n:], name, ulps=0, atol=0, what=f"{name} memory past n")


@pytest.mark.parametrize("name", ALL)
def test_masked_load_store_every_dtype(backend, name):
    run_masked_copy(backend, name, 1000, 128)


@pytest.mark.parametrize("n", [1, 37, 1000])
@pytest.mark.parametrize("block", [64, 128, 1024])
def test_masked_load_store_sizes(backend, n, block):
    run_masked_copy(backend, "float32", n, block)


@pytest.mark.parametrize("name", ["int8", "float16"])
@pytest.mark.parametrize("n,block", [(1, 64), (37, 64), (1000, 1024)])
def test_masked_load_store_sizes_narrow(backend, name, n, block):
    run_masked_copy(backend, name, n, block)


NEG_INF = float("-inf")


@tegula.jit
def other_kernel(x_ptr, o_ptr, n, v, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    # Each load reads its own copy of the data (row k of x), so no two loads
    # share a pointer tile (test_two_masked_loads_of_one_pointer_tile has that).
    tl.store(o_ptr + 0 * BLOCK + offs, tl.load(x_ptr + 0 * BLOCK + offs, mask=m, other=NEG_INF))
    tl.store(o_ptr + 1 * BLOCK + offs, tl.load(x_ptr + 1 * BLOCK + offs, mask=m, other=v))
    tl.store(o_ptr + 2 * BLOCK + offs, tl.load(x_ptr + 2 * BLOCK + offs, mask=m, other=offs * 2.0))
    tl.store(o_ptr + 3 * BLOCK + offs, tl.load(x_ptr + 3 * BLOCK + offs, mask=m, other=0.0,
                                               cache_modifier=".cg", eviction_policy="evict_last",
                                               volatile=True))
    tl.store(o_ptr + 4 * BLOCK + offs, tl.load(x_ptr + 4 * BLOCK + offs, mask=m), mask=m,
             cache_modifier=".cs", eviction_policy="evict_first")


def test_other_values_and_cache_hints(backend):
    B, n = 64, 45
    x = np.broadcast_to(np.arange(B, dtype=np.float32) + 0.5, (5, B)).copy()
    out = backend.full((5, B), 99.0, np.float32)
    other_kernel[(1,)](backend.array(x), out, n, 2.5, BLOCK=B)
    out = backend.numpy(out)
    tail = np.arange(n, B)
    np.testing.assert_array_equal(out[:, :n], x[:, :n])
    np.testing.assert_array_equal(out[0, n:], -np.inf)  # a global constant
    np.testing.assert_array_equal(out[1, n:], 2.5)  # a runtime scalar
    np.testing.assert_array_equal(out[2, n:], tail * 2.0)  # a tile
    np.testing.assert_array_equal(out[3, n:], 0.0)  # with cache hints
    np.testing.assert_array_equal(out[4, n:], 99.0)  # masked store


@tegula.jit
def cached_copy_kernel(src, dst, n, CACHE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n, other=-1.0, cache_modifier=CACHE), mask=offs < n)


@pytest.mark.parametrize("cache,qualifier", [("", None), (".ca", "ca"), (".cg", "cg"), (".cs", "cs"),
                                             (".cv", "cv")])
def test_every_load_cache_modifier(backend, cache, qualifier):
    # Triton's loads take .ca, .cg, .cs (streaming: likely read once) and .cv; each becomes the PTX qualifier of
    # the load on the GPU, and changes nothing the kernel computes.
    from cuda_emulator import compile_cuda

    n, B = 100, 128
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    out = backend.full((n,), 7.0, np.float32)
    cached_copy_kernel[(1,)](backend.array(x), out, n, CACHE=cache, BLOCK=B)
    np.testing.assert_array_equal(backend.numpy(out), x)
    compiled, _ = compile_cuda(cached_copy_kernel, (x, x, n), {"CACHE": cache, "BLOCK": B})
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    loads = set(re.findall(r"tg_ld\d+_(\w+)\(", kernel))
    assert loads == ({qualifier} if qualifier else set()), loads
    if qualifier:
        assert f'TG_QUALIFIED_LOADS({qualifier}, ".{qualifier}")' in compiled.source


@tegula.jit
def hinted_store_kernel(src, dst, h_src, h_dst, b_src, b_dst, n, CACHE: tl.constexpr, POLICY: tl.constexpr,
                        BLOCK: tl.constexpr):
    # float32 (vectors of words), float16 (packed pairs), int8 (packed bytes) and a scalar store, each hinted.
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(src + offs, mask=m)
    tl.store(dst + offs, x, mask=m, cache_modifier=CACHE, eviction_policy=POLICY)
    tl.store(h_dst + offs, tl.load(h_src + offs, mask=m), mask=m, cache_modifier=CACHE, eviction_policy=POLICY)
    tl.store(b_dst + offs, tl.load(b_src + offs, mask=m), mask=m, cache_modifier=CACHE, eviction_policy=POLICY)
    tl.store(dst + BLOCK, tl.sum(tl.where(m, x, 0.0), axis=0), cache_modifier=CACHE, eviction_policy=POLICY)


@pytest.mark.parametrize("cache,policy,qualifier", [
    ("", "", None), (".wb", "", "wb"), (".cg", "", "cg"), (".cs", "", "cs"), (".wt", "", "wt"),
    ("", "evict_first", "ef"), ("", "evict_last", "el"), ("", "evict_normal", None),
    (".cs", "evict_last", "cs"),  # both: the cache modifier, as for loads
])
def test_every_store_cache_modifier_and_eviction_policy(backend, cache, policy, qualifier):
    # Triton's stores take .wb, .cg, .cs (streaming) and .wt, and an eviction policy; on the GPU each becomes
    # the store's PTX qualifier or an L2 cache hint, and nothing the kernel computes changes (also in the CUDA
    # emulator, which runs the hinted stores).
    from cuda_emulator import compile_cuda, emulate, require_emulator

    n, B = 100, 128
    rng = np.random.default_rng(9)
    x = rng.standard_normal(n).astype(np.float32)
    h = rng.standard_normal(n).astype(np.float16)
    b = rng.integers(-128, 128, n).astype(np.int8)

    def run(launch, arrays):
        launch(*arrays)
        got = [a if isinstance(a, np.ndarray) else backend.numpy(a) for a in arrays]
        np.testing.assert_array_equal(got[0][:n], x)
        np.testing.assert_allclose(got[0][B], x.sum(), rtol=1e-5)
        np.testing.assert_array_equal(got[1][:n], h)
        np.testing.assert_array_equal(got[2][:n], b)
        assert (got[0][n:B] == 7.0).all() and (got[1][n:] == 7.0).all() and (got[2][n:] == 7).all()

    host = (np.full(B + 1, 7.0, np.float32), np.full(B, 7.0, np.float16), np.full(B, 7, np.int8))
    device = (backend.full((B + 1,), 7.0, np.float32), backend.full((B,), 7.0, np.float16),
              backend.full((B,), 7, np.int8))
    run(lambda o, ho, bo: hinted_store_kernel[(1,)](backend.array(x), o, backend.array(h), ho, backend.array(b), bo,
                                                    n, CACHE=cache, POLICY=policy, BLOCK=B), device)
    compiled, _ = compile_cuda(hinted_store_kernel, (x, host[0], h, host[1], b, host[2], n),
                               {"CACHE": cache, "POLICY": policy, "BLOCK": B})
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    stores = set(re.findall(r"tg_stv?\d+_(\w+)\(", kernel))
    assert stores == ({qualifier} if qualifier else set()), stores
    ptx = compiled.asm["ptx"]
    if qualifier in ("wb", "cg", "cs", "wt"):
        assert f"st.global.{qualifier}" in ptx
    if qualifier in ("ef", "el"):
        kind = {"ef": "evict_first", "el": "evict_last"}[qualifier]
        assert f"createpolicy.fractional.L2::{kind}" in ptx and "st.global.L2::cache_hint" in ptx
    if qualifier is None:
        assert "evict_first" not in ptx and "evict_last" not in ptx and "cache_hint" not in ptx
    require_emulator()
    run(lambda o, ho, bo: emulate(hinted_store_kernel, (1,), x, o, h, ho, b, bo, n, CACHE=cache, POLICY=policy,
                                  BLOCK=B), tuple(a.copy() for a in host))


@tegula.jit
def two_loads_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m, other=1.0))
    tl.store(o_ptr + BLOCK + offs, tl.load(x_ptr + offs, mask=m, other=2.0))


def test_two_loads_of_one_pointer_tile(backend):
    x = np.arange(8, dtype=np.float32)
    out = backend.zeros(32, np.float32)
    two_loads_kernel[(1,)](backend.array(x), out, 8, BLOCK=16)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:16], np.append(x, np.ones(8, np.float32)))
    np.testing.assert_array_equal(out[16:], np.append(x, np.full(8, 2.0, np.float32)))


@tegula.jit
def two_stores_kernel(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, offs, mask=m)
    tl.store(o_ptr + offs, offs * 3, mask=m & (offs % 2 == 0))  # the later store wins


def test_two_stores_to_one_pointer_tile(backend):
    out = backend.full(16, -1, np.int32)
    two_stores_kernel[(1,)](out, 10, BLOCK=16)
    r = np.arange(16)
    np.testing.assert_array_equal(backend.numpy(out), np.where(r < 10, np.where(r % 2 == 0, 3 * r, r), -1))


@tegula.jit
def float_of_string_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=float("-inf")))


def test_other_is_float_of_a_string(backend):
    # `other=float("-inf")` is how Triton kernels usually spell it.
    x = np.arange(8, dtype=np.float32)
    out = backend.zeros(16, np.float32)
    float_of_string_kernel[(1,)](backend.array(x), out, 8, BLOCK=16)
    np.testing.assert_array_equal(backend.numpy(out), np.append(x, np.full(8, -np.inf, np.float32)))


@tegula.jit
def scalar_memory_kernel(x_ptr, out_ptr, flags_ptr, n):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)  # a scalar load
    tl.store(out_ptr + pid, v * 2 + 1)  # a scalar store
    w = tl.load(x_ptr + pid + 1, mask=pid + 1 < n, other=-1)  # a masked scalar load
    tl.store(out_ptr + n + pid, w)
    tl.store(flags_ptr + pid, v > 10, mask=pid % 2 == 0)  # a masked scalar store of a bool


def test_scalar_load_store(backend):
    n = 23
    x = np.arange(n, dtype=np.int64) * 3 - 7
    out = backend.zeros(2 * n, np.int64)
    flags = backend.full(n, True, np.bool_)
    scalar_memory_kernel[(n,)](backend.array(x), out, flags, n)
    out, flags = backend.numpy(out), backend.numpy(flags)
    np.testing.assert_array_equal(out[:n], x * 2 + 1)
    np.testing.assert_array_equal(out[n:], np.append(x[1:], -1))
    even = np.arange(n) % 2 == 0
    np.testing.assert_array_equal(flags[even], x[even] > 10)
    assert flags[~even].all(), "odd programs' stores are masked off"


@tegula.jit
def pointer_arith_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    # offset + pointer, pointer - offset, pointer + a pointer-typed step.
    a = tl.load(offs + x_ptr, mask=m)
    end = x_ptr + (n - 1)
    b = tl.load(end - offs, mask=m)  # reversed
    shifted = (x_ptr + 5) - 5
    c = tl.load(shifted + offs.to(tl.int64), mask=m)  # 64-bit offsets
    p = out_ptr
    tl.store(p + offs, a, mask=m)
    p += n
    tl.store(p + offs, b, mask=m)
    p = p + n
    tl.store(p + offs, c.to(out_ptr.dtype.element_ty), mask=m)
    tl.static_assert(out_ptr.dtype.element_ty == tl.int16)
    # A pointer advanced in a loop.
    q = x_ptr
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for _ in range(3):
        acc += tl.load(q + offs, mask=offs < n - 2 * _, other=0).to(tl.int32)
        q += 1
    tl.store(out_ptr + 3 * n + offs, acc, mask=m)


def test_pointer_arithmetic(backend):
    n, B = 29, 32
    x = (np.arange(n, dtype=np.int16) * 7 - 50).astype(np.int16)
    out = backend.zeros(4 * n, np.int16)
    pointer_arith_kernel[(1,)](backend.array(x), out, n, BLOCK=B)
    out = backend.numpy(out)
    np.testing.assert_array_equal(out[:n], x)
    np.testing.assert_array_equal(out[n:2 * n], x[::-1])
    np.testing.assert_array_equal(out[2 * n:3 * n], x)
    want = np.zeros(n, np.int32)
    xp = np.append(x, [0, 0, 0]).astype(np.int32)
    for k in range(3):
        valid = np.arange(n) < n - 2 * k
        want += np.where(valid, xp[k:k + n], 0)
    np.testing.assert_array_equal(out[3 * n:], want.astype(np.int16))


@tegula.jit
def transpose_2d_kernel(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * sxm + cols[None, :] * sxn, mask=mask)
    # out[j, i] = x[i, j]: the same tile stored through the other strides.
    tl.store(out_ptr + cols[None, :] * som + rows[:, None] * son, x, mask=mask)


@pytest.mark.parametrize("name", ["float32", "float16", "int64", "bool"])
def test_2d_strided_load_store(backend, name):
    M, N = 13, 50
    rng = rng_for("2d", name)
    x = random(rng, (M, N), name)
    out = backend.zeros((N, M), x.dtype)
    grid = (tegula.cdiv(M, 16), tegula.cdiv(N, 64))
    transpose_2d_kernel[grid](backend.array(x), out, M, N, N, 1, M, 1, BLOCK_M=16, BLOCK_N=64)
    check(backend.numpy(out), x.T, name, ulps=0, atol=0, what="2-D transpose through strides")


def test_2d_non_contiguous_views(backend):
    rng = rng_for("2d-views")
    base = random(rng, (40, 120), "float32")
    # The views are taken of the arrays the backend holds, so the kernel gets
    # their strides on the GPU too (backend.array would copy a view).
    x = backend.array(base)[3::3, 1::2]  # 13 x 60, strides (360, 2) elements
    out_base = backend.zeros((70, 40), np.float32)
    out = out_base[5:65, 2:15]  # 60 x 13 view, strides (40, 1)
    M, N = x.shape
    (sxm, sxn), (som, son) = backend.strides(x), backend.strides(out)
    assert (sxm, sxn, som, son) == (360, 2, 40, 1)
    grid = (tegula.cdiv(M, 8), tegula.cdiv(N, 16))
    transpose_2d_kernel[grid](x, out, M, N, sxm, sxn, som, son, BLOCK_M=8, BLOCK_N=16)
    out_base = backend.numpy(out_base)
    np.testing.assert_array_equal(out_base[5:65, 2:15], base[3::3, 1::2].T)
    outside = np.ones(out_base.shape, bool)
    outside[5:65, 2:15] = False
    assert not out_base[outside].any(), "a store outside the view"


@tegula.jit
def broadcast_memory_kernel(row_ptr, col_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    r = tl.load(row_ptr + cols, mask=cols < N, other=0.0)  # [BLOCK_N]
    c = tl.load(col_ptr + rows, mask=rows < M, other=0.0)  # [BLOCK_M]
    ptrs = out_ptr + rows[:, None] * N + cols[None, :]
    row_ok = rows[:, None] < M  # [BLOCK_M, 1], broadcast against [BLOCK_M, BLOCK_N] pointers
    tl.store(ptrs, c[:, None] * 10.0 + r[None, :], mask=row_ok & (cols[None, :] < N))
    # A scalar value and a 1-row mask broadcast to the pointer tile.
    tl.store(ptrs + M * N, 7, mask=row_ok & (cols < N)[None, :])
    # Loading through a mask that broadcasts a row: every row reads the same row 0 pointers.
    again = tl.load(out_ptr + cols[None, :] + rows[:, None] * 0, mask=(cols < N)[None, :], other=-1.0)
    tl.store(ptrs + 2 * M * N, again, mask=row_ok & (cols[None, :] < N))


def test_broadcast_masks_and_values(backend):
    M, N = 5, 11
    rng = rng_for("broadcast-mem")
    r = random(rng, N, "float32")
    c = random(rng, M, "float32")
    out = backend.zeros(3 * M * N, np.float32)
    # The reference rounds c * 10 and the sum separately: no FMA contraction.
    broadcast_memory_kernel[(1,)](backend.array(r), backend.array(c), out, M, N, BLOCK_M=8, BLOCK_N=16,
                                  enable_fp_fusion=False)
    out = backend.numpy(out)
    grid = c[:, None] * np.float32(10.0) + r[None, :]
    np.testing.assert_array_equal(out[:M * N].reshape(M, N), grid)
    np.testing.assert_array_equal(out[M * N:2 * M * N], 7.0)
    np.testing.assert_array_equal(out[2 * M * N:].reshape(M, N), np.broadcast_to(grid[0], (M, N)))


@tegula.jit
def pointer_3d_kernel(x_ptr, out_ptr, A, B, C, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    a = tl.arange(0, BA)[:, None, None]
    b = tl.arange(0, BB)[None, :, None]
    c = tl.arange(0, BC)[None, None, :]
    mask = (a < A) & (b < B) & (c < C)
    x = tl.load(x_ptr + a * B * C + b * C + c, mask=mask, other=0)
    # out is C x B x A: a full reversal of the axes.
    tl.store(out_ptr + c * B * A + b * A + a, x + 1, mask=mask)


def test_3d_pointer_tiles(backend):
    A, B, C = 3, 5, 7
    x = np.arange(A * B * C, dtype=np.int32).reshape(A, B, C)
    out = backend.zeros((C, B, A), np.int32)
    pointer_3d_kernel[(1,)](backend.array(x), out, A, B, C, BA=4, BB=8, BC=8)
    np.testing.assert_array_equal(backend.numpy(out), x.transpose(2, 1, 0) + 1)


@tegula.jit
def store_converts_kernel(x_ptr, h_ptr, i_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # f32
    tl.store(h_ptr + offs, x)  # to f16: rounds
    tl.store(i_ptr + offs, x)  # to i32: truncates
    tl.store(b_ptr + offs, x)  # to bool: x != 0


def test_store_converts_to_the_pointee_type(backend):
    B = 32
    x = np.linspace(-9.75, 9.75, B).astype(np.float32)
    x[3] = 0.0
    h = backend.zeros(B, np.float16)
    i = backend.zeros(B, np.int32)
    b = backend.zeros(B, np.bool_)
    store_converts_kernel[(1,)](backend.array(x), h, i, b, BLOCK=B)
    h, i, b = backend.numpy(h), backend.numpy(i), backend.numpy(b)
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(i, np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(b, x != 0)


GUARD_SCRIPT = textwrap.dedent('''
    import ctypes, mmap, sys
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0) + 1.0, mask=m)

    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    def guarded(n):
        # n floats that end exactly where an inaccessible page begins.
        buf = mmap.mmap(-1, 2 * PAGE)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        assert libc.mprotect(addr + PAGE, PAGE, 0) == 0, ctypes.get_errno()
        return buf, np.frombuffer(buf, np.float32, count=n, offset=PAGE - 4 * n)

    for n in (1, 37, 1000):
        xb, x = guarded(n)
        ob, out = guarded(n)
        x[:] = np.arange(n)
        copy[(tegula.cdiv(n, 256),)](x, out, n, BLOCK=256)
        assert (out == np.arange(n) + 1).all()
    print("ok")
''')


def test_masked_lanes_touch_no_memory(backend, tmp_path):
    # The arrays end at a PROT_NONE page: a masked-off lane that read or
    # wrote would crash, so this runs in its own process.
    if backend.is_cuda:
        pytest.skip("guard pages are host memory (mprotect); on the GPU, the sentinel checks of "
                    "test_masked_load_store_* show that masked-off lanes store nothing")
    run_isolated(tmp_path, GUARD_SCRIPT, backend)


@pytest.mark.parametrize("name", ["float32", "float64", "int16"])
def test_unaligned_pointers(backend, name):
    # Views that start 1 and 3 elements into their buffers: not 16-byte
    # aligned, so the kernel is specialized without the alignment promise.
    # Views of the backend's arrays: backend.array of a view would copy it
    # to a fresh, aligned buffer.
    rng = rng_for("unaligned", name)
    base = random(rng, 1001, name)
    x = backend.array(base)[1:]
    out_base = backend.zeros(1003, base.dtype)
    out = out_base[3:]
    assert backend.address(x) % 16 != 0 and backend.address(out) % 16 != 0
    n = 1000
    masked_copy_kernel[grid1(n, 128)](x, backend.zeros(1024, base.dtype), out, n, BLOCK=128)
    out_base = backend.numpy(out_base)
    check(out_base[3:], base[1:], name, ulps=0, atol=0, what="copy between unaligned views")
    assert not out_base[:3].any()


def test_bool_load_reads_any_nonzero_byte_as_true(backend):
    # docs/ir.md: an i1 in memory is a byte; a load reads `byte != 0`.
    raw = np.array([0, 1, 2, 255, 0, 128, 7, 0] * 4, np.uint8)
    flags = raw.view(np.bool_)  # backend.array keeps the bytes as they are
    out = backend.zeros(32, np.int32)
    bool_to_int_kernel[(1,)](backend.array(flags), out, BLOCK=32)
    np.testing.assert_array_equal(backend.numpy(out), (raw != 0).astype(np.int32))


@tegula.jit
def bool_to_int_kernel(b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(b_ptr + offs).to(tl.int32))
