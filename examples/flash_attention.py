"""Flash attention, forward pass: ``softmax(Q K^T * sm_scale) V`` without the score matrix.

Q, K, V and the output are [B, H, S, D] (batch, heads, sequence, head dim).
One program owns ``BLOCK_M`` query rows of one (batch, head) and walks the
keys in blocks of ``BLOCK_N``: scores of the block (``tl.dot`` of Q with a
K^T tile), a running row maximum and row sum (the "online" softmax: when
the maximum grows, what was summed so far is rescaled by
``2^(old max - new max)``), and the block's softmax-weighted values added
into a float32 accumulator. Scores never leave registers; memory traffic is
Q, K, V and O once per query block.

Softmax runs in base 2: ``exp(s) = 2^(s * log2 e)``, and ``log2 e`` is
folded into the scale once, so each score costs one multiply and one
``exp2``. Besides the output, each row's log-sum-exp
``ln(sum_j exp(sm_scale * q.k_j))`` is written (float32, [B, H, S]): what a
backward pass needs to recompute the probabilities.

The key loop is split so masks cost nothing where they cannot matter:

- non-causal: every whole key block unmasked, then at most one partial block
  (S not a multiple of ``BLOCK_N``) whose missing keys score ``-inf``;
- causal: the key blocks wholly below the diagonal unmasked, then the
  ``BLOCK_M / BLOCK_N`` blocks crossing it with ``key <= query`` applied.

K is read as a transposed tile (``[HEAD_DIM, BLOCK_N]``, contiguous along
HEAD_DIM), so the score product is a plain ``tl.dot(q, k)`` whose operands
are straight loads from a pointer advanced each iteration: the form the
CUDA backend pipelines (docs/backend-cuda.md, "Software pipelining").

Run it: `python examples/flash_attention.py [--shapes 1x2x100x64 ...] [--dtypes float32 float16 bfloat16]
[--device cpu|cuda]`. Shapes are BxHxSxD (batch, heads, sequence, head dim: a
power of two >= 16); sequences that are not multiples of the 64-row blocks
exercise the masked tails. Each shape runs causal and not; the output and
the per-row log-sum-exp are compared with NumPy in float64. `--device cuda`
runs the kernel on torch CUDA tensors. Prints each case it checked and OK.
"""

import argparse
import math

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

DEFAULT_BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 64}
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@tegula.jit
def _attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn, stride_vk,
                       offs_m, offs_n, offs_d, lo, hi, N_CTX, qk_scale,
                       BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, TAIL_MASK: tl.constexpr):
    # Keys lo .. hi-1 in blocks of BLOCK_N, folded into (acc, l_i, m_i).
    # TAIL_MASK: keys at or past N_CTX are not read and score -inf.
    # CAUSAL_MASK: keys past the query's own position score -inf.
    k_ptrs = k_base + offs_d[:, None] * stride_kk + (lo + offs_n)[None, :] * stride_kn
    v_ptrs = v_base + (lo + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vk
    for start_n in range(lo, hi, BLOCK_N):
        keys = start_n + offs_n
        if TAIL_MASK:
            k = tl.load(k_ptrs, mask=keys[None, :] < N_CTX, other=0.0)
        else:
            k = tl.load(k_ptrs)
        qk = tl.dot(q, k)
        if CAUSAL_MASK:
            qk = tl.where(offs_m[:, None] >= keys[None, :], qk, float("-inf"))
        elif TAIL_MASK:
            qk = tl.where(keys[None, :] < N_CTX, qk, float("-inf"))
        # Every row met a key it may see in an earlier block or this one
        # (the diagonal's first block holds each row's own position), so
        # m_new is finite and exp2(-inf - m_new) is 0 for masked keys.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if TAIL_MASK:
            v = tl.load(v_ptrs, mask=keys[:, None] < N_CTX, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@tegula.jit
def attention_fwd_kernel(Q, K, V, Out, LSE,
                         stride_qz, stride_qh, stride_qm, stride_qk,
                         stride_kz, stride_kh, stride_kn, stride_kk,
                         stride_vz, stride_vh, stride_vn, stride_vk,
                         stride_oz, stride_oh, stride_om, stride_ok,
                         H, N_CTX, sm_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    # Grid: (cdiv(N_CTX, BLOCK_M), B * H). LSE is contiguous [B * H, N_CTX].
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = (off_hz // H).to(tl.int64)
    off_h = (off_hz % H).to(tl.int64)
    q_base = Q + off_z * stride_qz + off_h * stride_qh
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    o_base = Out + off_z * stride_oz + off_h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_CTX
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk, mask=row_ok[:, None],
                other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) == exp2(x * log2(e))

    if CAUSAL:
        # Below the diagonal every key precedes every query row: no mask.
        # (BLOCK_M is a multiple of BLOCK_N, so these are whole key blocks.)
        diagonal = start_m * BLOCK_M
        acc, l_i, m_i = _attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn,
                                           stride_vk, offs_m, offs_n, offs_d, 0, diagonal, N_CTX, qk_scale,
                                           BLOCK_N, False, False)
        acc, l_i, m_i = _attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn,
                                           stride_vk, offs_m, offs_n, offs_d, diagonal,
                                           min(diagonal + BLOCK_M, N_CTX), N_CTX, qk_scale,
                                           BLOCK_N, True, True)
    else:
        whole = (N_CTX // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn,
                                           stride_vk, offs_m, offs_n, offs_d, 0, whole, N_CTX, qk_scale,
                                           BLOCK_N, False, False)
        acc, l_i, m_i = _attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn,
                                           stride_vk, offs_m, offs_n, offs_d, whole, N_CTX, N_CTX, qk_scale,
                                           BLOCK_N, False, True)

    # m_i is in scaled base-2 units: sum_j exp(s_j) = l_i * 2^m_i.
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(LSE + off_hz * N_CTX + offs_m, lse, mask=row_ok)
    out = acc * (1.0 / l_i)[:, None]
    o_ptrs = o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None])


def _check_inputs(q, k, v, blocks):
    if q.ndim != 4 or tuple(k.shape) != tuple(q.shape) or tuple(v.shape) != tuple(q.shape):
        raise coded(ValueError, "E0713", f"attention takes q, k, v of one shape [B, H, S, D], got {tuple(q.shape)}, "
                                         f"{tuple(k.shape)} and {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise coded(ValueError, "E0713",
                    f"attention takes q, k, v of one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    D = q.shape[3]
    if D < 16 or D & (D - 1):
        raise coded(ValueError, "E0713",
                    f"attention needs a head dim that is a power of two >= 16 (a tile size), got {D}")
    unknown = set(blocks) - set(DEFAULT_BLOCKS)
    if unknown:
        raise coded(TypeError, "E0713",
                    f"unknown block parameters {sorted(unknown)}; expected some of {sorted(DEFAULT_BLOCKS)}")
    meta = {**DEFAULT_BLOCKS, **blocks}
    if meta["BLOCK_M"] % meta["BLOCK_N"]:
        raise coded(ValueError, "E0713",
                    f"BLOCK_M ({meta['BLOCK_M']}) must be a multiple of BLOCK_N ({meta['BLOCK_N']}): "
                    "the causal loop splits at query-block boundaries")
    return meta


def attention(q, k, v, causal: bool = False, sm_scale: float = None, out=None, num_warps: int = None,
              num_stages: int = None, **blocks):
    """Attention forward for q, k, v shaped [B, H, S, D] (float32, float16, bfloat16).

    NumPy arrays or torch tensors (CUDA tensors run on the GPU). ``sm_scale``
    defaults to ``1 / sqrt(D)``; ``causal`` lets query i see keys 0..i only.
    Returns ``(out, lse)``: out like q, and the float32 [B, H, S] natural-log
    sum of each row's exponentiated scaled scores. ``blocks`` overrides
    ``BLOCK_M`` / ``BLOCK_N`` (BLOCK_M a multiple of BLOCK_N).
    """
    meta = _check_inputs(q, k, v, blocks)
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if out is None:
        out = _host.empty_like(q)
    lse = _host.empty((B, H, S), np.float32, like=q)
    if B * H == 0 or S == 0:
        return out, lse
    options = _host.launch_options(num_warps)
    if num_stages is not None:
        options["num_stages"] = num_stages
    grid = (tegula.cdiv(S, meta["BLOCK_M"]), B * H)
    sq, sk, sv, so = _host.strides(q), _host.strides(k), _host.strides(v), _host.strides(out)
    attention_fwd_kernel[grid](q, k, v, out, lse, *sq, *sk, *sv, *so, H, S, float(sm_scale),
                               HEAD_DIM=D, CAUSAL=bool(causal), **meta, **options)
    return out, lse


def attention_reference(q, k, v, causal: bool = False, sm_scale: float = None):
    """``(out, lse)`` computed eagerly in float32 (torch for torch tensors, NumPy
    otherwise; pass float64 arrays for a float64 reference), out in q's dtype."""
    D = q.shape[-1]
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    S = q.shape[-2]
    if _host.is_torch(q):
        import torch

        wide = torch.float64 if q.dtype == torch.float64 else torch.float32
        s = torch.matmul(q.to(wide), k.to(wide).transpose(-1, -2)) * sm_scale
        if causal:
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        out = torch.matmul(torch.exp(s - lse[..., None]), v.to(wide))
        return out.to(q.dtype), lse.to(torch.float32)
    wide = np.float64 if q.dtype == np.float64 else np.float32
    s = np.matmul(q.astype(wide), np.swapaxes(k.astype(wide), -1, -2)) * wide(sm_scale)
    if causal:
        s = np.where(np.triu(np.ones((S, S), bool), 1), -np.inf, s)
    row_max = s.max(axis=-1, keepdims=True)
    e = np.exp(s - row_max)
    total = e.sum(axis=-1, keepdims=True)
    out = np.matmul(e / total, v.astype(wide))
    lse = (np.log(total) + row_max)[..., 0]
    return out.astype(q.dtype), lse.astype(np.float32)


def make_inputs(B: int, H: int, S: int, D: int, dtype=np.float32, seed: int = 0):
    """Unit-normal q, k, v of shape [B, H, S, D]."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((B, H, S, D), dtype=np.float32).astype(dtype) for _ in range(3))


def flops(B: int, H: int, S: int, D: int, causal: bool = False) -> int:
    """Two products of S x S x D per (batch, head), 2 flops per multiply-add;
    causal masks half the scores away."""
    total = 4 * B * H * S * S * D
    return total // 2 if causal else total


def bytes_moved(B: int, H: int, S: int, D: int, itemsize: int) -> int:
    """Q, K, V read once, O written once, and the float32 LSE."""
    return 4 * B * H * S * D * itemsize + B * H * S * 4


# --- the example: checks on random data, and the script ------------------------------------

DEFAULT_SHAPES = ["1x1x1x16", "1x2x100x64", "2x2x77x32", "1x1x130x128"]
# (atol, rtol) of the output, atol of the log-sum-exp. 16-bit inputs: q.k is
# exact in fp32, the probabilities are rounded to the input type before p @ v.
# float32 on a GPU runs both products at tf32.
TOLERANCES = {"float32": ((2e-5, 1e-5), 2e-5), "float16": ((4e-3, 1e-3), 1e-4),
              "bfloat16": ((2.5e-2, 8e-3), 1e-4)}
TF32_TOLERANCE = ((1e-2, 1e-2), 1e-2)


def parse_shape(text: str):
    B, H, S, D = (int(v) for v in text.lower().split("x"))
    return B, H, S, D


def numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def to_device(x, device: str):
    if device == "cpu":
        return x
    import torch

    wide = torch.from_numpy(x.astype(np.float32))
    return wide.to(getattr(torch, np.dtype(x.dtype).name)).to(device)


def to_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    return x.float().cpu().numpy()


def check(B: int, H: int, S: int, D: int, dtype: str = "float32", causal: bool = False, device: str = "cpu",
          seed: int = 0) -> None:
    """Raises AssertionError unless the kernel's output and log-sum-exp match the float64 reference."""
    q, k, v = make_inputs(B, H, S, D, numpy_dtype(dtype), seed)
    out, lse = attention(*(to_device(x, device) for x in (q, k, v)), causal=causal)
    want_out, want_lse = attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=causal)
    (atol, rtol), lse_atol = TF32_TOLERANCE if (dtype == "float32" and device != "cpu") else TOLERANCES[dtype]
    out, lse = to_numpy(out).astype(np.float64), to_numpy(lse).astype(np.float64)
    np.testing.assert_allclose(out, want_out, atol=atol, rtol=rtol, err_msg="attention output")
    np.testing.assert_allclose(lse, want_lse, atol=lse_atol, rtol=0, err_msg="log-sum-exp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="BxHxSxD, e.g. 2x4x100x64",
                        type=_cli.shape("BxHxSxD", check=_cli.power_of_two_dim("D", 3, 16)))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=list(TOLERANCES))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="cuda: run on torch CUDA tensors")
    args = parser.parse_args()
    if args.device == "cuda":
        _cli.require_cuda(parser)
    for dtype in args.dtypes:
        for shape in args.shapes:
            B, H, S, D = parse_shape(shape)
            for causal in (False, True):
                check(B, H, S, D, dtype, causal, args.device)
                kind = "causal" if causal else "full"
                print(f"attention {B}x{H}x{S}x{D} {dtype:<8} {kind:<6} matches the float64 reference")
    print("OK")


if __name__ == "__main__":
    main()
