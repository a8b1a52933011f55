"""tl.pointer_type: integers (addresses loaded from memory) converted to
pointers, pointers to integers and to other pointer types, and the dtype as a
compile-time value."""

from __future__ import annotations

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_compile_util import compile_for_cuda
from ops_util import rng_for


@tegula.jit
def gather_rows_kernel(table_ptr, out_ptr, lengths_ptr, BLOCK: tl.constexpr, ELEM: tl.constexpr):
    g = tl.program_id(0)
    src = tl.load(table_ptr + g).to(tl.pointer_type(ELEM))
    tl.static_assert(src.dtype == tl.pointer_type(ELEM))
    n = tl.load(lengths_ptr + g)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + g * BLOCK + offs, tl.load(src + offs, mask=offs < n, other=-1), mask=offs < n)


@tegula.jit
def round_trip_kernel(x_ptr, y_ptr, addr_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    addresses = ptrs.to(tl.int64)                       # tile of addresses
    tl.store(addr_ptr + offs, addresses)
    back = addresses.to(tl.pointer_type(tl.float32))    # and back
    as_ints = x_ptr.to(tl.pointer_type(tl.int32))       # pointer -> pointer of another type
    bits = tl.load(as_ints + offs)
    tl.store(y_ptr + offs, tl.load(back) + (bits != 0).to(tl.float32))


def address(backend, x) -> int:
    return backend.address(x)


@pytest.mark.parametrize("dtype, elem", [(np.float16, tl.float16), (np.int32, tl.int32), (np.float32, tl.float32)])
def test_loaded_addresses_become_pointers(backend, dtype, elem):
    rng = np.random.default_rng(5)
    lengths = [7, 32, 19]  # masked tails, not powers of two
    arrays = [backend.array(rng.integers(-50, 50, size=n).astype(dtype)) for n in lengths]
    table = backend.array(np.array([address(backend, a) for a in arrays], np.int64))
    out = backend.zeros((len(lengths) * 32,), dtype)
    gather_rows_kernel[(len(lengths),)](table, out, backend.array(np.array(lengths, np.int32)), BLOCK=32, ELEM=elem)
    got = backend.numpy(out).reshape(len(lengths), 32)
    for g, a in enumerate(arrays):
        np.testing.assert_array_equal(got[g, :lengths[g]], backend.numpy(a))
        assert (got[g, lengths[g]:] == 0).all()


def test_pointer_int_round_trip(backend):
    x = np.linspace(-2, 2, 16).astype(np.float32)
    dx = backend.array(x)
    y = backend.zeros((16,), np.float32)
    addresses = backend.zeros((16,), np.int64)
    round_trip_kernel[(1,)](dx, y, addresses, BLOCK=16)
    np.testing.assert_array_equal(backend.numpy(addresses), address(backend, dx) + 4 * np.arange(16))
    np.testing.assert_array_equal(backend.numpy(y), x + (x.view(np.int32) != 0))


def test_pointer_type_on_the_host():
    assert tl.pointer_type(tl.float16) == tl.pointer_type(tl.float16) != tl.pointer_type(tl.float32)
    assert tl.pointer_type(tl.float16).element_ty == tl.float16 and tl.pointer_type(tl.int8).is_ptr()


def test_float_to_pointer_is_a_located_error():
    @tegula.jit
    def bad(x_ptr):
        p = tl.load(x_ptr).to(tl.pointer_type(tl.float32))
        tl.store(p, 1.0)

    with pytest.raises(tegula.CompilationError, match=r"E0305.*only an integer \(an address\) converts to a pointer, not fp32"):
        bad[(1,)](np.zeros(4, np.float32))


def test_pointer_to_int32_is_a_located_error():
    @tegula.jit
    def bad(x_ptr, y_ptr):
        tl.store(y_ptr, x_ptr.to(tl.int32))

    with pytest.raises(tegula.CompilationError, match=r"a pointer converts to tl.int64, tl.uint64 .* not int32"):
        bad[(1,)](np.zeros(4, np.float32), np.zeros(4, np.int32))


@pytest.mark.parametrize("arch", [90, 80])
def test_pointer_casts_compile_for_cuda(tmp_path, arch):
    compile_for_cuda(gather_rows_kernel, "*i64,*fp16,*i32,32,fp16", arch, tmp_path)
    compile_for_cuda(round_trip_kernel, "*fp32,*fp32,*i64,16", arch, tmp_path)


@tegula.jit
def store_selected_pointers_kernel(cond_ptr, a_ptr, b_ptr, out_ptr, nonnull_ptr, n, BLOCK: tl.constexpr):
    # Addresses loaded as integers become pointers, tl.where picks one of each pair, and the picked pointers
    # are stored as they are: as addresses into int64 elements, as "not null" into bool ones.
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.pi32_t)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.pi32_t)
    picked = tl.where(tl.load(cond_ptr + offs, mask=mask), a, b)
    tl.store(out_ptr + offs, picked, mask=mask)
    tl.store(nonnull_ptr + offs, picked, mask=mask)


def test_pointers_store_as_their_addresses(backend):
    n = 100
    rng = np.random.default_rng(4)
    cond = rng.random(n) < 0.5
    a = rng.integers(0, 2**40, n).astype(np.int64) * 8
    b = rng.integers(0, 2**40, n).astype(np.int64) * 8
    b[::7] = 0  # null pointers, stored as False
    out = backend.zeros((n,), np.int64)
    nonnull = backend.array(np.ones(n, np.bool_))
    store_selected_pointers_kernel[(1,)](backend.array(cond), backend.array(a), backend.array(b), out, nonnull, n,
                                         BLOCK=128)
    want = np.where(cond, a, b)
    np.testing.assert_array_equal(backend.numpy(out), want)
    np.testing.assert_array_equal(backend.numpy(nonnull), want != 0)


def test_a_pointer_stored_into_floats_is_a_located_error():
    @tegula.jit
    def bad(x_ptr):
        tl.store(x_ptr, x_ptr)

    with pytest.raises(tegula.CompilationError, match=r"(?s)E0305.*stored as its address.*not into fp32 elements"):
        bad[(1,)](np.zeros(16, np.float32))


@tegula.jit
def optional_output_kernel(x_ptr, y_ptr, flags_ptr, BLOCK: tl.constexpr):
    # A pointer is true when not null, as Triton casts it to int1; a None argument folds away.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if y_ptr:
        tl.store(y_ptr + offs, x * 2)
    tl.store(flags_ptr + 0, 1 if x_ptr else 0)
    tl.store(flags_ptr + 1, 1 if (x_ptr and flags_ptr) else 0)
    tl.store(flags_ptr + 2, 1 if (y_ptr or x_ptr) else 0)


def test_a_pointer_is_true_when_not_null(backend):
    x = rng_for("optional").standard_normal(16).astype(np.float32)
    y = backend.zeros(16, np.float32)
    flags = backend.zeros(3, np.int32)
    optional_output_kernel[(1,)](backend.array(x), None, flags, BLOCK=16)
    assert backend.numpy(flags).tolist() == [1, 1, 1] and not backend.numpy(y).any()
    optional_output_kernel[(1,)](backend.array(x), y, flags, BLOCK=16)
    np.testing.assert_array_equal(backend.numpy(y), x * 2)
    assert backend.numpy(flags).tolist() == [1, 1, 1]


@tegula.jit
def store_where_not_null_kernel(table_ptr, x_ptr, flags_ptr, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    dst = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))  # 0 in some rows: a null pointer
    offs = tl.arange(0, BLOCK)
    if dst:
        tl.store(dst + offs, tl.load(x_ptr + offs) + g)
    n = 0
    while dst and n < 3:
        n += 1
    tl.store(flags_ptr + g, n)


def test_a_loaded_null_pointer_is_false(backend):
    x = rng_for("null").standard_normal(16).astype(np.float32)
    y = backend.zeros(16, np.float32)
    table = backend.array(np.array([0, address(backend, y), 0], dtype=np.int64))
    flags = backend.zeros(3, np.int32)
    store_where_not_null_kernel[(3,)](table, backend.array(x), flags, BLOCK=16)
    np.testing.assert_array_equal(backend.numpy(y), x + 1)
    assert backend.numpy(flags).tolist() == [0, 3, 0]
