"""The example kernels (examples/*.py) through the examples' own checks, at small sizes.

Each example script holds its kernel, a host wrapper, the eager reference and
`check(...)`, which runs the kernel on random data and compares it with the
reference; the tests call it directly (no subprocess) over shapes that include
ones and non-powers of two, plus the edge cases each kernel must get right.
A few tests run a script end to end.
"""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import axpy
import flash_attention
import flash_attention_tma
import fused_chain
import layer_norm
import matmul
import matmul_epilogue
import matmul_persistent
import matmul_fp8
import matmul_tma
import softmax
import tegula
import vector_add

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
ROW_SHAPES = [(1, 1), (3, 7), (17, 1000), (8, 1024), (5, 4097)]


# --- vector add ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 1023, 1025, 98765])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_vector_add_matches_numpy(n, dtype):
    x, y = vector_add.make_inputs(n, dtype, seed=n)
    out = vector_add.add(x, y)
    assert out.dtype == x.dtype
    tegula.testing.assert_close(out, vector_add.add_reference(x, y))


def test_vector_add_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="one shape and dtype"):
        vector_add.add(np.ones(3, np.float32), np.ones(4, np.float32))


# --- axpy (the launch benchmark's kernel) ------------------------------------------------


@pytest.mark.parametrize("n", [1, 1023, 1025, 98765])
def test_axpy_matches_numpy(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    assert axpy.axpy(x, y, out, -1.5) is out
    tegula.testing.assert_close(out, np.float32(-1.5) * x + y, atol=1e-6, rtol=1e-6)


def test_axpy_script_runs_and_says_ok():
    done = subprocess.run([sys.executable, str(EXAMPLES / "axpy.py"), "--sizes", "1", "2000", "--alpha", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["axpy n=1         alpha=2 matches NumPy",
                                        "axpy n=2000      alpha=2 matches NumPy", "OK"]


# --- softmax --------------------------------------------------------------------------


@pytest.mark.parametrize("M,N", ROW_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_example_check(M, N, dtype):
    softmax.check(M, N, dtype, seed=M * N)


def test_softmax_is_stable_for_huge_inputs():
    # exp(1e4) overflows float32; subtracting the row max first must avoid it.
    x = np.array([[1e4, 1e4 - 1.0, -1e4], [-3e38, -3e38, 0.0]], dtype=np.float32)
    y = softmax.softmax(x)
    assert np.isfinite(y).all()
    tegula.testing.assert_close(y, softmax.softmax_reference(x), atol=1e-7, rtol=1e-5)


def test_softmax_strided_rows_leave_padding_untouched():
    # Rows of 300 inside a 512-wide buffer: the kernel must read only the first
    # 300 columns (padding is NaN) and write only those of the output.
    buffer = np.full((6, 512), np.nan, dtype=np.float32)
    buffer[:, :300] = softmax.make_inputs(6, 300, seed=1)
    out_buffer = np.full((6, 512), -7.0, dtype=np.float32)
    softmax.softmax(buffer[:, :300], out=out_buffer[:, :300])
    tegula.testing.assert_close(out_buffer[:, :300], softmax.softmax_reference(buffer[:, :300]),
                                atol=1e-7, rtol=1e-5)
    np.testing.assert_array_equal(out_buffer[:, 300:], -7.0)


# --- layer norm ------------------------------------------------------------------------


@pytest.mark.parametrize("M,N", ROW_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_layer_norm_example_check(M, N, dtype):
    layer_norm.check(M, N, dtype, seed=M + N)


def test_layer_norm_of_constant_rows_is_the_bias():
    # Zero variance: y = 0 * rstd * w + b, and rstd = 1 / sqrt(eps).
    x = np.full((4, 33), 2.5, dtype=np.float32)
    w = np.arange(33, dtype=np.float32)
    b = np.linspace(-1, 1, 33, dtype=np.float32)
    y, mean, rstd = layer_norm.layer_norm(x, w, b, eps=1e-5)
    np.testing.assert_array_equal(y, np.broadcast_to(b, y.shape))
    np.testing.assert_array_equal(mean, 2.5)
    tegula.testing.assert_close(rstd, np.full(4, 1 / np.sqrt(1e-5), np.float32), atol=0, rtol=1e-6)


# --- matmul -------------------------------------------------------------------------------


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (33, 17, 65), (64, 64, 64), (100, 70, 90)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul_example_check(M, N, K, dtype):
    matmul.check(M, N, K, dtype, seed=M + N + K)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul_transposed_operand_through_strides(dtype):
    matmul.check(70, 50, 40, dtype, transpose_b=True)


def test_matmul_grouped_order_covers_every_tile():
    # 7 x 5 tiles with groups of 3 tile-rows: the last group is short, which
    # the grouped program order must handle without skipping or repeating.
    matmul.check(7 * 16 - 3, 5 * 16, 40, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=3)


def test_matmul_fp16_output_and_strided_c():
    a, b = matmul.make_inputs(40, 24, 56, np.float16, seed=3)
    c_buffer = np.full((40, 32), 9.0, dtype=np.float16)
    matmul.matmul(a, b, out=c_buffer[:, :24])
    tegula.testing.assert_close(c_buffer[:, :24], matmul.matmul_reference(a, b), atol=0.1, rtol=1e-2)
    np.testing.assert_array_equal(c_buffer[:, 24:], 9.0)


def test_matmul_with_empty_k_is_zero():
    a, b = np.ones((3, 0), np.float32), np.ones((0, 4), np.float32)
    np.testing.assert_array_equal(matmul.matmul(a, b), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("M,N,K", [(1, 8, 8), (100, 72, 88), (129, 64, 304)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul_tma_example_check(M, N, K, dtype):
    matmul_tma.check(M, N, K, dtype, seed=M + N + K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_matmul_fp8_example_check(dtype):
    # Ragged M and N, two programs walking the tiles; the scales multiply the fp32 sums.
    matmul_fp8.check(129, 80, 320, dtype, seed=3, programs=2, BLOCK_M=64, BLOCK_N=32, BLOCK_K=64)


def test_matmul_tma_programs_walk_the_tiles():
    # Fewer programs than tiles (the GPU's grid of one program per multiprocessor): each walks several tiles.
    matmul_tma.check(129, 200, 72, "float32", seed=5, programs=3, BLOCK_M=32, BLOCK_N=64, BLOCK_K=32)


def test_matmul_tma_rejects_strided_arrays():
    a = np.zeros((16, 32), np.float32)
    with pytest.raises(ValueError, match="contiguous arrays; b has strides"):
        matmul_tma.matmul_tma(a, a.T)


def test_matmul_rejects_bad_shapes_and_blocks():
    a, b = matmul.make_inputs(4, 4, 4)
    with pytest.raises(ValueError, match=r"\[M, K\] and \[K, N\]"):
        matmul.matmul(a, b[:3])
    with pytest.raises(TypeError, match="unknown block parameters"):
        matmul.matmul(a, b, BLOCK_Q=4)


# --- matmul with a fused epilogue, persistent matmul ----------------------------------------------


@pytest.mark.parametrize("activation", ["none", "relu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("M,N,K,dtype", [(1, 1, 1, "float32"), (100, 77, 50, "float16"),
                                         (33, 40, 20, "bfloat16")])
def test_matmul_epilogue_example_check(M, N, K, dtype, activation):
    matmul_epilogue.check(M, N, K, dtype, activation, seed=M + K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)


def test_matmul_epilogue_example_without_bias_or_residual():
    matmul_epilogue.check(100, 77, 50, "float32", "gelu_tanh", fused=False)


@pytest.mark.parametrize("num_programs", [1, 3, None])
@pytest.mark.parametrize("M,N,K,dtype", [(1, 1, 1, "float32"), (100, 77, 50, "float16"),
                                         (70, 65, 40, "bfloat16")])
def test_matmul_persistent_example_check(M, N, K, dtype, num_programs):
    matmul_persistent.check(M, N, K, dtype, num_programs, seed=N, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16,
                                    GROUP_M=2)


# --- fused chain ------------------------------------------------------------------------------


@pytest.mark.parametrize("M,N", [(1, 1), (5, 300), (16, 1024)])
def test_fused_chain_example_check(M, N):
    fused_chain.check(M, N, seed=M)


# --- flash attention -------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B,H,S,D,dtype", [(1, 1, 1, 16, "float32"), (2, 2, 77, 32, "float16"),
                                           (1, 1, 70, 64, "bfloat16")])
def test_flash_attention_example_check(B, H, S, D, dtype, causal):
    flash_attention.check(B, H, S, D, dtype, causal, seed=S)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B,H,S,D,dtype,blocks", [(1, 1, 1, 16, "float32", {}),
                                                  (2, 2, 77, 32, "float16", {"BLOCK_M": 32, "BLOCK_N": 16}),
                                                  (1, 3, 70, 64, "bfloat16", {"BLOCK_M": 64, "BLOCK_N": 32})])
def test_flash_attention_tma_example_check(B, H, S, D, dtype, blocks, causal):
    # The descriptor form: key blocks past S read the next head's rows (or zeros past the end) and are masked.
    flash_attention_tma.check(B, H, S, D, dtype, causal, seed=S, **blocks)


def test_flash_attention_tma_refuses_strided_arrays():
    q = np.zeros((1, 2, 8, 16), np.float32)
    with pytest.raises(ValueError, match="contiguous"):
        flash_attention_tma.attention(q, q, np.swapaxes(q, 1, 2).copy().swapaxes(1, 2), causal=False)


# --- one script end to end -------------------------------------------------------------------


def test_softmax_script_runs_and_says_ok():
    done = subprocess.run([sys.executable, str(EXAMPLES / "softmax.py"), "--shapes", "3x5", "2x1000",
                           "--dtypes", "float32"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "softmax 3x5 float32  matches NumPy (rows sum to 1)",
        "softmax 2x1000 float32  matches NumPy (rows sum to 1)",
        "OK",
    ]


def test_flash_attention_script_runs_and_says_ok():
    done = subprocess.run([sys.executable, str(EXAMPLES / "flash_attention.py"), "--shapes", "1x2x20x16",
                           "--dtypes", "float16"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "attention 1x2x20x16 float16  full   matches the float64 reference",
        "attention 1x2x20x16 float16  causal matches the float64 reference",
        "OK",
    ]


def test_matmul_512_cubed_matches_numpy_to_1e4():
    # The acceptance case: 512x512x512 float32 against a float64 reference.
    rng = np.random.default_rng(512)
    a = rng.standard_normal((512, 512), dtype=np.float32)
    b = rng.standard_normal((512, 512), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rel = np.max(np.abs(matmul.matmul(a, b) - ref)) / np.max(np.abs(ref))
    assert rel < 1e-4, rel
