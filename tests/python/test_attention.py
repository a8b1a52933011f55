"""Flash attention forward (examples/flash_attention.py) against a float64 reference.

Runs on the backend under test (`backend` fixture: the CPU, or the GPU with
--backend cuda); runs the CUDA backend's code for sm_80 (mma.sync) and sm_90
(wgmma) on the host through tests/python/cuda_emulator.py; and compiles the
benchmark's configurations for both wherever NVRTC loads, checking that both
products run on tensor cores with pipelined loads.

Tolerances by precision, for unit-normal q, k, v (scores sm_scale * q.k of
about unit size, outputs averages of values within a few units):
  * 16-bit inputs: q.k is exact in the fp32 accumulator, so the scores and
    the log-sum-exp are fp32-accurate; the probabilities are rounded to the
    input type before the second product (relative 2^-11 for fp16, 2^-8 for
    bf16), and so is the output;
  * float32 on the CPU: every step in fp32;
  * float32 on a GPU: both products run at tf32 (operands rounded to 2^-11),
    so the scores are off by up to ~2^-10 sum|q_i k_i| sm_scale.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuda_compile_util import compile_for_cuda
from cuda_emulator import emulate, require_emulator
from ops_util import np_dtype, rng_for
import flash_attention as attn

OUT_TOLERANCE = {"float16": (4e-3, 2.0 ** -10), "bfloat16": (2.5e-2, 2.0 ** -7)}
LSE_TOLERANCE = {"float16": 1e-4, "bfloat16": 1e-4}


def tolerances(dtype: str, backend) -> tuple:
    """(atol, rtol) of the output and atol of the log-sum-exp."""
    if dtype == "float32":
        return ((1e-2, 1e-2), 1e-2) if backend.is_cuda else ((2e-5, 1e-5), 2e-5)
    return OUT_TOLERANCE[dtype], LSE_TOLERANCE[dtype]


def inputs(shape, dtype: str, seed_key, scale: float = 1.0):
    rng = rng_for("attention", *seed_key)
    return [(rng.standard_normal(shape) * scale).astype(np_dtype(dtype)) for _ in range(3)]


def check(backend, shape, dtype, causal, scale=1.0, sm_scale=None, **launch):
    """Runs the kernel on `backend` and compares out and lse with the float64 reference."""
    q, k, v = inputs(shape, dtype, (shape, dtype, causal, scale))
    out, lse = attn.attention(*(backend.array(x) for x in (q, k, v)), causal=causal, sm_scale=sm_scale,
                              **launch)
    out, lse = backend.numpy(out), backend.numpy(lse)
    assert out.dtype == q.dtype and out.shape == q.shape
    assert lse.dtype == np.float32 and lse.shape == q.shape[:3]
    want_out, want_lse = attn.attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=causal,
                                                  sm_scale=sm_scale)
    (atol, rtol), lse_atol = tolerances(dtype, backend)
    assert_within(out, want_out, atol + rtol * np.abs(want_out), "out")
    assert_within(lse, want_lse, lse_atol * max(1.0, scale ** 2), "lse")


def assert_within(actual, want, bound, what):
    err = np.abs(np.asarray(actual).astype(np.float64) - want)
    bad = ~(err <= bound)  # NaN is bad
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1)), err.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {err.size} elements off; worst at {i}: got "
                             f"{actual[i]}, want {want[i]} (bound {np.broadcast_to(bound, err.shape)[i]:.3g})")


# --- against the reference ---------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1, 2, 100, 16), (2, 3, 77, 64)], ids=lambda s: "x".join(map(str, s)))
def test_matches_reference(backend, shape, dtype, causal):
    # S = 100 and 77 are not multiples of the 64-row blocks: masked tails of
    # queries and keys; B * H > 1 programs along the grid's second axis.
    check(backend, shape, dtype, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_whole_blocks(backend, causal):
    # S a multiple of the blocks: the loops without a tail iteration.
    check(backend, (2, 1, 128, 64), "float16", causal)


@pytest.mark.parametrize("causal,dtype", [(False, "float32"), (True, "bfloat16")])
def test_head_dim_128(backend, causal, dtype):
    check(backend, (1, 1, 40, 128), dtype, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_benchmark_blocks(backend, causal):
    # The GPU benchmark's blocks (128 query rows, 64 keys, 8 warps): two key
    # blocks cross each query block's diagonal, the second fully masked for
    # half of its rows.
    check(backend, (1, 2, 200, 64), "float16", causal, BLOCK_M=128, BLOCK_N=64, num_warps=8)


def test_small_blocks_and_custom_scale(backend):
    # Four key blocks per query block on the diagonal; a scale that is not 1/sqrt(D).
    check(backend, (2, 1, 50, 32), "float16", True, sm_scale=0.3, BLOCK_M=64, BLOCK_N=16)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_large_scores_stay_finite(backend, causal):
    # Scores of a few hundred: exp would overflow float32 without the running
    # maximum; a row's weight concentrates on one key.
    check(backend, (1, 1, 70, 16), "float32", causal, scale=6.0)


def test_single_query_and_key(backend):
    # S = 1: the only key gets all the weight; out == v, lse == the one score.
    check(backend, (1, 2, 1, 16), "float32", True)
    check(backend, (1, 2, 1, 16), "float32", False)


def test_strided_inputs_and_output(backend):
    # q, k, v as [B, S, H, D] memory viewed as [B, H, S, D] (the layout of a
    # fused QKV projection), out written into a wider buffer.
    B, H, S, D = 2, 3, 45, 32
    q, k, v = inputs((B, S, H, D), "float16", ("strided",))
    views = [backend.array(x).swapaxes(1, 2) for x in (q, k, v)]
    buffer = backend.array(np.full((B, H, S, 2 * D), 7.0, np.float16))
    out, lse = attn.attention(*views, causal=True, out=buffer[..., :D])
    buffer, lse = backend.numpy(buffer), backend.numpy(lse)
    want_out, want_lse = attn.attention_reference(*(x.swapaxes(1, 2).astype(np.float64) for x in (q, k, v)),
                                                  causal=True)
    (atol, rtol), lse_atol = tolerances("float16", backend)
    assert_within(buffer[..., :D], want_out, atol + rtol * np.abs(want_out), "out")
    assert_within(lse, want_lse, lse_atol, "lse")
    np.testing.assert_array_equal(buffer[..., D:], np.float16(7.0))


def test_reference_is_softmax_of_scores():
    # The NumPy reference against the textbook formula, causal mask included.
    q, k, v = inputs((1, 2, 9, 16), "float32", ("reference",))
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    out, lse = attn.attention_reference(q, k, v, causal=True, sm_scale=0.5)
    s = q @ np.swapaxes(k, -1, -2) * 0.5
    s[..., np.triu_indices(9, 1)[0], np.triu_indices(9, 1)[1]] = -np.inf
    p = np.exp(s) / np.exp(s).sum(-1, keepdims=True)
    np.testing.assert_allclose(out, p @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, np.log(np.exp(s).sum(-1)), rtol=1e-6)


def test_flops():
    assert attn.flops(4, 32, 4096, 128) == 4 * 4 * 32 * 4096 * 4096 * 128
    assert attn.flops(4, 32, 4096, 128, causal=True) == 2 * 4 * 32 * 4096 * 4096 * 128


def test_empty_sequence(backend):
    q = backend.array(np.zeros((1, 2, 0, 16), np.float16))
    out, lse = attn.attention(q, q, q)
    assert tuple(out.shape) == (1, 2, 0, 16) and tuple(lse.shape) == (1, 2, 0)


def test_rejects_bad_inputs():
    q = np.zeros((1, 1, 8, 16), np.float16)
    with pytest.raises(ValueError, match=r"one shape \[B, H, S, D\]"):
        attn.attention(q, q[:, :, :4], q)
    with pytest.raises(ValueError, match="one dtype"):
        attn.attention(q, q.astype(np.float32), q)
    with pytest.raises(ValueError, match="power of two >= 16"):
        attn.attention(*[np.zeros((1, 1, 8, 24), np.float16)] * 3)
    with pytest.raises(ValueError, match="multiple of BLOCK_N"):
        attn.attention(q, q, q, BLOCK_M=32, BLOCK_N=64)
    with pytest.raises(TypeError, match="unknown block parameters"):
        attn.attention(q, q, q, BLOCK_K=16)


# --- generated code for the GPU --------------------------------------------------------------

# Contiguous [4, 32, 4096, D] bf16 tensors as the benchmark passes them: each
# stride group is (H*S*D, S*D, D, 1); H and S divisible by 16.
_STRIDES = "i32:16, i32:16, i32:16, i32:1"


def signature(D: int, causal: bool, BLOCK_M: int = 128, BLOCK_N: int = 64) -> str:
    return (f"*bf16:16, *bf16:16, *bf16:16, *bf16:16, *fp32:16, {', '.join([_STRIDES] * 4)}, i32:16, i32:16, "
            f"fp32, {D}, {BLOCK_M}, {BLOCK_N}, {causal}")


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_benchmark_configuration_compiles_to_tensor_cores(arch, D, causal, tmp_path):
    # Both products on tensor cores (mma.sync on sm_80, wgmma on sm_90a), K
    # and V tiles brought in by cp.async (the pipelined loops), no spills.
    text = compile_for_cuda(attn.attention_fwd_kernel, signature(D, causal), arch, tmp_path, emit="ptx,ptxas",
                            num_warps=8)
    if arch >= 90:
        assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in text, "q @ k^T is not on wgmma"
        assert f"wgmma.mma_async.sync.aligned.m64n{D}k16.f32.bf16.bf16" in text, "p @ v is not on wgmma"
    else:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in text, "no bf16 mma.sync"
        assert "ldmatrix" in text
    assert "cp.async.cg.shared.global" in text, "K and V are not loaded with cp.async"
    assert " 0 bytes spill stores" in text, text[text.find("ptxas info"):]


@pytest.mark.parametrize("arch,D,causal", [(80, 64, False), (80, 64, True), (90, 64, False), (90, 64, True),
                                           (90, 128, True)])
def test_gpu_code_emulated(arch, D, causal):
    # The benchmark's blocks and warps through the generated CUDA, run on the
    # host: tensor-core layouts, the register-sourced p @ v operand, the row
    # statistics in the accumulator's layout, pipelined and masked key loops.
    require_emulator()
    B, H, S = 1, 2, 200 if D == 64 else 130
    q, k, v = inputs((B, H, S, D), "bfloat16", ("emulated", arch, D, causal))
    out, lse = np.zeros_like(q), np.zeros((B, H, S), np.float32)
    strides = [s // x.itemsize for x in (q, k, v, out) for s in x.strides]
    compiled = emulate(attn.attention_fwd_kernel, (-(-S // 128), B * H), q, k, v, out, lse, *strides, H, S, 0.125,
                       num_warps=8, num_stages=3, arch=arch, HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64, CAUSAL=causal)
    assert compiled.source.count("// software pipeline: 3 stages") == 2
    want_out, want_lse = attn.attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=causal,
                                                  sm_scale=0.125)
    (atol, rtol), lse_atol = OUT_TOLERANCE["bfloat16"], LSE_TOLERANCE["bfloat16"]
    assert_within(out, want_out, atol + rtol * np.abs(want_out), "out")
    assert_within(lse, want_lse, lse_atol, "lse")


@pytest.mark.parametrize("arch", [80, 90])
def test_every_key_loop_is_pipelined(arch, tmp_path):
    # Each of the two loops a program runs (unmasked blocks, then the masked
    # diagonal or tail block) keeps its K and V loads in flight.
    for causal in (False, True):
        source = compile_for_cuda(attn.attention_fwd_kernel, signature(128, causal), arch, tmp_path, emit="cuda",
                                  num_warps=8)
        assert source.count("// software pipeline: 3 stages") == 2, f"causal={causal}"
        assert source.count("in shared memory (pipelined)") == 4, f"causal={causal}"
