"""Flash attention forward written with tensor descriptors.

The computation of examples/flash_attention.py (``softmax(Q K^T * sm_scale) V``
with an online softmax in base 2, the output and each row's log-sum-exp),
but Q, K and V move through tensor descriptors: each is viewed as one
``[B * H * S, D]`` matrix, and a block is named by its first row. A program
owns ``BLOCK_M`` query rows of one (batch, head) and walks its keys in one
loop of ``BLOCK_N``-row blocks. A block that runs past the head's last key
reads the next head's rows (or zeros past the tensor's end); those keys
score ``-inf``, so they add nothing. The output and the log-sum-exp are
stored through pointers with a row mask, so any S works.

One loop, masks chosen at compile time: ``CAUSAL`` masks keys past the
query's own position (the loop stops at the diagonal block), ``TAIL`` masks
keys at or past S (set by the host when S is not a multiple of ``BLOCK_N``).
Without either, the loop body has no mask at all.

On Hopper (sm_90) the K and V blocks become TMA copies into a ring of
``num_stages`` stages read by wgmma where they land, and with
``warp_specialize`` a producer warpgroup issues them (docs/backend-cuda.md,
"TMA rings"); elsewhere (sm_80, the CPU) the descriptors are lowered to
pointer loads. Triton compiles this source with its own TMA pipeline, which
is why the benchmark times it beside the pointer-based kernel.

Q, K, V and the output must be contiguous [B, H, S, D]; D a power of two
from 16 to 256.

Run it: `python examples/flash_attention_tma.py [--shapes 1x2x100x64 ...]
[--dtypes float32 float16 bfloat16] [--device cpu|cuda]`; each shape runs
causal and not, compared with NumPy in float64.
"""

import argparse
import math

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)
from flash_attention import (TF32_TOLERANCE, TOLERANCES, attention_reference, bytes_moved, flops,  # noqa: F401
                             make_inputs, numpy_dtype, parse_shape, to_device, to_numpy)

# Query rows, keys per step and stages of K and V blocks by head dim, as
# measured on the H200 (docs/benchmarks.md, "Attention through
# descriptors"); a warpgroup (4 warps) per 64 query rows. At D 128: 128 rows
# (two consumer warpgroups), 128 keys, 2 stages (64 KB each in 16 bits:
# with Q's 32 KB the ring takes a producer warpgroup unasked, and the P V
# product runs under the next block's softmax). At D 64: 256 rows (four
# consumer warpgroups, and the producer the 16 warps take unasked), 64
# keys, 3 stages: at D 64 the exponentials weigh as much as the products,
# and four warpgroups keep both busy. At D 256: 128 rows, 64 keys, 2
# stages (what fits).
DEFAULT_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 64}


def default_config(head_dim: int):
    """``(blocks, num_stages)`` for a head dim; the warps follow BLOCK_M (``default_warps``)."""
    if head_dim == 128:
        return {"BLOCK_M": 128, "BLOCK_N": 128}, 2
    if head_dim < 128:
        return {"BLOCK_M": 256, "BLOCK_N": 64}, 3
    return dict(DEFAULT_BLOCKS), 2


def default_warps(block_m: int) -> int:
    """A warpgroup per 64 query rows (wgmma's rows per warpgroup on Hopper)."""
    return max(4, block_m // 16)


@tegula.jit
def attention_tma_kernel(Q, K, V, Out, LSE, Z, H, N_CTX, sm_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, TAIL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = None):
    # Grid: (cdiv(N_CTX, BLOCK_M), Z * H). LSE is contiguous [Z * H, N_CTX].
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    rows = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    head_row = off_hz * N_CTX

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([head_row + start_m * BLOCK_M, 0])

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) == exp2(x * log2(e))
    if CAUSAL:
        hi = min((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = desc_k.load([head_row + start_n, 0])
        qk = tl.dot(q, k.T)
        keys = start_n + offs_n
        # Only the blocks that reach the diagonal (or S) are masked: the
        # others skip the compare and select of every score.
        if CAUSAL:
            if start_n + BLOCK_N > start_m * BLOCK_M:
                # The first block holds every row's own position, so each
                # row's maximum is finite from the first block on.
                qk = tl.where(offs_m[:, None] >= keys[None, :], qk, float("-inf"))
        elif TAIL:
            if start_n + BLOCK_N > N_CTX:
                qk = tl.where(keys[None, :] < N_CTX, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([head_row + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new

    # m_i is in scaled base-2 units: sum_j exp(s_j) = l_i * 2^m_i.
    row_ok = offs_m < N_CTX
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(LSE + off_hz * N_CTX + offs_m, lse, mask=row_ok)
    out = acc * (1.0 / l_i)[:, None]
    o_ptrs = Out + (head_row + offs_m)[:, None].to(tl.int64) * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None])


def _scratch(size: int, alignment: int, stream):
    """Launch-time memory for a compiler that keeps descriptors made in a kernel in
    global memory (Triton compiling this source does; Tegula never asks)."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def _check_inputs(q, k, v, out, blocks):
    if q.ndim != 4 or tuple(k.shape) != tuple(q.shape) or tuple(v.shape) != tuple(q.shape):
        raise coded(ValueError, "E0713", f"attention takes q, k, v of one shape [B, H, S, D], got {tuple(q.shape)}, "
                                         f"{tuple(k.shape)} and {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise coded(ValueError, "E0713",
                    f"attention takes q, k, v of one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    D = q.shape[3]
    if D < 16 or D > 256 or D & (D - 1):
        raise coded(ValueError, "E0713",
                    f"attention_tma needs a head dim that is a power of two from 16 to 256, got {D}")
    for name, array in (("q", q), ("k", k), ("v", v), ("out", out)):
        B, H, S, _ = array.shape
        if tuple(_host.strides(array)) != (H * S * D, S * D, D, 1):
            raise coded(ValueError, "E0713", f"attention_tma takes contiguous [B, H, S, D] arrays; {name} has "
                                             f"strides {tuple(_host.strides(array))}")
    unknown = set(blocks) - set(DEFAULT_BLOCKS)
    if unknown:
        raise coded(TypeError, "E0713",
                    f"unknown block parameters {sorted(unknown)}; expected some of {sorted(DEFAULT_BLOCKS)}")
    return {**default_config(D)[0], **blocks}


def attention(q, k, v, causal: bool = False, sm_scale: float = None, out=None, num_warps: int = None,
              num_stages: int = None, warp_specialize=None, **blocks):
    """Attention forward for contiguous q, k, v shaped [B, H, S, D] (float32, float16, bfloat16).

    Returns ``(out, lse)`` like examples/flash_attention.py's ``attention``.
    ``warp_specialize`` (None, True, False) is the key loop's; ``blocks``
    overrides ``BLOCK_M`` / ``BLOCK_N``, ``num_stages`` the stages, both
    chosen by head dim when not given (``default_config``); ``num_warps``
    is a warpgroup per 64 rows of ``BLOCK_M`` unless given.
    """
    if out is None:
        out = _host.empty_like(q)
    meta = _check_inputs(q, k, v, out, blocks)
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    lse = _host.empty((B, H, S), np.float32, like=q)
    if B * H == 0 or S == 0:
        return out, lse
    if _host.is_torch(q) and q.is_cuda:
        tegula.set_allocator(_scratch)
    if num_stages is None:
        num_stages = default_config(D)[1]
    if num_warps is None:
        num_warps = default_warps(meta["BLOCK_M"])
    grid = (tegula.cdiv(S, meta["BLOCK_M"]), B * H)
    attention_tma_kernel[grid](q, k, v, out, lse, B, H, S, float(sm_scale), HEAD_DIM=D, CAUSAL=bool(causal),
                               TAIL=S % meta["BLOCK_N"] != 0, WARP_SPECIALIZE=warp_specialize,
                               num_stages=num_stages, **meta, **_host.launch_options(num_warps))
    return out, lse


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1x1x16", "1x2x100x64", "2x2x77x32", "1x1x130x128"]


def check(B: int, H: int, S: int, D: int, dtype: str = "float32", causal: bool = False, device: str = "cpu",
          seed: int = 0, **kwargs) -> None:
    """Raises AssertionError unless the output and log-sum-exp match the float64 reference."""
    q, k, v = make_inputs(B, H, S, D, numpy_dtype(dtype), seed)
    out, lse = attention(*(to_device(x, device) for x in (q, k, v)), causal=causal, **kwargs)
    want_out, want_lse = attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=causal)
    (atol, rtol), lse_atol = TF32_TOLERANCE if (dtype == "float32" and device != "cpu") else TOLERANCES[dtype]
    out, lse = to_numpy(out).astype(np.float64), to_numpy(lse).astype(np.float64)
    np.testing.assert_allclose(out, want_out, atol=atol, rtol=rtol, err_msg="attention output")
    np.testing.assert_allclose(lse, want_lse, atol=lse_atol, rtol=0, err_msg="log-sum-exp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="BxHxSxD, D a power of two >= 16",
                        type=_cli.shape("BxHxSxD", check=_cli.power_of_two_dim("D", 3, 16, 256)))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"],
                        choices=list(TOLERANCES))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    if args.device == "cuda":
        _cli.require_cuda(parser)
    for dtype in args.dtypes:
        for shape in args.shapes:
            B, H, S, D = parse_shape(shape)
            for causal in (False, True):
                check(B, H, S, D, dtype, causal, args.device)
                print(f"attention_tma {shape} {dtype:<8} {'causal' if causal else 'full':<6} matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
