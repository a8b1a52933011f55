"""ColossalAI's Triton kernels (hpcaitech/ColossalAI, colossalai/kernel/triton) on Tegula, through the conformance
shim's `triton` package, against torch float64 (or exact) references written here from the math.

Cases (every kernel of the directory; random data seeded per case, the seed being the case name's CRC, so -k
reproduces a case's data; sizes that are not powers of two where the API allows, so the kernels' masks cut a tail):

  - context_attn_unpad.py `context_attention_unpadded`: `_fwd_context_paged_attention_kernel` (causal prefill
    over packed sequences of 37 / 16 / 70 tokens, GQA 8 / 2 and MHA, head sizes 32 / 64 / 128, blocks of 16 / 32 /
    64, float32 / float16 / bfloat16; k and v as views of one fused KV tensor, with a caller's output, sm_scale and
    a max_seq_len past the longest sequence), `_alibi_fwd_context_paged_attention_kernel` (ALiBi slopes) and
    `_fwd_context_paged_attention_kernel_v2` (the [blocks, heads, head_dim / x, block, x] K cache); the output, and
    both caches bit for bit (the tokens copied to their pages, every other cache entry untouched); int64 context
    lengths, an expected refusal;
  - flash_decoding.py `flash_decoding_attention`: `_flash_decoding_fwd_kernel` split over the pages of a block
    table then `_flash_decoding_fwd_reduce_kernel` (GQA, MHA, head sizes 32 to 256, blocks of 16 / 32 / 64,
    float32 / float16 / bfloat16, the x-split K cache, two and three query tokens a sequence as in speculative
    decoding's verification, a caller's output and intermediate buffers sized for a larger batch and more splits)
    and `_alibi_flash_decoding_fwd_kernel`;
  - kvcache_copy.py `copy_k_to_blocked_cache` (one token a sequence, and n = 3 tokens a sequence;
    `_copy_to_kcache_seqlen_n_kernel`) and `copy_kv_to_blocked_cache` (`_copy_to_kvcache_seqlen1_kernel`), both
    K cache layouts, head sizes 64 / 80 / 96 under the x-split layout; every cache entry exactly;
  - rms_layernorm.py `rms_layernorm` (`_rmsnorm_kernel`, and `_rmsnorm_with_residual_kernel`, which also writes
    x + residual back into x), float16 / float32 / bfloat16 inputs, hidden sizes 136 to 5000, a caller's output;
  - softmax.py `softmax` (rows of 77, 1000, 300, 3000 and 1 columns, float32 / float16 / bfloat16), and its masked
    path's expected refusal;
  - llama_act_combine_kernel.py `LlamaActCombine` forward (`_llama_act_combine_forward`) and backward
    (`_llama_act_combine_backward`) through torch.autograd, float32 / float16 / bfloat16;
  - qkv_matmul_kernel.py `qkv_gemm_4d_kernel` (no wrapper: launched as its docstring describes, over 4-D
    tensors in [batch, seq, head, dim] and [batch, head, seq, dim] layouts given by strides; Q K^T with a scale
    and P V without, its default and smaller blocks so the grouped program order has several groups);
  - no_pad_rotary_embedding.py: `rotary_embedding` without a cache (`rotary_embedding_kernel`, GQA) and with one
    (`fused_rotary_embedding_kernel_v2`: q rotated in place, the rotated k into its cache page),
    `decoding_fused_rotary_embedding` (`decoding_fused_rotary_embedding_kernel`, both K cache layouts: rotated k
    and v into their pages) and `fused_rotary_embedding_kernel` (no wrapper calls it: launched directly);
  - rotary_cache_copy.py `get_xine_cache`: prefill (`prefill_cache_kernel`) and decoding (`decoding_cache_kernel`);
  - fused_rotary_embedding.py `fused_rotary_embedding` (`fused_rotary_emb`): see below.

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2. Copies
(caches, get_xine_cache) are compared exactly. Where a kernel rounds an intermediate to its input's type (the
float16 / bfloat16 products of llama_act_combine, rotary embedding, the decoding kernels' q * k and p * v), the
reference takes the same roundings; rms_layernorm stores `y.to(tl.float16)` (and x + residual as float16) whatever
its input's type, so its outputs take that rounding in the reference and float16's tolerance for float32 inputs.

The cases step around these properties of the library, which hold on any machine (each case's docstring says
which):

  - fused_rotary_embedding.py computes q's second half from k (`out_q1 = k_0 * sin + k_1 * cos`) and k's first
    half from q (`out_k0 = q_0 * cos - q_1 * sin`): rotary embedding as written is wrong. One case compares it
    with rotary embedding (it fails, for that reason) and one with the kernel's statements as written (it
    matches). ColossalAI's own test of it is skipped ("cuda error") and discards its allclose results. The kernel
    also loads `N_ELEMENTS = next_power_of_2(total tokens)` entries of the cumulative lengths unmasked, past the
    tensor's end unless the sequences are that many: the cases pad the lengths with empty sequences to that count;
  - get_xine_cache's prefill kernel loads next_power_of_2(number of sequences) cumulative lengths unmasked, past
    the end of the tensor when the number of sequences is not a power of two (the bytes there decide the
    positions): the prefill case has 4 sequences;
  - softmax's masked path reads `row_indx`, a name the kernel never defines (it means `row_idx`): Triton refuses
    to compile it; its case checks that Tegula refuses it too (launched directly, since the wrapper's host
    check `input[-1] == mask[-1]` already raises for any mask of more than one element). The wrapper's path
    for over 350000 rows passes n_rows and BLOCK_M, which the kernel does not take, and is not run;
  - fused_rotary_embedding_kernel stores into the cache unmasked, from block ids loaded under a mask: its case
    has the token and head counts multiples of its blocks (4 and 4). fused_rotary_embedding_kernel_v2 reads k
    and writes the cache at q's head index: its case has as many K heads as Q heads;
  - context_attention_unpadded's kernels place the output by q's strides (`O + offset_q`) and read v by k's
    (`V + offset_kv`): q must have the output's token stride (Hq * head_dim) and v k's strides. A q that is a view
    of a fused QKV tensor writes the later sequences' rows past the output (with q, k, v views of one [123, 8, 64]
    tensor and sequences of 37 / 16 / 70 tokens, 53 of the output's rows stay unwritten and 53 rows past its end
    are written); the fused case has k and v views of one KV tensor and q on its own;
  - the old (non-split) K cache layout takes `tl.arange(0, head_dim)`, so head sizes are powers of two there;
    the attention wrappers assert head sizes of 32 / 64 / 128 / 256 and blocks of 16 / 32 / 64 / 128;
  - context_attention_unpadded's kernels sum the lengths before a sequence into `prev_seq_len_sum = 0`, an int32,
    in a loop: int64 context lengths make it int64 there, which Triton refuses (a loop-carried variable changes
    type); one case checks that Tegula refuses it too, the others pass int32 lengths as ColossalAI does;
  - flash decoding with two query tokens a sequence gives the first token one key less: sequences are at least
    two tokens long there (a sequence of one would leave that token no key and a 0 / 0).

Stand-ins: none for the kernels. The kernel files import only torch and triton (and functools, typing, warnings),
so the `colossalai` packages are imported bare (standins.bare_packages: no __init__ runs, so colossalai's
distributed and accelerator setup is not reached) and each module loads from the tree. llama_act_combine_kernel.py
imports torch.cuda.amp's custom_fwd / custom_bwd, which torch has on a CPU build (they check CUDA autocast, off).
Tensors are on TEGULA_CONFORMANCE_DEVICE (default cpu); no library host code asks for CUDA.

ColossalAI is not part of Tegula; point this at a tree holding colossalai/kernel/triton (a `git archive HEAD
colossalai/kernel/triton | tar -x -C <tree>` of the repository will do). Written against commit
4f9953be335ef371b3848719ddafe596c01ecd37 of 2026-04-09:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/colossalai_ops.py <tree> [-k SUBSTRING] \
        [--json out.json]

Prints one line per case (ok / FAIL / refused (expected), the largest absolute difference from the reference over
the case's outputs, each output's difference or the first line of the error) and the total.

On the CPU backend (2026-12-06) 62 of 63 cases match and both expected refusals are refused, in about 40 seconds
on two cores from an empty Tegula cache; the case left is the library's (fused_rotary_embedding against rotary
embedding). Under TEGULA_DEBUG=1, which checks every load and store against its array, the same cases match and no
access falls outside its tensor. No divergence from Triton was found.
"""

import argparse
import importlib
import json
import os
import pathlib
import sys
import warnings
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
KERNELS = "colossalai/kernel/triton"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a tree holding colossalai/kernel/triton")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
if not (SRC / KERNELS / "flash_decoding.py").is_file():
    sys.exit(f"{SRC} holds no {KERNELS}/flash_decoding.py")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning)  # torch.cuda.amp.custom_fwd's deprecation

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as check_stages, refusal  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

standins.bare_packages(SRC, "colossalai")


def load(name):
    return importlib.import_module("colossalai.kernel.triton." + name)


results = []
F16, BF16, F32, F64, I32 = torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32


def check(name, case):
    """case() returns {what: (got, want, tol)}; passes when every max |got - want| <= tol * max |want|
    (comparisons.check, one stage, seeded by the name's CRC so that -k reproduces a case's data)."""
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))

    def one_stage():
        yield case()
    check_stages(results, name, one_stage, stages=("run",))


def expect_refusal(name, launch, expected):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    refusal(results, name, launch, expected)


def tol_of(dtype):
    return {BF16: 2e-2, F16: 2e-3}.get(dtype, 1e-5)


def exact(got, want):
    return (got, want, 0.0)


def rnd(x, dtype):
    """x (float64) rounded to dtype and back: one rounding of the kernel's, in the reference."""
    return x.to(dtype).double()


def cdiv(a, b):
    return -(-a // b)


# --- paged KV caches -----------------------------------------------------------------------------------------------

def page_table(lens, block, width=None):
    """A block table [B, width] giving each sequence's pages distinct physical blocks in a random order; entries
    past a sequence's pages name a spare block no sequence owns (a write there shows in the cache comparison).
    Returns the table and the number of physical blocks."""
    need = [cdiv(L, block) for L in lens]
    width = width or max(need) + 1
    total = sum(need) + 2
    perm = torch.randperm(total - 1).tolist()
    table = torch.full((len(lens), width), total - 1, dtype=I32)
    at = 0
    for b, n in enumerate(need):
        table[b, :n] = torch.tensor(perm[at:at + n], dtype=I32)
        at += n
    return table, total


def put(cache, blk, off, val, x=None):
    """cache[blk] at block offset off <- val [H, D]: [nb, H, bs, D], or with x the split layout [nb, H, D // x, bs,
    x]."""
    if x is None:
        cache[blk, :, off, :] = val
    else:
        H, D = val.shape
        cache[blk, :, :, off, :] = val.view(H, D // x, x)


def cache_of(seqs, table, block, nblocks, H, D, dtype, x=None):
    """A cache holding each sequence's rows ([L, H, D]) at its pages; the other entries random."""
    shape = (nblocks, H, block, D) if x is None else (nblocks, H, D // x, block, x)
    cache = torch.randn(shape).to(dtype)
    for b, rows in enumerate(seqs):
        for p in range(rows.shape[0]):
            put(cache, int(table[b, p // block]), p % block, rows[p], x)
    return cache


# --- references ----------------------------------------------------------------------------------------------------

def causal_attention(q, k, v, lens, scale, slopes=None):
    """Packed causal attention: q [T, Hq, D], k / v [T, Hk, D], sequences of lens one after another; ALiBi adds
    slope * (j - i) to the score of key j for query i."""
    T, Hq, D = q.shape
    G = Hq // k.shape[1]
    out = torch.zeros(T, Hq, D, dtype=F64)
    s0 = 0
    for L in lens:
        qs = q[s0:s0 + L].double().transpose(0, 1)
        ks = k[s0:s0 + L].double().repeat_interleave(G, 1).transpose(0, 1)
        vs = v[s0:s0 + L].double().repeat_interleave(G, 1).transpose(0, 1)
        s = qs @ ks.transpose(1, 2) * scale
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        if slopes is not None:
            s = s + slopes.double()[:, None, None] * (j - i)
        s = s.masked_fill(j > i, float("-inf"))
        out[s0:s0 + L] = (torch.softmax(s, -1) @ vs).transpose(0, 1)
        s0 += L
    return out


def cached_after_prefill(k, lens, table, block, cache, x=None):
    """The cache after a prefill copied each sequence's k rows to its pages (the rest as it was)."""
    want = cache.clone()
    s0 = 0
    for b, L in enumerate(lens):
        for p in range(L):
            put(want, int(table[b, p // block]), p % block, k[s0 + p], x)
        s0 += L
    return want


def context_attention_case(dtype, lens, Hq, Hk, D, block, alibi=False, new_layout=False, fused=False):
    """context_attention_unpadded over packed sequences: causal attention out [T, Hq * D], and k / v copied to their
    cache pages (K in the split layout with x = 16 bytes / element where new_layout). fused: k and v are views of
    one [T, 2 Hk, D] projection (token strides of 2 Hk D; q stays [T, Hq, D], since the kernels place the output
    by q's strides), the caller passes the output, sm_scale and a max_seq_len past the longest sequence (programs
    for blocks no sequence has)."""
    def run():
        m = load("context_attn_unpad")
        T = sum(lens)
        if fused:
            q, kv = torch.randn(T, Hq, D).to(dtype), torch.randn(T, 2 * Hk, D).to(dtype)
            k, v = kv[:, :Hk], kv[:, Hk:]
        else:
            q, k, v = (torch.randn(T, H, D).to(dtype) for H in (Hq, Hk, Hk))
        max_len = max(lens) + 2 * block if fused else None
        table, nb = page_table(lens, block, cdiv(max_len, block) if fused else None)
        x = 16 // torch.tensor([], dtype=dtype).element_size() if new_layout else None
        kc = torch.randn((nb, Hk, block, D) if x is None else (nb, Hk, D // x, block, x)).to(dtype)
        vc = torch.randn(nb, Hk, block, D).to(dtype)
        kc0, vc0 = kc.clone(), vc.clone()
        slopes = torch.rand(Hq) * 0.5 + 0.05 if alibi else None
        scale = 0.3 if fused else D ** -0.5
        given = torch.full((T, Hq * D), float("nan"), dtype=dtype) if fused else None
        out = m.context_attention_unpadded(q, k, v, kc, vc, torch.tensor(lens, dtype=I32), table, block,
                                           output=given, alibi_slopes=slopes, max_seq_len=max_len,
                                           sm_scale=0.3 if fused else None, use_new_kcache_layout=new_layout)
        if fused and out.data_ptr() != given.data_ptr():
            raise AssertionError("the output given was not the one returned")
        want = causal_attention(q, k, v, lens, scale, slopes).reshape(T, Hq * D)
        return {"out": (out, want, tol_of(dtype)),
                "k cache": exact(kc, cached_after_prefill(k, lens, table, block, kc0, x)),
                "v cache": exact(vc, cached_after_prefill(v, lens, table, block, vc0))}
    return run


def decoding_reference(q, kseq, vseq, lens, q_len, scale, dtype, block, slopes=None):
    """q [B * q_len, Hq, D]; token j of sequence b attends to the first lens[b] - (q_len - 1 - j) rows of kseq[b] /
    vseq[b] ([L, Hk, D]). As the kernel does in float16 / bfloat16: the q * k products and p * v products are rounded
    to the type (their sums are taken exactly here), and p is rounded to the type before it multiplies v. Each
    page's block is normalized on its own and the blocks merged by their log-sum-exp, as the two kernels do."""
    BT, Hq, D = q.shape
    G = Hq // kseq[0].shape[1]
    out = torch.zeros(BT, Hq, D, dtype=F64)
    low = dtype != F32
    for t in range(BT):
        b, j = divmod(t, q_len)
        n = lens[b] - (q_len - 1 - j)
        ks = kseq[b][:n].double().repeat_interleave(G, 1).transpose(0, 1)  # Hq, n, D
        vs = vseq[b][:n].double().repeat_interleave(G, 1).transpose(0, 1)
        prod = q[t].double()[:, None, :] * ks
        s = (rnd(prod, dtype) if low else prod).sum(-1) * scale
        if slopes is not None:
            s = s - slopes.double()[:, None] * (n - 1 - torch.arange(n))
        o = torch.zeros(Hq, D, dtype=F64)
        lse, parts = [], []
        for p0 in range(0, n, block):
            sb = s[:, p0:p0 + block]
            mb = sb.max(-1, keepdim=True).values
            e = torch.exp(sb - mb)
            lb = e.sum(-1, keepdim=True)
            pv = (rnd(e, dtype)[:, :, None] * vs[:, p0:p0 + block]) if low else e[:, :, None] * vs[:, p0:p0 + block]
            parts.append((rnd(pv, dtype) if low else pv).sum(1) / lb)
            lse.append(mb + torch.log(lb))
        w = torch.softmax(torch.cat(lse, -1), -1)
        for i, part in enumerate(parts):
            o += w[:, i:i + 1] * part
        out[t] = o
    return out


def flash_decoding_case(dtype, lens, Hq, Hk, D, block, q_len=1, alibi=False, new_layout=False, given=False):
    """flash_decoding_attention over a paged cache (random bytes past each sequence's end), GQA by kv_group_num,
    q_len query tokens a sequence (speculative decoding's verification: token j sees q_len - 1 - j keys fewer).
    given: the caller passes the output, and intermediate buffers sized for a larger batch and more splits, with
    max_seq_len_in_batch past the longest sequence."""
    def run():
        m = load("flash_decoding")
        B = len(lens)
        table, nb = page_table(lens, block)
        x = 16 // torch.tensor([], dtype=dtype).element_size() if new_layout else None
        kseq = [torch.randn(L, Hk, D).to(dtype) for L in lens]
        vseq = [torch.randn(L, Hk, D).to(dtype) for L in lens]
        kc = cache_of(kseq, table, block, nb, Hk, D, dtype, x)
        vc = cache_of(vseq, table, block, nb, Hk, D, dtype)
        q = torch.randn(B * q_len, Hq, D).to(dtype)
        slopes = torch.rand(Hq) * 0.5 + 0.05 if alibi else None
        extra = {}
        if given:
            splits = cdiv(max(lens), block) + 3
            extra = dict(max_seq_len_in_batch=max(lens) + 2 * block,
                         output=torch.full((B * q_len, Hq * D), float("nan"), dtype=dtype),
                         mid_output=torch.full((B * q_len + 3, Hq, splits, D), float("nan")),
                         mid_output_lse=torch.full((B * q_len + 3, Hq, splits), float("nan")))
            table = torch.cat([table, torch.full((B, 3), nb - 1, dtype=I32)], 1)
        out = m.flash_decoding_attention(q, kc, vc, torch.tensor(lens, dtype=I32), table, block,
                                         alibi_slopes=slopes, kv_group_num=Hq // Hk, q_len=q_len,
                                         use_new_kcache_layout=new_layout, **extra)
        want = decoding_reference(q, kseq, vseq, lens, q_len, D ** -0.5, dtype, block, slopes)
        return {"out": (out, want.reshape(B * q_len, Hq * D), tol_of(dtype))}
    return run


check("context_attention_unpadded fp16 GQA 8/2, D 64, block 16, lens 37/16/70",
      context_attention_case(F16, [37, 16, 70], 8, 2, 64, 16))
check("context_attention_unpadded fp32 MHA 4, D 32, block 32, lens 45/3", context_attention_case(F32, [45, 3], 4, 4,
                                                                                                 32, 32))
check("context_attention_unpadded bf16 GQA 6/3, D 128, block 16, lens 20/33/5",
      context_attention_case(BF16, [20, 33, 5], 6, 3, 128, 16))
check("context_attention_unpadded fp16 ALiBi, GQA 4/2, D 64, block 16", context_attention_case(F16, [37, 50], 4, 2,
                                                                                                64, 16, alibi=True))
check("context_attention_unpadded fp32 ALiBi, MHA 3, D 32, block 16", context_attention_case(F32, [29, 7, 18], 3, 3,
                                                                                              32, 16, alibi=True))
check("context_attention_unpadded fp16 split K cache (x 8), GQA 8/2, D 64",
      context_attention_case(F16, [37, 16, 70], 8, 2, 64, 16, new_layout=True))
check("context_attention_unpadded fp32 split K cache (x 4), MHA 2, D 32, block 32",
      context_attention_case(F32, [45, 60], 2, 2, 32, 32, new_layout=True))
check("context_attention_unpadded fp16 k / v views of a fused KV, given output, sm_scale, max_seq_len",
      context_attention_case(F16, [37, 16, 70], 4, 2, 64, 16, fused=True))
check("context_attention_unpadded fp32 block 64, D 128, lens 100/130", context_attention_case(F32, [100, 130], 2, 1,
                                                                                               128, 64))



def int64_lengths_launch():
    m = load("context_attn_unpad")
    lens, block = [37, 16], 16
    table, nb = page_table(lens, block)
    q, k, v = torch.randn(53, 2, 32), torch.randn(53, 2, 32), torch.randn(53, 2, 32)
    kc, vc = torch.zeros(nb, 2, block, 32), torch.zeros(nb, 2, block, 32)
    m.context_attention_unpadded(q, k, v, kc, vc, torch.tensor(lens, dtype=torch.int64), table, block)


expect_refusal("context_attention_unpadded with int64 context lengths (prev_seq_len_sum turns int32 -> int64)",
               int64_lengths_launch, r"prev_seq_len_sum")

check("flash_decoding_attention fp16 GQA 8/2, D 64, block 16, lens 37/1/70",
      flash_decoding_case(F16, [37, 1, 70], 8, 2, 64, 16))
check("flash_decoding_attention fp32 MHA 4, D 32, block 32, lens 45/100/3",
      flash_decoding_case(F32, [45, 100, 3], 4, 4, 32, 32))
check("flash_decoding_attention bf16 GQA 6/3, D 128, block 16", flash_decoding_case(BF16, [20, 33, 5], 6, 3, 128, 16))
check("flash_decoding_attention fp32 q_len 2 (verification), GQA 4/2, D 64",
      flash_decoding_case(F32, [37, 2, 70], 4, 2, 64, 16, q_len=2))
check("flash_decoding_attention fp16 q_len 3 (verification), MHA 2, D 64",
      flash_decoding_case(F16, [30, 17], 2, 2, 64, 16, q_len=3))
check("flash_decoding_attention fp16 split K cache (x 8), GQA 8/2, D 64",
      flash_decoding_case(F16, [37, 1, 70], 8, 2, 64, 16, new_layout=True))
check("flash_decoding_attention fp32 split K cache (x 4), MHA 2, D 32, block 32",
      flash_decoding_case(F32, [45, 100], 2, 2, 32, 32, new_layout=True))
check("flash_decoding_attention fp32 ALiBi, GQA 4/2, D 64", flash_decoding_case(F32, [37, 1, 70], 4, 2, 64, 16,
                                                                                 alibi=True))
check("flash_decoding_attention fp16 D 256, GQA 4/1, given output and larger buffers",
      flash_decoding_case(F16, [37, 1, 70], 4, 1, 256, 16, given=True))
check("flash_decoding_attention fp32 block 64, D 128, lens 200/65", flash_decoding_case(F32, [200, 65], 2, 1, 128, 64))
check("flash_decoding_attention fp16 ALiBi, MHA 3, D 32, block 32", flash_decoding_case(F16, [29, 70], 3, 3, 32, 32,
                                                                                         alibi=True))


# --- KV cache copies -----------------------------------------------------------------------------------------------

def copy_k_case(dtype, n, lens, H, D, block, new_layout=False):
    """copy_k_to_blocked_cache: n new tokens a sequence (lens count them): token i of sequence b goes to position
    lens[b] - n + i of its pages; every other entry stays."""
    def run():
        m = load("kvcache_copy")
        B = len(lens)
        table, nb = page_table(lens, block)
        x = 16 // torch.tensor([], dtype=dtype).element_size() if new_layout else None
        cache = torch.randn((nb, H, block, D) if x is None else (nb, H, D // x, block, x)).to(dtype)
        want = cache.clone()
        k = torch.randn(B * n, H, D).to(dtype)
        if n == 1:
            k = k.view(B, 1, H, D)  # the decoding shape [bsz, 1, heads, dim]
        m.copy_k_to_blocked_cache(k, cache, torch.tensor(lens, dtype=I32), table, n=n,
                                  use_new_kcache_layout=new_layout)
        kk = k.reshape(B * n, H, D)
        for b, L in enumerate(lens):
            for i in range(n):
                p = L - n + i
                put(want, int(table[b, p // block]), p % block, kk[b * n + i], x)
        return {"cache": exact(cache, want)}
    return run


def copy_kv_case(dtype, lens, H, D, block, new_layout=False):
    """copy_kv_to_blocked_cache: each sequence's new k and v at position lens[b] - 1 of its pages."""
    def run():
        m = load("kvcache_copy")
        B = len(lens)
        table, nb = page_table(lens, block)
        x = 16 // torch.tensor([], dtype=dtype).element_size() if new_layout else None
        kc = torch.randn((nb, H, block, D) if x is None else (nb, H, D // x, block, x)).to(dtype)
        vc = torch.randn(nb, H, block, D).to(dtype)
        kw, vw = kc.clone(), vc.clone()
        k, v = torch.randn(B, H, D).to(dtype), torch.randn(B, 1, H, D).to(dtype)
        m.copy_kv_to_blocked_cache(k, v, kc, vc, torch.tensor(lens, dtype=I32), table,
                                   use_new_kcache_layout=new_layout)
        for b, L in enumerate(lens):
            blk, off = int(table[b, (L - 1) // block]), (L - 1) % block
            put(kw, blk, off, k[b], x)
            put(vw, blk, off, v[b, 0])
        return {"k cache": exact(kc, kw), "v cache": exact(vc, vw)}
    return run


check("copy_k_to_blocked_cache fp16, 1 token, D 64", copy_k_case(F16, 1, [37, 1, 70, 16, 17], 3, 64, 16))
check("copy_k_to_blocked_cache fp32, 1 token, split layout (x 4), D 80", copy_k_case(F32, 1, [37, 1, 70], 3, 80, 16,
                                                                                     new_layout=True))
check("copy_k_to_blocked_cache bf16, n 3 tokens, D 64", copy_k_case(BF16, 3, [12, 15, 40], 2, 64, 16))
check("copy_k_to_blocked_cache fp16, n 3 tokens, split layout (x 8), D 96",
      copy_k_case(F16, 3, [12, 15, 40], 2, 96, 32, new_layout=True))
check("copy_kv_to_blocked_cache fp32, D 64", copy_kv_case(F32, [37, 1, 70, 32], 3, 64, 16))
check("copy_kv_to_blocked_cache bf16, split layout (x 8), D 96", copy_kv_case(BF16, [37, 1, 70], 2, 96, 16,
                                                                              new_layout=True))
check("copy_kv_to_blocked_cache fp16, split layout (x 8), D 128, block 32", copy_kv_case(F16, [5, 64, 33], 4, 128,
                                                                                         32, new_layout=True))


# --- RMS norm, softmax, activation ---------------------------------------------------------------------------------

def rms_case(dtype, M, N, residual=False, given_output=False):
    """rms_layernorm: y = x / sqrt(mean(x^2) + eps) * w, stored as float16 values into y (x's type); with a
    residual, x + residual (as float16 values) is written back into x and normalized."""
    def run():
        m = load("rms_layernorm")
        x = torch.randn(M, N).to(dtype)
        w = (torch.rand(N) + 0.5).to(dtype)
        r = torch.randn(M, N).to(dtype) if residual else None
        eps = 1e-5
        s = x.double() + (r.double() if residual else 0)
        xs = rnd(s, F16).to(dtype).double() if residual else x.double()
        rstd = 1 / torch.sqrt((s * s).mean(-1, keepdim=True) + eps)
        want = rnd(xs * rstd * w.double(), F16)
        out = torch.empty(M, N, dtype=dtype) if given_output else None
        y, xo = m.rms_layernorm(x, w, eps, norm_output=out, residual=r)
        tol = max(tol_of(dtype), tol_of(F16))
        res = {"y": (y, want, tol)}
        if given_output:
            res["y is norm_output"] = exact(torch.tensor(float(y.data_ptr() == out.data_ptr())), torch.tensor(1.0))
        if residual:
            res["x + residual"] = (xo, xs, tol)
        return res
    return run


check("rms_layernorm fp16 37x200", rms_case(F16, 37, 200))
check("rms_layernorm fp32 input 20x1000 (fp16-valued output)", rms_case(F32, 20, 1000))
check("rms_layernorm bf16 17x300", rms_case(BF16, 17, 300))
check("rms_layernorm fp16 5x5000 (one 8192-column block)", rms_case(F16, 5, 5000))
check("rms_layernorm fp16 with residual 37x200", rms_case(F16, 37, 200, residual=True))
check("rms_layernorm fp32 with residual into a given output 9x136", rms_case(F32, 9, 136, residual=True,
                                                                              given_output=True))


def softmax_case(dtype, shape):
    def run():
        m = load("softmax")
        x = (torch.randn(shape) * 3).to(dtype)
        return {"y": (m.softmax(x), torch.softmax(x.double(), -1), tol_of(dtype))}
    return run


check("softmax fp32 3x5x77", softmax_case(F32, (3, 5, 77)))
check("softmax fp16 37x1000", softmax_case(F16, (37, 1000)))
check("softmax bf16 20x300", softmax_case(BF16, (20, 300)))
check("softmax fp32 6x3000 (4096-column block)", softmax_case(F32, (6, 3000)))
check("softmax fp32 one column 7x1", softmax_case(F32, (7, 1)))


def softmax_mask_launch():
    m = load("softmax")
    x, mask = torch.randn(4, 50), torch.randn(4, 50)
    out = torch.empty_like(x)
    m.softmax_kernel[(4,)](out, x, x.stride(0), 50, mask, BLOCK_SIZE=64)


expect_refusal("softmax_kernel with a mask (reads the undefined row_indx)", softmax_mask_launch, r"row_indx")


def act_combine_case(dtype, shape):
    """LlamaActCombine: y = x1 * x2 * sigmoid(x2) * up for x_gate = [x1 | x2], and its backward for a random
    dy; every product (and 1 - s, 1 + x2 * (1 - s)) rounded to the type as the kernels compute in it, sigmoid
    in float32 then rounded."""
    def run():
        m = load("llama_act_combine_kernel")
        *lead, N = shape
        gate = torch.randn(*lead, 2 * N).to(dtype).requires_grad_()
        up = torch.randn(*lead, N).to(dtype).requires_grad_()
        y = m.LlamaActCombine.apply(gate, up)
        dy = torch.randn(*lead, N).to(dtype)
        y.backward(dy)
        r = (lambda t: rnd(t, dtype))
        x1, x2 = gate.detach()[..., :N].double(), gate.detach()[..., N:].double()
        u, g = up.detach().double(), dy.double()
        s = r(torch.sigmoid(x2))
        want_y = r(r(r(x1 * x2) * s) * u)
        act = r(r(g * x2) * s)
        d1, du = r(act * u), r(act * x1)
        d2 = r(r(r(r(g * x1) * u) * s) * r(1 + r(x2 * r(1 - s))))
        tol = tol_of(dtype)
        return {"y": (y, want_y, tol), "d x_gate": (gate.grad, torch.cat([d1, d2], -1), tol),
                "d x_up": (up.grad, du, tol)}
    return run


check("LlamaActCombine fp32 forward + backward 2x37x150", act_combine_case(F32, (2, 37, 150)))
check("LlamaActCombine fp16 forward + backward 37x300", act_combine_case(F16, (37, 300)))
check("LlamaActCombine bf16 forward + backward 3x5x200", act_combine_case(BF16, (3, 5, 200)))


# --- qkv_gemm_4d_kernel --------------------------------------------------------------------------------------------

def qkv_gemm_case(dtype, kind, blocks=None):
    """qkv_gemm_4d_kernel over 4-D tensors: "qk": c[b, h] = (a[b, :, h] @ k[b, :, h]^T) * scale, a = q in
    [batch, seq, head, dim], output [batch, head, M, N]; "pv": c[b, :, h] = p[b, h] @ v[b, :, h], p in [batch,
    head, M, N], v and the output in [batch, seq, head, dim], scale 0 (no scaling). The accumulator is rounded to
    c's type before the scale multiplies it (also in c's type)."""
    def run():
        m = load("qkv_matmul_kernel")
        B, H = 2, 3
        meta = dict(blocks or {})
        BM, BN = meta.get("BLOCK_SIZE_M", 64), meta.get("BLOCK_SIZE_N", 32)
        if kind == "qk":
            M, N, K = 37, 45, 80
            a = torch.randn(B, M, H, K).to(dtype)
            kk = torch.randn(B, N, H, K).to(dtype)
            c = torch.zeros(B, H, M, N, dtype=dtype)
            sa = (a.stride(0), a.stride(2), a.stride(1), a.stride(3))
            sb = (kk.stride(0), kk.stride(2), kk.stride(3), kk.stride(1))  # b[k, n] = key n's element k
            sc = c.stride()
            scale = 0.125
            acc = a.double().transpose(1, 2) @ kk.double().permute(0, 2, 3, 1)
            bmat = kk
        else:
            M, N, K = 37, 80, 45
            a = torch.softmax(torch.randn(B, H, M, K), -1).to(dtype)
            bmat = torch.randn(B, K, H, N).to(dtype)
            c = torch.zeros(B, M, H, N, dtype=dtype)
            sa = a.stride()
            sb = (bmat.stride(0), bmat.stride(2), bmat.stride(1), bmat.stride(3))
            sc = (c.stride(0), c.stride(2), c.stride(1), c.stride(3))
            scale = 0.0
            acc = a.double() @ bmat.double().transpose(1, 2)
        grid = (B, H, cdiv(M, BM) * cdiv(N, BN))
        m.qkv_gemm_4d_kernel[grid](a, bmat, c, M, N, K, *sa, *sb, *sc, scale, **meta)
        want = rnd(acc, dtype)
        if scale > 0:
            want = rnd(want * rnd(torch.tensor(scale, dtype=F64), dtype), dtype)
        if kind == "pv":
            c = c.transpose(1, 2)
        return {"c": (c, want, tol_of(dtype))}
    return run


check("qkv_gemm_4d_kernel fp16 Q K^T * scale, default blocks", qkv_gemm_case(F16, "qk"))
check("qkv_gemm_4d_kernel fp32 P V, default blocks", qkv_gemm_case(F32, "pv"))
check("qkv_gemm_4d_kernel bf16 Q K^T, blocks 16/16/16 group 2",
      qkv_gemm_case(BF16, "qk", dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, GROUP_SIZE_M=2)))
check("qkv_gemm_4d_kernel fp32 P V, blocks 16/32/16 group 3",
      qkv_gemm_case(F32, "pv", dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16, GROUP_SIZE_M=3)))


# --- rotary embeddings ---------------------------------------------------------------------------------------------

def rotate(x, cos, sin, dtype):
    """Rotate-half rotary embedding of x [T, H, D] by cos / sin [T, D / 2], each product and sum rounded to dtype."""
    r = (lambda t: rnd(t, dtype))
    D = x.shape[-1]
    x0, x1 = x[..., :D // 2].double(), x[..., D // 2:].double()
    c, s = cos.double()[:, None, :], sin.double()[:, None, :]
    return torch.cat([r(r(x0 * c) - r(x1 * s)), r(r(x0 * s) + r(x1 * c))], -1)


def rotary_case(dtype, T, Hq, Hk, D):
    """rotary_embedding without a cache: q and k rotated in place, cos / sin [tokens, D / 2] given per token."""
    def run():
        m = load("no_pad_rotary_embedding")
        q, k = torch.randn(T, Hq, D).to(dtype), torch.randn(T, Hk, D).to(dtype)
        cos, sin = torch.randn(T, D // 2).to(dtype), torch.randn(T, D // 2).to(dtype)
        wq, wk = rotate(q, cos, sin, dtype), rotate(k, cos, sin, dtype)
        m.rotary_embedding(q, k, cos, sin)
        return {"q": (q, wq, tol_of(dtype)), "k": (k, wk, tol_of(dtype))}
    return run


def decode_rotary_inputs(dtype, lens, Hq, Hk, D, block, x=None):
    B = len(lens)
    table, nb = page_table(lens, block)
    q, k, v = torch.randn(B, Hq, D).to(dtype), torch.randn(B, Hk, D).to(dtype), torch.randn(B, Hk, D).to(dtype)
    cos, sin = torch.randn(B, D // 2).to(dtype), torch.randn(B, D // 2).to(dtype)
    kc = torch.randn((nb, Hk, block, D) if x is None else (nb, Hk, D // x, block, x)).to(dtype)
    vc = torch.randn(nb, Hk, block, D).to(dtype)
    return table, q, k, v, cos, sin, kc, vc


def rotary_cache_case(dtype, lens, H, D, block):
    """rotary_embedding with a K cache (fused_rotary_embedding_kernel_v2, decoding: a token a sequence): q rotated
    in place, the rotated k written at position lens[b] - 1 of its pages, k itself unchanged."""
    def run():
        m = load("no_pad_rotary_embedding")
        table, q, k, _, cos, sin, kc, _ = decode_rotary_inputs(dtype, lens, H, H, D, block)
        k0, want_c = k.clone(), kc.clone().double()
        wq, wk = rotate(q, cos, sin, dtype), rotate(k, cos, sin, dtype)
        for b, L in enumerate(lens):
            put(want_c, int(table[b, (L - 1) // block]), (L - 1) % block, wk[b])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.rotary_embedding(q, k, cos, sin, kc, table, torch.tensor(lens, dtype=I32))
        tol = tol_of(dtype)
        return {"q": (q, wq, tol), "k cache": (kc, want_c, tol), "k untouched": exact(k, k0)}
    return run


def decoding_rotary_case(dtype, lens, Hq, Hk, D, block, new_layout=False):
    """decoding_fused_rotary_embedding: q rotated in place; rotated k and v written at position lens[b] - 1 of their
    pages (K in the split layout where new_layout); k and v themselves unchanged."""
    def run():
        m = load("no_pad_rotary_embedding")
        x = 16 // torch.tensor([], dtype=dtype).element_size() if new_layout else None
        table, q, k, v, cos, sin, kc, vc = decode_rotary_inputs(dtype, lens, Hq, Hk, D, block, x)
        k0, v0 = k.clone(), v.clone()
        wkc, wvc = kc.clone().double(), vc.clone().double()
        wq, wk = rotate(q, cos, sin, dtype), rotate(k, cos, sin, dtype)
        for b, L in enumerate(lens):
            blk, off = int(table[b, (L - 1) // block]), (L - 1) % block
            put(wkc, blk, off, wk[b], x)
            put(wvc, blk, off, v[b].double())
        m.decoding_fused_rotary_embedding(q, k, v, cos, sin, kc, vc, table, torch.tensor(lens, dtype=I32),
                                          use_new_kcache_layout=new_layout)
        tol = tol_of(dtype)
        return {"q": (q, wq, tol), "k cache": (kc, wkc, tol), "v cache": exact(vc, wvc),
                "k, v untouched": exact(torch.cat([k, v]), torch.cat([k0, v0]))}
    return run


def fused_rotary_kernel_case(dtype, lens, H, D, block):
    """fused_rotary_embedding_kernel (no wrapper; launched directly as its arguments say, a decoding token a
    sequence, BLOCK_HEAD 4, BLOCK_TOKENS 4): q and k rotated in place, the rotated k written at position
    lens[b] - 1 of its pages. Its cache stores are unmasked, so tokens and heads are multiples of 4."""
    def run():
        m = load("no_pad_rotary_embedding")
        table, q, k, _, cos, sin, kc, _ = decode_rotary_inputs(dtype, lens, H, H, D, block)
        want_c = kc.clone().double()
        wq, wk = rotate(q, cos, sin, dtype), rotate(k, cos, sin, dtype)
        for b, L in enumerate(lens):
            put(want_c, int(table[b, (L - 1) // block]), (L - 1) % block, wk[b])
        T = len(lens)
        m.fused_rotary_embedding_kernel[(cdiv(H, 4), cdiv(T, 4))](
            q, k, cos, sin, kc, table, torch.tensor(lens, dtype=I32), q.stride(0), q.stride(1), k.stride(0),
            k.stride(1), q.stride(2), cos.stride(0), cos.stride(1), *kc.stride(), table.stride(0), table.stride(1),
            block, T, Q_HEAD_NUM=H, K_HEAD_NUM=H, HEAD_DIM=D, BLOCK_HEAD=4, BLOCK_TOKENS=4)
        tol = tol_of(dtype)
        return {"q": (q, wq, tol), "k": (k, wk, tol), "k cache": (kc, want_c, tol)}
    return run


check("rotary_embedding fp32 GQA 8/2, D 64, 37 tokens", rotary_case(F32, 37, 8, 2, 64))
check("rotary_embedding fp16 MHA 5, D 128, 30 tokens", rotary_case(F16, 30, 5, 5, 128))
check("rotary_embedding bf16 GQA 6/3, D 32, 13 tokens", rotary_case(BF16, 13, 6, 3, 32))
check("rotary_embedding with K cache fp32 (kernel_v2), 5 heads, D 64", rotary_cache_case(F32, [37, 1, 70], 5, 64, 16))
check("rotary_embedding with K cache fp16 (kernel_v2), 3 heads, D 128", rotary_cache_case(F16, [16, 33, 8, 2, 50], 3,
                                                                                          128, 16))
check("decoding_fused_rotary_embedding fp32 GQA 8/2, D 64", decoding_rotary_case(F32, [37, 1, 70], 8, 2, 64, 16))
check("decoding_fused_rotary_embedding bf16 MHA 3, D 128, block 32", decoding_rotary_case(BF16, [5, 64, 33, 90], 3,
                                                                                          3, 128, 32))
check("decoding_fused_rotary_embedding fp16 split K cache (x 8), GQA 6/2, D 64",
      decoding_rotary_case(F16, [37, 1, 70], 6, 2, 64, 16, new_layout=True))
check("decoding_fused_rotary_embedding fp32 split K cache (x 4), GQA 4/4, D 32",
      decoding_rotary_case(F32, [17, 2], 4, 4, 32, 16, new_layout=True))
check("fused_rotary_embedding_kernel fp32 (direct launch), 8 heads, 8 tokens, D 64",
      fused_rotary_kernel_case(F32, [37, 1, 70, 16, 17, 2, 40, 9], 8, 64, 16))
check("fused_rotary_embedding_kernel fp16 (direct launch), 4 heads, 4 tokens, D 32",
      fused_rotary_kernel_case(F16, [3, 30, 16, 5], 4, 32, 16))


def xine_case(dtype, lens, D, prompts):
    """get_xine_cache: prefill, each sequence's positions 0 .. L - 1 of the cos / sin caches one after another;
    decoding, position L - 1 of each."""
    def run():
        m = load("rotary_cache_copy")
        cc, sc = torch.randn(128, D).to(dtype), torch.randn(128, D).to(dtype)
        ln = torch.tensor(lens)
        cos, sin = m.get_xine_cache(ln, cc, sc, is_prompts=prompts)
        idx = torch.cat([torch.arange(L) for L in lens]) if prompts else ln - 1
        return {"cos": exact(cos, cc[idx]), "sin": exact(sin, sc[idx])}
    return run


check("get_xine_cache prefill fp32, 4 sequences 5/17/1/30, D 64", xine_case(F32, [5, 17, 1, 30], 64, True))
check("get_xine_cache prefill fp16, 8 sequences, D 128", xine_case(F16, [3, 9, 20, 1, 7, 33, 2, 12], 128, True))
check("get_xine_cache decoding fp32, 5 sequences, D 64", xine_case(F32, [5, 17, 1, 30, 100], 64, False))
check("get_xine_cache decoding bf16, 7 sequences, D 32", xine_case(BF16, [5, 17, 1, 30, 100, 2, 64], 32, False))


def fused_rotary_case(dtype, lens, H, D, as_written):
    """fused_rotary_embedding (fused_rotary_embedding.py): q and k [tokens, H, D] of packed sequences rotated in
    place by the cos / sin caches ([positions, D], the first D / 2 columns used) at each token's position within its
    sequence. The lengths are padded with empty sequences to next_power_of_2(tokens), the count the kernel loads.
    as_written: the reference takes the kernel's statements (q's second half from k's halves, k's first half from
    q's); otherwise rotary embedding of q and k."""
    def run():
        m = load("fused_rotary_embedding")
        T = sum(lens)
        padded = lens + [0] * (triton.next_power_of_2(T) - len(lens))
        q, k = torch.randn(T, H, D).to(dtype), torch.randn(T, H, D).to(dtype)
        cc, sc = torch.randn(64, D).to(dtype), torch.randn(64, D).to(dtype)
        pos = torch.cat([torch.arange(L) for L in lens])
        cos, sin = cc[pos, :D // 2], sc[pos, :D // 2]
        wq, wk = rotate(q, cos, sin, dtype), rotate(k, cos, sin, dtype)
        if as_written:
            wq, wk = torch.cat([wq[..., :D // 2], wk[..., D // 2:]], -1), torch.cat([wq[..., :D // 2],
                                                                                    wk[..., D // 2:]], -1)
        m.fused_rotary_embedding(q, k, cc, sc, torch.tensor(padded))
        tol = tol_of(dtype)
        return {"q": (q, wq, tol), "k": (k, wk, tol)}
    return run


check("fused_rotary_embedding fp32 6 heads, D 64, lens 5/8 (rotary embedding)",
      fused_rotary_case(F32, [5, 8], 6, 64, False))
check("fused_rotary_embedding fp32 6 heads, D 64, lens 5/8 (the kernel's statements as written)",
      fused_rotary_case(F32, [5, 8], 6, 64, True))
check("fused_rotary_embedding fp16 5 heads, D 32, lens 9/3/11 (the kernel's statements as written)",
      fused_rotary_case(F16, [9, 3, 11], 5, 32, True))


width = max((len(r[0]) for r in results), default=10)
for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:{width}s}  {status:18s}  {err:16s}  {why}")
passed = sum(r[1] == "ok" for r in results)
refused = sum(r[1] == "refused (expected)" for r in results)
print(f"{passed} of {len(results) - refused} cases match; {refused} refused as expected; "
      f"{len(results) - passed - refused} failed")
if ARGS.json:
    ARGS.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                     for n, s, w, t in results], indent=1))
sys.exit(0 if passed + refused == len(results) else 1)
