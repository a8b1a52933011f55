"""Axolotl's Triton kernels under src/axolotl/integrations on Tegula, through the conformance shim's `triton` package,
forward and backward, against float64 references written here from the definitions (the library's own pure-torch
paths where it has them).

axolotl-ai-cloud/axolotl, main at 067b021c8b87a9e5e380b9173c704cf7340e30f5 (2026-07-24), which holds every
@triton.jit under src/axolotl/integrations, all of them in kernels/libs: dsv4/ (last changed by 0cfacb7,
2026-07-03), glm_dsa/ (fe1627d, 2026-07-12), scattermoe_lora/ and sonicmoe/ (ebb8a3e, 2026-07-21). dsv4/lora_mlp.py
reuses src/axolotl/kernels/lora.py (LoRA_MLP) and the attention kernels register through
src/axolotl/kernels/op_registry.py, so the tree needs both folders.

Result on the CPU backend (2026-12-07, two cores): 159 of 163 lines match and 4 fail by the library's own bugs
(below), none otherwise; 18 minutes from an empty Tegula cache (wall time, with another job on the machine; 12.5
minutes of CPU), nearly all of it compiling the configs the autotuners try (scattermoe_lora's GEMMs tune over 108
configs per shape, 144 with MX weights; dsv4's attention over 40), 14 s with the kernels cached. No divergence from Triton was
found, so nothing of Tegula changed; comparisons.record now passes an empty reference against an empty result (the
MoE batch with no tokens). Under TEGULA_DEBUG=1 (every load, store and atomic checked against its array, in every
config an autotuner tries too) the same 163 lines: the only accesses outside an array are the four library bugs',
which it reports as loads out of bounds where a plain run gives NaN or inf (or, for the quantizers, writes past
their outputs: those two cases run in debug mode always).

Cases (inputs seeded per case by the CRC of its name, so -k reproduces a case's data; random data, never zeros
only; sizes that are not multiples of the kernels' blocks, so their masked tails run, wherever the kernels allow
them; a case's forward and backward are a line each):

  - dsv4/rope.py apply_rotary_pos_emb_triton (interleaved RoPE on the last channels of each head; cos / sin as the
    rotary's transposed float32 views, once with sin of other strides), fp32, bf16, fp16;
  - dsv4/gated_pool.py gated_softmax_pool: windows of 4 to 128 over widths of 33 to 300 (autotuned 32- to 128-wide
    blocks), fp32 and bf16;
  - dsv4/attention.py sliding_attn: one MQA key / value head, a causal window, per-head sinks, acc_dtype float32 and
    bfloat16, fp32, bf16, fp16, 1 to 100 queries; the backward's dq and dk / dv kernels (atomics across heads) and
    the sinks' gradient, every kernel under its autotuner (40 configs);
  - dsv4/attention_csa.py csa_attn: the window plus T compressed keys under a dense 0 / -inf block bias (a query
    with every compressed key masked);
  - dsv4/attention_gather.py csa_attn_topk: the window plus each query's K gathered compressed keys with -1 holes
    (every one -1 in a case), 3 to 20 heads against head tiles of 16 to 64;
  - dsv4/indexer.py indexer_scores (forward only, as the library uses it);
  - dsv4/mhc.py hyperconnection_forward: the fused RMSNorm + linear, the Sinkhorn mixer (3 to 20 iterations) and the
    collapse, forward and backward (streams, fn, base, scale), and the forward under no_grad (no state history);
  - dsv4/lora_mlp.py apply_lora_mlp_clamped_swiglu through lora.py's LoRA_MLP, with and without base and LoRA
    biases, at a limit a good share of the gate and up values pass; the output and the gradients of x, every A, B
    and LoRA bias;
  - glm_dsa/indexer.py indexer_scores and indexer_topk (forward only): causal, with sample packing (document ids),
    top-k above the key count; the picked keys' reference scores against the reference's own top-k scores (a
    near-tie may pick another key of the same score);
  - glm_dsa/attention_topk.py sparse_attn: per-head keys and values gathered at each query's top-k (1 to all keys),
    keys past the query dropped;
  - glm_dsa/attention_mla_absorb.py mla_absorb_attn: the 576-wide shared key (the value its first 512 columns), a
    query offset (context parallel) over more keys than queries, packed documents, top-k lists in random order (a
    leading block of masked keys; queries with no valid key give 0), heads not a multiple of the head tile; the
    backward as the library restricts it on sm_90 (one config) and autotuned over its configs (capability 12.0);
  - scattermoe_lora/kernels/ops.py: scatter2scatter (the fused per-row residual, biases, grouped input or output,
    INT64_INDICES), group (fan-out 1 and 2, per-row coefficients), group_bwd_W (biases); kernels/single.py
    single2scatter;
  - scattermoe_lora/kernels/lora_ops.py: scatter2scatter_lora (the fused kernel, and _scatter2scatter_lora_split:
    three scatter2scatter launches), scatter2scatter_lora_dX (dY grouped, or scattered and read through the
    indices), group_bwd_lora (the split dA / dB kernels), group_bwd_lora_fused (dY scattered or grouped, expert
    counts padded to BLOCK_M by the library's round_expert_counts), _group_bwd_lora (no host code of the library
    launches it: launched as its docstring says), INT64_INDICES; ranks 6 (padded to 16) and 16; the MXFP4 / NVFP4
    forward and dX kernels through ScatterMoELoRA; kernels/grouped_gram.py grouped_lora_weight_grads;
  - scattermoe_lora/parallel_linear_lora.py ScatterMoELoRA forward and backward (x, A, B, gates): gates, biases,
    grouped input and output, use_fused_dX, use_fused_gather, MXFP4 (E8M0) and NVFP4 (linear float32 scales) expert
    weights as the library's MXWeights, an empty batch; without LoRA, scattermoe's ParallelLinear (x, W, biases,
    gates); lora_ops.py's ParallelExperts module; multi_lora.py scatter2scatter_multilora (ScatterMoEMultiLoRA, LoRA
    per (expert, tenant), with its own grouped-Gram kernel); experts with no rows in most routings;
  - scattermoe_lora's codecs: selective_dequant_kernel.py (NF4), dequant_grouped.py (NVFP4 to bfloat16 and float8,
    fp8_e8m0_cast_128, grouped_dx_fp8 under its autotuner), marlin_w4a16/fused_dequant.py (bfloat16 and float8),
    cutlass_fp4/ (swiglu.py: clamped SiLU and tanh-GELU gating forward and backward, on strided inputs;
    quant_mxfp8.py; quant_nvfp4.py; fused_dx.py);
  - sonicmoe/triton_nvfp4.py: dequant (with and without per-slice scales), quantize, quantize_rows_fused_sfa (the
    swizzled, expert-padded scale layout), fake_quant (per-expert scales, in place), rowscale; sonicmoe/fp8_bwd.py's
    fused pad + fp8 cast over the library's own padded layout (_dx_plan).

References: float64 torch from the definitions (the kernels' docstrings and the model code they replace); the
library's own torch paths where it has them: flatten_sort_count and build_multilora_routing (routing),
round_expert_counts, sonicmoe's quantize_nvfp4_ref / dequantize_nvfp4_ref and sf_layout.build_varlen_sfa. Quantizers'
codes and scales, and dequantized values, are compared exactly, against the same float32 products the kernel
forms, in its order (a float32 product then one rounding to the output type). Two references decide a
discontinuity on what the library computed rather than on float64: the clamped SwiGLU clamps where the library's
own bf16 / fp32 projection (lora.py's matmul_lora) passes the limit, since bfloat16 rounding moves values near the
limit by a few steps and an entry clamped on one side only moves its whole gradient; glm_dsa's top-k is compared by
scores. sonicmoe's fake_quant reference is written from the torchao numerics its docstring states (torchao is not
installed): two-level scales, every division correctly rounded, ties to the even E2M1 code.

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (the kernels
compute in float32 and round inputs and outputs; torch's own bf16 matmuls around them round too); a float32 case
whose kernel rounds its products to bfloat16 by design (sliding_attn's acc_dtype bfloat16) takes bfloat16's;
integers, codes, scales and dequantized values exactly.

Stand-ins, none of them a Triton kernel or reached from one:

  - the axolotl packages import bare (their __init__ files import the trainer, transformers, torchao, CUDA
    extensions); axolotl.utils.logging is a module with get_logger = logging.getLogger;
  - bitsandbytes and bitsandbytes.functional names that lora.py and quantize.py import (placeholders; nothing
    quantizes with bitsandbytes);
  - torch.cuda.current_device() 0; torch.cuda.get_device_capability() (9, 0), an H100, or (12, 0) in one case
    (the prunes of glm_dsa's and dsv4's autotuners read it); torch.cuda.is_available() False, but True while a
    sonicmoe case runs (its triton_available() gates the Triton paths on it);
  - while the library's host code runs: device="cuda" allocations go to the CPU and Tensor.is_cuda says yes;
  - torch.compile is the identity while scattermoe_lora's modules load (parallel_experts.flatten_sort_count, a
    torch sort and bincount, is decorated with it);
  - the shared memory the autotuners' prunes read is the CPU driver's max_shared_mem (one core's L2, 1 MiB here),
    so they keep nearly every config: the kernels are tuned over their full config lists;
  - marlin_dequant_*: the 1024-entry scatter LUT is a random permutation (the library builds the real one with
    the marlin CUDA extension's gptq_marlin_repack); the kernels read any LUT alike;
  - the two misaligned quantizer cases (library bugs, below) run their kernel with Tegula's debug mode on
    (kernel.debug = True), which stops the first access outside an array: run plainly they write past the end of
    their output and corrupted the heap.

Not covered:

  - cutlass_fp4/grouped_kernel.py and blockscaled_gemm_dispatch.py, sonicmoe/fp4_cute*.py: CuTe DSL kernels for
    Blackwell (sm_100 / sm_120), not Triton;
  - marlin_w4a16's GEMM (_csrc, CUDA C++), DeepGEMM (deepgemm_grouped_fp8_fp4, nvfp4_to_mxfp4_weight, the GEMM of
    sonicmoe's grouped_fp8_dx) and torch._grouped_mm (chunked_dequant_grouped_base): CUDA libraries, not Triton
    (the Triton kernels around them are covered);
  - torchao's NVFP4 / MX tensors (mx_weights.selective_*_weights_fwd, nvfp4_quant.fake_quant_nvfp4): torchao is not
    installed; the kernels they feed run on MXWeights built here;
  - glm_dsa/context_parallel.py (torch.distributed), the autotune callback and collector, plugin.py and the
    patches: no Triton kernel.

Library bugs (lines marked FAIL (library), which the exit status accepts); each is an unmasked tail, and each shows
under TEGULA_DEBUG=1 as a load out of bounds:

  - dequant_grouped.py _grouped_dx_fp8_kernel loads grad and W without a mask on N: N must be a multiple of the
    autotuned BN (64 or 128), which nothing checks (its K tail is masked, "e.g. I=704");
  - cutlass_fp4/quant_mxfp8.py and quant_nvfp4.py load and store without masks: K / 32 (K / 16) must be a multiple
    of the blocks per program (4, 8), which nothing checks (mxfp8_quant asserts K % 32 only); K = 704 (22 MX blocks)
    would write past the outputs;
  - cutlass_fp4/fused_dx.py loads A and W without a mask on N: N must be a multiple of BN (64).

    git -C <axolotl git dir> archive 067b021c src/axolotl/integrations src/axolotl/kernels | tar -x -C <tree>
    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/axolotl_integrations_ops.py <tree> \\
        [-k SUBSTRING ...] [--json out.json]

-k may be given more than once (a case runs when its name holds any of them). Prints one line per case and stage
(ok / FAIL / FAIL (library), the largest absolute difference from the reference, each output's difference or the
first line of the error) and the totals.
"""

import argparse
import contextlib
import logging
import math
import os
import pathlib
import sys
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path,
                     help="an axolotl tree (a directory holding src/axolotl/integrations and src/axolotl/kernels)")
_parser.add_argument("-k", dest="only", action="append", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve() / "src"
LIBS = SRC / "axolotl" / "integrations" / "kernels" / "libs"
if not LIBS.is_dir():
    sys.exit(f"{ARGS.source} holds no src/axolotl/integrations/kernels/libs")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, report  # noqa: E402
import standins  # noqa: E402
from standins import module  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------


def placeholder(name):
    return standins.placeholder(name, "axolotl_integrations_ops.py")


# axolotl.utils.logging (axolotl/kernels/op_registry.py's only import of axolotl)
module("axolotl.utils", __path__=[])
module("axolotl.utils.logging", get_logger=logging.getLogger)


# bitsandbytes: axolotl/kernels/lora.py and quantize.py import these names (dsv4/lora_mlp.py reuses lora.py's
# LoRA_MLP); no case quantizes with bitsandbytes.
class QuantState:
    """bitsandbytes.functional.QuantState's name only (type hints; no case makes one)."""


_bnb_lib = types.SimpleNamespace(**{name: placeholder(f"bitsandbytes.functional.lib.{name}") for name in (
    "cdequantize_blockwise_fp32", "cdequantize_blockwise_fp16_nf4", "cdequantize_blockwise_bf16_nf4",
    "cdequantize_blockwise_fp32_nf4")})
_bnb_functional = module("bitsandbytes.functional", QuantState=QuantState, get_ptr=placeholder("get_ptr"),
                         lib=_bnb_lib, dequantize_4bit=placeholder("dequantize_4bit"))
module("bitsandbytes", __path__=[], functional=_bnb_functional, __version__="0.45.0")

# torch.cuda's device queries without a GPU, per case: the capability the library's pruning reads.
GPU = {"capability": (9, 0), "cuda_available": False}
if DEVICE != "cuda":
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_capability = lambda *a, **k: GPU["capability"]
    torch.cuda.is_available = lambda: GPU["cuda_available"]


@contextlib.contextmanager
def cuda_claims():
    """While the library's host code runs: device="cuda" allocations on DEVICE, Tensor.is_cuda true there.
    Patched functions rather than a TorchFunctionMode, which a custom op's body and autograd's backward do not
    see."""
    if DEVICE == "cuda":
        yield
        return
    real = {name: getattr(torch, name) for name in ("empty", "zeros", "full", "ones", "tensor", "arange")}

    def on_device(fn):
        return lambda *a, **k: fn(*a, **{**k, "device": DEVICE} if standins.is_cuda(k.get("device")) else k)

    real_is_cuda = torch.Tensor.is_cuda
    for name, fn in real.items():
        setattr(torch, name, on_device(fn))
    torch.Tensor.is_cuda = property(lambda self: self.device.type == DEVICE or real_is_cuda.__get__(self))
    try:
        yield
    finally:
        torch.Tensor.is_cuda = real_is_cuda
        for name, fn in real.items():
            setattr(torch, name, fn)


# --- loading -------------------------------------------------------------------------------------------------------

standins.bare_packages(SRC, "axolotl")
LOADED = {}
PREFIX = "axolotl.integrations.kernels.libs."


def need(name):
    """axolotl.integrations.kernels.libs.<name>, imported when a case first runs (an import error is that
    case's line)."""
    if name not in LOADED:
        mod = __import__(PREFIX + name, fromlist=["_"])
        assert pathlib.Path(mod.__file__).is_relative_to(LIBS), f"another copy: {mod.__file__}"
        LOADED[name] = mod
    return LOADED[name]


def wanted(name):
    return ARGS.only is None or any(k in name for k in ARGS.only)


F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
FB = ("forward", "backward")
results = []
LIBRARY = {}


def case(name, run, stages=("run",), capability=(9, 0), library=None):
    if not wanted(name):
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    GPU["capability"] = capability
    if library:
        for stage in stages:
            LIBRARY[f"{name} {stage}" if len(stages) > 1 else name] = library

    def wrapped():
        with cuda_claims():
            yield from run()
    check(results, name, wrapped, stages)


def rnd(*shape, dtype=F32, scale=1.0):
    return (torch.randn(*shape, dtype=F64) * scale).to(dtype)


def d64(t, grad=False):
    t = t.detach().double()
    return t.requires_grad_() if grad else t


def leaves(*ts):
    """(the tensors as leaves that require grad, their float64 copies as leaves)."""
    got = [t.detach().clone().requires_grad_() for t in ts]
    return got, [d64(t, True) for t in got]


def grads(outs, got_in, wants, ref_in, names, tol):
    """The gradients of a random cotangent through the kernels and through the reference, by name."""
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    wants = wants if isinstance(wants, (tuple, list)) else (wants,)
    cots = [rnd(*o.shape, dtype=o.dtype) for o in outs]
    g = torch.autograd.grad(outs, got_in, cots, allow_unused=True)
    w = torch.autograd.grad(wants, ref_in, [d64(c) for c in cots], allow_unused=True)
    return {f"d{n}": (a, b, tol) for n, a, b in zip(names, g, w)}


# --- dsv4 ----------------------------------------------------------------------------------------------------------

def dsv4_rope_case(B, H, S, D, rope, dtype, same_strides=True):
    """apply_rotary_pos_emb_triton: interleaved RoPE on the last `rope` channels of each head, cos / sin [B, S,
    rope / 2] float32 as the rotary gives them (a transposed view; sin contiguous when not same_strides)."""

    def run():
        mod = need("dsv4.rope")
        Rh, nope = rope // 2, D - rope
        x = rnd(B, H, S, D, dtype=dtype)
        ang = torch.rand(B, S, Rh, dtype=F64) * 6
        cos = ang.cos().float().transpose(1, 2).contiguous().transpose(1, 2)
        sin = ang.sin().float().transpose(1, 2).contiguous().transpose(1, 2) if same_strides else \
            ang.sin().float()
        (xg,), (xr,) = leaves(x)
        y = mod.apply_rotary_pos_emb_triton(xg, cos, sin)
        c, s = d64(cos.to(dtype))[:, None], d64(sin.to(dtype))[:, None]  # the library rounds them to x's dtype
        e, o = xr[..., nope::2], xr[..., nope + 1::2]
        want = torch.cat([xr[..., :nope], torch.stack([e * c - o * s, o * c + e * s], -1).flatten(-2)], -1)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [xg], want, [xr], ["x"], TOL[dtype])
    return run


def dsv4_pool_case(lead, W, D, dtype):
    """gated_softmax_pool: sum_w softmax_w(gate) kv, float32 out; gate rounded to kv's dtype."""

    def run():
        mod = need("dsv4.gated_pool")
        kv, gate = rnd(*lead, W, D, dtype=dtype), rnd(*lead, W, D, dtype=F32, scale=3)
        (kvg, gg), (kvr, gr) = leaves(kv, gate)
        y = mod.gated_softmax_pool(kvg, gg)
        want = (kvr * torch.softmax(d64(gr.to(dtype)) + (gr - gr.detach()), dim=-2)).sum(-2)
        yield {"y": (y, want, TOL[dtype]), "dtype": exact(torch.tensor(y.dtype == F32), torch.tensor(True))}
        yield grads(y, [kvg, gg], want, [kvr, gr], ["kv", "gate"], TOL[dtype])
    return run


def sink_attention(q, k, v, bias, sinks, scale):
    """softmax over [sink, q k^T scale + bias] (the sink a logit only) times v; q [B, H, S, D], k / v [B, T, D]
    or [B, S, T, D] (a key set per query), bias [B or 1, S, T] additive (0 / -inf)."""
    if k.dim() == 3:
        s = torch.einsum("bhsd,btd->bhst", q, k)
    else:
        s = torch.einsum("bhsd,bstd->bhst", q, k)
    s = s * scale + bias[:, None]
    B, H, S, _ = q.shape
    p = torch.softmax(torch.cat([sinks[None, :, None, None].expand(B, H, S, 1), s], -1), -1)[..., 1:]
    return torch.einsum("bhst,btd->bhsd", p, v) if v.dim() == 3 else torch.einsum("bhst,bstd->bhsd", p, v)


def window_bias(S, T, window):
    i, j = torch.arange(S)[:, None], torch.arange(T)[None, :]
    return torch.where((j <= i) & (i - j < window), 0.0, -math.inf).double()[None]


def dsv4_sliding_case(B, H, S, D, window, dtype, acc=F32):
    """sliding_attn: one MQA key / value head, a causal window, per-head sinks; acc_dtype float32 or bfloat16
    (the PV and gradient products then round to bfloat16, so the case takes bfloat16's tolerance)."""

    def run():
        mod = need("dsv4.attention")
        q, k, v = rnd(B, H, S, D, dtype=dtype), rnd(B, 1, S, D, dtype=dtype), rnd(B, 1, S, D, dtype=dtype)
        sinks = rnd(H, dtype=dtype)
        (qg, kg, vg, sg), (qr, kr, vr, sr) = leaves(q, k, v, sinks)
        scale = D ** -0.5
        y = mod.sliding_attn(qg, kg, vg, sg, sliding_window=window, acc_dtype=acc)
        want = sink_attention(qr, kr[:, 0], vr[:, 0], window_bias(S, S, window), sr, scale)
        tol = TOL[BF16] if BF16 in (dtype, acc) else TOL[dtype]
        yield {"y": (y, want, tol)}
        yield grads(y, [qg, kg, vg, sg], want, [qr, kr, vr, sr], ["q", "k", "v", "sinks"], tol)
    return run


def block_bias(B, S, T, keep):
    """[B, 1, S, T] additive 0 / -inf, each entry kept with probability `keep`, row 0 wholly masked."""
    bb = torch.where(torch.rand(B, 1, S, T) < keep, 0.0, -math.inf)
    bb[:, :, 0] = -math.inf
    return bb


def dsv4_csa_case(B, H, S, T, D, window, dtype):
    """csa_attn: the windowed sliding keys and T compressed keys under a dense 0 / -inf block bias (K == V for
    both), per-head sinks."""

    def run():
        mod = need("dsv4.attention_csa")
        q, ks, kc = rnd(B, H, S, D, dtype=dtype), rnd(B, 1, S, D, dtype=dtype), rnd(B, 1, T, D, dtype=dtype)
        sinks, bb = rnd(H, dtype=dtype), block_bias(B, S, T, 0.6)
        (qg, ksg, kcg, sg), (qr, ksr, kcr, sr) = leaves(q, ks, kc, sinks)
        y = mod.csa_attn(qg, ksg, kcg, bb, sg, sliding_window=window)
        keys = torch.cat([ksr[:, 0], kcr[:, 0]], 1)
        bias = torch.cat([window_bias(S, S, window).expand(B, S, S), d64(bb[:, 0])], -1)
        want = sink_attention(qr, keys, keys, bias, sr, D ** -0.5)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [qg, ksg, kcg, sg], want, [qr, ksr, kcr, sr], ["q", "kv_slide", "kv_comp", "sinks"],
                    TOL[dtype])
    return run


def topk_indices(B, S, T, K, invalid):
    """[B, S, K] int32: K distinct keys of T per query, a fraction `invalid` of them -1."""
    idx = torch.argsort(torch.rand(B, S, T), -1)[..., :K].to(torch.int32)
    return torch.where(torch.rand(B, S, K) < invalid, -1, idx).to(torch.int32)


def dsv4_gather_case(B, H, S, T, K, D, window, dtype, invalid=0.25):
    """csa_attn_topk: the sliding window plus each query's K gathered compressed keys (-1 = none), K == V,
    per-head sinks; H not a multiple of the head tile leaves padded heads."""

    def run():
        mod = need("dsv4.attention_gather")
        q, ks, kc = rnd(B, H, S, D, dtype=dtype), rnd(B, 1, S, D, dtype=dtype), rnd(B, 1, T, D, dtype=dtype)
        sinks, idx = rnd(H, dtype=dtype), topk_indices(B, S, T, K, invalid)
        (qg, ksg, kcg, sg), (qr, ksr, kcr, sr) = leaves(q, ks, kc, sinks)
        y = mod.csa_attn_topk(qg, ksg, kcg, idx, sg, sliding_window=window)
        gathered = kcr[:, 0][torch.arange(B)[:, None, None], idx.long().clamp_min(0)]  # [B, S, K, D]
        win = ksr[:, 0][:, None].expand(B, S, S, D)
        keys = torch.cat([win, gathered], 2)
        bias = torch.cat([window_bias(S, S, window).expand(B, S, S),
                          torch.where(idx >= 0, 0.0, -math.inf).double()], -1)
        want = sink_attention(qr, keys, keys, bias, sr, D ** -0.5)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [qg, ksg, kcg, sg], want, [qr, ksr, kcr, sr], ["q", "kv_slide", "kv_comp", "sinks"],
                    TOL[dtype])
    return run


def indexer_ref(q, k, w, scale):
    """scale sum_h w[b, s, h] relu(q[b, s, h] . k[b, t])."""
    return scale * torch.einsum("bsh,bsht->bst", w, torch.relu(torch.einsum("bshd,btd->bsht", q, k)))


def dsv4_indexer_case(B, S, H, T, DH, dtype):
    """indexer_scores (forward only): q [B, S, H, DH], compressed keys [B, T, DH] (float32, rounded to q's
    dtype by the library), weights [B, S, H] float32."""

    def run():
        mod = need("dsv4.indexer")
        q, ck, w = rnd(B, S, H, DH, dtype=dtype), rnd(B, T, DH), rnd(B, S, H)
        got = mod.indexer_scores(q, ck, w, DH ** -0.5)
        want = indexer_ref(d64(q), d64(ck.to(dtype)), d64(w), DH ** -0.5)
        yield {"scores": (got, want, TOL[dtype])}
    return run


class Norm:
    def __init__(self, eps):
        self.eps = eps


def mhc_ref(streams, fn, base, scale, hc, iters, eps, norm_eps, post_mult):
    """DeepseekV4HyperConnection from its definition: mixes = rmsnorm(streams) fn^T (no weight); pre = sigmoid(
    mixes[:hc] s0 + base) + eps; post = post_mult sigmoid(mixes[hc:2hc] s1 + base); comb = softmax over the last
    axis of the [hc, hc] logits, + eps, a column normalization, then iters - 1 row and column normalizations
    (each x / (sum + eps)); collapsed = sum_h pre[h] streams[h]."""
    lead = streams.shape[:-2]
    flat = streams.reshape(-1, streams.shape[-2] * streams.shape[-1])
    mixes = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + norm_eps) @ fn.t()
    pre = torch.sigmoid(mixes[:, :hc] * scale[0] + base[:hc]) + eps
    post = post_mult * torch.sigmoid(mixes[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
    cl = (mixes[:, 2 * hc:] * scale[2] + base[2 * hc:]).reshape(-1, hc, hc)
    comb = torch.softmax(cl, -1) + eps
    comb = comb / (comb.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(-1, keepdim=True) + eps)
        comb = comb / (comb.sum(-2, keepdim=True) + eps)
    collapsed = (pre[:, :, None] * streams.reshape(-1, hc, streams.shape[-1])).sum(1)
    return post.reshape(*lead, hc), comb.reshape(*lead, hc, hc), collapsed.reshape(*lead, streams.shape[-1])


def dsv4_mhc_case(B, S, hc, hidden, iters, dtype, no_grad=False):
    """hyperconnection_forward: the fused RMSNorm + linear, the Sinkhorn mixer and the collapse, forward and
    backward (streams, fn, base, scale); no_grad: the forward alone under torch.no_grad (the mixer then keeps
    no state history, SAVE False)."""

    def run():
        if no_grad:
            mod = need("dsv4.mhc")
            n = hc * (2 + hc)
            streams = rnd(B, S, hc, hidden, dtype=dtype)
            fn, base, scale = rnd(n, hc * hidden, scale=(hc * hidden) ** -0.5), rnd(n, scale=0.5), \
                rnd(3, scale=0.5) + 1
            with torch.no_grad():
                outs = mod.hyperconnection_forward(streams, Norm(1e-6), fn, base, scale, hc, iters, 1e-6)
            wants = mhc_ref(d64(streams), *(d64(t.to(dtype)) for t in (fn, base, scale)), hc, iters, 1e-6, 1e-6,
                            2.0)
            yield {name: (o, w, TOL[dtype]) for name, o, w in zip(("post", "comb", "collapsed"), outs, wants)}
            return
        mod = need("dsv4.mhc")
        n = hc * (2 + hc)
        streams = rnd(B, S, hc, hidden, dtype=dtype)
        fn, base, scale = rnd(n, hc * hidden, scale=(hc * hidden) ** -0.5), rnd(n, scale=0.5), \
            rnd(3, scale=0.5) + 1
        (sg, fg, bg, cg), (sr, fr, br, cr) = leaves(streams, fn, base, scale)
        outs = mod.hyperconnection_forward(sg, Norm(1e-6), fg, bg, cg, hc, iters, 1e-6)
        rounded = [r + (d64(r.to(dtype)) - r).detach() for r in (fr, br, cr)]  # the library casts them to dtype
        wants = mhc_ref(sr, *rounded, hc, iters, 1e-6, 1e-6, 2.0)
        tol = TOL[dtype]
        yield {"post": (outs[0], wants[0], tol), "comb": (outs[1], wants[1], tol),
               "collapsed": (outs[2], wants[2], tol)}
        yield grads(outs, [sg, fg, bg, cg], wants, [sr, fr, br, cr], ["streams", "fn", "base", "scale"], tol)
    return run


class LoraLinear(torch.nn.Module):
    """The attributes of a PEFT LoRA linear layer that axolotl's get_lora_parameters reads."""

    def __init__(self, n_in, n_out, rank, s, dtype, bias=False, lora_bias=False):
        super().__init__()
        self.base_layer = torch.nn.Linear(n_in, n_out, bias=bias, dtype=dtype)
        self.base_layer.weight.data = rnd(n_out, n_in, dtype=dtype, scale=2 * n_in ** -0.5)
        self.base_layer.weight.requires_grad_(False)
        if bias:
            self.base_layer.bias.data = rnd(n_out, dtype=dtype, scale=0.5)
            self.base_layer.bias.requires_grad_(False)
        a = torch.nn.Linear(n_in, rank, bias=False, dtype=dtype)
        a.weight.data = rnd(rank, n_in, dtype=dtype, scale=n_in ** -0.5)
        b = torch.nn.Linear(rank, n_out, bias=lora_bias, dtype=dtype)
        b.weight.data = rnd(n_out, rank, dtype=dtype, scale=rank ** -0.5)
        if lora_bias:
            b.bias.data = rnd(n_out, dtype=dtype, scale=0.5)
        self.lora_A = torch.nn.ModuleDict({"default": a})
        self.lora_B = torch.nn.ModuleDict({"default": b})
        self.scaling = {"default": s}
        self.active_adapter = "default"
        self.disable_adapters = False
        self.merged = False
        self.lora_dropout = torch.nn.ModuleDict({"default": torch.nn.Identity()})
        self.lora_magnitude_vector = torch.nn.ModuleDict({})

    def leaves(self):
        out = {"A": self.lora_A["default"].weight, "B": self.lora_B["default"].weight}
        if self.lora_B["default"].bias is not None:
            out["lora_bias"] = self.lora_B["default"].bias
        return out

    def ref(self, x, p):
        y = x @ d64(self.base_layer.weight).t() + self.scaling["default"] * (x @ p["A"].t()) @ p["B"].t()
        if "lora_bias" in p:
            y = y + self.scaling["default"] * p["lora_bias"]
        if self.base_layer.bias is not None:
            y = y + d64(self.base_layer.bias)
        return y


def clamp_as(x, lo, hi, seen):
    """x clamped to [lo, hi], where which entries clamp is decided on `seen`, the projection as the library
    computed it in the case's dtype (its rounding moves values near the limit by up to a few bf16 steps, and an
    entry that clamps on one side only moves its whole gradient)."""
    r = seen.detach().double()
    return torch.where((r > lo) & (r < hi), x, x.detach().clamp(lo, hi))


def dsv4_lora_mlp_case(B, S, H, I, rank, limit, dtype, bias=False):
    """apply_lora_mlp_clamped_swiglu through axolotl.kernels.lora's LoRA_MLP: down(silu(min(gate, L)) clamp(up,
    -L, L)), each projection W x + s B A x (+ biases); the output and the gradients of x, every A, B and LoRA
    bias. Inputs scaled so that a good share of gate and up values lie beyond the limit."""

    def run():
        mod = need("dsv4.lora_mlp")
        m = torch.nn.Module()
        names = {"gate_proj": (H, I, 2.0), "up_proj": (H, I, 0.5), "down_proj": (I, H, 1.0)}
        for name, (n_in, n_out, s) in names.items():
            setattr(m, name, LoraLinear(n_in, n_out, rank, s, dtype, bias, bias))
        m.limit = limit
        m.training = True
        X = rnd(B, S, H, dtype=dtype).requires_grad_()
        params = {f"{n}.{k}": v.requires_grad_() for n in names for k, v in getattr(m, n).leaves().items()}
        y = mod.apply_lora_mlp_clamped_swiglu(m, X)
        Xr = d64(X, True)
        pr = {k: d64(v, True) for k, v in params.items()}
        per = lambda n: {k.split(".", 1)[1]: v for k, v in pr.items() if k.startswith(n + ".")}  # noqa: E731
        lora = sys.modules["axolotl.kernels.lora"]
        seen = {n: lora.matmul_lora(X.detach(), *(lambda W, b, q, A, B, s, lb, d, mag: (W, b, q, A, B, s))(
            *lora.get_lora_parameters(getattr(m, n))), lora_bias=getattr(m, n).lora_B["default"].bias)
            for n in ("gate_proj", "up_proj")}
        g = clamp_as(m.gate_proj.ref(Xr, per("gate_proj")), -math.inf, limit, seen["gate_proj"])
        u = clamp_as(m.up_proj.ref(Xr, per("up_proj")), -limit, limit, seen["up_proj"])
        want = m.down_proj.ref(g * torch.sigmoid(g) * u, per("down_proj"))
        tol = TOL[dtype]
        yield {"y": (y, want, tol)}
        yield grads(y, [X, *params.values()], want, [Xr, *pr.values()], ["X", *params], tol)
    return run


# --- glm_dsa -------------------------------------------------------------------------------------------------------

def glm_indexer_case(B, S, H, DH, topk, dtype, packed=False):
    """indexer_scores and indexer_topk (forward only): the scores against the definition, then the top-k:
    the reference scores of the keys the library picks against the reference's own top-k scores (equal up to
    the tolerance: near-ties may pick another key of the same score), causal, and with sample packing
    (seq_q / seq_k document ids) no key of another document."""

    def run():
        mod = need("glm_dsa.indexer")
        q, k, w = rnd(B, S, H, DH, dtype=dtype), rnd(B, S, DH, dtype=dtype), rnd(B, S, H, scale=H ** -0.5)
        scale = DH ** -0.5
        got = mod.indexer_scores(q, k, w, scale)
        want = indexer_ref(d64(q), d64(k), d64(w), scale)
        kw = {}
        if packed:
            seq = torch.sort(torch.randint(0, 3, (B, S))).values
            kw = {"seq_q": seq, "seq_k": seq}
        idx = mod.indexer_topk(q, k, w, scale, topk, **kw)
        pos = torch.arange(S)
        masked = pos[None, None, :] > pos[None, :, None]
        if packed:
            masked = masked | (seq[:, None, :] != seq[:, :, None])
        ref = want.masked_fill(masked, -math.inf)
        kk = min(topk, S)
        best = ref.topk(kk, -1).values
        picked = ref.gather(-1, idx.long()).sort(-1, descending=True).values
        finite = torch.isfinite(best)
        yield {"scores": (got, want, TOL[dtype]),
               "top-k scores": (torch.where(finite, picked, 0.0), torch.where(finite, best, 0.0), TOL[dtype]),
               "masked picks": exact(torch.isfinite(picked), finite),
               "dtype": exact(torch.tensor(idx.dtype == torch.int32), torch.tensor(True))}
    return run


def causal_topk(B, S, T, k, q_offset=0, shuffle=False):
    """[B, S, k] int32: the top k of random scores under a causal mask (query s at q_offset + s), as the
    indexer returns them (keys past the query, -inf, fill the tail), or in a random order when shuffle."""
    scores = torch.rand(B, S, T)
    scores = scores.masked_fill(torch.arange(T)[None, None, :] > (q_offset + torch.arange(S))[None, :, None],
                                -math.inf)
    idx = scores.topk(min(k, T), -1).indices
    if shuffle:
        idx = idx.gather(-1, torch.argsort(torch.rand(idx.shape), -1))
    return idx.to(torch.int32).contiguous()


def gathered_attention(q, k, v, idx, valid, scale):
    """Per (b, h, s): softmax over the keys idx[b, s] that are valid, times their values; rows with no valid
    key give 0. q [B, H, S, D]; k, v [B, H, T, D] or [B, T, D]."""
    B, H, S, _ = q.shape
    bi = torch.arange(B)[:, None, None]
    i = idx.long().clamp(0, (k.shape[-2]) - 1)
    if k.dim() == 4:
        kg = k.permute(0, 2, 1, 3)[bi, i]  # [B, S, K, H, D]
        vg = v.permute(0, 2, 1, 3)[bi, i]
        s = torch.einsum("bhsd,bskhd->bhsk", q, kg) * scale
    else:
        kg, vg = k[bi, i], v[bi, i]  # [B, S, K, D]
        s = torch.einsum("bhsd,bskd->bhsk", q, kg) * scale
    s = s.masked_fill(~valid[:, None], -math.inf)
    m = s.amax(-1, keepdim=True).detach()
    e = torch.exp(s - torch.where(torch.isfinite(m), m, 0.0))
    den = e.sum(-1, keepdim=True)
    p = e / torch.where(den == 0, 1.0, den)
    if k.dim() == 4:
        return torch.einsum("bhsk,bskhd->bhsd", p, vg)
    return torch.einsum("bhsk,bskd->bhsd", p, vg)


def glm_sparse_case(B, H, S, D, DV, topk, dtype):
    """attention_topk.sparse_attn: per-head keys and values gathered at each query's top-k positions, keys past
    the query dropped; forward and backward (q, k, v)."""

    def run():
        mod = need("glm_dsa.attention_topk")
        q, k, v = rnd(B, H, S, D, dtype=dtype), rnd(B, H, S, D, dtype=dtype), rnd(B, H, S, DV, dtype=dtype)
        idx = causal_topk(B, S, S, topk)
        (qg, kg, vg), (qr, kr, vr) = leaves(q, k, v)
        scale = D ** -0.5
        y = mod.sparse_attn(qg, kg, vg, idx, scale)
        valid = idx.long() <= torch.arange(S)[None, :, None]
        want = gathered_attention(qr, kr, vr, idx, valid, scale)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [qg, kg, vg], want, [qr, kr, vr], ["q", "k", "v"], TOL[dtype])
    return run


def glm_absorb_case(B, H, S, Skv, topk, dtype, q_offset=0, packed=False, shuffle=False):
    """attention_mla_absorb.mla_absorb_attn: q_abs [B, H, S, 576] against the shared key [B, Skv, 576] at each
    query's top-k positions (the value the first 512 columns), causal at q_offset + s, and with packing
    (seq_q / seq_k) within the query's document; a query with no valid key gives 0. shuffle puts masked keys
    anywhere in the list (a whole leading block of them for some queries). Forward and backward (q_abs,
    k_shared)."""

    def run():
        mod = need("glm_dsa.attention_mla_absorb")
        DL = mod.KV_LORA_RANK
        q = rnd(B, H, S, mod.DQK, dtype=dtype)
        ksh = rnd(B, Skv, mod.DQK, dtype=dtype, scale=0.5)
        idx = causal_topk(B, S, Skv, topk, q_offset, shuffle)
        kw = {}
        valid = idx.long() <= (q_offset + torch.arange(S))[None, :, None]
        if packed:
            seq_k = torch.sort(torch.randint(0, 3, (B, Skv))).values.to(torch.int32)
            seq_q = seq_k[:, q_offset:q_offset + S].contiguous()
            kw = {"seq_q": seq_q, "seq_k": seq_k}
            valid = valid & (seq_k.gather(1, idx.long().flatten(1)).view(idx.shape) == seq_q[:, :, None])
        (qg, kg), (qr, kr) = leaves(q, ksh)
        scale = mod.DQK ** -0.5
        y = mod.mla_absorb_attn(qg, kg, idx, scale, q_offset, **kw)
        want = gathered_attention(qr, kr, kr[..., :DL], idx, valid, scale)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [qg, kg], want, [qr, kr], ["q_abs", "k_shared"], TOL[dtype])
    return run



# --- scattermoe_lora -----------------------------------------------------------------------------------------------

SML = "scattermoe_lora."


def moe_need(name):
    """A scattermoe_lora module; torch.compile is the identity while it loads (parallel_experts.flatten_sort_count
    is decorated with it: a torch sort and bincount, and the real one would bring in Inductor)."""
    real = torch.compile
    torch.compile = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)
    try:
        return need(SML + name)
    finally:
        torch.compile = real


def routing(T, E, k, empty=()):
    """Top-k routing of T tokens to k distinct experts of E (none to those in `empty`), and the library's own
    flatten_sort_count of it: (expert_idxs [T, k], sorted_expert_idxs, sorted_scattered_idxs, expert_offsets)."""
    allowed = torch.tensor([e for e in range(E) if e not in empty])
    idx = torch.stack([allowed[torch.randperm(len(allowed))[:k]] for _ in range(T)]) if T else \
        torch.empty(0, k, dtype=torch.long)
    sei, ssi, off = moe_need("parallel_experts").flatten_sort_count(idx, E)
    return idx, sei, ssi, off


def moe_ref(x, W, A, B, s, bias, idx, gates=None, grouped_in=False, grouped_out=False, ssi=None, lora_idx=None,
            groups=None):
    """Row r = t k + j (token t's j-th expert e) is x[t] W[e] + s (x[t] A_e^T) B_e^T + bias[e], with A [E R, K]
    (A_e its rows e R ..) and B [N, E R] (B_e its columns e R ..); x grouped (row i of x is row ssi[i]) when
    grouped_in; the rows combined by the gates [T, k] when given, else in scattered order, or grouped when
    grouped_out. lora_idx [T, k] / groups: the LoRA keyed by another index over `groups` (multi-LoRA)."""
    T, k = idx.shape
    E, K, N = W.shape
    flat = idx.flatten()
    rows = x[torch.argsort(ssi)] if grouped_in else x[torch.arange(T * k) // k]
    y = torch.einsum("rk,rkn->rn", rows, W[flat])
    if A is not None:
        G = groups or E
        lflat = flat if lora_idx is None else lora_idx.flatten()
        R = A.shape[0] // G
        xa = torch.einsum("rk,rqk->rq", rows, A.view(G, R, K)[lflat])
        y = y + s * torch.einsum("rq,rnq->rn", xa, B.view(N, G, R).permute(1, 0, 2)[lflat])
    if bias is not None:
        y = y + bias[flat]
    if gates is not None:
        return (gates.view(T, k, 1) * y.view(T, k, N)).sum(1)
    return y[ssi] if grouped_out else y


def lora_weights(E, K, N, R, dtype):
    W = rnd(E, K, N, dtype=dtype, scale=K ** -0.5)
    A = rnd(E * R, K, dtype=dtype, scale=K ** -0.5)
    B = rnd(N, E * R, dtype=dtype, scale=R ** -0.5)
    return W, A, B


def s2s_lora_case(T, E, k, K, N, R, dtype, bias=False, x_grouped=False, y_grouped=False, empty=(), split=False,
                  int64=False):
    """scatter2scatter_lora (the fused kernel, or with split the library's _scatter2scatter_lora_split: three
    scatter2scatter launches) against moe_ref."""

    def run():
        ops = moe_need("kernels.lora_ops")
        idx, sei, ssi, _ = routing(T, E, k, empty)
        W, A, B = lora_weights(E, K, N, R, dtype)
        b = rnd(E, N, dtype=dtype) if bias else None
        x = rnd(T * k if x_grouped else T, K, dtype=dtype)
        fn = ops._scatter2scatter_lora_split if split else ops.scatter2scatter_lora
        if x_grouped:  # the rows are already expanded: fan-out 1 over T k rows, as the library calls it
            idx = idx.reshape(-1, 1)
        got = fn(x, W, sei, ssi, idx.shape[1], A, B, 0.75, b, x_grouped, y_grouped, int64_indices=int64)
        want = moe_ref(d64(x), d64(W), d64(A), d64(B), 0.75, None if b is None else d64(b), idx,
                       grouped_in=x_grouped, grouped_out=y_grouped, ssi=ssi)
        yield {"y": (got, want, TOL[dtype])}
    return run


def s2s_lora_dx_case(T, E, k, K, N, R, dtype, dy_grouped=True, dx_grouped=False, empty=()):
    """scatter2scatter_lora_dX: dX = dY W_e^T + s (dY B_e) A_e per row; dY grouped or in scattered order
    (read through the scattered indices, fan-out k), dX grouped or scattered."""

    def run():
        ops = moe_need("kernels.lora_ops")
        idx, sei, ssi, _ = routing(T, E, k, empty)
        W, A, B = lora_weights(E, K, N, R, dtype)
        dy = rnd(T * k, N, dtype=dtype)  # scattered rows
        given = dy[ssi] if dy_grouped else dy
        # dY has a row per scattered row either way: fan-out 1, as ScatterMoELoRA's backward passes it
        got = ops.scatter2scatter_lora_dX(given, W, sei, ssi, 1, A, B, 0.5, dy_grouped=dy_grouped,
                                          dx_grouped=dx_grouped)
        flat = idx.flatten()
        dyr = d64(dy)
        want = torch.einsum("rn,rkn->rk", dyr, d64(W)[flat]) + 0.5 * torch.einsum(
            "rq,rqk->rk", torch.einsum("rn,rnq->rq", dyr, d64(B).view(N, E, R).permute(1, 0, 2)[flat]),
            d64(A).view(E, R, K)[flat])
        yield {"dx": (got, want[ssi] if dx_grouped else want, TOL[dtype])}
    return run


def lora_grad_ref(x_rows, dy_rows, A, B, s, flat, E):
    """dA_e = s sum over e's rows (dY B_e)^T x, dB_e = s sum dY^T (x A_e^T), by definition."""
    R = A.shape[0] // E
    N, K = B.shape[0], A.shape[1]
    dA, dB = torch.zeros(E, R, K, dtype=F64), torch.zeros(N, E, R, dtype=F64)
    Ae, Be = d64(A).view(E, R, K), d64(B).view(N, E, R)
    for e in range(E):
        rows = flat == e
        if rows.any():
            xe, dye = x_rows[rows], dy_rows[rows]
            dA[e] = s * (dye @ Be[:, e]).t() @ xe
            dB[:, e] = s * dye.t() @ (xe @ Ae[e].t())
    return dA.view(E * R, K), dB.view(N, E * R)


def lora_bwd_case(kind, T, E, k, K, N, R, dtype, empty=(), dy_grouped=False, rounded=False, int64=False):
    """kind: split (group_bwd_lora: the two split dA / dB kernels on grouped X and dY), fused
    (group_bwd_lora_fused: X, and dY unless dy_grouped, read through the scattered indices; with rounded the
    expert counts padded to BLOCK_M by the library's round_expert_counts, the real ones masking), gram
    (kernels/grouped_gram.grouped_lora_weight_grads over grouped X, dY, XA and YB)."""

    def run():
        ops = moe_need("kernels.lora_ops")
        idx, sei, ssi, off = routing(T, E, k, empty)
        _, A, B = lora_weights(E, K, N, R, dtype)
        x = rnd(T, K, dtype=dtype)
        dy = rnd(T * k, N, dtype=dtype)  # scattered rows
        flat = idx.flatten()
        x_rows = d64(x)[torch.arange(T * k) // k]
        wa, wb = lora_grad_ref(x_rows, d64(dy), A, B, 0.5, flat, E)
        if kind == "split":
            dA, dB = ops.group_bwd_lora(dy[ssi], x[torch.arange(T * k) // k][ssi], A, B, off, E, 0.5,
                                        int64_indices=int64)
        elif kind == "fused":
            if rounded:
                sei_p, ssi_p, off_p, real = ops.round_expert_counts(sei, ssi, off, E)
                dA, dB = ops.group_bwd_lora_fused(dy[ssi_p] if dy_grouped else dy, x, A, B, off_p, ssi_p, E, k,
                                                  0.5, real_expert_offsets=real, dy_grouped=dy_grouped)
            else:
                dA, dB = ops.group_bwd_lora_fused(dy[ssi] if dy_grouped else dy, x, A, B, off, ssi, E, k, 0.5,
                                                  dy_grouped=dy_grouped, int64_indices=int64)
        else:
            gram = moe_need("kernels.grouped_gram")
            gx, gdy = x[torch.arange(T * k) // k][ssi], dy[ssi]
            Rk = A.shape[0] // E
            xa = torch.einsum("rk,rqk->rq", gx.float(), A.float().view(E, Rk, K)[sei]).to(dtype)
            yb = torch.einsum("rn,rnq->rq", gdy.float(), B.float().view(N, E, Rk).permute(1, 0, 2)[sei]).to(dtype)
            dA, dB = gram.grouped_lora_weight_grads(gdy, gx, yb, xa, A, B, off, E, 0.5)
        yield {"dA": (dA, wa, TOL[dtype]), "dB": (dB, wb, TOL[dtype])}
    return run



def mx_weights(E, K, N, linear, dtype):
    """Random MXFP4 (E8M0 scales per 32 along K) or NVFP4 (linear float32 scales per 16: E4M3 block scales
    times a per-expert float32 scale) expert weights as the library's MXWeights, and their dequantization
    from the definition, [E, K, N] in the compute dtype: the E2M1 code of nibble k % 2 of byte k / 2 (low
    first) times its block's scale."""
    mxw = moe_need("mx_weights")
    packed = torch.randint(0, 256, (E, N, K // 2), dtype=torch.uint8)
    codes = torch.stack([packed & 15, packed >> 4], -1).flatten(-2).long()  # [E, N, K]
    vals = torch.tensor(mxw._FP4_E2M1_LUT, dtype=F64)[codes]
    if linear:
        block = torch.rand(E, N, K // 16, dtype=F64).mul(0.3).add(0.01).to(torch.float8_e4m3fn).float()
        scales = (block * (torch.rand(E, 1, 1) + 0.5)).contiguous()
        sc = d64(scales).repeat_interleave(16, -1)
    else:
        scales = torch.randint(122, 129, (E, N, K // 32), dtype=torch.uint8)
        sc = torch.pow(2.0, scales.double() - 127).repeat_interleave(32, -1)
    W = (vals * sc).float().to(dtype).double().permute(0, 2, 1)
    return mxw.MXWeights(packed=packed, scales=scales, K=K, N=N, block_size=16 if linear else 32,
                         scale_is_linear=linear, orig_dtype=dtype), W


def scattermoe_lora_case(T, E, k, K, N, R, dtype, gates=False, bias=False, grouped_in=False, grouped_out=False,
                         fused_dx=False, fused_gather=False, empty=(), mx=None, lora=True):
    """parallel_linear_lora (the ScatterMoELoRA autograd Function; without LoRA, scattermoe's ParallelLinear)
    forward and backward against moe_ref: the gradients of x, A, B and the gates (ParallelLinear: of x, the
    expert weights, their biases and the gates). mx: "mxfp4" or "nvfp4" expert weights (MXWeights; the
    library then takes the fused dX and fused gather paths itself)."""

    def run():
        ple = moe_need("parallel_linear_lora")
        idx, sei, ssi, off = routing(T, E, k, empty)
        W, A, B = lora_weights(E, K, N, R, dtype)
        if mx:
            weights, W64 = mx_weights(E, K, N, mx == "nvfp4", dtype)
        else:
            weights, W64 = W, None
        b = rnd(E, N, dtype=dtype) if bias else None
        x = rnd(T * k if grouped_in else T, K, dtype=dtype)
        if grouped_in:  # already expanded: fan-out 1 over the T k rows, as the library's second layer calls it
            idx = idx.reshape(-1, 1)
        g = torch.softmax(rnd(T, k), -1).to(dtype) if gates else None
        names = ["x", *(["A", "B"] if lora else ["W", *(["bias"] if bias else [])]), *(["gates"] if gates else [])]
        given = {"x": x, "A": A, "B": B, "W": W, "bias": b, "gates": g}
        got_in, ref_in = leaves(*[given[n] for n in names])
        got, ref = dict(zip(names, got_in)), dict(zip(names, ref_in))
        if lora:
            y = ple.parallel_linear_lora(got["x"], weights, idx.shape[1], sei, ssi, off, got["A"], got["B"], 0.75, b,
                                         got.get("gates"), grouped_in, grouped_out, fused_dx, fused_gather)
            want = moe_ref(ref["x"], W64 if mx else d64(W), ref["A"], ref["B"], 0.75,
                           None if b is None else d64(b), idx, ref.get("gates"), grouped_in, grouped_out, ssi)
        else:
            y = ple.parallel_linear_lora(got["x"], got["W"], idx.shape[1], sei, ssi, off, expert_biases=got.get("bias"),
                                         gates=got.get("gates"), grouped_in=grouped_in, grouped_out=grouped_out)
            want = moe_ref(ref["x"], ref["W"], None, None, 0.0, ref.get("bias"), idx, ref.get("gates"),
                           grouped_in, grouped_out, ssi)
        tol = TOL[dtype]
        yield {"y": (y, want, tol)}
        yield grads(y, got_in, want, ref_in, names, tol)
    return run



def parallel_experts_case(T, E, k, K, N, R, dtype):
    """scattermoe_lora/lora_ops.py's ParallelExperts module (weight [E, out, in], bias, set_lora) routing
    through parallel_linear_lora, with gates; forward and backward (x, A, B, gates)."""

    def run():
        mod = moe_need("lora_ops")
        idx, sei, ssi, off = routing(T, E, k)
        layer = mod.ParallelExperts(E, K, N, bias=True).to(dtype)
        layer.weight.data = rnd(E, N, K, dtype=dtype, scale=K ** -0.5)
        layer.bias.data = rnd(E, N, dtype=dtype)
        layer.weight.requires_grad_(False)
        layer.bias.requires_grad_(False)
        _, A, B = lora_weights(E, K, N, R, dtype)
        g = torch.softmax(rnd(T, k), -1).to(dtype)
        x = rnd(T, K, dtype=dtype)
        (xg, Ag, Bg, gg), (xr, Ar, Br, gr) = leaves(x, A, B, g)
        layer.set_lora(Ag, Bg, 2.0)
        y = layer(xg, k, sei, ssi, off, gates=gg)
        want = moe_ref(xr, d64(layer.weight).permute(0, 2, 1), Ar, Br, 2.0, d64(layer.bias), idx, gr, ssi=ssi)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [xg, Ag, Bg, gg], want, [xr, Ar, Br, gr], ["x", "A", "B", "gates"], TOL[dtype])
    return run


def multilora_case(T, E, tenants, k, K, N, R, dtype, empty=()):
    """multi_lora.scatter2scatter_multilora (ScatterMoEMultiLoRA): the base keyed by the expert, the LoRA by
    (expert, tenant) over E T groups, routed by the library's build_multilora_routing; forward and backward
    (x, A, B)."""

    def run():
        ml = moe_need("multi_lora")
        idx, _, _, _ = routing(T, E, k, empty)
        tenant = torch.randint(0, tenants, (T, k))
        sei, sci, ssi, eoff, coff = ml.build_multilora_routing(idx.flatten(), tenant.flatten(), E, tenants)
        W, A, B = lora_weights(E * tenants, K, N, R, dtype)
        W = W[:E].contiguous()
        x = rnd(T, K, dtype=dtype)
        (xg, Ag, Bg), (xr, Ar, Br) = leaves(x, A, B)
        y = ml.scatter2scatter_multilora(xg, W, k, sei, sci, ssi, eoff, coff, Ag, Bg, 0.5)
        want = moe_ref(xr, d64(W), Ar, Br, 0.5, None, idx, lora_idx=idx * tenants + tenant, groups=E * tenants)
        yield {"y": (y, want, TOL[dtype])}
        yield grads(y, [xg, Ag, Bg], want, [xr, Ar, Br], ["x", "A", "B"], TOL[dtype])
    return run


def base_ops_case(kind, T, E, k, K, N, dtype, bias=False, residual=False, x_grouped=False, y_grouped=False,
                  int64=False, coeff=False, empty=()):
    """kernels/ops.py directly: scatter2scatter (with the per-row residual the LoRA path fuses, biases,
    grouped input or output, INT64_INDICES), group (fan-out k, optional per-row coefficients) and group_bwd_W
    (per expert X_e^T dY_e and, with bias, dY_e's column sums; experts with no rows get zeros)."""

    def run():
        ops = moe_need("kernels.ops")
        idx, sei, ssi, off = routing(T, E, k, empty)
        tol = TOL[dtype]
        if kind == "scatter2scatter":
            W = rnd(E, K, N, dtype=dtype, scale=K ** -0.5)
            b = rnd(E, N, dtype=dtype) if bias else None
            x = rnd(T * k if x_grouped else T, K, dtype=dtype)
            res = rnd(T * k, N, dtype=dtype) if residual else None
            if x_grouped:  # already expanded: fan-out 1
                idx = idx.reshape(-1, 1)
            got = ops.scatter2scatter(x, W, sei, ssi, idx.shape[1], b=b, x_grouped=x_grouped, y_grouped=y_grouped,
                                      int64_indices=int64, residual=res)
            want = moe_ref(d64(x), d64(W), None, None, 0.0, None if b is None else d64(b), idx,
                           grouped_in=x_grouped, grouped_out=y_grouped, ssi=ssi)
            if residual:
                want = want + d64(res)  # the residual is indexed like the output rows
            yield {"y": (got, want, tol)}
        elif kind == "group":
            x = rnd(T, K, dtype=dtype)
            c = torch.rand(T * k).to(dtype) if coeff else None
            got = ops.group(x, ssi, coeff=c, fan_out=k)
            want = d64(x)[ssi // k] * (d64(c)[ssi][:, None] if coeff else 1.0)
            yield {"y": (got, want, tol)}
        else:
            x, dy = rnd(T * k, K, dtype=dtype), rnd(T * k, N, dtype=dtype)  # grouped rows
            dW, db = ops.group_bwd_W(dy, x, off, E, has_bias=bias)
            starts = torch.cat([torch.zeros(1, dtype=off.dtype), off[:-1]])
            wW = torch.stack([d64(x)[s:e].t() @ d64(dy)[s:e] for s, e in zip(starts.tolist(), off.tolist())])
            out = {"dW": (dW, wW, tol)}
            if bias:
                out["db"] = (db, torch.stack([d64(dy)[s:e].sum(0) for s, e in zip(starts.tolist(), off.tolist())]),
                             tol)
            yield out
    return run


def single_case(E, k, K, N, dtype, one_input=True):
    """kernels/single.py single2scatter (one decoding token): one input row to its k experts, or k rows one to
    each (K and N multiples of the kernel's 128-wide blocks: its grid and loads assume it)."""

    def run():
        single = moe_need("kernels.single")
        W = rnd(E, K, N, dtype=dtype, scale=K ** -0.5)
        x = rnd(1 if one_input else k, K, dtype=dtype)
        ex = torch.randperm(E)[:k][None]
        got = single.single2scatter(x, W, ex)
        want = torch.stack([d64(x)[0 if one_input else j] @ d64(W)[int(ex[0, j])] for j in range(k)])
        yield {"y": (got, want, TOL[dtype])}
    return run


def group_bwd_lora_atomic_case(T, E, k, K, N, R, dtype, empty=()):
    """lora_ops._group_bwd_lora, which no host function of the library launches (group_bwd_lora runs the split
    kernels instead): launched as its docstring says, grid (E cdiv(K, BLOCK_K), cdiv(N, BLOCK_N)) over grouped X
    and dY into zeroed dA / dB it accumulates into atomically, under its autotuner."""

    def run():
        ops = moe_need("kernels.lora_ops")
        idx, sei, ssi, off = routing(T, E, k, empty)
        _, A, B = lora_weights(E, K, N, R, dtype)
        x, dy = rnd(T, K, dtype=dtype), rnd(T * k, N, dtype=dtype)
        gx, gdy = x[torch.arange(T * k) // k][ssi].contiguous(), dy[ssi].contiguous()
        dA, dB = torch.zeros_like(A), torch.zeros_like(B)
        grid = lambda META: (E * triton.cdiv(K, META["BLOCK_K"]), triton.cdiv(N, META["BLOCK_N"]))  # noqa: E731
        ops._group_bwd_lora[grid](gdy, gdy.stride(0), gdy.stride(1), gx, gx.stride(0), gx.stride(1),
                                  A, A.stride(0), A.stride(1), B, B.stride(0), B.stride(1),
                                  dA, dA.stride(0), dA.stride(1), dB, dB.stride(0), dB.stride(1), off,
                                  M=T * k, M_BUCKET=ops._bucket_m(T * k), K=K, N=N, ACTUAL_R=R,
                                  BLOCK_R=ops._block_r_for_rank(R), scaling=0.5, ACC_TYPE=triton.language.float32,
                                  allow_tf32=ops.ALLOW_TF32)
        wa, wb = lora_grad_ref(d64(x)[torch.arange(T * k) // k], d64(dy), A, B, 0.5, idx.flatten(), E)
        yield {"dA": (dA, wa, TOL[dtype]), "dB": (dB, wb, TOL[dtype])}
    return run



# --- dequantizers, quantizers, activations -------------------------------------------------------------------------

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]


def nibbles(packed, high_first=False):
    """[..., n] bytes -> [..., 2n] 4-bit codes, element 2i the low nibble of byte i (the high one when
    high_first, bitsandbytes' order)."""
    lo, hi = (packed & 15).long(), (packed >> 4).long()
    return torch.stack([hi, lo] if high_first else [lo, hi], -1).flatten(-2)


def e4m3_scales(*shape, top=60.0):
    """Random positive float8_e4m3fn block scales below `top`."""
    return (torch.rand(*shape, dtype=F64) * top + 2.0 ** -4).to(torch.float8_e4m3fn)


def nf4_case(E, active, shape, blocksize, dtype):
    """selective_dequant_nf4_triton: the active experts' NF4 codes (bitsandbytes' order: element 2i the high
    nibble) times their block's absmax, in float32 then the output dtype; exactly."""

    def run():
        mod = moe_need("selective_dequant_kernel")
        numel = shape[0] * shape[1]
        packed = torch.randint(0, 256, (E * numel // 2, 1), dtype=torch.uint8)
        absmax = torch.rand(E * numel // blocksize) + 0.1
        act = torch.tensor(active, dtype=torch.int64)
        got = mod.selective_dequant_nf4_triton(packed, absmax, act, shape, blocksize, dtype)
        codes = nibbles(packed.view(E, numel // 2), high_first=True)
        want = torch.tensor(NF4)[codes] * absmax.view(E, -1).repeat_interleave(blocksize, -1)
        yield {"weights": exact(got, want[act].to(dtype).view(len(active), *shape))}
    return run


def nvfp4_dequant_case(kind, c, N, K):
    """dequant_grouped.nvfp4_dequant_bf16 / nvfp4_dequant_fp8: E2M1 code (low nibble first) times its
    16-wide block's E4M3 scale times the expert's float32 scale, in float32 in the kernel's order ((code
    scale) per_tensor), then bfloat16 or float8_e4m3fn; exactly."""

    def run():
        mod = moe_need("dequant_grouped")
        q = torch.randint(0, 256, (c, N, K // 2), dtype=torch.uint8)
        sc = e4m3_scales(c, N, K // 16, top=12.0)
        pt = torch.rand(c) * 0.5 + 0.25
        fn = mod.nvfp4_dequant_bf16 if kind == "bf16" else mod.nvfp4_dequant_fp8
        got = fn(q, sc, pt)
        want = E2M1[nibbles(q)] * sc.float().repeat_interleave(16, -1) * pt[:, None, None]
        yield {"weights": exact(got, want.to(got.dtype)) if kind == "bf16" else
               exact(got.view(torch.uint8), want.to(torch.float8_e4m3fn).view(torch.uint8))}
    return run


def fp8_e8m0_case(M, K, dtype):
    """dequant_grouped.fp8_e8m0_cast_128: per 128-wide group sf = 2^ceil(log2(max(amax, 1e-4) / 448)) and
    x / sf in float8_e4m3fn (DeepGEMM's per_token_cast_to_fp8 with UE8M0 scales); exactly."""

    def run():
        mod = moe_need("dequant_grouped")
        x = rnd(M, K, dtype=dtype, scale=3)
        x[0, :128] = 0  # a group of zeros: amax floors at 1e-4
        q, sf = mod.fp8_e8m0_cast_128(x)
        g = d64(x).view(M, K // 128, 128)
        want_sf = torch.exp2(torch.ceil(torch.log2(g.abs().amax(-1).clamp_min(1e-4) / 448)))
        want_q = (g / want_sf[..., None]).view(M, K).to(torch.float8_e4m3fn)
        yield {"scales": exact(sf, want_sf.float()), "codes": exact(q.view(torch.uint8), want_q.view(torch.uint8))}
    return run


def grouped_dx_fp8_case(tiles, block_m, E, N, K):
    """dequant_grouped.grouped_dx_fp8: dX = grad W_e with W float8_e4m3fn, each block_m-row tile of grad one
    expert's (m_indices), under the autotuner (BN 64 / 128, BK 128 / 256)."""

    def run():
        mod = moe_need("dequant_grouped")
        grad = rnd(tiles * block_m, N, dtype=BF16)
        w = (torch.randn(E, N, K, dtype=F64) * 8).to(torch.float8_e4m3fn)
        mi = torch.randint(0, E, (tiles,), dtype=torch.int32)
        got = mod.grouped_dx_fp8(grad, w, mi, block_m)
        rows = mi.long().repeat_interleave(block_m)
        want = torch.einsum("mn,mnk->mk", d64(grad), d64(w.float())[rows])
        yield {"dx": (got, want, TOL[BF16])}
    return run


def marlin_case(kind, C, N, K):
    """marlin_w4a16.fused_dequant: marlin_dequant_bf16 / marlin_dequant_fp8 decode nibble
    lut[(n % 64) 16 + k % 16] of base tile (k / 16, n / 64) from the int32 words (8 nibbles each, low first)
    and scale it by the E4M3 block scale and the expert's float32 scale. The LUT here is a random permutation
    of the 1024 positions (the library builds the real one with the marlin CUDA extension's repack, which a
    CPU lacks): the kernel reads any LUT alike. Random words, sign bit included (the shifts are arithmetic)."""

    def run():
        mod = moe_need("marlin_w4a16.fused_dequant")
        qw = torch.randint(-2 ** 31, 2 ** 31, (C, K * N // 8), dtype=torch.int64).to(torch.int32)
        sc = e4m3_scales(C, N, K // 16, top=12.0)
        pt = torch.rand(C) * 0.5 + 0.25
        lut = torch.randperm(1024).to(torch.int32)
        fn = mod.marlin_dequant_bf16 if kind == "bf16" else mod.marlin_dequant_fp8
        got = fn(qw, sc, pt, lut, E2M1.clone(), N, K, C)
        n, k = torch.arange(N)[:, None], torch.arange(K)[None, :]
        pos = ((k // 16) * (N // 64) + n // 64) * 1024 + lut.long()[(n % 64) * 16 + k % 16]  # [N, K]
        words = qw.long()[:, pos // 8]
        nib = (words >> ((pos % 8) * 4)) & 15
        want = (E2M1[nib] * sc.float().repeat_interleave(16, -1)) * pt[:, None, None]
        yield {"weights": exact(got, want.to(got.dtype)) if kind == "bf16" else
               exact(got.view(torch.uint8), want.to(torch.float8_e4m3fn).view(torch.uint8))}
    return run


def gated_act_case(act, Mt, I, dtype, limit=1.7, strided=False):
    """cutlass_fp4/swiglu.py swiglu_fwd / swiglu_bwd: gu [Mt, 2I] (gate | up) -> h [Mt, I], and dgu from dh;
    act "silu": silu(min(g, L)) clamp(u, -L, L); "gelu_tanh": gelu_tanh(g) u (libdevice.tanh). I not a multiple
    of the 512-wide blocks; strided: gu a column slice of a wider tensor (the kernels take strides)."""

    def run():
        mod = moe_need("cutlass_fp4.swiglu")
        base = rnd(Mt, 2 * I + (6 if strided else 0), dtype=dtype, scale=2)
        gu = base[:, 3:3 + 2 * I] if strided else base
        h = mod.swiglu_fwd(gu, limit, act)
        (gr,) = leaves(gu)[1]
        g, u = gr[:, :I], gr[:, I:]
        if act == "silu":
            g, u = g.clamp(max=limit), u.clamp(-limit, limit)
            want = g * torch.sigmoid(g) * u
        else:
            want = 0.5 * g * (1 + torch.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3))) * u
        yield {"h": (h, want, TOL[dtype])}
        dh = rnd(Mt, I, dtype=dtype)
        got = mod.swiglu_bwd(gu, dh, limit, act)
        (wg,) = torch.autograd.grad(want, [gr], d64(dh))
        yield {"dgu": (got, wg, TOL[dtype])}
    return run


def mxfp8_quant_case(M, K):
    """cutlass_fp4/quant_mxfp8.py mxfp8_quant: per 32 values exp = floor(log2(amax)) - 8 (0 - 8 for an all-zero
    block), codes clamp(x / 2^exp, +-448) in float8_e4m3fn, scales the biased exponent byte; exactly."""

    def run():
        mod = moe_need("cutlass_fp4.quant_mxfp8")
        x = rnd(M, K, dtype=BF16, scale=4)
        x[-1, :32] = 0
        q, sc = mod.mxfp8_quant(x)
        g = d64(x).view(M, K // 32, 32)
        amax = g.abs().amax(-1)
        ex = torch.floor(torch.log2(torch.where(amax > 0, amax, 1.0))) - 8
        want_q = (g / torch.exp2(ex)[..., None]).clamp(-448, 448).view(M, K).to(torch.float8_e4m3fn)
        yield {"codes": exact(q.view(torch.uint8), want_q.view(torch.uint8)),
               "scales": exact(sc.view(torch.uint8), (ex + 127).to(torch.uint8))}
    return run


def e2m1_codes(a):
    """Codes of |values| by the library's thresholds (a value on a boundary takes the lower code)."""
    return sum((a > t).long() for t in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0))


def nvfp4_quant_case(M, K):
    """cutlass_fp4/quant_nvfp4.py nvfp4_quant: per 16 values the scale e4m3(clamp(amax / 6)) (1 where that is 0,
    as stored and as used), codes by the E2M1 thresholds on |x| / scale, sign bit 8 for x < 0, two per byte low
    first; exactly, the float32 arithmetic the kernel's (amax / 6 and x / scale in float32)."""

    def run():
        mod = moe_need("cutlass_fp4.quant_nvfp4")
        x = rnd(M, K, dtype=BF16, scale=4)
        x[0, 16:32] = 0
        q, sc = mod.nvfp4_quant(x)
        g = x.float().view(M, K // 16, 16)
        s = (g.abs().amax(-1) / 6.0).clamp(1e-30, 1e30).to(torch.float8_e4m3fn)
        sd = s.float()
        sd = torch.where(sd > 0, sd, 1.0)
        codes = e2m1_codes(g.abs() / sd[..., None]) + 8 * (g < 0).long()
        codes = codes.view(M, K)
        want = (codes[:, 0::2] + 16 * codes[:, 1::2]).to(torch.uint8)
        yield {"codes": exact(q, want),
               "scales": exact(sc.view(torch.uint8), sd.to(torch.float8_e4m3fn).view(torch.uint8))}
    return run


def fused_dx_case(tiles, E, N, K):
    """cutlass_fp4/fused_dx.py fused_dx: dx = A W_e with W decoded in the kernel (E2M1 code, low nibble
    first, times the E4M3 block scale times the expert's scale, rounded to bfloat16), each 128-row tile of A
    one expert's (m_indices)."""

    def run():
        mod = moe_need("cutlass_fp4.fused_dx")
        A = rnd(tiles * 128, N, dtype=BF16)
        wq = torch.randint(0, 256, (E, N, K // 2), dtype=torch.uint8)
        ws = e4m3_scales(E, N, K // 16, top=2.0)
        pt = torch.rand(E) + 0.5
        mi = torch.randint(0, E, (tiles,), dtype=torch.int32)
        got = mod.fused_dx(A, wq, ws, mi, pt, K)
        W = (E2M1[nibbles(wq)] * ws.float().repeat_interleave(16, -1) * pt[:, None, None]).to(BF16)
        want = torch.einsum("mn,mnk->mk", d64(A), d64(W)[mi.long().repeat_interleave(128)])
        yield {"dx": (got, want, TOL[BF16])}
    return run




def quant_tail_case(kind, M, K):
    """mxfp8_quant / nvfp4_quant with a block count per row (K / 32, K / 16) that is not a multiple of the
    blocks per program (bpm 4, 8): the kernels load and store unmasked, so the last program of each row reads
    past the row and writes past Q and S (the heap, for the last row; running it plainly corrupted the
    allocator). The kernel runs with Tegula's debug mode on (kernel.debug = True) for this case, which stops
    the first access outside its array and reports it."""

    def run():
        mod = moe_need("cutlass_fp4.quant_mxfp8" if kind == "mxfp8" else "cutlass_fp4.quant_nvfp4")
        x = rnd(M, K, dtype=BF16, scale=4)
        saved = mod._qk.debug
        mod._qk.debug = True
        try:
            q, sc = mod.mxfp8_quant(x) if kind == "mxfp8" else mod.nvfp4_quant(x)
        finally:
            mod._qk.debug = saved
        yield {"ran in bounds": exact(torch.tensor(True), torch.tensor(True))}
    return run


# --- sonicmoe ------------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def sonic_triton():
    """sonicmoe's triton_available() asks torch.cuda.is_available() (cached): yes while a case runs."""
    mod = need("sonicmoe.triton_nvfp4")
    GPU["cuda_available"] = True
    mod.triton_available.cache_clear()
    try:
        yield mod
    finally:
        GPU["cuda_available"] = False
        mod.triton_available.cache_clear()


def sonic_dequant_case(lead, K, out_dtype, pts=True):
    """dequant_nvfp4_triton: E2M1 code (low nibble first) times (E4M3 block scale times the slice's float32
    scale) in float32, the kernel's order, then out_dtype: exactly; and against the library's
    dequantize_nvfp4_ref within out_dtype's tolerance."""

    def run():
        ref = need("sonicmoe.nvfp4_quant")
        with sonic_triton() as mod:
            q = torch.randint(0, 256, (*lead, K // 2), dtype=torch.uint8)
            sc = e4m3_scales(*lead, K // 16, top=12.0)
            p = torch.rand(lead[0]) + 0.5 if pts else None
            got = mod.dequant_nvfp4_triton(q, sc, p, out_dtype)
            scale = sc.float()
            if pts:
                scale = scale * p.view(-1, *[1] * (len(lead)))
            want = E2M1[nibbles(q)] * scale.repeat_interleave(16, -1)
            lib = ref.dequantize_nvfp4_ref(q, sc, None if p is None else p.view(-1, *[1] * len(lead)))
            yield {"values": exact(got, want.to(out_dtype)), "vs dequantize_nvfp4_ref": (got, d64(lib),
                                                                                        TOL[out_dtype])}
    return run


def sonic_quant_case(T, K, sfa=False, experts=None):
    """quantize_nvfp4_triton against the library's quantize_nvfp4_ref (packed codes and E4M3 scales, exactly);
    sfa: quantize_rows_fused_sfa_triton against quantize_nvfp4_ref plus sf_layout.build_varlen_sfa (the
    swizzled, expert-padded scale layout), exactly."""

    def run():
        ref = need("sonicmoe.nvfp4_quant")
        with sonic_triton() as mod:
            x = rnd(T, K, dtype=BF16, scale=3)
            x[1, :16] = 0
            want_q, want_s, _ = ref.quantize_nvfp4_ref(x)
            if not sfa:
                q, sc = mod.quantize_nvfp4_triton(x)
                yield {"codes": exact(q, want_q), "scales": exact(sc.view(torch.uint8), want_s.view(torch.uint8))}
            else:
                lay = need("sonicmoe.sf_layout")
                counts = torch.multinomial(torch.ones(experts), T, replacement=True).bincount(minlength=experts)
                counts[0] = 0
                cu = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
                cu[-1] = T
                q, sfa_got = mod.quantize_rows_fused_sfa_triton(x, cu)
                sfa_want = lay.build_varlen_sfa(want_s, cu)
                yield {"codes": exact(q, want_q),
                       "sfa": exact(sfa_got.view(torch.uint8), sfa_want.view(torch.uint8))}
    return run


def fake_quant_ref(x, pts, eps):
    """torchao's NVFP4 quantize-dequantize as fake_quant_nvfp4 states it, in float32 (every division
    correctly rounded): per 16 values bs = amax / 6 (/ pts), s = e4m3(clamp(bs, eps, 448)); q = x ((1 / pts) / s)
    with pts, x / s without, clamped to +-6 and rounded to the nearest E2M1 value (ties to the even code);
    back as value (pts s), in x's dtype."""
    K = x.shape[-1]
    rows = x.reshape(-1, K).float()
    g = rows.view(rows.shape[0], K // 16, 16)
    bs = g.abs().amax(-1) / 6.0
    if pts is not None:
        p = pts.float().repeat_interleave(rows.shape[0] // pts.numel())[:, None]
        bs = bs / p
    sdec = bs.clamp(eps, 448.0).to(torch.float8_e4m3fn).float()
    if pts is not None:
        q = g * ((1.0 / p) / sdec)[..., None]
    else:
        q = g / sdec[..., None]
    q = q.clamp(-6.0, 6.0)
    a = q.abs()
    idx = sum(((a > t) if strict else (a >= t)).long() for t, strict in (
        (0.25, True), (0.75, False), (1.25, True), (1.75, False), (2.5, True), (3.5, False), (5.0, True)))
    val = torch.where(q < 0, -E2M1[idx], E2M1[idx])
    hp = (p * sdec) if pts is not None else sdec
    return (val * hp[..., None]).view(x.shape).to(x.dtype)


def sonic_fake_quant_case(shape, dtype, pts=False, inplace=False):
    """fake_quant_nvfp4_triton (one scale per leading slice, or none; in place or not) against fake_quant_ref;
    exactly."""

    def run():
        with sonic_triton() as mod:
            x = rnd(*shape, dtype=dtype, scale=2)
            x.view(-1, shape[-1])[0, :16] = 0
            p = torch.rand(shape[0]) + 0.5 if pts else None
            want = fake_quant_ref(x, p, float(torch.finfo(torch.float8_e4m3fn).tiny))
            got = mod.fake_quant_nvfp4_triton(x, p, inplace=inplace)
            out = {"values": exact(got, want)}
            if inplace:
                out["in place"] = exact(torch.tensor(got.data_ptr() == x.data_ptr()), torch.tensor(True))
            yield out
    return run


def sonic_rowscale_case(rows, n):
    """rowscale_inplace_triton: x[r] = bf16(f32(x[r]) row_scale[r]) in place; exactly."""

    def run():
        with sonic_triton() as mod:
            x = rnd(rows, n, dtype=BF16)
            p = torch.rand(rows) * 3
            want = (x.float() * p[:, None]).to(BF16)
            got = mod.rowscale_inplace_triton(x, p)
            yield {"x": exact(got, want), "in place": exact(torch.tensor(got.data_ptr() == x.data_ptr()),
                                                            torch.tensor(True))}
    return run


def sonic_pad_cast_case(T, E, K, align=128):
    """fp8_bwd._pad_and_cast_fp8 (the fused pad + per-token fp8 quant, 1 x 128 UE8M0 scales) with the padded
    layout of the library's _dx_plan: padded row m takes grad[src[m]] (zeros where src is -1); per 128 values
    sf = amax / 448 (amax floored at 1e-4) rounded up to a power of two, codes x / sf in float8_e4m3fn;
    exactly."""

    def run():
        mod = need("sonicmoe.fp8_bwd")
        with sonic_triton():
            counts = torch.multinomial(torch.ones(E), T, replacement=True).bincount(minlength=E)
            counts[-1] += T - counts.sum()
            offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
            grad = rnd(T, K, dtype=BF16, scale=5)
            dest, m_idx, src, m_max = mod._dx_plan(offsets, T, E, align)
            q, sf = mod._pad_and_cast_fp8(grad, src, dest, m_max)
            padded = torch.zeros(m_max, K, dtype=F32)
            padded[src >= 0] = grad.float()[src[src >= 0].long()]
            g = padded.view(m_max, K // 128, 128)
            raw = g.abs().amax(-1).clamp_min(1e-4) / 448.0
            m, e = torch.frexp(raw)
            want_sf = torch.ldexp(torch.ones_like(raw), torch.where(m == 0.5, e - 1, e))
            want_q = (g * (1.0 / want_sf)[..., None]).view(m_max, K).to(torch.float8_e4m3fn)
            yield {"scales": exact(sf, want_sf), "codes": exact(q.view(torch.uint8), want_q.view(torch.uint8))}
    return run


# --- the cases -----------------------------------------------------------------------------------------------------

case("dsv4 rope fp32 2 x 3 x 37 x 96, rope 64", dsv4_rope_case(2, 3, 37, 96, 64, F32), FB)
case("dsv4 rope bf16 1 x 4 x 19 x 192, rope 64, sin strides differ", dsv4_rope_case(1, 4, 19, 192, 64, BF16,
                                                                                    same_strides=False), FB)
case("dsv4 rope fp16 2 x 2 x 5 x 40, rope 32", dsv4_rope_case(2, 2, 5, 40, 32, F16), FB)
case("dsv4 gated_pool fp32 3 x 5 windows of 8, D 100", dsv4_pool_case((3, 5), 8, 100, F32), FB)
case("dsv4 gated_pool bf16 7 windows of 128, D 300", dsv4_pool_case((7,), 128, 300, BF16), FB)
case("dsv4 gated_pool fp32 2 windows of 4, D 33", dsv4_pool_case((2,), 4, 33, F32), FB)
case("dsv4 sliding_attn fp32 B 2, H 3, S 75, D 64, window 20", dsv4_sliding_case(2, 3, 75, 64, 20, F32), FB)
case("dsv4 sliding_attn bf16 B 1, H 5, S 100, D 32, window 128", dsv4_sliding_case(1, 5, 100, 32, 128, BF16), FB)
case("dsv4 sliding_attn fp32 acc bf16 B 1, H 2, S 50, D 64, window 7",
     dsv4_sliding_case(1, 2, 50, 64, 7, F32, acc=BF16), FB)
case("dsv4 sliding_attn fp16 B 2, H 2, S 40, D 64, window 9", dsv4_sliding_case(2, 2, 40, 64, 9, F16), FB)
case("dsv4 sliding_attn fp32 B 1, H 1, S 1, D 16, window 1", dsv4_sliding_case(1, 1, 1, 16, 1, F32), FB)
case("dsv4 csa_attn fp32 B 2, H 3, S 45, T 13, D 64, window 16", dsv4_csa_case(2, 3, 45, 13, 64, 16, F32), FB)
case("dsv4 csa_attn bf16 B 1, H 4, S 70, T 30, D 32, window 128", dsv4_csa_case(1, 4, 70, 30, 32, 128, BF16), FB)
case("dsv4 csa_attn_topk fp32 B 2, H 20, S 33, T 40, K 12, D 64, window 8",
     dsv4_gather_case(2, 20, 33, 40, 12, 64, 8, F32), FB)
case("dsv4 csa_attn_topk bf16 B 1, H 16, S 40, T 25, K 20, D 32, window 16",
     dsv4_gather_case(1, 16, 40, 25, 20, 32, 16, BF16), FB)
case("dsv4 csa_attn_topk fp16 B 1, H 3, S 21, T 17, K 5, D 64, window 6",
     dsv4_gather_case(1, 3, 21, 17, 5, 64, 6, F16), FB)
case("dsv4 csa_attn_topk fp32 every gathered index -1, B 1, H 4, S 9, T 5, K 3, D 16, window 4",
     dsv4_gather_case(1, 4, 9, 5, 3, 16, 4, F32, invalid=1.0), FB)
case("dsv4 indexer_scores fp32 B 2, S 37, H 5, T 45, DH 64", dsv4_indexer_case(2, 37, 5, 45, 64, F32))
case("dsv4 indexer_scores bf16 B 1, S 130, H 3, T 70, DH 32", dsv4_indexer_case(1, 130, 3, 70, 32, BF16))
case("dsv4 hyperconnection fp32 B 2, S 37, hc 4, hidden 96, 20 iterations", dsv4_mhc_case(2, 37, 4, 96, 20, F32),
     FB)
case("dsv4 hyperconnection bf16 B 1, S 75, hc 4, hidden 200, 5 iterations", dsv4_mhc_case(1, 75, 4, 200, 5, BF16),
     FB)
case("dsv4 hyperconnection fp32 no grad, B 1, S 9, hc 4, hidden 64, 3 iterations",
     dsv4_mhc_case(1, 9, 4, 64, 3, F32, no_grad=True))
case("dsv4 lora_mlp clamped swiglu fp32 2 x 19 x 48 -> 100, rank 8, limit 1.7",
     dsv4_lora_mlp_case(2, 19, 48, 100, 8, 1.7, F32), FB)
case("dsv4 lora_mlp clamped swiglu bf16 biases, 1 x 33 x 64 -> 130, rank 16, limit 1.7",
     dsv4_lora_mlp_case(1, 33, 64, 130, 16, 1.7, BF16, bias=True), FB)

case("glm_dsa indexer fp32 B 2, S 37, H 4, DH 64, top-k 16", glm_indexer_case(2, 37, 4, 64, 16, F32))
case("glm_dsa indexer bf16 B 1, S 70, H 8, DH 128, top-k 100 (> S)", glm_indexer_case(1, 70, 8, 128, 100, BF16))
case("glm_dsa indexer fp32 packed B 2, S 50, H 3, DH 32, top-k 20", glm_indexer_case(2, 50, 3, 32, 20, F32,
                                                                                      packed=True))
case("glm_dsa sparse_attn fp32 B 2, H 3, S 37, D 64, DV 32, top-k 16", glm_sparse_case(2, 3, 37, 64, 32, 16, F32),
     FB)
case("glm_dsa sparse_attn bf16 B 1, H 2, S 70, D 128, DV 64, top-k 100 (all 70 keys)",
     glm_sparse_case(1, 2, 70, 128, 64, 100, BF16), FB)
case("glm_dsa sparse_attn fp32 top-1, B 1, H 2, S 20, D 32, DV 16", glm_sparse_case(1, 2, 20, 32, 16, 1, F32), FB)
case("glm_dsa mla_absorb fp32 B 1, H 20, S 37, top-k 24", glm_absorb_case(1, 20, 37, 37, 24, F32), FB)
case("glm_dsa mla_absorb bf16 B 2, H 16, S 29, top-k 40 (all 29 keys)", glm_absorb_case(2, 16, 29, 29, 40, BF16), FB)
case("glm_dsa mla_absorb fp32 q_offset 20, S 17 of 37 keys, shuffled top-k 24",
     glm_absorb_case(1, 5, 17, 37, 24, F32, q_offset=20, shuffle=True), FB)
case("glm_dsa mla_absorb fp32 packed B 2, H 7, S 41, top-k 16, shuffled",
     glm_absorb_case(2, 7, 41, 41, 16, F32, packed=True, shuffle=True), FB)
case("glm_dsa mla_absorb bf16 B 1, H 20, S 23, top-k 16, capability 12.0 (backward autotuned over its configs)",
     glm_absorb_case(1, 20, 23, 23, 16, BF16), FB, capability=(12, 0))

S = "scattermoe_lora "
case(S + "ops scatter2scatter fp32 T 37, E 5 (one empty), top-2, K 100, N 72, bias, residual",
     base_ops_case("scatter2scatter", 37, 5, 2, 100, 72, F32, bias=True, residual=True, empty=(2,)))
case(S + "ops scatter2scatter bf16 grouped in, int64 indices, residual, T 50, E 4, top-1, K 64, N 128",
     base_ops_case("scatter2scatter", 50, 4, 1, 64, 128, BF16, residual=True, x_grouped=True, int64=True))
case(S + "ops scatter2scatter fp16 grouped out, T 9, E 8, top-2, K 100, N 72",
     base_ops_case("scatter2scatter", 9, 8, 2, 100, 72, F16, y_grouped=True))
case(S + "ops group fp32 fan-out 2, coefficients, T 37, K 300", base_ops_case("group", 37, 5, 2, 300, 1, F32,
                                                                            coeff=True))
case(S + "ops group bf16 fan-out 1, T 129, K 100", base_ops_case("group", 129, 5, 1, 100, 1, BF16))
case(S + "ops group_bwd_W fp32 bias, T 37, E 5 (one empty), top-2, K 100, N 72",
     base_ops_case("group_bwd_W", 37, 5, 2, 100, 72, F32, bias=True, empty=(4,)))
case(S + "ops group_bwd_W bf16 T 50, E 4, top-1, K 64, N 128", base_ops_case("group_bwd_W", 50, 4, 1, 64, 128, BF16))
case(S + "single2scatter fp32 one row to 2 of 6 experts, K 128, N 256", single_case(6, 2, 128, 256, F32))
case(S + "single2scatter bf16 3 rows to 3 of 4 experts, K 256, N 128", single_case(4, 3, 256, 128, BF16,
                                                                                  one_input=False))
case(S + "scatter2scatter_lora fp32 T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     s2s_lora_case(37, 5, 2, 100, 72, 6, F32, empty=(3,)))
case(S + "scatter2scatter_lora bf16 grouped in, bias, T 37, E 5, top-2, K 100, N 72, rank 6",
     s2s_lora_case(37, 5, 2, 100, 72, 6, BF16, bias=True, x_grouped=True))
case(S + "scatter2scatter_lora fp32 grouped out, bias, T 37, E 5, top-2, K 100, N 72, rank 6",
     s2s_lora_case(37, 5, 2, 100, 72, 6, F32, bias=True, y_grouped=True))
case(S + "scatter2scatter_lora bf16 T 150, E 8 (two empty), top-1, K 64, N 128, rank 16",
     s2s_lora_case(150, 8, 1, 64, 128, 16, BF16, empty=(0, 5)))
case(S + "scatter2scatter_lora fp32 int64 indices, T 37, E 5, top-2, K 100, N 72, rank 6",
     s2s_lora_case(37, 5, 2, 100, 72, 6, F32, int64=True))
case(S + "scatter2scatter_lora split fp32 bias, T 37, E 5, top-2, K 100, N 72, rank 6",
     s2s_lora_case(37, 5, 2, 100, 72, 6, F32, bias=True, split=True))
case(S + "scatter2scatter_lora_dX fp32 grouped dY, T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     s2s_lora_dx_case(37, 5, 2, 100, 72, 6, F32, empty=(3,)))
case(S + "scatter2scatter_lora_dX bf16 scattered dY, grouped dX, T 37, E 5, top-2, K 100, N 72, rank 6",
     s2s_lora_dx_case(37, 5, 2, 100, 72, 6, BF16, dy_grouped=False, dx_grouped=True))
case(S + "scatter2scatter_lora_dX fp32 T 150, E 8, top-1, K 64, N 128, rank 16",
     s2s_lora_dx_case(150, 8, 1, 64, 128, 16, F32))
case(S + "group_bwd_lora split fp32 T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     lora_bwd_case("split", 37, 5, 2, 100, 72, 6, F32, empty=(1,)))
case(S + "group_bwd_lora split bf16 T 150, E 8, top-1, K 64, N 128, rank 16",
     lora_bwd_case("split", 150, 8, 1, 64, 128, 16, BF16, empty=(7,)))
case(S + "group_bwd_lora_fused fp32 scattered dY, T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     lora_bwd_case("fused", 37, 5, 2, 100, 72, 6, F32, empty=(1,)))
case(S + "group_bwd_lora_fused bf16 grouped dY, T 37, E 5, top-2, K 100, N 72, rank 6",
     lora_bwd_case("fused", 37, 5, 2, 100, 72, 6, BF16, dy_grouped=True))
case(S + "group_bwd_lora_fused fp32 int64 indices, T 37, E 5, top-2, K 100, N 72, rank 6",
     lora_bwd_case("fused", 37, 5, 2, 100, 72, 6, F32, int64=True))
case(S + "group_bwd_lora split fp32 int64 indices, T 37, E 5, top-2, K 100, N 72, rank 6",
     lora_bwd_case("split", 37, 5, 2, 100, 72, 6, F32, int64=True))
case(S + "group_bwd_lora_fused fp32 counts rounded to BLOCK_M, T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     lora_bwd_case("fused", 37, 5, 2, 100, 72, 6, F32, empty=(2,), rounded=True))
case(S + "grouped_lora_weight_grads fp32 T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     lora_bwd_case("gram", 37, 5, 2, 100, 72, 6, F32, empty=(1,)))
case(S + "grouped_lora_weight_grads bf16 T 150, E 8, top-1, K 64, N 128, rank 16",
     lora_bwd_case("gram", 150, 8, 1, 64, 128, 16, BF16, empty=(3,)))
case(S + "_group_bwd_lora (unlaunched) fp32 T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     group_bwd_lora_atomic_case(37, 5, 2, 100, 72, 6, F32, empty=(1,)))
case(S + "_group_bwd_lora (unlaunched) bf16 T 150, E 8, top-1, K 64, N 128, rank 16",
     group_bwd_lora_atomic_case(150, 8, 1, 64, 128, 16, BF16))
case(S + "ScatterMoELoRA fp32 no tokens, E 4, top-2, K 100, N 72, rank 6",
     scattermoe_lora_case(0, 4, 2, 100, 72, 6, F32), FB)
case(S + "ScatterMoELoRA fp32 gates, bias, T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 100, 72, 6, F32, gates=True, bias=True, empty=(3,)), FB)
case(S + "ScatterMoELoRA bf16 scattered out, T 37, E 5, top-2, K 100, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 100, 72, 6, BF16), FB)
case(S + "ScatterMoELoRA fp32 fused dX, grouped out, T 37, E 5, top-2, K 100, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 100, 72, 6, F32, grouped_out=True, fused_dx=True), FB)
case(S + "ScatterMoELoRA fp32 fused dX and gather, T 37, E 5 (one empty), top-2, K 100, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 100, 72, 6, F32, fused_dx=True, fused_gather=True, empty=(0,)), FB)
case(S + "ScatterMoELoRA bf16 fused dX and gather, grouped in, T 37, E 5, top-2, K 100, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 100, 72, 6, BF16, grouped_in=True, fused_dx=True, fused_gather=True), FB)
case(S + "ScatterMoELoRA fp32 grouped in and out, bias, T 150, E 8, top-1, K 64, N 128, rank 16",
     scattermoe_lora_case(150, 8, 1, 64, 128, 16, F32, bias=True, grouped_in=True, grouped_out=True), FB)
case(S + "ScatterMoELoRA fp32 MXFP4 weights, T 37, E 5 (one empty), top-2, K 96, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 96, 72, 6, F32, mx="mxfp4", empty=(3,)), FB)
case(S + "ScatterMoELoRA bf16 MXFP4 weights, gates, T 37, E 5, top-2, K 96, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 96, 72, 6, BF16, mx="mxfp4", gates=True), FB)
case(S + "ScatterMoELoRA bf16 NVFP4 weights, bias, T 37, E 5, top-2, K 96, N 72, rank 6",
     scattermoe_lora_case(37, 5, 2, 96, 72, 6, BF16, mx="nvfp4", bias=True), FB)
case(S + "ScatterMoELoRA fp32 NVFP4 weights, grouped out, T 50, E 4, top-1, K 64, N 128, rank 16",
     scattermoe_lora_case(50, 4, 1, 64, 128, 16, F32, mx="nvfp4", grouped_out=True), FB)
case(S + "ParallelLinear fp32 gates, bias, T 37, E 5 (one empty), top-2, K 100, N 72",
     scattermoe_lora_case(37, 5, 2, 100, 72, 6, F32, gates=True, bias=True, empty=(3,), lora=False), FB)
case(S + "ParallelLinear bf16 grouped in, T 50, E 4, top-1, K 64, N 128",
     scattermoe_lora_case(50, 4, 1, 64, 128, 6, BF16, grouped_in=True, lora=False), FB)
case(S + "ParallelExperts fp32 gates, bias, T 37, E 5, top-2, K 100, N 72, rank 6",
     parallel_experts_case(37, 5, 2, 100, 72, 6, F32), FB)
case(S + "multi-LoRA fp32 T 37, E 4, 3 tenants, top-2, K 100, N 72, rank 6",
     multilora_case(37, 4, 3, 2, 100, 72, 6, F32), FB)
case(S + "multi-LoRA bf16 T 60, E 5 (one empty), 2 tenants, top-2, K 64, N 128, rank 16",
     multilora_case(60, 5, 2, 2, 64, 128, 16, BF16, empty=(2,)), FB)

case(S + "selective_dequant_nf4 bf16 experts 0, 2, 5 of 6, 64 x 96, block 64", nf4_case(6, [0, 2, 5], (64, 96), 64,
                                                                                        BF16))
case(S + "selective_dequant_nf4 fp32 experts 3, 1 of 4, 30 x 100, block 50", nf4_case(4, [3, 1], (30, 100), 50, F32))
case(S + "nvfp4_dequant_bf16 3 experts, N 20, K 2080 (K / 1024 blocks with a tail)",
     nvfp4_dequant_case("bf16", 3, 20, 2080))
case(S + "nvfp4_dequant_fp8 2 experts, N 7, K 96", nvfp4_dequant_case("fp8", 2, 7, 96))
case(S + "fp8_e8m0_cast_128 bf16 M 37, K 384", fp8_e8m0_case(37, 384, BF16))
case(S + "fp8_e8m0_cast_128 fp32 M 5, K 128", fp8_e8m0_case(5, 128, F32))
case(S + "grouped_dx_fp8 3 tiles of 128, E 4, N 256, K 200", grouped_dx_fp8_case(3, 128, 4, 256, 200))
case(S + "grouped_dx_fp8 5 tiles of 64, E 3, N 128, K 704", grouped_dx_fp8_case(5, 64, 3, 128, 704))
case(S + "grouped_dx_fp8 2 tiles of 64, E 2, N 200, K 128", grouped_dx_fp8_case(2, 64, 2, 200, 128),
     library="the N loop loads grad and W unmasked: N must be a multiple of the autotuned BN (64 or 128)")
case(S + "marlin_dequant_bf16 2 experts, N 128, K 48", marlin_case("bf16", 2, 128, 48))
case(S + "marlin_dequant_fp8 3 experts, N 64, K 32", marlin_case("fp8", 3, 64, 32))
case(S + "cutlass_fp4 swiglu silu fp32 Mt 5, I 700, limit 1.7", gated_act_case("silu", 5, 700, F32), FB)
case(S + "cutlass_fp4 swiglu silu bf16 Mt 33, I 300, limit 1.7, strided", gated_act_case("silu", 33, 300, BF16,
                                                                                       strided=True), FB)
case(S + "cutlass_fp4 swiglu gelu_tanh fp32 Mt 7, I 1100", gated_act_case("gelu_tanh", 7, 1100, F32), FB)
case(S + "cutlass_fp4 swiglu gelu_tanh bf16 Mt 20, I 96, strided", gated_act_case("gelu_tanh", 20, 96, BF16,
                                                                                 strided=True), FB)
case(S + "cutlass_fp4 mxfp8_quant M 9, K 256", mxfp8_quant_case(9, 256))
case(S + "cutlass_fp4 nvfp4_quant M 9, K 256", nvfp4_quant_case(9, 256))
case(S + "cutlass_fp4 mxfp8_quant M 4, K 96 (3 blocks a row, 4 a program)", quant_tail_case("mxfp8", 4, 96),
     library="unmasked loads and stores: K / 32 must be a multiple of bpm (4), which only K % 32 is asserted for")
case(S + "cutlass_fp4 nvfp4_quant M 3, K 64 (4 blocks a row, 8 a program)", quant_tail_case("nvfp4", 3, 64),
     library="unmasked loads and stores: K / 16 must be a multiple of bpm (8), which nothing checks")
case(S + "cutlass_fp4 fused_dx 3 tiles of 128, E 4, N 128, K 96", fused_dx_case(3, 4, 128, 96))
case(S + "cutlass_fp4 fused_dx 2 tiles of 128, E 2, N 64, K 208", fused_dx_case(2, 2, 64, 208))
case(S + "cutlass_fp4 fused_dx 1 tile of 128, E 2, N 100, K 64", fused_dx_case(1, 2, 100, 64),
     library="the N loop loads A and W unmasked: N must be a multiple of BN (64), which nothing checks")

case("sonicmoe dequant_nvfp4 bf16 per-expert scales, 3 x 5 x 1040", sonic_dequant_case((3, 5), 1040, BF16))
case("sonicmoe dequant_nvfp4 fp32 no per-tensor scale, 7 x 96", sonic_dequant_case((7,), 96, F32, pts=False))
case("sonicmoe quantize_nvfp4 T 9, K 1040", sonic_quant_case(9, 1040))
case("sonicmoe quantize_nvfp4 T 3, K 16", sonic_quant_case(3, 16))
case("sonicmoe quantize_rows_fused_sfa T 300, K 128, 4 experts (one empty)", sonic_quant_case(300, 128, sfa=True,
                                                                                             experts=4))
case("sonicmoe quantize_rows_fused_sfa T 37, K 1088, 3 experts", sonic_quant_case(37, 1088, sfa=True, experts=3))
case("sonicmoe fake_quant_nvfp4 bf16 9 x 1040", sonic_fake_quant_case((9, 1040), BF16))
case("sonicmoe fake_quant_nvfp4 bf16 per-expert scales, in place, 3 x 4 x 96",
     sonic_fake_quant_case((3, 4, 96), BF16, pts=True, inplace=True))
case("sonicmoe fake_quant_nvfp4 fp32 per-expert scales, 2 x 5 x 32", sonic_fake_quant_case((2, 5, 32), F32, pts=True))
case("sonicmoe rowscale_inplace 5 x 2100", sonic_rowscale_case(5, 2100))
case("sonicmoe fp8_bwd pad_and_cast_fp8 T 150, E 3, K 256", sonic_pad_cast_case(150, 3, 256))
case("sonicmoe fp8_bwd pad_and_cast_fp8 T 5, E 4, K 128", sonic_pad_cast_case(5, 4, 128))

# --- report --------------------------------------------------------------------------------------------------------

sys.exit(report(results, ARGS.json, LIBRARY, "Axolotl"))
