"""Native Sparse Attention's Triton kernels (XunhaoLai/native-sparse-attention-triton,
native_sparse_attention/ops/triton) on Tegula, through the conformance shim's `triton` package, against torch
float64 references:

  - the three key / value compressions (weighted_pool.py's `sliding_pool_fwd_kernel` and
    `sliding_pool_dxdw_kernel` for avgpool_compress, whose weight and its strides are None arguments, and
    weightedpool_compress; linear_compress.py's `linear_compress_fwd_kernel` / `linear_compress_bwd_kernel`),
    forward and backward, with an intra-block positional embedding, against float64 sliding windows written
    here (the library's torch versions in ops/torch/compress_key_value.py assert float16 / bfloat16);
  - flash_attention.py (`flash_attention_varlen`): varlen forward and backward, causal and not, GQA in Llama's
    grouping and interleaved (gqa_interleave: with as many query heads per group as groups, since the
    library's backward_dkdv picks the kv head as pid_h % NUM_SHARE_Q_HEADS there, where its forward and
    backward_dq take pid_h % NUM_KV_HEADS; with 6 query heads over 2 its dk and dv are read and written
    out of bounds, on a GPU too), against float64 attention written here;
  - compressed_attention.py (`compressed_attention`): attention of the queries over the compressed keys
    (`forward_kernel`, backward `backward_sum_o_do`, `backward_dkdv`, `backward_dq`) against the library's own
    ops/torch/compressed_attention.py run in float64 (output and, by autograd, gradients), and the top-k block
    selection: the recomputed scores (`score_kernel`, through `_get_attention_score`) against the float64
    probabilities summed over each GQA group, the block scores (`_transform_score_kernel`, through
    `transform_score`) against the library's torch transform_score on the same scores over the whole blocks it
    covers, and the selected blocks (the parallel version and the per-head loop `parallel_topk_compute=False`)
    against a float64 selection, where only a near tie (scores within 1e-3 of the largest) may choose another
    block;
  - topk_sparse_attention.py (`topk_sparse_attention`): selected-block attention forward (`forward_kernel`) and
    backward (`backward_sum_o_do`, `count_kernel` with tl.histogram, `pad_topk_idx_kernel`,
    `save_topk_idx_kernel`, `backward_dkdv`, `backward_dq`) against the library's own
    ops/torch/topk_sparse_attention.py run in float64, block sizes 32 and 64, with block indices drawn as the
    library's test draws them (block 0 always, each row sorted, -1 right padding past the query's block);
  - the decoding kernels (flash_attention_decode.py's `decode_kernel`, topk_sparse_attention_decode.py's
    `forward_kernel`) against float64 attention over each sequence's first seqlens[b] keys (the library's own
    torch versions there call .cuda()).

Not covered: ops/torch/compressed_attention_decode.py (torch only, no Triton kernel) and the sliding-window
branch of NSA, which the library's module runs with flash_attn's flash_attn_varlen_func (no Triton kernel of
its own).

Inputs are float16 and bfloat16 (the library asserts one of them nearly everywhere); sequence lengths are
not powers of two (one shorter than the compression kernel, so it has no compressed keys), head sizes 96 and
48 among 64. A case passes when every output is within tol * (the reference's largest magnitude): float16 1e-2
forward and 2e-2 gradients, bfloat16 3e-2 and 6e-2 (P is rounded to the input dtype before P @ V).

The library is not part of Tegula; point this at a checkout (a directory holding native_sparse_attention/; this
imports native_sparse_attention.ops from there, unchanged; einops must be importable):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/nsa_ops.py <native-sparse-attention-triton>

Written against commit 9bea856c911ebf263be88d797fb28458f82f1d94. What its host code asks of CUDA is stood in
for, all at torch's level (nothing of the library, Tegula or the shim):

  - a torch function mode maps `device="cuda"` (a keyword argument of any torch function) to
    TEGULA_CONFORMANCE_DEVICE (the library's torch references allocate so);
  - without a GPU, torch.cuda.set_device does nothing for a CPU device (linear_compress.py calls it with
    x.device), and torch.histc counts an integer tensor in its dtype, as on CUDA (compressed_attention.py's
    transform_score counts an int64 arange with it; torch's CPU kernel takes floating point only).
    torch.cuda.is_available() is False, so utils.is_hopper_gpu() is False: the Ampere warps and stages, and
    linear_compress's block of 4 along the head dimension.

Prints one line per case (the largest absolute difference from the reference over the case's outputs, each
output's difference, or the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set (the kernels compile one specialization per dtype, head size and block
configuration, by design).
"""

import os
import pathlib
import sys

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: nsa_ops.py <native-sparse-attention-triton checkout>")
NSA = pathlib.Path(sys.argv[1]).resolve()
for _file in ("weighted_pool.py", "linear_compress.py", "flash_attention.py", "compressed_attention.py",
              "topk_sparse_attention.py", "flash_attention_decode.py", "topk_sparse_attention_decode.py"):
    if not (NSA / "native_sparse_attention" / "ops" / "triton" / _file).is_file():
        sys.exit(f"{NSA} holds no native_sparse_attention/ops/triton/{_file}")
sys.path.insert(0, str(SHIM))
sys.path.insert(1, str(NSA))

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"


if DEVICE != "cuda":
    standins.CudaToDevice(DEVICE).__enter__()  # on for the rest of the process
    _set_device = torch.cuda.set_device
    torch.cuda.set_device = lambda device: None if torch.device(device).type == "cpu" else _set_device(device)
    _histc = torch.histc

    def _histc_integers(input, bins=100, min=0, max=0, *, out=None):
        """torch.histc of an integer tensor, which torch's CPU kernel refuses and its CUDA kernel counts in the
        input's dtype."""
        if input.is_floating_point() or input.device.type != "cpu" or out is not None:
            return _histc(input, bins, min, max, out=out)
        return _histc(input.double(), int(bins), float(min), float(max)).to(input.dtype)

    torch.histc = _histc_integers

from native_sparse_attention.ops.triton import compressed_attention as ca  # noqa: E402
from native_sparse_attention.ops.triton.flash_attention import flash_attention_varlen  # noqa: E402
from native_sparse_attention.ops.triton.flash_attention_decode import flash_attention_decode  # noqa: E402
from native_sparse_attention.ops.triton.linear_compress import linear_compress  # noqa: E402
from native_sparse_attention.ops.triton.topk_sparse_attention import topk_sparse_attention  # noqa: E402
from native_sparse_attention.ops.triton.topk_sparse_attention_decode import topk_sparse_attention_decode  # noqa: E402
from native_sparse_attention.ops.triton.weighted_pool import avgpool_compress, weightedpool_compress  # noqa: E402
from native_sparse_attention.ops.torch.compressed_attention import (  # noqa: E402
    compressed_attention_torch, transform_score as transform_score_torch)
from native_sparse_attention.ops.torch.topk_sparse_attention import topk_sparse_attention_torch  # noqa: E402

torch.manual_seed(0)
results = []


def check(name, case, stages=("forward", "backward")):
    comparisons_check(results, name, case, stages)


def leaf(t):
    return t.detach().clone().double().requires_grad_()


def grads(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]


TOL = {torch.float16: (1e-2, 2e-2), torch.bfloat16: (3e-2, 6e-2)}


def cu_seqlens(lens):
    return torch.tensor([0] + list(lens), dtype=torch.int32).cumsum(0, dtype=torch.int32)


def windows(x, lens, size, stride):
    """x [T, H, D] -> the compression windows [N, size, H, D] (sequences shorter than size have none)."""
    out, start = [], 0
    for L in lens:
        n = (L - size) // stride + 1 if L >= size else 0
        idx = start + torch.arange(n)[:, None] * stride + torch.arange(size)[None, :]
        out.append(x[idx])
        start += L
    return torch.cat(out)


# --- weighted_pool.py / linear_compress.py: key / value compression -----------------------------------------

def compress(kind, lens, H, D, size, stride, dtype, pe=True):
    def run():
        x = torch.randn(sum(lens), H, D).to(dtype)
        w = {"avg": None, "weighted": torch.rand(H, size) / size,
             "linear": torch.randn(H, size * D, D) / (size * D) ** 0.5}[kind]
        w = None if w is None else w.to(dtype)
        p = (torch.randn(H, size, D) * 0.1).to(dtype) if pe else None
        fn = {"avg": avgpool_compress, "weighted": weightedpool_compress, "linear": linear_compress}[kind]
        xg, = grads(x)
        wg = None if w is None else grads(w)[0]
        y, y_cu = fn(xg, wg, cu_seqlens(lens), size, stride, p)
        xr = leaf(x)
        win = windows(xr, lens, size, stride)  # [N, size, H, D]
        pr = p.double() if pe else None
        if kind == "avg":
            wr = None
            ref = win.mean(1) + (pr.mean(1) if pe else 0)
        elif kind == "weighted":
            wr = leaf(w)
            ref = torch.einsum("nkhd,hk->nhd", win, wr) + (torch.einsum("hkd,hk->hd", pr, wr) if pe else 0)
        else:
            wr = leaf(w)
            ref = torch.einsum("nkhd,hkdD->nhD", win, wr.view(H, size, D, D))
            if pe:
                ref = ref + torch.einsum("hK,hKD->hD", pr.reshape(H, size * D), wr)
        ftol, btol = TOL[dtype]
        n_ref = [max((L - size) // stride + 1, 0) for L in lens]
        if y_cu.tolist() != cu_seqlens(n_ref).tolist():
            raise AssertionError(f"compressed cu_seqlens {y_cu.tolist()}, expected {cu_seqlens(n_ref).tolist()}")
        yield {"y": (y, ref, ftol)}
        dy = torch.randn(y.shape).to(dtype)
        y.backward(dy)
        ref.backward(dy.double())
        got = {"dx": (xg.grad, xr.grad, btol)}
        if wr is not None:
            got["dw"] = (wg.grad, wr.grad, btol)
        yield got
    return run


LENS = [300, 517, 20, 131]  # 20: shorter than the compression kernel
check("avgpool_compress fp16 D=96 (weight None)", compress("avg", LENS, 2, 96, 32, 16, torch.float16))
check("weightedpool_compress bf16 D=64 kernel 16 stride 8", compress("weighted", LENS, 3, 64, 16, 8, torch.bfloat16))
check("weightedpool_compress fp16 D=96 no pe", compress("weighted", LENS, 2, 96, 32, 16, torch.float16, pe=False))
check("linear_compress fp16 D=48 kernel 32 stride 16", compress("linear", LENS, 2, 48, 32, 16, torch.float16))
check("linear_compress bf16 D=64 kernel 16 stride 16", compress("linear", [77, 150, 200], 2, 64, 16, 16,
                                                                  torch.bfloat16, pe=False))


# --- flash_attention.py ---------------------------------------------------------------------------------------

def attention_ref(q, k, v, lens, causal, scale, interleave=False):
    """float64 varlen attention, q [T, H, D], k / v [T, Hk, D]; each sequence's queries and keys align."""
    H, Hk = q.shape[1], k.shape[1]
    heads = torch.arange(H) % Hk if interleave else torch.arange(H) // (H // Hk)
    k, v = k[:, heads], v[:, heads]
    out, start = [], 0
    for L in lens:
        s = torch.einsum("qhd,khd->hqk", q[start:start + L], k[start:start + L]) * scale
        if causal:
            s = s.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), float("-inf"))
        out.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v[start:start + L]))
        start += L
    return torch.cat(out)


def flash_varlen(lens, H, Hk, D, causal, dtype, interleave=False):
    def run():
        T = sum(lens)
        q, k, v = torch.randn(T, H, D).to(dtype), torch.randn(T, Hk, D).to(dtype), torch.randn(T, Hk, D).to(dtype)
        qg, kg, vg = grads(q, k, v)
        cu = cu_seqlens(lens)
        o = flash_attention_varlen(qg, kg, vg, cu, cu, max(lens), max(lens), causal, None, interleave)
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        ref = attention_ref(qr, kr, vr, lens, causal, D ** -0.5, interleave)
        ftol, btol = TOL[dtype]
        yield {"o": (o, ref, ftol)}
        do = torch.randn(o.shape).to(dtype)
        o.backward(do)
        ref.backward(do.double())
        yield {"dq": (qg.grad, qr.grad, btol), "dk": (kg.grad, kr.grad, btol), "dv": (vg.grad, vr.grad, btol)}
    return run


check("flash_attention_varlen causal GQA 4/2 fp16 D=96", flash_varlen([300, 77, 150], 4, 2, 96, True, torch.float16))
check("flash_attention_varlen non-causal MHA bf16 D=64", flash_varlen([130, 45, 201], 2, 2, 64, False, torch.bfloat16))
# gqa_interleave with 4 query heads over 2: backward_dkdv takes the kv head as pid_h % NUM_SHARE_Q_HEADS (the
# forward and backward_dq as pid_h % NUM_KV_HEADS), which is the same only where the two counts agree.
check("flash_attention_varlen causal gqa_interleave 4/2 fp16 D=48",
      flash_varlen([99, 160], 4, 2, 48, True, torch.float16, interleave=True))


# --- compressed_attention.py ----------------------------------------------------------------------------------

def block_scores_ref(score, lens, size, stride, block, init, local):
    """float64 NSA block scores [Hk, T, blocks] from the compressed-key scores [Hk, T, max_k]: block j sums the
    compressed keys overlapping it (key c covers positions c * stride ... c * stride + size - 1), each weighted by
    how many of the block's stride-long pieces it overlaps; the first `init` blocks and the `local` blocks ending
    at the query's own are forced (inf)."""
    Hk, T, max_k = score.shape
    blocks = -(-max(lens) // block)
    pad = size // stride - 1
    offs = (torch.arange(size // stride)[:, None] + torch.arange(block // stride)[None, :]).flatten()
    weight = torch.bincount(offs).double()
    out = torch.zeros(Hk, T, blocks, dtype=torch.float64)
    for j in range(blocks):
        for o, wo in enumerate(weight.tolist()):
            c = j * (block // stride) - pad + o
            if 0 <= c < max_k:
                out[..., j] += wo * score[..., c]
    qb = torch.cat([torch.arange(L) for L in lens]) // block
    bj = torch.arange(blocks)
    forced = ((qb[:, None] >= bj[None, :]) & (qb[:, None] < bj[None, :] + local)) | (bj[None, :] < init)
    return out.masked_fill(forced[None], float("inf"))


def topk_mismatches(got, want, scores, tol):
    """Rows whose selected blocks (non-negative entries) differ from want's other than by near ties: the
    scores of the differing blocks, sorted, agree within tol."""
    bad = 0
    for h in range(got.shape[0]):
        for i in range(got.shape[1]):
            g = set(got[h, i][got[h, i] >= 0].tolist()); w = set(want[h, i][want[h, i] >= 0].tolist())
            if g == w:
                continue
            sg = sorted(scores[h, i, list(g - w)].tolist()); sw = sorted(scores[h, i, list(w - g)].tolist())
            if len(sg) != len(sw) or any(abs(a - b) > tol for a, b in zip(sg, sw)):
                bad += 1
    return bad


def compressed(lens, H, Hk, D, size, stride, block, topk, dtype, parallel=True, init=1, local=2):
    def run():
        T = sum(lens)
        n = [max((L - size) // stride + 1, 0) for L in lens]
        q = torch.randn(T, H, D).to(dtype)
        k, v = torch.randn(sum(n), Hk, D).to(dtype), torch.randn(sum(n), Hk, D).to(dtype)
        cu_q, cu_k = cu_seqlens(lens), cu_seqlens(n)
        qg, kg, vg = grads(q, k, v)
        o, topk_idx = ca.compressed_attention(qg, kg, vg, size, stride, block, topk, cu_q, cu_k, max(lens), max(n),
                                              init_blocks=init, local_blocks=local, parallel_topk_compute=parallel)
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        ref, _ = compressed_attention_torch(qr, kr, vr, size, stride, block, topk, cu_q, cu_k, max(lens), max(n),
                                            init_blocks=init, local_blocks=local)
        # the selection, from float64 probabilities summed over each GQA group
        scale = D ** -0.5
        s = torch.einsum("qhd,khd->hqk", q.double(), k.double().repeat_interleave(H // Hk, 1)) * scale
        score = torch.zeros(Hk, T, max(n), dtype=torch.float64)
        for b in range(len(lens)):
            qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
            visible = torch.arange(lens[b])[:, None] >= (torch.arange(n[b]) * stride + size - 1)[None, :]
            p = torch.softmax(s[:, qs, ks].masked_fill(~visible, float("-inf")), -1).nan_to_num(0.0)
            score[:, qs, :n[b]] = p.view(Hk, H // Hk, lens[b], n[b]).sum(1)
        bscore = block_scores_ref(score, lens, size, stride, block, init, local)
        want = bscore.topk(min(topk, bscore.shape[-1]), -1).indices.sort(-1).values
        qb = torch.cat([torch.arange(L) for L in lens]) // block
        want[want > qb[None, :, None]] = -1
        finite = bscore[bscore.isfinite()]
        bad = topk_mismatches(topk_idx, want, bscore, 1e-3 * finite.abs().max().item())
        ftol, btol = TOL[dtype]
        yield {"o": (o, ref, ftol), f"topk rows off ({bad})": (torch.tensor(float(bad)), torch.zeros(1), 0.0)}
        do = torch.randn(o.shape).to(dtype)
        o.backward(do)
        ref.backward(do.double())
        yield {"dq": (qg.grad, qr.grad, btol), "dk": (kg.grad, kr.grad, btol), "dv": (vg.grad, vr.grad, btol)}
    return run


def score_kernels(lens, H, Hk, D, size, stride, block, dtype, init=1, local=2):
    """_get_attention_score (score_kernel) from the forward's lse, and transform_score (_transform_score_kernel)."""
    def run():
        T = sum(lens)
        n = [max((L - size) // stride + 1, 0) for L in lens]
        q = torch.randn(T, H, D).to(dtype)
        k, v = torch.randn(sum(n), Hk, D).to(dtype), torch.randn(sum(n), Hk, D).to(dtype)
        cu_q, cu_k = cu_seqlens(lens), cu_seqlens(n)
        scale = D ** -0.5
        _, lse = ca._compressed_attention_fwd(q, k, v, size, stride, cu_q, cu_k, max(lens), max(n), scale)
        score = ca._get_attention_score(q, k, lse, size, stride, cu_q, cu_k, max(lens), max(n), scale)
        s = torch.einsum("qhd,khd->hqk", q.double(), k.double().repeat_interleave(H // Hk, 1)) * scale
        ref = torch.zeros(Hk, T, max(n), dtype=torch.float64)
        for b in range(len(lens)):
            qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
            visible = torch.arange(lens[b])[:, None] >= (torch.arange(n[b]) * stride + size - 1)[None, :]
            p = torch.softmax(s[:, qs, ks].masked_fill(~visible, float("-inf")), -1).nan_to_num(0.0)
            ref[:, qs, :n[b]] = p.view(Hk, H // Hk, lens[b], n[b]).sum(1)
        bs = ca.transform_score(score, size, stride, block, cu_q, cu_k, max(lens), max(n), init, local)
        bs_ref = transform_score_torch(score.double(), size, stride, block, cu_q, cu_k, max(lens), max(n), init, local)
        full = max(lens) // block  # the torch version fills the whole blocks only
        fin = bs_ref[..., :full].isfinite()
        yield {"score": (score, ref, TOL[dtype][0]),
               "block score": (bs[..., :full].masked_fill(~fin, 0), bs_ref[..., :full].masked_fill(~fin, 0), 1e-5),
               "forced blocks": ((bs[..., :full] == float("inf")).double(), (~fin).double(), 0.0)}
    return run


CLENS = [300, 517, 20, 131]
check("compressed_attention GQA 4/2 fp16 D=96 (kernel 32, stride 16, block 64, top 4)",
      compressed(CLENS, 4, 2, 96, 32, 16, 64, 4, torch.float16))
check("compressed_attention MHA 2/2 bf16 D=64 (kernel 16, stride 8, block 32, top 5)",
      compressed([260, 99, 333], 2, 2, 64, 16, 8, 32, 5, torch.bfloat16))
check("compressed_attention GQA 6/2 fp16 D=64 per-head top-k loop",
      compressed(CLENS, 6, 2, 64, 32, 16, 64, 4, torch.float16, parallel=False))
check("compressed_attention score_kernel + transform_score fp16 GQA 4/2",
      score_kernels(CLENS, 4, 2, 96, 32, 16, 64, torch.float16), ("",))


# --- topk_sparse_attention.py ---------------------------------------------------------------------------------

def topk_example(lens, block, topk, Hk):
    """The library test's draw (generate_topk_idx_example): per kv head and query, topk distinct random blocks
    (fewer when the sequence has fewer), block 0 first, sorted, -1 past the query's own block (right padding)."""
    heads = []
    for _ in range(Hk):
        rows = []
        for L in lens:
            nb = -(-L // block)
            idx = torch.randn(L, nb).topk(min(topk, nb), -1).indices.to(torch.int32)
            rows.append(torch.nn.functional.pad(idx, (0, topk - idx.shape[-1]), value=topk))
        idx = torch.cat(rows).sort(1).values
        idx[:, 0] = 0
        qb = torch.cat([torch.arange(L) for L in lens]) // block
        idx[idx > qb[:, None]] = -1
        heads.append(idx)  # ascending, so the -1s are on the right
    return torch.stack(heads)


def topk_sparse(lens, H, Hk, D, block, topk, dtype):
    def run():
        T = sum(lens)
        q, k, v = torch.randn(T, H, D).to(dtype), torch.randn(T, Hk, D).to(dtype), torch.randn(T, Hk, D).to(dtype)
        idx = topk_example(lens, block, topk, Hk)
        cu = cu_seqlens(lens)
        qg, kg, vg = grads(q, k, v)
        o = topk_sparse_attention(qg, kg, vg, idx, block, cu)
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        ref = topk_sparse_attention_torch(qr, kr, vr, idx, block, cu)
        ftol, btol = TOL[dtype]
        yield {"o": (o, ref, ftol)}
        do = torch.randn(o.shape).to(dtype)
        o.backward(do)
        ref.backward(do.double())
        yield {"dq": (qg.grad, qr.grad, btol), "dk": (kg.grad, kr.grad, btol), "dv": (vg.grad, vr.grad, btol)}
    return run


check("topk_sparse_attention GQA 8/2 fp16 D=96 block 64 top 3", topk_sparse([300, 517, 131], 8, 2, 96, 64, 3,
                                                                           torch.float16))
check("topk_sparse_attention MHA 2/2 bf16 D=64 block 32 top 5", topk_sparse([260, 45, 333], 2, 2, 64, 32, 5,
                                                                           torch.bfloat16))
check("topk_sparse_attention GQA 6/3 fp16 D=48 block 64 top 2", topk_sparse([190, 77], 6, 3, 48, 64, 2,
                                                                           torch.float16))


# --- flash_attention_decode.py / topk_sparse_attention_decode.py ---------------------------------------------

def decode(seqlens, H, Hk, D, dtype, block=None, topk=None):
    def run():
        B, max_len = len(seqlens), max(seqlens) + 13
        q = torch.randn(B, H, D).to(dtype)
        k, v = torch.randn(B, max_len, Hk, D).to(dtype), torch.randn(B, max_len, Hk, D).to(dtype)
        lens = torch.tensor(seqlens, dtype=torch.int32)
        keep = torch.arange(max_len)[None, None, :] < lens[:, None, None]  # [B, 1, max_len]
        if block is None:
            o = flash_attention_decode(q, k, v, lens)
            keep = keep.expand(B, Hk, max_len)
        else:
            idx = torch.full((Hk, B, topk), -1, dtype=torch.int32)
            sel = torch.zeros(B, Hk, max_len, dtype=torch.bool)
            for b, L in enumerate(seqlens):
                nb = -(-L // block)
                for h in range(Hk):
                    chosen = (torch.cat([torch.zeros(1, dtype=torch.long), 1 + torch.randperm(nb - 1)])[:topk]
                              if nb > 1 else torch.zeros(1, dtype=torch.long)).sort().values
                    idx[h, b, :len(chosen)] = chosen.to(torch.int32)
                    for c in chosen.tolist():
                        sel[b, h, c * block:(c + 1) * block] = True
            o = topk_sparse_attention_decode(q, k, v, idx, block, lens)
            keep = keep & sel
        keep = keep.repeat_interleave(H // Hk, 1)  # [B, H, max_len]
        kk, vv = k.double().repeat_interleave(H // Hk, 2), v.double().repeat_interleave(H // Hk, 2)
        s = torch.einsum("bhd,bkhd->bhk", q.double(), kk) * D ** -0.5
        ref = torch.einsum("bhk,bkhd->bhd", torch.softmax(s.masked_fill(~keep, float("-inf")), -1), vv)
        yield {"o": (o, ref, TOL[dtype][0])}
    return run


check("flash_attention_decode GQA 8/2 fp16 D=96", decode([37, 300, 1, 129, 77], 8, 2, 96, torch.float16), ("",))
check("flash_attention_decode MHA bf16 D=64 batch 19", decode(list(range(5, 400, 21)), 3, 3, 64, torch.bfloat16),
      ("",))
check("topk_sparse_attention_decode GQA 8/2 fp16 D=96 block 64 top 3",
      decode([37, 300, 1, 129, 517], 8, 2, 96, torch.float16, block=64, topk=3), ("",))
check("topk_sparse_attention_decode MHA bf16 D=48 block 32 top 4",
      decode([90, 250, 33], 2, 2, 48, torch.bfloat16, block=32, topk=4), ("",))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:82s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} native sparse attention cases match the torch "
      f"float64 references")
