"""Multi-stage TMA rings on sm_90 (backends/cuda/codegen_tma_ring.cpp): a K loop whose wgmma dot reads two
descriptor loads keeps num_stages stages of blocks in flight, copied by one thread with the TMA into the swizzled
layout wgmma reads, with a full and an empty mbarrier per stage.

The generated code runs in the host CUDA emulator against NumPy (ragged M, N and K: zero-filled boxes; bf16 and
fp16; two to four stages; a K loop shorter than the ring; one and two warpgroups). The text checks pin the ring's
structure (barriers per stage, parity, no CTA barrier per iteration, the swizzled maps); breaking the parity, the
producer's wait for a free stage or the consumers' release must fail a run. Loops that do not fit keep the single
copies, and the layouts text (inspect) says why.

On a GPU, test_tma_gpu.py reads the ring's SASS and runs it against torch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import EmulatorError, compile_cuda, emulate, require_emulator
from ops_util import random, rng_for, to_f64
from test_tma_codegen import desc_matmul_kernel


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


@tegula.jit
def ring_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Triton's tutorial form: the induction variable steps by BK and is the offset itself; C in A's type."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def run(kernel, M, N, K, BM, BN, BK, dtype, warps, stages, out_dtype=np.float32, edit_source=None, seed=0):
    rng = rng_for("tma-ring", M, N, K, BM, BN, BK, dtype, warps, stages)
    a = random(rng, (M, K), dtype, low=-2, high=2)
    b = random(rng, (K, N), dtype, low=-2, high=2)
    c = np.zeros((M, N), out_dtype)
    grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
    compiled = emulate(kernel, grid, a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages,
                       edit_source=edit_source, seed=seed)
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6  # exact products, f32 sums
    return compiled, to_f64(c), want, tol


def assert_ring(compiled, stages):
    assert f"TMA ring: {stages} stages" in compiled.source, compiled.layouts
    assert compiled.layouts.count("TMA ring through") == 2, compiled.layouts


@pytest.mark.parametrize("M,N,K,BM,BN,BK,dtype,warps,stages", [
    (80, 96, 80, 64, 64, 32, "float16", 4, 2),        # ragged M, N, K; 64-byte rows of A (64-byte swizzle)
    (150, 144, 208, 64, 64, 32, "bfloat16", 4, 3),    # K tail of 16, the ring wraps twice
    (128, 128, 208, 128, 128, 64, "bfloat16", 8, 4),  # two warpgroups, B's rows in two 128-byte boxes
    (64, 64, 48, 64, 64, 32, "float16", 4, 4),        # two iterations, four stages: the loop is shorter than the ring
    (64, 64, 80, 64, 64, 16, "float16", 4, 3),        # 32-byte rows of A: the 32-byte swizzle
    (64, 96, 96, 64, 32, 32, "bfloat16", 4, 3),       # 64-byte rows of B, read [K][N]
])
def test_ring_matmul_is_exact(M, N, K, BM, BN, BK, dtype, warps, stages):
    compiled, c, want, tol = run(desc_matmul_kernel, M, N, K, BM, BN, BK, dtype, warps, stages)
    assert_ring(compiled, stages)
    bad = np.abs(c - want) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(c - want).max()}"


def test_ring_with_stepped_induction_and_narrow_result():
    M, N, K = 96, 80, 176
    compiled, c, want, _ = run(ring_matmul_kernel, M, N, K, 64, 64, 64, "bfloat16", 4, 3, out_dtype=_bf16())
    assert_ring(compiled, 3)
    np.testing.assert_allclose(c, want, rtol=2 ** -7, atol=1e-2)


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


@tegula.jit
def transposed_ring_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                           A_KM: tl.constexpr):
    """B stored [N, K] (Triton's persistent-matmul tutorial), read as b.T; with A_KM, A stored [K, M] too."""
    if A_KM:
        a_desc = tl.make_tensor_descriptor(a_ptr, [K, M], [M, 1], [BK, BM])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        if A_KM:
            a = a_desc.load([k * BK, off_m]).T
        else:
            a = a_desc.load([off_m, k * BK])
        b = b_desc.load([off_n, k * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([off_m, off_n], acc)


@pytest.mark.parametrize("a_km", [False, True], ids=["a_mk", "a_km"])
def test_ring_of_transposed_blocks(a_km):
    M, N, K, BM, BN, BK = 144, 80, 208, 64, 64, 64
    rng = rng_for("tma-ring-trans", a_km)
    a = random(rng, (M, K), "bfloat16", low=-2, high=2)
    b = random(rng, (K, N), "bfloat16", low=-2, high=2)
    c = np.zeros((M, N), np.float32)
    a_arg = np.ascontiguousarray(a.T) if a_km else a
    compiled = emulate(transposed_ring_kernel, (tegula.cdiv(M, BM), tegula.cdiv(N, BN)), a_arg,
                       np.ascontiguousarray(b.T), c, M, N, K, BM=BM, BN=BN, BK=BK, A_KM=a_km, num_stages=3)
    assert_ring(compiled, 3)
    assert "tg_wgmma_m64n64k16_bf16_" + ("m" if a_km else "k") + "k" in compiled.source
    a64, b64 = to_f64(a), to_f64(b)
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6
    bad = np.abs(c - a64 @ b64) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(c - a64 @ b64).max()}"


@tegula.jit
def persistent_ring_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                           PROGRAMS: tl.constexpr):
    """A loop over C's tiles around the K loop: the ring starts over for every tile."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        off_m = (tile // tiles_n) * BM
        off_n = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = a_desc.load([off_m, k])
            b = b_desc.load([k, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc)


def test_ring_inside_a_tile_loop():
    M, N, K = 176, 192, 144
    rng = rng_for("tma-ring-persistent", M, N, K)
    a = random(rng, (M, K), "float16", low=-2, high=2)
    b = random(rng, (K, N), "float16", low=-2, high=2)
    c = np.zeros((M, N), np.float32)
    compiled = emulate(persistent_ring_kernel, (2,), a, b, c, M, N, K, BM=64, BN=64, BK=32, PROGRAMS=2,
                       num_stages=3)
    assert_ring(compiled, 3)
    a64, b64 = to_f64(a), to_f64(b)
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6
    assert not (np.abs(c - a64 @ b64) > tol).any()


def ring_source(M=128, N=128, K=512, BM=128, BN=128, BK=64, warps=8, stages=3, dtype="bfloat16"):
    a = np.zeros((M, K), _bf16() if dtype == "bfloat16" else np.float16)
    b = np.zeros((K, N), a.dtype)
    c = np.zeros((M, N), np.float32)
    compiled, _ = compile_cuda(desc_matmul_kernel, (a, b, c, M, N, K), dict(BM=BM, BN=BN, BK=BK), num_warps=warps,
                               num_stages=stages)
    return compiled


def test_ring_structure():
    compiled = ring_source()
    src = compiled.source
    kernel = src[src.index("---- kernel ----"):]
    # Maps of all rows by one 128-byte swizzle span; B's 128-column block lands as two boxes.
    maps = compiled.tensor_maps
    assert maps[0] == {"base": "a_ptr", "shape": ["M", "K"], "strides": ["K", 1], "box": [128, 64], "swizzle": 3,
                       "fill": "zero"}, maps
    assert maps[1]["box"] == [64, 64] and maps[1]["swizzle"] == 3, maps
    # A full (one arrival) and an empty (one per warp) mbarrier per stage, after the 3 stages of 32 KiB.
    assert re.search(r"const unsigned (tma_full\d+) = tg_shared_address\(tg_smem\) \+ 98304;\s*"
                     r"const unsigned (tma_empty\d+) = \1 \+ 24;", kernel), kernel
    assert re.search(r"for \(int s = 0; s < 3; \+\+s\) \{\s*tg_mbar_init\(tma_full\d+ \+ 8 \* s, 1\);.*\n\s*"
                     r"tg_mbar_init\(tma_empty\d+ \+ 8 \* s, 8\);", kernel), kernel
    # The prologue fills stages 0 and 1; each stage's expect_tx is its 32768 bytes, then three boxes.
    assert kernel.count("tg_mbar_arrive_expect_tx(") == 3
    assert kernel.count("tg_tma_load_2d(") == 9
    assert re.search(r"tg_mbar_arrive_expect_tx\(full\d+, 32768\);\s*"
                     r"tg_tma_load_2d\(sm \+ \(0\) \* 32768 \+ 0, &tg_map0, full\d+, v\d+, v\d+\);\s*"
                     r"tg_tma_load_2d\(sm \+ \(0\) \* 32768 \+ 16384, &tg_map1, full\d+, v\d+, v\d+\);\s*"
                     r"tg_tma_load_2d\(sm \+ \(0\) \* 32768 \+ 24576, &tg_map1, full\d+, v\d+ \+ 64, v\d+\);",
                     kernel), kernel
    end = kernel.index("tg_wgmma_wait<0>();  // the last iteration's")
    loop = kernel[kernel.index("for (unsigned long long k"):end]
    # Per iteration: advance the stage, flip the parity on a wrap, wait for the stage's phase.
    assert re.search(r"(tma_stage\d+) = \1 == 2 \? 0 : \1 \+ 1;.*\n\s*if \(\1 == 0\) (tma_phase\d+) \^= 1;.*\n\s*"
                     r"tg_mbar_wait\(tma_full\d+ \+ 8 \* \1, \2\);", loop), loop
    # The dot reads the landed stage; its group stays in flight; warps release k-1's stage, thread 0 refills it.
    assert "tg_wgmma_wait<1>();" in loop and "tg_wgmma_wait<0>" not in loop
    assert re.search(r"if \(k\d+ > 0 && lane == 0\) tg_mbar_arrive\(tma_empty\d+ \+ 8 \* previous\);", loop), loop
    assert re.search(r"if \(threadIdx.x == 0 && k\d+ \+ 2 < trips\d+\) \{\s*"
                     r"tg_mbar_wait\(tma_empty\d+ \+ 8 \* previous, (tma_stage\d+) == 0 \? (tma_phase\d+) \^ 1 : \2\);",
                     loop), loop
    # No CTA barrier, no cp.async, no staging through registers, no proxy fence in the loop.
    for absent in ("__syncthreads", "tg_cp_async", "tg_vec", "tg_fence_proxy_async", "tg_tma_phase"):
        assert absent not in loop, absent
    assert loop.index("tg_wgmma_commit") < loop.index("tg_mbar_arrive(")


def test_swizzled_store_of_the_result():
    # C's 128-column fp32 rows are staged in the 128-byte swizzled layout (16-byte chunks XORed with the row) and
    # stored as four swizzled boxes of 32 columns.
    compiled = ring_source()
    assert compiled.tensor_maps[2]["box"] == [128, 32] and compiled.tensor_maps[2]["swizzle"] == 3
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    epilogue = kernel[kernel.index("TMA store of"):]
    assert "tg_swizzle<128, 1, 8, 16384>" in epilogue, epilogue
    assert len(re.findall(r"tg_tma_store_2d\(&tg_map2, tg_shared_address\(tg_smem\) \+ \d+, v\d+( \+ (32|64|96))?, v\d+\);",
                          epilogue)) == 4, epilogue


def without(pattern):
    """An edit_source (emulate) removing what `pattern` matches in the generated code, which must match."""
    def edit(src):
        edited = re.sub(pattern, "", src)
        assert edited != src, pattern
        return edited
    return edit


def test_wrong_phase_fails():
    # The parity never flips: on the second lap a wait passes on the first lap's phase, and the producer refills a
    # stage the wgmma groups still read.
    with pytest.raises(EmulatorError, match="still reads"):
        run(desc_matmul_kernel, 64, 64, 256, 64, 64, 32, "float16", 4, 3,
            edit_source=without(r"if \(tma_stage\d+ == 0\) tma_phase\d+ \^= 1;"))


def test_refill_without_waiting_for_the_stage_fails():
    # The producer refills the stage before every warp's wgmma group reading it has retired.
    with pytest.raises(EmulatorError, match="still reads"):
        run(desc_matmul_kernel, 128, 128, 512, 128, 128, 64, "float16", 8, 2,
            edit_source=without(r"tg_mbar_wait\(tma_empty[^;]*;"))


def test_missing_release_fails():
    # No warp releases its stage: the producer's wait for a free stage never completes.
    with pytest.raises(EmulatorError, match="deadlock"):
        run(desc_matmul_kernel, 64, 64, 256, 64, 64, 32, "float16", 4, 2,
            edit_source=without(r"if \(k\d+ > 0 && lane == 0\) tg_mbar_arrive\(tma_empty[^;]*;"))


# --- which loops take the ring -------------------------------------------------------------


@tegula.jit
def scaled_operand_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([0, k * BK]) * 2
        b = b_desc.load([k * BK, 0])
        acc = tl.dot(a, b, acc)
    c_desc.store([0, 0], acc)


def test_other_loops_keep_single_copies():
    one_stage = ring_source(stages=1)
    assert "TMA ring" not in one_stage.source
    assert re.search(r"desc_load at .*: TMA through tg_map0, waited where issued \(not a TMA ring: num_stages is "
                     r"below 2\)", one_stage.layouts), one_stage.layouts
    a = np.zeros((64, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    scaled, _ = compile_cuda(scaled_operand_kernel, (a, a, c, 64, 64, 64), dict(BM=64, BN=64, BK=32))
    assert "TMA ring" not in scaled.source
    assert re.search(r"not a TMA ring: operand a is not a descriptor load of the loop body used only by the dot",
                     scaled.layouts), scaled.layouts


@tegula.jit
def ring_with_atomics_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr, INTO_A: tl.constexpr):
    """Each K step's product added into C by an atomic of the body (as an attention backward adds dQ), and
    accumulated in place into D; with INTO_A the atomic writes the array A's blocks are copied from."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    rows = off_m + tl.arange(0, BM)
    cols = off_n + tl.arange(0, BN)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        part = tl.dot(a, b)
        if INTO_A:
            tl.atomic_add(a_ptr + rows[:, None] * K + cols[None, :], part.to(a_ptr.dtype.element_ty),
                          mask=inside, sem="relaxed")
        else:
            tl.atomic_add(c_ptr + rows[:, None] * N + cols[None, :], part, mask=inside, sem="relaxed")
        acc = tl.dot(a, b, acc)
    tl.store(d_ptr + rows[:, None] * N + cols[None, :], acc, mask=inside)


@pytest.mark.parametrize("M,N,K,BM,BN,BK,warps,stages", [
    (80, 96, 208, 64, 64, 32, 4, 3),       # ragged, one warpgroup
    (128, 144, 160, 128, 64, 64, 8, 2),   # two warpgroups
])
def test_ring_body_adds_atomically_into_another_array(M, N, K, BM, BN, BK, warps, stages):
    # The atomic writes C, which no ring block is copied from: the loop stays a ring, and the atomic reads the
    # product in its accumulator layout (no conversion through shared memory).
    rng = rng_for("ring-atomics", M, N, K)
    a, b = random(rng, (M, K), "float16", low=-2, high=2), random(rng, (K, N), "float16", low=-2, high=2)
    c, d = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    compiled = emulate(ring_with_atomics_kernel, (tegula.cdiv(M, BM), tegula.cdiv(N, BN)), a, b, c, d, M, N, K,
                       BM=BM, BN=BN, BK=BK, INTO_A=False, num_warps=warps, num_stages=stages)
    assert_ring(compiled, stages)
    # Pairs of adjacent accumulator columns, consecutive in C: one sm_90 vector reduction each.
    assert "tg_red_add_f32x2<tg_relaxed, tg_gpu>" in compiled.source
    want = to_f64(a) @ to_f64(b)
    tol = K * 2.0 ** -20 * (np.abs(to_f64(a)) @ np.abs(to_f64(b))) + 1e-5
    for name, got in (("atomics", c), ("accumulator", d)):
        bad = np.abs(to_f64(got) - want) > tol
        assert not bad.any(), f"{name}: {bad.sum()} of {bad.size} wrong, worst {np.abs(to_f64(got) - want).max()}"


def test_ring_refuses_an_atomic_into_its_own_source():
    a = np.zeros((64, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    compiled, _ = compile_cuda(ring_with_atomics_kernel, (a, a, c, c, 64, 64, 64),
                               dict(BM=64, BN=64, BK=32, INTO_A=True), num_stages=3)
    assert "TMA ring" not in compiled.source
    assert "not a TMA ring: an atomic of the body writes an array a ring block is copied from" in compiled.layouts, \
        compiled.layouts


@tegula.jit
def invariant_both_roles_kernel(k_ptr, q_ptr, x_ptr, y_ptr, M, BM: tl.constexpr, BN: tl.constexpr,
                                D: tl.constexpr):
    """K (loaded before the loop) is operand a of `k @ q.T` and operand b of `s.T @ k`, an attention backward's
    shape: X = sum over the loop of (K Q^T)^T K by atomics, Y = sum of (K Q^T) Q in place."""
    k_desc = tl.make_tensor_descriptor(k_ptr, [BN, D], [D, 1], [BN, D])
    q_desc = tl.make_tensor_descriptor(q_ptr, [M, D], [D, 1], [BM, D])
    kk = k_desc.load([0, 0])
    d = tl.arange(0, D)
    y = tl.zeros((BN, D), dtype=tl.float32)
    for m in range(0, M, BM):
        q = q_desc.load([m, 0])
        s = tl.dot(kk, q.T).to(tl.float16)
        rows = m + tl.arange(0, BM)
        tl.atomic_add(x_ptr + rows[:, None] * D + d[None, :], tl.dot(s.T, kk), sem="relaxed")
        y = tl.dot(s, q, y)
    tl.store(y_ptr + tl.arange(0, BN)[:, None] * D + d[None, :], y)


def test_invariant_tile_in_two_roles_is_staged_once():
    # One staged copy is read with rows along K by one dot (a) and along N by the other (b, 16-bit: wgmma reads
    # either); s.T is staged by its dot from s's registers, with no transposition before it.
    M, BM, BN, D = 128, 64, 64, 64
    rng = rng_for("invariant-roles")
    k, q = random(rng, (BN, D), "float16", low=-1, high=1), random(rng, (M, D), "float16", low=-1, high=1)
    x, y = np.zeros((M, D), np.float32), np.zeros((BN, D), np.float32)
    compiled = emulate(invariant_both_roles_kernel, (1,), k, q, x, y, M, BM=BM, BN=BN, D=D, num_warps=4,
                       num_stages=2)
    assert "TMA ring through" in compiled.layouts, compiled.layouts
    assert compiled.source.count("is the same in every iteration: staged once") == 1, compiled.source
    assert "the dot after it stages the operand's registers transposed" in compiled.source
    s = (to_f64(k) @ to_f64(q).T).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(x, s.T @ to_f64(k), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(y, s @ to_f64(q), rtol=1e-2, atol=1e-2)


@tegula.jit
def invariant_transposed_kernel(k_ptr, q_ptr, x_ptr, y_ptr, M, BM: tl.constexpr, BN: tl.constexpr,
                                D: tl.constexpr):
    """K (loaded before the loop) is operand a of `k @ q.T` and, transposed, of `k.T @ s`: the one-kernel
    attention backward's dQ^T = K^T dS^T. X^T = sum of K^T (K Q^T) by atomics, Y = sum of (K Q^T) Q in place."""
    k_desc = tl.make_tensor_descriptor(k_ptr, [BN, D], [D, 1], [BN, D])
    q_desc = tl.make_tensor_descriptor(q_ptr, [M, D], [D, 1], [BM, D])
    kk = k_desc.load([0, 0])
    d = tl.arange(0, D)
    y = tl.zeros((BN, D), dtype=tl.float32)
    for m in range(0, M, BM):
        q = q_desc.load([m, 0])
        s = tl.dot(kk, q.T).to(kk.dtype)
        rows = m + tl.arange(0, BM)
        tl.atomic_add(x_ptr + rows[None, :] * D + d[:, None], tl.dot(kk.T, s), sem="relaxed")
        y = tl.dot(s, q, y)
    tl.store(y_ptr + tl.arange(0, BN)[:, None] * D + d[None, :], y)


@pytest.mark.parametrize("BN, D, warps", [(64, 64, 4), (128, 64, 4), (64, 128, 8), (128, 128, 8)])
def test_invariant_tile_read_transposed_is_staged_once(BN, D, warps):
    # K and K^T are both operand a: the second reads K's tile with its rows along M instead of staging a copy.
    M, BM = 192, 64
    rng = rng_for("invariant-transposed", BN, D)
    k, q = random(rng, (BN, D), "bfloat16", low=-1, high=1), random(rng, (M, D), "bfloat16", low=-1, high=1)
    x, y = np.zeros((M, D), np.float32), np.zeros((BN, D), np.float32)
    compiled = emulate(invariant_transposed_kernel, (1,), k, q, x, y, M, BM=BM, BN=BN, D=D, num_warps=warps,
                       num_stages=2)
    assert "TMA ring" in compiled.layouts, compiled.layouts
    assert compiled.source.count("is the same in every iteration: staged once") == 1, compiled.source
    assert re.search(r"// v\d+ is v\d+ transposed: read from its tile", compiled.source)
    assert "a [K][M]" in compiled.source  # the transposed reader's rows run along M
    s = to_f64((to_f64(k) @ to_f64(q).T).astype(np.float32).astype(k.dtype))
    # s rounded to bfloat16 may differ by an ulp (2^-8) where the kernel's sums round otherwise
    for got, a, b in ((x, s.T, to_f64(k)), (y, s, to_f64(q))):
        assert np.all(np.abs(got - a @ b) <= 2.0 ** -7 * (np.abs(a) @ np.abs(b)) + 1e-3)


def test_single_copy_matmul_still_exact():
    # num_stages=1: the loads keep their single copies, waited where issued.
    compiled, c, want, tol = run(desc_matmul_kernel, 80, 96, 80, 64, 64, 32, "float16", 4, 1)
    assert "TMA ring" not in compiled.source
    assert not (np.abs(c - want) > tol).any()


def test_benchmark_kernel_runs_as_a_ring():
    # examples/matmul_tma.py, the benchmark's descriptor matmul, at its own blocks, warps and stages.
    import matmul_tma

    M, N, K = 200, 272, 320
    rng = rng_for("tma-ring-example", M, N, K)
    a = random(rng, (M, K), "bfloat16", low=-2, high=2)
    b = random(rng, (K, N), "bfloat16", low=-2, high=2)
    c = np.zeros((M, N), _bf16())  # C in A's dtype, as the benchmark has it
    blocks = matmul_tma.DEFAULT_BLOCKS
    # Two programs walk the 2 x 2 tiles (persistent, as one per multiprocessor would), and the producer
    # warpgroup feeds the ring across them.
    compiled = emulate(matmul_tma.matmul_tma_kernel, (2,), a, b, c, M, N, K, num_warps=8,
                       num_stages=matmul_tma.DEFAULT_STAGES, **blocks)
    assert_ring(compiled, matmul_tma.DEFAULT_STAGES)
    assert "(in the tile loop of line" in compiled.layouts, compiled.layouts
    np.testing.assert_allclose(to_f64(c), to_f64(a) @ to_f64(b), rtol=2 ** -7, atol=1e-2)


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3),
                                                   (64, 128, 32, 4, 2)])
def test_ring_wgmmas_are_not_serialized(bm, bn, bk, warps, stages, tmp_path):
    # ptxas (through NVRTC, no GPU needed) neither serializes the ring's wgmmas (C7514/C7515/C7519) nor spills.
    import matmul_tma
    from test_wgmma_overlap import SERIALIZED, cli_compile

    signature = f"*bf16:16, *bf16:16, *bf16:16, i32:16, i32:16, i32:16, {bm}, {bn}, {bk}, 8"
    text = cli_compile(matmul_tma.matmul_tma_kernel, signature, 90, warps, stages, "cuda,ptxas", tmp_path)
    assert f"TMA ring: {stages} stages" in text
    assert not SERIALIZED.search(text), SERIALIZED.search(text).group(0)
    assert " 0 bytes spill stores" in text
    if (bm, bn, bk, warps, stages) == (128, 128, 64, 8, 3):  # a ring small enough for two programs per SM
        registers = int(re.search(r"Used (\d+) registers", text).group(1))
        assert registers <= 128, f"{registers} registers: 256 threads at more than 128 leave one program per SM"


# --- warp specialization: a producer warpgroup fills the ring (backends/cuda/warp_specialize.h) ---------------


@tegula.jit
def ws_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     GROUP_M: tl.constexpr, WS: tl.constexpr):
    """Grouped tile order (scalar arithmetic the producer recomputes), a bias row loaded before the loop, the
    loop's warp specialization as asked (None: the compiler's choice)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    group = pid // (GROUP_M * tiles_n)
    rows = min(tiles_m - group * GROUP_M, GROUP_M)
    within = pid % (GROUP_M * tiles_n)
    off_m = (group * GROUP_M + within % rows) * BM
    off_n = (within // rows) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
        a = a_desc.load([off_m, k * BK])
        b = b_desc.load([k * BK, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc)


def run_ws(M, N, K, BM, BN, BK, dtype, warps, stages, ws=True, edit_source=None, seed=0):
    rng = rng_for("tma-ring-ws", M, N, K, BM, BN, BK, dtype, warps, stages)
    a = random(rng, (M, K), dtype, low=-2, high=2)
    b = random(rng, (K, N), dtype, low=-2, high=2)
    c = np.zeros((M, N), np.float32)
    grid = (tegula.cdiv(M, BM) * tegula.cdiv(N, BN),)
    compiled = emulate(ws_matmul_kernel, grid, a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, GROUP_M=2, WS=ws,
                       num_warps=warps, num_stages=stages, edit_source=edit_source, seed=seed)
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6
    bad = np.abs(to_f64(c) - want) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(to_f64(c) - want).max()}"
    return compiled


@pytest.mark.parametrize("M,N,K,BM,BN,BK,dtype,warps,stages,seed", [
    (150, 144, 208, 64, 64, 32, "bfloat16", 4, 3, 0),    # ragged M, N, K; the ring wraps twice; one consumer warpgroup
    (200, 144, 320, 128, 128, 64, "float16", 8, 2, 1),   # two consumer warpgroups with registers moved; 5 laps of 2
    (64, 64, 48, 64, 64, 32, "bfloat16", 4, 4, 2),       # the loop is shorter than the ring
    (64, 128, 16, 64, 128, 32, "float16", 8, 3, 3),      # one iteration, K = 16 of a 32-wide block
])
def test_warp_specialized_ring_is_exact(M, N, K, BM, BN, BK, dtype, warps, stages, seed):
    compiled = run_ws(M, N, K, BM, BN, BK, dtype, warps, stages, seed=seed)
    assert compiled.num_threads == 32 * warps + 128
    assert "warp specialization: the loop of line" in compiled.layouts, compiled.layouts


def ws_source(ws=True, warps=8, BM=128, BN=256, stages=4):
    a = np.zeros((512, 512), np.float16)
    compiled, _ = compile_cuda(ws_matmul_kernel, (a, a, np.zeros((512, 512), np.float32), 512, 512, 512),
                               dict(BM=BM, BN=BN, BK=64, GROUP_M=8, WS=ws), num_warps=warps, num_stages=stages)
    return compiled


def test_warp_specialized_structure():
    compiled = ws_source()
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    assert "__launch_bounds__(384, 1)" in kernel and compiled.num_threads == 384
    assert ("registers 168 at launch, producer 24, consumers 240 (setmaxnreg)" in compiled.layouts), compiled.layouts
    head = kernel[:kernel.index("tg_setmaxnreg_inc<240>();")]
    # Barriers made by thread 0, one barrier of all 384 threads, then the producer's branch, which returns.
    assert re.search(r"tg_mbar_init\(tma_empty\d+ \+ 8 \* s, 8\);  // one per consumer warp", head), head
    assert head.count("__syncthreads()") == 1
    producer = head[head.index("if (threadIdx.x >= 256) {"):]
    assert "tg_setmaxnreg_dec<24>();" in producer and "if (threadIdx.x == 256) {" in producer
    assert re.search(r"return;\s*\}\s*$", producer), producer
    # The producer recomputes the grouped offsets, then issues every iteration after waiting for the stage.
    assert "= (int)blockIdx.x;" in producer and "tg_rem(" in producer
    # Each iteration: the offsets, the wait for the stage's release, then its copies.
    assert re.search(r"for \(unsigned long long j = 0; j < trips; \+\+j\) \{[^}]*?"
                     r"tg_mbar_wait\(tma_empty\d+ \+ 8 \* stage, phase \^ 1\);[^}]*?tg_mbar_arrive_expect_tx",
                     producer), producer
    assert producer.count("tg_mbar_arrive_expect_tx(") == 1 and producer.count("tg_tma_load_2d(") == 5
    # The consumers: no copies, no CTA barrier; a release per warp, named barrier 1 over 256 threads after.
    body = kernel[kernel.index("tg_setmaxnreg_inc<240>();"):]
    for absent in ("tg_tma_load_2d", "__syncthreads", "tg_mbar_arrive_expect_tx", "setmaxnreg_dec"):
        assert absent not in body, absent
    assert re.search(r"if \(k\d+ > 0 && lane == 0\) tg_mbar_arrive\(tma_empty\d+ \+ 8 \* previous\);", body), body
    assert "tg_named_barrier<256>(1);" in body[body.index("tg_wgmma_wait<0>"):]


def test_which_rings_are_warp_specialized():
    # Unasked: only a ring too large for two programs per multiprocessor; asked, any top-level ring; never when
    # asked not to.
    assert "warp specialization: the loop" in ws_source(ws=None).layouts  # 4 stages of 48 KB
    small = ws_source(ws=None, BN=128, stages=3)
    assert re.search(r"warp specialization: none \(the ring's \d+ bytes leave room for two programs",
                     small.layouts), small.layouts
    assert small.num_threads == 256 and "tg_setmaxnreg" not in kernel_of(small)
    assert "warp specialization: the loop" in ws_source(ws=True, BN=128, stages=3).layouts
    off = ws_source(ws=False)
    assert "warp specialization: none (tl.range(..., warp_specialize=False))" in off.layouts
    assert off.num_threads == 256 and "tg_named_barrier" not in kernel_of(off)
    # One consumer warpgroup has all the registers it can address already: no setmaxnreg.
    one = ws_source(ws=True, warps=4, BN=128)
    assert one.num_threads == 256 and "tg_setmaxnreg" not in kernel_of(one) and "(setmaxnreg)" not in one.layouts


@tegula.jit
def ws_reduce_first_kernel(a_ptr, b_ptr, c_ptr, s_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr, STORE_FIRST: tl.constexpr):
    """c = a @ b + the column sums of b's first BK rows, those sums (a reduction across warps) computed before the
    ring loop; STORE_FIRST also stores them there."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    ks, cols = tl.arange(0, BK), off_n + tl.arange(0, BN)
    top = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
    sums = tl.sum(top.to(tl.float32), axis=0)
    if STORE_FIRST:
        tl.store(s_ptr + cols, sums, mask=cols < N)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        acc = tl.dot(a_desc.load([off_m, k * BK]), b_desc.load([k * BK, off_n]), acc)
    c_desc.store([off_m, off_n], acc + sums[None, :])


def test_warp_specialized_ring_after_a_reduction_is_exact():
    # The reduction's barrier is the consumers' named barrier (the producer never reaches it) and its scratch lies
    # past the ring the producer is filling meanwhile. A store before the loop still keeps one warp role.
    M, N, K, BM, BN, BK = 200, 144, 208, 128, 128, 64
    rng = rng_for("tma-ring-ws-reduce", M, N, K)
    a = random(rng, (M, K), "bfloat16", low=-2, high=2)
    b = random(rng, (K, N), "bfloat16", low=-2, high=2)
    c, sums = np.zeros((M, N), np.float32), np.zeros(N, np.float32)
    grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
    compiled = emulate(ws_reduce_first_kernel, grid, a, b, c, sums, M, N, K, BM=BM, BN=BN, BK=BK, STORE_FIRST=False,
                       num_warps=8, num_stages=3)
    assert "warp specialization: the loop of line" in compiled.layouts, compiled.layouts
    body = kernel_of(compiled)[kernel_of(compiled).index("tg_setmaxnreg_inc<"):]
    assert "__syncthreads" not in body and "tg_named_barrier<256>(1);" in body
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64 + b64[:BK].sum(axis=0)[None, :]
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64) + np.abs(b64[:BK]).sum(axis=0)[None, :]) + 1e-6
    bad = np.abs(to_f64(c) - want) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(to_f64(c) - want).max()}"
    stored, _ = compile_cuda(ws_reduce_first_kernel, (a, b, c, sums, M, N, K),
                             dict(BM=BM, BN=BN, BK=BK, STORE_FIRST=True), num_warps=8, num_stages=3)
    assert "warp specialization: none (the kernel runs `store` before the loop)" in stored.layouts, stored.layouts


def kernel_of(compiled):
    return compiled.source[compiled.source.index("---- kernel ----"):]


def test_warp_specialize_must_be_known_when_compiling():
    @tegula.jit
    def runtime_flag(x_ptr, flag):
        for k in tl.range(0, 4, warp_specialize=flag):
            tl.store(x_ptr + k, k)

    x = np.zeros(4, np.int32)
    with pytest.raises(tegula.CompilationError, match="warp_specialize of tl.range must be True, False or None"):
        compile_cuda(runtime_flag, (x, 7), {})


def test_warp_specialized_wrong_producer_phase_fails():
    # The producer's round parity never flips: in its second round it waits for round 0's release again (which
    # passed), refilling a stage before its consumers are done with it.
    with pytest.raises(EmulatorError, match="still reads|one arrival too many"):
        run_ws(64, 64, 256, 64, 64, 32, "float16", 4, 3, edit_source=without(r"if \(stage == 0\) phase \^= 1;"))


def test_warp_specialized_producer_not_waiting_fails():
    with pytest.raises(EmulatorError, match="still reads"):
        run_ws(128, 128, 512, 128, 128, 64, "float16", 8, 2,
               edit_source=without(r"tg_mbar_wait\(tma_empty\d+ \+ 8 \* stage, phase \^ 1\);"))


def test_warp_specialized_missing_release_deadlocks():
    with pytest.raises(EmulatorError, match="deadlock"):
        run_ws(64, 64, 256, 64, 64, 32, "float16", 4, 2,
               edit_source=without(r"if \(k\d+ > 0 && lane == 0\) tg_mbar_arrive\(tma_empty[^;]*;"))


def test_warp_specialized_producer_keeping_its_registers_deadlocks():
    # Without the producer's setmaxnreg.dec the pool never has the consumers' raise.
    with pytest.raises(EmulatorError, match="setmaxnreg.inc 240"):
        run_ws(128, 128, 128, 128, 128, 64, "float16", 8, 2, edit_source=without(r"tg_setmaxnreg_dec<24>\(\);"))


@tegula.jit
def ws_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         PROGRAMS: tl.constexpr, WS: tl.constexpr):
    """A persistent matmul: each program walks tiles of C; the K loop's ring is fed across them."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    tiles_n = tl.cdiv(N, BN)
    k_steps = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS, warp_specialize=WS):
        off_m = (tile // tiles_n) * BM
        off_n = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(k_steps):
            a = a_desc.load([off_m, k * BK])
            b = b_desc.load([k * BK, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc)


@pytest.mark.parametrize("M,N,K,BM,BN,BK,warps,stages,programs,seed", [
    (176, 192, 144, 64, 64, 32, 4, 3, 2, 0),    # 9 tiles on 2 programs; 5 K steps on a ring of 3: laps across tiles
    (200, 144, 64, 128, 128, 64, 8, 2, 1, 1),   # one program, one K step per tile, registers moved
    (96, 160, 208, 64, 64, 64, 4, 4, 3, 2),     # the ring's 4 stages hold a whole tile's K loop
])
def test_warp_specialized_tile_loop_is_exact(M, N, K, BM, BN, BK, warps, stages, programs, seed):
    rng = rng_for("tma-ring-ws-tiles", M, N, K, BM, BN, BK, warps, stages)
    a = random(rng, (M, K), "bfloat16", low=-2, high=2)
    b = random(rng, (K, N), "bfloat16", low=-2, high=2)
    c = np.zeros((M, N), np.float32)
    compiled = emulate(ws_persistent_kernel, (programs,), a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, PROGRAMS=programs,
                       WS=True, num_warps=warps, num_stages=stages, seed=seed)
    assert re.search(r"warp specialization: the loop of line \d+ \(in the tile loop of line \d+\)",
                     compiled.layouts), compiled.layouts
    kernel = kernel_of(compiled)
    producer = kernel[kernel.index("if (threadIdx.x >= "):kernel.index("return;")]
    assert "for (unsigned long long t = 0; t < tiles; ++t)" in producer and "tg_rem(" in producer
    # The consumers release the last stage of every tile, and keep the ring reserved for the next one.
    assert re.search(r"if \(trips\d+ > 0 && lane == 0\) tg_mbar_arrive\(tma_empty\d+ \+ 8 \* tma_stage\d+\);",
                     kernel), kernel
    a64, b64 = to_f64(a), to_f64(b)
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6
    bad = np.abs(c - a64 @ b64) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(c - a64 @ b64).max()}"


def test_warp_specialized_tile_loop_without_the_last_release_deadlocks():
    a = random(rng_for("tma-ring-ws-tiles-bug"), (128, 64), "float16", low=-2, high=2)
    c = np.zeros((128, 128), np.float32)
    with pytest.raises(EmulatorError, match="deadlock"):
        emulate(ws_persistent_kernel, (1,), a, a[:64, :].copy(), c, 128, 128, 64, BM=64, BN=64, BK=32, PROGRAMS=1,
                WS=True, num_warps=4, num_stages=2,
                edit_source=without(r"if \(trips\d+ > 0 && lane == 0\) tg_mbar_arrive\([^;]*;"))


def test_tile_loop_too_large_for_shared_memory_falls_back():
    # 4 stages of 48 KB beside the epilogue's 64 KB staging do not fit: the ring is filled by thread 0 and the
    # epilogue reuses its area.
    a = np.zeros((1024, 1024), np.float16)
    compiled, _ = compile_cuda(ws_persistent_kernel, (a, a, a, 1024, 1024, 1024),
                               dict(BM=128, BN=256, BK=64, PROGRAMS=132, WS=None), num_warps=8, num_stages=4)
    assert re.search(r"warp specialization: none \(the ring beside the tiles' epilogue would need \d+ bytes",
                     compiled.layouts), compiled.layouts
    assert compiled.num_threads == 256 and "TMA ring: 4 stages" in compiled.source
    three, _ = compile_cuda(ws_persistent_kernel, (a, a, a, 1024, 1024, 1024),
                            dict(BM=128, BN=256, BK=64, PROGRAMS=132, WS=None), num_warps=8, num_stages=3)
    assert "(in the tile loop of line" in three.layouts and three.num_threads == 384


# --- fp8 on the tensor cores: wgmma reads the fp8 blocks where they land -----------------------------------


@tegula.jit
def fp8_ring_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    B_KN: tl.constexpr):
    """A [M, K] and B [N, K] read as .T (both K-major, what fp8 wgmma reads); with B_KN, B stored [K, N]."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    if B_KN:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        if B_KN:
            acc = tl.dot(a, b_desc.load([k, off_n]), acc)
        else:
            acc = tl.dot(a, b_desc.load([off_n, k]).T, acc)
    c_desc.store([off_m, off_n], acc)


def fp8_values(rng, shape, dtype):
    import ml_dtypes

    return (rng.standard_normal(shape) * 4).astype(getattr(ml_dtypes, dtype))


@pytest.mark.parametrize("M,N,K,BM,BN,BK,dtype,warps,stages", [
    (150, 144, 272, 64, 64, 128, "float8_e4m3fn", 4, 3),    # ragged M, N and K (a zero-filled K tail of 16)
    (128, 256, 512, 128, 256, 128, "float8_e4m3fn", 8, 3),  # the benchmark's blocks: producer warpgroup, k32 steps
    (64, 96, 160, 64, 32, 64, "float8_e5m2", 4, 2),         # e5m2; 64-byte rows (the 64-byte swizzle)
])
def test_fp8_ring_reads_fp8_blocks(M, N, K, BM, BN, BK, dtype, warps, stages):
    rng = rng_for("tma-ring-fp8", M, N, K, dtype)
    a = fp8_values(rng, (M, K), dtype)
    b_t = fp8_values(rng, (N, K), dtype)
    c = np.zeros((M, N), np.float32)
    grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
    compiled = emulate(fp8_ring_kernel, grid, a, b_t, c, M, N, K, BM=BM, BN=BN, BK=BK, B_KN=False, num_warps=warps,
                       num_stages=stages)
    assert_ring(compiled, stages)
    fmt = "e4m3" if "e4m3" in dtype else "e5m2"
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{min(BN, 256)}k32\.f32\.{fmt}\.{fmt}", compiled.source)
    assert "tg_f8" not in kernel_of(compiled).split("for (unsigned long long k")[1].split("tg_wgmma_fence")[0]
    a64, b64 = a.astype(np.float64), b_t.astype(np.float64).T
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6  # exact products, f32 sums
    bad = np.abs(c - a64 @ b64) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(c - a64 @ b64).max()}"


def test_fp8_blocks_along_n_take_the_widening_path():
    # B stored [K, N]: its rows run along N, which fp8 wgmma cannot read; the loads keep single copies and the
    # dot widens them to f16, with the same result.
    M, N, K = 64, 64, 96
    rng = rng_for("tma-ring-fp8-kn")
    a = fp8_values(rng, (M, K), "float8_e4m3fn")
    b = fp8_values(rng, (K, N), "float8_e4m3fn")
    c = np.zeros((M, N), np.float32)
    compiled = emulate(fp8_ring_kernel, (1, 1), a, b, c, M, N, K, BM=64, BN=64, BK=32, B_KN=True, num_stages=3)
    assert "TMA ring" not in compiled.source
    assert "an fp8 block whose rows do not run along K" in compiled.layouts, compiled.layouts
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert not (np.abs(c - a64 @ b64) > K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6).any()
