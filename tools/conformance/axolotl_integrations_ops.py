"""Axolotl's Triton kernels under src/axolotl/integrations on Tegula (DRAFT docstring, rewritten at the end).

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/axolotl_integrations_ops.py <axolotl tree> \\
        [-k SUBSTRING ...] [--json out.json]
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
from comparisons import check, exact, fp8_codes, report  # noqa: E402
import standins  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def placeholder(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{name} is a placeholder in axolotl_integrations_ops.py")
    return fn


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
    _real_is_available = torch.cuda.is_available
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


def dsv4_mhc_case(B, S, hc, hidden, iters, dtype):
    """hyperconnection_forward: the fused RMSNorm + linear, the Sinkhorn mixer and the collapse, forward and
    backward (streams, fn, base, scale)."""

    def run():
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
case("dsv4 csa_attn fp32 B 2, H 3, S 45, T 13, D 64, window 16", dsv4_csa_case(2, 3, 45, 13, 64, 16, F32), FB)
case("dsv4 csa_attn bf16 B 1, H 4, S 70, T 30, D 32, window 128", dsv4_csa_case(1, 4, 70, 30, 32, 128, BF16), FB)
case("dsv4 csa_attn_topk fp32 B 2, H 20, S 33, T 40, K 12, D 64, window 8",
     dsv4_gather_case(2, 20, 33, 40, 12, 64, 8, F32), FB)
case("dsv4 csa_attn_topk bf16 B 1, H 16, S 40, T 25, K 20, D 32, window 16",
     dsv4_gather_case(1, 16, 40, 25, 20, 32, 16, BF16), FB)
case("dsv4 indexer_scores fp32 B 2, S 37, H 5, T 45, DH 64", dsv4_indexer_case(2, 37, 5, 45, 64, F32))
case("dsv4 indexer_scores bf16 B 1, S 130, H 3, T 70, DH 32", dsv4_indexer_case(1, 130, 3, 70, 32, BF16))
case("dsv4 hyperconnection fp32 B 2, S 37, hc 4, hidden 96, 20 iterations", dsv4_mhc_case(2, 37, 4, 96, 20, F32),
     FB)
case("dsv4 hyperconnection bf16 B 1, S 75, hc 4, hidden 200, 5 iterations", dsv4_mhc_case(1, 75, 4, 200, 5, BF16),
     FB)
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
case("glm_dsa sparse_attn bf16 B 1, H 2, S 70, D 128, DV 64, top-k 100", glm_sparse_case(1, 2, 70, 128, 64, 100,
                                                                                        BF16), FB)
case("glm_dsa mla_absorb fp32 B 1, H 20, S 37, top-k 24", glm_absorb_case(1, 20, 37, 37, 24, F32), FB)
case("glm_dsa mla_absorb bf16 B 2, H 16, S 29, top-k 40 (> S)", glm_absorb_case(2, 16, 29, 29, 40, BF16), FB)
case("glm_dsa mla_absorb fp32 q_offset 20, S 17 of 37 keys, shuffled top-k 24",
     glm_absorb_case(1, 5, 17, 37, 24, F32, q_offset=20, shuffle=True), FB)
case("glm_dsa mla_absorb fp32 packed B 2, H 7, S 41, top-k 16, shuffled",
     glm_absorb_case(2, 7, 41, 41, 16, F32, packed=True, shuffle=True), FB)

# --- report --------------------------------------------------------------------------------------------------------

sys.exit(report(results, ARGS.json, LIBRARY, "Axolotl"))
