"""SGLang's Triton kernels (sgl-project/sglang, python/sglang/srt) on Tegula, through the conformance shim's `triton`
package, against torch float64 references written here from the math:

  - LoRA (srt/lora/triton_ops): the triton backend's segmented GEMMs `sgemm_lora_a_fwd` (stacked A, stack 1 to
    3), `sgemm_lora_b_fwd`, `qkv_lora_b_fwd` and `gate_up_lora_b_fwd` (B with per-adapter scaling, fused add into
    a base output), each over contiguous request segments and over segments grouped by adapter through a token
    permutation (SORTED_BY_ADAPTER); the csgmv backend's chunked kernels `chunked_sgmv_lora_shrink_forward` and
    `chunked_sgmv_lora_expand_forward` (chunks of at most 16 tokens, BLOCK_M = max_len); `embedding_lora_a_fwd`
    (with extra-vocabulary embeddings) and `chunked_embedding_lora_a_forward`; kv_b_lora_absorbed.py's four
    absorbed-MLA steps (q side step_a_q -> step_b_q, v side step_a_v -> step_b_v); and an A-then-B chain as a
    LoRA layer runs it. Three adapters of ranks 16, 6 and 0 (maximum rank 16); columns of the rank-packed
    intermediate past an adapter's rank are NaN, so a read past the rank shows. The batch-info structure
    (`LoRABatchInfo`) is built by hand;
  - attention (srt/layers/attention/triton_ops): `extend_attention_fwd` (`_fwd_kernel`: queries of the new tokens
    against a cached prefix through kv_indices, page size 1 and 16 with a 4-D paged buffer, GQA, causal and not,
    sliding window, logit cap, attention sinks, a tree-shaped custom mask over prefix and extension, LSE output,
    prefix k/v scales, xAI temperature, and the MLA head split 192 = 128 + 64 with v 128), the deterministic
    single-stage `extend_attention_fwd_unified` with its index builder `build_unified_kv_indices` (a Triton
    kernel too), the EAGLE verify drop-in `verify_splitkv_fwd` (verify_splitkv.py), `context_attention_fwd`
    (prefill_attention.py), `merge_state_triton` (merge_state.py, with +inf LSEs taken as empty),
    `decode_attention_fwd` (decode_attention.py; it differs from vLLM's: ragged kv_indptr / kv_indices instead of
    a page table, per-request split counts, k / v scales, sinks, page-aware 4-D buffers, the MLA path where V is
    K's first 256 channels, HAS_MLA, and use_pdl), and the index / padding kernels of kv_indices.py
    (create_flashinfer_kv_indices_triton, create_flashmla_kv_indices_triton, create_chunked_prefix_cache_kv_indices,
    launched as SGLang's backends launch them) and pad.py (pad_sequence_with_mask, pad_draft_extend_query,
    unpad_draft_extend_output);
  - quantization (srt/layers/quantization): fp8_kernel.py's `per_token_group_quant_fp8` (on a machine without
    CUDA SGLang binds it to the Triton `_per_token_group_quant_8bit_raw`: float8_e4m3fn and int8, row-major and
    column-major TMA-aligned scales), `static_quant_fp8`, `per_tensor_quant_mla_fp8` (atomic_max of a float),
    `w8a8_block_fp8_matmul_triton`, `per_group_transpose` and `triton_scaled_mm` (int8 with an int32
    accumulator, and float8, with and without bias); int8_kernel.py's `per_token_quant_int8` (with the row sums),
    `per_token_group_quant_int8` and `w8a8_block_int8_matmul`;
  - hashes (integer arithmetic: uint32 wrap-around, rotations, uint64): layers/utils/hash.py's `murmur_hash32`
    against MurmurHash3_x86_32, and multimodal.py's `gpu_tensor_hash` kernels (hash_tiles32_kernel_blocked,
    add_tree_reduce_u64_kernel; launched directly with the wrapper's arguments, since the wrapper asserts a CUDA
    tensor) against the same hash computed in Python integers;
  - elementwise and norms (srt/layers): elementwise.py's `fused_rmsnorm`, `fused_dual_residual_rmsnorm`,
    `experts_combine_triton`, `gelu_and_mul_triton`, `silu_and_mul_triton`, `fused_sigmoid_mul` (strided 3-D
    gate) and `fused_gate_sigmoid_mul_add`; triton_ops/softcap.py's `softcap_out` and `softcap_inplace_logits`
    (strided rows); fused_qk_norm.py's `fused_qk_norm` (with and without a Q weight, strided inputs).

Inputs are small, with sizes that are not powers of two where the API allows (head sizes 80 / 96, hidden sizes
200 / 300 / 136, sequences of different lengths); float32 unless a kernel takes other types (bfloat16 cases,
float8_e4m3fn and int8 for quantization). A case passes when every output's largest difference from its
reference is at most the tolerance times the reference's largest magnitude: float32 1e-5 (1e-4 for the chained
LoRA layer), bfloat16 2e-2; quantized outputs are checked through their scales (1e-6) and the quantized values
against x / scale (float8: 0.04 of 448, just over half a float8_e4m3 step at the top of the range; int8: one
step, as the kernels truncate); indices, hashes and copies exactly.

SGLang is not part of Tegula; point this at a directory that holds SGLang's `python/sglang/` (a checkout, or a
directory into which the files below were copied with their paths; an unpacked wheel, which holds `sglang/` at
its root, works too). Written against sglang 0.5.15's layout (its wheel: `pip download --no-deps
sglang==0.5.15`); from 0.5.16 on these kernels moved to sglang/kernels/ops. It reads only these files:
srt/lora/triton_ops/{kernel_utils, sgemm_lora_a, sgemm_lora_b, qkv_lora_b, gate_up_lora_b, chunked_sgmv_shrink,
chunked_sgmv_expand, lora_tuning_config, embedding_lora_a, chunked_embedding_lora_a, kv_b_lora_absorbed}.py,
srt/layers/attention/triton_ops/{extend_attention, prefill_attention, merge_state, decode_attention,
verify_splitkv, kv_indices, pad}.py, srt/layers/quantization/{fp8_kernel, int8_kernel}.py,
srt/layers/{elementwise, fused_qk_norm, multimodal}.py, srt/layers/utils/hash.py and
srt/layers/triton_ops/softcap.py:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/sglang_ops.py <sglang source> [-k SUBSTRING]

(-k runs only the cases whose name holds SUBSTRING.) `import sglang` pulls in its runtime, sgl_kernel and much
else, so these files are loaded on their own under bare `sglang...` packages, and what they import at module level
that a machine without CUDA lacks is stood in for (none of these stand-ins is a Triton kernel or is reached by
one):

  - sglang.srt.utils: is_cuda, is_hip, is_musa, is_cpu (SGLang's CPU engine switch, off), is_gfx95_supported,
    is_sm100_supported, is_sm120_supported all False; get_bool_env_var False; get_device_name "cpu" (no tuned
    config file matches, so the kernels' default configs are used); get_device_core_count 1; ceil_align;
    log_info_on_rank0 (logs); cached_triton_kernel returns the kernel unchanged (SGLang's own behaviour off CUDA
    unless SGLANG_USE_CUSTOM_TRITON_KERNEL_CACHE is set).
  - sglang.srt.utils.custom_op.register_custom_op and sglang.srt.utils.patch_torch.register_fake_if_exists:
    decorators that return the function unchanged (they register torch custom ops around Python launchers).
  - sglang.jit_kernel.utils.is_arch_support_pdl: False (no programmatic dependent launch).
  - sglang.srt.layers.deep_gemm_wrapper: ENABLE_JIT_DEEPGEMM False.
  - sglang.srt.lora.utils.LoRABatchInfo: a dataclass with the real one's fields (the real module imports the
    model executor and transformers).
  - torch._dynamo (read by fp8_kernel.py's get_w8a8_block_fp8_configs for torch._dynamo.is_compiling()): a
    namespace whose is_compiling is torch.compiler.is_compiling; importing the real torch._dynamo imports
    Inductor, which imports the real Triton's triton.backends, absent from the shim.

verify_splitkv.py's kernels take power-of-two head dims only (they load and store whole next_power_of_2 rows
without a head-dim mask; head dim 80 writes past their scratch buffer), and its combine stage weighs the unwritten
scratch rows of empty splits by zero (NaN garbage there turns the output NaN): its cases use head dims 128 and 64
and prefixes long enough for every split to hold keys. Not covered: fused_moe_lora_kernel.py and
virtual_experts.py (MoE LoRA, need the MoE runtime), the fused silu-and-mul fp8 quant and UE8M0 scales
(deep_gemm), and kernels already covered by vllm_ops.py. Prints one line per case (the largest absolute
difference from the reference, or the first line of the error) and a summary line.
"""

import dataclasses
import importlib.abc
import importlib.util
import logging
import math
import os
import pathlib
import sys
import types
from typing import Optional

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_args = sys.argv[1:]
ONLY = None
if len(_args) == 3 and _args[1] == "-k":
    ONLY = _args.pop(2); _args.pop(1)
if len(_args) != 1:
    sys.exit("usage: sglang_ops.py <sglang source> [-k SUBSTRING]")
_root = pathlib.Path(_args[0]).resolve()
SRC = _root / "python" if (_root / "python" / "sglang").is_dir() else _root
FILES = {
    "sglang.srt.lora.triton_ops." + n: f"sglang/srt/lora/triton_ops/{n}.py"
    for n in ("kernel_utils", "sgemm_lora_a", "sgemm_lora_b", "qkv_lora_b", "gate_up_lora_b", "chunked_sgmv_shrink",
              "chunked_sgmv_expand", "lora_tuning_config", "embedding_lora_a", "chunked_embedding_lora_a",
              "kv_b_lora_absorbed")
}
FILES.update({
    "sglang.srt.layers.attention.triton_ops." + n: f"sglang/srt/layers/attention/triton_ops/{n}.py"
    for n in ("extend_attention", "prefill_attention", "merge_state", "decode_attention", "verify_splitkv",
              "kv_indices", "pad")
})
FILES.update({
    "sglang.srt.layers.quantization.fp8_kernel": "sglang/srt/layers/quantization/fp8_kernel.py",
    "sglang.srt.layers.quantization.int8_kernel": "sglang/srt/layers/quantization/int8_kernel.py",
    "sglang.srt.layers.elementwise": "sglang/srt/layers/elementwise.py",
    "sglang.srt.layers.fused_qk_norm": "sglang/srt/layers/fused_qk_norm.py",
    "sglang.srt.layers.triton_ops.softcap": "sglang/srt/layers/triton_ops/softcap.py",
    "sglang.srt.layers.utils.hash": "sglang/srt/layers/utils/hash.py",
    "sglang.srt.layers.multimodal": "sglang/srt/layers/multimodal.py",
})
for _file in FILES.values():
    if not (SRC / _file).is_file():
        sys.exit(f"{_root} holds no python/{_file} (nor {_file})")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402, F401
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"
logging.getLogger("sglang").setLevel(logging.ERROR)  # the default-config notices of the quantized GEMMs


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, m)
    return m


@dataclasses.dataclass
class LoRABatchInfo:
    """sglang.srt.lora.utils.LoRABatchInfo's fields."""
    use_cuda_graph: bool
    bs: int
    num_segments: int
    seg_indptr: torch.Tensor
    weight_indices: torch.Tensor
    lora_ranks: torch.Tensor
    scalings: torch.Tensor
    max_len: Optional[int]
    seg_lens: Optional[torch.Tensor]
    permutation: Optional[torch.Tensor]
    expected_tokens: Optional[int] = None
    has_active_lora: bool = False
    req_seg_indptr: Optional[torch.Tensor] = None
    req_weight_indices: Optional[torch.Tensor] = None
    moe_lora_info: object = None


def _unchanged(*args, **kwargs):
    """A decorator, or a decorator factory, that leaves the function as it is."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


_false = lambda *a, **k: False  # noqa: E731
for _name in ("sglang", "sglang.srt", "sglang.srt.lora", "sglang.srt.lora.triton_ops", "sglang.srt.layers",
              "sglang.srt.layers.attention", "sglang.srt.layers.attention.triton_ops",
              "sglang.srt.layers.quantization", "sglang.srt.layers.triton_ops", "sglang.srt.layers.utils",
              "sglang.jit_kernel"):
    module(_name)
module("sglang.srt.utils", is_cuda=_false, is_hip=_false, is_musa=_false, is_cpu=_false, is_gfx95_supported=_false,
       is_sm100_supported=_false, is_sm120_supported=_false, get_bool_env_var=_false,
       get_device_name=lambda *a: "cpu", get_device_core_count=lambda *a: 1,
       ceil_align=lambda x, a: -(-x // a) * a, log_info_on_rank0=lambda logger, msg: logger.info(msg),
       cached_triton_kernel=lambda key_fn=None: (lambda fn: fn))
module("sglang.srt.utils.custom_op", register_custom_op=_unchanged)
module("sglang.srt.utils.patch_torch", register_fake_if_exists=_unchanged)
module("sglang.jit_kernel.utils", is_arch_support_pdl=_false)
module("sglang.srt.layers.deep_gemm_wrapper", ENABLE_JIT_DEEPGEMM=False)
module("sglang.srt.lora.utils", LoRABatchInfo=LoRABatchInfo)
# get_w8a8_block_fp8_configs asks torch._dynamo.is_compiling(); importing torch._dynamo imports Inductor, which imports
# triton.backends (the real Triton's), absent from the shim. torch.compiler.is_compiling answers the same without it.
sys.modules.setdefault("torch._dynamo", types.SimpleNamespace(is_compiling=torch.compiler.is_compiling))


class _Files(importlib.abc.MetaPathFinder):
    """Finds the listed SGLang files under their module names, so that they import each other as in SGLang."""
    def find_spec(self, name, path=None, target=None):
        if name in FILES:
            return importlib.util.spec_from_file_location(name, SRC / FILES[name])
        return None


sys.meta_path.insert(0, _Files())


def load(name):
    return importlib.import_module(name)


torch.manual_seed(0)
results = []
F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64
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


def cumsum0(lens, dtype=torch.int32):
    out = torch.zeros(len(lens) + 1, dtype=dtype)
    out[1:] = torch.tensor(lens, dtype=dtype).cumsum(0)
    return out


# --- LoRA ------------------------------------------------------------------------------------------------------

RANKS, SCALINGS, MAX_R = [16, 6, 0], [0.5, 2.0, 1.0], 16


def lora_batch(layout):
    """layout "segments": four requests of 5, 23, 1 and 12 contiguous tokens on adapters 0, 1, 2 (rank 0) and 1;
    "sorted": 61 tokens on random adapters, one segment per adapter through a permutation that groups them (the
    SORTED_BY_ADAPTER path); "chunked": the same grouping cut into chunks of at most 16 tokens (csgmv, BLOCK_M =
    max_len = 16). Returns the batch info and each token's adapter."""
    ranks = torch.tensor(RANKS, dtype=torch.int32)
    scalings = torch.tensor(SCALINGS, dtype=F32)
    if layout == "segments":
        lens, adapters = [5, 23, 1, 12], [0, 1, 2, 1]
        token_adapter = torch.repeat_interleave(torch.tensor(adapters), torch.tensor(lens))
        return LoRABatchInfo(False, len(lens), len(lens), cumsum0(lens), torch.tensor(adapters, dtype=torch.int32),
                             ranks, scalings, max(lens), torch.tensor(lens, dtype=torch.int32), None), token_adapter
    token_adapter = torch.multinomial(torch.tensor([0.5, 0.3, 0.2]), 61, replacement=True)
    permutation = torch.argsort(token_adapter, stable=True)
    chunk = 16 if layout == "chunked" else 1 << 30
    lens, adapters = [], []
    for a in range(len(RANKS)):
        n = int((token_adapter == a).sum())
        while n > 0:
            lens.append(min(n, chunk)); adapters.append(a); n -= lens[-1]
    return LoRABatchInfo(False, len(lens), len(lens), cumsum0(lens), torch.tensor(adapters, dtype=torch.int32),
                         ranks, scalings, 16 if layout == "chunked" else max(lens),
                         torch.tensor(lens, dtype=torch.int32), permutation), token_adapter


def lora_a_ref(x, A, token_adapter, stack):
    """x [S, K], A [L, stack * MAX_R, K]: each token's first stack * rank columns are x @ A[adapter, :stack * rank].T
    (the others are not written). Returns the reference and the mask of written entries."""
    ref = torch.zeros(x.shape[0], A.shape[1], dtype=F64)
    written = torch.zeros(x.shape[0], A.shape[1], dtype=torch.bool)
    for a, r in enumerate(RANKS):
        rows = token_adapter == a
        ref[rows, :stack * r] = x[rows].double() @ A[a, :stack * r].double().T
        written[rows, :stack * r] = True
    return ref, written


def lora_b_input(S, slices, token_adapter, dtype):
    """The rank-packed input of a B kernel, [S, slices * MAX_R]: slice i of a rank-r token is in columns
    i * r ... (i + 1) * r; the columns past slices * r are NaN."""
    x = torch.randn(S, slices * MAX_R).to(dtype)
    for a, r in enumerate(RANKS):
        x[token_adapter == a, slices * r:] = float("nan")
    return x


def lora_b_ref(x, B, token_adapter, bounds, base):
    """out[:, lo:hi] = base + scaling * x[:, i * r:(i + 1) * r] @ B[adapter, lo:hi, :r].T for slice i = (lo, hi)."""
    out = base.double().clone() if base is not None else torch.zeros(x.shape[0], B.shape[1], dtype=F64)
    for a, (r, s) in enumerate(zip(RANKS, SCALINGS)):
        rows = token_adapter == a
        for i, (lo, hi) in enumerate(bounds):
            out[rows, lo:hi] += s * (x[rows, i * r:(i + 1) * r].double() @ B[a, lo:hi, :r].double().T)
    return out


def sgemm_a(layout, stack, K, dtype=F32, tol=1e-5):
    def run():
        m = load("sglang.srt.lora.triton_ops.sgemm_lora_a")
        info, ta = lora_batch(layout)
        x = torch.randn(len(ta), K).to(dtype)
        A = (torch.randn(len(RANKS), stack * MAX_R, K) / K ** 0.5).to(dtype)
        got = m.sgemm_lora_a_fwd(x, A, info, stack_num=stack)
        ref, written = lora_a_ref(x, A, ta, stack)
        return {"out": (got[written], ref[written], tol)}
    return run


def sgemm_b(layout, N, fuse, dtype=F32, tol=1e-5):
    def run():
        m = load("sglang.srt.lora.triton_ops.sgemm_lora_b")
        info, ta = lora_batch(layout)
        x = lora_b_input(len(ta), 1, ta, dtype)
        B = torch.randn(len(RANKS), N, MAX_R).to(dtype)
        base = torch.randn(len(ta), N).to(dtype) if fuse else None
        ref = lora_b_ref(x, B, ta, [(0, N)], base)
        got = m.sgemm_lora_b_fwd(x, B, info, base_output=base.clone() if fuse else None)
        return {"out": (got, ref, tol)}
    return run


def qkv_b(layout, q_dim, kv_dim, fuse, dtype=F32, tol=1e-5):
    def run():
        m = load("sglang.srt.lora.triton_ops.qkv_lora_b")
        info, ta = lora_batch(layout)
        x = lora_b_input(len(ta), 3, ta, dtype)
        bounds = [(0, q_dim), (q_dim, q_dim + kv_dim), (q_dim + kv_dim, q_dim + 2 * kv_dim)]
        B = torch.randn(len(RANKS), q_dim + 2 * kv_dim, MAX_R).to(dtype)
        base = torch.randn(len(ta), q_dim + 2 * kv_dim).to(dtype) if fuse else None
        ref = lora_b_ref(x, B, ta, bounds, base)
        offsets = torch.tensor([0, q_dim, q_dim + kv_dim, q_dim + 2 * kv_dim], dtype=torch.int32)
        got = m.qkv_lora_b_fwd(x, B, info, offsets, max(q_dim, kv_dim), base_output=base.clone() if fuse else None)
        return {"out": (got, ref, tol)}
    return run


def gate_up_b(layout, out_dim, fuse, dtype=F32, tol=1e-5):
    def run():
        m = load("sglang.srt.lora.triton_ops.gate_up_lora_b")
        info, ta = lora_batch(layout)
        x = lora_b_input(len(ta), 2, ta, dtype)
        B = torch.randn(len(RANKS), 2 * out_dim, MAX_R).to(dtype)
        base = torch.randn(len(ta), 2 * out_dim).to(dtype) if fuse else None
        ref = lora_b_ref(x, B, ta, [(0, out_dim), (out_dim, 2 * out_dim)], base)
        got = m.gate_up_lora_b_fwd(x, B, info, out_dim, base_output=base.clone() if fuse else None)
        return {"out": (got, ref, tol)}
    return run


def csgmv_shrink(slices, K, dtype=F32, tol=1e-5):
    def run():
        m = load("sglang.srt.lora.triton_ops.chunked_sgmv_shrink")
        info, ta = lora_batch("chunked")
        x = torch.randn(len(ta), K).to(dtype)
        A = (torch.randn(len(RANKS), slices * MAX_R, K) / K ** 0.5).to(dtype)
        got = m.chunked_sgmv_lora_shrink_forward(x, A, info, slices)
        ref, written = lora_a_ref(x, A, ta, slices)
        return {"out": (got[written], ref[written], tol)}
    return run


def csgmv_expand(sizes, fuse, dtype=F32, tol=1e-5):
    def run():
        m = load("sglang.srt.lora.triton_ops.chunked_sgmv_expand")
        info, ta = lora_batch("chunked")
        x = lora_b_input(len(ta), len(sizes), ta, dtype)
        offs = [0]
        for s in sizes:
            offs.append(offs[-1] + s)
        B = torch.randn(len(RANKS), offs[-1], MAX_R).to(dtype)
        base = torch.randn(len(ta), offs[-1]).to(dtype) if fuse else None
        ref = lora_b_ref(x, B, ta, list(zip(offs, offs[1:])), base)
        got = m.chunked_sgmv_lora_expand_forward(x, B, info, torch.tensor(offs, dtype=torch.int32), max(sizes),
                                                 base.clone() if fuse else None)
        return {"out": (got, ref, tol)}
    return run


def lora_layer(backend, q_dim, kv_dim, K, tol=1e-4):
    """A QKV projection's LoRA as SGLang runs it: A (stack 3) into the rank-packed intermediate, then B added
    into the base output; out = base + scaling * [x A_q^T B_q^T, x A_k^T B_k^T, x A_v^T B_v^T]."""
    def run():
        info, ta = lora_batch("segments" if backend == "triton" else "chunked")
        x = torch.randn(len(ta), K)
        A = torch.randn(len(RANKS), 3 * MAX_R, K) / K ** 0.5
        B = torch.randn(len(RANKS), q_dim + 2 * kv_dim, MAX_R)
        base = torch.randn(len(ta), q_dim + 2 * kv_dim)
        offs = [0, q_dim, q_dim + kv_dim, q_dim + 2 * kv_dim]
        if backend == "triton":
            mid = load("sglang.srt.lora.triton_ops.sgemm_lora_a").sgemm_lora_a_fwd(x, A, info, stack_num=3)
            got = load("sglang.srt.lora.triton_ops.qkv_lora_b").qkv_lora_b_fwd(
                mid, B, info, torch.tensor(offs, dtype=torch.int32), max(q_dim, kv_dim), base_output=base.clone())
        else:
            mid = load("sglang.srt.lora.triton_ops.chunked_sgmv_shrink").chunked_sgmv_lora_shrink_forward(x, A, info, 3)
            got = load("sglang.srt.lora.triton_ops.chunked_sgmv_expand").chunked_sgmv_lora_expand_forward(
                mid, B, info, torch.tensor(offs, dtype=torch.int32), max(q_dim, kv_dim), base.clone())
        ref = base.double().clone()
        for a, (r, s) in enumerate(zip(RANKS, SCALINGS)):
            rows = ta == a
            for i, (lo, hi) in enumerate(zip(offs, offs[1:])):
                ref[rows, lo:hi] += s * (x[rows].double() @ A[a, i * r:(i + 1) * r].double().T
                                         @ B[a, lo:hi, :r].double().T)
        return {"out": (got, ref, tol)}
    return run


def embedding_a(extra, dtype=F32, tol=0.0):
    def run():
        m = load("sglang.srt.lora.triton_ops.embedding_lora_a")
        info, ta = lora_batch("segments")
        vocab, n_extra = 300, 5
        ids = torch.randint(0, vocab + (n_extra if extra else 0), (len(ta),))
        W = torch.randn(len(RANKS), MAX_R, vocab).to(dtype)
        E = torch.randn(len(RANKS), n_extra, MAX_R).to(dtype) if extra else None
        got = m.embedding_lora_a_fwd(ids, W, info, vocab, extra_embeddings=E)
        ref = torch.zeros(len(ta), MAX_R, dtype=F64)
        for t in range(len(ta)):
            a, i = int(ta[t]), int(ids[t])
            r = RANKS[a]
            ref[t, :r] = (E[a, i - vocab, :r] if i >= vocab else W[a, :r, i]).double()
        return {"out": (got, ref, tol)}
    return run


def chunked_embedding_a():
    m = load("sglang.srt.lora.triton_ops.chunked_embedding_lora_a")
    info, ta = lora_batch("chunked")
    vocab = 300
    ids = torch.randint(0, vocab, (len(ta),))
    W = torch.randn(len(RANKS), MAX_R, vocab)
    got = m.chunked_embedding_lora_a_forward(ids, W, info, vocab)
    ref = torch.zeros(len(ta), MAX_R, dtype=F64)
    for t in range(len(ta)):
        r = RANKS[int(ta[t])]
        ref[t, :r] = W[int(ta[t]), :r, int(ids[t])].double()
    return {"out": (got, ref, 0.0)}


def kv_b_absorbed(side, layout, tol=1e-4):
    """kv_b_proj's LoRA on the absorbed-MLA path (kv_b_lora_absorbed.py), both steps of one side. With
    A [L, rank, kv_lora_rank] and B [L, H * (qk_nope + v_head), rank] (head h's rows: qk_nope K-half rows, then
    v_head V-half rows): q side base[t, h] += scaling * q_nope[t, h] @ B_k[h] @ A; v side base[t, h] +=
    scaling * attn[t, h] @ A^T @ B_v[h]^T, over each adapter's first `rank` columns / rows."""
    def run():
        m = load("sglang.srt.lora.triton_ops.kv_b_lora_absorbed")
        info, ta = lora_batch(layout)
        S, H, nope, vh, kvr = len(ta), 3, 40, 56, 136
        A = torch.randn(len(RANKS), MAX_R, kvr) / kvr ** 0.5
        B = torch.randn(len(RANKS), H * (nope + vh), MAX_R) / MAX_R ** 0.5
        Bh = B.double().view(len(RANKS), H, nope + vh, MAX_R)
        if side == "q":
            x = torch.randn(S, H, nope); base = torch.randn(S, H, kvr)
        else:
            x = torch.randn(S, H, kvr); base = torch.randn(S, H, vh)
        ref = base.double().clone()
        for a, (r, s) in enumerate(zip(RANKS, SCALINGS)):
            rows = ta == a
            if side == "q":
                ref[rows] += s * torch.einsum("thi,hir,rk->thk", x[rows].double(), Bh[a, :, :nope, :r],
                                              A[a, :r].double())
            else:
                ref[rows] += s * torch.einsum("thk,rk,hjr->thj", x[rows].double(), A[a, :r].double(),
                                              Bh[a, :, nope:, :r])
        got = base.clone()
        if side == "q":
            m.step_b_q_fwd(m.step_a_q_fwd(x, B, info, nope + vh), A, info, got)
        else:
            m.step_b_v_fwd(m.step_a_v_fwd(x, A, info), B, info, got, nope, vh)
        return {"base": (got, ref, tol)}
    return run


check("sgemm_lora_a stack 1 K=300 segments", sgemm_a("segments", 1, 300))
check("sgemm_lora_a stack 3 K=200 segments", sgemm_a("segments", 3, 200))
check("sgemm_lora_a stack 3 K=300 sorted by adapter", sgemm_a("sorted", 3, 300))
check("sgemm_lora_a stack 2 K=200 bf16", sgemm_a("segments", 2, 200, BF16, 2e-2))
check("sgemm_lora_b N=300 segments", sgemm_b("segments", 300, False))
check("sgemm_lora_b N=300 sorted by adapter, fused add", sgemm_b("sorted", 300, True))
check("sgemm_lora_b N=136 bf16 fused add", sgemm_b("segments", 136, True, BF16, 2e-2))
check("qkv_lora_b q=200 kv=72 segments", qkv_b("segments", 200, 72, False))
check("qkv_lora_b q=200 kv=72 sorted by adapter, fused add", qkv_b("sorted", 200, 72, True))
check("qkv_lora_b q=96 kv=80 bf16 fused add", qkv_b("segments", 96, 80, True, BF16, 2e-2))
check("gate_up_lora_b out=136 segments", gate_up_b("segments", 136, False))
check("gate_up_lora_b out=136 sorted by adapter, fused add", gate_up_b("sorted", 136, True))
check("chunked_sgmv_shrink slices 1 K=300", csgmv_shrink(1, 300))
check("chunked_sgmv_shrink slices 3 K=200", csgmv_shrink(3, 200))
check("chunked_sgmv_shrink slices 2 K=200 bf16", csgmv_shrink(2, 200, BF16, 2e-2))
check("chunked_sgmv_expand slices 1 out=200", csgmv_expand([200], False))
check("chunked_sgmv_expand qkv 200/72/72 fused add", csgmv_expand([200, 72, 72], True))
check("chunked_sgmv_expand gate_up 136/136 bf16 fused add", csgmv_expand([136, 136], True, BF16, 2e-2))
check("LoRA qkv layer: sgemm_lora_a -> qkv_lora_b", lora_layer("triton", 200, 72, 300))
check("LoRA qkv layer: csgmv shrink -> expand", lora_layer("csgmv", 200, 72, 300))
check("embedding_lora_a vocab 300", embedding_a(False))
check("embedding_lora_a vocab 300 + 5 extra tokens", embedding_a(True))
check("chunked_embedding_lora_a vocab 300", chunked_embedding_a)
check("kv_b_lora_absorbed q side (step_a_q -> step_b_q) segments", kv_b_absorbed("q", "segments"))
check("kv_b_lora_absorbed v side (step_a_v -> step_b_v) segments", kv_b_absorbed("v", "segments"))
check("kv_b_lora_absorbed q side sorted by adapter", kv_b_absorbed("q", "sorted"))
check("kv_b_lora_absorbed v side sorted by adapter", kv_b_absorbed("v", "sorted"))


# --- attention -------------------------------------------------------------------------------------------------

def attention_ref(q, k, v, scale, allowed=None, softcap=0.0, sink=None, qscale=None):
    """q [Tq, Hq, D], k [Tk, Hkv, D], v [Tk, Hkv, Dv] in float64; allowed [Tq, Tk] (None: every key); sink [Hq]: a
    logit per head that takes part in the softmax without a value; qscale [Tq]: a factor on each query's logits
    after the cap. Returns the output [Tq, Hq, Dv] and the log-sum-exp [Tq, Hq]."""
    Hq, Hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(Hq // Hkv, 1); v = v.repeat_interleave(Hq // Hkv, 1)
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if qscale is not None:
        s = s * qscale[None, :, None]
    if allowed is not None:
        s = s.masked_fill(~allowed[None], float("-inf"))
    if sink is not None:
        s = torch.cat([s, sink.double()[:, None, None].expand(Hq, q.shape[0], 1)], -1)
    lse = torch.logsumexp(s, -1)
    p = torch.softmax(s, -1)[..., :k.shape[0]]
    return torch.einsum("hqk,khd->qhd", p, v), lse.T


def paged_slots(lens, page):
    """Token slots of sequences of the given lengths in a paged pool: each sequence's pages are distinct random
    pages, slot = page * page_size + offset. Returns the slots per sequence and the number of pages."""
    need = [-(-L // page) for L in lens]
    total = sum(need) + 7
    order = torch.randperm(total)
    slots, at = [], 0
    for L, n in zip(lens, need):
        pages = order[at:at + n]; at += n
        j = torch.arange(L)
        slots.append(pages[j // page] * page + j % page)
    return slots, total


def extend_case(prefix, ext, Hq, Hkv, Dq, Dv, page=1, dtype=F32, causal=True, window=-1, softcap=0.0, sinks=False,
                custom_mask=False, lse=False, kv_scales=(1.0, 1.0), xai=-1, unified=False, verify=False, tol=1e-5):
    """Sequences with cached prefixes of `prefix` tokens and `ext` new tokens each. The extend kernel reads the
    prefix from the paged cache and the new tokens' k / v from k_extend / v_extend; the unified kernel reads both
    from the cache (the new tokens written there first) through build_unified_kv_indices's indices. Query i of a
    sequence sits at position prefix + i: causal keeps keys up to it, the window keeps keys j with
    position <= j + window, the custom mask (a random subset of the causal mask that keeps the diagonal) replaces
    the causal mask, also over the prefix; k_scale / v_scale scale the cached prefix (extend kernel) or every key
    (unified); xai scales query logits by log2(position) / log2(xai) past position xai. verify: the same problem
    through verify_splitkv_fwd (EAGLE verify, equal extension lengths), which must take it."""
    def run():
        ea = load("sglang.srt.layers.attention.triton_ops.extend_attention")
        B = len(prefix)
        total = [p + e for p, e in zip(prefix, ext)]
        slots, pages = paged_slots(total, page)
        k_cache = torch.randn(pages * page, Hkv, Dq).to(dtype)
        v_cache = torch.randn(pages * page, Hkv, Dv).to(dtype)
        q = torch.randn(sum(ext), Hq, Dq).to(dtype)
        k_ext = torch.randn(sum(ext), Hkv, Dq).to(dtype); v_ext = torch.randn(sum(ext), Hkv, Dv).to(dtype)
        qo = cumsum0(ext); kv_indptr = cumsum0(prefix)
        kv_indices = torch.cat([s[:p] for s, p in zip(slots, prefix)]).to(torch.int64)
        sink = torch.randn(Hq) if sinks else None
        masks = []
        for p, e in zip(prefix, ext):
            m = torch.rand(e, p + e) < 0.6
            m[:, p:] &= torch.ones(e, e, dtype=torch.bool).tril()
            m[torch.arange(e), p + torch.arange(e)] = True
            masks.append(m)
        cmask = torch.cat([m.flatten() for m in masks]) if custom_mask else None
        mask_indptr = cumsum0([m.numel() for m in masks]) if custom_mask else None
        k_scale, v_scale = kv_scales
        o = torch.empty(sum(ext), Hq, Dv, dtype=dtype)
        lse_t = torch.empty(sum(ext), Hq, dtype=F32) if lse else None
        kb = k_cache.view(pages, page, Hkv, Dq) if page > 1 else k_cache
        vb = v_cache.view(pages, page, Hkv, Dv) if page > 1 else v_cache
        if unified:
            ext_slots = torch.cat([s[p:] for s, p in zip(slots, prefix)])
            k_cache[ext_slots] = k_ext; v_cache[ext_slots] = v_ext
            indptr, indices, prefix_lens = ea.build_unified_kv_indices(
                kv_indptr, kv_indices, qo[:B], torch.tensor(ext, dtype=torch.int32), ext_slots.to(torch.int64), B)
            ea.extend_attention_fwd_unified(q, o, kb, vb, k_scale, v_scale, qo, indptr, indices, prefix_lens,
                                            max(ext), logit_cap=softcap, is_causal=causal,
                                            sliding_window_size=window, sinks=sink, page_size=page)
        elif verify:
            vs = load("sglang.srt.layers.attention.triton_ops.verify_splitkv")
            taken = vs.verify_splitkv_fwd(q, k_ext, v_ext, o, kb, vb, qo, kv_indptr, kv_indices, None, causal, None,
                                          max(ext), k_scale, v_scale)
            assert taken, "verify_splitkv_fwd declined the case"
        else:
            ea.extend_attention_fwd(q, k_ext, v_ext, o, kb, vb, qo, kv_indptr, kv_indices, cmask, causal, mask_indptr,
                                    max(ext), k_scale, v_scale, logit_cap=softcap, skip_prefix_custom_mask=False,
                                    sliding_window_size=window, sinks=sink, xai_temperature_len=xai, lse_extend=lse_t,
                                    page_size=page)
        o_ref = torch.empty(o.shape, dtype=F64); lse_ref = torch.empty(sum(ext), Hq, dtype=F64)
        for b, (p, e) in enumerate(zip(prefix, ext)):
            sl = slice(int(qo[b]), int(qo[b + 1]))
            kk = torch.cat([k_cache[slots[b][:p]].double() * k_scale, k_ext[sl].double() * (k_scale if unified else 1)])
            vv = torch.cat([v_cache[slots[b][:p]].double() * v_scale, v_ext[sl].double() * (v_scale if unified else 1)])
            qpos = p + torch.arange(e)[:, None]; kpos = torch.arange(p + e)[None, :]
            allowed = masks[b] if custom_mask else (kpos <= qpos) if causal else torch.ones(e, p + e, dtype=torch.bool)
            if window > 0:
                allowed = allowed & (qpos <= kpos + window)
            qscale = None
            if xai > 0:
                pos = (p + torch.arange(e)).double()
                qscale = torch.where(pos > xai, torch.log2(pos.clamp(min=1)) / math.log2(xai), torch.ones_like(pos))
            ob, lb = attention_ref(q[sl].double(), kk, vv, Dq ** -0.5, allowed, softcap, sink, qscale)
            o_ref[sl], lse_ref[sl] = ob, lb
        out = {"o": (o, o_ref, tol)}
        if lse:
            out["lse"] = (lse_t, lse_ref, tol)
        return out
    return run


PREFIX, EXT = [0, 37, 90], [13, 70, 5]
check("extend_attention GQA 8/2 D=80 page 1 causal", extend_case(PREFIX, EXT, 8, 2, 80, 80))
check("extend_attention GQA 8/2 D=80 page 16 (4-D buffer)", extend_case(PREFIX, EXT, 8, 2, 80, 80, page=16))
check("extend_attention MHA 4/4 D=96 non-causal + LSE", extend_case(PREFIX, EXT, 4, 4, 96, 96, causal=False, lse=True))
check("extend_attention sliding window 24 + sinks", extend_case(PREFIX, EXT, 8, 2, 64, 64, window=24, sinks=True))
check("extend_attention logit cap 30 + prefix k/v scales", extend_case(PREFIX, EXT, 8, 2, 64, 64, softcap=30.0,
                                                                       kv_scales=(0.5, 2.0)))
check("extend_attention custom mask (prefix too) + LSE", extend_case(PREFIX, EXT, 8, 2, 64, 64, custom_mask=True,
                                                                     lse=True))
check("extend_attention xai temperature 20", extend_case(PREFIX, EXT, 8, 2, 64, 64, xai=20))
check("extend_attention MLA split 192 (128 + 64 rope), v 128", extend_case(PREFIX, EXT, 4, 1, 192, 128))
check("extend_attention GQA 8/2 D=80 page 16 bf16", extend_case(PREFIX, EXT, 8, 2, 80, 80, page=16, dtype=BF16,
                                                                tol=2e-2))
# verify_splitkv's kernels load and store whole next_power_of_2(head_dim) rows without a head-dim mask (its scratch
# rows are v_head_dim long), so they take power-of-two head dims only: D=80 writes past its scratch buffer. Its
# combine stage also reads the partial outputs of every split, those of empty splits unwritten (torch.empty scratch),
# and weighs them by 0: garbage NaN there makes the output NaN. So every prefix here is long enough for each of the
# 4 splits to hold keys (3 * ceil32(ceil(L / 4)) < L).
check("verify_splitkv_fwd GQA 8/2 D=128, 4 draft tokens, prefix k/v scales",
      extend_case([200, 300, 250], [4, 4, 4], 8, 2, 128, 128, kv_scales=(0.5, 2.0), verify=True))
check("verify_splitkv_fwd MHA 4/4 D=64 bf16, 3 draft tokens",
      extend_case([230, 300], [3, 3], 4, 4, 64, 64, dtype=BF16, verify=True, tol=2e-2))
check("extend_attention_fwd_unified GQA 8/2 page 1", extend_case(PREFIX, EXT, 8, 2, 80, 80, unified=True))
check("extend_attention_fwd_unified page 16 window 24 + sinks + scales",
      extend_case(PREFIX, EXT, 8, 2, 64, 64, page=16, window=24, sinks=True, kv_scales=(0.5, 2.0), unified=True))


def prefill_case(Hq, Hkv, D, causal, dtype=F32, tol=1e-5):
    def run():
        pa = load("sglang.srt.layers.attention.triton_ops.prefill_attention")
        lens = [13, 70, 1, 40]
        q = torch.randn(sum(lens), Hq, D).to(dtype)
        k = torch.randn(sum(lens), Hkv, D).to(dtype); v = torch.randn(sum(lens), Hkv, D).to(dtype)
        o = torch.empty_like(q)
        start = cumsum0(lens)
        pa.context_attention_fwd(q, k, v, o, start[:-1].contiguous(), torch.tensor(lens, dtype=torch.int32), max(lens),
                                 is_causal=causal)
        ref = torch.empty(q.shape, dtype=F64)
        for b, L in enumerate(lens):
            sl = slice(int(start[b]), int(start[b + 1]))
            allowed = torch.ones(L, L, dtype=torch.bool).tril() if causal else None
            ref[sl] = attention_ref(q[sl].double(), k[sl].double(), v[sl].double(), D ** -0.5, allowed)[0]
        return {"o": (o, ref, tol)}
    return run


check("context_attention_fwd GQA 8/2 D=80 causal", prefill_case(8, 2, 80, True))
check("context_attention_fwd MHA 4/4 D=96 non-causal", prefill_case(4, 4, 96, False))
check("context_attention_fwd GQA 8/2 D=64 causal bf16", prefill_case(8, 2, 64, True, BF16, 2e-2))


def merge_case(dtype=F32, tol=1e-5):
    def run():
        ms = load("sglang.srt.layers.attention.triton_ops.merge_state")
        T, H, D = 37, 6, 80
        pv = torch.randn(T, H, D).to(dtype); sv = torch.randn(T, H, D).to(dtype)
        pl = torch.randn(T, H) * 3; sl = torch.randn(T, H) * 3
        pl[::5, 0] = float("inf"); sl[1::7, 1] = float("inf")  # +inf: an empty part, taken as -inf
        out, out_lse = ms.merge_state_triton(pv, pl, sv, sl)
        pe = torch.where(pl.isinf(), float("-inf"), pl).double()
        se = torch.where(sl.isinf(), float("-inf"), sl).double()
        lse = torch.logaddexp(pe, se)
        ref = (pv.double() * torch.exp(pe - lse)[..., None] + sv.double() * torch.exp(se - lse)[..., None])
        return {"out": (out, ref, tol), "lse": (out_lse, lse, 1e-6)}
    return run


check("merge_state_triton H=6 D=80 (+inf LSEs)", merge_case())
check("merge_state_triton bf16", merge_case(BF16, 2e-2))


def decode_case(Hq, Hkv, Dk, Dv, page, dtype=F32, softcap=0.0, sinks=False, scales=(1.0, 1.0), mla=False, pdl=False,
                tol=1e-5):
    """One query per request against its whole cache (ragged kv_indptr / kv_indices), split-KV with per-request
    split counts; sm_scale * k_scale on the logits and v_scale on the output. mla: V is K's first Dv channels.
    pdl: use_pdl=True (gdc_wait / gdc_launch_dependents in the kernels and launch_pdl at launch, as on sm90)."""
    def run():
        da = load("sglang.srt.layers.attention.triton_ops.decode_attention")
        seq_lens, splits, max_splits = [37, 150, 1, 83], [4, 3, 1, 2], 4
        B = len(seq_lens)
        slots, pages = paged_slots(seq_lens, page)
        k_cache = torch.randn(pages * page, Hkv, Dk).to(dtype)
        v_cache = k_cache[..., :Dv] if mla else torch.randn(pages * page, Hkv, Dv).to(dtype)
        kb = k_cache.view(pages, page, Hkv, Dk) if page > 1 else k_cache
        vb = kb[..., :Dv] if mla else (v_cache.view(pages, page, Hkv, Dv) if page > 1 else v_cache)
        q = torch.randn(B, Hq, Dk).to(dtype)
        o = torch.empty(B, Hq, Dv, dtype=dtype)
        logits = torch.empty(B, Hq, max_splits, Dv, dtype=F32); lse = torch.empty(B, Hq, max_splits, dtype=F32)
        sink = torch.randn(Hq) if sinks else None
        k_scale, v_scale = scales
        da.decode_attention_fwd(q, kb, vb, o, cumsum0(seq_lens), torch.cat(slots).to(torch.int64), logits, lse,
                                torch.tensor(splits, dtype=torch.int32), max_splits, Dk ** -0.5, k_scale, v_scale,
                                logit_cap=softcap, sinks=sink, has_mla=mla, use_pdl=pdl, page_size=page)
        ref = torch.empty(o.shape, dtype=F64)
        for b in range(B):
            ob, _ = attention_ref(q[b:b + 1].double(), k_cache[slots[b]].double() * k_scale,
                                  v_cache[slots[b]].double() * v_scale, Dk ** -0.5, None, softcap, sink)
            ref[b] = ob[0]
        return {"o": (o, ref, tol)}
    return run


check("decode_attention MHA 6/6 D=80 page 1 (stage1 + stage2)", decode_case(6, 6, 80, 80, 1))
check("decode_attention MHA 6/6 D=80 page 16 (4-D buffer)", decode_case(6, 6, 80, 80, 16))
check("decode_attention GQA 8/2 Dk=96 Dv=80 page 16 (grouped)", decode_case(8, 2, 96, 80, 16))
check("decode_attention GQA 12/4 logit cap 30 + sinks + k/v scales",
      decode_case(12, 4, 64, 64, 1, softcap=30.0, sinks=True, scales=(0.5, 2.0)))
check("decode_attention MLA 16/1 Dk=288 (256 + 32) Dv=256", decode_case(16, 1, 288, 256, 1, mla=True))
check("decode_attention GQA 8/2 D=80 page 16 bf16", decode_case(8, 2, 80, 80, 16, BF16, tol=2e-2))
check("decode_attention GQA 8/2 D=80 use_pdl", decode_case(8, 2, 80, 80, 1, pdl=True))


def req_to_token_table(lens, page, width):
    """A req_to_token pool [6, width] whose rows 1, 4 and 2 hold paged slots (slot = page * page_size + offset)
    of sequences of the given lengths; the other entries are -1."""
    table = torch.full((6, width), -1, dtype=torch.int32)
    rows = torch.tensor([1, 4, 2][:len(lens)], dtype=torch.int64)
    slots, _ = paged_slots(lens, page)
    for r, s in zip(rows.tolist(), slots):
        table[r, :len(s)] = s.to(torch.int32)
    return table, rows, slots


def kv_indices_case(kind):
    """kv_indices.py's index builders, launched as SGLang's attention backends launch them."""
    def run():
        ki = load("sglang.srt.layers.attention.triton_ops.kv_indices")
        lens = [37, 600, 130]
        table, rows, slots = req_to_token_table(lens, 64, 700)
        if kind == "flashinfer":
            starts = torch.tensor([0, 20, 5], dtype=torch.int32)
            counts = [L - int(s) for L, s in zip(lens, starts)]
            indptr = cumsum0(counts)
            out = torch.full((int(indptr[-1]),), -7, dtype=torch.int32)
            ki.create_flashinfer_kv_indices_triton[(len(lens),)](
                table, rows, torch.tensor(counts, dtype=torch.int32), indptr, starts, out, table.stride(0))
            ref = torch.cat([s[int(st):] for s, st in zip(slots, starts)])
            out0 = torch.full((sum(lens),), -7, dtype=torch.int32)
            ki.create_flashinfer_kv_indices_triton[(len(lens),)](
                table, rows, torch.tensor(lens, dtype=torch.int32), cumsum0(lens), None, out0, table.stride(0))
            return {"with kv_start_idx": (out, ref, 0.0), "without": (out0, torch.cat(slots), 0.0)}
        if kind == "flashmla":
            width = 12  # pages per row of block_kv_indices (max_seqlen_pad)
            out = torch.full((len(lens), width), -1, dtype=torch.int32)
            ki.create_flashmla_kv_indices_triton[(len(lens), ki.get_num_kv_index_blocks_flashmla(width, 64))](
                table, rows, torch.tensor(lens, dtype=torch.int32), None, out, table.stride(0), width)
            ref = torch.full((len(lens), width), -1, dtype=torch.int32)
            for b, s in enumerate(slots):
                pages = s[::64] // 64
                ref[b, :len(pages)] = pages.to(torch.int32)
            return {"page table": (out, ref, 0.0)}
        starts = torch.tensor([0, 256, 64], dtype=torch.int32)
        clens = [min(128, L - int(st)) for L, st in zip(lens, starts)]
        cu = cumsum0(clens)
        out = torch.full((int(cu[-1]),), -7, dtype=torch.int32)
        ki.create_chunked_prefix_cache_kv_indices[(len(lens),)](
            table, rows, starts, torch.tensor(clens, dtype=torch.int32), cu, out, table.shape[1])
        ref = torch.cat([s[int(st):int(st) + c] for s, st, c in zip(slots, starts, clens)])
        return {"chunk indices": (out, ref, 0.0)}
    return run


def pad_case():
    """pad.py: pad_sequence_with_mask (ragged rows into [B, max_len, hidden] with a validity mask), and
    pad_draft_extend_query / unpad_draft_extend_output ([tokens, H, D] <-> [B, max_len, H, D])."""
    pd = load("sglang.srt.layers.attention.triton_ops.pad")
    lens = [5, 1, 13, 9]
    off = cumsum0(lens)
    x = torch.randn(sum(lens), 200)
    B, padded, mask = pd.pad_sequence_with_mask(x, off[:-1].contiguous(), torch.tensor(lens, dtype=torch.int32), 13)
    ref = torch.zeros(4, 13, 200, dtype=F64); ref_mask = torch.zeros(4 * 13, dtype=F64)
    for b, L in enumerate(lens):
        ref[b, :L] = x[int(off[b]):int(off[b + 1])].double(); ref_mask[b * 13:b * 13 + L] = 1
    q = torch.randn(sum(lens), 6, 80)
    pq = torch.zeros(4, 13, 6, 80)
    pd.pad_draft_extend_query(q, pq, torch.tensor(lens, dtype=torch.int32), off)
    ref_q = torch.zeros(4, 13, 6, 80, dtype=F64)
    for b, L in enumerate(lens):
        ref_q[b, :L] = q[int(off[b]):int(off[b + 1])].double()
    back = pd.unpad_draft_extend_output(pq, off, torch.tensor(lens, dtype=torch.int32), sum(lens))
    return {"padded": (padded, ref, 0.0), "mask": (mask.double(), ref_mask, 0.0), "padded q": (pq, ref_q, 0.0),
            "unpadded": (back, q.double(), 0.0)}


check("create_flashinfer_kv_indices_triton (with / without kv_start_idx)", kv_indices_case("flashinfer"))
check("create_flashmla_kv_indices_triton page 64", kv_indices_case("flashmla"))
check("create_chunked_prefix_cache_kv_indices", kv_indices_case("chunked"))
check("pad_sequence_with_mask + pad/unpad_draft_extend", pad_case)


# --- quantization ----------------------------------------------------------------------------------------------

def group_quant_check(x, q, s, group, qmax, tol_q):
    """Scales: max(absmax of the group, eps) / qmax; the quantized values q against x / scale (in [-qmax, qmax]),
    within half a float8 step at the top of the range (tol 0.04) or one int8 step (truncation)."""
    g = x.double().view(*x.shape[:-1], -1, group)
    s_ref = g.abs().amax(-1).clamp(min=1e-10) / qmax
    return {"scales": (s, s_ref, 1e-6), "quantized": (q.double().view(g.shape), g / s_ref[..., None], tol_q)}


def group_quant(dtype_in, dst, group, K, column_major=False):
    def run():
        fk = load("sglang.srt.layers.quantization.fp8_kernel")
        x = (torch.randn(37, K) * torch.rand(37, 1) * 4).to(dtype_in)
        if dst == FP8:
            q, s = fk.per_token_group_quant_fp8(x, group, column_major_scales=column_major,
                                                scale_tma_aligned=column_major)
        else:
            q, s = fk.per_token_group_quant_8bit(x, group, dst, column_major_scales=column_major,
                                                 scale_tma_aligned=column_major)
        assert q.dtype == dst, q.dtype
        qmax = 448.0 if dst == FP8 else 127.0
        return group_quant_check(x, q, s, group, qmax, 0.04 if dst == FP8 else 1.01 / 127)
    return run


def static_fp8():
    fk = load("sglang.srt.layers.quantization.fp8_kernel")
    x = torch.randn(37, 200) * 3
    s = torch.tensor([0.02])
    q, s_rep = fk.static_quant_fp8(x, s, repeat_scale=True)
    ref = (x.double() / 0.02).clamp(-448, 448)
    return {"quantized": (q.double(), ref, 0.04), "repeated scale": (s_rep, torch.full((37, 1), 0.02), 0)}


def mla_fp8():
    fk = load("sglang.srt.layers.quantization.fp8_kernel")
    x = (torch.randn(37, 6, 80) * 2).transpose(0, 1)  # [heads, tokens, head_size], strided as in MLA absorption
    s_out = torch.zeros(1)
    q, s = fk.per_tensor_quant_mla_fp8(x, s_out)
    s_ref = x.double().abs().max() / 448.0
    return {"scale": (s, s_ref.reshape(1), 1e-6), "quantized": (q.double(), x.double() / s_ref, 0.04)}


def block_matmul(kind, out_dtype, tol):
    """C = (A * As) (B * Bs)^T with A [M, K] per-token-group scaled (groups of 128 along K) and B [N, K] per
    128 x 128 block scaled."""
    def run():
        M, N, K, blk = 37, 200, 300, 128
        if kind == "fp8":
            fn = load("sglang.srt.layers.quantization.fp8_kernel").w8a8_block_fp8_matmul_triton
            A = (torch.randn(M, K) * 50).clamp(-448, 448).to(FP8)
            Bw = (torch.randn(N, K) * 50).clamp(-448, 448).to(FP8)
        else:
            fn = load("sglang.srt.layers.quantization.int8_kernel").w8a8_block_int8_matmul
            A = torch.randint(-127, 128, (M, K), dtype=torch.int8)
            Bw = torch.randint(-127, 128, (N, K), dtype=torch.int8)
        As = torch.rand(M, -(-K // blk)) * 1e-2 + 1e-3
        Bs = torch.rand(-(-N // blk), -(-K // blk)) * 1e-2 + 1e-3
        C = fn(A, Bw, As, Bs, [blk, blk], output_dtype=out_dtype)
        Ad = A.double() * As.double().repeat_interleave(blk, 1)[:, :K]
        Bd = Bw.double() * Bs.double().repeat_interleave(blk, 0)[:N].repeat_interleave(blk, 1)[:, :K]
        return {"C": (C, Ad @ Bd.T, tol)}
    return run


def group_transpose():
    fk = load("sglang.srt.layers.quantization.fp8_kernel")
    offsets = [0, 10, 10, 37, 53]
    a = torch.randn(53, 20)
    got = fk.per_group_transpose(a, torch.tensor(offsets, dtype=torch.int32))
    ref = torch.empty(53 * 20, dtype=F64)
    for lo, hi in zip(offsets, offsets[1:]):
        ref[lo * 20:hi * 20] = a[lo:hi].double().T.flatten()
    return {"out": (got.flatten(), ref, 0)}


def scaled_mm(kind, per_row, bias, out_dtype, tol):
    """C = scale_a * (A @ B) * scale_b^T (+ bias) with A [M, K], B [K, N] (a transposed view of [N, K])."""
    def run():
        fk = load("sglang.srt.layers.quantization.fp8_kernel")
        M, N, K = 37, 200, 512
        if kind == "int8":
            A = torch.randint(-127, 128, (M, K), dtype=torch.int8)
            Bw = torch.randint(-127, 128, (N, K), dtype=torch.int8).T
        else:
            A = (torch.randn(M, K) * 20).to(FP8); Bw = (torch.randn(N, K) * 20).to(FP8).T
        sa = torch.rand(M, 1) * 1e-2 + 1e-3 if per_row else torch.tensor([[3e-3]])
        sb = torch.rand(N, 1) * 1e-2 + 1e-3 if per_row else torch.tensor([[2e-3]])
        b = torch.randn(N).to(out_dtype) if bias else None
        C = fk.triton_scaled_mm(A, Bw, sa, sb, out_dtype, bias=b)
        ref = (A.double() @ Bw.double()) * sa.double() * sb.double().T
        if bias:
            ref = ref + b.double()
        return {"C": (C, ref, tol)}
    return run


def token_quant_int8():
    ik = load("sglang.srt.layers.quantization.int8_kernel")
    x = torch.randn(37, 200) * torch.rand(37, 1) * 4
    q, s, xsum = ik.per_token_quant_int8(x, cal_sum=True)
    absmax = x.double().abs().amax(-1, keepdim=True)
    v = x.double() * 127 / absmax
    q_ref = torch.sign(v) * torch.floor(v.abs() + 0.5)  # libdevice round: halves away from zero
    return {"q": (q, q_ref, 1.01 / 127), "scales": (s, absmax / 127, 1e-6),
            "row sums": (xsum, x.double().sum(-1), 1e-5)}


def group_quant_int8():
    ik = load("sglang.srt.layers.quantization.int8_kernel")
    x = torch.randn(37, 384) * torch.rand(37, 1) * 4
    q, s = ik.per_token_group_quant_int8(x, 128)
    return group_quant_check(x, q, s, 128, 127.0, 1.01 / 127)


check("per_token_group_quant_fp8 bf16 group 128", group_quant(BF16, FP8, 128, 384))
check("per_token_group_quant_fp8 f32 group 64 K=320", group_quant(F32, FP8, 64, 320))
check("per_token_group_quant_fp8 column-major TMA-aligned scales", group_quant(BF16, FP8, 128, 384, True))
check("per_token_group_quant_8bit int8 group 128", group_quant(F32, torch.int8, 128, 384))
check("static_quant_fp8 repeat_scale", static_fp8)
check("per_tensor_quant_mla_fp8 (atomic_max) strided [6, 37, 80]", mla_fp8)
check("w8a8_block_fp8_matmul_triton 37x200x300 -> f32", block_matmul("fp8", F32, 1e-5))
check("w8a8_block_fp8_matmul_triton 37x200x300 -> bf16", block_matmul("fp8", BF16, 2e-2))
check("per_group_transpose 4 experts (one empty)", group_transpose)
check("triton_scaled_mm int8 per-token/channel + bias -> f32", scaled_mm("int8", True, True, F32, 1e-5))
check("triton_scaled_mm int8 scalar scales -> bf16", scaled_mm("int8", False, False, BF16, 2e-2))
check("triton_scaled_mm fp8 per-token/channel + bias -> bf16", scaled_mm("fp8", True, True, BF16, 2e-2))
check("per_token_quant_int8 + row sums", token_quant_int8)
check("per_token_group_quant_int8 group 128", group_quant_int8)
check("w8a8_block_int8_matmul 37x200x300 -> f32", block_matmul("int8", F32, 1e-5))


# --- hashes (integer arithmetic) -------------------------------------------------------------------------------

M32 = 0xFFFFFFFF


def rotl32(x, r):
    return ((x << r) | (x >> (32 - r))) & M32


def fmix32(h):
    h ^= h >> 16; h = (h * 0x85EBCA6B) & M32; h ^= h >> 13; h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def murmur3_32(words, seed=0):
    """MurmurHash3_x86_32 of whole 32-bit little-endian blocks."""
    h = seed
    for k in words:
        k = (k * 0xCC9E2D51) & M32; k = rotl32(k, 15); k = (k * 0x1B873593) & M32
        h ^= k; h = rotl32(h, 13); h = (h * 5 + 0xE6546B64) & M32
    return fmix32(h ^ (4 * len(words)))


def murmur_case(col_dtype):
    """layers/utils/hash.py's murmur_hash32 (the sampler's per-position hash): row i, column j hashes the 16 bytes
    seed[i] (uint64) | position[i] (uint32) | col[j] (uint32) with MurmurHash3_x86_32, seed 0."""
    def run():
        mh = load("sglang.srt.layers.utils.hash")
        seeds = torch.tensor([0, 1, 2 ** 31 + 5, 2 ** 40 + 12345, 2 ** 63 - 1, 987654321987], dtype=torch.int64)
        pos = torch.tensor([0, 7, 1 << 20, 3, 2 ** 31 - 1, 99], dtype=torch.int64)
        cols = torch.randint(0, 2 ** 31 - 1, (1100,), dtype=torch.int64).to(col_dtype)
        got = mh.murmur_hash32(seeds, pos, cols)
        ref = torch.tensor([[murmur3_32([s & M32, (s >> 32) & M32, p & M32, c & M32]) for c in cols.tolist()]
                            for s, p in zip(seeds.tolist(), pos.tolist())], dtype=torch.int64)
        return {"hash": (got.to(torch.int64).double(), ref.double(), 0.0)}
    return run


def tensor_hash_case():
    """multimodal.py's gpu_tensor_hash kernels, launched as gpu_tensor_hash launches them (its wrapper asserts a
    CUDA tensor): per 8192-word tile, h1 = fmix32((sum of fmix32(w_i ^ p1_i)) ^ nbytes), p1_i =
    (i * POS_C1 + seed1) ^ rotl32(i, 15), likewise h2 with POS_C2, seed2 and rotl 13; the tiles' (h1 << 32 | h2)
    summed mod 2^64 (add_tree_reduce_u64_kernel), then splitmix64's finalizer."""
    mm = load("sglang.srt.layers.multimodal")
    words = torch.randint(0, 2 ** 32, (20000,), dtype=torch.int64)
    u32 = words.to(torch.uint32)
    n, tile, seed = words.numel(), 8192, 0x243F6A88
    seed1, seed2 = seed & M32, ((seed * 0x9E3779B1) ^ 0xDEADBEEF) & M32
    partials = torch.empty(-(-n // tile), dtype=torch.uint64)
    mm.hash_tiles32_kernel_blocked[(partials.numel(),)](
        u32, partials, n, seed1=seed1, seed2=seed2, FM_C1=mm.FMIX32_C1, FM_C2=mm.FMIX32_C2, POS_A=mm.POS_C1,
        POS_B=mm.POS_C2, TILE=tile, BLOCK=256, USE_CG=True, num_warps=4, num_stages=4)
    total = torch.empty(1, dtype=torch.uint64)
    mm.add_tree_reduce_u64_kernel[(1,)](partials, total, partials.numel(), CHUNK=1024)
    w = words.tolist()
    ref_parts = []
    for t0 in range(0, n, tile):
        h1 = h2 = 0
        for i in range(t0, min(n, t0 + tile)):
            h1 += fmix32(w[i] ^ (((i * mm.POS_C1 + seed1) & M32) ^ rotl32(i, 15)))
            h2 += fmix32(w[i] ^ (((i * mm.POS_C2 + seed2) & M32) ^ rotl32(i, 13)))
        ref_parts.append((fmix32((h1 & M32) ^ (4 * n)) << 32) | fmix32((h2 & M32) ^ (4 * n)))
    ref_total = sum(ref_parts) % 2 ** 64
    as_int = lambda t: [v % 2 ** 64 for v in t.view(torch.int64).tolist()]  # noqa: E731
    got_parts, got_total = as_int(partials), as_int(total)[0]
    # Compared as 0 / 1 flags (uint64 values do not fit a float64 exactly): 1 where the hash differs.
    return {"tile hashes": (torch.tensor([float(a != b) for a, b in zip(got_parts, ref_parts)]),
                            torch.zeros(len(ref_parts), dtype=F64), 0.0),
            "total": (torch.tensor([float(got_total != ref_total)]), torch.zeros(1, dtype=F64), 0.0),
            "final": (torch.tensor([float(mm._final_splitmix64(got_total) != mm._final_splitmix64(ref_total))]),
                      torch.zeros(1, dtype=F64), 0.0)}


check("murmur_hash32 int64 seeds/positions, int64 cols", murmur_case(torch.int64))
check("murmur_hash32 int32 cols", murmur_case(torch.int32))
check("gpu_tensor_hash kernels (hash_tiles32 + add_tree_reduce_u64), 3 tiles", tensor_hash_case)


# --- elementwise and norms -------------------------------------------------------------------------------------

def rms(x, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rmsnorm_case(dtype, tol):
    def run():
        ew = load("sglang.srt.layers.elementwise")
        x = torch.randn(37, 200).to(dtype); w = torch.randn(200).to(dtype)
        out = ew.fused_rmsnorm(x, w, 1e-6)
        return {"out": (out, rms(x.double(), 1e-6) * w.double(), tol)}
    return run


def dual_rmsnorm_case(dtype, tol):
    def run():
        ew = load("sglang.srt.layers.elementwise")
        x = torch.randn(37, 200).to(dtype); r = torch.randn(37, 200).to(dtype)
        w1 = torch.randn(200).to(dtype); w2 = torch.randn(200).to(dtype)
        out, mid = ew.fused_dual_residual_rmsnorm(x, r, w1, w2, 1e-6)
        mid_ref = r.double() + rms(x.double(), 1e-6) * w1.double()
        return {"mid": (mid, mid_ref, tol), "out": (out, rms(mid_ref, 1e-6) * w2.double(), tol * 2)}
    return run


def experts_combine_case(k):
    def run():
        ew = load("sglang.srt.layers.elementwise")
        moe = torch.randn(37, k, 200) if k > 1 else torch.randn(37, 200)
        mlp = torch.randn(37, 200)
        out = ew.experts_combine_triton(moe, mlp)
        ref = ((moe.double().sum(1) if k > 1 else moe.double()) + mlp.double()) / math.sqrt(2)
        return {"out": (out, ref, 1e-6)}
    return run


def glu_case(kind, dtype, tol):
    def run():
        ew = load("sglang.srt.layers.elementwise")
        h = torch.randn(37, 2 * 136).to(dtype)
        fn = ew.gelu_and_mul_triton if kind == "gelu" else ew.silu_and_mul_triton
        out, scales = fn(h)
        g, u = h.double().chunk(2, -1)
        act = torch.nn.functional.gelu(g) if kind == "gelu" else torch.nn.functional.silu(g)
        return {"out": (out, act * u, tol)}
    return run


def sigmoid_mul_case():
    ew = load("sglang.srt.layers.elementwise")
    attn = torch.randn(37, 6 * 80)
    gate = torch.randn(37, 6, 2 * 80)[..., 80:]  # strided 3-D gate, as Qwen3.5 passes it
    out = ew.fused_sigmoid_mul(attn, gate)
    return {"out": (out, attn.double() * torch.sigmoid(gate.double()).reshape(37, -1), 1e-6)}


def gate_sigmoid_case():
    ew = load("sglang.srt.layers.elementwise")
    h = torch.randn(37, 200); gw = torch.randn(200) / 10; s = torch.randn(37, 200); f = torch.randn(37, 200)
    ref = f.double() + torch.sigmoid(h.double() @ gw.double())[:, None] * s.double()
    ew.fused_gate_sigmoid_mul_add(h, gw, s, f)
    return {"final (in place)": (f, ref, 1e-6)}


def softcap_case():
    sc = load("sglang.srt.layers.triton_ops.softcap")
    x = (torch.randn(37, 200) * 40).to(BF16)
    out = sc.softcap_out(x, 30.0)
    assert out.dtype == F32
    return {"out": (out, torch.tanh(x.double() / 30) * 30, 1e-5)}


def softcap_inplace_case():
    sc = load("sglang.srt.layers.triton_ops.softcap")
    full = torch.randn(37, 1500) * 40
    logits = full[:, :1300]  # strided rows: row_stride 1500
    ref = torch.tanh(logits.double() / 30) * 30
    sc.softcap_inplace_logits(logits, 30.0)
    return {"logits": (logits, ref, 1e-5), "untouched": (full[:, 1300:], full[:, 1300:].double(), 0)}


def qk_norm_case(q_weight):
    def run():
        qn = load("sglang.srt.layers.fused_qk_norm")
        T, Hq, Hk, D = 37, 6, 2, 80
        qkv = torch.randn(T, (Hq + 2 * Hk) * D)
        q = qkv[:, :Hq * D].view(T, Hq, D); k = qkv[:, Hq * D:(Hq + Hk) * D].view(T, Hk, D)  # strided rows
        qw = torch.randn(D) if q_weight else None; kw = torch.randn(D)
        qo, ko = qn.fused_qk_norm(q, k, qw, kw, 1e-6)
        q_ref = rms(q.double(), 1e-6) * (qw.double() if q_weight else 1.0)
        return {"q": (qo, q_ref, 1e-5), "k": (ko, rms(k.double(), 1e-6) * kw.double(), 1e-5)}
    return run


check("fused_rmsnorm hidden 200", rmsnorm_case(F32, 1e-5))
check("fused_rmsnorm hidden 200 bf16", rmsnorm_case(BF16, 2e-2))
check("fused_dual_residual_rmsnorm hidden 200", dual_rmsnorm_case(F32, 1e-5))
check("experts_combine_triton combine_k 2", experts_combine_case(2))
check("experts_combine_triton pre-combined", experts_combine_case(1))
check("gelu_and_mul_triton 136", glu_case("gelu", F32, 1e-5))
check("silu_and_mul_triton 136 bf16", glu_case("silu", BF16, 2e-2))
check("fused_sigmoid_mul strided 3-D gate", sigmoid_mul_case)
check("fused_gate_sigmoid_mul_add", gate_sigmoid_case)
check("softcap_out bf16 -> f32", softcap_case)
check("softcap_inplace_logits strided rows", softcap_inplace_case)
check("fused_qk_norm with Q weight", qk_norm_case(True))
check("fused_qk_norm weightless Q", qk_norm_case(False))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:70s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} SGLang cases match the torch float64 references")
