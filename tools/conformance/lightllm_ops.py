"""LightLLM's Triton kernels (ModelTC/lightllm) on Tegula, through the conformance shim's `triton` package, against
torch float64 references written here from the math:

  - attention: llama's prefill `context_attention_fwd` (prompt cache through req_to_token_indexs, GQA),
    `context_attention_fwd_no_prompt_cache` and `context_attention_fwd_ppl_int8kv` (per-request [B, H, S, D] K/V);
    token attention in stages (`token_att_fwd` -> `token_softmax_fwd` -> `token_att_fwd2`, and `token_att_fwd` ->
    `token_softmax_reducev_fwd`); flash decoding split over the sequence (`token_decode_attention_flash_decoding`,
    MHA, and `gqa_token_decode_attention_flash_decoding`, stage 1 + stage 2), `gqa_decode_attention_fwd`, and the
    persistent `gqa_token_decode_attention_flash_decoding_vsm` (block-size kernel, stage 1 over virtual SMs, stage 2);
    DeepSeek-V2's MLA decode (`gqa_token_decode_attention_flash_decoding`: the index / block-size kernel, the
    persistent stage 1, stage 2; the wrappers of both persistent decodes size their grid through
    JITFunction.warmup and CompiledKernel._init_handles), MLA prefill with a prompt cache (`context_attention_fwd`)
    and with decompressed K / V (`context_attention_fwd_with_v`); Bloom's prefill with ALiBi and a prompt cache,
    Mistral's with a sliding window, Phi-3's with head size 96 (prefill and flash decoding), and the ViT's
    non-causal `flash_attention_fwd` over cu_seqlens (head size 80);
  - norms, activations, rotary: llama `rmsnorm_forward`, Bloom's `_layer_norm_fwd_fused` (launched directly: its
    wrapper calls torch.layer_norm), the ViT's `rms_norm` (eps and strides as constexprs) and `gelu_fwd`, llama
    `silu_and_mul_fwd`, Gemma's `gelu_and_mul_fwd` (tanh GELU through a global tl.constexpr), llama
    `rotary_emb_fwd` (rotate-half, GQA, full and partial_rotary_factor 0.5), DeepSeek-V2's interleaved
    `rotary_emb_fwd`, and Qwen2-VL's `mrope_triton` (three position axes, pointers chosen with tl.where);
  - KV cache, index and sampling kernels: `destindex_copy_kv`, `destindex_copy_quantize_kv` (int8 per head), llama's
    ppl_quant_copy_kv `destindex_copy_quantize_kv` (int8 per 8-channel group), DeepSeek-V2's `destindex_copy_kv`
    (nope + rope) and `destindex_copy_kv_fp8`, `copy_kv_index_to_req`, `repack_kv_index`, `gen_prefill_params` /
    `gen_decode_params` (cumsum kernels), llama `embedding` (a vocabulary shard), `multimodal_emb` and
    `mark_multimodal_obj`, `add_in_place`, `redundancy_topk_ids_repair` (with its atomic expert counter),
    kv_trans.py's `kv_trans` and `apply_penalty` (presence / frequency / repetition and EOS length penalties);
  - MoE (lightllm/common/fused_moe): `softmax_topk` (with and without renormalisation), `triton_grouped_topk`
    (DeepSeek-V3's sigmoid scores with a correction bias, and softmax scores over a padded expert count: tl.sort,
    tl.softmax and a bitonic argsort written with tl.core.* and triton.language.standard's _log2 / sum /
    zeros_like), `moe_sum_reduce`, the MoE `silu_and_mul_fwd`, the grouped MoE `fused_experts_impl` (moe_align,
    moe_align1, moe_align2, grouped_matmul twice, silu_and_mul, moe_sum_reduce) in bfloat16 and with fp8 w8a8
    block-wise weights (per_token_group_quant_fp8 on the activations; the reference follows the kernels'
    roundings: bfloat16 GEMM outputs, float32 SiLU, fp8 activations), deepep_scatter_gather.py's `ep_scatter` ->
    `ep_gather` round trip (atomic slot allocation) and the EP `silu_and_mul_masked_post_quant_fwd`;
  - fp8 quantization (lightllm/common/quantization/triton_quant/fp8, models/deepseek2): `per_token_group_quant_fp8`
    (row- and column-major scales), `tma_align_input_scale`, `w8a8_block_fp8_matmul`, `mm_weight_quant` and
    `weight_dequant`.

Inputs are small, with sizes that are not powers of two where the API allows (hidden sizes 200 / 300 / 136, head
sizes 80 / 96 where the kernel masks the head dimension, 20 query heads, sequences of different lengths, some over
one block); the attention kernels that load whole heads need power-of-two head sizes (64, 128 + 64 for MLA), as
their wrappers assert. float32 unless a kernel takes other types (bfloat16 cases; float8_e4m3fn and int8 for
quantization). A case passes when every output's largest difference from its reference is at most the tolerance
times the reference's largest magnitude: float32 1e-5, bfloat16 2e-2; quantized outputs are checked through their
scales (1e-6) and the quantized values against x / scale (float8: 0.04 of the largest, int8: one step, as the
kernels truncate); indices and copies exactly.

One case fails at this commit, and it is LightLLM's: `gqa_token_decode_attention_flash_decoding_vsm`'s stage 1
stores the block's unnormalised accumulator (`accumu`) beside max + log(sum_exp), and stage 2 merges the blocks as
if it were divided by sum_exp (the MLA decode's stage 1 divides), so the output is off by the blocks' softmax sums
on any machine; storing accumu / sum_exp makes the case match. The two triton_grouped_topk cases found Tegula
refusing `tl.core.X` (triton.language.core's names) and tl.core.get_int_dtype in a kernel; both work since
2026-12-05.

LightLLM is not part of Tegula; point this at a LightLLM checkout (or a directory holding the files below with their
paths; a `git archive HEAD lightllm` will do). Written against the repository's snapshot of 2025-07-11 (commit
fc72ffab9a3455cfb571f22d45ab777cc29de0de, v1.0.1-154). It reads only these files under lightllm/:
common/kernel_config.py, common/basemodel/triton_kernel/{destindex_copy_kv, copy_kv_index_to_req,
gen_prefill_params, gen_decode_params, multimodal_emb, add_in_place, redundancy_topk_ids_repair, apply_penalty}.py,
common/kv_trans_kernel/kv_trans.py, common/fused_moe/{softmax_topk, grouped_topk, moe_sum_reduce,
moe_sum_recude_config, moe_silu_and_mul, moe_silu_and_mul_config, moe_kernel_configs, grouped_fused_moe,
deepep_scatter_gather, moe_silu_and_mul_mix_quant_ep}.py, common/quantization/triton_quant/fp8/{fp8act_quant_kernel,
fp8w8a8_block_gemm_kernel, fp8w8a8_block_quant_kernel}.py, models/llama/triton_kernel/{context_flashattention_nopad,
token_attention_nopad_att1, token_attention_nopad_softmax, token_attention_nopad_reduceV,
token_attention_softmax_and_reducev, flash_decoding, flash_decoding_stage1, flash_decoding_stage2,
gqa_flash_decoding, gqa_flash_decoding_stage1, gqa_flash_decoding_stage2, gqa_decode_flashattention_nopad,
gqa_flash_decoding_vsm, rmsnorm, silu_and_mul, rotary_emb, embedding, ppl_quant_copy_kv}.py,
models/deepseek2/triton_kernel/{gqa_flash_decoding, gqa_flash_decoding_config, gqa_flash_decoding_stage1,
gqa_flash_decoding_stage2, context_flashattention_nopad, context_flashattention_nopad_with_v, rotary_emb,
destindex_copy_kv, destindex_copy_kv_fp8, repack_kv_index, weight_dequant}.py,
models/bloom/triton_kernel/{context_flashattention_nopad, layernorm}.py,
models/mistral/triton_kernel/context_flashattention_nopad.py, models/phi3/triton_kernel/{context_flashattention_nopad,
flash_decoding, flash_decoding_stage1, flash_decoding_stage2}.py, models/vit/triton_kernel/{flashattention_nopad,
rms_norm_vit, gelu_vit}.py, models/gemma_2b/triton_kernel/gelu_and_mul.py and models/qwen2_vl/triton_kernel/mrope.py:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/lightllm_ops.py <lightllm source> [-k SUBSTRING]

(-k runs only the cases whose name holds SUBSTRING.) `import lightllm` pulls in its server, CUDA extensions and
much else, so these files are loaded on their own under bare `lightllm...` packages, and what they import at module
level that a machine without CUDA or LightLLM's runtime lacks is stood in for (none of these stand-ins is a Triton
kernel or is reached by one):

  - lightllm.utils.device_utils: is_tesla / is_hopper False; get_current_device_name "cpu" (no tuned config file
    matches, so the kernels' default configs are used: kernel_config.py itself is LightLLM's); get_device_sm_count
    and the other device-property queries fixed numbers; calcu_kernel_best_vsm_count 3 (it reads the compiled
    kernel's register and shared-memory use and the GPU's SM count to size the persistent decodes' grid: three
    virtual SMs, so that each loops over several blocks).
  - lightllm.utils.log_utils.init_logger: logging.getLogger (the "no config file" warnings are silenced).
  - lightllm.utils.vllm_utils.vllm_ops, lightllm.utils.sgl_utils (HAS_SGL_KERNEL False, so
    per_token_group_quant_fp8 takes LightLLM's Triton kernel), lightllm.utils.dist_utils.get_current_device_id 0,
    lightllm.common.basemodel.layer_infer.cache_tensor_manager.g_cache_manager: inert placeholders (the CUDA paths
    that use them are not taken); lightllm.common.req_manager.ReqSamplingParamsManager (an annotation of
    apply_penalty's; the case passes a namespace with the manager's per-request penalty tensors and vocab_size).
  - frozendict.frozendict (the config keys; not installed here): a hashable dict.
  - deep_gemm.ceil_div (fp8act_quant_kernel.py imports it in a try block; tma_align_input_scale calls it): integer
    ceiling division.
  - the wrappers' alloc_tensor_func (LightLLM's cache tensor manager, alloc_tensor(shape, dtype, device)): torch.empty.
  - torch: a torch function mode maps `device="cuda"` (a keyword argument of any torch function; the wrappers
    allocate their scratch tensors so) to TEGULA_CONFORMANCE_DEVICE; torch.cuda.is_current_stream_capturing() is
    False when that is not cuda (no CUDA graph is being captured; torch without a driver raises).
  - the ViT attention file tries `from flash_attn_interface import _flash_attn_forward` and prints its failure;
    that print is swallowed.

Not covered: kernels whose wrappers need more of LightLLM's request manager (gen_sampling_params, the token-id
counters, apply_penalty_gpu_cache), CUDA-only paths (ppl int8 / int4 flash decoding and the int4 KV copy through
lightllm_kernel, deep_gemm masked grouped GEMMs), the fp8 MLA decode and prefill, bmm_scaled_fp8, the autotuned int4
/ int8 dequantizing GEMMs (their tuning spaces are GPU-sized), and the model variants that repeat the kernels above.
Prints one line per case (the largest absolute difference from the reference, or the first line of the error) and a
summary line.
"""

import contextlib
import importlib.abc
import importlib.util
import io
import logging
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_args = sys.argv[1:]
ONLY = None
if len(_args) == 3 and _args[1] == "-k":
    ONLY = _args.pop(2); _args.pop(1)
if len(_args) != 1:
    sys.exit("usage: lightllm_ops.py <lightllm source> [-k SUBSTRING]")
SRC = pathlib.Path(_args[0]).resolve()

_FILES = {
    "common": ["kernel_config"],
    "common.basemodel.triton_kernel": ["destindex_copy_kv", "copy_kv_index_to_req", "gen_prefill_params",
                                       "gen_decode_params", "multimodal_emb", "add_in_place",
                                       "redundancy_topk_ids_repair", "apply_penalty"],
    "common.kv_trans_kernel": ["kv_trans"],
    "common.fused_moe": ["softmax_topk", "grouped_topk", "moe_sum_reduce", "moe_sum_recude_config",
                         "moe_silu_and_mul", "moe_silu_and_mul_config", "moe_kernel_configs", "grouped_fused_moe",
                         "deepep_scatter_gather", "moe_silu_and_mul_mix_quant_ep"],
    "common.quantization.triton_quant.fp8": ["fp8act_quant_kernel", "fp8w8a8_block_gemm_kernel",
                                             "fp8w8a8_block_quant_kernel"],
    "models.llama.triton_kernel": ["context_flashattention_nopad", "token_attention_nopad_att1",
                                   "token_attention_nopad_softmax", "token_attention_nopad_reduceV",
                                   "token_attention_softmax_and_reducev", "flash_decoding", "flash_decoding_stage1",
                                   "flash_decoding_stage2", "gqa_flash_decoding", "gqa_flash_decoding_stage1",
                                   "gqa_flash_decoding_stage2", "gqa_decode_flashattention_nopad", "rmsnorm",
                                   "silu_and_mul", "rotary_emb", "embedding", "ppl_quant_copy_kv",
                                   "gqa_flash_decoding_vsm"],
    "models.deepseek2.triton_kernel": ["gqa_flash_decoding", "gqa_flash_decoding_config", "gqa_flash_decoding_stage1",
                                       "gqa_flash_decoding_stage2", "context_flashattention_nopad", "rotary_emb",
                                       "destindex_copy_kv", "repack_kv_index", "context_flashattention_nopad_with_v",
                                       "destindex_copy_kv_fp8", "weight_dequant"],
    "models.bloom.triton_kernel": ["context_flashattention_nopad", "layernorm"],
    "models.mistral.triton_kernel": ["context_flashattention_nopad"],
    "models.phi3.triton_kernel": ["context_flashattention_nopad", "flash_decoding", "flash_decoding_stage1",
                                  "flash_decoding_stage2"],
    "models.vit.triton_kernel": ["flashattention_nopad", "rms_norm_vit", "gelu_vit"],
    "models.gemma_2b.triton_kernel": ["gelu_and_mul"],
    "models.qwen2_vl.triton_kernel": ["mrope"],
}
FILES = {f"lightllm.{pkg}.{n}": f"lightllm/{pkg.replace('.', '/')}/{n}.py" for pkg, ns in _FILES.items() for n in ns}
for _file in FILES.values():
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402, F401
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"
logging.getLogger("lightllm").setLevel(logging.ERROR)


def _is_cuda(device):
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return isinstance(device, torch.device) and device.type == "cuda"


class _CudaToDevice(TorchFunctionMode):
    """device="cuda" (keyword) -> TEGULA_CONFORMANCE_DEVICE: LightLLM's wrappers allocate their scratch so."""
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if "device" in kwargs and _is_cuda(kwargs["device"]):
            kwargs = {**kwargs, "device": DEVICE}
        return func(*args, **kwargs)


if DEVICE != "cuda":
    _CudaToDevice().__enter__()  # on for the rest of the process
    torch.cuda.is_current_stream_capturing = lambda: False


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, m)
    return m


class _Inert:
    """A placeholder: any attribute or call gives another, and does nothing."""
    def __call__(self, *a, **k): return _Inert()
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()


class frozendict(dict):
    """frozendict.frozendict as the config classes use it: a hashable dict (lru_cache keys)."""
    def __hash__(self):
        return hash(tuple(sorted((k, repr(v)) for k, v in self.items())))


VSM = 3  # calcu_kernel_best_vsm_count: virtual SMs of the MLA decode's persistent stage 1
for _name in sorted({".".join(n.split(".")[:i]) for n in FILES for i in range(1, n.count(".") + 1)}):
    module(_name)
module("lightllm.utils")
module("lightllm.utils.device_utils", is_tesla=lambda: False, is_hopper=lambda: False,
       get_current_device_name=lambda: "cpu", get_device_sm_count=lambda: 132, get_device_sm_regs_num=lambda: 65536,
       get_device_sm_shared_mem_num=lambda: 232448, get_device_warp_size=lambda: 32,
       calcu_kernel_best_vsm_count=lambda kernel, num_warps: VSM)
module("lightllm.utils.log_utils", init_logger=logging.getLogger)
module("lightllm.utils.vllm_utils", vllm_ops=_Inert())
module("lightllm.utils.sgl_utils", HAS_SGL_KERNEL=False, sgl_ops=_Inert())
module("lightllm.utils.dist_utils", get_current_device_id=lambda: 0)
module("lightllm.common.req_manager", ReqSamplingParamsManager=object)
module("lightllm.common.basemodel.layer_infer")
module("lightllm.common.basemodel.layer_infer.cache_tensor_manager", g_cache_manager=_Inert())
module("frozendict", frozendict=frozendict)
module("deep_gemm", ceil_div=lambda a, b: -(-a // b))


class _Files(importlib.abc.MetaPathFinder):
    """Finds the listed LightLLM files under their module names, so that they import each other as in LightLLM."""
    def find_spec(self, name, path=None, target=None):
        if name in FILES:
            return importlib.util.spec_from_file_location(name, SRC / FILES[name])
        return None


sys.meta_path.insert(0, _Files())


def load(name):
    with contextlib.redirect_stdout(io.StringIO()):
        return importlib.import_module("lightllm." + name)


def alloc(shape, dtype, device=None, **kwargs):
    """LightLLM's alloc_tensor_func (its cache tensor manager's alloc_tensor(shape, dtype, device))."""
    return torch.empty(shape, dtype=dtype)


torch.manual_seed(0)
results = []
F32, BF16, F64, I32, I64 = torch.float32, torch.bfloat16, torch.float64, torch.int32, torch.int64
FP8 = torch.float8_e4m3fn


def check(name, case):
    """case() returns {what: (got, want, tol)}; passes when every max |got - want| <= tol * max |want|."""
    if ONLY is not None and ONLY not in name:
        return
    try:
        comparisons = case()
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        results.append((name, "FAIL", float("nan"), f"{type(e).__name__}: {first}"))
        return
    record(results, name, comparisons)


def tol_of(dtype):
    return 2e-2 if dtype == BF16 else 1e-5


def cumsum0(lens, dtype=I32):
    out = torch.zeros(len(lens) + 1, dtype=dtype)
    out[1:] = torch.tensor(lens, dtype=dtype).cumsum(0)
    return out


# --- attention references ---------------------------------------------------------------------------------------

def attn_ref(q, k, v, scale, q_pos=None, causal=True, window=None, alibi=None):
    """q [nq, H, D], k [nk, Hk, D], v [nk, Hk, Dv] -> [nq, H, Dv] in float64. Query i sits at position q_pos[i]
    (default: the last nq positions of the keys); key j at position j. causal: keys j <= q_pos[i]; window: j >
    q_pos[i] - window; alibi [H]: scores -= alibi[h] * (q_pos[i] - j)."""
    q, k, v = q.double(), k.double(), v.double()
    nq, H, nk = q.shape[0], q.shape[1], k.shape[0]
    g = H // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    if q_pos is None:
        q_pos = torch.arange(nk - nq, nk)
    qp, kp = q_pos.double()[:, None], torch.arange(nk, dtype=F64)[None, :]
    if alibi is not None:
        s = s - alibi.double()[:, None, None] * (qp - kp)[None]
    mask = torch.ones(nq, nk, dtype=torch.bool)
    if causal:
        mask &= kp <= qp
    if window is not None:
        mask &= kp > qp - window
    s = s.masked_fill(~mask[None], float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v)


def kv_cache(lens, Hk, D, dtype, Dv=None, slots_extra=23):
    """A KV cache of sum(lens) + slots_extra slots, each request's tokens at random slots (req_to_token_indexs rows
    1, 2, ... : row 0 is left unused and req indices are not the batch order)."""
    total = sum(lens) + slots_extra
    k = torch.randn(total, Hk, D).to(dtype)
    v = torch.randn(total, Hk, Dv or D).to(dtype)
    perm = torch.randperm(total).to(I32)
    maxlen = max(lens) + 5
    req_idx = torch.arange(len(lens), 0, -1, dtype=I32)  # reversed: request b uses row len(lens) - b
    r2t = torch.zeros(len(lens) + 1, maxlen, dtype=I32)
    off = 0
    for b, L in enumerate(lens):
        r2t[req_idx[b], :L] = perm[off:off + L]; off += L
    return k, v, r2t, req_idx


def gather(cache, r2t, req, L):
    return cache[r2t[req, :L].long()]


def prefill_case(variant, dtype, D=64, Hq=6, Hk=2):
    """llama's context attention: sequences of 50, 150 and 20 tokens of which the first 13, 0 and 7 are a prompt
    cache (the queries are the rest); K/V through req_to_token_indexs (with cache) or packed with the queries."""
    def run():
        m = load("models.llama.triton_kernel.context_flashattention_nopad")
        lens, cached = [50, 150, 20], ([13, 0, 7] if variant != "no cache" else [0, 0, 0])
        qlens = [L - c for L, c in zip(lens, cached)]
        q = torch.randn(sum(qlens), Hq, D).to(dtype)
        o = torch.zeros_like(q)
        start = cumsum0(qlens)[:-1]
        seq, cache = torch.tensor(lens, dtype=I32), torch.tensor(cached, dtype=I32)
        ref = torch.zeros(q.shape, dtype=F64)
        if variant == "prompt cache":
            k, v, r2t, req = kv_cache(lens, Hk, D, dtype)
            m.context_attention_fwd(q, k, v, o, req, start, seq, cache, max(qlens), r2t)
            for b in range(len(lens)):
                s0 = int(start[b])
                ref[s0:s0 + qlens[b]] = attn_ref(q[s0:s0 + qlens[b]], gather(k, r2t, req[b], lens[b]),
                                                 gather(v, r2t, req[b], lens[b]), D ** -0.5)
        elif variant == "no cache":
            k = torch.randn(sum(lens), Hk, D).to(dtype); v = torch.randn(sum(lens), Hk, D).to(dtype)
            m.context_attention_fwd_no_prompt_cache(q, k, v, o, start, seq, max(qlens))
            for b in range(len(lens)):
                s0 = int(start[b])
                ref[s0:s0 + lens[b]] = attn_ref(q[s0:s0 + lens[b]], k[s0:s0 + lens[b]], v[s0:s0 + lens[b]], D ** -0.5)
        else:  # ppl_int8kv: per-request K/V [B, H, S, D] (k and v halves of one buffer)
            kv = torch.randn(len(lens), 2 * Hk, max(lens) + 3, D).to(dtype)
            k, v = kv[:, :Hk], kv[:, Hk:]
            m.context_attention_fwd_ppl_int8kv(q, k, v, o, start, seq, max(qlens), cache)
            for b in range(len(lens)):
                s0 = int(start[b])
                ref[s0:s0 + qlens[b]] = attn_ref(q[s0:s0 + qlens[b]], k[b, :, :lens[b]].transpose(0, 1),
                                                 v[b, :, :lens[b]].transpose(0, 1), D ** -0.5)
        return {"o": (o, ref, tol_of(dtype))}
    return run


def decode_inputs(lens, Hq, Hk, D, dtype):
    k, v, r2t, req = kv_cache(lens, Hk, D, dtype)
    q = torch.randn(len(lens), Hq, D).to(dtype)
    ref = torch.stack([attn_ref(q[b:b + 1], gather(k, r2t, req[b], L), gather(v, r2t, req[b], L), D ** -0.5)[0]
                       for b, L in enumerate(lens)])
    return q, k, v, r2t, req, torch.tensor(lens, dtype=I32), ref


def token_attention_case(stages, Hq=6, Hk=2, D=64):
    """Token attention: token_att_fwd writes the scaled logits [H, total tokens]; then token_softmax_fwd and
    token_att_fwd2, or token_softmax_reducev_fwd. Sequences of 37, 300 and 5 tokens."""
    def run():
        att1 = load("models.llama.triton_kernel.token_attention_nopad_att1")
        lens = [37, 300, 5]
        q, k, v, r2t, req, seq, ref = decode_inputs(lens, Hq, Hk, D, F32)
        start = cumsum0(lens)[:-1]
        logits = torch.empty(Hq, sum(lens))
        att1.token_att_fwd(q, k, logits, r2t, req, start, seq, max(lens))
        o = torch.empty_like(q)
        if stages == "softmax + reduceV":
            prob = torch.empty_like(logits)
            load("models.llama.triton_kernel.token_attention_nopad_softmax").token_softmax_fwd(
                logits, start, seq, prob, max(lens))
            load("models.llama.triton_kernel.token_attention_nopad_reduceV").token_att_fwd2(
                prob, v, o, r2t, req, start, seq)
        else:
            load("models.llama.triton_kernel.token_attention_softmax_and_reducev").token_softmax_reducev_fwd(
                logits, v, o, r2t, req, start, seq)
        logit_ref = torch.cat([torch.einsum("hd,khd->hk", q[b].double(),
                                            gather(k, r2t, req[b], L).double().repeat_interleave(Hq // Hk, 1))
                               for b, L in enumerate(lens)], 1) * D ** -0.5
        return {"logits": (logits, logit_ref, 1e-5), "o": (o, ref, 1e-5)}
    return run


def flash_decoding_case(kind, Hq, Hk, D, dtype=F32):
    """Flash decoding split over the sequence (stage 1 per block of 256 / 128 tokens, stage 2 merging), through the
    wrappers LightLLM's layers call; sequences of 300, 7 and 129 tokens."""
    def run():
        lens = [300, 7, 129]
        q, k, v, r2t, req, seq, ref = decode_inputs(lens, Hq, Hk, D, dtype)
        state = types.SimpleNamespace(batch_size=len(lens), max_len_in_batch=max(lens), b_req_idx=req, b_seq_len=seq,
                                      req_manager=types.SimpleNamespace(req_to_token_indexs=r2t),
                                      total_token_num=sum(lens))
        if kind == "gqa_decode_attention_fwd":
            o = torch.empty_like(q)
            load("models.llama.triton_kernel.gqa_decode_flashattention_nopad").gqa_decode_attention_fwd(
                q, k, v, o, r2t, req, seq)
        else:
            fn = {"llama": ("flash_decoding", "token_decode_attention_flash_decoding"),
                  "llama gqa": ("gqa_flash_decoding", "gqa_token_decode_attention_flash_decoding"),
                  "phi3": ("flash_decoding", "token_decode_attention_flash_decoding")}[kind]
            mod = load(f"models.{'phi3' if kind == 'phi3' else 'llama'}.triton_kernel.{fn[0]}")
            o = getattr(mod, fn[1])(q.view(len(lens), -1), state, Hq, D, k, v, alloc_tensor_func=alloc)
        return {"o": (o.view(q.shape), ref, tol_of(dtype))}
    return run


def mla_decode_case(dtype, H=20, R=128, P=64):
    """DeepSeek-V2's MLA decode: q_nope [B, H, R] against the compressed cache kv_nope [slots, 1, R] plus the rope
    parts (q_rope [B, H, P], kv_rope [slots, 1, P]); V is kv_nope. 20 heads in blocks of 16 (head mask)."""
    def run():
        m = load("models.deepseek2.triton_kernel.gqa_flash_decoding")
        lens = [300, 7, 129, 40]
        kv, kr, r2t, req = kv_cache(lens, 1, R, dtype, Dv=P)
        qn = torch.randn(len(lens), H, R).to(dtype); qr = torch.randn(len(lens), H, P).to(dtype)
        scale = (R + P) ** -0.5
        state = types.SimpleNamespace(batch_size=len(lens), max_len_in_batch=max(lens), b_req_idx=req,
                                      b_seq_len=torch.tensor(lens, dtype=I32), total_token_num=sum(lens),
                                      req_manager=types.SimpleNamespace(req_to_token_indexs=r2t))
        o = m.gqa_token_decode_attention_flash_decoding(qn, qr, kv, kr, state, H, R, P, R, scale,
                                                        alloc_tensor_func=alloc)
        ref = torch.empty(len(lens), H, R, dtype=F64)
        for b, L in enumerate(lens):
            kn, kp = gather(kv, r2t, req[b], L)[:, 0].double(), gather(kr, r2t, req[b], L)[:, 0].double()
            s = (qn[b].double() @ kn.T + qr[b].double() @ kp.T) * scale
            ref[b] = torch.softmax(s, -1) @ kn
        return {"o": (o, ref, tol_of(dtype))}
    return run


def mla_prefill_case(dtype, H=6, R=128, P=64):
    """DeepSeek-V2's MLA prefill with a prompt cache: scores q_nope . kv_nope + q_rope . kv_rope, V = kv_nope."""
    def run():
        m = load("models.deepseek2.triton_kernel.context_flashattention_nopad")
        lens, cached = [50, 70, 20], [13, 0, 7]
        qlens = [L - c for L, c in zip(lens, cached)]
        kv, kr, r2t, req = kv_cache(lens, 1, R, dtype, Dv=P)
        qn = torch.randn(sum(qlens), H, R).to(dtype); qr = torch.randn(sum(qlens), H, P).to(dtype)
        o = torch.zeros_like(qn)
        start = cumsum0(qlens)[:-1]
        scale = (R + P) ** -0.5
        m.context_attention_fwd(qn, qr, kv, kr, o, req, start, torch.tensor(lens, dtype=I32),
                                torch.tensor(cached, dtype=I32), max(qlens), r2t, scale)
        ref = torch.zeros(o.shape, dtype=F64)
        for b in range(len(lens)):
            s0, n = int(start[b]), qlens[b]
            kn, kp = gather(kv, r2t, req[b], lens[b]).double(), gather(kr, r2t, req[b], lens[b]).double()
            # [q_nope, q_rope] . [kv_nope, kv_rope] as one head of R + P, V = kv_nope
            ref[s0:s0 + n] = attn_ref(torch.cat([qn[s0:s0 + n], qr[s0:s0 + n]], -1).double(),
                                      torch.cat([kn, kp], -1), kn, scale)
        return {"o": (o, ref, tol_of(dtype))}
    return run


def bloom_case():
    """Bloom's prefill: ALiBi slopes, prompt cache through req_to_token_indexs, MHA, head size 64."""
    m = load("models.bloom.triton_kernel.context_flashattention_nopad")
    H, D = 4, 64
    lens, cached = [50, 150, 20], [13, 0, 7]
    qlens = [L - c for L, c in zip(lens, cached)]
    k, v, r2t, req = kv_cache(lens, H, D, F32)
    q = torch.randn(sum(qlens), H, D)
    o = torch.zeros_like(q)
    alibi = torch.tensor([2 ** (-8 * (h + 1) / H) for h in range(H)])
    start = cumsum0(qlens)[:-1]
    m.context_attention_fwd(q, k, v, o, req, alibi, start, torch.tensor(lens, dtype=I32),
                            torch.tensor(cached, dtype=I32), max(qlens), r2t)
    ref = torch.zeros(o.shape, dtype=F64)
    for b in range(len(lens)):
        s0, n = int(start[b]), qlens[b]
        ref[s0:s0 + n] = attn_ref(q[s0:s0 + n], gather(k, r2t, req[b], lens[b]), gather(v, r2t, req[b], lens[b]),
                                  D ** -0.5, alibi=alibi)
    return {"o": (o, ref, 1e-5)}


def mistral_case():
    """Mistral's prefill with a sliding window of 20 tokens (one key block: sequences up to 128), GQA."""
    m = load("models.mistral.triton_kernel.context_flashattention_nopad")
    Hq, Hk, D, W = 6, 2, 64, 20
    lens = [100, 37, 5]
    q = torch.randn(sum(lens), Hq, D); k = torch.randn(sum(lens), Hk, D); v = torch.randn(sum(lens), Hk, D)
    o = torch.zeros_like(q)
    start = cumsum0(lens)[:-1]
    m.context_attention_fwd(q, k, v, o, start, torch.tensor(lens, dtype=I32), max(lens), W)
    ref = torch.zeros(o.shape, dtype=F64)
    for b, L in enumerate(lens):
        s0 = int(start[b])
        ref[s0:s0 + L] = attn_ref(q[s0:s0 + L], k[s0:s0 + L], v[s0:s0 + L], D ** -0.5, window=W)
    return {"o": (o, ref, 1e-5)}


def phi3_prefill_case():
    """Phi-3's prefill with head size 96 (padded to 128 and masked), prompt cache, GQA."""
    m = load("models.phi3.triton_kernel.context_flashattention_nopad")
    Hq, Hk, D = 6, 2, 96
    lens, cached = [50, 150, 20], [13, 0, 7]
    qlens = [L - c for L, c in zip(lens, cached)]
    k, v, r2t, req = kv_cache(lens, Hk, D, F32)
    q = torch.randn(sum(qlens), Hq, D)
    o = torch.zeros_like(q)
    start = cumsum0(qlens)[:-1]
    m.context_attention_fwd(q, k, v, o, req, start, torch.tensor(lens, dtype=I32), torch.tensor(cached, dtype=I32),
                            max(qlens), r2t)
    ref = torch.zeros(o.shape, dtype=F64)
    for b in range(len(lens)):
        s0, n = int(start[b]), qlens[b]
        ref[s0:s0 + n] = attn_ref(q[s0:s0 + n], gather(k, r2t, req[b], lens[b]), gather(v, r2t, req[b], lens[b]),
                                  D ** -0.5)
    return {"o": (o, ref, 1e-5)}


def vit_attention_case():
    """The ViT's attention: non-causal, sequences through cu_seqlens (70, 5, 130), head size 80 (padded to 128)."""
    m = load("models.vit.triton_kernel.flashattention_nopad")
    H, D = 3, 80
    lens = [70, 5, 130]
    cu = cumsum0(lens)
    q = torch.randn(sum(lens), H, D); k = torch.randn(sum(lens), H, D); v = torch.randn(sum(lens), H, D)
    o = torch.zeros_like(q)
    m.flash_attention_fwd(q, k, v, o, cu, max(lens))
    ref = torch.cat([attn_ref(q[a:b], k[a:b], v[a:b], D ** -0.5, causal=False) for a, b in zip(cu[:-1], cu[1:])])
    return {"o": (o, ref, 1e-5)}


def vsm_decode_case(dtype, Hq=6, Hk=2, D=64):
    """llama's gqa_token_decode_attention_flash_decoding_vsm: the block-size kernel, then a persistent stage 1 over
    three virtual SMs (sized through JITFunction.warmup and CompiledKernel._init_handles), then stage 2."""
    def run():
        m = load("models.llama.triton_kernel.gqa_flash_decoding_vsm")
        lens = [300, 7, 129, 40]
        q, k, v, r2t, req, seq, ref = decode_inputs(lens, Hq, Hk, D, dtype)
        state = types.SimpleNamespace(batch_size=len(lens), max_len_in_batch=max(lens), b_req_idx=req, b_seq_len=seq,
                                      req_manager=types.SimpleNamespace(req_to_token_indexs=r2t),
                                      total_token_num=sum(lens))
        o = m.gqa_token_decode_attention_flash_decoding_vsm(q, k, v, state, alloc_tensor_func=alloc)
        return {"o": (o, ref, tol_of(dtype))}
    return run


def mla_prefill_with_v_case(H=4, R=128, P=64):
    """DeepSeek-V2's prefill with decompressed K / V: k_nope [kv tokens, H, 128] and v per head, one shared
    k_rope [kv tokens, 1, 64], K/V packed per request at b_kv_start_loc, prompt cache."""
    m = load("models.deepseek2.triton_kernel.context_flashattention_nopad_with_v")
    lens, cached = [50, 70, 20], [13, 0, 7]
    qlens = [L - c for L, c in zip(lens, cached)]
    qn, qr = torch.randn(sum(qlens), H, R), torch.randn(sum(qlens), H, P)
    kn, kr, v = torch.randn(sum(lens), H, R), torch.randn(sum(lens), 1, P), torch.randn(sum(lens), H, R)
    o = torch.zeros_like(qn)
    qs, ks = cumsum0(qlens), cumsum0(lens)
    scale = (R + P) ** -0.5
    m.context_attention_fwd_with_v(qn, qr, kn, kr, v, o, qs[:-1], ks[:-1], torch.tensor(lens, dtype=I32),
                                   torch.tensor(cached, dtype=I32), max(qlens), scale)
    ref = torch.zeros(o.shape, dtype=F64)
    for b in range(len(lens)):
        a, n, c = int(qs[b]), qlens[b], int(ks[b])
        kk = torch.cat([kn[c:c + lens[b]], kr[c:c + lens[b]].expand(-1, H, -1)], -1)
        ref[a:a + n] = attn_ref(torch.cat([qn[a:a + n], qr[a:a + n]], -1), kk, v[c:c + lens[b]], scale)
    return {"o": (o, ref, 1e-5)}


check("context_attention_fwd prompt cache GQA 6/2 head 64", prefill_case("prompt cache", F32))
check("context_attention_fwd prompt cache GQA 6/2 head 64 bf16", prefill_case("prompt cache", BF16))
check("context_attention_fwd_no_prompt_cache GQA 6/2", prefill_case("no cache", F32))
check("context_attention_fwd_ppl_int8kv [B, H, S, D] K/V", prefill_case("ppl_int8kv", F32))
check("token_att_fwd -> token_softmax_fwd -> token_att_fwd2", token_attention_case("softmax + reduceV"))
check("token_att_fwd -> token_softmax_reducev_fwd", token_attention_case("softmax_reducev"))
check("flash decoding (llama) MHA 4 heads", flash_decoding_case("llama", 4, 4, 64))
check("gqa flash decoding (llama) 6/2 heads", flash_decoding_case("llama gqa", 6, 2, 64))
check("gqa flash decoding (llama) 6/2 heads bf16", flash_decoding_case("llama gqa", 6, 2, 64, BF16))
check("gqa_decode_attention_fwd 6/2 heads", flash_decoding_case("gqa_decode_attention_fwd", 6, 2, 64))
check("flash decoding (phi3) head 96", flash_decoding_case("phi3", 4, 2, 96))
check("MLA decode (deepseek2) 20 heads, 128 + 64", mla_decode_case(F32))
check("MLA decode (deepseek2) 20 heads, 128 + 64 bf16", mla_decode_case(BF16))
check("MLA prefill (deepseek2) prompt cache, 128 + 64", mla_prefill_case(F32))
check("MLA prefill with V (deepseek2) prompt cache", mla_prefill_with_v_case)
check("gqa flash decoding vsm (llama) 6/2 heads, 3 virtual SMs", vsm_decode_case(F32))
check("bloom context_attention_fwd ALiBi + prompt cache", bloom_case)
check("mistral context_attention_fwd sliding window 20", mistral_case)
check("phi3 context_attention_fwd head 96 prompt cache", phi3_prefill_case)
check("vit flash_attention_fwd head 80 cu_seqlens", vit_attention_case)


# --- norms, activations, rotary ----------------------------------------------------------------------------------

def rms(x, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rmsnorm_case(dtype):
    def run():
        m = load("models.llama.triton_kernel.rmsnorm")
        x = torch.randn(37, 300).to(dtype); w = torch.randn(300).to(dtype)
        y = m.rmsnorm_forward(x, w, 1e-6)
        return {"y": (y, rms(x.double(), 1e-6) * w.double(), tol_of(dtype))}
    return run


def layernorm_case():
    """Bloom's layer norm kernel over rows of 300 in blocks of 128 (three passes with loops)."""
    m = load("models.bloom.triton_kernel.layernorm")
    x = torch.randn(37, 300) + 0.5; w = torch.randn(300); b = torch.randn(300)
    y = torch.empty_like(x)
    m._layer_norm_fwd_fused[(37,)](x, y, w, b, x.stride(0), 300, 1e-5, BLOCK_SIZE=128)
    ref = torch.nn.functional.layer_norm(x.double(), (300,), w.double(), b.double(), 1e-5)
    return {"y": (y, ref, 1e-5)}


def vit_rms_case():
    m = load("models.vit.triton_kernel.rms_norm_vit")
    x = torch.randn(2, 19, 200); w = torch.randn(200)
    y = m.rms_norm(x, w, 1e-6)
    return {"y": (y, rms(x.double(), 1e-6) * w.double(), 1e-5)}


def glu_case(kind, dtype):
    def run():
        x = torch.randn(37, 2 * 136).to(dtype)
        out = torch.empty(37, 136).to(dtype)
        g, u = x.double().chunk(2, -1)
        if kind == "silu":
            load("models.llama.triton_kernel.silu_and_mul").silu_and_mul_fwd(x, out)
            ref = torch.nn.functional.silu(g) * u
        elif kind == "moe silu":
            load("common.fused_moe.moe_silu_and_mul").silu_and_mul_fwd(x, out)
            ref = torch.nn.functional.silu(g) * u
        else:
            load("models.gemma_2b.triton_kernel.gelu_and_mul").gelu_and_mul_fwd(x, out)
            ref = torch.nn.functional.gelu(g, approximate="tanh") * u
        return {"out": (out, ref, tol_of(dtype))}
    return run


def vit_gelu_case():
    m = load("models.vit.triton_kernel.gelu_vit")
    x = torch.randn(37, 300)
    return {"y": (m.gelu_fwd(x), torch.nn.functional.gelu(x.double()), 1e-5)}


def rope_half(x, cos, sin, rot):
    """Rotate-half RoPE over the first rot channels: x [T, H, D], cos / sin [T, rot / 2]."""
    x = x.double(); h = rot // 2
    c, s = cos.double()[:, None, :], sin.double()[:, None, :]
    out = x.clone()
    out[..., :h] = x[..., :h] * c - x[..., h:rot] * s
    out[..., h:rot] = x[..., :h] * s + x[..., h:rot] * c
    return out


def rotary_case(factor):
    def run():
        m = load("models.llama.triton_kernel.rotary_emb")
        T, Hq, Hk, D = 37, 6, 2, 128
        rot = int(D * factor)
        q = torch.randn(T, Hq, D); k = torch.randn(T, Hk, D)
        ang = torch.rand(T, rot // 2) * 6
        cos, sin = ang.cos(), ang.sin()
        q_ref, k_ref = rope_half(q, cos, sin, rot), rope_half(k, cos, sin, rot)
        m.rotary_emb_fwd(q, k, cos, sin, factor)
        return {"q": (q, q_ref, 1e-5), "k": (k, k_ref, 1e-5)}
    return run


def rotary_interleaved_case():
    """DeepSeek-V2's RoPE on channel pairs (2i, 2i + 1): q [T, 6, 64], k [T, 1, 64]."""
    m = load("models.deepseek2.triton_kernel.rotary_emb")
    T, D = 37, 64
    q = torch.randn(T, 6, D); k = torch.randn(T, 1, D)
    ang = torch.rand(T, D // 2) * 6
    cos, sin = ang.cos(), ang.sin()

    def ref(x):
        x = x.double(); c, s = cos.double()[:, None], sin.double()[:, None]
        out = x.clone()
        out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
        out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
        return out
    q_ref, k_ref = ref(q), ref(k)
    m.rotary_emb_fwd(q, k, cos, sin)
    return {"q": (q, q_ref, 1e-5), "k": (k, k_ref, 1e-5)}


def mrope_case():
    """Qwen2-VL's multimodal RoPE: q [B, Hq, L, D] (strided: [B, L, Hq, D] memory), head size 96, mrope_section
    [16, 16, 16] (channel d takes its cos / sin from position axis axis_map[d] of cos [3, 1, L, D])."""
    m = load("models.qwen2_vl.triton_kernel.mrope")
    B, Hq, Hk, L, D = 2, 5, 2, 19, 96
    q = torch.randn(B, L, Hq, D).transpose(1, 2); k = torch.randn(B, L, Hk, D).transpose(1, 2)
    cos, sin = torch.randn(3, 1, L, D), torch.randn(3, 1, L, D)
    axis = torch.tensor([i % 3 for i, n in enumerate([16, 16, 16] * 2) for _ in range(n)], dtype=I32)
    qo, ko = m.mrope_triton(q, k, cos, sin, axis)
    d = torch.arange(D)
    c = cos[axis.long(), 0, :, d].T.double()  # [L, D]
    s = sin[axis.long(), 0, :, d].T.double()

    def ref(x):
        x = x.double()
        rot = torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
        return x * c + rot * s
    return {"q": (qo, ref(q), 1e-5), "k": (ko, ref(k), 1e-5)}


check("rmsnorm_forward hidden 300", rmsnorm_case(F32))
check("rmsnorm_forward hidden 300 bf16", rmsnorm_case(BF16))
check("bloom _layer_norm_fwd_fused hidden 300, block 128", layernorm_case)
check("vit rms_norm hidden 200 (constexpr eps / strides)", vit_rms_case)
check("silu_and_mul_fwd 136", glu_case("silu", F32))
check("silu_and_mul_fwd 136 bf16", glu_case("silu", BF16))
check("gemma gelu_and_mul_fwd 136", glu_case("gelu", F32))
check("vit gelu_fwd (erf)", vit_gelu_case)
check("rotary_emb_fwd (llama) head 128 GQA", rotary_case(1.0))
check("rotary_emb_fwd (llama) partial_rotary_factor 0.5", rotary_case(0.5))
check("rotary_emb_fwd (deepseek2) interleaved", rotary_interleaved_case)
check("mrope_triton (qwen2_vl) head 96, strided q/k", mrope_case)


# --- KV cache, index and embedding kernels -----------------------------------------------------------------------

def destindex_case(kind):
    def run():
        n, slots, H, D = 37, 60, 6, 64
        dest = torch.randperm(slots)[:n].to(I64)
        k = torch.randn(n, H, D) * torch.rand(n, H, 1) * 4
        if kind == "copy":
            out = torch.zeros(slots, H, D)
            load("common.basemodel.triton_kernel.destindex_copy_kv").destindex_copy_kv(k, dest, out)
            ref = torch.zeros(slots, H, D, dtype=F64); ref[dest] = k.double()
            return {"out": (out, ref, 0.0)}
        group = D if kind == "int8 per head" else 8
        out = torch.zeros(slots, H, D, dtype=torch.int8)
        scale = torch.zeros(slots, H, D // group)
        if kind == "int8 per head":
            load("common.basemodel.triton_kernel.destindex_copy_kv").destindex_copy_quantize_kv(k, dest, out, scale)
        else:
            load("models.llama.triton_kernel.ppl_quant_copy_kv").destindex_copy_quantize_kv(k, dest, out, scale)
        kg = k.double().view(n, H, D // group, group)
        s_ref = kg.abs().amax(-1) / 127
        q_ref = torch.trunc(kg / s_ref.float().double()[..., None]).view(n, H, D)
        return {"scale": (scale[dest], s_ref, 1e-6), "q": (out[dest].double(), q_ref, 1.01 / 127)}
    return run


def mla_destindex_case():
    m = load("models.deepseek2.triton_kernel.destindex_copy_kv")
    n, slots = 37, 60
    dest = torch.randperm(slots)[:n].to(I64)
    kv = torch.randn(n, 1, 128 + 64).to(BF16)
    on, orp = torch.zeros(slots, 1, 128).to(BF16), torch.zeros(slots, 1, 64).to(BF16)
    m.destindex_copy_kv(kv[:, :, :128], kv[:, :, 128:], dest, on, orp)
    rn, rr = torch.zeros(slots, 1, 128, dtype=F64), torch.zeros(slots, 1, 64, dtype=F64)
    rn[dest] = kv[:, :, :128].double(); rr[dest] = kv[:, :, 128:].double()
    return {"nope": (on, rn, 0.0), "rope": (orp, rr, 0.0)}


def copy_index_case():
    m = load("common.basemodel.triton_kernel.copy_kv_index_to_req")
    r2t = torch.randint(0, 1000, (6, 50), dtype=I32)
    req = torch.tensor([4, 1, 5], dtype=I32); seq = torch.tensor([7, 50, 1], dtype=I32)
    mem = torch.tensor([11, 22, 33], dtype=I32)
    ref = r2t.clone()
    ref[req.long(), (seq - 1).long()] = mem
    m.copy_kv_index_to_req(r2t, req, seq, mem)
    return {"req_to_token_indexs": (r2t.double(), ref.double(), 0.0)}


def repack_case():
    m = load("models.deepseek2.triton_kernel.repack_kv_index")
    r2t = torch.randint(0, 1000, (6, 200), dtype=I32)
    req = torch.tensor([4, 1, 5], dtype=I32); seq = torch.tensor([7, 150, 1], dtype=I32)
    start = cumsum0(seq.tolist())[:-1]
    out = torch.full((170,), -1, dtype=I32)
    m.repack_kv_index(r2t, req, seq, start, 150, out)
    ref = torch.zeros(170, dtype=I32)
    for b in range(3):
        ref[int(start[b]):int(start[b]) + int(seq[b])] = r2t[req[b], :seq[b]]
    return {"out": (out.double(), ref.double(), 0.0)}


def prefill_params_case():
    m = load("common.basemodel.triton_kernel.gen_prefill_params")
    cache = torch.tensor([13, 0, 7, 2], dtype=I32); seq = torch.tensor([50, 150, 20, 3], dtype=I32)
    qlen = seq - cache
    bq, cuq, bkv, cukv, pos, mq, mkv = m.gen_prefill_params(int(qlen.sum()), cache, seq)
    pos_ref = torch.cat([torch.arange(int(c), int(s)) for c, s in zip(cache, seq)])
    return {"cu_q": (cuq.double(), cumsum0(qlen.tolist()).double(), 0.0),
            "cu_kv": (cukv.double(), cumsum0(seq.tolist()).double(), 0.0),
            "position_ids": (pos.double(), pos_ref.double(), 0.0),
            "max lens": (torch.tensor([mq, mkv], dtype=F64), torch.tensor([150.0, 150.0], dtype=F64), 0.0)}


def decode_params_case():
    m = load("common.basemodel.triton_kernel.gen_decode_params")
    seq = torch.tensor([50, 150, 20, 3, 9], dtype=I32)
    bq, cuq, bkv, cukv, pos, mq, mkv = m.gen_decode_params(seq)
    return {"cu_q": (cuq.double(), cumsum0([1] * 5).double(), 0.0),
            "cu_kv": (cukv.double(), cumsum0(seq.tolist()).double(), 0.0)}


def embedding_case():
    """A vocabulary shard [1000, 1300) of 300 rows, hidden 200: ids outside the shard give zeros."""
    m = load("models.llama.triton_kernel.embedding")
    w = torch.randn(300, 200)
    ids = torch.randint(900, 1400, (71,), dtype=I64)
    out = torch.full((71, 200), float("nan"))
    m.embedding(ids, w, 1000, 1300, out)
    inside = (ids >= 1000) & (ids < 1300)
    ref = torch.zeros(71, 200, dtype=F64)
    ref[inside] = w[(ids[inside] - 1000)].double()
    return {"out": (out, ref, 0.0)}


def multimodal_case():
    """Text tokens of the shard [0, 500) from the text table, two images' tokens (ids 100000... and 200000...)
    from the image embeddings; then mark_multimodal_obj over three objects (one absent)."""
    m = load("common.basemodel.triton_kernel.multimodal_emb")
    hidden = 200
    text = torch.randn(500, hidden); img = torch.randn(30, hidden)
    ids = torch.cat([torch.randint(0, 600, (10,)), torch.arange(100000, 100012), torch.randint(0, 500, (5,)),
                     torch.arange(200000, 200018), torch.randint(0, 500, (3,))]).to(I64)
    lens, starts, locs = torch.tensor([12, 18], dtype=I64), torch.tensor([100000, 200000], dtype=I64), \
        torch.tensor([0, 12], dtype=I64)
    out = torch.zeros(len(ids), hidden)
    m.multimodal_emb(out, ids, text, img, lens, starts, locs, 0, 500)
    ref = torch.zeros(len(ids), hidden, dtype=F64)
    for t, i in enumerate(ids.tolist()):
        if 0 <= i < 500:
            ref[t] = text[i].double()
        elif 100000 <= i < 100012:
            ref[t] = img[i - 100000].double()
        elif 200000 <= i < 200018:
            ref[t] = img[12 + i - 200000].double()
    marks = m.mark_multimodal_obj(torch.tensor([100000, 300000, 200010], dtype=I64),
                                  torch.tensor([12, 5, 4], dtype=I64), ids)
    return {"out": (out, ref, 0.0), "marks": (marks.double(), torch.tensor([1.0, 0.0, 1.0], dtype=F64), 0.0)}


def add_case():
    m = load("common.basemodel.triton_kernel.add_in_place")
    x = torch.randn(37, 300); y = torch.randn(37, 300)
    ref = x.double() + 0.5 * y.double()
    m.add_in_place(x, y, alpha=0.5)
    return {"x": (x, ref, 1e-6)}


def redundancy_case():
    """8 experts per EP rank, 2 redundant slots holding experts 3 and 13, rank 1; with the expert counter."""
    m = load("common.basemodel.triton_kernel.redundancy_topk_ids_repair")
    ep, rank, E = 8, 1, 16
    ids = torch.randint(0, E, (37, 6), dtype=I64)
    red = torch.tensor([3, 13], dtype=I64)
    counter = torch.zeros(E, dtype=I32)
    R = len(red)
    ref = (ids // ep) * R + ids
    for i, r in enumerate(red.tolist()):
        ref = torch.where(ref == (r // ep) * R + r, (ep + R) * rank + ep + i, ref)
    count_ref = torch.bincount(ids.flatten(), minlength=E)
    m.redundancy_topk_ids_repair(ids, red, ep, rank, counter, enable_counter=True)
    return {"ids": (ids.double(), ref.double(), 0.0), "counter": (counter.double(), count_ref.double(), 0.0)}


def kv_trans_case():
    m = load("common.kv_trans_kernel.kv_trans")
    src = torch.randn(60, 6, 80); dst = torch.zeros(70, 6, 80)
    si = torch.randperm(60)[:37].to(I64); di = torch.randperm(70)[:37].to(I64)
    ref = torch.zeros(70, 6, 80, dtype=F64); ref[di] = src[si].double()
    m.kv_trans(src, si, dst, di)
    return {"out": (dst, ref, 0.0)}


def mla_destindex_fp8_case():
    """DeepSeek-V2's fp8 cache write: one scale per token, max(|nope|, |rope|) / 448 in the input type (bfloat16),
    kv / scale clamped and converted to float8_e4m3fn."""
    m = load("models.deepseek2.triton_kernel.destindex_copy_kv_fp8")
    n, slots = 37, 60
    dest = torch.randperm(slots)[:n].to(I64)
    kv = (torch.randn(n, 1, 128 + 64) * torch.rand(n, 1, 1) * 4).to(BF16)
    on, orp = torch.zeros(slots, 1, 128, dtype=FP8), torch.zeros(slots, 1, 64, dtype=FP8)
    sc = torch.zeros(slots, 1, 1, dtype=BF16)
    m.destindex_copy_kv_fp8(kv[:, :, :128], kv[:, :, 128:], dest, on, orp, sc)
    s_ref = (kv.double().abs().amax(-1, keepdim=True) / 448.0).to(BF16).double()
    q_ref = kv.double() / s_ref
    return {"scale": (sc[dest], s_ref, 1e-6), "nope": (on[dest].double(), q_ref[..., :128], 0.04),
            "rope": (orp[dest].double(), q_ref[..., 128:], 0.04)}


def apply_penalty_case():
    """Presence / frequency / repetition penalties over each request's generated token ids and counts, then the
    exponential-decay length penalty on the EOS logits (or -1e7 where EOS is masked); the sampling parameters per
    request slot as LightLLM's ReqSamplingParamsManager holds them (built here by hand)."""
    m = load("common.basemodel.triton_kernel.apply_penalty")
    B, V = 3, 300
    logits = torch.randn(B, V) * 3
    req = torch.tensor([2, 0, 3], dtype=I32)
    mgr = types.SimpleNamespace(req_to_presence_penalty=torch.tensor([0.1, 0.0, 0.5, 0.2]),
                                req_to_frequency_penalty=torch.tensor([0.2, 0.0, 0.05, 0.3]),
                                req_to_repetition_penalty=torch.tensor([1.1, 1.0, 1.3, 0.9]),
                                req_to_exponential_decay_length_penalty=torch.tensor([1.0, 1.0, 1.05, 1.2]),
                                vocab_size=V)
    ids = [torch.randperm(V)[:n].to(I32) for n in (17, 0, 40)]
    ids[2][0] = V + 5  # an id past the vocabulary (masked)
    counts = [torch.randint(1, 5, (len(i),), dtype=I32) for i in ids]
    cum = cumsum0([len(i) for i in ids])
    eos = torch.tensor([7, 11], dtype=I32)
    length = torch.tensor([3, 0, 10], dtype=I32)
    mask_eos = torch.tensor([False, True, False])
    ref = logits.double().clone()
    for b in range(B):
        r = int(req[b])
        pres, freq = float(mgr.req_to_presence_penalty[r]), float(mgr.req_to_frequency_penalty[r])
        rep = float(mgr.req_to_repetition_penalty[r])
        for t, c in zip(ids[b].tolist(), counts[b].tolist()):
            if t < V:
                x = ref[b, t]
                ref[b, t] = (x / rep if x > 0 else x * rep) - c * freq - pres
        scale = float(mgr.req_to_exponential_decay_length_penalty[r]) ** int(length[b]) - 1
        for e in eos.tolist():
            ref[b, e] = -1e7 if mask_eos[b] else ref[b, e] + abs(ref[b, e]) * scale
    m.apply_penalty(logits, req, length, mask_eos, torch.cat(ids), torch.cat(counts), cum, eos, mgr)
    return {"logits": (logits, ref, 1e-6)}


check("destindex_copy_kv 6 heads x 64", destindex_case("copy"))
check("destindex_copy_quantize_kv int8 per head", destindex_case("int8 per head"))
check("ppl destindex_copy_quantize_kv int8 per 8 channels", destindex_case("int8 groups"))
check("destindex_copy_kv (deepseek2) nope 128 + rope 64 bf16", mla_destindex_case)
check("destindex_copy_kv_fp8 (deepseek2) bf16 -> fp8 + scale", mla_destindex_fp8_case)
check("copy_kv_index_to_req", copy_index_case)
check("repack_kv_index (deepseek2)", repack_case)
check("gen_prefill_params (cumsum + positions)", prefill_params_case)
check("gen_decode_params", decode_params_case)
check("embedding vocabulary shard, hidden 200", embedding_case)
check("multimodal_emb + mark_multimodal_obj", multimodal_case)
check("add_in_place alpha 0.5", add_case)
check("redundancy_topk_ids_repair + expert counter", redundancy_case)
check("kv_trans 37 tokens", kv_trans_case)
check("apply_penalty (penalties + EOS length penalty)", apply_penalty_case)


# --- MoE ---------------------------------------------------------------------------------------------------------

def softmax_topk_case(renorm):
    def run():
        m = load("common.fused_moe.softmax_topk")
        g = torch.randn(37, 60)
        w, i = m.softmax_topk(g, 6, renorm=renorm)
        wr, ir = torch.softmax(g.double(), -1).topk(6, -1)
        if renorm:
            wr = wr / wr.sum(-1, keepdim=True)
        return {"weights": (w, wr, 1e-5), "ids": (i.double(), ir.double(), 0.0)}
    return run


def grouped_topk_case(scoring):
    """DeepSeek-V3's routing: scores (sigmoid + correction bias, or softmax), each group scored by the sum of its
    two best, the best topk_group groups kept, the top-k experts of those by biased score, weighted by the unbiased
    scores (renormalised for sigmoid)."""
    def run():
        m = load("common.fused_moe.grouped_topk")
        if scoring == "sigmoid":
            E, G, k, kg = 64, 8, 6, 3
            bias = torch.randn(E) * 0.1
        else:
            E, G, k, kg = 60, 4, 4, 2
            bias = None
        g = torch.randn(37, E)
        w, ids = m.triton_grouped_topk(None, g, bias, k, scoring == "sigmoid", G, kg, scoring)
        sc = torch.sigmoid(g.double()) if scoring == "sigmoid" else torch.softmax(g.double(), -1)
        s = sc + (bias.double() if bias is not None else 0)
        gs = s.view(37, G, -1).topk(2, -1).values.sum(-1)
        keep = torch.zeros(37, G, dtype=torch.bool).scatter_(1, gs.topk(kg, -1).indices, True)
        s = s.masked_fill(~keep.repeat_interleave(E // G, 1), float("-inf"))
        ir = s.topk(k, -1).indices
        wr = sc.gather(1, ir)
        if scoring == "sigmoid":
            wr = wr / wr.sum(-1, keepdim=True)
        return {"weights": (w, wr, 1e-5), "ids": (ids.double(), ir.double(), 0.0)}
    return run


def sum_reduce_case(dtype):
    def run():
        m = load("common.fused_moe.moe_sum_reduce")
        x = torch.randn(37, 6, 300).to(dtype)
        out = torch.empty(37, 300).to(dtype)
        m.moe_sum_reduce(x, out)
        return {"out": (out, x.double().sum(1), tol_of(dtype))}
    return run


def moe_ref(x, w1, w2, tw, ti, act_quant=None):
    """sum_k tw[t, k] * (silu(x W1g^T) * (x W1u^T)) W2^T over the token's experts ti[t, k], with the kernels'
    roundings: each GEMM's output to the activation type (bfloat16), the gate's SiLU in float32 then bfloat16 times
    up in bfloat16, the top-k sum in float32 then bfloat16; act_quant(a) quantize-dequantizes a GEMM's input as the
    fp8 path does. The GEMMs themselves in float64."""
    w1, w2 = w1.double(), w2.double()
    N = w1.shape[1] // 2
    acc = torch.zeros(x.shape[0], w2.shape[1], dtype=F32)
    for kk in range(ti.shape[1]):
        e = ti[:, kk].long()
        a = act_quant(x) if act_quant else x.double()
        h = torch.einsum("tk,tnk->tn", a, w1[e]).to(BF16)
        gate = h[:, :N].float()
        h = h[:, N:] * (gate / (1 + torch.exp(-gate))).to(BF16)
        h = act_quant(h) if act_quant else h.double()
        acc += (torch.einsum("tk,tnk->tn", h, w2[e]) * tw[:, kk:kk + 1].double()).to(BF16).float()
    return acc.to(BF16).double()


def group_quant_ref(a, group=128):
    """per_token_group_quant_fp8 then dequantized: per token and 128-channel group, scale = absmax / 448 and
    a / scale rounded to float8_e4m3fn, in float32."""
    g = a.float().view(a.shape[0], -1, group)
    s = g.abs().amax(-1, keepdim=True).clamp_min(1e-10) / 448.0
    return ((g / s).clamp(-448, 448).to(FP8).double() * s.double()).view(a.shape)


def fused_moe_case(quant):
    """The grouped MoE layer: 37 tokens routed to top-3 of 5 experts (float routing weights), hidden 200,
    intermediate 136, bfloat16; fp8: hidden 256, intermediate 128, weights fp8 with per-128x128-block scales."""
    def run():
        m = load("common.fused_moe.grouped_fused_moe")
        T, E, K = 37, 5, 3
        H, I = (256, 128) if quant else (200, 136)
        x = (torch.randn(T, H) / 2).to(BF16)
        ti = torch.stack([torch.randperm(E)[:K] for _ in range(T)]).to(I32)
        tw = torch.rand(T, K)
        if quant:
            w1f, w2f = torch.randn(E, 2 * I, H) / H ** 0.5, torch.randn(E, H, I) / I ** 0.5

            def q(w):
                b = w.view(E, w.shape[1] // 128, 128, w.shape[2] // 128, 128)
                s = b.abs().amax((2, 4), keepdim=True) / 448.0
                wq = (b / s).to(FP8)
                return wq.view(w.shape), s[:, :, 0, :, 0].contiguous(), (wq.double() * s.double()).view(w.shape)
            w1, s1, w1d = q(w1f)
            w2, s2, w2d = q(w2f)
            out = m.fused_experts_impl(x, w1, w2, tw, ti, use_fp8_w8a8=True, w1_scale=s1, w2_scale=s2)
            ref = moe_ref(x, w1d, w2d, tw, ti, group_quant_ref)
            return {"out": (out, ref, 2e-2)}
        w1, w2 = (torch.randn(E, 2 * I, H) / H ** 0.5).to(BF16), (torch.randn(E, H, I) / I ** 0.5).to(BF16)
        out = m.fused_experts_impl(x, w1, w2, tw, ti)
        return {"out": (out, moe_ref(x, w1, w2, tw, ti), 2e-2)}
    return run


def ep_scatter_gather_case():
    """ep_scatter (expert start offsets by cumsum, slots taken with atomic_add) then ep_gather (weighted sum back per
    token): 37 tokens, top-3 of 5 experts with some -1 (dropped) entries, hidden 1024 with 8 scale columns. Checked:
    each copy sits in its expert's padded range and equals the token; the gather gives sum_k w_k x[t]."""
    m = load("common.fused_moe.deepep_scatter_gather")
    T, E, K, Hd = 37, 5, 3, 1024
    x = torch.randn(T, Hd); xs = torch.rand(T, Hd // 128)
    topk = torch.stack([torch.randperm(E)[:K] for _ in range(T)]).to(I32)
    topk[torch.rand(T, K) < 0.2] = -1
    counts = torch.bincount(topk[topk >= 0].long(), minlength=E)
    padded = ((counts + 127) // 128 * 128).to(I32)
    total = int(padded.sum())
    start = torch.zeros(E, dtype=I32)
    out = torch.zeros(total, Hd); out_s = torch.zeros(total, Hd // 128)
    m_idx = torch.full((total,), -7, dtype=I32)
    index = torch.full((T, K), -1, dtype=I32)
    m.ep_scatter(x, xs, topk, padded, start, out, out_s, m_idx, index)
    lo = cumsum0(padded.tolist())
    ok = torch.ones(T, K)
    for t in range(T):
        for kk in range(K):
            e = int(topk[t, kk])
            if e >= 0:
                d = int(index[t, kk])
                ok[t, kk] = float(lo[e] <= d < lo[e] + counts[e] and torch.equal(out[d], x[t])
                                  and torch.equal(out_s[d], xs[t]))
    m_ref = torch.repeat_interleave(torch.arange(E, dtype=I32), padded)
    w = torch.rand(T, K)
    gathered = torch.empty(T, Hd)
    m.ep_gather(out, topk, w, index, gathered)
    g_ref = ((topk >= 0).double() * w.double()).unsqueeze(-1).mul(x.double().unsqueeze(1)).sum(1)
    return {"copies in place": (ok, torch.ones(T, K, dtype=F64), 0.0), "m_indices": (m_idx.double(), m_ref.double(), 0),
            "gathered": (gathered, g_ref, 1e-5)}


def masked_silu_quant_case():
    """The EP MoE's silu_and_mul_masked_post_quant_fwd: per expert the first masked_m[e] of 20 padded tokens,
    SiLU(gate) * up in bfloat16, then fp8 per 128-channel group with float32 scales."""
    m = load("common.fused_moe.moe_silu_and_mul_mix_quant_ep")
    E, T, N = 3, 20, 256
    x = torch.randn(E, T, 2 * N).to(BF16)
    masked = torch.tensor([5, 20, 0], dtype=I32)
    q = torch.zeros(E, T, N, dtype=FP8); s = torch.zeros(E, T, N // 128)
    m.silu_and_mul_masked_post_quant_fwd(x, q, s, 128, masked)
    gate = x[..., :N].float()
    gu = (x[..., N:] * (gate / (1 + torch.exp(-gate))).to(BF16)).double()
    valid = torch.arange(T)[None, :] < masked[:, None]
    g = gu.view(E, T, N // 128, 128)
    s_ref = g.abs().amax(-1).clamp_min(1e-10) / 448.0
    q_ref = (g / s_ref.float().double()[..., None]).view(E, T, N)
    return {"scales": (s[valid], s_ref[valid], 1e-6), "quantized": (q[valid].double(), q_ref[valid], 0.04)}


check("softmax_topk 60 experts top-6", softmax_topk_case(False))
check("softmax_topk 60 experts top-6 renorm", softmax_topk_case(True))
check("triton_grouped_topk sigmoid + bias 64 experts, 8 groups", grouped_topk_case("sigmoid"))
check("triton_grouped_topk softmax 60 experts, 4 groups", grouped_topk_case("softmax"))
check("moe_sum_reduce top-6 hidden 300", sum_reduce_case(F32))
check("moe_sum_reduce top-6 hidden 300 bf16", sum_reduce_case(BF16))
check("moe silu_and_mul_fwd 136", glu_case("moe silu", F32))
check("fused_experts_impl bf16 5 experts top-3", fused_moe_case(False))
check("fused_experts_impl fp8 w8a8 block 128", fused_moe_case(True))
check("ep_scatter -> ep_gather round trip", ep_scatter_gather_case)
check("silu_and_mul_masked_post_quant_fwd (EP) fp8 groups", masked_silu_quant_case)


# --- fp8 quantization --------------------------------------------------------------------------------------------

def token_group_quant_case(column_major):
    def run():
        m = load("common.quantization.triton_quant.fp8.fp8act_quant_kernel")
        M, K, G = 37, 384, 128
        x = (torch.randn(M, K) * torch.rand(M, 1) * 4).to(BF16)
        xq = torch.empty(M, K, dtype=FP8)
        xs = torch.empty(K // G, M).T if column_major else torch.empty(M, K // G)
        m.per_token_group_quant_fp8(x, G, xq, xs)
        g = x.double().view(M, K // G, G)
        s_ref = g.abs().amax(-1) / 448.0
        return {"scales": (xs, s_ref, 1e-6),
                "quantized": (xq.double(), (g / s_ref[..., None]).view(M, K), 0.04)}
    return run


def tma_align_case():
    m = load("common.quantization.triton_quant.fp8.fp8act_quant_kernel")
    s = torch.rand(37, 3)
    out = m.tma_align_input_scale(s)
    return {"scales": (out, s.double(), 0.0), "column-major": (torch.tensor(float(out.stride(0) == 1)),
                                                                 torch.tensor(1.0, dtype=F64), 0.0)}


def block_fp8_matmul_case(out_dtype):
    def run():
        m = load("common.quantization.triton_quant.fp8.fp8w8a8_block_gemm_kernel")
        M, N, K, blk = 37, 200, 384, 128
        A = (torch.randn(M, K) * 50).clamp(-448, 448).to(FP8)
        B = (torch.randn(N, K) * 50).clamp(-448, 448).to(FP8).T  # [K, N], column-major
        As = torch.rand(M, K // blk) * 1e-2 + 1e-3
        Bs = torch.rand(K // blk, -(-N // blk)) * 1e-2 + 1e-3
        C = torch.empty(M, N, dtype=out_dtype)
        m.w8a8_block_fp8_matmul(A, B, As, Bs, C, (blk, blk), out_dtype)  # LightLLM passes a tuple
        Ad = A.double() * As.double().repeat_interleave(blk, 1)
        Bd = B.double() * Bs.double().repeat_interleave(blk, 0).repeat_interleave(blk, 1)[:, :N]
        return {"C": (C, Ad @ Bd, tol_of(out_dtype))}
    return run


def weight_quant_case():
    m = load("common.quantization.triton_quant.fp8.fp8w8a8_block_quant_kernel")
    x = torch.randn(200, 300) * torch.rand(200, 1) * 3
    y, s = m.mm_weight_quant(x, 128)
    b = torch.nn.functional.pad(x.double(), (0, 84, 0, 56)).view(2, 128, 3, 128)
    s_ref = b.abs().amax((1, 3)) / 448.0
    y_ref = x.double() / (s_ref.float().double() + 1e-6).repeat_interleave(128, 0).repeat_interleave(128, 1)[:200, :300]
    return {"scales": (s, s_ref, 1e-6), "quantized": (y.double(), y_ref, 0.04)}


def weight_dequant_case():
    """DeepSeek-V2's weight_dequant: fp8 [200, 300] times per-128x128-block scales, out in bfloat16."""
    m = load("models.deepseek2.triton_kernel.weight_dequant")
    x = (torch.randn(200, 300) * 100).clamp(-448, 448).to(FP8)
    sc = torch.rand(2, 3) * 1e-2
    y = m.weight_dequant(x, sc)
    ref = x.double() * sc.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:200, :300]
    return {"y": (y, ref, 2e-2)}


check("per_token_group_quant_fp8 bf16 group 128", token_group_quant_case(False))
check("per_token_group_quant_fp8 column-major scales", token_group_quant_case(True))
check("tma_align_input_scale", tma_align_case)
check("w8a8_block_fp8_matmul 37x200x384 -> f32", block_fp8_matmul_case(F32))
check("w8a8_block_fp8_matmul 37x200x384 -> bf16", block_fp8_matmul_case(BF16))
check("mm_weight_quant 200x300 block 128", weight_quant_case)
check("weight_dequant (deepseek2) fp8 200x300 -> bf16", weight_dequant_case)


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:62s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} LightLLM cases match the torch float64 references")
