"""desc.atomic_add (and min/max/and/or/xor) on sm_90: the CUDA backend reduces the block into the tensor with the
TMA (cp.reduce.async.bulk.tensor, backends/cuda/codegen_tma.cpp), where tma_plan.h allows it.

The generated code runs in the host CUDA emulator (cuda_emulator.py), which applies each in-bounds element of the
box as an atomic of its own, against NumPy: several programs adding overlapping blocks into one float32 tensor
(non-power-of-two shapes, blocks hanging over the far edges, row-major and swizzled staging, ranks 1 to 3), the integer
operations, and a program reading back what it reduced. The text checks pin the structure (staging, the proxy fence,
the reduction, commit and wait for the read) and which ops keep pointer atomics: an unaligned row stride, a block
that may start before the tensor or off 16 bytes (the H200 stops such a reduction), a float min, f16, sm_80 and
debug mode; the CPU backend (the test's backend) runs the same kernels.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import EmulatorError, compile_cuda, emulate, require_emulator


def overlap_reference(out, x, steps, shifts):
    """out plus block p of x at ((p // cols) * step_m - shift_m, (p % cols) * step_n - shift_n), clipped to out."""
    M, N = out.shape
    P, BM, BN = x.shape
    cols = steps[2]
    want = out.astype(np.float64)
    for p in range(P):
        r0, c0 = (p // cols) * steps[0] - shifts[0], (p % cols) * steps[1] - shifts[1]
        for i in range(BM):
            for j in range(BN):
                if 0 <= r0 + i < M and 0 <= c0 + j < N:
                    want[r0 + i, c0 + j] += x[p, i, j]
    return want


@tegula.jit
def overlap_add_kernel(x_ptr, out_ptr, M, N, STEP_M: tl.constexpr, STEP_N: tl.constexpr, SHIFT_M: tl.constexpr,
                       SHIFT_N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # Program (i, j) adds its own [BM, BN] block of x at (i * STEP_M - SHIFT_M, j * STEP_N - SHIFT_N): blocks
    # overlap their neighbours' (steps below the block) and hang over the far edges of out, over every edge with
    # shifts. The TMA reduces blocks that start inside out at a column offset of a multiple of 16 bytes: shifts
    # keep the pointer form (on the H200 the TMA would stop with "illegal instruction").
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + pid * BM * BN + rows * BN + cols)
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    out.atomic_add([tl.program_id(0) * STEP_M - SHIFT_M, tl.program_id(1) * STEP_N - SHIFT_N], x)


SHIFTS = (0, 0)  # blocks start inside out, as the TMA needs
META = dict(STEP_M=9, STEP_N=12, SHIFT_M=0, SHIFT_N=0, BM=16, BN=16)


def run_overlap(M, N, BM, BN, seed, arch=90, shifts=SHIFTS, **kw):
    steps = (BM // 2 + 1, BN // 2 + 4)
    grid = (-(-(M + 4) // steps[0]), -(-(N + 4) // steps[1]))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((grid[0] * grid[1], BM, BN)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    want = overlap_reference(out, x, (*steps, grid[1]), shifts)
    compiled = emulate(overlap_add_kernel, grid, x, out, M, N, STEP_M=steps[0], STEP_N=steps[1], SHIFT_M=shifts[0],
                       SHIFT_N=shifts[1], BM=BM, BN=BN, arch=arch, seed=seed, **kw)
    return compiled, out, want


@pytest.fixture
def _emulator():
    require_emulator()


@pytest.mark.usefixtures("_emulator")
@pytest.mark.parametrize("M,N,BM,BN", [
    (37, 48, 16, 16),   # 64-byte rows: the row-major block
    (45, 80, 8, 32),    # 128-byte rows: staged swizzled, one box
    (21, 112, 16, 64),  # two 128-byte spans per row: two boxes
])
@pytest.mark.parametrize("seed", [0, 1])
def test_overlapping_blocks_add_through_tma(M, N, BM, BN, seed):
    compiled, got, want = run_overlap(M, N, BM, BN, seed)
    assert len(compiled.tensor_maps) == 1, compiled.tensor_maps
    assert "tg_tma_reduce_add_2d" in compiled.source and "tg_atom_add" not in compiled.source.split("---- kernel")[1]
    assert re.search(r"desc_atomic at .*test_tma_reduce.py:\d+:\d+: TMA through tg_map0", compiled.layouts)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_emulator")
def test_generated_structure():
    compiled, _, _ = run_overlap(37, 48, 16, 16, 0)
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    assert compiled.tensor_maps[0] == {"base": "out_ptr", "shape": ["M", "N"], "strides": ["N", 1],
                                       "box": [16, 16], "swizzle": 0, "fill": "zero"}
    # Staged on a 128-byte boundary, fenced for the async proxy, a barrier, then one thread reduces and commits;
    # it waits until the block is read out of shared memory before the CTA's shared memory goes.
    assert re.search(r"float\* const (s\d+) = reinterpret_cast<float\*>\(tg_smem( \+ \d+)?\);\s*"
                     r"// TMA reduction \(add\) of the 1024-byte block from shared memory", kernel), kernel
    assert re.search(r"tg_fence_proxy_async\(\);.*\n\s*__syncthreads\(\);\s*if \(threadIdx.x == 0\) \{\s*"
                     r"tg_tma_reduce_add_2d\(&tg_map0, tg_shared_address\(s\d+\), v\d+, v\d+\);\s*"
                     r"tg_bulk_commit\(\);[^\n]*\n\s*\}\s*if \(threadIdx.x == 0\) tg_bulk_wait_read<0>\(\);", kernel), kernel
    # The prelude's reduction: the PTX instruction (its operation spliced in by TG_TMA_REDUCE) and the hook.
    assert '"cp.reduce.async.bulk.tensor.2d.global.shared::cta." #OP' in compiled.source
    assert '".tile.bulk_group [%0, {%1, %2}], [%3];"' in compiled.source
    assert "TG_HOOK(tma_reduce, map, src, 2, c0, c1, 0, CODE)" in compiled.source


@tegula.jit
def rank1_add_kernel(x_ptr, out_ptr, n, B: tl.constexpr):
    out = tl.make_tensor_descriptor(out_ptr, [n], [1], [B])
    out.atomic_add([tl.program_id(0) * (B // 2)], tl.load(x_ptr + tl.program_id(0) * B + tl.arange(0, B)))


@tegula.jit
def rank3_add_kernel(x_ptr, out_ptr, A, M, N, BA: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    out = tl.make_tensor_descriptor(out_ptr, [A, M, N], [M * N, N, 1], [BA, BM, BN])
    a = tl.arange(0, BA)[:, None, None]
    m = tl.arange(0, BM)[None, :, None]
    n = tl.arange(0, BN)[None, None, :]
    x = tl.load(x_ptr + tl.program_id(0) * BA * BM * BN + (a * BM + m) * BN + n)
    out.atomic_add([tl.program_id(0) // 2, tl.program_id(0) * 3, 0], x)


@pytest.mark.usefixtures("_emulator")
def test_rank1_and_rank3_blocks():
    rng = np.random.default_rng(3)
    n, B = 150, 64
    x = rng.standard_normal((6, B)).astype(np.float32)
    out = rng.standard_normal(n).astype(np.float32)
    want = out.astype(np.float64)
    for p in range(6):
        for i in range(B):
            if 0 <= p * (B // 2) + i < n:
                want[p * (B // 2) + i] += x[p, i]
    compiled = emulate(rank1_add_kernel, (6,), x, out, n, B=B)
    assert "tg_tma_reduce_add_1d" in compiled.source
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)

    A, M, N, BA, BM, BN = 3, 11, 16, 2, 8, 16
    x3 = rng.standard_normal((4, BA, BM, BN)).astype(np.float32)
    out3 = rng.standard_normal((A, M, N)).astype(np.float32)
    want3 = out3.astype(np.float64)
    for p in range(4):
        for a in range(BA):
            for m in range(BM):
                if 0 <= p // 2 + a < A and 0 <= p * 3 + m < M:
                    want3[p // 2 + a, p * 3 + m] += x3[p, a, m]
    compiled = emulate(rank3_add_kernel, (4,), x3, out3, A, M, N, BA=BA, BM=BM, BN=BN)
    assert "tg_tma_reduce_add_3d" in compiled.source
    np.testing.assert_allclose(out3, want3, rtol=1e-5, atol=1e-5)


@tegula.jit
def integer_kernel(x_ptr, out_ptr, M, N, OP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + tl.program_id(0) * BM * BN + rows * BN + cols)
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    offsets = [tl.program_id(0) * (BM // 2), 0]
    if OP == "add":
        out.atomic_add(offsets, x)
    elif OP == "min":
        out.atomic_min(offsets, x)
    elif OP == "max":
        out.atomic_max(offsets, x)
    elif OP == "and":
        out.atomic_and(offsets, x)
    elif OP == "or":
        out.atomic_or(offsets, x)
    else:
        out.atomic_xor(offsets, x)


NUMPY_OPS = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
             "xor": np.bitwise_xor}


def integer_case(op, dtype, P=5, M=19, N=16, BM=8, BN=16, seed=4):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -(2 ** 40)), min(info.max, 2 ** 40)
    x = rng.integers(lo, hi, size=(P, BM, BN), dtype=dtype)
    out = rng.integers(lo, hi, size=(M, N), dtype=dtype)
    want = out.copy()
    with np.errstate(over="ignore"):
        for p in range(P):
            for i in range(BM):
                r = p * (BM // 2) + i
                if 0 <= r < M:
                    want[r] = NUMPY_OPS[op](want[r], x[p, i])
    return x, out, want, dict(OP=op, BM=BM, BN=BN)


INTEGER_CASES = [(op, dt) for op in ("min", "max", "and", "or", "xor") for dt in ("int32", "uint32", "int64", "uint64")]
INTEGER_CASES += [("add", "int32"), ("add", "uint32"), ("add", "uint64")]


@pytest.mark.usefixtures("_emulator")
@pytest.mark.parametrize("op,dtype", INTEGER_CASES)
def test_integer_reductions_through_tma(op, dtype):
    x, out, want, meta = integer_case(op, np.dtype(dtype))
    compiled = emulate(integer_kernel, (5,), x, out, *out.shape, **meta)
    assert f"tg_tma_reduce_{op}_2d" in compiled.source, compiled.layouts
    np.testing.assert_array_equal(out, want)


def test_integer_reductions_on_the_backend(backend):
    for op, dtype in (("add", "int64"), ("min", "int32"), ("xor", "uint64")):
        x, out, want, meta = integer_case(op, np.dtype(dtype))
        got = backend.array(out)
        integer_kernel[(5,)](backend.array(x), got, *out.shape, **meta)
        np.testing.assert_array_equal(backend.numpy(got), want)


# --- which ops keep pointer atomics -------------------------------------------------------------------------------


def compiled_for(kernel, args, arch=90, **kw):
    compiled, _ = compile_cuda(kernel, args, kw, arch=arch)
    return compiled


def pointer_form(compiled):
    return "tg_tma_reduce" not in compiled.source.split("---- kernel")[1] and compiled.tensor_maps == []


def test_pointer_atomics_where_the_tma_does_not_reduce():
    x, out = np.zeros((4, 16, 16), np.float32), np.zeros((37, 48), np.float32)
    meta = META
    tma = compiled_for(overlap_add_kernel, (x, out, 37, 48), **meta)
    assert "desc_atomic" in tma.stages["optimized"] and not pointer_form(tma)
    # A row stride of 50 floats (not known to be a multiple of 16 bytes), sm_80: atomic_rmw, as before the op.
    odd = compiled_for(overlap_add_kernel, (x, np.zeros((37, 50), np.float32), 37, 50), **meta)
    sm80 = compiled_for(overlap_add_kernel, (x, out, 37, 48), arch=80, **meta)
    # A base 4 bytes past a 16-byte boundary.
    unaligned = compiled_for(overlap_add_kernel, (x, np.zeros(37 * 48 + 4, np.float32)[1:], 37, 48), **meta)
    assert re.search(r"desc_atomic at .*: pointer form, the base pointer is not known to be 16-byte aligned",
                     unaligned.layouts), unaligned.layouts
    for compiled in (odd, sm80, unaligned):
        assert pointer_form(compiled) and "tg_atom_add<tg_acq_rel, tg_gpu>" in compiled.source
        assert "desc_atomic" not in compiled.stages["optimized"] and "atomic_rmw" in compiled.stages["optimized"]
    assert re.search(r"desc_atomic at .*: pointer form, the stride of dimension 0 is not known to be a multiple of "
                     r"16 bytes", odd.layouts), odd.layouts
    # Debug mode checks every element.
    request, _ = overlap_add_kernel._request_for(x, out, 37, 48, **meta)
    debug = tegula._C.compile(request, tegula._C.CompileOptions(backend="cuda", cuda_arch=90, debug=True,
                                                                               keep_stages=True))
    assert debug.tensor_maps == [] and "tg_tma_reduce" not in debug.source.split("---- kernel")[1]


@pytest.mark.usefixtures("_emulator")
@pytest.mark.parametrize("shifts,offset", [((3, 4), 0), ((0, 4), 1)])
def test_blocks_that_may_start_before_the_tensor_check_at_run_time(shifts, offset):
    # Rows from -3 or columns from -4 floats (16 bytes): on the H200 a TMA reduction at a negative coordinate
    # stops with "illegal instruction" (tools/hopper/tma_reduce_probe.py), and the compiler cannot tell which
    # programs' blocks start there, so the op checks its offsets at run time: the TMA where both are >= 0,
    # pointer atomics (masked) elsewhere. Same sums; the layouts text says so. (The emulator fails a negative
    # TMA coordinate, so a program taking the wrong branch would fail here.)
    compiled, got, want = run_overlap(45, 80, 8, 32, 2, shifts=shifts)
    kernel = compiled.source.split("---- kernel")[1]
    assert "tg_tma_reduce_add_2d" in kernel and "tg_atom_add" in kernel, compiled.layouts
    assert re.search(rf"desc_atomic at .*: pointer form where an offset is negative, offset {offset} is not known to "
                     r"be >= 0 \(a TMA reduction must start inside the tensor\)", compiled.layouts), compiled.layouts
    assert re.search(r"cmp %\w+, %\w+ \{pred = \"ge\"\}.*\n(.*\n)*.*if %\w+ \{", compiled.stages["lower_descriptors"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_emulator")
def test_a_column_offset_off_16_bytes_keeps_pointer_atomics():
    # Columns at 3 floats: no TMA copy can start there, so the op keeps the pointer form.
    compiled, got, want = run_overlap(45, 80, 8, 32, 2, shifts=(0, 3))
    assert pointer_form(compiled), compiled.layouts
    assert re.search(r"desc_atomic at .*: pointer form, the innermost offset is not known to be a multiple of 4 "
                     r"elements", compiled.layouts), compiled.layouts
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@tegula.jit
def assumed_kernel(x_ptr, out_ptr, M, N, row0, BM: tl.constexpr, BN: tl.constexpr):
    # row0 is an argument: its sign is unknown unless the kernel promises it.
    tl.assume(row0 >= 0)
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    x = tl.load(x_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    out.atomic_add([row0 + tl.program_id(0) * BM, 0], x)


@pytest.mark.usefixtures("_emulator")
def test_tl_assume_proves_an_offset_nonnegative():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out = rng.standard_normal((37, 16)).astype(np.float32)
    want = out.astype(np.float64)
    for p in range(3):
        want[5 + 8 * p:13 + 8 * p] += x
    compiled = emulate(assumed_kernel, (3,), x, out, 37, 16, 5, BM=8, BN=16)
    assert "tg_tma_reduce_add_2d" in compiled.source, compiled.layouts
    assert "at_least = [0]" in compiled.stages["lowered"]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    # Without the promise the same kernel keeps pointer atomics.
    plain = compile_cuda(overlap_add_kernel, (x.reshape(1, 8, 16), out, 37, 16),
                         dict(STEP_M=8, STEP_N=16, SHIFT_M=0, SHIFT_N=0, BM=8, BN=16))[0]
    assert "tg_tma_reduce_add_2d" in plain.source


@tegula.jit
def typed_kernel(out_ptr, M, N, OP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    value = tl.full([BM, BN], 3, out_ptr.dtype.element_ty)
    if OP == "add":
        out.atomic_add([0, 0], value)
    elif OP == "min":
        out.atomic_min([0, 0], value)
    else:
        out.atomic_max([0, 0], value)


@pytest.mark.parametrize("op,dtype,why", [
    ("add", "float16", "add reduction of f16"),
    ("add", "int64", "add reduction of i64"),
    ("min", "float32", "min reduction of f32"),
    ("max", "float64", "max reduction of f64"),
])
def test_element_types_the_tma_does_not_reduce(op, dtype, why):
    compiled = compiled_for(typed_kernel, (np.zeros((32, 64), dtype), 32, 64), OP=op, BM=16, BN=16)
    assert pointer_form(compiled), compiled.layouts
    assert re.search(rf"desc_atomic at .*: pointer form, the TMA has no {why} elements", compiled.layouts)


def test_cpu_backend_keeps_its_code():
    # The CPU backend receives the pointer form only: its IR after lower_descriptors is what the front end made
    # before desc_atomic existed (an acq_rel atomic_rmw under the block's mask).
    x, out = np.zeros((4, 16, 16), np.float32), np.zeros((37, 48), np.float32)
    request, _ = overlap_add_kernel._request_for(x, out, 37, 48, **META)
    cpu = tegula._C.compile(request, tegula._C.CompileOptions(backend="cpu", keep_stages=True))
    assert "desc_atomic" in cpu.stages["lowered"]
    assert "desc_atomic" not in cpu.stages["optimized"]
    assert re.search(r'atomic_rmw .* \{op = "add", sem = "acq_rel", scope = "gpu"\}', cpu.stages["optimized"])


def test_overlapping_blocks_on_the_backend(backend):
    M, N, BM, BN = 37, 48, 16, 16
    steps = (BM // 2 + 1, BN // 2 + 4)
    grid = (-(-(M + 4) // steps[0]), -(-(N + 4) // steps[1]))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((grid[0] * grid[1], BM, BN)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    for shifts in (SHIFTS, (3, 4), (3, 3)):
        want = overlap_reference(out, x, (*steps, grid[1]), shifts)
        got = backend.array(out)
        overlap_add_kernel[grid](backend.array(x), got, M, N, STEP_M=steps[0], STEP_N=steps[1], SHIFT_M=shifts[0],
                                 SHIFT_N=shifts[1], BM=BM, BN=BN)
        np.testing.assert_allclose(backend.numpy(got), want, rtol=1e-5, atol=1e-5)


# --- ordering within the program -----------------------------------------------------------------------------------


@tegula.jit
def reduce_then_read_kernel(x_ptr, out_ptr, other_ptr, copy_ptr, N, ROUNDS: tl.constexpr, B: tl.constexpr):
    # Adds into out, then reads out back (must see its own reductions), and reads `other` (need not wait).
    out = tl.make_tensor_descriptor(out_ptr, [N], [1], [B])
    offs = tl.program_id(0) * B + tl.arange(0, B)
    for r in range(ROUNDS):
        out.atomic_add([tl.program_id(0) * B], tl.load(x_ptr + offs) + tl.load(other_ptr + offs))
    tl.store(copy_ptr + offs, tl.load(out_ptr + offs))


@pytest.mark.usefixtures("_emulator")
def test_a_load_after_a_tma_reduction_sees_it():
    N, B = 256, 64
    rng = np.random.default_rng(7)
    x, other, out = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    copy = np.zeros_like(out)
    want = out + 3 * (x + other)
    compiled = emulate(reduce_then_read_kernel, (N // B,), x, out, other, copy, N, ROUNDS=3, B=B, seed=3)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(copy, want, rtol=1e-5)
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    # Only the load of out waits for the reductions' writes; the loads of x and other in the loop do not.
    assert kernel.count("tg_bulk_wait<0>();  // this program's TMA reductions, written") == 1, kernel


@pytest.mark.usefixtures("_emulator")
def test_a_missing_wait_before_the_read_back_fails():
    # Waiting only until the reductions have read their blocks, not for their writes, some interleaving reads
    # out before they all landed.
    N, B = 256, 64
    rng = np.random.default_rng(8)
    x, other, out0 = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    want = out0 + 3 * (x + other)
    stale = []
    for seed in range(4):
        out, copy = out0.copy(), np.zeros_like(out0)
        emulate(reduce_then_read_kernel, (N // B,), x, out, other, copy, N, ROUNDS=3, B=B, seed=seed,
                edit_source=lambda s: s.replace("tg_bulk_wait<0>();  // this program's TMA reductions",
                                                "tg_bulk_wait_read<0>();  //"))
        np.testing.assert_allclose(out, want, rtol=1e-5)
        stale.append(not np.allclose(copy, want, rtol=1e-5))
    assert any(stale), "no interleaving read the array before its reductions landed"


@pytest.mark.usefixtures("_emulator")
def test_the_emulator_stops_a_reduction_before_the_tensor():
    # What the H200 does with a reduction at a negative coordinate (an illegal instruction), the emulator reports.
    def earlier(src):
        return re.sub(r"(tg_tma_reduce_add_2d\(&tg_map0, tg_shared_address\(s\d+\), v\d+, )(v\d+)", r"\1\2 - 1", src,
                      count=1)

    with pytest.raises(EmulatorError, match="bulk tensor reduction at coordinate -1 of dim 1: negative"):
        run_overlap(37, 48, 16, 16, 0, edit_source=earlier)


@pytest.mark.usefixtures("_emulator")
def test_a_missing_read_wait_fails():
    with pytest.raises(EmulatorError, match=r"bulk tensor reduction \(add\).*wait_group.read missing"):
        run_overlap(37, 48, 16, 16, 0, edit_source=lambda s: s.replace("tg_bulk_wait_read<0>();", ";", 1))


# --- a transposed block, staged from the tile's registers ----------------------------------------------------------


@tegula.jit
def transposed_kernel(x_ptr, out_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # out += 2 x's [BN, BM] block at (n, m), transposed; y = that plus 1, transposed, stored.
    x = tl.make_tensor_descriptor(x_ptr, [N, M], [M, 1], [BN, BM])
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    y = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    block = x.load([n, m]) * 2
    out.atomic_add([m, n], block.T)
    y.store([m, n], (block + 1).T)


@pytest.mark.usefixtures("_emulator")
def test_a_transposed_block_is_staged_from_its_tiles_registers():
    M, N, BM, BN = 40, 48, 16, 32
    rng = np.random.default_rng(6)
    x = rng.standard_normal((N, M)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    y = np.zeros((M, N), np.float32)
    want = out + 2 * x.T
    compiled = emulate(transposed_kernel, (-(-M // BM), -(-N // BN)), x, out, y, M, N, BM=BM, BN=BN)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(y, 2 * x.T + 1)
    # Both transposes go to shared memory once, as the TMA's blocks (row-major and swizzled).
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    assert kernel.count("stages the operand's registers transposed") == 2, kernel


def test_nvrtc_assembles_the_bulk_reduction():
    # The generated PTX goes through ptxas for sm_90a (NVRTC, no GPU needed).
    from cuda_compile_util import require_nvrtc

    require_nvrtc(90)
    x, out = np.zeros((4, 16, 16), np.float32), np.zeros((37, 48), np.float32)
    request, _ = overlap_add_kernel._request_for(x, out, 37, 48, **META)
    compiled = tegula._C.compile(request, tegula._C.CompileOptions(backend="cuda", cuda_arch=90, keep_stages=True))
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group" in compiled.ptx
    assert "cp.async.bulk.wait_group.read 0;" in compiled.ptx
    ints = np.zeros((5, 8, 16), np.int64), np.zeros((19, 16), np.int64)
    request, _ = integer_kernel._request_for(*ints, 19, 16, OP="xor", BM=8, BN=16)
    compiled = tegula._C.compile(request, tegula._C.CompileOptions(backend="cuda", cuda_arch=90, keep_stages=True))
    assert "cp.reduce.async.bulk.tensor.2d.global.shared::cta.xor.tile.bulk_group" in compiled.ptx


# --- inside a TMA ring's body ----------------------------------------------------------------------------------------


@tegula.jit
def ring_reduce_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Each K step's product reduced into C through the TMA (as an attention backward adds dQ), and accumulated in
    # place into D.
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        c_desc.atomic_add([off_m, off_n], tl.dot(a, b))
        acc = tl.dot(a, b, acc)
    d_desc = tl.make_tensor_descriptor(d_ptr, [M, N], [N, 1], [BM, BN])
    d_desc.store([off_m, off_n], acc)


@pytest.mark.usefixtures("_emulator")
@pytest.mark.parametrize("M,N,K,BM,BN,BK,warps,stages", [
    (80, 96, 208, 64, 64, 32, 4, 3),     # ragged, one warpgroup
    (128, 144, 160, 128, 64, 64, 8, 2),  # two warpgroups
])
def test_a_ring_body_reduces_into_another_array(M, N, K, BM, BN, BK, warps, stages):
    # C is no ring block's source: the loop stays a TMA ring, its body reducing each step's product into C.
    rng = np.random.default_rng(M + N + K)
    a = rng.uniform(-2, 2, (M, K)).astype(np.float16)
    b = rng.uniform(-2, 2, (K, N)).astype(np.float16)
    c, d = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    compiled = emulate(ring_reduce_kernel, (-(-M // BM), -(-N // BN)), a, b, c, d, M, N, K, BM=BM, BN=BN, BK=BK,
                       num_warps=warps, num_stages=stages)
    assert f"TMA ring: {stages} stages" in compiled.source and compiled.layouts.count("TMA ring through") == 2
    assert re.search(r"desc_atomic at .*: TMA through tg_map\d", compiled.layouts), compiled.layouts
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = K * 2.0 ** -20 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-5
    for name, got in (("reductions", c), ("accumulator", d)):
        assert (np.abs(got - want) <= tol).all(), f"{name}: worst {np.abs(got - want).max()}"


@tegula.jit
def accumulate_rounds_kernel(x_ptr, out_ptr, M, N, ROUNDS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # Every round stages a different block in the same shared-memory area and reduces it into out.
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    tile = (tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]).to(tl.int64)
    for r in range(ROUNDS):
        x = tl.load(x_ptr + (tl.program_id(0) * ROUNDS + r) * BM * BN + tile)
        out.atomic_add([tl.program_id(0) * BM, 0], x * 2.0)


@pytest.mark.usefixtures("_emulator")
def test_the_wait_for_a_reductions_read_is_deferred_to_the_areas_next_use():
    # A reduction's thread issues it and goes on; thread 0 waits for the copy engine to have read the block only
    # where the next round is about to stage into the same area, before that staging's barrier (and before the
    # CTA's shared memory goes). Without that wait the next round overwrites a block still being read.
    M, N, BM, BN, rounds = 64, 32, 16, 32, 4
    rng = np.random.default_rng(11)
    x = rng.standard_normal((M // BM) * rounds * BM * BN).astype(np.float32)
    out0 = rng.standard_normal((M, N)).astype(np.float32)
    want = out0 + 2 * x.reshape(M // BM, rounds, BM, BN).sum(axis=1).reshape(M, N)
    for seed in range(3):
        out = out0.copy()
        compiled = emulate(accumulate_rounds_kernel, (M // BM,), x, out, M, N, ROUNDS=rounds, BM=BM, BN=BN,
                           seed=seed)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    kernel = compiled.source[compiled.source.index("---- kernel ----"):]
    body = kernel[kernel.index("for (unsigned long long"):]  # the rounds (the loops before it: staging)
    wait = "if (threadIdx.x == 0) tg_bulk_wait_read<0>();"
    assert re.search(r"tg_bulk_commit\(\);[^\n]*\n\s*\}", body), body  # no wait right after the commit
    assert body.index(wait) < body.index("tg_tma_reduce_add_2d"), body  # in the loop, before the staging
    assert kernel.rstrip().endswith("}") and wait in kernel[kernel.rindex("tg_tma_reduce_add_2d"):], kernel
    with pytest.raises(EmulatorError, match="wait_group.read"):
        for seed in range(4):
            emulate(accumulate_rounds_kernel, (M // BM,), x, out0.copy(), M, N, ROUNDS=rounds, BM=BM, BN=BN,
                    seed=seed, edit_source=lambda s: s.replace(wait, ";"))
