"""Triton 3.2/3.3's experimental descriptor API (tegula.experimental_descriptor, tl._experimental_descriptor_load
/ _store, tl.extra.cuda.experimental_device_tensormap_create1d/2d) against NumPy on the backend under test:
host- and kernel-created descriptors, masked tails, zero fill and clipped stores, a persistent matmul as
PyTorch 2.6 Inductor's TMA template writes it, and the errors."""

import ml_dtypes
import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.experimental_descriptor import (TMA_DESC_SIZE, create_1d_tma_descriptor, create_2d_tma_descriptor)

DTYPES = {"fp16": (np.float16, tl.float16), "bf16": (ml_dtypes.bfloat16, tl.bfloat16),
          "fp32": (np.float32, tl.float32)}


def rand(seed, shape, dtype):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32).astype(dtype)


def host_desc(backend, x, blocks):
    """A host descriptor of the device array `x`, its bytes where the kernel can read them."""
    size = x.element_size() if hasattr(x, "element_size") else np.dtype(x.dtype).itemsize  # torch or NumPy
    make = create_2d_tma_descriptor if len(x.shape) == 2 else create_1d_tma_descriptor
    return backend.array(make(backend.address(x), *x.shape, *blocks, size))


@tegula.jit
def copy_2d(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, DT: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    x = tl._experimental_descriptor_load(src, [pm * BM - 8, pn * BN], [BM, BN], DT)
    tl._experimental_descriptor_store(dst, x, [pm * BM - 8, pn * BN])


@pytest.mark.parametrize("name", DTYPES)
def test_host_descriptors_2d_shifted_blocks(backend, name):
    """Blocks shifted 8 rows up: rows above 0 read zero and are not written, ragged tails are clipped."""
    dtype, DT = DTYPES[name]
    M, N, BM, BN = 45, 24, 16, 16
    x = rand(1, (M, N), dtype)
    src, dst = backend.array(x), backend.full((M, N), -7, dtype)
    grid = (tegula.cdiv(M + 8, BM), tegula.cdiv(N, BN))
    copy_2d[grid](host_desc(backend, src, (BM, BN)), host_desc(backend, dst, (BM, BN)), M, N, BM=BM, BN=BN, DT=DT)
    np.testing.assert_array_equal(backend.numpy(dst), x)


@tegula.jit
def padded_block(src, out, off, B: tl.constexpr):
    x = tl._experimental_descriptor_load(src, [off], [B], tl.float32)
    tl.store(out + tl.arange(0, B), x)


@pytest.mark.parametrize("off", [0, 40, 90, -20])
def test_1d_out_of_bounds_reads_zero(backend, off):
    n, B = 100, 32
    x = rand(2, n, np.float32)
    out = backend.full(B, np.nan, np.float32)
    padded_block[(1,)](host_desc(backend, backend.array(x), (B,)), out, off, B=B)
    want = np.array([x[i] if 0 <= i < n else 0 for i in range(off, off + B)], np.float32)
    np.testing.assert_array_equal(backend.numpy(out), want)


@tegula.jit
def in_kernel_1d(x_ptr, y_ptr, ws, n, B: tl.constexpr, TMA_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    dx = ws + pid * 2 * TMA_SIZE  # a workspace of two descriptors a program, as Inductor's
    dy = dx + TMA_SIZE
    tl.extra.cuda.experimental_device_tensormap_create1d(dx, x_ptr, B, n, x_ptr.dtype.element_ty)
    tl.extra.cuda.experimental_device_tensormap_create1d(desc_ptr=dy, global_address=y_ptr, load_size=B,
                                                         global_size=n, element_ty=y_ptr.dtype.element_ty)
    tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(dx)
    tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(dy)
    v = tl._experimental_descriptor_load(dx, [pid * B], [B], x_ptr.dtype.element_ty)
    tl._experimental_descriptor_store(dy, v * 2, [pid * B])


@pytest.mark.parametrize("name", DTYPES)
def test_in_kernel_1d_per_program_workspace(backend, name):
    dtype, _ = DTYPES[name]
    n, B = 203, 64
    x = rand(3, n, dtype)
    y = backend.full(n, 5, dtype)
    grid = tegula.cdiv(n, B)
    ws = backend.zeros(grid * 2 * TMA_DESC_SIZE, np.uint8)
    in_kernel_1d[(grid,)](backend.array(x), y, ws, n, B=B, TMA_SIZE=TMA_DESC_SIZE)
    np.testing.assert_array_equal(backend.numpy(y), (x.astype(np.float32) * 2).astype(dtype))


@tegula.jit
def persistent_tma_mm(a_ptr, b_ptr, c_ptr, M, N, K, ws_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr, TMA_SIZE: tl.constexpr):
    # PyTorch 2.6 Inductor's persistent_tma_mm template (A and B row-major), its descriptors made on the device.
    start_pid = tl.program_id(0)
    workspace_base = ws_ptr + start_pid * 3 * TMA_SIZE
    a_desc_ptr = workspace_base
    b_desc_ptr = workspace_base + TMA_SIZE
    c_desc_ptr = workspace_base + 2 * TMA_SIZE
    tl.extra.cuda.experimental_device_tensormap_create2d(desc_ptr=a_desc_ptr, global_address=a_ptr,
                                                         load_size=[BLOCK_M, BLOCK_K], global_size=[M, K],
                                                         element_ty=a_ptr.dtype.element_ty)
    tl.extra.cuda.experimental_device_tensormap_create2d(desc_ptr=b_desc_ptr, global_address=b_ptr,
                                                         load_size=[BLOCK_K, BLOCK_N], global_size=[K, N],
                                                         element_ty=b_ptr.dtype.element_ty)
    tl.extra.cuda.experimental_device_tensormap_create2d(desc_ptr=c_desc_ptr, global_address=c_ptr,
                                                         load_size=[BLOCK_M, BLOCK_N], global_size=[M, N],
                                                         element_ty=c_ptr.dtype.element_ty)
    tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(a_desc_ptr)
    tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(b_desc_ptr)
    tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(c_desc_ptr)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_tiles = num_pid_m * tl.cdiv(N, BLOCK_N)
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        offs_am = (tile_id % num_pid_m) * BLOCK_M
        offs_bn = (tile_id // num_pid_m) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(0, tl.cdiv(K, BLOCK_K)):
            offs_k = ki * BLOCK_K
            a = tl._experimental_descriptor_load(a_desc_ptr, [offs_am, offs_k], [BLOCK_M, BLOCK_K],
                                                 a_ptr.dtype.element_ty)
            b = tl._experimental_descriptor_load(b_desc_ptr, [offs_k, offs_bn], [BLOCK_K, BLOCK_N],
                                                 b_ptr.dtype.element_ty)
            acc += tl.dot(a, b)
        tl._experimental_descriptor_store(c_desc_ptr, acc.to(c_ptr.dtype.element_ty), [offs_am, offs_bn])


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32"])
def test_persistent_tma_matmul(backend, name):
    dtype, _ = DTYPES[name]
    M, N, K, sms = 70, 48, 56, 3  # ragged in every dimension: K's tail reads zeros
    a, b = rand(4, (M, K), dtype), rand(5, (K, N), dtype)
    c = backend.full((M, N), np.nan, dtype)
    ws = backend.zeros(sms * 3 * TMA_DESC_SIZE, np.uint8)
    persistent_tma_mm[(sms,)](backend.array(a), backend.array(b), c, M, N, K, ws, BLOCK_M=32, BLOCK_N=32,
                              BLOCK_K=16 if name == "fp32" else 32, NUM_SMS=sms, TMA_SIZE=TMA_DESC_SIZE)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = {"fp16": 2e-2, "bf16": 1e-1, "fp32": 1e-2}[name]  # fp32 may be TF32 on a GPU
    np.testing.assert_allclose(backend.numpy(c).astype(np.float64), want, rtol=tol, atol=tol)


@tegula.jit
def via_make_descriptor(x_ptr, y_ptr, M, N, B: tl.constexpr):
    d = tl._experimental_make_tensor_descriptor(x_ptr, [M, N], [N, 1], [B, B])
    tl.store(y_ptr + tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :], d.load([0, 0]))


def test_experimental_make_tensor_descriptor(backend):
    x = rand(6, (5, 8), np.float32)
    y = backend.full((16, 16), np.nan, np.float32)
    via_make_descriptor[(1,)](backend.array(x), y, 5, 8, B=16)
    want = np.zeros((16, 16), np.float32)
    want[:5, :8] = x
    np.testing.assert_array_equal(backend.numpy(y), want)


# --- errors ---------------------------------------------------------------------------------------


def compile_error(backend, kernel, *args, **kw):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args, **kw)
    return str(info.value)


@tegula.jit
def load_from_int(d, out, B: tl.constexpr):
    tl.store(out + tl.arange(0, B), tl._experimental_descriptor_load(d, [0], [B], tl.float32))


def test_descriptor_that_is_not_a_pointer(backend):
    message = compile_error(backend, load_from_int, 12345, backend.zeros(16, np.float32), B=16)
    assert "E0404" in message and "pointer to a descriptor" in message


@tegula.jit
def bad_create(ws, x, n, WHICH: tl.constexpr):
    if WHICH == 0:
        tl.extra.cuda.experimental_device_tensormap_create2d(ws, x, [16], [n, n], x.dtype.element_ty)
    elif WHICH == 1:
        tl.extra.cuda.experimental_device_tensormap_create2d(ws, x, [16, 8], [n, n], tl.float16)
    elif WHICH == 2:
        tl.extra.cuda.experimental_device_tensormap_create1d(ws, x, 32, n, tl.float64)
    else:
        tl.extra.cuda.experimental_device_tensormap_create1d(ws, n, 32, n, tl.float32)


@pytest.mark.parametrize("which, code", [(0, "E0504"), (1, "E0406"), (2, "E0313"), (3, "E0404")])
def test_create_errors(backend, which, code):
    message = compile_error(backend, bad_create, backend.zeros(128, np.uint8), backend.zeros(64, np.float32), 8,
                            WHICH=which)
    assert f"error[{code}]" in message and "in `bad_create` at" in message  # located in the kernel's source


@tegula.jit
def store_scalar(d):
    tl._experimental_descriptor_store(d, 1.0, [0])


def test_store_needs_a_tile(backend):
    message = compile_error(backend, store_scalar, backend.zeros(128, np.uint8))
    assert "E0504" in message and "stores a tile" in message


@pytest.mark.parametrize("args, text", [
    ((64, 16, 16, 8), "elementSize must be 1, 2, or 4"),
    ((64, 16, 300, 4), "1 to 256"),
    ((64, 100, 4, 4), "block size too small"),
])
def test_host_1d_checks(args, text):
    with pytest.raises(ValueError, match=text):
        create_1d_tma_descriptor(*args)


def test_host_2d_checks():
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        create_2d_tma_descriptor(64, 10, 6, 8, 8, 2)
    with pytest.raises(ValueError, match="16-byte aligned"):
        create_2d_tma_descriptor(65, 10, 8, 8, 8, 2)
    d = create_2d_tma_descriptor(4096, 10, 8, 4, 8, 2)
    assert d.tma_desc_cpu_ptr() % 64 == 0 and d.nbytes == 128
    assert list(d.view(np.int64)[1:6]) == [4096, 2, 2, 10, 8]  # base, rank, element size, dim1, dim0


# --- the host API as Triton 3.0-3.3's code reaches it: driver.active.utils.fill_*_tma_descriptor into NumPy
# int8 arrays (Triton 3.0) or host addresses, objects with only tma_desc_cpu_ptr() (FBGEMM's
# TmaAutoTuneHelper.KernelParamWrapper), and "nv_tma_desc_type" in dir(tl) -----------------------------------

class ParamWrapper:
    """FBGEMM's TmaAutoTuneHelper.KernelParamWrapper: only tma_desc_cpu_ptr()."""

    def __init__(self, buffer):
        self.buffer = buffer

    def tma_desc_cpu_ptr(self):
        return self.buffer.ctypes.data


@tegula.jit
def scaled_gemm_tail(a_desc, b_desc, s_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl._experimental_descriptor_load(a_desc, [pm * BM, k * BK], [BM, BK], tl.float16)
        b = tl._experimental_descriptor_load(b_desc, [pn * BN, k * BK], [BN, BK], tl.float16)
        acc = tl.dot(a, b.T, acc)
    s = tl._experimental_descriptor_load(s_desc, [pm * BM], [BM], tl.float32)
    tl._experimental_descriptor_store(c_desc, (acc * s[:, None]).to(tl.float16), [pm * BM, pn * BN])


def signature_of(kernel, *args, **constexprs):
    """Triton's signature types of the specialization a launch with these arguments compiles."""
    from tegula.jit import Specialization
    request, _ = kernel._request_for(*args, **constexprs)
    return Specialization(kernel, request).signature


@pytest.mark.parametrize("wrapped", [False, True])
def test_host_descriptors_pass_by_value(backend, wrapped):
    """A host descriptor straight to the launch, as Triton 3.2/3.3 passes TmaDescKernelParam (signature type
    nvTmaDesc): a device receives its bytes by value, and a launch whose only arrays are descriptors runs where
    the memory they describe is. The same bytes in an array are a *u8 pointer, another specialization."""
    M, N, BM, BN = 45, 24, 16, 16
    x = rand(6, (M, N), np.float32)
    src, dst = backend.array(x), backend.full((M, N), -7, np.float32)
    descs = [create_2d_tma_descriptor(backend.address(a), M, N, BM, BN, 4) for a in (src, dst)]
    if wrapped:
        descs = [ParamWrapper(d) for d in descs]
    grid = (tegula.cdiv(M + 8, BM), tegula.cdiv(N, BN))
    copy_2d[grid](*descs, M, N, BM=BM, BN=BN, DT=tl.float32)
    np.testing.assert_array_equal(backend.numpy(dst), x)
    signature = signature_of(copy_2d, *descs, M, N, BM=BM, BN=BN, DT=tl.float32)
    assert signature["src"] == signature["dst"] == "nvTmaDesc"
    dst2 = backend.full((M, N), -7, np.float32)
    copied = [backend.array(np.asarray(create_2d_tma_descriptor(backend.address(a), M, N, BM, BN, 4)))
              for a in (src, dst2)]
    copy_2d[grid](*copied, M, N, BM=BM, BN=BN, DT=tl.float32)
    np.testing.assert_array_equal(backend.numpy(dst2), x)
    assert signature_of(copy_2d, *copied, M, N, BM=BM, BN=BN, DT=tl.float32)["src"] == "*u8"


def test_host_descriptors_filled_by_the_grid_function(backend):
    """Autotuned kernels of that era (FBGEMM's and applied-ai's TmaAutoTuneHelper) fill the descriptors in the
    grid function, once the config's block sizes are known: the launch reads them after it, as Triton's does. A
    descriptor nobody filled is refused at the launch, naming it, and a warmup without a grid does not read it."""
    from tegula.experimental_descriptor import TmaDescKernelParam, fill_1d_tma_descriptor
    n = 100
    x = rand(8, (n,), np.float32)
    src, out = backend.array(x), backend.full((32,), -1, np.float32)
    desc = TmaDescKernelParam()

    def grid(meta):
        fill_1d_tma_descriptor(backend.address(src), n, meta["B"], 4, desc.tma_desc_cpu_ptr())
        return (1,)

    padded_block[grid](desc, out, 90, B=32)
    np.testing.assert_array_equal(backend.numpy(out), np.concatenate([x[90:], np.zeros(22, np.float32)]))
    with pytest.raises(ValueError, match=r"E0711.*argument 'src' of kernel 'padded_block' is a host TMA descriptor "
                                         r"whose 128 bytes no Tegula helper wrote: fill them"):
        padded_block[(1,)](TmaDescKernelParam(), out, 0, B=32)
    padded_block.warmup(TmaDescKernelParam(), out, 0, B=32, grid=None)


@tegula.autotune(configs=[tegula.Config({"B": 16}), tegula.Config({"B": 64})], key=["n"])
@tegula.jit
def tuned_copy_1d(src, out, n, B: tl.constexpr):
    off = tl.program_id(0) * B
    x = tl._experimental_descriptor_load(src, [off], [B], tl.float32)
    tl.store(out + off + tl.arange(0, B), x, mask=off + tl.arange(0, B) < n)


def test_autotuned_kernel_whose_descriptor_the_grid_function_fills(backend):
    """FBGEMM's TmaAutoTuneHelper pattern: the descriptor comes first, unwritten, and each config's grid
    function fills it with that config's block; the tuner times on the descriptor's device."""
    from tegula.experimental_descriptor import TmaDescKernelParam, fill_1d_tma_descriptor
    n = 300
    x = rand(9, (n,), np.float32)
    src, out = backend.array(x), backend.full((n,), -1, np.float32)
    desc = TmaDescKernelParam()

    def grid(meta):
        fill_1d_tma_descriptor(backend.address(src), n, meta["B"], 4, desc.tma_desc_cpu_ptr())
        return (tegula.cdiv(n, meta["B"]),)

    tuned_copy_1d[grid](desc, out, n)
    np.testing.assert_array_equal(backend.numpy(out), x)
    assert tuned_copy_1d.best_config.kwargs["B"] in (16, 64)


@tegula.jit
def create_into(ws, x, n, B: tl.constexpr):
    tl.extra.cuda.experimental_device_tensormap_create1d(ws, x, B, n, x.dtype.element_ty)


def test_writing_a_host_descriptor_in_the_kernel_is_refused(backend):
    """The kernel's copy of a host descriptor is constant on a device; the in-kernel creates write workspaces."""
    x = backend.array(rand(10, (64,), np.float32))
    desc = create_1d_tma_descriptor(backend.address(x), 64, 32, 4)
    with pytest.raises(tegula.CompilationError, match=r"`ws` is a host TMA descriptor, passed by value: the kernel "
                                                       r"cannot write its bytes"):
        create_into[(1,)](desc, x, 64, B=32)


def test_host_descriptor_is_captured_by_value_in_a_cuda_graph(backend):
    """The bytes of the capture replay, whatever the descriptor holds later (Triton's by-value semantics)."""
    if backend.name != "cuda":
        pytest.skip("CUDA graphs")
    import torch
    M, N, BM, BN = 45, 24, 16, 16
    x, x2 = torch.randn(M, N, device="cuda"), torch.randn(M, N, device="cuda")
    y = torch.zeros_like(x)
    dx = create_2d_tma_descriptor(x.data_ptr(), M, N, BM, BN, 4)
    dy = create_2d_tma_descriptor(y.data_ptr(), M, N, BM, BN, 4)
    grid = (tegula.cdiv(M + 8, BM), tegula.cdiv(N, BN))
    copy_2d[grid](dx, dy, M, N, BM=BM, BN=BN, DT=tl.float32)  # compiled outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        copy_2d[grid](dx, dy, M, N, BM=BM, BN=BN, DT=tl.float32)
    dx.fill_(x2.data_ptr(), [M, N], [BM, BN], 4)
    y.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x)
    copy_2d[grid](dx, dy, M, N, BM=BM, BN=BN, DT=tl.float32)
    torch.cuda.synchronize()
    assert torch.equal(y, x2)


def test_host_descriptor_by_value_in_the_cuda_code():
    """The CUDA backend's code for nvTmaDesc parameters, run by the emulator on host memory: the kernel reads the
    descriptor from its __grid_constant__ parameter, with a masked tail."""
    from cuda_emulator import emulate, require_emulator
    require_emulator()
    M, N, BM, BN = 37, 32, 16, 32
    x = rand(7, (M, N), np.float32)
    y = np.full((M, N), -7, np.float32)
    dx = create_2d_tma_descriptor(x.ctypes.data, M, N, BM, BN, 4)
    dy = create_2d_tma_descriptor(y.ctypes.data, M, N, BM, BN, 4)
    compiled = emulate(copy_2d, (tegula.cdiv(M + 8, BM), 1), dx, dy, M, N, BM=BM, BN=BN, DT=tl.float32)
    assert "const __grid_constant__ TgValueBytes<128> tg_value0" in compiled.source
    np.testing.assert_array_equal(y, x)


def test_driver_fills_numpy_buffers_and_param_wrappers(backend):
    """Host memory, so the CPU backend only. A GEMM with tails in M, N and K (zero-filled reads, clipped stores) through descriptors the CPU driver
    writes into np.int8 buffers and into host addresses, passed as arrays and as tma_desc_cpu_ptr() objects."""
    if backend.name != "cpu":
        pytest.skip("descriptors in host memory: the CPU backend")
    from tegula.runtime import driver
    utils = driver.active.utils
    M, N, K, BM, BN, BK = 37, 40, 72, 16, 32, 32
    a, b = rand(3, (M, K), np.float16), rand(4, (N, K), np.float16)
    s = (np.random.default_rng(5).random(M) + 0.5).astype(np.float32)
    c = np.full((M, N), np.nan, np.float16)
    bufs = [np.empty(TMA_DESC_SIZE, dtype=np.int8) for _ in range(2)]
    utils.fill_2d_tma_descriptor(a.ctypes.data, M, K, BM, BK, 2, bufs[0])  # Triton 3.0: a NumPy buffer
    utils.fill_2d_tma_descriptor(b.ctypes.data, N, K, BN, BK, 2, bufs[1])
    wrapped = [np.zeros(TMA_DESC_SIZE, dtype=np.uint8) for _ in range(2)]
    utils.fill_1d_tma_descriptor(s.ctypes.data, M, BM, 4, wrapped[0].ctypes.data)  # Triton 3.1+: an address
    utils.fill_2d_tma_descriptor(c.ctypes.data, M, N, BM, BN, 2, wrapped[1].ctypes.data)
    grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
    scaled_gemm_tail[grid](bufs[0], bufs[1], ParamWrapper(wrapped[0]), ParamWrapper(wrapped[1]), M, N, K,
                           BM=BM, BN=BN, BK=BK)
    want = (a.astype(np.float64) @ b.astype(np.float64).T) * s[:, None]
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-3, atol=2e-2)
    assert "nv_tma_desc_type" in dir(tl) and tl.nv_tma_desc_type().element_ty == tl.uint8


def test_fill_and_wrapper_errors(backend):
    from tegula.experimental_descriptor import fill_1d_tma_descriptor, fill_2d_tma_descriptor
    x = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match=r"E0711.*holds 64 bytes"):
        fill_1d_tma_descriptor(x.ctypes.data, 64, 16, 4, np.empty(64, np.int8))
    ro = np.empty(TMA_DESC_SIZE, np.int8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"E0711.*read-only"):
        fill_2d_tma_descriptor(x.ctypes.data, 8, 8, 8, 8, 4, ro)
    with pytest.raises(TypeError, match=r"E0711.*must be an int"):
        fill_1d_tma_descriptor(x.ctypes.data, 64, 16, 4, "nowhere")

    class Bad:
        def tma_desc_cpu_ptr(self):
            return None

    if backend.name != "cpu":
        return
    with pytest.raises(TypeError, match=r"E0711.*argument 'src' of kernel 'padded_block'.*Bad"):
        padded_block[(1,)](Bad(), np.zeros(32, np.float32), 0, B=32)
