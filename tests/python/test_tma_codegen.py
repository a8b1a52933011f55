"""Tensor descriptors on sm_90: the CUDA backend copies their blocks with the TMA (backends/cuda/codegen_tma.cpp).

The generated code runs in the host CUDA emulator (cuda_emulator.py), which models the bulk tensor copies, the
mbarriers' phases and transaction bytes and the async proxy, against NumPy: loads and stores over ragged edges,
NaN padding, host TensorDescriptor arguments, 1-D and 3-D blocks and a matmul whose operands and result move
through descriptors. The text checks pin the structure (one mbarrier per copy, expect_tx of the block's bytes,
parity, fence before the store); breaking the phase or the expect_tx must make a run fail. Which ops take the
pointer form instead (sm_80, debug mode, strides not known to be multiples of 16 bytes) is checked too.

On a GPU, test_tensor_descriptor.py runs the same paths for real; test_tma_gpu.py reads their SASS and runs them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import EmulatorError, compile_cuda, emulate, require_emulator
from test_tensor_descriptor import random_array, scale_kernel


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


def run_scale(M, N, BM, BN, dtype, edit_source=None, seed=0):
    x = random_array(M * N, (M, N), dtype)
    y = np.zeros((M, N), dtype)
    compiled = emulate(scale_kernel, (-(-M // BM), -(-N // BN)), x, y, M, N, BM=BM, BN=BN, edit_source=edit_source,
                       seed=seed)
    return compiled, y, (x * 2 + 1).astype(dtype)


@pytest.mark.parametrize("dtype,shape,block", [
    ("float32", (40, 48), (16, 16)),   # ragged rows: the last box is zero-filled, its store clipped
    ("float16", (37, 80), (16, 32)),   # ragged both ways
    ("int32", (64, 32), (32, 32)),     # exact
])
def test_copy_through_tma(dtype, shape, block):
    compiled, got, want = run_scale(*shape, *block, dtype)
    assert len(compiled.tensor_maps) == 2, compiled.tensor_maps
    np.testing.assert_array_equal(got, want)


def test_generated_structure():
    compiled, _, _ = run_scale(40, 48, 16, 16, "float32")
    src = compiled.source
    kernel = src[src.index("---- kernel ----"):]
    # Two maps after the kernel's own parameters, encoded by the launcher from x_ptr, M, N and y_ptr.
    assert re.search(r"int arg_N, const __grid_constant__ TgTensorMap tg_map0, "
                     r"const __grid_constant__ TgTensorMap tg_map1\)", kernel), kernel
    assert compiled.tensor_maps[0] == {"base": "x_ptr", "shape": ["M", "N"], "strides": ["N", 1],
                                       "box": [16, 16], "swizzle": 0, "fill": "zero"}
    assert compiled.tensor_maps[1]["base"] == "y_ptr"
    # One mbarrier for the kernel's loads, after everything else in shared memory, initialized by one thread.
    assert re.search(r"const unsigned tg_tma_bar = tg_shared_address\(tg_smem\) \+ (\d+);\s*"
                     r"unsigned tg_tma_phase = 0;\s*if \(threadIdx.x == 0\) \{\s*tg_mbar_init\(tg_tma_bar, 1\);\s*"
                     r"tg_fence_mbar_init\(\);\s*\}\s*__syncthreads\(\);", kernel), kernel
    assert int(re.search(r"tg_smem\) \+ (\d+);", kernel).group(1)) + 8 == compiled.shared_bytes
    # The load: a barrier, expect_tx of the block's 1024 bytes and the copy (innermost coordinate first) by one
    # thread, every thread waiting for the current phase's parity and flipping it.
    load = re.search(r"__syncthreads\(\);\s*float\* const (s\d+) = .*\n.*\n\s*if \(threadIdx.x == 0\) \{\s*"
                     r"tg_mbar_arrive_expect_tx\(tg_tma_bar, 1024\);\s*"
                     r"tg_tma_load_2d\(tg_shared_address\(\1\), &tg_map0, tg_tma_bar, v\d+, v\d+\);\s*\}\s*"
                     r"tg_mbar_wait\(tg_tma_bar, tg_tma_phase\);.*\n\s*tg_tma_phase \^= 1;", kernel)
    assert load, kernel
    # The store: staged, fenced for the async proxy, a barrier, one thread stores and commits; it waits until the
    # block is out of shared memory only before the CTA's shared memory goes (not for the writes: a later load
    # of the program waits for those).
    store = re.search(r"tg_fence_proxy_async\(\);.*\n\s*__syncthreads\(\);\s*if \(threadIdx.x == 0\) \{\s*"
                      r"tg_tma_store_2d\(&tg_map1, tg_shared_address\(s\d+\), v\d+, v\d+\);\s*"
                      r"tg_bulk_commit\(\);[^\n]*\n\s*\}\s*if \(threadIdx.x == 0\) tg_bulk_wait_read<0>\(\);", kernel)
    assert store, kernel
    assert "ld.global" not in kernel and "tg_vec" not in kernel, "part of the copy took the pointer form"


def test_wrong_phase_fails():
    # Waiting for parity 1 passes at once on a fresh barrier: threads read the block before it lands.
    def wrong_parity(src):
        return src.replace("tg_mbar_wait(tg_tma_bar, tg_tma_phase)", "tg_mbar_wait(tg_tma_bar, tg_tma_phase ^ 1)")

    try:
        _, got, want = run_scale(40, 48, 16, 16, "float32", edit_source=wrong_parity)
    except EmulatorError:
        return
    assert not np.array_equal(got, want), "a wait for the wrong phase went unnoticed"


def test_missing_expect_tx_fails():
    # Without the arrival that announces the bytes, the phase never completes (the copy's bytes overshoot).
    def no_expect_tx(src):
        return re.sub(r"tg_mbar_arrive_expect_tx\(tg_tma_bar, \d+\);", "", src)

    with pytest.raises(EmulatorError, match="mbarrier"):
        run_scale(40, 48, 16, 16, "float32", edit_source=no_expect_tx)


def test_too_few_expect_tx_bytes_fail():
    def fewer_bytes(src):
        return src.replace("tg_mbar_arrive_expect_tx(tg_tma_bar, 1024);", "tg_mbar_arrive_expect_tx(tg_tma_bar, 512);")

    with pytest.raises(EmulatorError):
        run_scale(40, 48, 16, 16, "float32", edit_source=fewer_bytes)


@tegula.jit
def nan_pad_kernel(x_ptr, out_ptr, M, N, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option="nan")
    out = tl.make_tensor_descriptor(out_ptr, [BM, BN], [BN, 1], [BM, BN])
    out.store([0, 0], desc.load([off_m, off_n]))


def test_nan_padding_and_negative_offsets():
    M, N, BM, BN = 20, 48, 16, 32
    x = random_array(3, (M, N), "float32")
    out = np.zeros((BM, BN), np.float32)
    compiled = emulate(nan_pad_kernel, (1,), x, out, M, N, -5, 32, BM=BM, BN=BN)
    assert compiled.tensor_maps[0]["fill"] == "nan"
    want = np.full((BM, BN), np.nan, np.float32)
    want[5:, :16] = x[0:11, 32:48]
    np.testing.assert_array_equal(out, want)


def test_an_innermost_offset_off_16_bytes_takes_the_pointer_form():
    # The TMA needs a box's first address 16-byte aligned: a column offset of 24 floats is, but a specialization
    # only knows multiples of 16, so the load takes the pointer form (the H200 stops a TMA copy at 3 floats with
    # "illegal instruction"). Same result, NaN padding included; the layouts text says why.
    M, N, BM, BN = 20, 32, 16, 16
    x = random_array(3, (M, N), "float32")
    for off_n in (24, 3):
        out = np.zeros((BM, BN), np.float32)
        compiled = emulate(nan_pad_kernel, (1,), x, out, M, N, -5, off_n, BM=BM, BN=BN)
        assert [m["base"] for m in compiled.tensor_maps] == ["out_ptr"], compiled.tensor_maps
        assert re.search(r"desc_load at .*: pointer form, the innermost offset is not known to be a multiple of 4 "
                         r"elements \(16 bytes; the TMA needs it\)", compiled.layouts), compiled.layouts
        want = np.full((BM, BN), np.nan, np.float32)
        cols = min(BN, N - off_n)
        want[5:, :cols] = x[0:11, off_n:off_n + cols]
        np.testing.assert_array_equal(out, want)


def test_the_emulator_stops_a_copy_off_16_bytes():
    # What the H200 does with such a copy (an illegal instruction), the emulator reports.
    def shifted(src):
        return re.sub(r"(tg_tma_load_2d\(.*?, tg_tma_bar, )(v\d+)", r"\1\2 + 1", src, count=1)

    with pytest.raises(EmulatorError, match="innermost coordinate .* not a multiple of 16 bytes"):
        run_scale(40, 48, 16, 16, "float32", edit_source=shifted)


@tegula.jit
def host_copy_kernel(src, dst, scale):
    tile = src.load([tl.program_id(0) * 8, 16])
    dst.store([tl.program_id(0) * 8, 16], tile * scale)


def test_host_descriptors():
    M, N = 20, 48
    x = random_array(4, (M, N), "float32")
    y = np.zeros_like(x)
    TD = tegula.TensorDescriptor
    compiled = emulate(host_copy_kernel, (3,), TD.from_tensor(x, [8, 16]), TD.from_tensor(y, [8, 16]), 1.5)
    assert [m["base"] for m in compiled.tensor_maps] == ["src__base", "dst__base"]
    want = np.zeros_like(x)
    want[:, 16:32] = x[:, 16:32] * 1.5
    np.testing.assert_array_equal(y, want)


@tegula.jit
def rank1_kernel(x_ptr, y_ptr, n, B: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [n], [1], [B])
    dst = tl.make_tensor_descriptor(y_ptr, [n], [1], [B])
    dst.store([tl.program_id(0) * B], src.load([tl.program_id(0) * B]) + 1)


@tegula.jit
def rank3_kernel(x_ptr, y_ptr, A, M, N, BA: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [A, M, N], [M * N, N, 1], [BA, BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, [A, M, N], [M * N, N, 1], [BA, BM, BN])
    offs = [tl.program_id(0) * BA, tl.program_id(1) * BM, 0]
    dst.store(offs, src.load(offs) - 1)


def test_rank1_and_rank3_blocks():
    x = random_array(5, (200,), "float32")
    y = np.zeros_like(x)
    compiled = emulate(rank1_kernel, (4,), x, y, 200, B=64)
    assert "tg_tma_load_1d" in compiled.source and "tg_tma_store_1d" in compiled.source
    np.testing.assert_array_equal(y, x + 1)

    # M * N is computed in the kernel: the launcher multiplies the arguments as the kernel does (32 bits), and
    # N (16, specialized divisible by 16) makes it a multiple of 16 bytes, so rank 3 takes the TMA.
    x3 = random_array(6, (3, 10, 16), "float32")
    y3 = np.zeros_like(x3)
    compiled = emulate(rank3_kernel, (2, 2), x3, y3, 3, 10, 16, BA=2, BM=8, BN=16)
    assert [m["strides"] for m in compiled.tensor_maps] == [["M*N@32", "N", 1]] * 2
    assert "tg_tma_load_3d" in compiled.source and "tg_tma_store_3d" in compiled.source
    np.testing.assert_array_equal(y3, x3 - 1)
    # With N = 10 (not specialized), M * N floats may not be a multiple of 16 bytes: the pointer form.
    x4 = random_array(7, (3, 10, 10), "float32")
    y4 = np.zeros_like(x4)
    compiled = emulate(rank3_kernel, (2, 2), x4, y4, 3, 10, 10, BA=2, BM=8, BN=16)
    assert compiled.tensor_maps == []
    np.testing.assert_array_equal(y4, x4 - 1)


@tegula.jit
def rank3_strided_kernel(x_ptr, y_ptr, A, M, N, sa, BA: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [A, M, N], [sa, N, 1], [BA, BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, [A, M, N], [sa, N, 1], [BA, BM, BN])
    offs = [tl.program_id(0) * BA, tl.program_id(1) * BM, 0]
    dst.store(offs, src.load(offs) - 1)


def test_rank3_through_tma():
    x = random_array(6, (3, 10, 16), "float32")
    y = np.zeros_like(x)
    compiled = emulate(rank3_strided_kernel, (2, 2), x, y, 3, 10, 16, 160, BA=2, BM=8, BN=16)
    assert "tg_tma_load_3d" in compiled.source and "tg_tma_store_3d" in compiled.source
    np.testing.assert_array_equal(y, x - 1)


@tegula.jit
def desc_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([off_m, k * BK])
        b = b_desc.load([k * BK, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc)


def test_descriptor_matmul():
    # Ragged M, N and K: zero-filled boxes keep the products exact, clipped stores keep C's edges.
    M, N, K, BM, BN, BK = 80, 96, 80, 64, 64, 32
    a = random_array(7, (M, K), "float16")
    b = random_array(8, (K, N), "float16")
    c = np.zeros((M, N), np.float32)
    compiled = emulate(desc_matmul_kernel, (2, 2), a, b, c, M, N, K, BM=BM, BN=BN, BK=BK)
    assert len(compiled.tensor_maps) == 3
    assert "wgmma" in compiled.source
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)


def test_descriptor_matmul_wrong_phase_fails():
    # One stage: the loads keep their single copies (the ring's parity is test_tma_ring.py's). Two loads per
    # iteration: the parity alternates between them and across iterations. Never flipping it makes every other
    # wait pass before its copy lands.
    M, N, K, BM, BN, BK = 64, 64, 96, 64, 64, 32
    a = random_array(9, (M, K), "float16")
    b = random_array(10, (K, N), "float16")
    c = np.zeros((M, N), np.float32)
    try:
        emulate(desc_matmul_kernel, (1, 1), a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_stages=1,
                edit_source=lambda src: src.replace("tg_tma_phase ^= 1;", ""))
    except EmulatorError:
        return
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert not np.allclose(c, want, rtol=1e-3, atol=1e-3), "a phase that never flips went unnoticed"


# --- which ops take the TMA ------------------------------------------------------------------


def compiled_for(arch, *args, kernel=scale_kernel, **kw):
    compiled, _ = compile_cuda(kernel, args, kw, arch=arch)
    return compiled


def test_pointer_form_elsewhere():
    x = np.zeros((40, 48), np.float32)
    sm80 = compiled_for(80, x, x, 40, 48, BM=16, BN=16)
    assert sm80.tensor_maps == [] and "tg_tma" not in sm80.source and "desc_load" not in sm80.stages["optimized"]
    # A row stride not known to be a multiple of 16 bytes (36 floats: divisibility 4).
    y = np.zeros((40, 36), np.float32)
    odd = compiled_for(90, y, y, 40, 36, BM=16, BN=16)
    assert odd.tensor_maps == [] and "tg_tma" not in odd.source
    # Block rows of 8 bytes.
    narrow = compiled_for(90, x, x, 40, 48, BM=16, BN=2)
    assert narrow.tensor_maps == []
    tma = compiled_for(90, x, x, 40, 48, BM=16, BN=16)
    assert len(tma.tensor_maps) == 2 and "desc_load" in tma.stages["optimized"]
    # The layouts text (inspect) says which path each op took, and why not the TMA.
    assert re.search(r"desc_load at .*test_tensor_descriptor.py:\d+:\d+: TMA through tg_map0", tma.layouts), tma.layouts
    assert re.search(r"desc_store at .*: TMA through tg_map1", tma.layouts), tma.layouts
    assert re.search(r"desc_load at .*: pointer form, the stride of dimension 0 is not known to be a multiple of "
                     r"16 bytes", odd.layouts), odd.layouts
    assert "desc_" not in sm80.layouts


def test_debug_kernels_keep_bounds_checks():
    x = np.zeros((40, 48), np.float32)
    request, _ = scale_kernel._request_for(x, x, 40, 48, BM=16, BN=16)
    options = tegula._C.CompileOptions(backend="cuda", cuda_arch=90, debug=True, keep_stages=True)
    compiled = tegula._C.compile(request, options)
    assert compiled.tensor_maps == [] and "tg_tma" not in compiled.source


@tegula.jit
def store_then_load_kernel(x_ptr, y_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, ROUNDS: tl.constexpr):
    """Each program writes its block of y through the TMA, then reads it back: it must see its own writes."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    z_desc = tl.make_tensor_descriptor(z_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    y_desc.store([off_m, 0], x_desc.load([off_m, 0]) * 2)
    for r in range(ROUNDS):
        y_desc.store([off_m, 0], y_desc.load([off_m, 0]) + 1)
    z_desc.store([off_m, 0], y_desc.load([off_m, 0]))


def test_a_load_after_a_tma_store_sees_it():
    # The store's thread waits only for the block to leave shared memory; the program's next load first waits for
    # the writes (tg_bulk_wait<0>), also in the next iteration of a loop that stores.
    M, N = 96, 64
    x = np.random.default_rng(9).standard_normal((M, N)).astype(np.float32)
    y, z = np.zeros_like(x), np.zeros_like(x)
    compiled = emulate(store_then_load_kernel, (3,), x, y, z, M, N, BM=32, BN=64, ROUNDS=3)
    want = x * 2
    for _ in range(3):
        want = want + np.float32(1)
    np.testing.assert_array_equal(z, want)
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    loop = kernel[kernel.index("for (unsigned long long k"):]
    assert re.search(r"if \(threadIdx.x == 0\) tg_bulk_wait<0>\(\);.*\n\s*__syncthreads\(\);", loop), loop
    # Without that wait the emulator lets a store's writes land after the next load (seed 1 of these).
    stale = []
    for seed in range(4):
        y, z = np.zeros_like(x), np.zeros_like(x)
        emulate(store_then_load_kernel, (3,), x, y, z, M, N, BM=32, BN=64, ROUNDS=3, seed=seed,
                edit_source=lambda src: re.sub(r"if \(threadIdx.x == 0\) tg_bulk_wait<0>\(\);", "", src))
        stale.append(not np.array_equal(z, want))
    assert any(stale), "no interleaving read a block before its store landed"


@tegula.jit
def flattened_heads_kernel(X, Y, Z, H, N, D: tl.constexpr, BM: tl.constexpr):
    """Triton's attention tutorial names its rows `Z * H * N_CTX` in the kernel."""
    rows = Z * H * N
    dx = tl.make_tensor_descriptor(X, [rows, D], [D, 1], [BM, D])
    dy = tl.make_tensor_descriptor(Y, [rows, D], [D, 1], [BM, D])
    start = tl.program_id(0) * BM
    dy.store([start, 0], dx.load([start, 0]) * 2)


def test_shape_computed_as_a_product_of_parameters():
    # The launcher multiplies Z * H * N as the kernel does (32-bit), so the block still moves through the TMA;
    # the last block sticks out of the rows and is clipped.
    Z, H, N, D, BM = 2, 3, 50, 32, 64
    x = random_array(np.random.default_rng(3), (Z * H * N, D), "float32")
    y = np.zeros_like(x)
    compiled = emulate(flattened_heads_kernel, (-(-Z * H * N // BM),), x, y, Z, H, N, D=D, BM=BM)
    assert "desc_load at" in compiled.layouts and "TMA through" in compiled.layouts, compiled.layouts
    assert [m["shape"] for m in compiled.tensor_maps] == [["Z*H*N@32", D]] * 2
    np.testing.assert_array_equal(y, x * 2)


def test_a_product_that_wraps_in_the_kernel_wraps_at_launch():
    # 50000 * 50000 * 1 overflows int32 in the kernel; the launcher computes the same negative size and refuses it.
    x = np.zeros((64, 32), np.float32)
    with pytest.raises(EmulatorError, match="refused"):
        emulate(flattened_heads_kernel, (1,), x, x.copy(), 50000, 50000, 1, D=32, BM=64)
