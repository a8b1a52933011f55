"""tl.dot on tensor cores (the CUDA backend's mma.sync path), against float64
references with tolerances by precision.

Three ways each case can run:
  * on the backend under test (`backend` fixture): the whole grid on a GPU,
    a small part of it on the CPU backend (which computes every dot exactly);
  * emulated (`*_emulated`): the CUDA backend's generated code for sm_90 run
    on the host by tests/python/cuda_emulator.py, whose ldmatrix and mma
    follow the PTX ISA's fragment tables: the layouts, swizzles and
    pipelines are checked without a GPU;
  * the SASS of the benchmark matmul must contain tensor-core instructions
    (HMMA) when ptxas and cuobjdump are found.

Bounds per element, with |A|@|B| the magnitude of the exact product:
fp16/bf16 operands multiply exactly and accumulate in fp32:
2 K eps32 |A|@|B|; tf32 rounds each operand to 11 significant bits first:
2^-9 |A|@|B| on top; the split precisions drop the smallest terms of each
product: tf32x3 2^-19 |A|@|B|, bf16x3 2^-14, bf16x6 2^-19 on top; int8 is
exact.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import compile_cuda, emulate, require_emulator
from dot_kernels import dot_epilogue_kernel, dot_tile_kernel, matmul_loop_kernel
from ops_util import eps, np_dtype, random, rng_for, to_f64

# --- running a case --------------------------------------------------------------------------


def run(where, kernel, grid, args, num_warps, num_stages=None, **meta):
    """Runs kernel[grid](*args) on `where` (a Backend, or "emulated") and
    returns the arguments afterwards, arrays as NumPy."""
    if where == "emulated":
        arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        emulate(kernel, grid, *arrays, num_warps=num_warps, num_stages=num_stages, **meta)
        return arrays
    on_device = [where.array(a) if isinstance(a, np.ndarray) else a for a in args]
    options = {} if num_stages is None else {"num_stages": num_stages}
    kernel[grid](*on_device, num_warps=num_warps, **options, **meta)
    return [where.numpy(d) if isinstance(a, np.ndarray) else d for a, d in zip(args, on_device)]


def magnitude(a64, b64):
    return np.abs(a64) @ np.abs(b64)


def bound(precision, a64, b64, k):
    mag = magnitude(a64, b64)
    if precision == "int8":
        return 0.0
    b = 2 * k * eps("float32") * mag + 1e-30
    b += {"tf32": 2.0 ** -9, "tf32x3": 2.0 ** -19, "bf16x3": 2.0 ** -14, "bf16x6": 2.0 ** -19}.get(precision, 0) * mag
    return b


def assert_close(actual, want, atol, what):
    err = np.abs(actual.astype(np.float64) - want)
    bad = err > atol
    if bad.any():
        i = np.unravel_index(np.argmax(err - atol), err.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {err.size} elements off; worst at {i}: "
                             f"got {actual[i]}, want {want[i]} (bound {np.broadcast_to(atol, err.shape)[i]:.3g})")


# (input dtype, precision): the dot's operand type and the precision the kernel asks for.
KINDS = {
    "float16": ("float16", "ieee"),
    "bfloat16": ("bfloat16", "ieee"),
    "tf32": ("float32", "tf32"),
    "tf32x3": ("float32", "tf32x3"),
    "bf16x3": ("float32", "bf16x3"),
    "bf16x6": ("float32", "bf16x6"),
    "ieee": ("float32", "ieee"),
    "int8": ("int8", "ieee"),
}

# (M, N, K, num_warps): 16 to 256, non-square, warps replicating small tiles.
SHAPES = [
    (16, 16, 32, 1), (16, 32, 64, 2), (32, 16, 32, 4), (64, 64, 32, 4), (32, 64, 128, 2),
    (128, 64, 32, 8), (64, 128, 64, 4), (16, 128, 32, 8), (128, 16, 64, 1), (256, 64, 32, 8),
    (64, 256, 32, 8), (128, 128, 32, 4), (256, 128, 32, 8), (16, 16, 256, 4),
]
CPU_SHAPES = SHAPES[:2]

EMULATED = [
    ("float16", (16, 16, 32, 1), False), ("bfloat16", (64, 64, 32, 4), False),
    ("bfloat16", (32, 64, 128, 2), True), ("float16", (128, 16, 64, 1), True),
    ("tf32", (32, 16, 32, 4), False), ("tf32", (64, 64, 32, 4), True),
    ("int8", (64, 32, 64, 2), False), ("int8", (32, 64, 64, 4), True),
    ("bfloat16", (16, 128, 32, 8), False), ("float16", (128, 64, 32, 8), False),
    ("tf32x3", (32, 32, 32, 4), False), ("tf32x3", (64, 32, 32, 2), True),
    ("bf16x3", (32, 32, 32, 4), False), ("bf16x3", (16, 64, 64, 4), True),
    ("bf16x6", (32, 16, 64, 1), False), ("bf16x6", (64, 64, 32, 4), True),
]


def dot_case(where, kind, shape, transposed):
    M, N, K, warps = shape
    name, precision = KINDS[kind]
    rng = rng_for("tc-dot", kind, *shape, transposed)
    if name == "int8":
        a, b = random(rng, (M, K), name), random(rng, (K, N), name)
        c = random(rng, (M, N), "int32", low=-1000, high=1000)
    else:
        a, b = random(rng, (M, K), name, low=-2, high=2), random(rng, (K, N), name, low=-2, high=2)
        c = random(rng, (M, N), "float32", low=-2, high=2)
    b_arg = np.ascontiguousarray(b.T) if transposed else b
    out = np.zeros((M, N), c.dtype)
    out = run(where, dot_tile_kernel, (1,), [a, b_arg, c, out], warps, M=M, N=N, K=K, PRECISION=precision,
              B_TRANSPOSED=transposed)[3]
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64 + to_f64(c)
    tol = bound("int8" if name == "int8" else precision, a64, b64, K) + eps("float32") * np.abs(want)
    assert_close(out, want, tol, f"{kind} dot {M}x{N}x{K} ({warps} warps{', b transposed' if transposed else ''})")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:3])) + f"_w{s[3]}")
def test_dot_tile(backend, kind, shape):
    if not backend.is_cuda and shape not in CPU_SHAPES:
        pytest.skip("the full grid runs on the GPU")
    dot_case(backend, kind, shape, False)


@pytest.mark.parametrize("kind", ["float16", "tf32", "int8"])
@pytest.mark.parametrize("shape", [(32, 64, 64, 4), (64, 32, 128, 8), (16, 16, 32, 1)],
                         ids=lambda s: "x".join(map(str, s[:3])) + f"_w{s[3]}")
def test_dot_tile_with_transposed_operand(backend, kind, shape):
    if not backend.is_cuda and shape != (32, 64, 64, 4):
        pytest.skip("the full grid runs on the GPU")
    dot_case(backend, kind, shape, True)


@pytest.mark.parametrize("kind,shape,transposed", EMULATED,
                         ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)) if isinstance(v, tuple)
                         else ("bt" if v else "b"))
def test_dot_tile_emulated(kind, shape, transposed):
    require_emulator()
    dot_case("emulated", kind, shape, transposed)


def f16_accumulator_case(where, shape):
    # f16 operands into an f16 result accumulate in f16 (mma .f16.f16.f16.f16,
    # as Triton's): each K step of 16 rounds the accumulator once.
    M, N, K, warps = shape
    rng = rng_for("tc-f16-acc", *shape)
    a, b = random(rng, (M, K), "float16", low=-2, high=2), random(rng, (K, N), "float16", low=-2, high=2)
    c = random(rng, (M, N), "float16", low=-2, high=2)
    out = run(where, dot_tile_kernel, (1,), [a, b, c, np.zeros((M, N), np.float16)], warps, M=M, N=N, K=K,
              PRECISION="ieee", B_TRANSPOSED=False)[3]
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64 + to_f64(c)
    tol = 2 * (K // 16 + 1) * eps("float16") * (magnitude(a64, b64) + np.abs(to_f64(c)))
    assert_close(out, want, tol, f"f16 dot into f16 {M}x{N}x{K} ({warps} warps)")


@pytest.mark.parametrize("shape", [(32, 32, 32, 4), (64, 64, 64, 4), (128, 64, 32, 8)],
                         ids=lambda s: "x".join(map(str, s[:3])) + f"_w{s[3]}")
def test_dot_f16_accumulator(backend, shape):
    if not backend.is_cuda and shape != (32, 32, 32, 4):
        pytest.skip("the full grid runs on the GPU")
    f16_accumulator_case(backend, shape)


@pytest.mark.parametrize("shape", [(32, 32, 32, 4), (64, 64, 64, 4)], ids=lambda s: "x".join(map(str, s)))
def test_dot_f16_accumulator_emulated(shape):
    require_emulator()
    f16_accumulator_case("emulated", shape)


def epilogue_case(where, name, out_name, shape):
    M, N, K, warps = shape
    rng = rng_for("tc-epilogue", name, out_name, *shape)
    a, b = random(rng, (M, K), name, low=-2, high=2), random(rng, (K, N), name, low=-2, high=2)
    bias = random(rng, (N,), "float32", low=-4, high=4)
    out = np.zeros((M, N), np_dtype(out_name))
    out = run(where, dot_epilogue_kernel, (1,), [a, b, bias, out], warps, M=M, N=N, K=K)[3]
    a64, b64 = to_f64(a), to_f64(b)
    want = np.maximum(a64 @ b64 + bias, 0.0)
    tol = bound("tf32" if name == "float32" else "ieee", a64, b64, K) + 2 * eps(out_name) * np.abs(want) + 1e-6
    assert_close(out, want, tol, f"relu(a @ b + bias) -> {out_name}, {M}x{N}x{K}")


@pytest.mark.parametrize("name,out_name,shape", [
    ("bfloat16", "bfloat16", (64, 64, 32, 4)), ("float16", "float16", (128, 64, 64, 8)),
    ("float32", "float32", (32, 64, 32, 2)), ("bfloat16", "float32", (16, 32, 16, 1)),
])
def test_dot_epilogue(backend, name, out_name, shape):
    epilogue_case(backend, name, out_name, shape)


def test_dot_epilogue_emulated():
    require_emulator()
    epilogue_case("emulated", "bfloat16", "bfloat16", (64, 32, 32, 4))


def matmul_case(where, name, out_name, M, N, K, blocks, warps, num_stages=None, a_transposed=False,
                b_transposed=False):
    """A K loop over a [M, K] @ [K, N]; a (b) stored transposed, as [K, M]
    ([N, K]), when asked: the kernel reads it through its strides."""
    BM, BN, BK = blocks
    rng = rng_for("tc-matmul", name, M, N, K, *blocks)
    a, b = random(rng, (M, K), name, low=-2, high=2), random(rng, (K, N), name, low=-2, high=2)
    a_arg = np.ascontiguousarray(a.T) if a_transposed else a
    b_arg = np.ascontiguousarray(b.T) if b_transposed else b
    strides = [1, M] if a_transposed else [K, 1]
    strides += [1, K] if b_transposed else [N, 1]
    c = np.zeros((M, N), np_dtype(out_name))
    grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
    c = run(where, matmul_loop_kernel, grid, [a_arg, b_arg, c, M, N, K, *strides, N, 1], warps, num_stages, BM=BM,
            BN=BN, BK=BK, ACC=tl.int32 if name == "int8" else tl.float32)[2]
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    if name == "int8":
        tol = 0.0
    else:
        tol = bound("tf32" if name == "float32" else "ieee", a64, b64, K) + 2 * eps(out_name) * np.abs(want) + 1e-6
    assert_close(c, want, tol, f"{name} matmul {M}x{N}x{K} in {blocks} blocks, {num_stages} stages -> {out_name}")


# K loops: masked tails (K not a multiple of BLOCK_K; K a multiple of 16 so
# the loads can be pipelined, or not), every num_stages.
MATMULS = [
    ("bfloat16", "float32", 37, 50, 83, (32, 64, 32), 4, 3),
    ("float16", "float16", 100, 72, 208, (64, 64, 32), 4, 3),
    ("bfloat16", "bfloat16", 130, 260, 144, (128, 128, 64), 8, 3),
    ("float32", "float32", 48, 40, 80, (32, 32, 16), 2, 3),
    ("float16", "float32", 33, 17, 40, (16, 16, 16), 1, 3),
    ("bfloat16", "float32", 64, 64, 48, (64, 64, 32), 4, 1),
    ("bfloat16", "float32", 64, 64, 176, (64, 64, 32), 4, 2),
    ("float16", "float32", 96, 80, 336, (32, 64, 32), 2, 4),
    ("float16", "float32", 256, 256, 512, (128, 256, 64), 8, 4),
    ("int8", "int32", 64, 64, 96, (64, 64, 32), 4, 3),
]


@pytest.mark.parametrize("name,out_name,M,N,K,blocks,warps,stages", MATMULS)
def test_matmul_k_loop(backend, name, out_name, M, N, K, blocks, warps, stages):
    if not backend.is_cuda and (blocks[0] > 64 or stages != 3):
        pytest.skip("the full grid runs on the GPU")
    matmul_case(backend, name, out_name, M, N, K, blocks, warps, stages)


@pytest.mark.parametrize("name,out_name,M,N,K,blocks,warps,stages", [
    ("bfloat16", "float32", 37, 50, 83, (32, 32, 32), 4, 3),    # tail masks too fine for cp.async
    ("bfloat16", "float32", 37, 50, 80, (32, 32, 32), 4, 3),    # pipelined, masked tail
    ("float16", "float16", 40, 36, 112, (32, 32, 16), 2, 2),
    ("float16", "float32", 64, 32, 96, (32, 32, 32), 1, 4),
    ("float32", "float32", 20, 30, 56, (16, 32, 16), 2, 3),     # tf32, b rows along N: 32-bit loads
    ("int8", "int32", 32, 32, 96, (32, 32, 32), 4, 3),
])
def test_matmul_k_loop_emulated(name, out_name, M, N, K, blocks, warps, stages):
    require_emulator()
    matmul_case("emulated", name, out_name, M, N, K, blocks, warps, stages)


# Hopper wgmma (sm_90, warps in warpgroups, BLOCK_M a multiple of 64): every
# descriptor form: operands stored with rows along K or along M/N (a and b
# given transposed), swizzles of 128, 64 and 32 bytes (BLOCK_K 64, 32, 16;
# 128 spans two swizzle atoms), warpgroups side by side along M and along N.
WGMMA_CASES = [
    # name, out, M, N, K, blocks, warps, stages, a transposed, b transposed
    ("bfloat16", "float32", 80, 72, 144, (64, 64, 64), 4, 3, False, False),
    ("float16", "float32", 64, 96, 80, (64, 32, 32), 4, 2, False, True),
    ("bfloat16", "bfloat16", 128, 64, 48, (128, 64, 16), 8, 3, True, False),
    ("float16", "float16", 64, 128, 256, (64, 128, 128), 8, 2, True, True),
]


@pytest.mark.parametrize("name,out_name,M,N,K,blocks,warps,stages,a_t,b_t", WGMMA_CASES)
def test_wgmma_k_loop(backend, name, out_name, M, N, K, blocks, warps, stages, a_t, b_t):
    if not backend.is_cuda:
        pytest.skip("runs on the GPU (and emulated)")
    matmul_case(backend, name, out_name, M, N, K, blocks, warps, stages, a_t, b_t)


@pytest.mark.parametrize("name,out_name,M,N,K,blocks,warps,stages,a_t,b_t", WGMMA_CASES)
def test_wgmma_k_loop_emulated(name, out_name, M, N, K, blocks, warps, stages, a_t, b_t):
    require_emulator()
    compiled, _ = compile_cuda(matmul_loop_kernel, *_matmul_args(name, out_name, M, N, K, blocks, a_t, b_t),
                               warps, 90, stages)
    assert "tensor cores: wgmma" in compiled.source
    matmul_case("emulated", name, out_name, M, N, K, blocks, warps, stages, a_t, b_t)


def _matmul_args(name, out_name, M, N, K, blocks, a_t, b_t):
    a = np.zeros((K, M) if a_t else (M, K), np_dtype(name))
    b = np.zeros((N, K) if b_t else (K, N), np_dtype(name))
    strides = ([1, M] if a_t else [K, 1]) + ([1, K] if b_t else [N, 1])
    args = [a, b, np.zeros((M, N), np_dtype(out_name)), M, N, K, *strides, N, 1]
    BM, BN, BK = blocks
    return args, {"BM": BM, "BN": BN, "BK": BK, "ACC": tl.float32}


def test_benchmark_matmul_emulated():
    # The benchmark kernel (grouped program order, rows wrapped with % M
    # instead of masks) at its GPU block sizes: pipelined, K tail masked.
    require_emulator()
    import ml_dtypes

    import matmul

    M, N, K = 128, 256, 200
    rng = rng_for("tc-bench-matmul")
    a = random(rng, (M, K), "bfloat16", low=-2, high=2)
    b = random(rng, (K, N), "bfloat16", low=-2, high=2)
    c = np.zeros((M, N), ml_dtypes.bfloat16)
    blocks = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
    compiled = emulate(matmul.matmul_kernel, (2,), a, b, c, M, N, K, K, 1, N, 1, N, 1, num_warps=4, num_stages=3,
                       **blocks)
    assert "software pipeline: 3 stages" in compiled.source
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    assert_close(c, want, bound("ieee", a64, b64, K) + 2 * eps("bfloat16") * np.abs(want), "benchmark matmul")


# --- the instructions ------------------------------------------------------------------------


def _tool(name):
    for candidate in [shutil.which(name), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", name)]:
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def sass_of(kernel, args, constexprs, num_warps, arch, tmp_path):
    """The SASS of `kernel` compiled for sm_`arch` (skips without ptxas and cuobjdump)."""
    require_emulator()
    ptxas, cuobjdump = _tool("ptxas"), _tool("cuobjdump")
    if ptxas is None or cuobjdump is None:
        pytest.skip("ptxas and cuobjdump are needed to read the SASS")
    compiled, _ = compile_cuda(kernel, args, constexprs, num_warps, arch)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(compiled.ptx)
    cubin = tmp_path / "k.cubin"
    target = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
    subprocess.run([ptxas, f"-arch={target}", str(ptx), "-o", str(cubin)], check=True, timeout=300)
    return subprocess.run([cuobjdump, "-sass", str(cubin)], check=True, capture_output=True, text=True,
                          timeout=300).stdout


@pytest.mark.parametrize("arch", [80, 90])
def test_matmul_uses_tensor_cores(arch, tmp_path):
    # The benchmark matmul at 4096^3 bf16, 128x128x64 blocks: mma.sync fed by
    # ldmatrix on sm_80, wgmma (HGMMA) on sm_90a; operands loaded with cp.async.
    import ml_dtypes

    import matmul

    M = N = K = 4096
    a = np.zeros((64, 64), ml_dtypes.bfloat16)
    c = np.zeros((64, 64), ml_dtypes.bfloat16)
    args = [a, a, c, M, N, K, K, 1, N, 1, N, 1]
    blocks = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
    sass = sass_of(matmul.matmul_kernel, args, blocks, 4, arch, tmp_path)
    if arch >= 90:
        assert len(re.findall(r"\bHGMMA\.64x128x16\.F32\.BF16\b", sass)) > 0, "no bf16 HGMMA in the matmul's SASS"
    else:
        assert len(re.findall(r"\bHMMA\.16816\.F32\.BF16\b", sass)) > 0, "no bf16 HMMA in the matmul's SASS"
        assert "LDSM" in sass, "operands are not loaded with ldmatrix"
    assert "LDGSTS" in sass, "operands are not loaded with cp.async"
