"""The TMA path on the GPU machine. The SASS tests compile descriptor kernels for sm_90a by NVRTC (as a launch on
an H200 compiles them) and find UTMALDG / UTMASTG, and HGMMA in the descriptor matmul; they need NVRTC and a
disassembler (sass_util: cuobjdump or nvdisasm) and skip, saying which is missing, without them. The run tests
launch the same kernels on an sm_90 GPU through torch against NumPy (ragged edges, NaN padding, a matmul, an
empty grid, the launch error for an empty dimension); they skip without one. `pytest --backend cuda
tests/python/test_tensor_descriptor.py` runs the whole descriptor suite there too. The TMA ring of a descriptor
K loop (test_tma_ring.py) is read the same way (UTMALDG, HGMMA, mbarrier waits) and run against torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import sass_util
from cuda_emulator import compile_cuda
from test_tma_codegen import desc_matmul_kernel, nan_pad_kernel, scale_kernel
import matmul_tma
import tegula
import tegula.language as tl
from tegula import _C


@pytest.fixture(autouse=True)
def _nvrtc():
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def sass_of(kernel, args, constexprs, tmp_path, num_warps=4):
    compiled, _ = compile_cuda(kernel, args, constexprs, num_warps=num_warps, arch=90)
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    return compiled, sass_util.disassemble(cubin)


def test_descriptor_copy_uses_tma(tmp_path):
    x = np.zeros((256, 256), np.float16)
    compiled, sass = sass_of(scale_kernel, (x, x, 256, 256), {"BM": 64, "BN": 64}, tmp_path)
    assert len(compiled.tensor_maps) == 2
    assert "UTMALDG" in sass, "the descriptor load is not a TMA copy"
    assert "UTMASTG" in sass, "the descriptor store is not a TMA store"
    assert "SYNCS" in sass, "no mbarrier operations (SYNCS.*) in the TMA load"


def test_descriptor_matmul_uses_tma_and_hgmma(tmp_path):
    a = np.zeros((1024, 1024), np.float16)
    compiled, sass = sass_of(desc_matmul_kernel, (a, a, np.zeros((1024, 1024), np.float32), 1024, 1024, 1024),
                             {"BM": 128, "BN": 128, "BK": 64}, tmp_path)
    assert len(compiled.tensor_maps) == 3
    assert "UTMALDG" in sass, "the matmul's operands are not loaded by TMA"
    assert "HGMMA" in sass, "the matmul does not run on wgmma (HGMMA)"


def test_descriptor_atomic_add_is_a_tma_reduction(tmp_path):
    from test_tma_reduce import overlap_add_kernel
    x, out = np.zeros((4, 16, 32), np.float32), np.zeros((45, 80), np.float32)
    compiled, sass = sass_of(overlap_add_kernel, (x, out, 45, 80),
                             {"STEP_M": 9, "STEP_N": 20, "SHIFT_M": 0, "SHIFT_N": 0, "BM": 16, "BN": 32}, tmp_path)
    assert "tg_tma_reduce_add_2d" in compiled.source
    assert "UTMAREDG" in sass, [line for line in sass.splitlines() if "UTMA" in line or "RED" in line][:8]


def test_tma_ring_uses_tma_and_hgmma(tmp_path):
    a = np.zeros((1024, 1024), np.float16)
    compiled, sass = sass_of(matmul_tma.matmul_tma_kernel, (a, a, a, 1024, 1024, 1024), matmul_tma.DEFAULT_BLOCKS,
                             tmp_path, num_warps=8)
    assert "TMA ring: 3 stages" in compiled.source
    assert "UTMALDG" in sass, "the ring's blocks are not loaded by TMA"
    assert "HGMMA" in sass, "the ring's dot does not run on wgmma (HGMMA)"
    assert "SYNCS" in sass, "no mbarrier operations (SYNCS.*) in the ring"


def test_warp_specialized_ring_moves_registers(tmp_path):
    # The producer warpgroup gives registers back and the consumers take them: setmaxnreg in the PTX, its SASS
    # (USETMAXREG), and exactly the 168 registers per thread at launch the budgets were computed from (with
    # fewer the consumers' raise would wait forever).
    from test_tma_ring import ws_matmul_kernel

    a = np.zeros((1024, 1024), np.float16)
    compiled, sass = sass_of(ws_matmul_kernel, (a, a, np.zeros((1024, 1024), np.float32), 1024, 1024, 1024),
                             {"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "WS": True}, tmp_path, num_warps=8)
    ptx = compiled.asm["ptx"]
    assert "setmaxnreg.dec.sync.aligned.u32 24;" in ptx and "setmaxnreg.inc.sync.aligned.u32 240;" in ptx
    assert "USETMAXREG.DEALLOC" in sass and "USETMAXREG.TRY_ALLOC" in sass, "no register reallocation in the SASS"
    assert "UTMALDG" in sass and "HGMMA" in sass and "SYNCS" in sass
    assert "Used 168 registers" in compiled.asm["ptxas"], compiled.asm["ptxas"]
    assert " 0 bytes spill stores" in compiled.asm["ptxas"], compiled.asm["ptxas"]


def test_fp8_ring_reads_fp8_on_the_tensor_cores(tmp_path):
    # e4m3 blocks are read by wgmma as fp8 (QGMMA in the SASS), not widened to f16 first.
    import ml_dtypes

    import matmul_fp8

    a = np.zeros((1024, 1024), ml_dtypes.float8_e4m3fn)
    scale = np.ones(1, np.float32)
    compiled, sass = sass_of(matmul_fp8.matmul_fp8_kernel,
                             (a, a, np.zeros((1024, 1024), ml_dtypes.bfloat16), scale, scale, 1024, 1024, 1024),
                             matmul_fp8.DEFAULT_BLOCKS, tmp_path, num_warps=8)
    assert "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3" in compiled.asm["ptx"]
    assert "QGMMA" in sass and "HGMMA" not in sass, "the fp8 dot does not run as fp8 wgmma"
    assert "UTMALDG" in sass and "USETMAXREG" in sass
    assert " 0 bytes spill stores" in compiled.asm["ptxas"], compiled.asm["ptxas"]


def test_attention_ring_is_warp_specialized_wgmma(tmp_path):
    # The descriptor attention at the benchmark's blocks: K and V through the TMA ring, both dots on wgmma (the
    # second with P from registers), a producer warpgroup, registers moved, nothing spilled.
    import flash_attention_tma as fa

    q = np.zeros((1, 1, 256, 128), np.float16)
    lse = np.zeros((1, 1, 256), np.float32)
    compiled, sass = sass_of(fa.attention_tma_kernel, (q, q, q, q, lse, 1, 1, 256, 0.1),
                             {**fa.default_config(128)[0], "HEAD_DIM": 128, "CAUSAL": False, "TAIL": False}, tmp_path,
                             num_warps=8)
    assert compiled.layouts.count("TMA ring through") == 2, compiled.layouts
    assert "fed by a producer warpgroup" in compiled.layouts, compiled.layouts
    assert "one iteration late" in compiled.layouts, compiled.layouts
    assert "UTMALDG" in sass and "HGMMA" in sass and "USETMAXREG" in sass
    assert " 0 bytes spill stores" in compiled.asm["ptxas"], compiled.asm["ptxas"]


# --- runs on an sm_90 GPU ---------------------------------------------------------------------------------------


@pytest.fixture
def torch_sm90():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("needs an sm_90 GPU")
    return torch


@pytest.mark.parametrize("dtype,shape,block", [
    ("float32", (40, 48), (16, 16)), ("float16", (1000, 272), (64, 64)), ("int32", (257, 32), (128, 32))])
def test_copy_runs(torch_sm90, dtype, shape, block):
    torch = torch_sm90
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    xt = torch.from_numpy(x).cuda()
    yt = torch.zeros_like(xt)
    grid = (-(-shape[0] // block[0]), -(-shape[1] // block[1]))
    scale_kernel[grid](xt, yt, shape[0], shape[1], BM=block[0], BN=block[1])
    np.testing.assert_array_equal(yt.cpu().numpy(), (x * 2 + 1).astype(dtype))


def test_nan_padding_runs(torch_sm90):
    torch = torch_sm90
    x = np.random.default_rng(2).standard_normal((20, 32)).astype(np.float32)
    out = torch.zeros((16, 16), dtype=torch.float32, device="cuda")
    nan_pad_kernel[(1,)](torch.from_numpy(x).cuda(), out, 20, 32, -5, 24, BM=16, BN=16)
    want = np.full((16, 16), np.nan, np.float32)
    want[5:, :8] = x[0:11, 24:32]
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def test_descriptor_matmul_runs(torch_sm90):
    torch = torch_sm90
    M, N, K = 200, 272, 136
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    desc_matmul_kernel[(-(-M // 128), -(-N // 128))](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=8)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("M,N,K,stages,dtype", [
    (200, 272, 144, 3, "bfloat16"),    # ragged everywhere: zero-filled boxes, clipped stores
    (512, 384, 1024, 4, "float16"),    # the ring wraps many times
    (256, 256, 64, 4, "bfloat16"),     # one iteration, four stages
    (1000, 1008, 2000, 2, "bfloat16"),  # N and K multiples of 16 (the ring's rows), M and the blocks' edges not
])
def test_tma_ring_runs(torch_sm90, M, N, K, stages, dtype):
    torch = torch_sm90
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = torch.randn(M, K, device="cuda", generator=g).to(getattr(torch, dtype))
    b = torch.randn(K, N, device="cuda", generator=g).to(a.dtype)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    host = (np.zeros((M, K), np.float16), np.zeros((K, N), np.float16), np.zeros((M, N), np.float32))
    compiled, _ = compile_cuda(matmul_tma.matmul_tma_kernel, (*host, M, N, K), matmul_tma.DEFAULT_BLOCKS,
                               num_warps=8, num_stages=stages)
    assert f"TMA ring: {stages} stages" in compiled.source, compiled.layouts
    matmul_tma.matmul_tma(a, b, c, num_warps=8, num_stages=stages)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("M,N,K,BM,BN,warps,stages,dtype", [
    (1000, 1008, 2000, 128, 256, 8, 4, "bfloat16"),  # registers moved; ragged M and edges
    (4096, 4096, 512, 128, 256, 8, 3, "float16"),    # many programs, every multiprocessor busy
    (200, 272, 144, 64, 128, 4, 3, "bfloat16"),      # one consumer warpgroup
])
def test_warp_specialized_ring_runs(torch_sm90, M, N, K, BM, BN, warps, stages, dtype):
    from test_tma_ring import ws_matmul_kernel

    torch = torch_sm90
    g = torch.Generator(device="cuda").manual_seed(M + N + K + warps)
    a = torch.randn(M, K, device="cuda", generator=g).to(getattr(torch, dtype))
    b = torch.randn(K, N, device="cuda", generator=g).to(a.dtype)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    grid = (-(-M // BM) * -(-N // BN),)
    ws_matmul_kernel[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=64, GROUP_M=8, WS=True, num_warps=warps,
                           num_stages=stages)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("M,N,K,programs,dtype", [
    (1000, 1008, 2000, 7, "bfloat16"),   # 32 tiles on 7 programs: the producer runs on across tiles
    (4096, 4096, 1024, 132, "float16"),  # one program per multiprocessor
])
def test_warp_specialized_tile_loop_runs(torch_sm90, M, N, K, programs, dtype):
    # The benchmark's descriptor matmul (persistent, C in A's dtype: the producer feeds the ring across tiles).
    torch = torch_sm90
    g = torch.Generator(device="cuda").manual_seed(M + K + programs)
    a = torch.randn(M, K, device="cuda", generator=g).to(getattr(torch, dtype))
    b = torch.randn(K, N, device="cuda", generator=g).to(a.dtype)
    host = (np.zeros((M, K), np.float16), np.zeros((K, N), np.float16), np.zeros((M, N), np.float16))
    compiled, _ = compile_cuda(matmul_tma.matmul_tma_kernel, (*host, M, N, K), matmul_tma.DEFAULT_BLOCKS,
                               num_warps=8, num_stages=matmul_tma.DEFAULT_STAGES)
    assert "(in the tile loop of line" in compiled.layouts, compiled.layouts
    c = matmul_tma.matmul_tma(a, b, num_warps=8, programs=programs)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("M,N,K,dtype", [
    (1000, 1008, 2048, "float8_e4m3fn"),  # ragged tiles, 7 programs walking them
    (512, 768, 4096, "float8_e5m2"),
])
def test_fp8_matmul_runs(torch_sm90, M, N, K, dtype):
    import matmul_fp8

    torch = torch_sm90
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = torch.randn(M, K, device="cuda", generator=g).to(getattr(torch, dtype))
    b = torch.randn(N, K, device="cuda", generator=g).to(a.dtype)
    scale_a = torch.tensor([0.5], device="cuda")
    scale_b = torch.tensor([0.25], device="cuda")
    c = matmul_fp8.matmul_fp8(a, b, scale_a, scale_b, out_dtype=torch.float32, num_warps=8, programs=7)
    want = (a.double() @ b.double().T) * 0.125
    # Hopper's fp8 wgmma keeps fewer bits than fp32 in its running sum (its products are exact), as Triton's fp8
    # dot on sm_90 does by default (max_num_imprecise_acc 2**30): 0.25% of the largest result was seen at K = 2048.
    # A wrong layout or a stale stage is off by whole products.
    torch.testing.assert_close(c.double(), want, rtol=0, atol=2 ** -8 * want.abs().max().item())


def test_empty_grid_and_empty_dimension(torch_sm90):
    torch = torch_sm90
    x = torch.zeros((0, 48), dtype=torch.float32, device="cuda")
    scale_kernel[(0, 3)](x, x, 0, 48, BM=16, BN=16)  # nothing runs: no map is encoded
    with pytest.raises(ValueError, match="copies blocks of 'x_ptr' with the TMA.*0 elements"):
        scale_kernel[(1, 3)](x, x, 0, 48, BM=16, BN=16)


@pytest.mark.parametrize("B,H,S,D,causal,dtype,ws", [
    (2, 3, 1000, 128, False, "bfloat16", None),  # ragged S: blocks reach into the next head and are masked
    (2, 3, 1000, 128, True, "float16", None),
    (1, 4, 777, 64, False, "bfloat16", True),
    (1, 4, 777, 64, True, "bfloat16", False),
])
def test_attention_ring_runs(torch_sm90, B, H, S, D, causal, dtype, ws):
    import flash_attention_tma as fa

    torch = torch_sm90
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g).to(getattr(torch, dtype)) for _ in range(3))
    out, lse = fa.attention(q, k, v, causal=causal, num_warps=8, warp_specialize=ws)
    want_out, want_lse = fa.attention_reference(q, k, v, causal=causal)
    torch.testing.assert_close(out.float(), want_out.float(), rtol=1.6e-2, atol=1e-2)
    torch.testing.assert_close(lse, want_lse, rtol=0, atol=1e-3)


@pytest.mark.parametrize("M,N,BM,BN", [(45, 80, 16, 32), (130, 96, 32, 64)])
@pytest.mark.parametrize("shifts", [(0, 0), (3, 4), (0, 3)])
def test_descriptor_atomic_add_runs(torch_sm90, M, N, BM, BN, shifts):
    # desc.atomic_add through the TMA's bulk reduction (test_tma_reduce.py emulates it): blocks that overlap
    # their neighbours' and hang over the far edges of out (over every edge with shifts) add into it, against
    # float64 NumPy sums. Shifted blocks keep pointer atomics: a TMA reduction at a negative offset or a column
    # offset of 3 floats stops with "illegal instruction" (tools/hopper/tma_reduce_probe.py).
    from test_tma_reduce import overlap_add_kernel, overlap_reference
    torch = torch_sm90
    steps = (BM // 2 + 1, BN // 2 + 4)
    grid = (-(-(M + 4) // steps[0]), -(-(N + 4) // steps[1]))
    rng = np.random.default_rng(M + N)
    x = rng.standard_normal((grid[0] * grid[1], BM, BN)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    want = overlap_reference(out, x, (*steps, grid[1]), shifts)
    out_t = torch.from_numpy(out).cuda()
    overlap_add_kernel[grid](torch.from_numpy(x).cuda(), out_t, M, N, STEP_M=steps[0], STEP_N=steps[1],
                             SHIFT_M=shifts[0], SHIFT_N=shifts[1], BM=BM, BN=BN)
    np.testing.assert_allclose(out_t.cpu().numpy(), want, rtol=1e-5, atol=1e-5)


@tegula.jit
def shifted_store_kernel(x_ptr, out_ptr, M, N, SHIFT_M: tl.constexpr, SHIFT_N: tl.constexpr, BM: tl.constexpr,
                         BN: tl.constexpr):
    # Program (i, j) stores its block of x at (i * BM - SHIFT_M, j * BN - SHIFT_N): with shifts the first row
    # and column of programs start before out.
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    x = tl.load(x_ptr + pid * BM * BN + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    out.store([tl.program_id(0) * BM - SHIFT_M, tl.program_id(1) * BN - SHIFT_N], x)


@pytest.mark.parametrize("shifts", [(0, 0), (3, 4), (5, 0)])
def test_descriptor_store_before_the_tensor_runs(torch_sm90, shifts):
    # A TMA store at a negative coordinate stops with "illegal instruction" on the H200: the kernel checks its
    # offsets at run time and stores those blocks through pointers, the others through the TMA.
    torch = torch_sm90
    M, N, BM, BN = 45, 80, 16, 32
    grid = (-(-(M + shifts[0]) // BM), -(-(N + shifts[1]) // BN))
    rng = np.random.default_rng(11)
    x = rng.standard_normal((grid[0] * grid[1], BM, BN)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    want = out.copy()
    for p in range(grid[0] * grid[1]):
        r0, c0 = (p // grid[1]) * BM - shifts[0], (p % grid[1]) * BN - shifts[1]
        rows, cols = slice(max(r0, 0), min(r0 + BM, M)), slice(max(c0, 0), min(c0 + BN, N))
        want[rows, cols] = x[p, rows.start - r0:rows.stop - r0, cols.start - c0:cols.stop - c0]
    out_t = torch.from_numpy(out).cuda()
    shifted_store_kernel[grid](torch.from_numpy(x).cuda(), out_t, M, N, SHIFT_M=shifts[0], SHIFT_N=shifts[1], BM=BM,
                               BN=BN)
    np.testing.assert_array_equal(out_t.cpu().numpy(), want)
