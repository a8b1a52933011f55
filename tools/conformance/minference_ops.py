"""MInference's Triton kernels (microsoft/MInference, minference/ops) on Tegula, through the conformance shim's
`triton` package, against float64 masked-attention references on sizes that are not powers of two:

  - block_sparse_flash_attention.py: `_triton_block_sparse_attn_fwd_kernel` through `block_sparse_attention`
    (the library pads, builds its top-k block index in torch and launches) and through
    `_triton_block_sparse_attention` with that index (the wrapper for batch 1 only: it passes one seqlen whatever
    the batch, and the kernel reads seqlens[batch], past the tensor), against attention over the first min(row block + 1, top_k)
    indexed key blocks, causal;
  - pit_sparse_flash_attention_v2.py: `_triton_mixed_sparse_attn_fwd_kernel` (the vertical-slash kernel) through
    `_triton_mixed_sparse_attention`, with block offsets (slash blocks, causal) and vertical column lists (not
    masked causally by the kernel) drawn here;
  - pit_sparse_flash_attention.py: `triton_sparse_fwd_kernel` through `triton_sparse_forward`, with the column
    index of the library's own `torch_build_index` from vertical and slash indexes, and `triton_dense_fwd_kernel`
    (block pointers) through `triton_dense_forward`, against causal attention limited to seqlen;
  - flash_attn_triton.py: `_fwd_kernel` (heuristics EVEN_M / EVEN_N / EVEN_HEADDIM) through
    `_flash_attn_triton_decoding`, causal and not, few query rows, head dims 64 and 40 (padded to 64);
  - streaming_kernel.py: `_attn_fwd` / `_attn_fwd_inner` (block pointers, sliding and complement windows, two
    passes merged through M / L) through `streaming_forward` (StreamingLLM: n_init sink keys plus an n_local
    window, causal), and `_score_kernel` through TritonMultiStageDotProductionAttention's get_score path;
  - xattention_fa.py: `flat_group_gemm_kernel`, `flat_group_gemm_fuse_reshape_kernel` (the strided antidiagonal
    reshape of Q K^T, causal block skipping), `softmax_fuse_block_sum_kernel_causal` and `_non_causal` (base-2
    softmax summed over block_size x block_size tiles) through their wrappers.

Each reference is written from the math in float64 with the kernel's own mask semantics (a column listed twice
counts twice; rows past seqlen are not compared). Tolerances: float16 1e-2 and bfloat16 3e-2 of the largest
magnitude (P is rounded to the input dtype before P @ V), the GEMMs 1e-3.

Not covered: leank_flash_decoding.py (TileLang, not Triton), minference/modules' kernels (flexprefill.py, kivi.py:
outside ops/), `vertical_slash_sparse_attention` itself (it needs the CUDA extension minference.cuda's
convert_vertical_slash_indexes; the kernel is launched through `_triton_mixed_sparse_attention` with indexes
drawn here) and `pit_sparse_flash_attention_forward` (pycuda's index kernel; the torch index builder of the same
file stands in). `triton_dense_fwd_kernel` stores through a block pointer with a mask, which Triton refuses; its
case checks that Tegula refuses it too.

MInference is not part of Tegula; point this at a checkout (a directory holding minference/ops; written against
commit fb56c917f618e8645f1cfc37535afd7424d78f0d of 2025-08-11, whose ops files this imports unchanged):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/minference_ops.py <MInference checkout>

Stand-ins (none of them is a Triton kernel or reached from one):

  - `minference` and `minference.ops` are bare packages (minference/__init__ imports transformers and the patch
    modules); the ops files are loaded from their files under them;
  - `minference.cuda` (pit_sparse_flash_attention_v2.py imports convert_vertical_slash_indexes from the CUDA
    extension): a module whose function raises when called (it is not called);
  - `pycuda`, `pycuda.autoprimaryctx`, `pycuda.compiler` (pit_sparse_flash_attention.py compiles its CUDA index
    kernel with SourceModule at import): SourceModule gives an object whose functions raise when called (not
    called); `flash_attn.flash_attn_varlen_func` (imported there, not called): a placeholder that raises;
  - torch.cuda.device (streaming_kernel.py enters `torch.cuda.device(q.device)`): a null context for a device that
    is not a CUDA one;
  - Tensor.is_cuda (flash_attn_triton.py asserts it): True for tensors on TEGULA_CONFORMANCE_DEVICE while that
    case runs.

Autotuning: triton_sparse_fwd_kernel's and _attn_fwd's autotuners (10 configs each, num_warps / num_stages only)
are pinned to their first config (the autotuner's `configs` set to that one, as kernl_ops.py does).

Prints one line per case and a summary line.
"""

import contextlib
import importlib.util
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: minference_ops.py <MInference checkout>")
MINF = pathlib.Path(sys.argv[1]).resolve()
OPS = MINF / "minference" / "ops"
for _file in ("block_sparse_flash_attention.py", "pit_sparse_flash_attention_v2.py", "pit_sparse_flash_attention.py",
              "flash_attn_triton.py", "streaming_kernel.py", "xattention_fa.py"):
    if not (OPS / _file).is_file():
        sys.exit(f"{MINF} holds no minference/ops/{_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def placeholder(what):
    def call(*args, **kwargs):
        raise RuntimeError(f"{what} is a stand-in of minference_ops.py and is not available")
    return call


class _SourceModule:
    def __init__(self, *args, **kwargs):
        pass

    def get_function(self, name):
        return placeholder(f"pycuda kernel {name}")


module("pycuda")
module("pycuda.autoprimaryctx")
module("pycuda.compiler", SourceModule=_SourceModule)
if "flash_attn" not in sys.modules:
    module("flash_attn", flash_attn_varlen_func=placeholder("flash_attn.flash_attn_varlen_func"),
           flash_attn_func=placeholder("flash_attn.flash_attn_func"))

_cuda_device = torch.cuda.device
torch.cuda.device = lambda device: (contextlib.nullcontext() if DEVICE != "cuda" and
                                    getattr(device, "type", None) != "cuda" else _cuda_device(device))

for _name, _path in (("minference", MINF / "minference"), ("minference.ops", OPS)):
    _pkg = types.ModuleType(_name)
    _pkg.__path__ = [str(_path)]
    sys.modules[_name] = _pkg
module("minference.cuda", convert_vertical_slash_indexes=placeholder("minference.cuda.convert_vertical_slash_indexes"))


def load(name):
    full = "minference.ops." + name
    spec = importlib.util.spec_from_file_location(full, OPS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[full] = mod
    spec.loader.exec_module(mod)
    return mod


bsa = load("block_sparse_flash_attention")
with contextlib.redirect_stdout(None):  # its "we recommend installing SGLang or vllm" notice
    pit2 = load("pit_sparse_flash_attention_v2")
pit = load("pit_sparse_flash_attention")
fat = load("flash_attn_triton")
stream = load("streaming_kernel")
xattn = load("xattention_fa")

for _tuner in (pit.triton_sparse_fwd_kernel, stream._attn_fwd):
    _tuner.configs = _tuner.configs[:1]

_real_is_cuda = torch.Tensor.is_cuda


@contextlib.contextmanager
def is_cuda_on_device():
    torch.Tensor.is_cuda = property(lambda self: self.device.type == DEVICE or _real_is_cuda.__get__(self))
    try:
        yield
    finally:
        torch.Tensor.is_cuda = _real_is_cuda


# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
TOL = {F16: 1e-2, BF16: 3e-2}


def check(name, case):
    comparisons_check(results, name, case, ("",))


def weighted_attention(q, k, v, scale, w):
    """float64 sum_j w_ij exp(s_ij) v_j / sum_j w_ij exp(s_ij), w a multiplicity (0 = masked); rows without any
    key give 0."""
    s = torch.einsum("...md,...nd->...mn", q.double(), k.double()) * scale
    w = w.double()
    s = s.masked_fill(w == 0, float("-inf"))
    mx = s.amax(-1, keepdim=True)
    mx = torch.where(torch.isfinite(mx), mx, 0.0)
    p = torch.exp(s - mx) * w
    return (p @ v.double()) / p.sum(-1, keepdim=True).clamp(min=1e-300)


def causal(M, N=None):
    return torch.ones(M, N or M, dtype=torch.bool).tril()


def qkv(B, H, L, D, dtype):
    return (torch.randn(B, H, L, D, dtype=dtype) for _ in range(3))


def block_sparse_case(B, H, L, D, top_k, dtype):
    def case():
        q, k, v = qkv(B, H, L, D, dtype)
        # block_sparse_attention passes seqlens = [context_size], one entry whatever the batch, and the kernel reads
        # seqlens[batch]: past the tensor for a batch over 1 (a library bug), so the wrapper runs for batch 1 only
        out = bsa.block_sparse_attention(q, k, v, top_k) if B == 1 else None
        pad = 64 - (L & 63)
        qp, kp, vp = (torch.nn.functional.pad(t, [0, 0, 0, pad]) for t in (q, k, v))
        index = bsa._build_block_index(qp, kp, top_k, 64, 64)
        seqlens = torch.tensor([L] * B, dtype=torch.int32)
        out2 = bsa._triton_block_sparse_attention(qp, kp, vp, seqlens, index, D ** -0.5)[..., :L, :]
        Lp = L + pad
        w = torch.zeros(B, H, Lp, Lp)
        for m in range(Lp // 64):
            for i in range(min(m + 1, index.shape[-1])):
                blk = index[:, :, m, i]  # (B, H)
                cols = (blk[..., None] * 64 + torch.arange(64)).long()  # (B, H, 64)
                w[:, :, m * 64:(m + 1) * 64].scatter_add_(-1, cols[:, :, None, :].expand(B, H, 64, 64),
                                                          torch.ones(B, H, 64, 64))
        w = w * causal(Lp)
        want = weighted_attention(qp, kp, vp, D ** -0.5, w)[..., :L, :]
        comparisons = {"with its index": (out2, want, TOL[dtype])}
        if out is not None:
            comparisons["block_sparse_attention"] = (out, want, TOL[dtype])
        yield comparisons
    return case


def vertical_slash_case(B, H, L, D, nnz_s, nnz_v, dtype, N_CTX=None):
    """block_offset: nnz_s slash-block starts per row block (any offset <= the row block's start), column_index:
    nnz_v columns before the row block (the vertical lines); counts below the maxima."""
    def case():
        n_ctx = N_CTX or L
        q, k, v = qkv(B, H, n_ctx, D, dtype)
        rows = (n_ctx + 63) // 64
        seqlens = torch.tensor([L] * B, dtype=torch.int32)
        bcount = torch.randint(1, nnz_s + 1, (B, H, rows), dtype=torch.int32)
        boff = torch.zeros(B, H, rows, nnz_s, dtype=torch.int32)
        ccount = torch.zeros(B, H, rows, dtype=torch.int32)
        cidx = torch.zeros(B, H, rows, nnz_v, dtype=torch.int32)
        w = torch.zeros(B, H, n_ctx, n_ctx)
        ar = torch.arange(n_ctx)
        for b in range(B):
            for h in range(H):
                for m in range(rows):
                    r0, r1 = m * 64, min(m * 64 + 64, n_ctx)
                    # a block starting past a row is all -inf for that row; as the first block of a row that
                    # gives NaN (exp2(-inf - -inf)) under Triton too, so every start is at most the row block's
                    starts = torch.randint(0, r0 + 1, (nnz_s,))
                    boff[b, h, m] = starts.int()
                    for s in starts[:bcount[b, h, m]].tolist():
                        keep = (ar >= s) & (ar < s + 64) & (ar < L)
                        w[b, h, r0:r1] += (keep[None, :] & (ar[None, :] <= ar[r0:r1, None])).float()
                    if r0 > 0:
                        n = int(torch.randint(0, min(nnz_v, r0) + 1, ()).item())
                        cols = torch.randperm(r0)[:n].sort().values
                        ccount[b, h, m] = n
                        cidx[b, h, m, :n] = cols.int()
                        w[b, h, r0:r1, cols] += 1
        out = pit2._triton_mixed_sparse_attention(q, k, v, seqlens, bcount, boff, ccount, cidx, D ** -0.5)
        want = weighted_attention(q, k, v, D ** -0.5, w)
        yield {"out": (out[..., :L, :], want[..., :L, :], TOL[dtype])}
    return case


def pit_sparse_case(B, H, L, D, nnz_v, nnz_s, dtype):
    def case():
        n_ctx = (L + 63) // 64 * 64
        q, k, v = qkv(B, H, n_ctx, D, dtype)
        seqlens = torch.tensor([L] * B, dtype=torch.int32)
        v_idx = torch.stack([torch.randperm(L)[:nnz_v] for _ in range(B * H)]).reshape(B, H, nnz_v).int()
        s_idx = torch.stack([torch.randperm(L)[:nnz_s] for _ in range(B * H)]).reshape(B, H, nnz_s).int()
        s_idx[..., 0] = 0  # the diagonal
        v_idx = v_idx.sort(-1).values
        s_idx = s_idx.sort(-1, descending=True).values
        ccount, cidx = pit.torch_build_index(seqlens, v_idx, s_idx, 64)
        out = pit.triton_sparse_forward(q, k, v, seqlens, ccount, cidx, D ** -0.5)
        w = torch.zeros(B, H, n_ctx, n_ctx)
        ar = torch.arange(n_ctx)
        for b in range(B):
            for h in range(H):
                for m in range(cidx.shape[2]):
                    r0 = m * 64
                    n = int(ccount[b, h, m])
                    split = max(n - 64, 0) & ~63
                    cols = cidx[b, h, m, :n].long()
                    for i, c in enumerate(cols.tolist()):  # columns past `split` are masked causally
                        w[b, h, r0:r0 + 64, c] += 1.0 if i < split else (ar[r0:r0 + 64] >= c).float()
        want = weighted_attention(q, k, v, D ** -0.5, w)
        rows = torch.arange(n_ctx) < L
        # rows without any column: the kernel gives NaN (0 / 0, with where(m_mask) only for rows past seqlen)
        has = (w.sum(-1) > 0) & rows
        yield {"out": (torch.where(has[..., None], out, 0), torch.where(has[..., None], want, 0), TOL[dtype])}
    return case


def dense_case(B, H, L, D, dtype):
    """triton_dense_fwd_kernel ends with tl.store(O_block_ptr, ..., mask=m_mask): a mask on a block pointer, which
    Triton refuses ("`mask` argument cannot be specified for storing block pointers", triton/language/core.py), as
    Tegula does; the case passes when the kernel is refused so (the library calls it only from its own test)."""
    def case():
        n_ctx = (L + 127) // 128 * 128
        q, k, v = qkv(B, H, n_ctx, D, dtype)
        seqlens = torch.tensor([L] * B, dtype=torch.int32)
        try:
            out = pit.triton_dense_forward(q, k, v, seqlens, D ** -0.5)
        except Exception as e:
            if "mask" in str(e) and "block pointer" in str(e):
                yield {"refused (mask on a block pointer), as Triton": (torch.zeros(1), torch.zeros(1), 0.0)}
                return
            raise
        want = weighted_attention(q, k, v, D ** -0.5, causal(n_ctx).float())
        yield {"out": (out[..., :L, :], want[..., :L, :], TOL[dtype])}
    return case


def decoding_case(B, Lq, Lk, H, D, dtype, is_causal):
    def case():
        q = torch.randn(B, Lq, H, D, dtype=dtype)
        k, v = torch.randn(B, Lk, H, D, dtype=dtype), torch.randn(B, Lk, H, D, dtype=dtype)
        with is_cuda_on_device():
            out = fat._flash_attn_triton_decoding(q, k, v, causal=is_causal)
        w = causal(Lq, Lk) if is_causal else torch.ones(Lq, Lk)  # the kernel's causal mask: column <= row
        want = weighted_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), D ** -0.5, w.float())
        yield {"out": (out.transpose(1, 2), want, TOL[dtype])}
    return case


def streaming_case(B, H, L, D, n_init, n_local, dtype):
    def case():
        q, k, v = qkv(B, H, L, D, dtype)
        out = stream.streaming_forward(q, k, v, n_init, n_local)
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        w = (j <= i) & ((i - j < n_local) | (j < n_init))
        want = weighted_attention(q, k, v, D ** -0.5, w.float())
        yield {"out": (out[..., :L, :D], want, TOL[dtype])}
    return case


def score_case(B, H, L, D, n_init, n_local, dtype):
    def case():
        q, k, v = qkv(B, H, L, D, dtype)
        attn = stream.TritonMultiStageDotProductionAttention(q.shape, q.dtype, q.device)
        attn.append(q, k, v, sliding_window=n_local, get_score=True)
        attn.append(q, k[:, :, :n_init].contiguous(), v[:, :, :n_init].contiguous(), end=True, get_score=True,
                    sliding_window=(0, n_local), complement_sliding_window=True)
        out, scores = attn.get_result()
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        window = (j <= i) & (i - j < n_local)
        sink = (j < n_init) & (i - j >= n_local)
        s = torch.einsum("bhmd,bhnd->bhmn", q.double(), k.double()) * D ** -0.5
        p = torch.softmax(s.masked_fill(~(window | sink), float("-inf")), -1)
        yield {"out": (out[..., :L, :], p @ v.double(), TOL[dtype]),
               "window score": (scores[0], (p * window).sum(-2), TOL[dtype]),
               "sink score": (scores[1], (p * sink).sum(-2)[..., :n_init], TOL[dtype])}
    return case


def gemm_case(B, H, Lq, Lk, D, chunk_start):
    def case():
        q, k = torch.randn(B, H, Lq, D, dtype=F16), torch.randn(B, H, Lk, D, dtype=F16)
        out = xattn.flat_group_gemm(q, k, chunk_start, chunk_start + Lq)
        want = q.double() @ k.double().transpose(-1, -2)
        # blocks wholly above the causal diagonal are skipped (left as torch.empty left them)
        keep = ~((chunk_start + (torch.arange(Lq) // 128 + 1) * 128)[:, None] <= (torch.arange(Lk) // 128 * 128)[None, :])
        yield {"qk": (torch.where(keep, out, 0), torch.where(keep, want, 0), 1e-3)}
    return case


def reshape_gemm_case(B, H, Lq, Lk, D, stride, chunk_start, is_causal):
    def case():
        q, k = torch.randn(B, H, Lq, D, dtype=F16), torch.randn(B, H, Lk, D, dtype=F16)
        out = xattn.flat_group_gemm_fuse_reshape(q, k, stride, chunk_start, chunk_start + Lq, is_causal)
        # out[m, n] = sum_i q[m * stride + stride - 1 - i] . k[n * stride + i]
        qr = q.double().unflatten(-2, (Lq // stride, stride)).flip(-2).flatten(-2)
        kr = k.double().unflatten(-2, (Lk // stride, stride)).flatten(-2)
        want = qr @ kr.transpose(-1, -2)
        mq, nk = Lq // stride, Lk // stride
        keep = torch.ones(mq, nk, dtype=torch.bool)
        if is_causal:
            keep = ~((chunk_start + (torch.arange(mq) // 128 + 1) * 128)[:, None] <= (torch.arange(nk) // 128 * 128)[None, :])
        yield {"qk": (torch.where(keep, out, 0), torch.where(keep, want, 0), 1e-3)}
    return case


def block_sum_case(B, H, Lq, Lk, block, segment, chunk_start, real_q_len, is_causal, dtype=F16):
    def case():
        x = torch.randn(B, H, Lq, Lk, dtype=dtype) * 3
        scale = 0.7
        out = xattn.softmax_fuse_block_sum(x, block, segment, chunk_start, chunk_start + Lq, real_q_len, scale,
                                           is_causal)
        s = x.double() * scale
        rows = chunk_start + torch.arange(Lq)
        if is_causal:
            s = s.masked_fill(torch.arange(Lk)[None, :] > rows[:, None], float("-inf"))
        p = torch.exp2(s - s.amax(-1, keepdim=True))
        p = p / p.sum(-1, keepdim=True)
        p = p * (rows < real_q_len)[:, None]
        want = p.unflatten(-1, (Lk // block, block)).sum(-1).unflatten(-2, (Lq // block, block)).sum(-2)
        yield {"block sums": (out, want, 2e-3)}
    return case


check("block_sparse_attention fp16 1x2x200x64 top_k 2", block_sparse_case(1, 2, 200, 64, 2, F16))
check("block_sparse_attention index bf16 2x1x150x32 top_k 5 (more than the row blocks)",
      block_sparse_case(2, 1, 150, 32, 5, BF16))
check("vertical-slash _triton_mixed_sparse_attention fp16 1x2x200x64 (nnz 3 / 40)",
      vertical_slash_case(1, 2, 200, 64, 3, 40, F16))
check("vertical-slash _triton_mixed_sparse_attention bf16 2x1x150x32, seqlen 150 of 192",
      vertical_slash_case(2, 1, 150, 32, 2, 70, BF16, N_CTX=192))
check("pit triton_sparse_forward fp16 1x2x200x64, torch_build_index (v 30, s 6)",
      pit_sparse_case(1, 2, 200, 64, 30, 6, F16))
check("pit triton_sparse_forward bf16 1x1x150x32 (v 100, s 3)", pit_sparse_case(1, 1, 150, 32, 100, 3, BF16))
check("pit triton_dense_forward fp16 1x2x200x64 (masked block-pointer store: refused)", dense_case(1, 2, 200, 64, F16))
check("flash_attn_triton decoding fp16 q 1 k 200 h 3 d 64", decoding_case(2, 1, 200, 3, 64, F16, False))
check("flash_attn_triton decoding bf16 q 5 k 150 h 2 d 40 (padded head dim)", decoding_case(1, 5, 150, 2, 40, BF16,
                                                                                           False))
check("flash_attn_triton decoding fp16 q 130 k 130 h 1 d 64 causal", decoding_case(1, 130, 130, 1, 64, F16, True))
check("streaming_forward fp16 1x2x200x64 n_init 4 n_local 50", streaming_case(1, 2, 200, 64, 4, 50, F16))
check("streaming_forward bf16 2x1x150x32 n_init 10 n_local 100", streaming_case(2, 1, 150, 32, 10, 100, BF16))
check("streaming_forward fp16 1x1x90x64 n_local 120 (one pass)", streaming_case(1, 1, 90, 64, 4, 120, F16))
check("streaming get_score (_score_kernel) fp16 1x2x200x64 n_init 5 n_local 60", score_case(1, 2, 200, 64, 5, 60, F16))
check("xattention flat_group_gemm fp16 q 256 k 384 d 128, chunk_start 128", gemm_case(1, 2, 256, 384, 128, 128))
check("xattention flat_group_gemm_fuse_reshape stride 2 q 256 k 768 causal", reshape_gemm_case(1, 2, 256, 768, 64, 2,
                                                                                              256, True))
check("xattention flat_group_gemm_fuse_reshape stride 3 q 384 k 384 non-causal",
      reshape_gemm_case(1, 1, 384, 384, 64, 3, 0, False))
check("xattention softmax_fuse_block_sum causal q 96 k 192 block 32 seg 64 chunk 96, real 150",
      block_sum_case(1, 2, 96, 192, 32, 64, 96, 150, True))
check("xattention softmax_fuse_block_sum non-causal q 96 k 320 block 32 seg 64, real 70",
      block_sum_case(2, 1, 96, 320, 32, 64, 0, 70, False))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:72s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} MInference cases match the float64 references")
