"""LMDeploy's Triton kernels (InternLM/lmdeploy, the PyTorch engine's lmdeploy/pytorch/kernels/cuda) on Tegula,
through the conformance shim's `triton` package, against torch float64 (or exact) references written here from the
math:

  - attention: paged decoding `flash_attn_with_kvcache` (pagedattention.py: split-K `_fwd_grouped_split_kernel`
    and `_reduce_split_kernel` over a page table, GQA, head 96 split 64 + 32, sliding window, logit soft-capping,
    ALiBi, attention sinks, two query tokens a request, MLA-style shared K / V, the bhsd layout; and
    `_fwd_grouped_split_quant_kernel` over int8 and packed int4 caches with per-token scale / zero and fp8 e4m3 /
    e5m2 caches with per-tensor scales); varlen prefill `flash_attn_varlen_func` (flashattention.py: block
    pointers with boundary checks, history before the new tokens, causal and not, cu_seqlens or start_loc /
    seqlens, hsd and shd layouts, split heads, K 96 / V 80, sliding window, soft-capping, ALiBi, sinks, the
    block-sparse causal mask of diffusion LLMs, shared K / V, the sm86 and sm90 block sizes);
  - KV cache: `fill_kv_cache` (prefill with history and decode, bhsd, K and V of different sizes; int8, int4,
    fp8 e4m3 / e5m2 with a saturating scale, TurboQuant's 3 + 1-bit K and 2-bit V codes), `fill_kv_cache_blocked_fp8`
    (plain and ue8m0 scales), `flatten_kv_cache` (plain, int8, int4, fp8, TurboQuant; hsd / shd), fill -> flatten
    round trips, `flatten_kv_cache_mla_fp8`, copy_packed_cache.py's `copy_packed_cache`;
  - rotary, norms, activations: `apply_rotary_pos_emb` (rotate-half, complex pairs, partial rope in place, head
    96), `rms_norm` (residual, 1-D / 2-D / 3-D, strided views), `silu_and_mul`, `silu_and_mul_moe_ep`,
    `silu_and_mul_masked_post_quant_fwd`;
  - MoE: `_get_sorted_idx` (tl.sort, atomic counters), `fused_moe` (`fused_moe_kernel` through its autotuner and
    the sm90 compact routed-block kernel; biases, renormalization, an expert-parallel shard), `moe_reduce`,
    `fused_moe_w8a8` (int8 and fp8, and its expert GEMM launcher), `fused_moe_blocked_fp8` (and the per-expert and
    compact launchers), fused_moe_ep.py's `ep_scatter` -> `ep_gather` and fused_moe_ep_fp8.py's `ep_scatter_fp8`;
  - quantization and GEMMs: w8a8_triton_kernels.py's `per_token_quant_int8` (int8 with libdevice.round's halves
    away from zero, and fp8), `rms_norm_dynamic_quant`, `matmul_kernel_dynamic_quant` (int8 and fp8, residual,
    bias); blocked_gemm_fp8.py's `quant_fp8` / `per_token_group_quant_fp8` (e4m3, e5m2, column-major scales,
    ue8m0 scales through fast_log2_ceil / fast_pow2's bit tricks) and `blocked_gemm_fp8` (and its TMA kernel, with
    tensor descriptors and a pre_hook);
  - sampling, top-k and routing: `multinomial_sampling` (tl.rand against Philox computed here), `bitonic_topk`
    (bitonic argsorts and merges over rows of different lengths), `fused_noaux_tc_routing` (autotuned),
    `fused_single_group_topk_router`;
  - the rest: `fused_lora` (autotuned, restore_value, accumulating into an output), `gated_delta_preprocess`,
    ds_index.py's `fp8_index` (DeepSeek-V3.2's indexer, causal, trimmed, compressed keys), dsa_indexer_preprocess.py
    (Q and K-cache preparation, both RoPE layouts, and the K-cache flatten), dsv4/hc_prepost.py, DeepSeek-V4's
    `v4_swiglu_and_quant_fp8`, `pack_window_tokens_fp8`, `flatten_v4_kv`, the four v4_sparse_indices.py index
    builders, and v4_compressor.py's `score_kv`, `fill_compress_state`, `score_and_fill_state_decode` (chained over
    prefill chunks and decode steps against the windows' softmax written out) and `fill_compressed_kv`.

Inputs are small, seeded per case (the seed is the case name's CRC, so -k reproduces a case's data), with sizes that
are not powers of two where the API allows (hidden sizes 200 / 300 / 136, head sizes 80 / 96, sequences of different
lengths over several pages). float32 unless a kernel takes other types (bfloat16 / float16 cases; int8, uint8 codes,
float8 e4m3 / e5m2 for quantization). A case passes when every output's largest difference from its reference is at
most the tolerance times the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (where a
kernel rounds an intermediate to its input's type, the reference takes the same rounding); quantizers are checked
through their scales (1e-6 relative, power-of-two scales exactly) and their values against x / scale: float8 within
half a step of the format relative to each value (plus one bfloat16 rounding where the kernel rounds before
quantizing), and bit for bit against torch's rounding (ties to even) where the scale is a power of two and the
quotient exact; int8 / int4 codes within half a step (one step where the kernel rounds a float32 quotient); indices,
copies and bytes exactly. The end-to-end w8a8 MoE cases re-quantize the activation as the kernels do, and a code
may differ by one step where the two float16 activations differ, so their output is compared within 2e-2.

One divergence was found, in `fused_lora`'s accumulating path (two cases): `_atomic_store` compares
`ptrs.dtype.element_ty` with torch.float16 / torch.float32. Under Triton tl.dtype.__eq__ makes that False (a dtype
equals only a dtype), so the add is a load, add and store; Tegula refused the comparison (E0301, "unsupported operand
for `==`: the constant tl.float32"). The front end now takes `==` between a dtype and a host object as False and
`!=` as True (src/frontend/lower_expr.cpp, Lowerer::compare); the two cases fail until Tegula's extension is
rebuilt with that change, and match with the comparison as Triton evaluates it.

One case fails for LMDeploy's reason, on any machine: in v4_compressor.py's overlap prefill with history
(`_score_kv_kernel` and `_score_kv_tiled_prefill_kernel`) the previous window is read from the ring buffer rows
`(prev_abs_base // ratio % 2) * ratio + i`, but fill_compress_state stores position a at row `(a + ratio) % (2 *
ratio)`: the first compression point of a chunk with history weighs the window before the previous one (a reference
reading that window matches the kernel to 4e-7). `((prev_abs_base // ratio + 1) % 2) * ratio`, the decode path's
head for the same window, would read the right rows. LMDeploy's own test copies the kernel's row formula into its
reference.

LMDeploy is not part of Tegula; point this at a tree holding these files of LMDeploy's (a `git archive <commit>
lmdeploy/pytorch/kernels lmdeploy/messages.py lmdeploy/pytorch/envs.py lmdeploy/pytorch/consts.py | tar -x -C
<tree>` will do). Written against commit 1263d5cd889b7ad500e85b8eb20401327a4516ab of 2026-08-21. It reads, under
lmdeploy/pytorch/kernels/cuda: activation, apply_rotary_pos_emb, bitonic_topk, blocked_fp8_fused_moe,
blocked_gemm_fp8, copy_packed_cache, ds_index, dsa_indexer_preprocess, dsv4/hc_prepost, fill_kv_cache,
flashattention, flatten_kv_cache, fused_lora, fused_moe, fused_moe_ep, fused_moe_ep_fp8, fused_noaux_tc,
fused_single_group_router, gated_delta_preprocess, multinomial_sampling, pagedattention, rms_norm, turbo_quant,
utils, v4_compressor, v4_flatten_kv, v4_pack_window, v4_sparse_indices, v4_swiglu_quant, w8a8_fused_moe,
w8a8_triton_kernels (.py); and lmdeploy/pytorch/kernels/default/w8a8_kernels.py, lmdeploy/pytorch/envs.py,
lmdeploy/pytorch/consts.py and the QuantPolicy class of lmdeploy/messages.py:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/lmdeploy_ops.py <lmdeploy tree> [-k SUBSTRING] \
        [--json out.json]

(-k runs only the cases whose name holds SUBSTRING; --json writes every case's outcome.) `import lmdeploy` and
lmdeploy.pytorch.kernels pull in the engine, its dispatcher and backends, so the lmdeploy packages are imported bare
(standins.bare_packages: no __init__ runs) and the kernel files load from the tree with their own imports. What they
import at module level or reach in their host code that a CPU machine lacks is stood in for (none of it is a Triton
kernel or is reached by one):

  - lmdeploy.messages (pydantic, the tokenizer and the disaggregation runtime): a module holding only QuantPolicy,
    its class definition taken from the tree's messages.py and run alone; lmdeploy.utils.get_logger:
    logging.getLogger;
  - torch, through standins.cuda_claims: `device="cuda"` allocations go to TEGULA_CONFORMANCE_DEVICE and
    Tensor.is_cuda says yes for its tensors (fused_moe's compact path requires CUDA tensors; gated_delta_preprocess
    asserts its mask is a CUDA tensor); torch.cuda.get_device_capability answers 9.0 (flashattention.py caches the
    capability in its module: its cases set 8.6 or 9.0 there, which picks the block sizes), current_device 0, and
    get_device_properties a device of 2 multiprocessors (utils.get_device_props sizes persistent grids and split-K
    from it: fewer programs than rows, so the kernels' loops run);
  - utils.supports_tma, in the TMA case only: True (on this machine it answers False; the case sets
    utils.TensorDescriptor to the shim's triton.tools.tensor_descriptor.TensorDescriptor, as utils.py imports it
    where TMA is supported);
  - w8a8_fused_moe.py decorates a function with torch.compile at import; it is never called
    (LMDEPLOY_MOE_STATIC_FP8_USE_COMPILED_QUANT is unset).

Autotuning: the autotuned GEMMs are pinned to one config of their own lists (the autotuner's `configs` set to it):
`fused_moe_kernel` BLOCK_SIZE_M 64 / N 256 / K 32 (an sm90 config: its prune function keeps it at capability 9),
`_linear` / `_linear_add` 128 / 256 / 128, `fused_moe_w8a8_kernel` 64 / 128 / 64, `_gemm_fp8_kernel` 64 / 128 and
`_gemm_fp8_tma_kernel` 128 / 64; `_fused_noaux_tc_kernel` (four num_warps) and `_fused_lora_kernel` (two configs,
restore_value) are tuned as the library does. The expert GEMM launchers, _get_sorted_idx and _get_sorted_idx_blocks
are called directly in their own cases (the wrappers call them too). Tegula's recompile warnings are off unless
TEGULA_RECOMPILE_WARNING is set.

The cases step around these properties of the library (each case's docstring says which): block-sparse prefill
needs key lengths that are multiples of the block (a partial block admits the zero padding); ep_scatter needs
128-aligned expert row counts (its m_indices stores are unmasked); fill_kv_cache_blocked_fp8 needs head sizes that
are multiples of 128 (the group of a partial block wraps around the head); flatten_kv_cache zero-fills at most two
pages of tail and needs out_dtype for integer caches (else it returns uint8); per_token_group_quant_fp8 returns 2-D
views; the compressor's prefill chunks with history start at multiples of the ratio; paged decoding with several
query tokens a request gives each of them the whole cached sequence (its q_seqlen is 1).

Not covered: the TileLang kernels (causal_conv1d, gated_delta_rule, sparse_index_topk, dsv4/hc_split_sinkhorn),
the Gluon GEMM (blocked_fp8_gemm_gluon), the kernels that run PTX through tl.inline_asm_elementwise (awq_kernels'
int4 dequantization, v4_fp4_fused_moe / v4_fp4_grouped_gemm's fp4 conversion, and the TurboQuant paged-attention
reduce `_fused_reduce_hadamard_kernel`'s bar.sync, which the CPU backend refuses with E0805), DeepGEMM's paths
(quant_fp8_tma, deep_gemm_fp8, fused_moe_v3 / fused_moe_v3_fp8's grouped GEMMs), gated_delta_preprocess's float16
path (torch and flash-linear-attention), and the host-side torch wrappers around kernels covered above
(matmul_kernel_static_quant, fused_moe_static_fp8). Prints one line per case (the largest absolute difference from
the reference over the case's outputs, each output's difference, or the first line of the error) and a summary
line.
"""

import argparse
import ast
import contextlib
import enum
import importlib
import io
import json
import logging
import math
import os
import pathlib
import sys
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
KERNELS = "lmdeploy/pytorch/kernels/cuda"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a tree holding lmdeploy/pytorch/kernels/cuda and the files "
                     "named in this docstring")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
for _file in ("lmdeploy/messages.py", "lmdeploy/pytorch/envs.py", "lmdeploy/pytorch/consts.py",
              "lmdeploy/pytorch/kernels/default/w8a8_kernels.py", f"{KERNELS}/pagedattention.py"):
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402, F401
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------

# lmdeploy.messages pulls in pydantic, the tokenizer and the disaggregation runtime; the kernels use only its
# QuantPolicy enum, which is taken from the checkout's messages.py itself (that one class definition, run alone).
_messages_tree = ast.parse((SRC / "lmdeploy/messages.py").read_text())
_quant_policy = next(n for n in _messages_tree.body if isinstance(n, ast.ClassDef) and n.name == "QuantPolicy")
_messages = types.ModuleType("lmdeploy.messages")
_messages.enum = enum
exec(compile(ast.Module(body=[_quant_policy], type_ignores=[]), str(SRC / "lmdeploy/messages.py"), "exec"),
     _messages.__dict__)
sys.modules["lmdeploy.messages"] = _messages
QuantPolicy = _messages.QuantPolicy
_utils = types.ModuleType("lmdeploy.utils")
_utils.get_logger = logging.getLogger
sys.modules["lmdeploy.utils"] = _utils
logging.getLogger("lmdeploy").setLevel(logging.ERROR)

standins.bare_packages(SRC, "lmdeploy")
_CLAIMS = standins.cuda_claims(DEVICE)  # on for the rest of the process (kept referenced: its exit undoes it)
_CLAIMS.__enter__()

CAPABILITY = [(9, 0)]  # what torch.cuda.get_device_capability answers; cases that pick a path by it set it
NUM_SMS = 2
if DEVICE != "cuda":
    torch.cuda.get_device_capability = lambda *a, **k: CAPABILITY[0]
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        name="cpu", major=CAPABILITY[0][0], minor=CAPABILITY[0][1], multi_processor_count=NUM_SMS)


def load(name):
    with contextlib.redirect_stdout(io.StringIO()):
        return importlib.import_module("lmdeploy.pytorch.kernels.cuda." + name)


def pin(tuner, **want):
    """Keeps the first of the autotuner's configs whose meta-parameters (and num_warps / num_stages) match."""
    if not isinstance(tuner, triton.runtime.Autotuner):
        raise TypeError(f"{tuner!r} is not an autotuner")
    for c in tuner.configs:
        if all((c.kwargs[k] if k in c.kwargs else getattr(c, k, None)) == v for k, v in want.items()):
            tuner.configs = [c]
            tuner.cache.clear()
            return c
    raise LookupError(f"no config of {tuner!r} has {want}")


results = []
F16, BF16, F32, F64, I32, I64, U8 = torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, \
    torch.int64, torch.uint8
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
HALF_STEP = {E4M3: 2.0 ** -4, E5M2: 2.0 ** -3}


def check(name, case):
    """case() returns {what: (got, want, tol)}; passes when every max |got - want| <= tol * max |want|."""
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    try:
        comparisons = case()
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        results.append((name, "FAIL", float("nan"), f"{type(e).__name__}: {first}"))
        return
    record(results, name, comparisons)


def tol_of(dtype):
    return {BF16: 2e-2, F16: 2e-3}.get(dtype, 1e-5)


def cumsum0(lens, dtype=I32):
    out = torch.zeros(len(lens) + 1, dtype=dtype)
    out[1:] = torch.tensor(lens, dtype=dtype).cumsum(0)
    return out


def exact(got, want):
    return (got.long() if not got.is_floating_point() else got, want.long() if not want.is_floating_point() else want,
            0.0)


def fp8_values(y, v, dtype=E4M3):
    """The float8 y against the exact quotient v, relative to |v| (floored at the subnormal range), within half a
    step of the format."""
    floor = 2.0 ** -6 if dtype == E4M3 else 2.0 ** -14
    return ((y.double() - v) / v.abs().clamp_min(floor), torch.zeros_like(v), HALF_STEP[dtype] * 1.001)


def fp8_bits(y, v, dtype=E4M3):
    """The float8 y bit for bit against torch's rounding (to nearest, ties to even) of v, where v (the quotient
    by a power-of-two scale) is exact in float32 and within the format's range: float8 values of bf16 inputs
    often fall on a tie."""
    return exact(y.view(U8), v.float().to(dtype).view(U8))


# --- norms and activations -----------------------------------------------------------------------------------------

def rms_norm_case(dtype, residual, shape=(3, 37, 200)):
    def run():
        m = load("rms_norm")
        x = torch.randn(*shape).to(dtype)
        w = (torch.rand(shape[-1]) + 0.5).to(dtype)
        eps = 1e-6
        r = torch.randn(*shape).to(dtype) if residual else None
        out = m.rms_norm(x, w, eps, residual=r)
        xs = (x + r).double() if residual else x.double()  # the kernel adds in the input's type (x += res)
        ref = w.double() * xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + eps)
        if residual:
            return {"out": (out[0], ref, tol_of(dtype)), "residual": (out[1], xs, tol_of(dtype))}
        return {"out": (out, ref, tol_of(dtype))}
    return run


def silu_and_mul_case(dtype, M=100, N=300):
    def run():
        m = load("activation")
        gu = torch.randn(M, 2 * N).to(dtype)
        out = m.silu_and_mul(gu)
        g, u = gu.double()[:, :N], gu.double()[:, N:]
        return {"out": (out, g * torch.sigmoid(g) * u, tol_of(dtype))}
    return run


def rms_norm_strided_case():
    """rms_norm on a [tokens, heads, dim] view (q of a packed qkv) written into a strided output."""
    def run():
        m = load("rms_norm")
        qkv = torch.randn(37, 3 * 5 * 96)
        x = qkv[:, :5 * 96].view(37, 5, 96)
        w = torch.rand(96) + 0.5
        out = torch.empty(37, 5, 2 * 96)[..., :96]
        m.rms_norm(x, w, 1e-5, out=out)
        xd = x.double()
        return {"out": (out, w.double() * xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-5), 1e-5)}
    return run


def silu_and_mul_moe_ep_case(dtype):
    """[experts, tokens, 2N] with per-expert valid token counts (mask_m); rows past the count are not written."""
    def run():
        m = load("activation")
        E, M, N = 3, 40, 136
        gu = torch.randn(E, M, 2 * N).to(dtype)
        mask_m = torch.tensor([40, 0, 17], dtype=I32)
        out = torch.full((E, M, N), 7.0, dtype=dtype)
        m.silu_and_mul_moe_ep(gu, mask_m, out)
        g, u = gu.double()[..., :N], gu.double()[..., N:]
        ref = torch.full((E, M, N), 7.0, dtype=F64)
        for e, c in enumerate(mask_m.tolist()):
            ref[e, :c] = (g * torch.sigmoid(g) * u)[e, :c]
        return {"out": (out, ref, tol_of(dtype))}
    return run


def silu_and_mul_masked_post_quant_case():
    """SiLU-and-mul over the valid rows of each expert, then 128-group fp8 quantization of the whole buffer (the
    rows past the counts hold whatever the scratch held; only the valid rows are compared)."""
    def run():
        m = load("activation")
        E, M, N, G = 2, 24, 256, 128
        gu = (torch.randn(E, M, 2 * N) * 3).to(BF16)
        mask_m = torch.tensor([24, 9], dtype=I32)
        out = torch.empty(E, M, N, dtype=E4M3)
        scale = torch.empty(E, M, N // G)
        m.silu_and_mul_masked_post_quant_fwd(gu, out, scale, G, mask_m)
        g, u = gu.float()[..., :N], gu.float()[..., N:]
        act = ((g / (1 + torch.exp(-g))).to(BF16) * u.to(BF16)).double()  # the kernel's roundings
        rows = torch.cat([torch.arange(c) + e * M for e, c in enumerate(mask_m.tolist())])
        act, out, scale = act.view(E * M, N)[rows], out.view(E * M, N)[rows], scale.view(E * M, N // G)[rows]
        s_ref = act.view(-1, N // G, G).abs().amax(-1).clamp_min(1e-6) / 448.0
        return {"scales": (scale, s_ref, 1e-6),
                "quantized rel": fp8_values(out, act / scale.double().repeat_interleave(G, 1))}
    return run


check("rms_norm fp32 3x37x200", rms_norm_case(F32, False))
check("rms_norm bf16 + residual 3x37x200", rms_norm_case(BF16, True))
check("rms_norm fp16 2-D 300x136", rms_norm_case(F16, False, (300, 136)))
check("rms_norm fp32 + residual 1-D 4000 (2048-wide blocks)", rms_norm_case(F32, True, (4000,)))
check("rms_norm strided qkv view -> strided out", rms_norm_strided_case())
check("silu_and_mul fp32 100x300", silu_and_mul_case(F32))
check("silu_and_mul bf16 70x700 (two column blocks)", silu_and_mul_case(BF16, 70, 700))
check("silu_and_mul_moe_ep fp32 3 experts, counts 40/0/17", silu_and_mul_moe_ep_case(F32))
check("silu_and_mul_moe_ep bf16", silu_and_mul_moe_ep_case(BF16))
check("silu_and_mul_masked_post_quant_fwd bf16 -> fp8 groups of 128", silu_and_mul_masked_post_quant_case())


# --- w8a8 (int8 / fp8 per-token) kernels: w8a8_triton_kernels.py -----------------------------------------------

def per_token_quant_case(quant_dtype, dtype):
    """per_token_quant_int8: scale = max(|row|, eps) / qmax, q = libdevice.round(x / scale) (halves away from zero)
    for int8, x / scale stored as float8 for float8. The first row holds exact halves after scaling."""
    def run():
        m = load("w8a8_triton_kernels")
        x = (torch.randn(37, 300) * 2).to(dtype)
        if quant_dtype == torch.int8:
            x[0, :8] = torch.tensor([127.0, 62.5, -62.5, 1.5, 2.5, -2.5, 0.5, -0.5]).to(dtype)
            x[0, 8:] = 0.25
        q, s = m.per_token_quant_int8(x, 1e-7, quant_dtype=quant_dtype)
        qmax = 127.0 if quant_dtype == torch.int8 else 448.0
        s_ref = x.double().abs().amax(-1, keepdim=True).clamp_min(1e-7) / qmax
        out = {"scales": (s, s_ref, 1e-6)}
        if quant_dtype == torch.int8:
            y = x.double() / s.double()
            q_ref = torch.sign(y) * torch.floor(y.abs() + 0.5)  # libdevice.round: halves away from zero
            out["q (steps)"] = (q.double(), q_ref, 1.001 / 127)
            out["halves row exact"] = exact(q[0, :8], torch.tensor([127, 63, -63, 2, 3, -3, 1, -1]))
        else:
            out["quantized rel"] = fp8_values(q, x.double() / s.double(), quant_dtype)
        return out
    return run


def rms_norm_quant_case(quant_dtype, residual):
    def run():
        m = load("w8a8_triton_kernels")
        x = torch.randn(37, 200)
        w = torch.rand(200) + 0.5
        r = torch.randn(37, 200) if residual else None
        got = m.rms_norm_dynamic_quant(x, w, 1e-6, residual=r, quant_dtype=quant_dtype)
        xs = x.double() + (r.double() if residual else 0)
        n = w.double() * xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + 1e-6)
        qmax = 127.0 if quant_dtype == torch.int8 else 448.0
        s_ref = n.abs().amax(-1, keepdim=True) / qmax
        out = {"scales": (got[1], s_ref, 1e-5)}
        if quant_dtype == torch.int8:
            out["q (steps)"] = (got[0].double(), n / got[1].double(), (0.5 + 1e-3) / 127)
        else:
            out["quantized rel"] = fp8_values(got[0], n / got[1].double(), quant_dtype)
        if residual:
            out["residual"] = (got[2], xs, 1e-6)
        return out
    return run


def w8a8_matmul_case(quant_dtype, residual, out_dtype, M=37, N=200, K=200):
    """matmul_kernel_dynamic_quant: int8 (int32 sums) or float8 (float32 sums) GEMM scaled by per-token and
    per-channel scales, with the fused residual add (`_linear_add`) and a bias. K = 200 leaves a partial K block,
    loaded with a mask and no `other` (Triton leaves those lanes undefined)."""
    def run():
        m = load("w8a8_triton_kernels")
        for tuner in (m._linear, m._linear_add):
            if len(tuner.configs) > 1:
                pin(tuner, BLOCK_M=128, BLOCK_N=256, BLOCK_K=128)
        if quant_dtype == torch.int8:
            a = torch.randint(-127, 128, (M, K), dtype=torch.int8)
            b = torch.randint(-127, 128, (N, K), dtype=torch.int8)
        else:
            a = (torch.randn(M, K) * 20).to(quant_dtype)
            b = (torch.randn(N, K) * 20).to(quant_dtype)
        rs, ls = torch.rand(M, 1) * 1e-2, torch.rand(N, 1) * 1e-2
        res = torch.randn(M, N).to(out_dtype) if residual else None
        bias = torch.randn(N).to(out_dtype)
        c = m.matmul_kernel_dynamic_quant(a, b, rs, ls, residual=res, bias=bias, output_dtype=out_dtype)
        ref = (a.double() @ b.double().T) * rs.double() * ls.double().T
        if residual:
            ref = ref + res.double()
        return {"c": (c, ref + bias.double(), tol_of(out_dtype))}
    return run


check("per_token_quant_int8 fp32 -> int8 37x300 (round halves)", per_token_quant_case(torch.int8, F32))
check("per_token_quant_int8 bf16 -> int8", per_token_quant_case(torch.int8, BF16))
check("per_token_quant_int8 fp32 -> fp8 e4m3", per_token_quant_case(E4M3, F32))
check("rms_norm_dynamic_quant -> int8", rms_norm_quant_case(torch.int8, False))
check("rms_norm_dynamic_quant + residual -> int8", rms_norm_quant_case(torch.int8, True))
check("rms_norm_dynamic_quant -> fp8 e4m3", rms_norm_quant_case(E4M3, False))
check("matmul_kernel_dynamic_quant int8 37x200x200 -> fp16", w8a8_matmul_case(torch.int8, False, F16))
check("matmul_kernel_dynamic_quant int8 + residual -> bf16", w8a8_matmul_case(torch.int8, True, BF16))
check("matmul_kernel_dynamic_quant fp8 e4m3 -> fp32", w8a8_matmul_case(E4M3, False, F32))

# --- attention: references and paged caches ---------------------------------------------------------------------

def attn_ref(q, k, v, scale, q_pos, left=None, causal=True, alibi=None, softcap=None, sinks=None, block_sparse=1):
    """q [nq, H, D], k [nk, Hk, D], v [nk, Hk, Dv] -> [nq, H, Dv] in float64; key j sits at position j, query i at
    q_pos[i]. causal: keys j <= q_pos (with block_sparse > 1: j // bs * bs <= q_pos); left: keys j >= q_pos - left
    (flash-attention's window_size=(left, -1): left keys before the query and the query's own); alibi [H]: scores
    -= slope * |q_pos - j|; softcap: scores = cap * tanh(scores / cap); sinks [H]: an extra logit per head in the
    softmax's denominator."""
    q, k, v = q.double(), k.double(), v.double()
    H, nk = q.shape[1], k.shape[0]
    g = H // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    qp, kp = q_pos.double()[:, None], torch.arange(nk, dtype=F64)[None, :]
    if alibi is not None:
        s = s - alibi.double()[:, None, None] * (qp - kp).abs()[None]
    mask = torch.ones(len(q_pos), nk, dtype=torch.bool)
    if causal:
        mask &= (kp // block_sparse * block_sparse) <= qp
    if left is not None:
        mask &= kp >= qp - left
    s = s.masked_fill(~mask[None], float("-inf"))
    if sinks is not None:
        s = torch.cat([s, sinks.double()[:, None, None].expand(H, s.shape[1], 1)], -1)
    p = torch.softmax(s, -1)[..., :nk]
    return torch.einsum("hqk,khd->qhd", p, v)


def page_table(lens, block, extra_blocks=3):
    """A page table [B, max_blocks + 1] placing each request's blocks at random physical blocks (total blocks: the
    ones in use plus extra_blocks), and the number of physical blocks."""
    nblocks = [-(-L // block) for L in lens]
    total = sum(nblocks) + extra_blocks
    perm = torch.randperm(total).to(I32)
    table = torch.zeros(len(lens), max(nblocks) + 1, dtype=I32)
    off = 0
    for b, n in enumerate(nblocks):
        table[b, :n] = perm[off:off + n]
        off += n
    return table, total


def paged(lens, block, table, total, vals, layout="bshd", fill=1e4):
    """The paged cache [total, block, H, D] ('bhsd': [total, H, block, D]) holding vals [sum(lens), H, D] (each
    request's tokens in order) at table's blocks; slots not in use hold `fill`."""
    cache = torch.full((total, block) + tuple(vals.shape[1:]), fill).to(vals.dtype)
    off = 0
    for b, L in enumerate(lens):
        j = torch.arange(L)
        cache[table[b, j // block].long(), j % block] = vals[off:off + L]
        off += L
    return cache.transpose(1, 2).contiguous() if layout == "bhsd" else cache


def decode_case(dtype=F32, lens=(37, 100, 1), Hq=8, Hk=2, D=64, Dv=None, block=16, seq_len=1, window=None,
                softcap=None, alibi=False, sinks=False, shared_kv=False, layout="bshd"):
    """flash_attn_with_kvcache (paged decoding: split-K stage 1 `_fwd_grouped_split_kernel` and the
    `_reduce_split_kernel` merge). With seq_len > 1 each request has seq_len query tokens, and the kernel gives
    every one of them the request's whole cached sequence (its q_seqlen is 1; no mask among them)."""
    def run():
        m = load("pagedattention")
        B = len(lens)
        table, total = page_table(lens, block)
        kd = torch.randn(sum(lens), Hk, D).to(dtype)
        k_cache = paged(lens, block, table, total, kd, layout)
        if shared_kv:  # MLA-style: V is K's first Dv channels, the same buffer
            v_cache, vd = k_cache[..., :Dv], kd[..., :Dv]
        else:
            vd = torch.randn(sum(lens), Hk, Dv or D).to(dtype)
            v_cache = paged(lens, block, table, total, vd, layout)
        q = torch.randn(B * seq_len, Hq, D).to(dtype)
        slopes = (torch.rand(Hq) * 0.3) if alibi else None
        sink = torch.randn(Hq) if sinks else None
        o = m.flash_attn_with_kvcache(q, k_cache, v_cache, torch.tensor(lens, dtype=I32), table,
                                      window_size=window, softcap=softcap, alibi_slopes=slopes, sinks=sink,
                                      kv_layout=layout)
        ref = torch.zeros(o.shape, dtype=F64)
        off = 0
        for b, L in enumerate(lens):
            qs = q[b * seq_len:(b + 1) * seq_len]
            ref[b * seq_len:(b + 1) * seq_len] = attn_ref(
                qs, kd[off:off + L], vd[off:off + L], D ** -0.5, torch.full((seq_len,), L - 1), left=window,
                alibi=slopes, softcap=softcap, sinks=sink)
            off += L
        return {"o": (o, ref, tol_of(dtype))}
    return run


check("flash_attn_with_kvcache fp32 GQA 8/2, D 64, block 16", decode_case())
check("flash_attn_with_kvcache bf16 GQA 8/2", decode_case(BF16))
check("flash_attn_with_kvcache fp32 MHA D 96 (64 + 32 split head)", decode_case(Hq=4, Hk=4, D=96))
check("flash_attn_with_kvcache fp32 sliding window 20", decode_case(window=20))
check("flash_attn_with_kvcache fp32 softcap 5", decode_case(softcap=5.0))
check("flash_attn_with_kvcache fp32 alibi", decode_case(alibi=True, Hq=4, Hk=4))
check("flash_attn_with_kvcache fp32 sinks", decode_case(sinks=True))
check("flash_attn_with_kvcache fp32 2 query tokens a request", decode_case(seq_len=2))
check("flash_attn_with_kvcache fp32 shared K/V (MLA-style, K 80, V 64)", decode_case(Hq=16, Hk=1, D=80, Dv=64,
                                                                                     shared_kv=True))
check("flash_attn_with_kvcache fp32 bhsd layout, block 32", decode_case(layout="bhsd", block=32))
check("flash_attn_with_kvcache fp32 GQA 32/1 (two 16-head tiles a group)", decode_case(Hq=32, Hk=1))

def quant_codes(x, bits):
    """LMDeploy's asymmetric per-token KV quantization in float64: scale = (max - min) / (2^bits - 1), zero = -min /
    scale, code = floor(x / scale + zero + 0.5) (x [..., D]; int4 quantizes both halves of D jointly)."""
    x = x.double()
    lo, hi = x.amin(-1, keepdim=True), x.amax(-1, keepdim=True)
    s = (hi - lo) / (2 ** bits - 1)
    z = -lo / s
    return torch.floor(x / s + z + 0.5).clamp(0, 2 ** bits - 1), s, z


def pack4(codes):
    """int4 codes [..., D] -> bytes [..., D / 2]: the first half in the low nibbles, the second in the high."""
    h = codes.shape[-1] // 2
    return (codes[..., :h] + codes[..., h:] * 16).to(U8)


def decode_quant_case(policy, dtype=F32, lens=(37, 100, 5), Hq=8, Hk=2, D=64, block=16, window=None):
    """flash_attn_with_kvcache over a quantized cache (`_fwd_grouped_split_quant_kernel`): int8 / int4 codes with
    per-token scale and zero ([..., 2] float32), or float8 with one scale per tensor."""
    def run():
        m = load("pagedattention")
        table, total = page_table(lens, block)
        n = sum(lens)
        kv = [torch.randn(n, Hk, D) for _ in range(2)]
        caches, metas, deq = [], [], []
        for x in kv:
            if policy in (QuantPolicy.INT8, QuantPolicy.INT4):
                bits = 8 if policy == QuantPolicy.INT8 else 4
                c, s, z = quant_codes(x, bits)
                codes = c.to(U8) if bits == 8 else pack4(c)
                caches.append(paged(lens, block, table, total, codes, fill=0))
                metas.append(paged(lens, block, table, total, torch.cat([s, z], -1).float()))
                deq.append((c - z) * s)
            else:
                fmt = E4M3 if policy == QuantPolicy.FP8 else E5M2
                s = x.abs().amax() / torch.finfo(fmt).max * 2
                codes = (x / s).to(fmt)
                caches.append(paged(lens, block, table, total, codes, fill=0))
                metas.append(s.reshape(1))
                deq.append(codes.double() * s.double())
        q = torch.randn(len(lens), Hq, D).to(dtype)
        o = m.flash_attn_with_kvcache(q, caches[0], caches[1], torch.tensor(lens, dtype=I32), table,
                                      window_size=window, k_scales_zeros=metas[0], v_scales_zeros=metas[1],
                                      quant_policy=policy)
        ref = torch.zeros(o.shape, dtype=F64)
        off = 0
        for b, L in enumerate(lens):
            ref[b:b + 1] = attn_ref(q[b:b + 1], deq[0][off:off + L], deq[1][off:off + L], D ** -0.5,
                                    torch.tensor([L - 1]), left=window)
            off += L
        return {"o": (o, ref, tol_of(dtype) if policy in (QuantPolicy.INT8, QuantPolicy.INT4) else 1e-5)}
    return run


check("flash_attn_with_kvcache int8 KV (scale, zero per token)", decode_quant_case(QuantPolicy.INT8))
check("flash_attn_with_kvcache int8 KV bf16 q, window 20", decode_quant_case(QuantPolicy.INT8, BF16, window=20))
check("flash_attn_with_kvcache int8 KV GQA 32/1 (two 16-head tiles a group)", decode_quant_case(QuantPolicy.INT8,
                                                                                                   Hq=32, Hk=1))
check("flash_attn_with_kvcache int4 KV (packed halves)", decode_quant_case(QuantPolicy.INT4))
check("flash_attn_with_kvcache int4 KV, D 96 (64 + 32 split head)", decode_quant_case(QuantPolicy.INT4, D=96,
                                                                                     Hq=4, Hk=4))
check("flash_attn_with_kvcache fp8 e4m3 KV, per-tensor scale", decode_quant_case(QuantPolicy.FP8))
check("flash_attn_with_kvcache fp8 e5m2 KV, per-tensor scale", decode_quant_case(QuantPolicy.FP8_E5M2))


# --- filling and flattening the paged cache: fill_kv_cache.py, flatten_kv_cache.py -----------------------------

def fill_inputs(q_lens, hist, Hk, D, Dv, block, dtype):
    """A batch whose requests hold `hist` cached tokens and append `q_lens` new ones: (k, v [sum(q_lens), Hk,
    D/Dv], q_start_loc, q_seqlens, kv_seqlens, table, total)."""
    kv_lens = [h + q for h, q in zip(hist, q_lens)]
    table, total = page_table(kv_lens, block)
    k = torch.randn(sum(q_lens), Hk, D).to(dtype)
    v = torch.randn(sum(q_lens), Hk, Dv).to(dtype)
    return (k, v, cumsum0(q_lens)[:-1], torch.tensor(q_lens, dtype=I32), torch.tensor(kv_lens, dtype=I32), table,
            total)


def written(q_lens, hist, block, table):
    """(physical block, slot) of every new token, in order."""
    blocks, slots = [], []
    for b, (q, h) in enumerate(zip(q_lens, hist)):
        pos = torch.arange(h, h + q)
        blocks.append(table[b, pos // block].long())
        slots.append(pos % block)
    return torch.cat(blocks), torch.cat(slots)


def fill_case(q_lens, hist, dtype=F32, Hk=2, D=64, Dv=None, block=16, layout="bshd"):
    """fill_kv_cache: the new tokens land at their pages and slots; every other slot keeps what it held."""
    def run():
        m = load("fill_kv_cache")
        k, v, qs, ql, kvl, table, total = fill_inputs(q_lens, hist, Hk, D, Dv or D, block, dtype)
        kc = torch.randn(total, block, Hk, D).to(dtype)
        vc = torch.randn(total, block, Hk, Dv or D).to(dtype)
        if layout == "bhsd":
            kc, vc = kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous()
        want_k, want_v = kc.clone(), vc.clone()
        blk, slot = written(q_lens, hist, block, table)
        if layout == "bhsd":
            want_k[blk, :, slot], want_v[blk, :, slot] = k, v
        else:
            want_k[blk, slot], want_v[blk, slot] = k, v
        m.fill_kv_cache(k, v, kc, vc, qs, ql, kvl, max(q_lens), table, kv_layout=layout)
        return {"k cache": exact(kc, want_k), "v cache": exact(vc, want_v)}
    return run


def fill_quant_case(policy, q_lens, hist, Hk=2, D=64, block=16):
    """fill_kv_cache with int8 / int4 codes: scale and zero per token and head (checked against the float64
    formula), the codes within half a step of x / scale + zero (the kernel rounds by adding 0.5 and truncating),
    and the untouched slots unchanged."""
    def run():
        m = load("fill_kv_cache")
        bits = 8 if policy == QuantPolicy.INT8 else 4
        Dc = D if bits == 8 else D // 2
        k, v, qs, ql, kvl, table, total = fill_inputs(q_lens, hist, Hk, D, D, block, F32)
        kc, vc = torch.randint(0, 256, (2, total, block, Hk, Dc), dtype=U8)
        ksz, vsz = torch.randn(2, total, block, Hk, 2)
        before = [t.clone() for t in (kc, vc, ksz, vsz)]
        m.fill_kv_cache(k, v, kc, vc, qs, ql, kvl, max(q_lens), table, k_scales_zeros=ksz, v_scales_zeros=vsz,
                        quant_policy=policy)
        blk, slot = written(q_lens, hist, block, table)
        out = {}
        for name, x, c, sz, old_c, old_sz in (("k", k, kc, ksz, before[0], before[2]),
                                              ("v", v, vc, vsz, before[1], before[3])):
            _, s, z = quant_codes(x, bits)
            got_c, got_sz = c[blk, slot].long(), sz[blk, slot].double()
            if bits == 4:
                got_c = torch.cat([got_c & 15, got_c >> 4], -1)
            out[f"{name} scales"] = (got_sz[..., :1], s, 1e-6)
            out[f"{name} zeros"] = (got_sz[..., 1:], z, 1e-5)
            out[f"{name} codes (steps)"] = (got_c - (x.double() / got_sz[..., :1] + got_sz[..., 1:]),
                                            torch.zeros(x.shape, dtype=F64), 0.5 + 1e-3)
            keep = torch.ones(c.shape[:2], dtype=torch.bool)
            keep[blk, slot] = False
            out[f"{name} other slots"] = exact(torch.cat([c[keep].flatten().long(), sz[keep].flatten()]),
                                               torch.cat([old_c[keep].flatten().long(), old_sz[keep].flatten()]))
        return out
    return run


def fill_fp8_case(fmt, q_lens, hist, Hk=2, D=64, block=16):
    """fill_kv_cache into a float8 cache with one scale per tensor: clamp(x / scale) rounded to the format."""
    def run():
        m = load("fill_kv_cache")
        k, v, qs, ql, kvl, table, total = fill_inputs(q_lens, hist, Hk, D, D, block, BF16)
        kc, vc = torch.randn(2, total, block, Hk, D).to(fmt)
        ks, vs = torch.tensor([0.01]), torch.tensor([0.002])  # v / 0.002 saturates: values past the format clamp
        m.fill_kv_cache(k, v, kc, vc, qs, ql, kvl, max(q_lens), table, k_scales_zeros=ks, v_scales_zeros=vs,
                        quant_policy=QuantPolicy.FP8 if fmt == E4M3 else QuantPolicy.FP8_E5M2)
        blk, slot = written(q_lens, hist, block, table)
        top = torch.finfo(fmt).max
        return {"k rel": fp8_values(kc[blk, slot], (k.double() / 0.01).clamp(-top, top), fmt),
                "v rel": fp8_values(vc[blk, slot], (v.double() / vs.double()).clamp(-top, top), fmt)}
    return run


def fill_blocked_fp8_case(ue8m0, q_lens, hist, Hk=2, D=256, Dv=128, block=16):
    """fill_kv_cache_blocked_fp8: per-token, per-128-channel float8 scales (amax / 448, or rounded up to a power of
    two for 'ue8m0'), K and V of different head sizes."""
    def run():
        m = load("fill_kv_cache")
        k, v, _, ql, kvl, table, total = fill_inputs(q_lens, hist, Hk, D, Dv, block, BF16)
        kc, vc = torch.zeros(total, block, Hk, D, dtype=E4M3), torch.zeros(total, block, Hk, Dv, dtype=E4M3)
        ksc, vsc = torch.zeros(total, block, Hk, D // 128), torch.zeros(total, block, Hk, Dv // 128)
        m.fill_kv_cache_blocked_fp8(k, v, kc, vc, ksc, vsc, cumsum0(q_lens), kvl, max(q_lens), table,
                                    scale_fmt="ue8m0" if ue8m0 else None)
        blk, slot = written(q_lens, hist, block, table)
        out = {}
        for name, x, c, sc in (("k", k, kc, ksc), ("v", v, vc, vsc)):
            amax = x.float().unflatten(-1, (-1, 128)).abs().amax(-1).clamp_min(1e-6)
            s_ref = ue8m0_scale(amax) if ue8m0 else amax.double() / 448.0
            got_s = sc[blk, slot]
            out[f"{name} scales"] = (got_s, s_ref, 0.0 if ue8m0 else 1e-6)
            out[f"{name} rel"] = fp8_values(c[blk, slot], x.double() / got_s.double().repeat_interleave(128, -1))
            if ue8m0:
                out[f"{name} ties to even"] = fp8_bits(c[blk, slot], x.float() / got_s.repeat_interleave(128, -1))
        return out
    return run


def ue8m0_scale(amax, top=448.0):
    """2 ** ceil(log2(amax * (1 / top))) with the product in float32, as fast_round_scale computes it."""
    r = amax.float() * torch.tensor(1.0 / top, dtype=F32)
    mant, exp = torch.frexp(r)  # r = mant * 2^exp, mant in [0.5, 1)
    return torch.ldexp(torch.ones_like(r, dtype=F64), (exp - (mant == 0.5).int()).double())


def flatten_case(policy=None, dtype=F32, lens=(37, 5, 60), Hk=2, D=64, block=16, layout="bshd", out_layout="hsd"):
    """flatten_kv_cache: each request's tokens gathered from its pages into [H, S, D] ('hsd') or [S, H, D] ('shd')
    at start_loc, the tail up to out_size zero-filled; quantized caches are dequantized."""
    def run():
        m = load("flatten_kv_cache")
        table, total = page_table(lens, block)
        n = sum(lens)
        k, v = torch.randn(n, Hk, D).to(dtype), torch.randn(n, Hk, D).to(dtype)
        extra = {}
        if policy in (QuantPolicy.INT8, QuantPolicy.INT4):
            bits = 8 if policy == QuantPolicy.INT8 else 4
            stored, want, metas = [], [], []
            for x in (k, v):
                c, s, z = quant_codes(x, bits)
                stored.append(c.to(U8) if bits == 8 else pack4(c))
                want.append((c - z) * s)
                metas.append(paged(lens, block, table, total, torch.cat([s, z], -1).float(), layout))
            extra = dict(k_scales_zeros=metas[0], v_scales_zeros=metas[1], quant_policy=policy, out_dtype=F32)
        elif policy is not None:
            stored = [(x * 40).to(E4M3) for x in (k, v)]
            ks, vs = torch.tensor([0.025]), torch.tensor([0.025])
            want = [x.double() * 0.025 for x in stored]
            extra = dict(k_scales_zeros=ks, v_scales_zeros=vs, quant_policy=policy, out_dtype=F32)
        else:
            stored, want = [k, v], [k.double(), v.double()]
        kc, vc = (paged(lens, block, table, total, x, layout, fill=0) for x in stored)
        out_size = n + block + 3
        ko, vo = m.flatten_kv_cache(kc, vc, torch.tensor(lens, dtype=I32), table, out_size=out_size,
                                    kv_layout=layout, flatten_kv_layout=out_layout, **extra)
        tail = torch.zeros(out_size - n, Hk, D, dtype=F64)
        refs = [torch.cat([w, tail]) for w in want]
        if out_layout == "hsd":
            refs = [r.transpose(0, 1) for r in refs]
        tol = 0.0 if policy is None else 1e-6
        return {"k": (ko, refs[0], tol), "v": (vo, refs[1], tol)}
    return run


def fill_flatten_round_trip_case(policy):
    """fill_kv_cache (prefill, int8 / int4) then flatten_kv_cache: each value back within half a quantization
    step."""
    def run():
        fill, flat = load("fill_kv_cache"), load("flatten_kv_cache")
        q_lens, Hk, D, block = [30, 7, 45], 2, 64, 16
        bits = 8 if policy == QuantPolicy.INT8 else 4
        k, v, qs, ql, kvl, table, total = fill_inputs(q_lens, [0, 0, 0], Hk, D, D, block, F32)
        Dc = D if bits == 8 else D // 2
        kc, vc = torch.zeros(2, total, block, Hk, Dc, dtype=U8)
        ksz, vsz = torch.zeros(2, total, block, Hk, 2)
        fill.fill_kv_cache(k, v, kc, vc, qs, ql, kvl, max(q_lens), table, k_scales_zeros=ksz, v_scales_zeros=vsz,
                           quant_policy=policy)
        ko, vo = flat.flatten_kv_cache(kc, vc, kvl, table, out_size=sum(q_lens), k_scales_zeros=ksz,
                                       v_scales_zeros=vsz, quant_policy=policy, out_dtype=F32,
                                       flatten_kv_layout="shd")
        out = {}
        for name, x, got in (("k", k, ko), ("v", v, vo)):
            _, s, _ = quant_codes(x, bits)
            out[f"{name} (steps)"] = ((got.double() - x.double()) / s, torch.zeros(x.shape, dtype=F64), 0.501)
        return out
    return run


check("fill_kv_cache fp32 prefill with history (3 requests)", fill_case([30, 7, 45], [5, 16, 0]))
check("fill_kv_cache bf16 decode (one token each)", fill_case([1, 1, 1], [36, 15, 0], BF16))
check("fill_kv_cache fp32 K 96 / V 64, bhsd layout", fill_case([30, 7, 45], [5, 16, 0], D=96, Dv=64,
                                                                 layout="bhsd"))
check("fill_kv_cache int8 (scale, zero per token) prefill", fill_quant_case(QuantPolicy.INT8, [30, 7, 45],
                                                                            [5, 16, 0]))
check("fill_kv_cache int8 decode", fill_quant_case(QuantPolicy.INT8, [1, 1, 1], [36, 15, 0]))
check("fill_kv_cache int4 (packed halves) prefill", fill_quant_case(QuantPolicy.INT4, [30, 7, 45], [5, 16, 0]))
check("fill_kv_cache fp8 e4m3 per-tensor scale (V saturates)", fill_fp8_case(E4M3, [30, 7, 45], [5, 16, 0]))
check("fill_kv_cache fp8 e5m2 per-tensor scale", fill_fp8_case(E5M2, [1, 1, 1], [36, 15, 0]))
check("fill_kv_cache_blocked_fp8 K 256 / V 128", fill_blocked_fp8_case(False, [30, 7, 45], [5, 16, 0]))
check("fill_kv_cache_blocked_fp8 ue8m0 scales, decode", fill_blocked_fp8_case(True, [1, 1, 1], [36, 15, 0]))
check("flatten_kv_cache fp32 -> hsd (zero tail)", flatten_case())
check("flatten_kv_cache bf16 bhsd cache -> shd", flatten_case(dtype=BF16, layout="bhsd", out_layout="shd"))
check("flatten_kv_cache int8 -> fp32", flatten_case(QuantPolicy.INT8))
check("flatten_kv_cache int4 -> fp32", flatten_case(QuantPolicy.INT4))
check("flatten_kv_cache fp8 e4m3 per-tensor scale -> fp32", flatten_case(QuantPolicy.FP8))
check("fill_kv_cache -> flatten_kv_cache int8 round trip", fill_flatten_round_trip_case(QuantPolicy.INT8))
check("fill_kv_cache -> flatten_kv_cache int4 round trip", fill_flatten_round_trip_case(QuantPolicy.INT4))

# --- prefill attention: flashattention.py ------------------------------------------------------------------------

def prefill_case(dtype=F32, q_lens=(70, 1, 150), hist=(30, 12, 0), Hq=6, Hk=2, D=64, Dv=None, causal=True,
                 window=None, softcap=None, alibi=False, sinks=False, layout="hsd", shared_kv=False, cu=True,
                 block_sparse=1, cap=(8, 6)):
    """flash_attn_varlen_func (`_flash_prefill_fwd_kernel`, K / V through block pointers with boundary checks): each
    request's new queries sit after its `hist` cached keys. The block sizes come from the device capability (8.6:
    BLOCK_M 128 and BLOCK_N 64 for head sizes up to 128, 64 and 32 up to 256). With block_sparse > 1 (diffusion
    LLMs' block-causal masks) the key lengths are multiples of the block: a partial last block would let queries
    see the zero padding past the keys (keys past the length are loaded as zeros, and the block mask admits
    them)."""
    def run():
        m = load("flashattention")
        m._nv_cap = cap
        kv_lens = [h + q for h, q in zip(hist, q_lens)]
        q = torch.randn(sum(q_lens), Hq, D).to(dtype)
        kd = torch.randn(sum(kv_lens), Hk, D).to(dtype)
        vd = kd[..., :Dv] if shared_kv else torch.randn(sum(kv_lens), Hk, Dv or D).to(dtype)
        if layout == "hsd":
            k = kd.transpose(0, 1).contiguous()
            v = k[..., :Dv] if shared_kv else vd.transpose(0, 1).contiguous()
        else:
            k, v = kd, vd
        slopes = torch.rand(Hq) * 0.3 if alibi else None
        sink = torch.randn(Hq) if sinks else None
        seq = dict(cu_seqlens_q=cumsum0(q_lens), cu_seqlens_k=cumsum0(kv_lens)) if cu else dict(
            q_start_loc=cumsum0(q_lens)[:-1], q_seqlens=torch.tensor(q_lens, dtype=I32),
            kv_start_loc=cumsum0(kv_lens)[:-1], kv_seqlens=torch.tensor(kv_lens, dtype=I32))
        o = m.flash_attn_varlen_func(q, k, v, max_seqlen_q=max(q_lens), causal=causal,
                                     window_size=(window, -1) if window else (-1, -1), softcap=softcap,
                                     alibi_slopes=slopes, sinks=sink, block_sparse_size=block_sparse,
                                     kv_layout=layout, **seq)
        ref = torch.zeros(o.shape, dtype=F64)
        qo, ko = 0, 0
        for ql, kl, h in zip(q_lens, kv_lens, hist):
            ref[qo:qo + ql] = attn_ref(q[qo:qo + ql], kd[ko:ko + kl], vd[ko:ko + kl], D ** -0.5,
                                       torch.arange(h, h + ql), left=window, causal=causal, alibi=slopes,
                                       softcap=softcap, sinks=sink, block_sparse=block_sparse)
            qo, ko = qo + ql, ko + kl
        return {"o": (o, ref, tol_of(dtype))}
    return run


check("flash_attn_varlen_func fp32 causal GQA 6/2, history 30/12/0", prefill_case())
check("flash_attn_varlen_func bf16 causal", prefill_case(BF16))
check("flash_attn_varlen_func fp16 causal", prefill_case(F16))
check("flash_attn_varlen_func fp32 non-causal", prefill_case(causal=False))
check("flash_attn_varlen_func fp32 shd layout, start_loc / seqlens", prefill_case(layout="shd", cu=False))
check("flash_attn_varlen_func fp32 head 96 (64 + 32 split)", prefill_case(D=96, Hq=4, Hk=4))
check("flash_attn_varlen_func fp32 K 96 / V 80 (masked V block)", prefill_case(D=96, Dv=80, Hq=2, Hk=2))
check("flash_attn_varlen_func fp32 sliding window 40", prefill_case(window=40))
check("flash_attn_varlen_func fp32 softcap 5", prefill_case(softcap=5.0))
check("flash_attn_varlen_func fp32 alibi", prefill_case(alibi=True, Hq=4, Hk=4))
check("flash_attn_varlen_func fp32 sinks", prefill_case(sinks=True))
check("flash_attn_varlen_func fp32 block-sparse causal (4-token blocks)", prefill_case(
    q_lens=(72, 4, 148), hist=(28, 12, 0), block_sparse=4))
check("flash_attn_varlen_func fp32 shared K/V (MLA-style, K 80, V 64)", prefill_case(D=80, Dv=64, Hq=4, Hk=1,
                                                                                    shared_kv=True))
check("flash_attn_varlen_func fp32 sm90 blocks (128 x 128)", prefill_case(cap=(9, 0)))

# --- MoE: fused_moe.py, w8a8_fused_moe.py, blocked_fp8_fused_moe.py, fused_moe_ep*.py -----------------------------

def routing(M, E, topk, num_experts=None):
    """Random distinct experts a token (of num_experts) and their softmax weights."""
    logits = torch.randn(M, num_experts or E)
    w, ids = torch.softmax(logits, -1).topk(topk, -1)
    return w, ids


def moe_ref(x, w1, w2, weights, ids, expert_offset=0, b1=None, b2=None, rounding=None, act=None):
    """sum_k weights[m, k] * down(silu(gate) * up) of expert ids[m, k] (local expert ids[m, k] - expert_offset; the
    others contribute nothing). rounding: the type the kernels store the GEMM outputs in; act: the activation as
    the kernels compute it (default silu(gate) * up in float64)."""
    M, topk = ids.shape
    N = w1.shape[1] // 2
    out = torch.zeros(M, w2.shape[1], dtype=F64)
    rnd = (lambda t: t.to(rounding).double()) if rounding is not None else (lambda t: t)
    for m_ in range(M):
        for j in range(topk):
            e = int(ids[m_, j]) - expert_offset
            if not 0 <= e < w1.shape[0]:
                continue
            h = x[m_].double() @ w1[e].double().T + (b1[e].double() if b1 is not None else 0)
            h = rnd(h)
            a = act(h[:N], h[N:]) if act else h[:N] * torch.sigmoid(h[:N]) * h[N:]
            y = rnd(a.double() @ w2[e].double().T + (b2[e].double() if b2 is not None else 0))
            out[m_] += weights[m_, j].double() * y
    return out


def silu_mul_rounded(dtype):
    """silu_and_mul as the kernel rounds it: SiLU in float32, rounded to `dtype`, times up in `dtype`."""
    def act(g, u):
        g = g.to(dtype).float()
        return ((g / (1 + torch.exp(-g))).to(dtype) * u.to(dtype)).double()
    return act


def sorted_idx_case(M, E, topk):
    """_get_sorted_idx (tl.sort of (expert, lane) keys, atomic counters, scatter): each expert's routes in one run
    at [exp_start, exp_end)."""
    def run():
        m = load("fused_moe")
        _, ids = routing(M, E, topk)
        sorted_idx, start, end = m._get_sorted_idx(ids, E)
        flat = ids.flatten()
        counts = torch.bincount(flat, minlength=E)
        runs = torch.cat([sorted_idx[int(s):int(e)].sort().values for s, e in zip(start, end)])
        want = torch.cat([torch.nonzero(flat == e).flatten() for e in range(E)])
        return {"exp_end": exact(end, counts.cumsum(0)), "exp_start": exact(start, counts.cumsum(0) - counts),
                "routes by expert": exact(runs, want)}
    return run


def pin_fused_moe(m):
    if len(m.fused_moe_kernel.configs) > 1:  # first of the sm90 configs of the library's list
        pin(m.fused_moe_kernel, BLOCK_SIZE_M=64, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32)


def fused_moe_case(dtype, M=20, E=5, topk=3, K=200, inter=136, bias=False, renorm=False, local=None, compact=False):
    """fused_moe: the expert GEMMs (`fused_moe_kernel` through its autotuner, pinned to the library's
    BLOCK_SIZE_M 64 / BLOCK_SIZE_N 256 / BLOCK_SIZE_K 32 config, or the compact routed-block kernel, which the
    wrapper takes on sm90+ for CUDA tensors at 32 or more routes an expert), silu_and_mul and moe_reduce. local
    = (offset, count): an expert-parallel shard holding experts offset .. offset + count - 1 of E."""
    def run():
        m = load("fused_moe")
        pin_fused_moe(m)
        CAPABILITY[0] = (9, 0)
        off, n_local = local or (0, E)
        x = torch.randn(M, K).to(dtype)
        w1 = (torch.randn(n_local, 2 * inter, K) / K ** 0.5).to(dtype)
        w2 = (torch.randn(n_local, K, inter) / inter ** 0.5).to(dtype)
        b1 = torch.randn(n_local, 2 * inter).to(dtype) if bias else None
        b2 = torch.randn(n_local, K).to(dtype) if bias else None
        weights, ids = routing(M, E, topk)
        if compact:
            assert m._should_use_compact_moe(x, w1, w2, ids, E, off)
        out = m.fused_moe(x, w1, w2, weights, ids, topk, w1_bias=b1, w2_bias=b2, expert_offset=off,
                          num_experts=E, renormalize=renorm)
        if renorm:
            weights = weights / weights.sum(-1, keepdim=True)
        rounding = None if dtype == F32 else dtype
        ref = moe_ref(x, w1, w2, weights, ids, off, b1, b2, rounding, silu_mul_rounded(dtype) if rounding else None)
        return {"out": (out, ref, tol_of(dtype))}
    return run


def moe_reduce_case(fp32_acc):
    def run():
        m = load("fused_moe")
        h = torch.randn(37, 3, 300).to(BF16)
        w = torch.rand(37, 3)
        out = m.moe_reduce(h, w, fp32_acc=fp32_acc)
        wd = w.double() if fp32_acc else w.to(BF16).double()
        return {"out": (out, (h.double() * wd[..., None]).sum(1), 2e-2)}
    return run


def w8a8_moe_gemm_case():
    """One int8 expert GEMM through fused_moe_w8a8_kernel_launcher (`fused_moe_w8a8_kernel`, int32 sums, per-token
    and per-channel scales, fp16 out), the routes sorted by _get_sorted_idx."""
    def run():
        m, fm = load("w8a8_fused_moe"), load("fused_moe")
        if len(m.fused_moe_w8a8_kernel.configs) > 1:
            pin(m.fused_moe_w8a8_kernel, BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)
        M, E, topk, K, N = 20, 4, 2, 200, 136
        a = torch.randint(-127, 128, (M, K), dtype=torch.int8)
        a_s = torch.rand(M, 1) * 1e-2
        b = torch.randint(-127, 128, (E, N, K), dtype=torch.int8)
        b_s = torch.rand(E, N, 1) * 1e-2
        _, ids = routing(M, E, topk)
        sorted_idx, start, end = fm._get_sorted_idx(ids, E)
        c = torch.zeros(M, topk, N, dtype=F16)
        m.fused_moe_w8a8_kernel_launcher(a, a_s, b, b_s, c, sorted_idx, start, end, top_k=topk, num_tokens=M)
        ref = torch.stack([torch.stack([(a[i].double() @ b[ids[i, j]].double().T) * a_s[i].double()
                                        * b_s[ids[i, j], :, 0].double() for j in range(topk)]) for i in range(M)])
        return {"c": (c, ref, tol_of(F16))}
    return run


def w8a8_moe_case(quant_dtype):
    """fused_moe_w8a8 end to end: int8 or float8 GEMMs, silu_and_mul in fp16, the activation re-quantized per token
    (per_token_quant_int8) before the down GEMM. The reference takes the kernels' roundings (fp16 GEMM outputs and
    activation, the per-token quantization of the activation) in float64; the activation codes it computes can
    differ from the kernel's by one step where its fp16 rounding ties, so the output is compared within 2e-2."""
    def run():
        m = load("w8a8_fused_moe")
        if len(m.fused_moe_w8a8_kernel.configs) > 1:
            pin(m.fused_moe_w8a8_kernel, BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64)
        M, E, topk, K, inter = 20, 4, 2, 200, 136
        qmax = 127.0 if quant_dtype == torch.int8 else 448.0

        def quant(w):  # per output channel
            s = w.abs().amax(-1, keepdim=True) / qmax
            q = (w / s).round() if quant_dtype == torch.int8 else w / s
            return q.to(quant_dtype), s.float()
        x = torch.randn(M, K)
        xq, xs = quant(x)
        w1q, w1s = quant(torch.randn(E, 2 * inter, K))
        w2q, w2s = quant(torch.randn(E, K, inter))
        weights, ids = routing(M, E, topk)
        out = m.fused_moe_w8a8(xq, xs, w1q, w1s, w2q, w2s, weights, ids, topk, out_dtype=F16, quant_dtype=quant_dtype)
        ref = torch.zeros(M, K, dtype=F64)
        act = silu_mul_rounded(F16)
        for i in range(M):
            for j in range(topk):
                e = int(ids[i, j])
                h = ((xq[i].double() @ w1q[e].double().T) * xs[i].double() * w1s[e, :, 0].double()).to(F16).double()
                a = act(h[:inter], h[inter:])
                s = a.abs().max().clamp_min(1e-7) / qmax
                aq = (a / s).float()
                aq = torch.sign(aq) * torch.floor(aq.abs() + 0.5) if quant_dtype == torch.int8 else \
                    aq.to(quant_dtype).double()
                y = ((aq.double() @ w2q[e].double().T) * s * w2s[e, :, 0].double()).to(F16).double()
                ref[i] += weights[i, j].double() * y
        return {"out": (out, ref, 2e-2)}
    return run


check("_get_sorted_idx 37 tokens top-3 of 7 experts", sorted_idx_case(37, 7, 3))
check("_get_sorted_idx 300 tokens top-2 of 4 (several CTAs)", sorted_idx_case(300, 4, 2))
check("fused_moe fp32 20 tokens top-3 of 5, K 200, inter 136", fused_moe_case(F32))
check("fused_moe bf16 top-3 of 5", fused_moe_case(BF16))
check("fused_moe fp32 with biases, renormalized", fused_moe_case(F32, bias=True, renorm=True))
check("fused_moe fp32 EP shard: experts 2..4 of 7", fused_moe_case(F32, E=7, local=(2, 3)))
check("fused_moe bf16 compact routed blocks (sm90, 35 routes an expert)", fused_moe_case(BF16, M=70, E=4, topk=2,
                                                                                         compact=True))
check("moe_reduce bf16 (weights in bf16)", moe_reduce_case(False))
check("moe_reduce bf16 fp32 accumulation", moe_reduce_case(True))
check("fused_moe_w8a8_kernel_launcher int8 expert GEMM -> fp16", w8a8_moe_gemm_case())
check("fused_moe_w8a8 int8 end to end", w8a8_moe_case(torch.int8))
check("fused_moe_w8a8 fp8 e4m3 end to end", w8a8_moe_case(E4M3))

# --- blocked fp8: blocked_gemm_fp8.py, blocked_fp8_fused_moe.py ------------------------------------------------------

def quant_fp8_case(dtype, fmt=E4M3, ue8m0=False, trans=False, M=37, K=384, lead=None):
    """quant_fp8 / per_token_group_quant_fp8 (`_quant_fp8_kernel`): per-row 128-groups, scale = amax / fmax (or its
    power-of-two ceiling, 'ue8m0', through the bit tricks of fast_log2_ceil / fast_pow2), x * (fmax / amax)
    clamped and rounded to the format; trans: column-major scales with a padded pitch."""
    def run():
        m = load("blocked_gemm_fp8")
        shape = (lead, M, K) if lead else (M, K)
        x = (torch.randn(*shape) * torch.rand(*shape[:-1], 1) * 4).to(dtype)
        x.view(-1, K)[3, :128] = 1e-9  # a group below the 1e-6 amax floor
        x.view(-1, K)[4, 128:256] *= 1000  # scales above 1
        fmt_s = "ue8m0" if ue8m0 else None
        if lead:
            q, s = m.per_token_group_quant_fp8(x, 128, fmt, scale_fmt=fmt_s)  # returned as [lead * M, ...] views
            q, s = q.view(shape), s.view(*shape[:-1], K // 128)
        else:
            q, s = m.quant_fp8(x, 128, fmt, trans_scale=trans, scale_fmt=fmt_s)
        top = torch.finfo(fmt).max
        amax = x.float().unflatten(-1, (-1, 128)).abs().amax(-1).clamp_min(1e-6)
        s_ref = ue8m0_scale(amax, top) if ue8m0 else amax.double() / top
        out = {"scales": (s, s_ref, 0.0 if ue8m0 else 1e-6),
               "quantized rel": fp8_values(q, x.double() / s.double().repeat_interleave(128, -1), fmt)}
        if ue8m0:
            out["ties to even"] = fp8_bits(q, x.float() / s.repeat_interleave(128, -1), fmt)
        if trans:
            out["column-major scales"] = exact(torch.tensor(s.stride()), torch.tensor([1, 40]))
        return out
    return run


def blocked_gemm_case(out_dtype, tma=False, M=37, N=200, K=384):
    """blocked_gemm_fp8: A [M, K] with 1x128 scales, B [K, N] with 128x128 scales (DeepSeek-V3's blocking), the
    accumulator rescaled at every K block (`_gemm_fp8_kernel`, pinned to BLOCK_M 64 / BLOCK_N 128). tma: the
    Hopper path (`_gemm_fp8_tma_kernel`, tensor descriptors, a pre_hook setting their block shapes), taken when
    utils.supports_tma() says yes; on this machine it says no, so the case stands it in."""
    def run():
        m, u = load("blocked_gemm_fp8"), load("utils")
        if len(m._gemm_fp8_kernel.configs) > 1:
            pin(m._gemm_fp8_kernel, BLOCK_M=64, BLOCK_N=128)
        if len(m._gemm_fp8_tma_kernel.configs) > 1:
            pin(m._gemm_fp8_tma_kernel, BLOCK_M=128, BLOCK_N=64)
        a = (torch.randn(M, K) * 50).clamp(-448, 448).to(E4M3)
        b = (torch.randn(N, K) * 50).clamp(-448, 448).to(E4M3).T  # [K, N], K contiguous
        a_s = torch.rand(M, K // 128) * 1e-2 + 1e-3
        b_s = torch.rand(K // 128, -(-N // 128)) * 1e-2 + 1e-3
        saved = u.supports_tma
        if tma:
            u.supports_tma = lambda: True
            from triton.tools.tensor_descriptor import TensorDescriptor
            u.TensorDescriptor = TensorDescriptor
        try:
            c = m.blocked_gemm_fp8(a, a_s, b, b_s, out_dtype=out_dtype)
        finally:
            u.supports_tma = saved
        ad = a.double() * a_s.double().repeat_interleave(128, 1)
        bd = b.double() * b_s.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:, :N]
        return {"c": (c, ad @ bd, tol_of(out_dtype))}
    return run


def blocked_moe_weights(E, N, K):
    w = torch.randn(E, N, K) / K ** 0.5
    s = w.unflatten(1, (-1, 128)).unflatten(-1, (-1, 128)).abs().amax((2, 4)) / 448.0
    q = (w / s.repeat_interleave(128, 1).repeat_interleave(128, 2)).to(E4M3)
    return q, s, q.double() * s.double().repeat_interleave(128, 1).repeat_interleave(128, 2)


def blocked_moe_gemm_case(compact):
    """One expert GEMM of the blocked-fp8 MoE: fused_moe_blocked_fp8_kernel_launcher (per-expert tiles) or
    fused_moe_blocked_fp8_compact_kernel_launcher (routed blocks from _get_sorted_idx_blocks), A [M, K] fp8 with
    1x128 scales, B [E, N, K] fp8 with 128x128 scales, a bias, bf16 out."""
    def run():
        m, fm = load("blocked_fp8_fused_moe"), load("fused_moe")
        M, E, topk, K, N = 20, 4, 2, 384, 256
        x = torch.randn(M, K)
        xs = x.unflatten(-1, (-1, 128)).abs().amax(-1) / 448.0
        xq = (x / xs.repeat_interleave(128, 1)).to(E4M3)
        wq, ws, wd = blocked_moe_weights(E, N, K)
        bias = torch.randn(E, N)
        _, ids = routing(M, E, topk)
        c = torch.zeros(M, topk, N, dtype=BF16)
        if compact:
            sorted_idx, _, end, block_end, block_ids, block_offs = fm._get_sorted_idx_blocks(ids, E, E, 0, 16)
            m.fused_moe_blocked_fp8_compact_kernel_launcher(xq, xs, wq, ws, c, sorted_idx, end, block_end, block_ids,
                                                            block_offs, bias=bias, top_k=topk, block_m=16,
                                                            block_n=128)
        else:
            sorted_idx, start, end = fm._get_sorted_idx(ids, E)
            m.fused_moe_blocked_fp8_kernel_launcher(xq, xs, wq, ws, c, sorted_idx, start, end, bias=bias, top_k=topk,
                                                    num_tokens=M, block_m=64, block_n=128)
        xd = xq.double() * xs.double().repeat_interleave(128, 1)
        ref = torch.stack([torch.stack([xd[i] @ wd[ids[i, j]].T + bias[ids[i, j]].double() for j in range(topk)])
                           for i in range(M)])
        return {"c": (c, ref, tol_of(BF16))}
    return run


def blocked_moe_case():
    """fused_moe_blocked_fp8 end to end (the gate-up GEMM, silu_and_mul in bf16, quant_fp8 of the activation, the
    down GEMM, moe_reduce). The reference takes the kernels' roundings (bf16 GEMM outputs and activation, the
    activation's fp8 codes from its own 128-group scales) in float64."""
    def run():
        m = load("blocked_fp8_fused_moe")
        M, E, topk, K, inter = 20, 4, 2, 256, 256
        x = torch.randn(M, K)
        xs = x.unflatten(-1, (-1, 128)).abs().amax(-1) / 448.0
        xq = (x / xs.repeat_interleave(128, 1)).to(E4M3)
        w1q, w1s, w1d = blocked_moe_weights(E, 2 * inter, K)
        w2q, w2s, w2d = blocked_moe_weights(E, K, inter)
        weights, ids = routing(M, E, topk)
        out = m.fused_moe_blocked_fp8(xq, xs, w1q, w1s, w2q, w2s, weights, ids, topk, out_dtype=BF16)
        xd = xq.double() * xs.double().repeat_interleave(128, 1)
        act = silu_mul_rounded(BF16)
        ref = torch.zeros(M, K, dtype=F64)
        for i in range(M):
            for j in range(topk):
                e = int(ids[i, j])
                h = (xd[i] @ w1d[e].T).to(BF16).double()
                a = act(h[:inter], h[inter:])
                s = a.unflatten(-1, (-1, 128)).abs().amax(-1).clamp_min(1e-6) / 448.0
                aq = (a / s.repeat_interleave(128)).float().to(E4M3).double() * s.repeat_interleave(128)
                ref[i] += weights[i, j].double() * (aq @ w2d[e].T).to(BF16).double()
        return {"out": (out, ref, tol_of(BF16))}
    return run


check("quant_fp8 bf16 -> e4m3, groups of 128", quant_fp8_case(BF16))
check("quant_fp8 fp32 -> e5m2, column-major scales", quant_fp8_case(F32, E5M2, trans=True))
check("quant_fp8 bf16 ue8m0 (power-of-two) scales", quant_fp8_case(BF16, ue8m0=True))
check("per_token_group_quant_fp8 fp16 3-D [2, 37, 384]", quant_fp8_case(F16, lead=2))
check("blocked_gemm_fp8 37x200x384 -> bf16", blocked_gemm_case(BF16))
check("blocked_gemm_fp8 37x200x384 -> fp32", blocked_gemm_case(F32))
check("blocked_gemm_fp8 TMA path (tensor descriptors) -> fp32", blocked_gemm_case(F32, tma=True))
check("fused_moe_blocked_fp8_kernel_launcher expert GEMM + bias", blocked_moe_gemm_case(False))
check("fused_moe_blocked_fp8_compact_kernel_launcher expert GEMM", blocked_moe_gemm_case(True))
check("fused_moe_blocked_fp8 end to end bf16", blocked_moe_case())

def ep_case(fp8):
    """fused_moe_ep.py's ep_scatter (per-expert start offsets by tl.cumsum, m_indices filled in 128-row chunks, each
    route given a row by an atomic counter) -> ep_gather (the weighted sum of each token's rows), or
    fused_moe_ep_fp8.py's ep_scatter_fp8 (values and their scales). The expert row counts are 128-aligned, as
    DeepEP's are; a route's row is any free one in its expert's range (atomics), so the checks go through
    output_index."""
    def run():
        ep = load("fused_moe_ep")
        M, topk, H, E = 20, 2, 1024, 3
        _, ids = routing(M, E, topk)
        ids[3, 1] = -1  # a route to an expert of another rank
        counts = torch.tensor([128, 256, 128], dtype=I32)
        total = int(counts.sum())
        x = torch.randn(M, H).to(BF16)
        out = torch.zeros(total, H, dtype=BF16)
        m_indices = torch.full((total,), -5, dtype=I32)
        start = torch.empty(E, dtype=I32)
        index = torch.full((M, topk), -7, dtype=I64)
        if fp8:
            xq, xs = (x.float() * 10).to(E4M3), torch.rand(M, H // 128)
            out, out_s = torch.zeros(total, H, dtype=E4M3), torch.zeros(total, H // 128)
            load("fused_moe_ep_fp8").ep_scatter_fp8(xq, xs, ids, counts, start, out, out_s, m_indices, index)
        else:
            ep.ep_scatter(x, ids, counts, start, out, m_indices, index)
        lo = torch.cat([torch.zeros(1, dtype=I64), counts.long().cumsum(0)[:-1]])
        valid = ids >= 0
        rows = index[valid]
        res = {"m_indices": exact(m_indices, torch.repeat_interleave(torch.arange(E), counts.long())),
               "start after scatter (start + routes)": exact(start, lo + torch.bincount(ids[valid], minlength=E)),
               "rows in their expert's range": exact(((rows >= lo[ids[valid]]) & (rows < lo[ids[valid]]
                                                                                   + counts[ids[valid]])).long(),
                                                     torch.ones(len(rows), dtype=I64)),
               "rows distinct": exact(torch.tensor(len(set(rows.tolist()))), torch.tensor(len(rows))),
               "rows of a foreign route untouched": exact(index[~valid], torch.full((1,), -7))}
        tok = torch.nonzero(valid)[:, 0]
        if fp8:
            res["rows hold the token"] = exact(out[rows].view(U8), xq[tok].view(U8))
            res["rows hold its scales"] = exact(out_s[rows], xs[tok])
            return res
        res["rows hold the token"] = exact(out[rows].view(torch.int16), x[tok].view(torch.int16))
        y = torch.randn(total, H).to(BF16)
        w = torch.rand(M, topk)
        g = torch.empty(M, H, dtype=BF16)
        ep.ep_gather(y, ids, w, index, g)
        ref = torch.zeros(M, H, dtype=F64)
        for i in range(M):  # the kernel sums in the output's type (bf16), in route order
            acc = torch.zeros(H, dtype=BF16)
            for j in range(topk):
                if ids[i, j] >= 0:
                    acc = acc + y[index[i, j]] * w[i, j].to(BF16)
            ref[i] = acc.double()
        res["gather"] = (g, ref, 1e-2)
        return res
    return run


check("ep_scatter -> ep_gather bf16 (atomic rows, one foreign route)", ep_case(False))
check("ep_scatter_fp8 values and scales", ep_case(True))


# --- sampling, top-k and routers ----------------------------------------------------------------------------------

MASK32 = (1 << 32) - 1


def rand_ref(seed, offset):
    """tl.rand(seed, offset) for an int64 seed and an int32 offset: the first word of Philox-4x32 (10 rounds;
    counter (offset, 0, 0, 0), key (seed's low and high 32 bits)) as uint_to_uniform_float makes it a float32."""
    c0, c1, c2, c3 = offset & MASK32, 0, 0, 0
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for _ in range(10):
        p0, p2 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p2 >> 32) ^ c1 ^ k0, p2 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
        k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
    signed = c0 - (1 << 32) if c0 >= 1 << 31 else c0
    return float(torch.tensor(-signed - 1 if signed < 0 else signed, dtype=F32) * torch.tensor(4.6566127342e-10,
                                                                                            dtype=F32))


def multinomial_case(indices):
    """multinomial_sampling: scores sorted in descending order; the token is the first whose cumulative score
    reaches tl.rand(seed, offset) (blocks of 128 scanned with tl.cumsum and a running sum)."""
    def run():
        m = load("multinomial_sampling")
        B, V = 6, 300
        scores = torch.softmax(torch.randn(B, V) * 0.5, -1).sort(-1, descending=True).values  # flat: past block 1
        seeds = torch.randint(0, 2 ** 40, (B,), dtype=I64)
        offsets = torch.randint(0, 2 ** 20, (B,), dtype=I64)
        idx = torch.stack([torch.randperm(V) for _ in range(B)]) if indices else None
        got = m.multinomial_sampling(scores, seeds, offsets, idx)
        want = []
        for b in range(B):
            u = rand_ref(int(seeds[b]), int(offsets[b]))
            c = scores[b].double().cumsum(0)
            pos = int(torch.searchsorted(c, torch.tensor(u, dtype=F64)))
            pos = min(pos, V - 1)
            want.append(int(idx[b, pos]) if indices else pos)
        return {"tokens": exact(got, torch.tensor(want))}
    return run


def bitonic_topk_case(k, lens, q_lens=None, V=600):
    """bitonic_topk: per-block bitonic argsorts (a persistent kernel over rows x blocks; partial sorts for short
    rows) then a merge of the blocks keeping the top k; ids of the k largest of each row's first kv_len scores in
    descending order, -1 past the row's length. q_lens: rows per request (kv_seqlens repeated)."""
    def run():
        m = load("bitonic_topk")
        kv = torch.tensor(lens, dtype=I32)
        rows = kv.repeat_interleave(torch.tensor(q_lens)) if q_lens else kv
        scores = torch.randn(len(rows), V)
        got = m.bitonic_topk(scores, torch.tensor(q_lens or [1] * len(lens), dtype=I32), kv, k)
        want = torch.full((len(rows), k), -1, dtype=I64)
        for r, L in enumerate(rows.tolist()):
            top = scores[r, :L].topk(min(k, L)).indices
            want[r, :len(top)] = top
        return {"ids": exact(got, want)}
    return run


def noaux_tc_case(n_group, topk_group, top_k, renorm):
    """fused_noaux_tc_routing (DeepSeek-V3's router, autotuned over num_warps): sigmoid scores plus a correction
    bias choose the groups (sum of each group's top two) and then the experts; the weights are the plain sigmoid
    scores, renormalized and scaled."""
    def run():
        m = load("fused_noaux_tc")
        B, E = 37, 64
        logits = torch.randn(B, E)
        bias = torch.rand(E) * 0.1
        w, ids = m.fused_noaux_tc_routing(logits, bias, E, n_group, topk_group, top_k, renorm, 2.5)
        s = torch.sigmoid(logits.double())
        c = s + bias.double()
        gs = c.view(B, n_group, -1).topk(2, -1).values.sum(-1)
        groups = gs.topk(topk_group, -1).indices
        keep = torch.zeros(B, n_group, dtype=torch.bool).scatter_(1, groups, True)
        c = c.masked_fill(~keep.repeat_interleave(E // n_group, 1), 0.0)
        ref_ids = c.topk(top_k, -1).indices
        ref_w = s.gather(1, ref_ids)
        if renorm:
            ref_w = ref_w / (ref_w.sum(-1, keepdim=True) + 1e-20)
        return {"ids": exact(ids, ref_ids), "weights": (w, ref_w * 2.5, 1e-6)}
    return run


def single_group_router_case():
    """fused_single_group_topk_router (192 experts, top 8, one group): argmax of score + bias eight times; the
    weights are the scores, normalized and scaled."""
    def run():
        m = load("fused_single_group_router")
        B = 37
        scores = torch.rand(B, 192)
        bias = torch.randn(192) * 0.1
        w, ids = m.fused_single_group_topk_router(scores, bias, num_experts=192, top_k=8, routed_scaling_factor=2.5)
        ref_ids = (scores.double() + bias.double()).topk(8, -1).indices
        ref_w = scores.double().gather(1, ref_ids)
        return {"ids": exact(ids, ref_ids), "weights": (w, ref_w / (ref_w.sum(-1, keepdim=True) + 1e-20) * 2.5, 1e-6)}
    return run


check("multinomial_sampling 6x300 (Philox tl.rand, 3 blocks of 128)", multinomial_case(False))
check("multinomial_sampling with permuted indices", multinomial_case(True))
check("bitonic_topk k 64, rows of 600 / 300 / 37 / 64 / 5 / 1", bitonic_topk_case(64, [600, 300, 37, 64, 5, 1]))
check("bitonic_topk k 128, 3 query rows a request", bitonic_topk_case(128, [600, 130, 100], q_lens=[1, 3, 2]))
check("fused_noaux_tc_routing 8 groups, top 4 groups, top 8", noaux_tc_case(8, 4, 8, True))
check("fused_noaux_tc_routing 1 group, top 6, not renormalized", noaux_tc_case(1, 1, 6, False))
check("fused_single_group_topk_router 192 experts top 8", single_group_router_case())

# --- LoRA, gated delta, cache copies, DeepSeek indexers and V4 helpers ----------------------------------------------

def fused_lora_case(dtype, cum):
    """fused_lora (autotuned over its two configs, restore_value=['c_ptr']): per sequence, x @ A_a^T (rounded to
    B's type) times the adapter's scaling (in B's type), then @ B_a, for adapters of ranks 16, 5 and 0 packed along
    one rank axis.
    cum: added into an existing output (the adapter of rank 0 leaves its rows alone; without cum they are zeroed).
    `_atomic_store` compares B's tl.dtype with torch.float16 / torch.float32 (never equal under Triton), so the add
    is a load, add and store either way."""
    def run():
        m = load("fused_lora")
        K, N = 200, 136
        ranks, scaling = [16, 5, 0], [0.5, 2.0, 1.0]
        a = torch.randn(sum(ranks), K).to(dtype)
        b = torch.randn(sum(ranks), N).to(dtype)
        seq_lens, adapters = [30, 7, 12, 45], [1, 0, 2, 0]
        x = torch.randn(sum(seq_lens), K).to(dtype)
        out = torch.randn(sum(seq_lens), N).to(dtype) if cum else None
        out_before = out.clone() if cum else None
        want = out.double().clone() if cum else torch.zeros(sum(seq_lens), N, dtype=F64)
        rank_start = cumsum0(ranks, I64)[:-1]
        got = m.fused_lora(x, a, b, torch.tensor(scaling, dtype=dtype), rank_start, torch.tensor(ranks, dtype=I64),
                           cumsum0(seq_lens, I64)[:-1], torch.tensor(seq_lens, dtype=I64),
                           torch.tensor(adapters, dtype=I64), max(ranks), max(seq_lens), output=out, cum=cum)
        off = 0
        for L, ad in zip(seq_lens, adapters):  # the kernel's roundings: x @ A^T and its scaling in B's type
            r0, r = int(rank_start[ad]), ranks[ad]
            if r:
                ar = (x[off:off + L].double() @ a[r0:r0 + r].double().T).to(dtype)
                ar = (ar * torch.tensor(scaling[ad], dtype=dtype)).double()
                c = ar @ b[r0:r0 + r].double()
                if cum:
                    want[off:off + L] = (c.to(dtype) + out_before[off:off + L]).double()
                else:
                    want[off:off + L] = c
            off += L
        return {"out": (got, want, tol_of(dtype))}
    return run


def gated_delta_case(dtype, four_d, ratio=2, with_mask=True):
    """gated_delta_preprocess: q / k L2-normalized and repeated to the value heads, beta = sigmoid(b), g = -exp(A) *
    softplus(a + dt_bias) (here a_log_exp given), -1e6 at the init tokens of init_token_mask."""
    def run():
        m = load("gated_delta_preprocess")
        B, T, Hk, D = 2, 21, 3, 96
        Hv = Hk * ratio
        q, k = (torch.randn(B, T, Hk, D).to(dtype) for _ in range(2))
        shape = (B, T, Hk, ratio) if four_d else (B, T, Hv)
        b, a = torch.randn(*shape).to(dtype), torch.randn(*shape).to(dtype)
        a[0, 0] = 30.0  # the softplus cut-over at 20
        dt_bias, a_log_exp = torch.randn(Hv), -torch.rand(Hv)
        mask = (torch.rand(T) < 0.2) if with_mask else None
        qo, ko, beta, g = m.gated_delta_preprocess(q, k, b, a, dt_bias, a_log_exp, ratio, init_token_mask=mask)
        qd, kd = q.double(), k.double()
        qn = (qd / torch.sqrt((qd * qd).sum(-1, keepdim=True) + 1e-6)).repeat_interleave(ratio, 2)
        kn = (kd / torch.sqrt((kd * kd).sum(-1, keepdim=True) + 1e-6)).repeat_interleave(ratio, 2)
        bd, ad = b.double().reshape(B, T, Hv), a.double().reshape(B, T, Hv)
        g_ref = a_log_exp.double() * torch.nn.functional.softplus(ad + dt_bias.double())
        if with_mask:
            g_ref = g_ref.masked_fill(mask[None, :, None], -1.0e6)
        return {"q": (qo, qn, tol_of(dtype)), "k": (ko, kn, tol_of(dtype)),
                "beta": (beta, torch.sigmoid(bd), tol_of(dtype)), "g": (g, g_ref, 1e-5)}
    return run


def copy_packed_cache_case():
    """copy_packed_cache: whole logical blocks (3 pages of 40 bytes, as int64 words) copied in place between block
    offsets, for every leading row of the cache."""
    def run():
        m = load("copy_packed_cache")
        cache = torch.randint(0, 256, (2, 3, 12, 40), dtype=U8)
        want = cache.clone().view(2, 3, 4, 120)
        src, dst = torch.tensor([0, 2], dtype=I64), torch.tensor([3, 1], dtype=I64)
        want[:, :, [3, 1]] = want[:, :, [0, 2]].clone()
        m.copy_packed_cache(cache, src, dst, 3)
        return {"cache": exact(cache.view(2, 3, 4, 120), want)}
    return run


def fp8_index_case(decode, causal=False, trim=False, raw=False):
    """fp8_index (DeepSeek-V3.2's indexer logits over a paged fp8 key cache, split across programs with a while
    loop): sum over heads of relu(q_h . k) * q_scale[h], times the key's scale; causal rows -inf past their
    position (with raw_k_seqlens and a compress ratio, the position in the uncompressed sequence). Slots past the
    written length are not compared."""
    def run():
        m = load("ds_index")
        H, D, bs = 16, 64, 32
        k_lens = [70, 33, 96]
        q_lens = [1, 1, 1] if decode else [5, 33, 12]
        table, total = page_table(k_lens, bs)
        kc = (torch.randn(total, bs, D) * 3).to(E4M3)
        ks = torch.rand(total, bs)
        q = (torch.randn(sum(q_lens), H, D) * 3).to(E4M3)
        qs = torch.rand(sum(q_lens), H)
        ratio = 4 if raw else 1
        raw_lens = torch.tensor([L * 4 + 2 for L in k_lens], dtype=I32) if raw else None
        out = m.fp8_index(q, qs, kc, ks, cumsum0(q_lens), torch.tensor(k_lens, dtype=I32), table,
                          max_q_seqlen=None if decode else max(q_lens), causal=causal, raw_k_seqlens=raw_lens,
                          compress_ratio=ratio, return_row_k_seqlens=True, trim_causal_tail=trim)
        logits, row_lens = out
        got, want, want_rows = [], [], []
        t = 0
        for b, (ql, kl) in enumerate(zip(q_lens, k_lens)):
            j = torch.arange(kl)
            keys = kc[table[b, j // bs].long(), j % bs].double()
            kscale = ks[table[b, j // bs].long(), j % bs].double()
            for i in range(ql):
                lim = kl
                if causal:
                    lim = (int(raw_lens[b]) - ql + i + 1) // ratio if raw else kl - ql + i + 1
                    lim = min(max(lim, 0), kl)
                want_rows.append(lim)
                row = (torch.relu(q[t].double() @ keys.T) * qs[t].double()[:, None]).sum(0) * kscale
                row = row.masked_fill(j >= lim, float("-inf"))
                n = lim if trim else kl
                got.append(logits[t, :n])
                want.append(row[:n])
                t += 1
        got, want = torch.cat(got), torch.cat(want)
        fin = torch.isfinite(want)
        res = {"logits": (got[fin], want[fin], 1e-5), "row_k_seqlens": exact(row_lens, torch.tensor(want_rows))}
        if causal and not trim:
            res["-inf past the row"] = exact(torch.isinf(got[~fin]).long(), torch.ones((~fin).sum()))
        return res
    return run


def rope_first64(x, cos, sin, interleaved):
    """RoPE on the first 64 of 128 features as the DSA indexer kernels do it (float64): NeoX pairs (i, i + 32)
    with cos / sin indexed by feature, or adjacent pairs (2i, 2i + 1) with cos / sin indexed by pair."""
    x, cos, sin = x.double(), cos.double(), sin.double()
    out = x.clone()
    r = x[..., :64]
    if interleaved:
        pair = r.view(*r.shape[:-1], 32, 2).flip(-1).reshape(r.shape)
        c, s = cos[..., :32].repeat_interleave(2, -1), sin[..., :32].repeat_interleave(2, -1)
        sign = torch.tensor([-1.0, 1.0], dtype=F64).repeat(32)
    else:
        pair = torch.cat([r[..., 32:], r[..., :32]], -1)
        c, s = cos, sin
        sign = torch.cat([-torch.ones(32, dtype=F64), torch.ones(32, dtype=F64)])
    while c.dim() < r.dim():
        c, s = c.unsqueeze(-2), s.unsqueeze(-2)
    out[..., :64] = r * c + sign * pair * s
    return out


def dsa_q_case(interleaved):
    """prepare_dsa_indexer_q: RoPE, bf16, ue8m0-scaled fp8 per (token, head), the head weight and score scale
    folded into the scale. The kernel rounds the rotated values to bf16 before quantizing: the fp8 values are
    compared within half a step plus one bf16 rounding."""
    def run():
        m = load("dsa_indexer_preprocess")
        T, H = 21, 8
        q = torch.randn(T, H, 128).to(BF16)
        w = torch.rand(T, H)
        ang = torch.rand(T, 64) * 6
        cos, sin = torch.cos(ang), torch.sin(ang)
        qo, qs = m.prepare_dsa_indexer_q(q, w, cos, sin, 0.125, E4M3, interleaved)
        x = rope_first64(q, cos, sin, interleaved).to(BF16)
        scale = ue8m0_scale(x.float().abs().amax(-1).clamp_min(1e-6))
        v = x.double() / scale[..., None]
        y = fp8_values(qo, v)
        return {"scales": (qs, scale * w.double() * 0.125, 1e-6), "quantized rel": (y[0], y[1], y[2] + 2.0 ** -8)}
    return run


def dsa_k_case(interleaved):
    """prepare_dsa_indexer_k_cache (LayerNorm, bf16, RoPE, bf16, ue8m0 fp8 into the paged cache at each new
    token's position) and flatten_dsa_indexer_k_cache (each request's keys and scales gathered back, exactly)."""
    def run():
        m = load("dsa_indexer_preprocess")
        q_lens, hist, bs = [9, 1, 20], [30, 63, 0], 16
        kv_lens = [h + q for h, q in zip(hist, q_lens)]
        table, total = page_table(kv_lens, bs)
        T = sum(q_lens)
        k = (torch.randn(T, 128) * 2 + 0.5).to(BF16)
        nw, nb = torch.rand(128) + 0.5, torch.randn(128) * 0.1
        ang = torch.rand(T, 64) * 6
        cos, sin = torch.cos(ang), torch.sin(ang)
        kc = torch.zeros(total, bs, 128, dtype=E4M3)
        ksc = torch.zeros(total, bs)
        m.prepare_dsa_indexer_k_cache(k, nw, nb, cos, sin, kc, ksc, cumsum0(q_lens), torch.tensor(kv_lens, dtype=I32),
                                      table, max(q_lens), 1e-6, interleaved)
        kd = k.double()
        ln = ((kd - kd.mean(-1, keepdim=True)) / torch.sqrt(kd.var(-1, unbiased=False, keepdim=True) + 1e-6)
              * nw.double() + nb.double()).to(BF16)
        x = rope_first64(ln, cos, sin, interleaved).to(BF16)
        scale = ue8m0_scale(x.float().abs().amax(-1).clamp_min(1e-6))
        blk, slot = written(q_lens, hist, bs, table)
        y = fp8_values(kc[blk, slot], x.double() / scale[:, None])
        res = {"scales": exact(ksc[blk, slot].double(), scale), "quantized rel": (y[0], y[1], y[2] + 2.0 ** -7)}
        ko, kso = m.flatten_dsa_indexer_k_cache(kc, ksc, cumsum0(kv_lens), torch.tensor(kv_lens, dtype=I32), table,
                                                sum(kv_lens))
        j = torch.cat([torch.arange(L) for L in kv_lens])
        b = torch.repeat_interleave(torch.arange(3), torch.tensor(kv_lens))
        res["flattened keys"] = exact(ko.view(U8), kc[table[b, j // bs].long(), j % bs].view(U8))
        res["flattened scales"] = exact(kso, ksc[table[b, j // bs].long(), j % bs])
        return res
    return run


def hc_case():
    """DeepSeek-V4 hyper-connection helpers: hc_pre_reduce (sum over hc of pre * x, fp32 out) and hc_post_expand
    (post * x + comb @ residual per output stream), dim 300 over 256-wide tiles."""
    def run():
        m = load("dsv4.hc_prepost")
        N, hc, dim = 13, 4, 300
        x = torch.randn(N, hc, dim).to(BF16)
        pre = torch.rand(N, hc)
        r = m.hc_pre_reduce(x, pre, hc, out_dtype=F32)
        y = torch.randn(N, dim).to(BF16)
        post, comb = torch.rand(N, hc), torch.rand(N, hc, hc)
        e = m.hc_post_expand(y, x, post, comb, hc)
        want_e = post.double()[..., None] * y.double()[:, None] + torch.einsum("nos,nsd->nod", comb.double(),
                                                                                x.double())
        return {"pre_reduce": (r, (pre.double()[..., None] * x.double()).sum(1), 1e-6),
                "post_expand (bf16)": (e, want_e, tol_of(BF16))}
    return run


def v4_swiglu_case(limit, ue8m0):
    """v4_swiglu_and_quant_fp8: SwiGLU (gate clamped above, up clamped both ways at swiglu_limit), rounded to the
    input's type, then 128-group fp8 with ue8m0 or plain scales; 384 wide = three groups of a four-group CTA tile."""
    def run():
        m = load("v4_swiglu_quant")
        M, hidden = 37, 384
        gu = (torch.randn(M, 2 * hidden) * 4).to(BF16)
        q, s = m.v4_swiglu_and_quant_fp8(gu, swiglu_limit=limit, scale_fmt="ue8m0" if ue8m0 else None)
        g, u = gu.float()[:, :hidden], gu.float()[:, hidden:]
        if limit:
            g, u = g.clamp(max=limit), u.clamp(-limit, limit)
        act = (g / (1 + torch.exp(-g)) * u).to(BF16).float()
        amax = act.unflatten(-1, (-1, 128)).abs().amax(-1).clamp_min(1e-6)
        s_ref = ue8m0_scale(amax) if ue8m0 else amax.double() / 448
        return {"scales": (s, s_ref, 0.0 if ue8m0 else 1e-6),
                "quantized rel": fp8_values(q, act.double() / s.double().repeat_interleave(128, -1))}
    return run


def pack_window_case():
    """pack_window_tokens_fp8 (DeepSeek-V4 FlashMLA window cache: three views of one buffer): per token, 7 NoPE
    tiles of 64 quantized to e4m3 by a power-of-two scale (its e8m0 byte stored), the 64 RoPE values copied as
    bf16; tokens with slot or position -1 skipped; every other byte unchanged."""
    def run():
        m = load("v4_pack_window")
        n, slots, window = 6, 4, 8
        kv = (torch.randn(n, 512) * torch.rand(n, 1) * 10).to(BF16)
        kv[2, :64] = 1e-6  # a tile whose scale is the 1e-4 floor
        cache = torch.randint(0, 256, (slots, window, 584), dtype=U8).view(E4M3)
        slot = torch.tensor([0, 3, 1, -1, 3, 2], dtype=I32)
        pos = torch.tensor([5, 0, 7, 2, 6, -1], dtype=I32)
        before = cache.view(U8).clone()
        m.pack_window_tokens_fp8(kv, cache, slot, pos)
        flat, want = cache.view(U8).view(slots, -1), before.view(slots, -1).clone()
        got_q, ref_q = [], []
        for t in range(n):
            s, p = int(slot[t]), int(pos[t])
            if s < 0 or p < 0:
                continue
            tiles = kv[t, :448].float().view(7, 64)
            sc = (tiles.abs().amax(-1) / 448.0).clamp_min(1e-4)
            e = torch.ceil(torch.log2(sc))
            base, sbase = p * 576, window * 576 + p * 8
            want[s, base + 448:base + 576] = kv[t, 448:].contiguous().view(U8)
            want[s, sbase:sbase + 7] = (e + 127).to(U8)
            want[s, base:base + 448] = flat[s, base:base + 448]  # the fp8 values: compared within half a step
            got_q.append(flat[s, base:base + 448].view(E4M3))
            ref_q.append((tiles.double() / torch.exp2(e.double())[:, None]).flatten())
        y = fp8_values(torch.cat(got_q), torch.cat(ref_q))
        return {"bytes (scales, RoPE, untouched)": exact(flat, want), "NoPE rel": y,
                "NoPE ties to even": fp8_bits(torch.cat(got_q), torch.cat(ref_q))}
    return run


def sparse_indices_case():
    """v4_sparse_indices.py's four index builders against the index arithmetic written out per element:
    decode window indices (ring positions, padded rows), decode compressed top-k through block offsets, decode
    full-prefix compressed indices, and prefill indices (window plus compressed top-k, or plus the compressed
    prefix), each padded to multiples of 128 with -1."""
    def run():
        m = load("v4_sparse_indices")
        res = {}
        W = 50
        kv = torch.tensor([3, 50, 123, 7], dtype=I32)
        start = torch.tensor([2, 40, 100, 0], dtype=I32)
        padded = torch.tensor([False, False, False, True])
        ind, tl_len, wpos, dis, dis_len = m.build_decode_window_sparse_indices(kv, start, padded, W)
        want = torch.full((4, 1, 128), -1, dtype=I64)
        for b in range(4):
            wl = min(int(kv[b]), W)
            for o in range(wl):
                want[b, 0, o] = b * W + (int(kv[b]) - wl + o) % W
        res["window indices"] = exact(ind, want)
        res["window lengths"] = exact(tl_len, torch.tensor([1 if p else min(int(x), W) for x, p in zip(kv, padded)]))
        res["window positions"] = exact(wpos, start % W)
        res["disabled"] = exact(torch.cat([dis.flatten(), dis_len]), torch.cat([torch.full((512,), -1),
                                                                                 padded.long()]))
        bs, ratio, nb = 64, 4, 5
        offs = torch.stack([torch.randperm(40)[:nb] for _ in range(3)]).to(I32)
        topk = torch.randint(-1, 90, (3, 1, 150), dtype=I32)
        got = m.build_decode_compressed_sparse_indices(topk, offs, bs, ratio)
        want = torch.full((3, 1, 256), -1, dtype=I64)
        epb = bs // ratio
        for b in range(3):
            for c in range(150):
                lg = int(topk[b, 0, c])
                blk = lg * ratio // bs
                if lg >= 0 and blk < nb:
                    want[b, 0, c] = int(offs[b, blk]) * epb + lg % epb
        res["decode compressed"] = exact(got, want)
        ncomp = torch.tensor([0, 37, 80], dtype=I32)
        got = m.build_decode_prefix_compressed_sparse_indices(ncomp, offs, bs, ratio)
        want = torch.full((3, 1, 128), -1, dtype=I64)
        for b in range(3):
            for c in range(min(int(ncomp[b]), nb * epb)):
                want[b, 0, c] = int(offs[b, c // epb]) * epb + c % epb
        res["decode prefix compressed"] = exact(got, want)
        for with_topk in (True, False):
            starts = torch.tensor([0, 70], dtype=I32)
            q_lens = [5, 3]
            seq = torch.tensor([0] * 5 + [1] * 3, dtype=I32)
            posn = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2], dtype=I32)
            total = starts + torch.tensor(q_lens, dtype=I32)
            cu = torch.tensor([0, 60], dtype=I32)
            unc = torch.tensor([5, 55], dtype=I32)
            Wp, width = 16, 20
            ctop = torch.randint(-1, 18, (8, width), dtype=I32) if with_topk else None
            got, lens = m.build_prefill_sparse_indices(starts, total, seq, posn, cu, unc, Wp, 4, ctop,
                                                       compress_width=width)
            want = torch.full((8, 1, 128), -1, dtype=I64)
            want_len = []
            for t in range(8):
                b, ap = int(seq[t]), int(starts[seq[t]]) + int(posn[t])
                first = max(ap - Wp + 1, 0) - max(int(starts[b]) - Wp, 0)
                for o in range(min(ap + 1, Wp)):
                    want[t, 0, o] = first + o + int(cu[b])
                for c in range(width):
                    v = int(ctop[t, c]) if with_topk else (c if c < int(total[b]) // 4 else -1)
                    if v >= 0:
                        want[t, 0, Wp + c] = v + int(unc[b]) + int(cu[b])
                want_len.append(min(Wp + (ap + 1) // 4, 128))
            name = "prefill with compressed top-k" if with_topk else "prefill with compressed prefix"
            res[name] = exact(got, want)
            res[name + " lengths"] = exact(lens, torch.tensor(want_len))
        return res
    return run


def v4_token(cache, s, p, window):
    """One token of a V4 FlashMLA sparse fp8 cache [slots, window, 584] as flatten_v4_kv dequantizes it: the 7
    NoPE tiles times 2^(byte - 127) (the byte shifted into a float's exponent), rounded to bf16, then the RoPE
    bf16 values."""
    flat = cache.view(U8).view(cache.shape[0], -1)
    nope = flat[s, p * 576:p * 576 + 448].view(E4M3).float().view(7, 64)
    scale = (flat[s, window * 576 + p * 8:window * 576 + p * 8 + 7].int() << 23).view(F32)
    rope = flat[s, p * 576 + 448:p * 576 + 576].view(BF16)
    return torch.cat([(nope * scale[:, None]).to(BF16).flatten(), rope])


def v4_flatten_case():
    """flatten_v4_kv: per sequence [previous window from the ring buffer (slot per sequence, -1 -> zeros) | the
    chunk's raw KV | the compressed KV from its pages], the fp8 tokens dequantized; caches filled by
    pack_window_tokens_fp8 (the compressed cache has the same layout: block = slot, entry = position)."""
    def run():
        pw, fl = load("v4_pack_window"), load("v4_flatten_kv")
        W, ratio, bs = 8, 4, 4
        start = torch.tensor([0, 5, 19], dtype=I32)
        q_lens = torch.tensor([6, 3, 4], dtype=I32)
        kv = start + q_lens
        slot = torch.tensor([2, -1, 0], dtype=I64)
        win = torch.zeros(3, W, 584, dtype=E4M3)
        toks = (torch.randn(3 * W, 512) * 3).to(BF16)
        pw.pack_window_tokens_fp8(toks, win, torch.arange(3 * W, dtype=I32) // W, torch.arange(3 * W, dtype=I32) % W)
        ncomp = (kv // ratio).tolist()
        table, total = page_table(ncomp, bs, extra_blocks=2)
        comp = torch.zeros(total, bs, 584, dtype=E4M3)
        ctoks = (torch.randn(total * bs, 512) * 3).to(BF16)
        pw.pack_window_tokens_fp8(ctoks, comp, torch.arange(total * bs, dtype=I32) // bs,
                                  torch.arange(total * bs, dtype=I32) % bs)
        raw = torch.randn(int(q_lens.sum()), 512).to(BF16)
        flat_lens = start.clamp(max=W) + q_lens + kv // ratio
        out, cu = fl.flatten_v4_kv(win, table, kv, W, ratio, int(flat_lens.sum()), int(flat_lens.max()),
                                   fp8_compressed_kv_cache=comp, slot=slot, raw_kv=raw, raw_kv_lens=q_lens,
                                   start_pos=start)
        rows = []
        raw_off = 0
        for b in range(3):
            sp = int(start[b])
            prev = min(sp, W)
            w0 = sp - W if sp > W else 0
            for t in range(prev):
                rows.append(torch.zeros(512, dtype=BF16) if slot[b] < 0 else v4_token(win, int(slot[b]),
                                                                                       (w0 + t) % W, W))
            rows.extend(raw[raw_off:raw_off + int(q_lens[b])])
            raw_off += int(q_lens[b])
            for c in range(ncomp[b]):
                rows.append(v4_token(comp, int(table[b, c // bs]), c % bs, bs))
        return {"flat kv": exact(out[:, 0].view(torch.int16), torch.stack(rows).view(torch.int16)),
                "cu_seqlens_k": exact(cu, cumsum0(flat_lens.tolist()))}
    return run


def rotary_case(dtype, complex_mode=False, partial=False, S=37, Hq=6, Hk=2, D=128):
    """apply_rotary_pos_emb (query and key heads in one grid): rotate-half with cos / sin [S, D] (the kernel casts
    them to q's type), complex mode with adjacent pairs and cos / sin [S, D / 2], or a rope dim of half the head
    (applied in place; the other half untouched)."""
    def run():
        m = load("apply_rotary_pos_emb")
        q, k = torch.randn(S, Hq, D).to(dtype), torch.randn(S, Hk, D).to(dtype)
        R = D // 2 if partial else D
        ang = torch.rand(S, R // 2) * 6
        if complex_mode:
            cos, sin = torch.cos(ang), torch.sin(ang)
        else:
            cos, sin = torch.cos(ang).repeat(1, 2), torch.sin(ang).repeat(1, 2)
        if partial:
            qo, ko = q.clone(), k.clone()
            m.apply_rotary_pos_emb(qo, ko, cos, sin, qo, ko)
        else:
            qo, ko = m.apply_rotary_pos_emb(q, k, cos, sin, complex_mode=complex_mode)
        c, s = cos.to(dtype).double()[:, None], sin.to(dtype).double()[:, None]

        def rope(x):
            x = x.double()
            out = x.clone()
            if complex_mode:
                a, b = x[..., 0::2], x[..., 1::2]
                out[..., 0::2], out[..., 1::2] = a * c - b * s, b * c + a * s
            else:
                h = R // 2
                a, b = x[..., :h], x[..., h:R]
                out[..., :h], out[..., h:R] = a * c[..., :h] - b * s[..., :h], b * c[..., h:] + a * s[..., h:]
            return out
        return {"q": (qo, rope(q), tol_of(dtype)), "k": (ko, rope(k), tol_of(dtype))}
    return run


def turbo_fill_case(q_lens, hist, Hk=2, Dk=64, Dv=64, block=16):
    """fill_kv_cache with TurboQuant (quant_policy 42; the host rotates K and V by a normalized Walsh-Hadamard
    matrix): K as 3-bit Lloyd-Max codes of x / |x| plus a QJL sign bit per value (two per byte, the halves of the
    head) with |x| and the residual's norm / sqrt(D); V as 2-bit codes (four per byte, the quarters) with |x|. A code
    may differ from the float64 one only where x / |x| lies within 1e-5 of a boundary."""
    def run():
        m = load("fill_kv_cache")
        k, v, qs, ql, kvl, table, total = fill_inputs(q_lens, hist, Hk, Dk, Dv, block, F32)
        kc, vc = torch.zeros(total, block, Hk, Dk // 2, dtype=U8), torch.zeros(total, block, Hk, Dv // 4, dtype=U8)
        ksz, vsz = torch.zeros(total, block, Hk, 2), torch.zeros(total, block, Hk, 1)
        m.fill_kv_cache(k, v, kc, vc, qs, ql, kvl, max(q_lens), table, k_scales_zeros=ksz, v_scales_zeros=vsz,
                        quant_policy=QuantPolicy.TURBO_QUANT)
        blk, slot = written(q_lens, hist, block, table)
        res = {}
        for name, x, c, sz, bits, per in (("k", k, kc, ksz, 3, 2), ("v", v, vc, vsz, 2, 4)):
            D = x.shape[-1]
            xr = x.double() @ hadamard(D).T
            norm = torch.sqrt((xr * xr).sum(-1, keepdim=True) + 1e-8)
            u = xr / norm
            b = (torch.tensor([-1.7479274, -1.0499573, -0.5005497, 0.0, 0.5005497, 1.0499573, 1.7479274]) if bits == 3
                 else torch.tensor([-0.9815992, 0.0, 0.9815992])).double() / math.sqrt(D)
            idx = (u[..., None] > b).sum(-1)
            near = ((u[..., None] - b).abs() < 1e-5).any(-1)
            byte = c[blk, slot].long()
            width = 4 if bits == 3 else 2
            got = torch.cat([(byte >> (width * j)) & ((1 << width) - 1) for j in range(per)], -1)
            if bits == 3:
                cent = torch.tensor([-2.1519456, -1.3439093, -0.7560052, -0.2450942, 0.2450942, 0.7560052,
                                     1.3439093, 2.1519456]).double() / math.sqrt(D)
                r = u - cent[idx]
                want = idx | ((r >= 0).long() << 3)
                near |= r.abs() < 1e-5
                qjl = torch.sqrt((r * r).sum(-1) + 1e-8) / math.sqrt(D)
                res["k qjl norms"] = (sz[blk, slot, ..., 1], qjl, 1e-5)
            else:
                want = idx
            res[f"{name} norms"] = (sz[blk, slot, ..., 0], norm[..., 0], 1e-6)
            res[f"{name} codes (away from boundaries)"] = exact(torch.where(near, 0, got - want), torch.zeros_like(got))
        return res
    return run


def hadamard(d):
    h = torch.ones(1, 1, dtype=F64)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)])
    return h / math.sqrt(d)


def turbo_flatten_case():
    """flatten_kv_cache with TurboQuant codes: K = |x| * (centroid[code & 7] + qjl * (2 * sign - 1)), V = |x| *
    centroid[code] (in the rotated basis), from random codes and norms."""
    def run():
        m = load("flatten_kv_cache")
        lens, Hk, Dk, Dv, block = [37, 5, 60], 2, 64, 64, 16
        table, total = page_table(lens, block)
        n = sum(lens)
        kb, vb = torch.randint(0, 256, (n, Hk, Dk // 2), dtype=U8), torch.randint(0, 256, (n, Hk, Dv // 4), dtype=U8)
        kn, vn = torch.rand(n, Hk, 2) + 0.5, torch.rand(n, Hk, 1) + 0.5
        kc, vc = paged(lens, block, table, total, kb, fill=0), paged(lens, block, table, total, vb, fill=0)
        ksz, vsz = paged(lens, block, table, total, kn), paged(lens, block, table, total, vn)
        ko, vo = m.flatten_kv_cache(kc, vc, torch.tensor(lens, dtype=I32), table, out_size=n, k_scales_zeros=ksz,
                                    v_scales_zeros=vsz, quant_policy=QuantPolicy.TURBO_QUANT, out_dtype=F32,
                                    flatten_kv_layout="shd")
        kcode = torch.cat([kb.long() & 15, kb.long() >> 4], -1)
        vcode = torch.cat([(vb.long() >> (2 * j)) & 3 for j in range(4)], -1)
        kcent = torch.tensor([-2.1519456, -1.3439093, -0.7560052, -0.2450942, 0.2450942, 0.7560052, 1.3439093,
                              2.1519456]).double() / math.sqrt(Dk)
        vcent = torch.tensor([-1.5104176, -0.4527808, 0.4527808, 1.5104176]).double() / math.sqrt(Dv)
        kref = kn[..., :1].double() * (kcent[kcode & 7] + kn[..., 1:].double() * ((kcode >> 3) * 2 - 1))
        vref = vn.double() * vcent[vcode]
        return {"k": (ko, kref, 1e-6), "v": (vo, vref, 1e-6)}
    return run


def mla_fp8_flatten_case():
    """flatten_kv_cache_mla_fp8: a [blocks, block, 1, 656] fp8 cache holding per token 512 fp8 NoPE values, four
    float32 scales (one a 128 group) and 64 bf16 RoPE values, gathered to [1, S, 576] bf16."""
    def run():
        m = load("flatten_kv_cache")
        lens, block = [37, 5, 60], 16
        table, total = page_table(lens, block)
        n = sum(lens)
        nope = (torch.randn(n, 1, 512) * 50).to(E4M3)
        sc = torch.rand(n, 1, 4) * 0.1
        pe = torch.randn(n, 1, 64).to(BF16)
        tok = torch.cat([nope.view(U8), sc.view(U8), pe.view(U8)], -1)
        cache = paged(lens, block, table, total, tok, fill=0).view(E4M3)
        out = m.flatten_kv_cache_mla_fp8(cache, torch.tensor(lens, dtype=I32), table, out_size=n + block + 3)
        want = torch.cat([(nope.float() * sc.repeat_interleave(128, -1)).to(BF16), pe], -1)
        want = torch.cat([want, torch.zeros(block + 3, 1, 576, dtype=BF16)]).transpose(0, 1)
        return {"k": exact(out.view(torch.int16), want.view(torch.int16))}
    return run


check("apply_rotary_pos_emb fp32 rotate-half, GQA 6/2, 37 tokens", rotary_case(F32))
check("apply_rotary_pos_emb bf16", rotary_case(BF16))
check("apply_rotary_pos_emb fp16 complex mode (adjacent pairs)", rotary_case(F16, complex_mode=True))
check("apply_rotary_pos_emb fp32 partial rope (64 of 128), in place", rotary_case(F32, partial=True))
check("apply_rotary_pos_emb fp32 head 96 (masked half block)", rotary_case(F32, D=96, S=300))
check("fill_kv_cache TurboQuant K 3+1 bit / V 2 bit, prefill", turbo_fill_case([30, 7, 45], [5, 16, 0]))
check("fill_kv_cache TurboQuant decode", turbo_fill_case([1, 1, 1], [36, 15, 0]))
check("flatten_kv_cache TurboQuant -> fp32", turbo_flatten_case())
check("flatten_kv_cache_mla_fp8 (fp8 NoPE + scales + bf16 RoPE)", mla_fp8_flatten_case())
check("flatten_v4_kv (window ring, raw chunk, compressed pages)", v4_flatten_case())
def compressor_case(overlap, head_dim, fused_decode=False, chunked=True):
    """DeepSeek-V4's KV compressor (v4_compressor.py) over two sequences: a prefill chunk, a second prefill chunk
    with history (starting at a multiple of the ratio, as the kernels assume; left out where chunked is False),
    then six decode steps, each step
    score_kv (the compressed entries at positions p with (p + 1) % ratio == 0) then fill_compress_state (the
    ring buffer), or for decoding score_and_fill_state_decode (both in one tiled launch). Reference: at each
    compression point p, a per-channel softmax of score + ape[pos % ratio] over the window's tokens weighting
    their kv; overlap (ratio 4): the previous window's tokens through the left half of the channels and the
    current window's through the right half; no overlap (here ratio 8): one window, all channels. head 256 takes
    the tiled kernels, 128 the plain one."""
    def run():
        m = load("v4_compressor")
        r = 4 if overlap else 8
        D = head_dim * (2 if overlap else 1)
        chunks = ([[12, 8], [8, 5]] if overlap else [[16, 8], [8, 5]])[:2 if chunked else 1]
        steps = chunks + [[1, 1]] * 6
        total = [sum(c[b] for c in steps) for b in range(2)]
        kv_all = [torch.randn(t, D) for t in total]
        sc_all = [torch.randn(t, D) * 2 for t in total]
        ape = torch.randn(r, D)
        state_ids = torch.tensor([2, 0], dtype=I32)
        kv_state, score_state = torch.zeros(3, r * (2 if overlap else 1), D), torch.zeros(3, r * (2 if overlap else
                                                                                                  1), D)
        res = {}
        done = [0, 0]
        for k, lens in enumerate(steps):
            cu = cumsum0(lens)
            kvl = torch.tensor([done[b] + lens[b] for b in range(2)], dtype=I32)
            kv = torch.cat([kv_all[b][done[b]:done[b] + lens[b]] for b in range(2)])
            sc = torch.cat([sc_all[b][done[b]:done[b] + lens[b]] for b in range(2)])
            ckv = torch.zeros(sum(lens), head_dim)
            decoding = max(lens) == 1
            if decoding and fused_decode:
                m.score_and_fill_state_decode(kv, sc, ape, kv_state, score_state, state_ids, cu, kvl, ckv, overlap)
            else:
                m.score_kv(kv, sc, ape, kv_state, score_state, state_ids, cu, kvl, ckv, overlap,
                           max_seqlen_q=max(lens))
                m.fill_compress_state(kv, sc, ape, kv_state, score_state, state_ids, cu, kvl)
            want = torch.zeros(sum(lens), head_dim, dtype=F64)
            for b in range(2):
                for p in range(done[b], done[b] + lens[b]):
                    if (p + 1) % r:
                        continue
                    pos = torch.arange(p - r + 1, p + 1)
                    s = sc_all[b][pos].double() + ape.double()[pos % r]
                    v = kv_all[b][pos].double()
                    if overlap:
                        s, v = s[:, head_dim:], v[:, head_dim:]
                        if p - 2 * r + 1 >= 0:
                            pp = pos - r
                            s = torch.cat([sc_all[b][pp].double()[:, :head_dim] + ape.double()[pp % r, :head_dim], s])
                            v = torch.cat([kv_all[b][pp].double()[:, :head_dim], v])
                    want[int(cu[b]) + p - done[b]] = (torch.softmax(s, 0) * v).sum(0)
            res[f"step {k}"] = (ckv, want, 1e-5)
            done = [done[b] + lens[b] for b in range(2)]
        return res
    return run


def fill_compressed_kv_case(simple):
    """fill_compressed_kv: the compressed entries of a prefill chunk and of decode steps scattered to their page
    (entry p // ratio of block p * ratio // block_size): the V4 FlashMLA packed fp8 cache (7 power-of-two-scaled
    NoPE tiles with e8m0 bytes, bf16 RoPE), or the simple path (ue8m0 128-group fp8 values and float32 scales,
    through fast_log2_ceil / fast_pow2)."""
    def run():
        m = load("v4_compressor")
        ratio, bs = 4, 16
        epb = bs // ratio
        kv_lens = [30, 13]
        table, total = page_table(kv_lens, bs)
        D = 512
        res = {}
        if simple:
            cache, scales, packed = torch.zeros(total, epb, D, dtype=E4M3), torch.zeros(total, epb, D // 128), None
        else:
            packed, cache, scales = torch.zeros(total, epb, 584, dtype=E4M3), None, None
        done = [0, 0]
        for k, lens in enumerate([[27, 10], [1, 1], [1, 1], [1, 1]]):
            cu = cumsum0(lens)
            kvl = torch.tensor([done[b] + lens[b] for b in range(2)], dtype=I32)
            ckv = (torch.randn(sum(lens), D) * torch.rand(sum(lens), 1) * 8).to(BF16)
            ckv[0, :64] = 1e-6  # the 1e-4 floors
            m.fill_compressed_kv(ckv, cache, cu, kvl, table, ratio, bs, max(lens), fp8_cache=packed,
                                 kv_scale_cache=scales)
            for b in range(2):
                for p in range(done[b], done[b] + lens[b]):
                    if (p + 1) % ratio:
                        continue
                    e = p // ratio
                    blk, off = int(table[b, e * ratio // bs]), e % epb
                    x = ckv[int(cu[b]) + p - done[b]].float()
                    key = f"step {k} seq {b} entry {e}"
                    if simple:
                        amax = x.view(4, 128).abs().amax(-1).clamp_min(1e-4)
                        s = ue8m0_scale(amax)
                        res[key + " scales"] = exact(scales[blk, off], s)
                        res[key + " values"] = fp8_bits(cache[blk, off], x / s.float().repeat_interleave(128))
                    else:
                        t = x[:448].view(7, 64)
                        e2 = torch.ceil(torch.log2((t.abs().amax(-1) / 448.0).clamp_min(1e-4)))
                        want = torch.cat([(t / torch.exp2(e2)[:, None]).flatten().to(E4M3).view(U8),
                                          ckv[int(cu[b]) + p - done[b], 448:].contiguous().view(U8)])
                        flat = packed.view(U8).view(total, -1)
                        res[key] = exact(torch.cat([flat[blk, off * 576:off * 576 + 576],
                                                    flat[blk, epb * 576 + off * 8:epb * 576 + off * 8 + 7]]),
                                         torch.cat([want, (e2 + 127).to(U8)]))
            done = [done[b] + lens[b] for b in range(2)]
        merged = {"entries (bits)": exact(torch.cat([torch.atleast_1d(v[0]).flatten().double() for v in res.values()]),
                                          torch.cat([torch.atleast_1d(v[1]).flatten().double() for v in res.values()]))}
        merged["entries written"] = exact(torch.tensor(len(res) // (2 if simple else 1)),
                                          torch.tensor(sum(L // ratio for L in kv_lens)))
        return merged
    return run


check("score_kv + fill_compress_state overlap (ratio 4), head 128: prefill + 6 decodes",
      compressor_case(True, 128, chunked=False))
check("score_kv + fill_compress_state overlap, head 256 (tiled kernels)", compressor_case(True, 256, chunked=False))
check("score_kv + fill_compress_state overlap, chunked prefill with history", compressor_case(True, 128))
check("score_kv + fill_compress_state no overlap (ratio 8), head 128: 2 chunks + 6 decodes",
      compressor_case(False, 128))
check("score_kv + fill_compress_state no overlap, head 256 (tiled kernels)", compressor_case(False, 256))
check("score_kv + score_and_fill_state_decode overlap, head 256", compressor_case(True, 256, fused_decode=True,
                                                                                 chunked=False))
check("score_kv + score_and_fill_state_decode no overlap, head 256", compressor_case(False, 256, fused_decode=True))
check("fill_compressed_kv V4 FlashMLA packed fp8 cache", fill_compressed_kv_case(False))
check("fill_compressed_kv simple fp8 cache + ue8m0 scales", fill_compressed_kv_case(True))
check("fused_lora fp32, ranks 16 / 5 / 0 over 4 sequences", fused_lora_case(F32, False))
check("fused_lora fp32 accumulated into the output (cum, restore_value)", fused_lora_case(F32, True))
check("fused_lora fp16 accumulated (cum)", fused_lora_case(F16, True))
check("gated_delta_preprocess fp32 b / a [B, T, Hv], init-token mask", gated_delta_case(F32, False))
check("gated_delta_preprocess bf16 b / a [B, T, Hk, ratio]", gated_delta_case(BF16, True))
check("gated_delta_preprocess fp32 ratio 1, no mask", gated_delta_case(F32, False, ratio=1, with_mask=False))
check("copy_packed_cache 2 pairs of blocks", copy_packed_cache_case())
check("fp8_index decode (split over 2 programs)", fp8_index_case(True))
check("fp8_index prefill causal", fp8_index_case(False, causal=True))
check("fp8_index prefill causal, tail trimmed", fp8_index_case(False, causal=True, trim=True))
check("fp8_index prefill causal on compressed keys (raw lengths, ratio 4)", fp8_index_case(False, causal=True,
                                                                                           raw=True))
check("prepare_dsa_indexer_q NeoX RoPE", dsa_q_case(False))
check("prepare_dsa_indexer_q interleaved RoPE", dsa_q_case(True))
check("prepare_dsa_indexer_k_cache + flatten_dsa_indexer_k_cache NeoX", dsa_k_case(False))
check("prepare_dsa_indexer_k_cache + flatten_dsa_indexer_k_cache interleaved", dsa_k_case(True))
check("hc_pre_reduce / hc_post_expand (DeepSeek-V4)", hc_case())
check("v4_swiglu_and_quant_fp8 ue8m0, no limit", v4_swiglu_case(0.0, True))
check("v4_swiglu_and_quant_fp8 limit 7, plain scales", v4_swiglu_case(7.0, False))
check("pack_window_tokens_fp8 (V4 window cache)", pack_window_case())
check("v4 sparse index builders (decode window / compressed / prefix, prefill)", sparse_indices_case())



for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:72s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} cases match")
if ARGS.json:
    ARGS.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                     for n, s, w, t in results], indent=1))
