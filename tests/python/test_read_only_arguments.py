"""Arrays a kernel must not write (docs/security.md, "Memory"): a pointer
the kernel stores to or updates atomically, bound to a read-only array or to
a view whose elements overlap, is refused at launch with E0714, before the
kernel runs; reading such arrays stays allowed."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import tegula
import tegula.language as tl


@tegula.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@tegula.jit
def count(counter_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(counter_ptr + offs * 0, 1.0, mask=offs < n)


def _refused(launch, param: str, kernel: str, what: str) -> None:
    with pytest.raises(ValueError) as info:
        launch()
    assert info.value.code == "E0714"
    message = str(info.value)
    assert f"argument '{param}' of kernel '{kernel}' {what}" in message
    assert "array.copy()" in message


def test_a_read_only_output_is_refused_and_left_unchanged():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(32).astype(np.float32)
    frozen = bytes(128)
    out = np.frombuffer(frozen, np.float32)  # its memory is the immutable bytes object
    _refused(lambda: add_one[(1,)](x, out, 32, BLOCK=32), "out_ptr", "add_one", "is a read-only array")
    assert frozen == bytes(128)


def test_a_read_only_input_may_be_read():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(100).astype(np.float32)
    source = np.frombuffer(x.tobytes(), np.float32)
    assert not source.flags.writeable
    out = np.zeros_like(x)
    add_one[(4,)](source, out, 100, BLOCK=32)
    np.testing.assert_array_equal(out, x + np.float32(1))


def test_overlapping_views_are_refused_as_outputs():
    x = np.random.default_rng(2).standard_normal(8).astype(np.float32)
    # np.broadcast_to: read-only and zero-strided.
    _refused(lambda: add_one[(1,)](x, np.broadcast_to(np.zeros(1, np.float32), (8,)), 8, BLOCK=8),
             "out_ptr", "add_one", "is a read-only array")
    # A writable zero-stride view over one element of a larger buffer: every
    # store would land past the view's one element.
    base = np.zeros(16, np.float32)
    zero_stride = as_strided(base[:1], shape=(8,), strides=(0,))
    _refused(lambda: add_one[(1,)](x, zero_stride, 8, BLOCK=8), "out_ptr", "add_one",
             "is a view whose elements overlap")
    # Rows that overlap: a stride smaller than the row.
    rows = as_strided(base, shape=(4, 4), strides=(8, 4))
    _refused(lambda: add_one[(1,)](x, rows, 8, BLOCK=8), "out_ptr", "add_one",
             "is a view whose elements overlap")
    assert not base.any()


def test_atomic_updates_of_a_read_only_array_are_refused():
    frozen = bytes(4)
    _refused(lambda: count[(1,)](np.frombuffer(frozen, np.float32), 4, BLOCK=4), "counter_ptr", "count",
             "is a read-only array")
    assert frozen == bytes(4)


def test_writable_strided_views_still_launch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64).astype(np.float32)
    # The kernel addresses memory from the base pointer on, whatever the view:
    # it writes the first 64 elements of each view's memory.
    every_other = np.zeros(128, np.float32)
    add_one[(2,)](x, every_other[::2], 64, BLOCK=32)
    np.testing.assert_array_equal(every_other[:64], x + np.float32(1))
    square = np.zeros((8, 8), np.float32)
    add_one[(2,)](x, square.T, 64, BLOCK=32)
    np.testing.assert_array_equal(square.ravel(), x + np.float32(1))


def test_expanded_torch_tensors_are_refused_as_outputs():
    torch = pytest.importorskip("torch")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(8, device=device)
    base = torch.zeros(1, device=device)
    expanded = base.expand(8)  # one element seen eight times: zero stride
    _refused(lambda: add_one[(1,)](x, expanded, 8, BLOCK=8), "out_ptr", "add_one",
             "is a view whose elements overlap")
    rows = torch.zeros(8, device=device).as_strided((4, 4), (1, 1))  # rows that overlap
    _refused(lambda: add_one[(1,)](x, rows, 16, BLOCK=16), "out_ptr", "add_one",
             "is a view whose elements overlap")
    assert not base.any() and not rows.any()
    base = torch.zeros(16, device=device)
    add_one[(1,)](x, base[::2], 8, BLOCK=8)  # a writable strided view launches (the kernel writes by address)
    torch.testing.assert_close(base[:8], x + 1)


@tegula.jit
def descriptor_store(desc, BLOCK: tl.constexpr):
    desc.store([0, 0], tl.full((BLOCK, BLOCK), 7.0, tl.float32))


@tegula.jit
def descriptor_atomic(desc, BLOCK: tl.constexpr):
    desc.atomic_add([0, 0], tl.full((BLOCK, BLOCK), 1.0, tl.float32))


@tegula.jit
def descriptor_copy(desc, out_ptr, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    tl.store(out_ptr + rows * BLOCK + cols, desc.load([0, 0]))


def test_a_descriptor_over_a_read_only_array_may_be_read_but_not_written():
    data = np.random.default_rng(5).standard_normal((8, 8)).astype(np.float32)
    frozen = np.frombuffer(data.tobytes(), np.float32).reshape(8, 8)
    before = frozen.copy()
    describe = lambda: tegula.TensorDescriptor(frozen, shape=[8, 8], strides=[8, 1], block_shape=[8, 8])  # noqa: E731
    out = np.zeros((8, 8), np.float32)
    descriptor_copy[(1,)](describe(), out, BLOCK=8)
    np.testing.assert_array_equal(out, data)
    _refused(lambda: descriptor_store[(1,)](describe(), BLOCK=8), "desc", "descriptor_store",
             "is a TensorDescriptor over a read-only array")
    _refused(lambda: descriptor_atomic[(1,)](describe(), BLOCK=8), "desc", "descriptor_atomic",
             "is a TensorDescriptor over a read-only array")
    np.testing.assert_array_equal(frozen, before)
