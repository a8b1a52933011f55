"""Matmul with a fused epilogue: ``C = cast(act(A @ B + bias) + residual)``.

The tiling and grouped-M program order are those of ``matmul.py``.
What differs is the end: the fp32 accumulator, still in registers, gets the
per-column bias, the activation and the [M, N] residual before the single
store, so the epilogue costs one read of the residual instead of three more
passes over C in memory. Each part is chosen at compile time (``HAS_BIAS``,
``ACTIVATION``, ``HAS_RESIDUAL``), so an unused one costs nothing. The
output's dtype is the output pointer's.

GELU here is the tanh approximation, written through the identity
``0.5 * (1 + tanh(u)) == sigmoid(2 * u)`` so the kernel uses only
``tl.sigmoid``, which every target has.

Run it: `python examples/matmul_epilogue.py [--shapes 64x64x64 100x77x50 ...] [--dtypes float32 float16 bfloat16]
[--activations none relu gelu_tanh silu]`. Shapes are MxNxK; sizes that are not
multiples of the blocks exercise the masked K loop and the masked epilogue.
Each case runs with the bias and the residual, and once without either.
Prints each case it checked and OK.
"""

import argparse
import math

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

DEFAULT_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
ACTIVATIONS = ("none", "relu", "gelu_tanh", "silu")
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@tegula.jit
def matmul_epilogue_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, res_ptr, M, N, K,
                           stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           stride_rm, stride_rn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                           HAS_RESIDUAL: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    group_first_m = group * GROUP_M
    group_rows = min(tiles_m - group_first_m, GROUP_M)
    within = pid % programs_per_group
    tile_m = group_first_m + within % group_rows
    tile_n = within // group_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    # Rows/columns past M/N wrap to valid ones; the store masks them away.
    a_rows = rows % M
    b_cols = cols % N
    a_tile = a_ptr + a_rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + b_cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    in_c = (rows[:, None] < M) & (cols[None, :] < N)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + b_cols)
        acc = acc + bias.to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu_tanh":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * inner)
    elif ACTIVATION == "silu":
        acc = acc * tl.sigmoid(acc)
    if HAS_RESIDUAL:
        res = tl.load(res_ptr + rows[:, None] * stride_rm + cols[None, :] * stride_rn, mask=in_c, other=0.0)
        acc = acc + res.to(tl.float32)

    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=in_c)


def matmul_epilogue(a, b, bias=None, residual=None, activation: str = "none", out=None, out_dtype=None,
                    num_warps: int = None, num_stages: int = None, **blocks):
    """``cast(act(a @ b + bias) + residual)`` for 2-D a [M, K], b [K, N] of one dtype.

    ``bias`` is [N] (any float dtype), ``residual`` [M, N]; both optional.
    ``activation`` is one of ``ACTIVATIONS``. NumPy arrays or torch tensors
    (CUDA tensors run on the GPU). The result has ``out``'s dtype, else
    ``out_dtype``, else a's.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise coded(ValueError, "E0713", f"matmul_epilogue takes [M, K] and [K, N] arrays, got "
                                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise coded(ValueError, "E0713", f"matmul_epilogue takes a and b of one dtype, got {a.dtype} and {b.dtype}")
    if activation not in ACTIVATIONS:
        raise coded(ValueError, "E0713", f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    unknown = set(blocks) - set(DEFAULT_BLOCKS)
    if unknown:
        raise coded(TypeError, "E0713", f"unknown block parameters {sorted(unknown)}; expected some of "
                                        f"{sorted(DEFAULT_BLOCKS)}")
    meta = {**DEFAULT_BLOCKS, **blocks}
    M, K = a.shape
    N = b.shape[1]
    if bias is not None and tuple(bias.shape) != (N,):
        raise coded(ValueError, "E0713", f"bias must have shape ({N},), got {tuple(bias.shape)}")
    if residual is not None and tuple(residual.shape) != (M, N):
        raise coded(ValueError, "E0713", f"residual must have shape ({M}, {N}), got {tuple(residual.shape)}")
    if out is None:
        out = _host.empty((M, N), out_dtype or a.dtype, like=a)
    if M == 0 or N == 0:
        return out
    if K == 0:  # the epilogue of a zero product: done on the host, nothing to tile
        ref = matmul_epilogue_reference(a, b, bias, residual, activation, out.dtype)
        out[...] = ref
        return out
    options = _host.launch_options(num_warps)
    if num_stages is not None:
        options["num_stages"] = num_stages
    sa, sb, sc = _host.strides(a), _host.strides(b), _host.strides(out)
    sr = _host.strides(residual) if residual is not None else (0, 0)
    # Absent operands are never read (their branches compile away); any
    # pointer stands in for them.
    grid = (tegula.cdiv(M, meta["BLOCK_M"]) * tegula.cdiv(N, meta["BLOCK_N"]),)
    matmul_epilogue_kernel[grid](a, b, out, out if bias is None else bias, out if residual is None else residual,
                                 M, N, K, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1], sr[0], sr[1],
                                 HAS_BIAS=bias is not None, ACTIVATION=activation,
                                 HAS_RESIDUAL=residual is not None, **meta, **options)
    return out


def _activate(x, activation: str, lib):
    if activation == "relu":
        return lib.maximum(x, 0) if lib is np else x.clamp_min(0)
    if activation == "gelu_tanh":
        return 0.5 * x * (1 + lib.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    if activation == "silu":
        return x / (1 + lib.exp(-x))
    return x


def matmul_epilogue_reference(a, b, bias=None, residual=None, activation: str = "none", out_dtype=None):
    """Eager, op by op: torch for torch tensors (``torch.matmul`` in a's dtype,
    then the epilogue in float32), NumPy otherwise (in float32, or float64 for
    float64 inputs: pass float64 arrays for an exact reference)."""
    if _host.is_torch(a):
        import torch

        c = torch.matmul(a, b).float()
        if bias is not None:
            c = c + bias.float()
        c = _activate(c, activation, torch)
        if residual is not None:
            c = c + residual.float()
        if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
            out_dtype = getattr(torch, np.dtype(out_dtype).name)
        return c.to(out_dtype or a.dtype)
    wide = np.float64 if a.dtype == np.float64 else np.float32
    c = a.astype(wide) @ b.astype(wide)
    if bias is not None:
        c = c + bias.astype(wide)
    with np.errstate(over="ignore"):
        c = _activate(c, activation, np)
    if residual is not None:
        c = c + residual.astype(wide)
    return c.astype(out_dtype or a.dtype)


def make_inputs(M: int, N: int, K: int, dtype=np.float32, seed: int = 0):
    """Unit-normal a [M, K], b [K, N] scaled by 1/sqrt(K) (so C has entries of
    about unit size, where the activations bend), bias [N] and residual [M, N]."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32).astype(dtype)
    b = (rng.standard_normal((K, N), dtype=np.float32) / np.float32(max(K, 1) ** 0.5)).astype(dtype)
    bias = rng.standard_normal(N, dtype=np.float32).astype(dtype)
    residual = rng.standard_normal((M, N), dtype=np.float32).astype(dtype)
    return a, b, bias, residual


def bytes_moved(M: int, N: int, K: int, itemsize: int, has_bias=True, has_residual=True) -> int:
    """A, B (and the bias and residual) read once, C written once."""
    return (M * K + K * N + M * N * (2 if has_residual else 1) + (N if has_bias else 0)) * itemsize


def flops(M: int, N: int, K: int) -> int:
    """The product's (2 per multiply-add); the epilogue's few per element are not counted."""
    return 2 * M * N * K


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1x1", "64x64x64", "100x77x50", "130x129x70"]
# (atol, rtol) for C of unit-size entries: fp32 sums, then one rounding to the output type.
TOLERANCES = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2.0 ** -10), "bfloat16": (1.6e-2, 2.0 ** -7)}


def parse_shape(text: str):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def check(M: int, N: int, K: int, dtype: str = "float32", activation: str = "gelu_tanh", fused: bool = True,
          seed: int = 0, **blocks) -> None:
    """Raises AssertionError unless the kernel matches the float64 reference; `fused`
    passes the bias and the residual, else neither."""
    a, b, bias, residual = make_inputs(M, N, K, numpy_dtype(dtype), seed)
    if not fused:
        bias = residual = None
    c = matmul_epilogue(a, b, bias, residual, activation, **blocks)
    wide = [None if x is None else x.astype(np.float64) for x in (a, b, bias, residual)]
    want = matmul_epilogue_reference(*wide, activation=activation)
    atol, rtol = TOLERANCES[dtype]
    np.testing.assert_allclose(c.astype(np.float64), want, atol=atol, rtol=rtol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, e.g. 100x77x50",
                        type=_cli.shape("MxNxK", minimum=0))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=list(TOLERANCES))
    parser.add_argument("--activations", nargs="+", default=list(ACTIVATIONS), choices=list(ACTIVATIONS))
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = parse_shape(shape)
            for activation in args.activations:
                for fused in (True, False):
                    check(M, N, K, dtype, activation, fused)
                    extras = "+ bias + residual" if fused else "alone"
                    print(f"matmul_epilogue {M}x{N}x{K} {dtype:<8} {activation:<9} {extras} "
                          "matches the float64 reference")
    print("OK")


if __name__ == "__main__":
    main()
