"""The case-study chain of the design document, eager and fused.

Eager (NumPy or PyTorch, op by op, each op reading and writing whole arrays):

    h = x * alpha; h = h + bias; h = gelu_tanh(h); h = h * keep; h = h / (1 - p)
    h = h + residual; ms = mean(h^2, row); r = rsqrt(ms + eps); y = h * r * weight

Fused (one Tegula kernel, one program per row): reads x, residual and keep
once and writes y once; every intermediate stays in registers / cache.

Run it: `python examples/fused_chain.py [--shapes 4x7 64x1000 ...]`.
Eager NumPy runs the chain op by op (scale, bias, gelu, dropout mask,
rescale, residual, RMS norm, weight), each op a pass over memory; the kernel
does it in one pass per row. The script checks both agree, prints each shape
and how many bytes the fused kernel moves, then OK.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula.language.extra import libdevice
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

ALPHA = 0.5
EPS = 1e-6
P_DROP = 0.1
SQRT_2_OVER_PI = 0.7978845608028654
# Kernels may read a module-level number only through tl.constexpr: Triton
# rejects plain float globals, and this source must compile under both.
_GELU_SCALE = tl.constexpr(SQRT_2_OVER_PI)


@tegula.jit
def gelu_tanh(h):
    inner = _GELU_SCALE * (h + 0.044715 * h * h * h)
    return 0.5 * h * (1.0 + libdevice.tanh(inner))


@tegula.jit
def fused_chain_kernel(x_ptr, res_ptr, keep_ptr, bias_ptr, w_ptr, y_ptr, N, stride,
                       alpha, eps, scale, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    base = row * stride
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    keep = tl.load(keep_ptr + base + cols, mask=mask, other=0)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)

    h = x * alpha + bias
    h = gelu_tanh(h)
    h = tl.where(keep != 0, h * scale, 0.0)
    h = h + res
    ms = tl.sum(h * h, axis=0) / N
    r = tl.rsqrt(ms + eps)
    y = h * r * w
    tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def fused_chain(x, residual, keep, bias, weight, out=None, alpha=ALPHA, eps=EPS, p=P_DROP,
                num_warps: int = None):
    """Runs the fused kernel; x, residual, keep and out share a shape [M, N] and row
    stride, x, residual and out a dtype. NumPy arrays or torch tensors (CUDA tensors
    run on the GPU); the output comes from x's library and device."""
    M, N = x.shape
    if out is None:
        out = _host.empty_like(x)
    block = tegula.next_power_of_2(N)
    fused_chain_kernel[(M,)](x, residual, keep, bias, weight, out, N, _host.strides(x)[0],
                             alpha, eps, 1.0 / (1.0 - p), BLOCK_N=block,
                             **_host.launch_options(num_warps))
    return out


class _Traffic:
    """Counts the bytes eager execution moves: every op reads its array
    operands and writes its result once (a lower bound: NumPy may add
    temporaries of its own)."""

    def __init__(self):
        self.bytes = 0

    def __call__(self, result, *operands):
        self.bytes += result.nbytes + sum(o.nbytes for o in operands
                                          if isinstance(o, np.ndarray) or _host.is_torch(o))
        return result


def eager_chain(x, residual, keep, bias, weight, alpha=ALPHA, eps=EPS, p=P_DROP, traffic=None):
    """The chain as a researcher writes it, one array operation per step: NumPy
    for NumPy arrays, torch for torch tensors (see eager_chain_torch)."""
    if _host.is_torch(x):
        return eager_chain_torch(x, residual, keep, bias, weight, alpha, eps, p, traffic)
    t = traffic or _Traffic()
    dt = x.dtype
    h = t(x * dt.type(alpha), x)
    h = t(h + bias.astype(dt), h, bias)
    h3 = t(h * h, h)
    h3 = t(h3 * h, h3, h)
    inner = t(h + dt.type(0.044715) * h3, h, h3)
    inner = t(dt.type(SQRT_2_OVER_PI) * inner, inner)
    th = t(np.tanh(inner), inner)
    h = t(dt.type(0.5) * h * (dt.type(1.0) + th), h, th)
    h = t(h * keep, h, keep)
    h = t(h / dt.type(1.0 - p), h)
    h = t(h + residual, h, residual)
    ms = t(np.mean(h * h, axis=1, keepdims=True), h)
    r = t(dt.type(1.0) / np.sqrt(ms + dt.type(eps)), ms)
    return t((h * r * weight.astype(dt)).astype(dt), h, weight)


def eager_chain_torch(x, residual, keep, bias, weight, alpha=ALPHA, eps=EPS, p=P_DROP,
                      traffic=None):
    """The chain in PyTorch eager, the design's op list as written: with bf16 x
    and fp32 bias, torch's promotion makes h fp32 from the bias add on, and the
    result is cast back to x's dtype. GELU is torch's own tanh GELU (one op)."""
    import torch
    import torch.nn.functional as F

    t = traffic or (lambda result, *operands: result)
    h = t(x * alpha, x)
    h = t(h + bias, h, bias)
    h = t(F.gelu(h, approximate="tanh"), h)
    h = t(h * keep, h, keep)
    h = t(h / (1.0 - p), h)
    h = t(h + residual, h, residual)
    ms = t(torch.mean(h * h, dim=1, keepdim=True), h)
    r = t(torch.rsqrt(ms + eps), ms)
    return t((h * r * weight).to(x.dtype), h, weight)


def eager_bytes(x, residual, keep, bias, weight):
    """Bytes moved by eager_chain on these inputs (see _Traffic); runs the chain."""
    t = _Traffic()
    eager_chain(x, residual, keep, bias, weight, traffic=t)
    return t.bytes


def make_inputs(M, N, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N), dtype=np.float32).astype(dtype)
    residual = rng.standard_normal((M, N), dtype=np.float32).astype(dtype)
    keep = rng.random((M, N), dtype=np.float32) >= P_DROP
    bias = rng.standard_normal(N, dtype=np.float32)
    weight = rng.standard_normal(N, dtype=np.float32)
    return x, residual, keep, bias, weight


def bytes_moved(M, N, itemsize):
    """Bytes the fused kernel must move: x, residual, keep in; y out (+ bias, weight)."""
    return M * N * (2 * itemsize + 1 + itemsize) + 2 * N * 4


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1", "4x7", "33x1000", "128x1024", "300x3000"]


def parse_shape(text: str):
    rows, cols = (int(v) for v in text.lower().split("x"))
    return rows, cols


def check(M: int, N: int, seed: int = 0) -> None:
    """Raises AssertionError unless the fused kernel matches the eager chain (float32 I/O)."""
    inputs = make_inputs(M, N, seed=seed)
    assert_close(fused_chain(*inputs), eager_chain(*inputs), atol=1e-4, rtol=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxN, e.g. 33x1000",
                        type=_cli.shape("MxN", minimum=0))
    args = parser.parse_args()
    for shape in args.shapes:
        M, N = parse_shape(shape)
        check(M, N)
        print(f"fused_chain {M}x{N} float32 matches NumPy eager "
              f"(fused kernel moves {bytes_moved(M, N, 4):,} bytes)")
    print("OK")


if __name__ == "__main__":
    main()
