"""vLLM's Triton kernels (vllm-project/vllm) on Tegula, through the conformance shim's `triton` package, against
torch float64 references written here from the math:

  - decode attention (vllm/v1/attention/ops/triton_decode_attention.py, `decode_attention_fwd`): split-KV
    stage 1 (`_fwd_kernel_stage1` for MHA, `_fwd_grouped_kernel_stage1` for GQA) and the stage-2 reduction
    (`_fwd_kernel_stage2`), over a paged KV cache (page size 1 and 16) with a request-to-page table, output
    and log-sum-exp, plus logit soft-capping;
  - unified attention (vllm/v1/attention/ops/triton_unified_attention.py, `unified_attention`): the 2D
    kernel (`kernel_unified_attention`, mixed prefill and decode, causal, GQA, paged KV through a block
    table, sliding window, soft-capping) and the 3D split-KV path (`kernel_unified_attention` with segments
    plus `reduce_segments`) for decode batches. unified_attention hands its kv_quant_mode argument (default
    KVQuantMode.NONE, an IntEnum member) on to the kernel as the constexpr KV_QUANT_MODE unchanged; each
    case runs twice, with that default and, marked "[mode int]", with kv_quant_mode=0 (a plain int): an int
    subclass as a constexpr is its int value (Tegula refused it until 2026-12-05; Triton takes it);
  - fused MoE (vllm/model_executor/layers/fused_moe/fused_moe.py, `fused_moe_kernel` through its launch
    helper `invoke_fused_moe_triton_kernel`, with the config `get_default_config` gives): the two expert
    GEMMs of a top-k routed MoE layer (the second multiplying the routing weights in), float32 and bfloat16,
    no quantization, both with moe_align_block_size's sorted token layout and with the naive
    (sorted_token_ids=None) block assignment.

Inputs are small, with sizes that are not powers of two where the API allows (head sizes 80 / 96, hidden
sizes 200 / 136, sequences of different lengths). vLLM is not part of Tegula; point this at a directory that
holds vLLM's `vllm/` package (a checkout or an unpacked sdist, written against vllm 0.34.0's layout; this
reads only the three files above and vllm/v1/attention/ops/triton_attention_helpers.py). The repository is too
large for the tool library's fetch; `pip download --no-deps --no-binary :all: --no-build-isolation --no-clean
vllm==0.34.0` leaves the unpacked sdist behind (its metadata build fails, which does not matter here):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/vllm_ops.py <vllm source tree>

`import vllm` pulls in vLLM's platform detection, C++ extensions and much else, so the four files are loaded
on their own under bare `vllm...` packages, and what they import at module level that a CPU machine lacks
is stood in for (none of these stand-ins is a Triton kernel or is reached by one):

  - vllm.triton_utils: `triton` and `tl` from the shim (vLLM's own module also imports gluon, libdevice and
    `_aggregate`, none of which these kernels use).
  - vllm.platforms.current_platform: a CPU platform (is_rocm / is_cuda / is_device_capability_family
    False, fp8_dtype float8_e4m3fn, device_type "cpu").
  - vllm.envs: VLLM_BATCH_INVARIANT and every other VLLM_* flag False.
  - vllm.logger.init_logger: a logging.Logger with vLLM's *_once methods.
  - vllm.v1.kv_cache_interface.KVQuantMode: the IntEnum's first members (only NONE is used here).
  - fused_moe.py's imports: modular_kernel, _custom_ops, activation, config, utils.torch_utils
    (direct_register_custom_op), platform_utils: inert placeholders (only the unquantized Triton launch
    path is run); fused_moe/utils.py's enable_swap_ab (False: fp8 only), resolve_moe_use_td (False: vLLM's
    default, VLLM_TRITON_USE_TD unset) and warn_if_moe_use_td_ineffective (no-op); set_triton_allocator
    (no-op); next_power_of_2.
  - moe_align_block_size (a CUDA op in vLLM): a torch version here that yields the same layout
    (token ids sorted by expert, each expert's run padded to BLOCK_SIZE_M with the sentinel M * top_k, one
    expert id per block, the padded total).

Prints one line per case (the largest absolute difference from the reference, or the first line of the
error) and a summary line.
"""

import enum
import importlib.util
import logging
import math
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: vllm_ops.py <vllm source tree>")
VLLM = pathlib.Path(sys.argv[1]).resolve()
FILES = {
    "vllm.v1.attention.ops.triton_decode_attention": "vllm/v1/attention/ops/triton_decode_attention.py",
    "vllm.v1.attention.ops.triton_attention_helpers": "vllm/v1/attention/ops/triton_attention_helpers.py",
    "vllm.v1.attention.ops.triton_unified_attention": "vllm/v1/attention/ops/triton_unified_attention.py",
    "vllm.model_executor.layers.fused_moe.fused_moe": "vllm/model_executor/layers/fused_moe/fused_moe.py",
}
for _file in FILES.values():
    if not (VLLM / _file).is_file():
        sys.exit(f"{VLLM} holds no {_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"


class _InertType(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return cls


class _Inert(metaclass=_InertType):
    """A placeholder class: any attribute (of the class or an instance), call, subclass or decoration works and
    does nothing."""
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return _Inert()
    def __getattr__(self, name): return _Inert()


class _InertModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert


def module(name, cls=types.ModuleType, **attrs):
    m = cls(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


class _Logger(logging.Logger):
    def warning_once(self, *a, **k): self.warning(*a)
    def info_once(self, *a, **k): self.info(*a)
    def debug_once(self, *a, **k): self.debug(*a)


class _Platform:
    device_type = "cpu"
    def is_rocm(self): return False
    def is_cuda(self): return False
    def is_cuda_alike(self): return False
    def is_xpu(self): return False
    def is_cpu(self): return True
    def is_device_capability_family(self, *a): return False
    def has_device_capability(self, *a): return False
    def fp8_dtype(self): return torch.float8_e4m3fn


class KVQuantMode(enum.IntEnum):
    NONE = 0
    FP8_PER_TENSOR = 1
    INT8_PER_TOKEN_HEAD = 2
    FP8_PER_TOKEN_HEAD = 3
    INT4_PER_TOKEN_HEAD = 4


class _Envs(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("VLLM_"):
            return False
        raise AttributeError(name)


def _next_power_of_2(n):
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


for _name in ("vllm", "vllm.v1", "vllm.v1.attention", "vllm.v1.attention.ops", "vllm.model_executor",
              "vllm.model_executor.layers", "vllm.model_executor.layers.fused_moe", "vllm.utils"):
    module(_name)
module("vllm.envs", _Envs)
module("vllm.triton_utils", triton=triton, tl=tl, HAS_TRITON=True)
module("vllm.triton_utils.allocation", set_triton_allocator=lambda *a, **k: None)
module("vllm.platforms", current_platform=_Platform())
module("vllm.logger", init_logger=lambda name: _Logger(name))
module("vllm.v1.kv_cache_interface", KVQuantMode=KVQuantMode)
module("vllm.utils.math_utils", next_power_of_2=_next_power_of_2, cdiv=lambda a, b: -(a // -b))
module("vllm.utils.platform_utils", _InertModule)
module("vllm.utils.torch_utils", _InertModule)
module("vllm._custom_ops", _InertModule)
for _name in ("modular_kernel", "activation", "config", "moe_align_block_size"):
    module(f"vllm.model_executor.layers.fused_moe.{_name}", _InertModule)
module("vllm.model_executor.layers.fused_moe.utils", _InertModule, enable_swap_ab=lambda *a: False,
       resolve_moe_use_td=lambda: False, warn_if_moe_use_td_ineffective=lambda *a, **k: None)
sys.modules["vllm"].envs = sys.modules["vllm.envs"]
sys.modules["vllm"]._custom_ops = sys.modules["vllm._custom_ops"]


def load(name):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, VLLM / FILES[name])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


torch.manual_seed(0)
results = []


def check(name, case):
    """case() returns {what: (got, want, tol)}; passes when every max |got - want| <= tol * max |want|."""
    try:
        comparisons = case()
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        results.append((name, "FAIL", float("nan"), f"{type(e).__name__}: {first}"))
        return
    record(results, name, comparisons)


def attention_ref(q, k, v, scale, causal_offset=None, window=0, softcap=0.0):
    """q [Tq, Hq, D], k / v [Tk, Hkv, D*] in float64; query row i sits at key position causal_offset + i
    (None: no mask); window > 0 keeps the last `window` keys up to and including that position."""
    Hq, Hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(Hq // Hkv, 1); v = v.repeat_interleave(Hq // Hkv, 1)
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if causal_offset is not None:
        qpos = causal_offset + torch.arange(q.shape[0])[:, None]
        kpos = torch.arange(k.shape[0])[None, :]
        mask = kpos <= qpos
        if window:
            mask &= kpos > qpos - window
        s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, -1)  # [Hq, Tq]
    o = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v)
    return o, lse.T


# --- triton_decode_attention.py ---------------------------------------------------------------------------

def decode(Hq, Hkv, Dqk, Dv, page, dtype=torch.float32, softcap=0.0, tol=1e-5):
    def run():
        da = load("vllm.v1.attention.ops.triton_decode_attention")
        seq_lens = [37, 150, 1, 83]
        B, splits = len(seq_lens), 4
        max_pages = max(-(-L // page) for L in seq_lens)
        pages_total = max_pages + 11  # more pages than any sequence uses, so the table's pages are distinct
        q = torch.randn(B, Hq, Dqk).to(dtype)
        k_cache = torch.randn(pages_total * page, Hkv, Dqk).to(dtype)
        v_cache = torch.randn(pages_total * page, Hkv, Dv).to(dtype)
        req_to_page = torch.stack([torch.randperm(pages_total)[:max_pages] for _ in seq_lens])  # distinct pages
        o = torch.zeros(B, Hq, Dv, dtype=dtype); lse = torch.zeros(B, Hq, dtype=torch.float32)
        logits = torch.empty(B, Hq, splits, Dv + 1, dtype=torch.float32)
        scale = Dqk ** -0.5
        kb = k_cache if page == 1 else k_cache.view(pages_total, page, Hkv, Dqk)
        vb = v_cache if page == 1 else v_cache.view(pages_total, page, Hkv, Dv)
        da.decode_attention_fwd(q, kb, vb, o, lse, req_to_page, torch.tensor(seq_lens, dtype=torch.int32),
                                logits, splits, scale, page, logit_cap=softcap)
        o_ref, lse_ref = torch.empty(B, Hq, Dv, dtype=torch.float64), torch.empty(B, Hq, dtype=torch.float64)
        for b, L in enumerate(seq_lens):
            slots = (req_to_page[b][torch.arange(L) // page] * page + torch.arange(L) % page)
            ob, lb = attention_ref(q[b:b + 1].double(), k_cache[slots].double(), v_cache[slots].double(), scale,
                                   softcap=softcap)
            o_ref[b], lse_ref[b] = ob[0], lb[0]
        return {"o": (o, o_ref, tol), "lse": (lse, lse_ref, tol)}
    return run

check("decode_attention MHA page 1 (stage1 + stage2)", decode(6, 6, 80, 80, 1))
check("decode_attention MHA page 16", decode(6, 6, 80, 80, 16))
check("decode_attention GQA 8/2 page 16 (grouped stage1)", decode(8, 2, 96, 80, 16))
check("decode_attention GQA 12/4 page 1 logit_cap 30", decode(12, 4, 64, 64, 1, softcap=30.0))
check("decode_attention GQA 8/2 page 16 bf16", decode(8, 2, 96, 96, 16, torch.bfloat16, tol=2e-2))


# --- triton_unified_attention.py -------------------------------------------------------------------------

def unified(seqs, Hq, Hkv, D, block, dtype=torch.float32, window=0, softcap=0.0, three_d=False, tol=1e-5,
            int_mode=False):
    """seqs: [(query_len, kv_len)]; the queries are the last query_len of the kv_len positions (causal).
    int_mode: pass kv_quant_mode as the plain int 0 rather than unified_attention's default KVQuantMode.NONE (an
    IntEnum member, which the wrapper hands on unchanged as the constexpr KV_QUANT_MODE)."""
    def run():
        load("vllm.v1.attention.ops.triton_attention_helpers")  # imported by name; the bare packages have no path
        ua = load("vllm.v1.attention.ops.triton_unified_attention")
        num_blocks = 40
        qlens, kvlens = [s[0] for s in seqs], [s[1] for s in seqs]
        q = torch.randn(sum(qlens), Hq, D).to(dtype)
        k_cache = torch.randn(num_blocks, block, Hkv, D).to(dtype); v_cache = torch.randn_like(k_cache)
        cu = torch.tensor([0] + qlens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        max_blocks = max(-(-L // block) for L in kvlens)
        table = torch.stack([torch.randperm(num_blocks)[:max_blocks] for _ in seqs]).to(torch.int32)
        out = torch.empty_like(q)
        scale = D ** -0.5
        extra = {"kv_quant_mode": 0} if int_mode else {}
        if three_d:
            segs, rows, Dp = 16, 32, _next_power_of_2(D)
            extra.update(seq_threshold_3D=32, num_par_softmax_segments=segs,
                         softmax_segm_output=torch.empty(rows, Hq, segs, Dp, dtype=torch.float32),
                         softmax_segm_max=torch.empty(rows, Hq, segs, dtype=torch.float32),
                         softmax_segm_expsum=torch.empty(rows, Hq, segs, dtype=torch.float32))
        ua.unified_attention(q=q, k=k_cache, v=v_cache, out=out, cu_seqlens_q=cu, max_seqlen_q=max(qlens),
                             seqused_k=torch.tensor(kvlens, dtype=torch.int32), max_seqlen_k=max(kvlens),
                             softmax_scale=scale, causal=True, window_size=(window - 1, 0) if window else (-1, -1),
                             block_table=table, softcap=softcap, q_descale=None, k_descale=None, v_descale=None,
                             **extra)
        ref = torch.empty(q.shape, dtype=torch.float64)
        for i, (ql, kl) in enumerate(seqs):
            kk = k_cache[table[i].long()].reshape(-1, Hkv, D)[:kl].double()
            vv = v_cache[table[i].long()].reshape(-1, Hkv, D)[:kl].double()
            o, _ = attention_ref(q[cu[i]:cu[i + 1]].double(), kk, vv, scale, kl - ql, window, softcap)
            ref[cu[i]:cu[i + 1]] = o
        return {"out": (out, ref, tol)}
    return run

MIXED = [(1, 77), (13, 40), (29, 29), (5, 130)]
check("unified_attention 2D prefill+decode GQA 8/2", unified(MIXED, 8, 2, 80, 16))
check("unified_attention 2D MHA 4/4 block 32", unified(MIXED, 4, 4, 96, 32))
check("unified_attention 2D sliding window 24", unified(MIXED, 8, 2, 64, 16, window=24))
check("unified_attention 2D softcap 20", unified(MIXED, 8, 2, 64, 16, softcap=20.0))
check("unified_attention 2D bf16", unified(MIXED, 8, 2, 80, 16, torch.bfloat16, tol=2e-2))
check("unified_attention 3D split-kv decode", unified([(1, 77), (1, 5), (1, 190)], 8, 2, 80, 16, three_d=True))
# The same cases with kv_quant_mode=0 (int): the kernels themselves, past the IntEnum constexpr.
check("unified_attention 2D prefill+decode GQA 8/2 [mode int]", unified(MIXED, 8, 2, 80, 16, int_mode=True))
check("unified_attention 2D MHA 4/4 block 32 [mode int]", unified(MIXED, 4, 4, 96, 32, int_mode=True))
check("unified_attention 2D sliding window 24 [mode int]", unified(MIXED, 8, 2, 64, 16, window=24, int_mode=True))
check("unified_attention 2D softcap 20 [mode int]", unified(MIXED, 8, 2, 64, 16, softcap=20.0, int_mode=True))
check("unified_attention 2D bf16 [mode int]", unified(MIXED, 8, 2, 80, 16, torch.bfloat16, tol=2e-2, int_mode=True))
check("unified_attention 3D split-kv decode [mode int]",
      unified([(1, 77), (1, 5), (1, 190)], 8, 2, 80, 16, three_d=True, int_mode=True))


# --- fused_moe.py ----------------------------------------------------------------------------------------

def moe_align_block_size_ref(topk_ids, block_m, num_experts):
    """vLLM's moe_align_block_size layout (a CUDA op there): flat token slots sorted by expert, each expert's
    run padded to a multiple of block_m with the sentinel topk_ids.numel(), one expert id per block."""
    flat = topk_ids.flatten()
    sentinel = flat.numel()
    ids, experts = [], []
    for e in range(num_experts):
        slots = (flat == e).nonzero().flatten().tolist()
        if not slots:
            continue
        padded = -(-len(slots) // block_m) * block_m
        ids += slots + [sentinel] * (padded - len(slots))
        experts += [e] * (padded // block_m)
    return (torch.tensor(ids, dtype=torch.int32), torch.tensor(experts, dtype=torch.int32),
            torch.tensor([len(ids)], dtype=torch.int32))


def fused_moe(M, E, topk, H, N, dtype=torch.float32, naive=False, tol=1e-5):
    """A MoE layer: hidden [M, H], w1 [E, 2N, H] (gate and up), w2 [E, H, N]; out = sum over the top-k experts of
    weight * w2 (silu(gate) * up)."""
    def run():
        fm = load("vllm.model_executor.layers.fused_moe.fused_moe")
        x = torch.randn(M, H).to(dtype)
        w1 = (torch.randn(E, 2 * N, H) / H ** 0.5).to(dtype); w2 = (torch.randn(E, H, N) / N ** 0.5).to(dtype)
        logits = torch.randn(M, E)
        topk_w, topk_ids = torch.softmax(logits, -1).topk(topk, -1)
        topk_w = (topk_w / topk_w.sum(-1, keepdim=True)).contiguous()
        config = fm.get_default_config(M, E, N, H, topk, None)
        compute = tl.bfloat16 if dtype == torch.bfloat16 else tl.float32
        if naive:  # one block of BLOCK_SIZE_M rows per (token, expert) slot, as vLLM does for tiny batches
            sorted_ids, expert_ids = None, topk_ids.flatten().to(torch.int32)
            padded = torch.tensor([M * topk * config["BLOCK_SIZE_M"]], dtype=torch.int32)
        else:
            sorted_ids, expert_ids, padded = moe_align_block_size_ref(topk_ids, config["BLOCK_SIZE_M"], E)
        h1 = torch.empty(M, topk, 2 * N, dtype=dtype)
        common = dict(A_scale=None, B_scale=None, topk_weights=topk_w, sorted_token_ids=sorted_ids,
                      expert_ids=expert_ids, num_tokens_post_padded=padded, config=config, compute_type=compute,
                      use_fp8_w8a8=False, use_int8_w8a8=False, use_int8_w8a16=False, use_int4_w4a16=False,
                      per_channel_quant=False)
        fm.invoke_fused_moe_triton_kernel(x, w1, h1, mul_routed_weight=False, top_k=topk, **common)
        g, u = h1.float().view(M * topk, 2 * N).chunk(2, -1)
        act = (torch.nn.functional.silu(g) * u).to(dtype)
        h2 = torch.empty(M, topk, H, dtype=dtype)
        fm.invoke_fused_moe_triton_kernel(act, w2, h2, mul_routed_weight=True, top_k=1, **common)
        out = h2.sum(1)
        xd, w1d, w2d = x.double(), w1.double(), w2.double()
        h1_ref = torch.einsum("mh,mkNh->mkN", xd, w1d[topk_ids])
        gr, ur = h1_ref.chunk(2, -1)
        act_ref = torch.nn.functional.silu(gr) * ur
        out_ref = torch.einsum("mkn,mkhn,mk->mh", act_ref, w2d[topk_ids], topk_w.double())
        return {"w1 gemm": (h1, h1_ref, tol), "output": (out, out_ref, tol * 10)}
    return run

check("fused_moe_kernel M=37 E=8 top2 H=200 N=136", fused_moe(37, 8, 2, 200, 136))
check("fused_moe_kernel M=5 E=6 top3 (one block per expert run)", fused_moe(5, 6, 3, 136, 72))
check("fused_moe_kernel naive block assignment M=3", fused_moe(3, 8, 2, 200, 136, naive=True))
check("fused_moe_kernel bf16 M=37", fused_moe(37, 8, 2, 200, 136, torch.bfloat16, tol=2e-2))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:62s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} vLLM cases match the torch float64 references")
