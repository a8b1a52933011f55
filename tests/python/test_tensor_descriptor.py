"""Tensor descriptors against NumPy on the backend under test: in-kernel
tl.make_tensor_descriptor and host tegula.TensorDescriptor arguments,
desc.load/desc.store (and tl.load_tensor_descriptor/tl.store_tensor_descriptor)
over ragged edges and negative offsets, zero and NaN padding, a descriptor
matmul, desc.atomic_add, descriptors passed to @jit helpers and carried
through loops, specialization on the block shape, debug mode, host-side
validation and located compile errors.
"""

import inspect
import os
import re

import numpy as np
import pytest

import tegula
import tegula.language as tl


def random_array(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-100, 100, size=shape).astype(dtype)


def padded_reference(x, off_m, off_n, BM, BN, fill):
    M, N = x.shape
    out = np.full((BM, BN), fill, dtype=x.dtype)
    for i in range(BM):
        for j in range(BN):
            r, c = off_m + i, off_n + j
            if 0 <= r < M and 0 <= c < N:
                out[i, j] = x[r, c]
    return out


# --- in-kernel descriptors ---------------------------------------------------------------


@tegula.jit
def scale_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    tile = src.load([off_m, off_n])
    dst.store([off_m, off_n], tile * 2 + 1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_in_kernel_descriptor_ragged_copy(backend, dtype):
    M, N, BM, BN = 41, 70, 16, 32
    x = random_array(1, (M, N), dtype)
    y = backend.zeros((M, N), dtype)
    scale_kernel[(tegula.cdiv(M, BM), tegula.cdiv(N, BN))](backend.array(x), y, M, N, BM=BM, BN=BN)
    np.testing.assert_array_equal(backend.numpy(y), (x * 2 + 1).astype(dtype))


@tegula.jit
def padded_load_kernel(x_ptr, out_ptr, M, N, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr,
                       PADDING: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option=PADDING)
    tile = tl.load_tensor_descriptor(desc, [off_m, off_n])
    out = tl.make_tensor_descriptor(out_ptr, [BM, BN], [BN, 1], [BM, BN])
    tl.store_tensor_descriptor(out, [0, 0], tile)


@pytest.mark.parametrize("padding,fill", [("zero", 0.0), ("nan", np.nan)])
@pytest.mark.parametrize("off_m,off_n", [(9, 20), (-4, -3)])
def test_padding_outside_the_tensor(backend, padding, fill, off_m, off_n):
    M, N, BM, BN = 13, 27, 8, 16
    x = random_array(2, (M, N), np.float32)
    out = backend.zeros((BM, BN), np.float32)
    padded_load_kernel[(1,)](backend.array(x), out, M, N, off_m, off_n, BM=BM, BN=BN, PADDING=padding)
    np.testing.assert_array_equal(backend.numpy(out), padded_reference(x, off_m, off_n, BM, BN, fill))


# --- host descriptors -------------------------------------------------------------------------


@tegula.jit
def host_copy_kernel(src, dst, factor):
    BM: tl.constexpr = src.block_shape[0]
    BN: tl.constexpr = src.block_shape[1]
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    dst.store([off_m, off_n], src.load([off_m, off_n]) * factor)


@pytest.mark.parametrize("block", [(16, 16), (8, 32)])
def test_host_descriptors(backend, block):
    M, N = 50, 45
    x = random_array(3, (M, N), np.float32)
    y = backend.zeros((M, N), np.float32)
    src = tegula.TensorDescriptor.from_tensor(backend.array(x), list(block))
    dst = tegula.TensorDescriptor.from_tensor(y, list(block))
    host_copy_kernel[(tegula.cdiv(M, block[0]), tegula.cdiv(N, block[1]))](src, dst, 0.5)
    np.testing.assert_array_equal(backend.numpy(y), x * np.float32(0.5))


def test_host_descriptor_specializes_on_block_shape(backend):
    x = backend.array(random_array(4, (32, 32), np.float32))
    y = backend.zeros((32, 32), np.float32)
    for block in ([16, 16], [8, 32], [16, 16]):
        host_copy_kernel[(32 // block[0], 32 // block[1])](
            tegula.TensorDescriptor.from_tensor(x, block), tegula.TensorDescriptor.from_tensor(y, block), 1.0)
    descriptors = [args[0] for args in host_copy_kernel._launcher.specializations()
                   if args[0].kind == tegula._C.ArgSpec.Kind.TensorDescriptor]
    assert len({tuple(d.block_shape) for d in descriptors}) >= 2  # one specialization per block shape
    np.testing.assert_array_equal(backend.numpy(y), backend.numpy(x))


@tegula.jit
def shape_attributes_kernel(desc, out_ptr):
    # desc.shape and desc.strides are runtime ints; desc.block_shape constexprs.
    tl.store(out_ptr + 0, desc.shape[0])
    tl.store(out_ptr + 1, desc.shape[1])
    tl.store(out_ptr + 2, desc.strides[0])
    tl.store(out_ptr + 3, desc.strides[1])
    tl.store(out_ptr + 4, desc.block_shape[0] * 100 + desc.block_shape[1])


def test_host_descriptor_shape_and_strides(backend):
    x = backend.zeros((7, 24), np.float16)
    out = backend.zeros(5, np.int32)
    shape_attributes_kernel[(1,)](tegula.TensorDescriptor.from_tensor(x, [4, 8]), out)
    np.testing.assert_array_equal(backend.numpy(out), [7, 24, 24, 1, 408])


def test_nan_padding_of_a_host_descriptor(backend):
    M, N = 5, 6
    x = random_array(5, (M, N), np.float32)
    out = backend.zeros((8, 8), np.float32)
    src = tegula.TensorDescriptor(backend.array(x), [M, N], [N, 1], [8, 8], padding="nan")
    host_copy_kernel[(1, 1)](src, tegula.TensorDescriptor.from_tensor(out, [8, 8]), 1.0)
    np.testing.assert_array_equal(backend.numpy(out), padded_reference(x, 0, 0, 8, 8, np.nan))


@tegula.jit
def matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_K: tl.constexpr):
    BLOCK_M: tl.constexpr = a_desc.block_shape[0]
    BLOCK_N: tl.constexpr = b_desc.block_shape[1]
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


def test_descriptor_matmul(backend):
    M, N, K = 60, 40, 70
    BM, BN, BK = 32, 32, 16
    a = random_array(6, (M, K), np.float16)
    b = random_array(7, (K, N), np.float16)
    c = backend.zeros((M, N), np.float16)
    TD = tegula.TensorDescriptor
    matmul_kernel[(tegula.cdiv(M, BM), tegula.cdiv(N, BN))](
        TD.from_tensor(backend.array(a), [BM, BK]), TD.from_tensor(backend.array(b), [BK, BN]),
        TD.from_tensor(c, [BM, BN]), K, BLOCK_K=BK)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(backend.numpy(c).astype(np.float64), ref, rtol=1e-2, atol=2e-2)


@tegula.jit
def add_block(desc, offsets, value):
    desc.atomic_add(offsets, value)


@tegula.jit
def histogram_rows_kernel(x_desc, out_desc, rows, BM: tl.constexpr, BN: tl.constexpr):
    # Every program adds its rows' block into the same (BM, BN) block of out.
    for r in range(tl.program_id(0) * BM, rows, tl.num_programs(0) * BM):
        add_block(out_desc, [0, 0], x_desc.load([r, 0]))


def test_descriptor_atomic_add_through_a_helper(backend):
    rows, N, BM, BN = 100, 12, 8, 16
    x = random_array(8, (rows, N), np.int32)
    out = backend.zeros((BM, N), np.int32)
    TD = tegula.TensorDescriptor
    histogram_rows_kernel[(3,)](TD.from_tensor(backend.array(x), [BM, BN]), TD.from_tensor(out, [BM, BN]), rows,
                                BM=BM, BN=BN)
    padded = np.zeros((tegula.cdiv(rows, BM) * BM, N), np.int32)
    padded[:rows] = x
    np.testing.assert_array_equal(backend.numpy(out), padded.reshape(-1, BM, N).sum(axis=0))


@tegula.jit(debug=True)
def debug_copy_kernel(src, dst):
    dst.store([tl.program_id(0) * 16, 0], src.load([tl.program_id(0) * 16, 0]))


def test_descriptor_in_debug_mode(backend):
    # Descriptor accesses are masked to the tensor: debug mode finds nothing.
    x = random_array(9, (20, 10), np.float32)
    y = backend.zeros((20, 10), np.float32)
    TD = tegula.TensorDescriptor
    debug_copy_kernel[(2,)](TD.from_tensor(backend.array(x), [16, 16]), TD.from_tensor(y, [16, 16]))
    np.testing.assert_array_equal(backend.numpy(y), x)


# --- host validation ----------------------------------------------------------------------------


def test_host_descriptor_validation():
    x = np.zeros((8, 8), np.float32)
    TD = tegula.TensorDescriptor
    with pytest.raises(ValueError, match="powers of two"):
        TD.from_tensor(x, [8, 12])
    with pytest.raises(ValueError, match="last stride of a TensorDescriptor must be 1"):
        TD.from_tensor(x.T, [8, 8])
    with pytest.raises(ValueError, match="one stride and one block size per dimension"):
        TD(x, [8, 8], [8, 1], [8])
    with pytest.raises(ValueError, match="'zero' or 'nan'"):
        TD.from_tensor(x, [8, 8], padding="one")
    with pytest.raises(ValueError, match="padding='nan' needs a floating-point tensor"):
        TD.from_tensor(np.zeros((8, 8), np.int32), [8, 8], padding="nan")
    d = TD.from_tensor(x[:, :6], [8, 8])  # a view: its strides are the parent's
    assert d.shape == [8, 6] and d.strides == [8, 1] and d.block_shape == [8, 8]


def test_descriptor_as_a_constexpr_is_a_launch_error():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(TypeError, match="constexpr argument 'BM' of kernel 'scale_kernel'"):
        scale_kernel[(1,)](x, x, 8, 8, BM=tegula.TensorDescriptor.from_tensor(x, [8, 8]), BN=8)


# --- compile errors ---------------------------------------------------------------------------


def where(fn, needle):
    lines, first = inspect.getsourcelines(fn.fn)
    for i, text in enumerate(lines):
        col = text.find(needle)
        if col >= 0 and not text.lstrip().startswith(("@", "def ")):
            return first + i, col + 1
    raise AssertionError(needle)


def assert_compile_error(kernel, needle, text, *args, **kwargs):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    message = str(info.value)
    line, col = where(kernel, needle)
    assert f"{os.path.basename(__file__)}:{line}:{col}: error[E" in message.splitlines()[0], message
    assert text in message, message


X = np.zeros((16, 16), np.float32)


@tegula.jit
def strided_descriptor_kernel(x_ptr, s):
    d = tl.make_tensor_descriptor(x_ptr, [16, 16], strides=[16, s], block_shape=[16, 16])
    d.store([0, 0], 1.0)


def test_error_inner_stride_not_one():
    assert_compile_error(strided_descriptor_kernel, "strides=", "the last stride of a tensor descriptor must be the "
                         "constant 1", X, 2)


@tegula.jit
def wrong_offsets_kernel(desc):
    desc.store([0, 0, 0], 1.0)


def test_error_wrong_number_of_offsets():
    assert_compile_error(wrong_offsets_kernel, "[0, 0, 0]", "desc.store got 3 offsets for a descriptor of rank 2",
                         tegula.TensorDescriptor.from_tensor(X, [16, 16]))


@tegula.jit
def wrong_store_shape_kernel(desc):
    desc.store([0, 0], tl.zeros((16, 8), dtype=tl.float32))


def test_error_store_shape():
    assert_compile_error(wrong_store_shape_kernel, "tl.zeros",
                         "the value stored by desc.store has shape 16x8 but the block is 16x16",
                         tegula.TensorDescriptor.from_tensor(X, [16, 16]))


@tegula.jit
def bitwise_float_atomic_kernel(desc):
    desc.atomic_and([0, 0], tl.zeros((16, 16), dtype=tl.float32))


@tegula.jit
def wrong_atomic_offsets_kernel(desc):
    desc.atomic_add([0], 1.0)


@tegula.jit
def wrong_atomic_shape_kernel(desc):
    desc.atomic_max([0, 0], tl.zeros((8, 16), dtype=tl.float32))


@pytest.mark.parametrize("kernel,needle,text", [
    (bitwise_float_atomic_kernel, "desc.atomic_and", "desc.atomic_and does not support fp32 elements"),
    (wrong_atomic_offsets_kernel, "[0]", "desc.atomic_add got 1 offsets for a descriptor of rank 2"),
    (wrong_atomic_shape_kernel, "tl.zeros", "the value stored by desc.atomic_max has shape 8x16 but the block is 16x16"),
])
def test_error_descriptor_atomics(kernel, needle, text):
    assert_compile_error(kernel, needle, text, tegula.TensorDescriptor.from_tensor(X, [16, 16]))


@tegula.jit
def unknown_attribute_kernel(desc):
    desc.prefetch([0, 0])


def test_error_unknown_descriptor_attribute():
    assert_compile_error(unknown_attribute_kernel, "desc.prefetch", "a tensor descriptor has no attribute `prefetch`",
                         tegula.TensorDescriptor.from_tensor(X, [16, 16]))


@tegula.jit
def load_descriptor_with_tl_load_kernel(desc):
    tl.load(desc)


def test_error_tl_load_of_a_descriptor():
    assert_compile_error(load_descriptor_with_tl_load_kernel, "desc)",
                         "tl.load needs a block pointer made by tl.make_block_ptr, but it got a tensor descriptor "
                         "of 16x16 fp32 blocks", tegula.TensorDescriptor.from_tensor(X, [16, 16]))


def test_in_kernel_descriptor_compiles_for_cuda(tmp_path):
    from cuda_compile_util import compile_for_cuda

    out = compile_for_cuda(scale_kernel, "*fp16:16, *fp16:16, i32, i32, 64, 64", 90, tmp_path, emit="ptx")
    assert "ld.global" in out


def test_inspect_shows_the_descriptor_ops_and_their_lowering():
    """desc.load / desc.store reach the IR as desc_load / desc_store; a target without TMA (the CPU) lowers them
    to masked loads and stores in the lower_descriptors stage before the optimizer runs."""
    x = random_array(3, (20, 24), "float32")
    y = np.zeros_like(x)
    info = scale_kernel.inspect(x, y, 20, 24, BM=16, BN=8)
    stages = list(info.stages)
    assert stages[:2] == ["lowered", "lower_descriptors"]
    lowered = info.stages["lowered"]
    assert lowered.count("desc_load ") == 1 and lowered.count("desc_store ") == 1
    assert 'padding = "zero"' in lowered and " load " not in lowered
    assert "desc_" not in info.ir and " load " in info.ir and "store " in info.ir


def test_inspect_shows_the_descriptor_atomic_and_its_lowering():
    """desc.atomic_add reaches the IR as desc_atomic; the CPU lowers it to the masked atomic_rmw."""
    x = np.zeros((4, 16, 16), np.float32)
    out = np.zeros((20, 24), np.float32)
    info = histogram_rows_kernel.inspect(tegula.TensorDescriptor.from_tensor(x.reshape(64, 16), [8, 16]),
                                         tegula.TensorDescriptor.from_tensor(out, [8, 16]), 64, BM=8, BN=16)
    assert info.stages["lowered"].count("desc_atomic ") == 1 and 'op = "add"' in info.stages["lowered"]
    assert "desc_atomic" not in info.ir and 'atomic_rmw' in info.ir


@tegula.jit
def annotated_descriptor_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    desc: tl.tensor_descriptor = tl.make_tensor_descriptor(x_ptr, [n], [1], [BLOCK])
    tl.static_assert(isinstance(desc, tl.tensor_descriptor))
    tl.static_assert(not isinstance(n, tl.tensor_descriptor))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, desc.load([tl.program_id(0) * BLOCK]) * 2.0, mask=offs < n)


def test_tl_tensor_descriptor_is_the_type_of_descriptors(backend):
    n = 100  # a ragged last block, zero-filled by the descriptor
    x = np.random.default_rng(12).standard_normal(n).astype(np.float32)
    y = backend.zeros(n, np.float32)
    annotated_descriptor_kernel[(tegula.cdiv(n, 32),)](backend.array(x), y, n, BLOCK=32)
    np.testing.assert_array_equal(backend.numpy(y), x * 2)


def test_host_descriptor_must_lie_in_its_base():
    """A shape or strides that reach past the base would have a kernel read and write memory the base
    does not hold: refused where the descriptor is made. Shapes are ints (not truncated) and >= 0; an
    empty array describes itself whatever strides NumPy gives it."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(ValueError, match=re.escape(
            "a TensorDescriptor of shape [1000000000, 4] and strides [4, 1] reaches elements 0 to 3999999999 "
            "from its base's first, but its base (shape [3, 4]) holds elements 0 to 11")):
        tegula.TensorDescriptor(x, [10**9, 4], [4, 1], [4, 4])
    with pytest.raises(ValueError, match=re.escape("holds elements 0 to 11")):
        tegula.TensorDescriptor(x, [3, 4], [5, 1], [4, 4])
    tegula.TensorDescriptor(x.reshape(-1), [2, 6], [6, 1], [2, 8])  # another view of the same 12 elements
    with pytest.raises(ValueError, match=re.escape("the shape [-3, 4] of a TensorDescriptor must hold sizes >= 0")):
        tegula.TensorDescriptor(x, [-3, 4], [4, 1], [4, 4])
    with pytest.raises(TypeError, match=re.escape("the block_shape of a TensorDescriptor must be a list of ints, "
                                                  "got [4.7, 4]")):
        tegula.TensorDescriptor(x, [3, 4], [4, 1], [4.7, 4])
    with pytest.raises(TypeError, match="the shape of a TensorDescriptor must be a list of ints, got '34'"):
        tegula.TensorDescriptor(x, "34", [4, 1], [4, 4])
    empty = tegula.TensorDescriptor.from_tensor(np.zeros((0, 4), np.float32), [4, 4])
    assert empty.strides == [4, 1]
