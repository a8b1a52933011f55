"""The fused-epilogue matmul and the persistent matmul (examples/matmul_epilogue.py,
matmul_persistent.py) against float64 references, on the backend under test
(`backend` fixture: the CPU, or the GPU with --backend cuda); and the
benchmark's configuration (128x128x64, 8 warps, 3 stages) compiled for sm_90
and sm_80 wherever NVRTC loads: tensor cores, cp.async-pipelined K loops (the
persistent kernel's nested inside its tile loop), no spills.

Tolerances by precision, for a, b scaled so C has unit-size entries (K terms
of size 1/sqrt(K)):
  * float32 on the CPU: fp32 products, sums off by ~K ulp at worst;
  * float32 on a GPU: tf32 operands (2^-11 relative), ~1e-3 on C;
  * fp16 / bf16: exact products, fp32 sums, then one rounding of the output
    to 2^-11 / 2^-8 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuda_compile_util import compile_for_cuda
from ops_util import np_dtype
import matmul_epilogue as mep
import matmul_persistent as mpe

SMALL = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}


def tolerance(dtype: str, backend, scale: float = 1.0) -> tuple:
    if dtype == "float32":
        return (2e-3 * scale, 2e-3) if backend.is_cuda else (1e-5 * scale, 1e-5)
    return {"float16": (2e-3 * scale, 2.0 ** -10), "bfloat16": (1.6e-2 * scale, 2.0 ** -7)}[dtype]


def assert_within(got, want, atol, rtol, what=""):
    got = np.asarray(got).astype(np.float64)
    err = np.abs(got - want)
    bad = ~(err <= atol + rtol * np.abs(want))
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1)), err.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {err.size} off; worst at {i}: got {got[i]}, "
                             f"want {want[i]}")


# --- fused epilogue ---------------------------------------------------------------------------


def check_epilogue(backend, M, N, K, dtype, activation, has_bias, has_residual, seed=0, out_dtype=None, **launch):
    a, b, bias, res = mep.make_inputs(M, N, K, np_dtype(dtype), seed)
    bias = bias if has_bias else None
    res = res if has_residual else None
    dev = [None if x is None else backend.array(x) for x in (a, b, bias, res)]
    c = backend.numpy(mep.matmul_epilogue(*dev, activation=activation, out_dtype=out_dtype, **launch))
    assert c.shape == (M, N) and c.dtype == np.dtype(out_dtype or a.dtype)
    wide = [None if x is None else x.astype(np.float64) for x in (a, b, bias, res)]
    want = mep.matmul_epilogue_reference(*wide, activation=activation)
    atol, rtol = tolerance(dtype, backend)
    assert_within(c, want, atol, rtol, f"{activation} bias={has_bias} residual={has_residual}")


@pytest.mark.parametrize("activation", mep.ACTIVATIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_epilogue_every_activation(backend, dtype, activation):
    # 100 x 77 x 50: masked row, column and K tails with the small blocks.
    check_epilogue(backend, 100, 77, 50, dtype, activation, True, True, **SMALL)


@pytest.mark.parametrize("has_bias,has_residual", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("activation", ["none", "gelu_tanh"])
def test_epilogue_optional_operands(backend, activation, has_bias, has_residual):
    check_epilogue(backend, 45, 70, 33, "float16", activation, has_bias, has_residual, **SMALL)


def test_epilogue_default_blocks_and_fp32_output(backend):
    # The benchmark's 128x128x64 tiles; bf16 inputs written to float32.
    check_epilogue(backend, 130, 129, 70, "bfloat16", "silu", True, True, out_dtype=np.float32, num_warps=8)


def test_epilogue_strided_residual_and_output(backend):
    M, N, K = 40, 24, 56
    a, b, bias, res = mep.make_inputs(M, N, K, np.float16, seed=7)
    res_buffer = np.zeros((M, 2 * N), np.float16)
    res_buffer[:, ::2] = res
    out_buffer = backend.array(np.full((M, N + 8), 5.0, np.float16))
    res_view = backend.array(res_buffer)[:, ::2]
    mep.matmul_epilogue(backend.array(a), backend.array(b), backend.array(bias), res_view, "relu",
                        out=out_buffer[:, :N], **SMALL)
    out_buffer = backend.numpy(out_buffer)
    want = mep.matmul_epilogue_reference(*(x.astype(np.float64) for x in (a, b, bias, res)), activation="relu")
    assert_within(out_buffer[:, :N], want, *tolerance("float16", backend), "strided")
    np.testing.assert_array_equal(out_buffer[:, N:], np.float16(5.0))


def test_epilogue_large_values_stay_finite(backend):
    # |C| up to ~100: exp(-x) overflows in silu's and gelu's sigmoid for the
    # negative ones, which must still give -0, not NaN.
    a, b, _, _ = mep.make_inputs(33, 20, 16, np.float32, seed=3)
    for activation in ("gelu_tanh", "silu"):
        c = backend.numpy(mep.matmul_epilogue(backend.array(a * 30), backend.array(b), activation=activation,
                                              **SMALL))
        want = mep.matmul_epilogue_reference((a * 30).astype(np.float64), b.astype(np.float64),
                                             activation=activation)
        assert np.isfinite(c).all()
        assert_within(c, want, *tolerance("float32", backend, scale=30), activation)


def test_epilogue_with_empty_k_is_the_epilogue_of_zero():
    a, b = np.ones((3, 0), np.float32), np.ones((0, 4), np.float32)
    bias, res = np.arange(4, dtype=np.float32) - 1, np.ones((3, 4), np.float32)
    c = mep.matmul_epilogue(a, b, bias, res, "relu")
    np.testing.assert_array_equal(c, np.broadcast_to(np.maximum(bias, 0) + 1, (3, 4)))


def test_epilogue_rejects_bad_inputs():
    a, b, bias, res = mep.make_inputs(4, 4, 4)
    with pytest.raises(ValueError, match="activation must be one of none, relu, gelu_tanh, silu, got 'gelu'"):
        mep.matmul_epilogue(a, b, activation="gelu")
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\), got \(3,\)"):
        mep.matmul_epilogue(a, b, bias[:3])
    with pytest.raises(ValueError, match=r"residual must have shape \(4, 4\), got \(4, 3\)"):
        mep.matmul_epilogue(a, b, residual=res[:, :3])
    with pytest.raises(ValueError, match=r"\[M, K\] and \[K, N\]"):
        mep.matmul_epilogue(a, b[:3])


def test_reference_gelu_is_the_tanh_formula():
    x = np.linspace(-6, 6, 101)
    eye = np.eye(101)
    got = mep.matmul_epilogue_reference(np.diag(x), eye, activation="gelu_tanh").diagonal()
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --- persistent -------------------------------------------------------------------------------


def check_persistent(backend, M, N, K, dtype, seed=0, **launch):
    a, b = mpe.make_inputs(M, N, K, np_dtype(dtype), seed)
    b = b / np.float32(max(K, 1) ** 0.5)
    b = b.astype(a.dtype)
    c = backend.numpy(mpe.matmul_persistent(backend.array(a), backend.array(b), **launch))
    assert c.shape == (M, N) and c.dtype == a.dtype
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert_within(c, want, *tolerance(dtype, backend), f"persistent {M}x{N}x{K}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_persistent_masked_tails(backend, dtype):
    # 4 x 3 tiles (last row and column partial) over 4 programs on the CPU.
    check_persistent(backend, 100, 77, 50, dtype, **SMALL)


@pytest.mark.parametrize("num_programs", [1, 3, 5, 100])
def test_persistent_any_program_count(backend, num_programs):
    # Fewer programs than tiles (each runs several, unevenly for 3 and 5), and
    # more (the grid is cut to the tile count); groups of 2 tile-rows out of 5.
    check_persistent(backend, 5 * 16 - 3, 4 * 16, 40, "float16", num_programs=num_programs, BLOCK_M=16,
                     BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def test_persistent_default_blocks(backend):
    check_persistent(backend, 300, 260, 70, "bfloat16", num_warps=8)


def test_persistent_rejects_bad_inputs():
    a, b = mpe.make_inputs(4, 4, 4)
    with pytest.raises(ValueError, match="num_programs must be at least 1, got 0"):
        mpe.matmul_persistent(a, b, num_programs=0)
    with pytest.raises(TypeError, match="unknown block parameters"):
        mpe.matmul_persistent(a, b, BLOCK_Q=4)


def test_persistent_programs_default():
    assert mpe.default_programs(np.zeros(1)) == mpe.CPU_PROGRAMS


# --- generated code for the GPU --------------------------------------------------------------

_PTRS = "*bf16:16"
_STRIDE_PAIR = "i32:16, i32:1"


def epilogue_signature(activation: str, has_bias=True, has_residual=True) -> str:
    return (f"{', '.join([_PTRS] * 5)}, i32:16, i32:16, i32:16, {', '.join([_STRIDE_PAIR] * 4)}, "
            f"128, 128, 64, 8, {has_bias}, \"{activation}\", {has_residual}")


PERSISTENT_SIGNATURE = f"{', '.join([_PTRS] * 3)}, i32:16, i32:16, i32:16, {', '.join([_STRIDE_PAIR] * 3)}, " \
                       "128, 128, 64, 8, 132"


def assert_tensor_core_code(text: str, arch: int):
    if arch >= 90:
        assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in text, "the product is not on wgmma"
    else:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in text, "no bf16 mma.sync"
        assert "ldmatrix" in text
    assert "cp.async.cg.shared.global" in text, "the K loop does not load with cp.async"
    assert " 0 bytes spill stores" in text, text[text.find("ptxas info"):]


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("activation", ["gelu_tanh", "silu"])
def test_epilogue_benchmark_configuration(arch, activation, tmp_path):
    text = compile_for_cuda(mep.matmul_epilogue_kernel, epilogue_signature(activation), arch, tmp_path,
                            emit="cuda,ptx,ptxas", num_warps=8)
    assert_tensor_core_code(text, arch)
    assert text.count("// software pipeline: 3 stages") == 1
    assert "ex2.approx" in text, "the sigmoid of the activation is missing"


@pytest.mark.parametrize("arch", [80, 90])
def test_persistent_benchmark_configuration(arch, tmp_path):
    # The K loop nested in the tile loop is pipelined like the plain matmul's.
    text = compile_for_cuda(mpe.matmul_persistent_kernel, PERSISTENT_SIGNATURE, arch, tmp_path,
                            emit="cuda,ptx,ptxas", num_warps=8)
    assert_tensor_core_code(text, arch)
    assert text.count("// software pipeline: 3 stages") == 1
    assert "in shared memory (pipelined)" in text


# --- benchmark rows ----------------------------------------------------------------------------


def test_bench_cases_run_and_match_on_cpu_tensors(monkeypatch):
    # The benchmark's cases at their quick size on CPU torch tensors: each
    # Tegula variant matches its reference within the case's tolerance.
    torch = pytest.importorskip("torch")
    from tegula_bench import gpu_measure, gpu_workloads

    monkeypatch.setattr(gpu_workloads, "DEVICE", "cpu")
    for build in (gpu_workloads.matmul_epilogue_case, gpu_workloads.matmul_persistent_case):
        case = build(torch, True, 8)
        want = case.variants[case.reference]()()
        got = case.variants["tegula"]()()
        assert gpu_measure.compare(torch, got, want, *case.tolerance) is None, case.workload
    assert set(gpu_workloads.matmul_epilogue_case(torch, True, 8).variants) == \
        {"tegula", "triton", "torch", "torch.compile", "cublas"}


def test_epilogue_row_floor_is_cublas_and_cublas_is_not_compared():
    from tegula_bench import gpu_report, gpu_workloads
    from tegula_bench.outcome import Outcome

    case = gpu_workloads.Case("matmul_epilogue", "8x8x8", "bfloat16", bytes=1, flops=2_000_000_000, num_warps=8,
                              variants={}, compute_bound=True, floor="cublas", unchecked=("cublas",))
    rows = gpu_report.case_rows(case, [Outcome("torch", [4.0], "reference"), Outcome("cublas", [1.0], "unchecked"),
                                       Outcome("tegula", [1.25], "ok")], 5e9)
    by = {r["variant"]: r for r in rows}
    assert by["cublas"]["floor_frac"] == pytest.approx(1.0)
    assert by["tegula"]["floor_frac"] == pytest.approx(0.8) and by["torch"]["floor_frac"] == pytest.approx(0.25)
