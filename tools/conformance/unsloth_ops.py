"""Unsloth's Triton kernels (unslothai/unsloth, unsloth/kernels) on Tegula, through the conformance shim's
`triton` package: RMSNorm (and Gemma's), LayerNorm, SwiGLU, GeGLU (exact and tanh), RoPE (both kernels),
cross entropy (plain, logit softcapping, logit scaling, chunked vocab over 65536) and the FP8 block kernels,
forward and backward where Unsloth has one, against torch float64 references on random float32 (a few
bfloat16 / float8) data of sizes that are not powers of two. Unsloth is not part of Tegula; point this at a
checkout (a directory holding unsloth/, of which this reads kernels/, device_type.py and
bnb_availability.py; torch and `packaging` must be importable):

    TEGULA_CONFORMANCE_DEVICE=cpu|cuda .venv/bin/python tools/conformance/unsloth_ops.py <unsloth checkout>

`import unsloth` checks for a GPU and imports transformers, bitsandbytes and unsloth_zoo, and
unsloth/kernels/__init__.py imports fast_lora (bitsandbytes), so the kernel modules are loaded from their
files under bare `unsloth` and `unsloth.kernels` packages. Unsloth's own modules load unchanged, among them
device_type.py (under UNSLOTH_ALLOW_CPU=1, Unsloth's CPU test switch, when torch sees no GPU: the device
count is then 0, so torch_gpu_device is a null context and no torch.cuda call is reached), utils.py,
bnb_availability.py (bitsandbytes absent) and fp8.py. What they import at module level and a CPU machine
lacks is stood in for:

  - unsloth_zoo.utils.Version: unsloth_zoo's version parser (leading digits, then packaging's Version).
  - unsloth_zoo.log.logger: a logging.Logger.
  - unsloth_zoo.temporary_patches.common.torch_compile: an identity decorator (fp8.py's torch glue only).
  - unsloth_zoo.patching_utils.patch_layernorm, unsloth_zoo.loss_utils.patch_loss_functions and
    post_patch_loss_function: placeholders that raise (they patch transformers' modules; not checked).
  - transformers.models.llama.modeling_llama: LlamaRMSNorm (an nn.Module with weight and
    variance_epsilon; rms_layernorm.py subclasses it) and logger.
  - torch.compiler.disable (on fast_rms_layernorm and fast_rope_embedding): an identity; the real one imports
    torch._dynamo and Inductor, which import Triton's backends.

Not covered: fast_lora.py (bitsandbytes), flex_attention.py (torch's flex attention, no Triton kernel of
Unsloth's), moe/ (asserts CUDA tensors, sizes its grids by the GPU's multiprocessors, needs pandas).
Several backward passes write their gradients into their inputs (RMSNorm, LayerNorm, RoPE, cross entropy,
the GLU kernels), so every reference runs on copies made first. Prints one line per case (the largest
absolute difference from the reference over the case's outputs, each output's difference, or the first
line of the error) and a summary line.
"""

import importlib.util
import logging
import os
import pathlib
import re
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: unsloth_ops.py <unsloth checkout>")
UNSLOTH = pathlib.Path(sys.argv[1]).resolve()
for _file in ("kernels/utils.py", "device_type.py", "bnb_availability.py"):
    if not (UNSLOTH / "unsloth" / _file).is_file():
        sys.exit(f"{UNSLOTH} holds no unsloth/{_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402
from packaging.version import Version as _Version  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
# The device of every tensor the checks make: the shim runs the kernels on the backend of the same name.
torch.set_default_device(DEVICE)
if not torch.cuda.is_available():
    os.environ["UNSLOTH_ALLOW_CPU"] = "1"


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []  # a package, so that a missing submodule is an ImportError Unsloth's try blocks catch
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def placeholder(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{name} is a placeholder in unsloth_ops.py")
    return fn


def zoo_version(v):
    head = re.match(r"[0-9.]+", str(v)).group(0).rstrip(".")
    return _Version(head if head == str(v) else head + ".1")


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps


module("unsloth_zoo")
module("unsloth_zoo.utils", Version=zoo_version)
module("unsloth_zoo.log", logger=logging.getLogger("unsloth_zoo"))
module("unsloth_zoo.temporary_patches")
module("unsloth_zoo.temporary_patches.common", torch_compile=lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f))
module("unsloth_zoo.patching_utils", patch_layernorm=placeholder("patch_layernorm"))
module("unsloth_zoo.loss_utils", patch_loss_functions=placeholder("patch_loss_functions"),
       post_patch_loss_function=placeholder("post_patch_loss_function"))
for _name in ("transformers", "transformers.models", "transformers.models.llama"):
    module(_name)
module("transformers.models.llama.modeling_llama", LlamaRMSNorm=LlamaRMSNorm, logger=logging.getLogger("transformers"))
torch.compiler.disable = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)

for _name, _path in (("unsloth", UNSLOTH / "unsloth"), ("unsloth.kernels", UNSLOTH / "unsloth" / "kernels")):
    _pkg = types.ModuleType(_name)
    _pkg.__path__ = [str(_path)]
    sys.modules[_name] = _pkg


def load(name):
    """unsloth.kernels.<name> from its file; what it imports relatively comes from the bare packages above."""
    full = "unsloth.kernels." + name
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, UNSLOTH / "unsloth" / "kernels" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[full] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[full]
            raise
    return sys.modules[full]


import triton  # noqa: E402
from comparisons import check as comparisons_check, record as comparisons_record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

torch.manual_seed(0)
results = []


def record(name, comparisons):
    comparisons_record(results, name, comparisons)


def check(name, case, stages=("forward", "backward")):
    comparisons_check(results, name, case, stages)


def leaf(t):
    return t.detach().clone().double().requires_grad_()


# --- rms_layernorm.py ---------------------------------------------------------------------------------------

def rms_norm(gemma, dtype=torch.float32, tol=1e-5):
    def run():
        rl = load("rms_layernorm")
        x = torch.randn(3, 37, 300).to(dtype); w = (torch.rand(300) + 0.5).to(dtype); dy = torch.randn(3, 37, 300).to(dtype)
        norm = types.SimpleNamespace(weight=w, variance_epsilon=1e-6)
        xg = x.clone().requires_grad_()
        y = rl.fast_rms_layernorm(norm, xg, gemma=gemma)
        xr = leaf(x)
        ref = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * ((w.double() + 1) if gemma else w.double())
        yield {"y": (y, ref, tol)}
        y.backward(dy.clone())  # non-Gemma backward writes dX into dY
        ref.backward(dy.double())
        yield {"dx": (xg.grad, xr.grad, tol * 10)}
    return run

check("rms_layernorm", rms_norm(False))
check("rms_layernorm gemma", rms_norm(True))
check("rms_layernorm bf16", rms_norm(False, torch.bfloat16, 2e-2))


# --- layernorm.py -------------------------------------------------------------------------------------------

def layer_norm():
    ln = load("layernorm")
    x = torch.randn(5, 23, 257) * 2 + 0.5; w = torch.randn(257); b = torch.randn(257); dy = torch.randn(5, 23, 257)
    norm = types.SimpleNamespace(elementwise_affine=True, weight=w, bias=b, eps=1e-5)
    xg = x.clone().requires_grad_()
    y = ln.fast_layernorm(norm, xg)
    xr = leaf(x)
    ref = torch.nn.functional.layer_norm(xr, (257,), w.double(), b.double(), 1e-5)
    yield {"y": (y, ref, 1e-5)}
    y.backward(dy.clone())  # the backward writes dX into dY
    ref.backward(dy.double())
    yield {"dx": (xg.grad, xr.grad, 1e-4)}

check("layernorm", layer_norm)


# --- swiglu.py / geglu.py ----------------------------------------------------------------------------------

def glu(forward, backward, act, dtype=torch.float32, tol=1e-5):
    """forward(e, g) -> h on (batch, seq, hd); backward(dh, e, g) -> (h, dg, de), in place, on (batch * seq, hd)."""
    def run():
        B, T, H = 2, 37, 333  # 24642 elements: a partial last block of 1024
        e = torch.randn(B, T, H).to(dtype); g = torch.randn(B, T, H).to(dtype); dh = torch.randn(B, T, H).to(dtype)
        er, gr = leaf(e), leaf(g)
        ref = act(er) * gr
        yield {"h": (forward(e, g), ref, tol)}
        h2, dg, de = backward(*(t.clone().view(B * T, H) for t in (dh, e, g)))
        ref.backward(dh.double())
        yield {"h": (h2.view(B, T, H), ref, tol), "dg": (dg.view(B, T, H), gr.grad, tol),
               "de": (de.view(B, T, H), er.grad, tol)}
    return run

def _swiglu(): return load("swiglu")
def _geglu(): return load("geglu")
silu = torch.nn.functional.silu
check("swiglu", glu(lambda e, g: _swiglu().swiglu_fg_kernel(e, g), lambda *a: _swiglu().swiglu_DWf_DW_dfg_kernel(*a), silu))
check("swiglu bf16", glu(lambda e, g: _swiglu().swiglu_fg_kernel(e, g), lambda *a: _swiglu().swiglu_DWf_DW_dfg_kernel(*a),
                         silu, torch.bfloat16, 2e-2))
check("geglu exact", glu(lambda e, g: _geglu().geglu_exact_forward_kernel(e, g),
                         lambda *a: _geglu().geglu_exact_backward_kernel(*a), torch.nn.functional.gelu))
check("geglu approx", glu(lambda e, g: _geglu().geglu_approx_forward_kernel(e, g),
                          lambda *a: _geglu().geglu_approx_backward_kernel(*a),
                          lambda x: torch.nn.functional.gelu(x, approximate="tanh")))


# --- rope_embedding.py ---------------------------------------------------------------------------------------

def rope(kind):
    """kind: "rows" (fast_rope_embedding, the grouped-heads kernel), "qk" (Fast_RoPE_Embedding_QK, positions
    from the row), "qk indices" (fast_rope_embedding with position indices, the QK kernel)."""
    def run():
        re_ = load("rope_embedding")
        B, HQ, HK, T, D, L = 2, 6, 2, 37, 80, 50  # 6 heads: a partial group of 4; D / 2 = 40 lanes of 64
        inv = 1.0 / (10000 ** (torch.arange(0, D, 2).double() / D))
        emb = torch.outer(torch.arange(L).double(), inv); emb = torch.cat([emb, emb], -1)
        cos, sin = emb.cos().float(), emb.sin().float()
        q, k = torch.randn(B, HQ, T, D), torch.randn(B, HK, T, D)
        dq, dk = torch.randn(B, HQ, T, D), torch.randn(B, HK, T, D)
        pos = torch.randint(0, L, (B, T)) if kind == "qk indices" else torch.arange(T).expand(B, T)
        qg, kg = q.clone().requires_grad_(), k.clone().requires_grad_()
        if kind == "qk":
            qo, ko = re_.Fast_RoPE_Embedding_QK.apply(qg * 1, kg * 1, cos[None, None, :T], sin[None, None, :T], None)
        elif kind == "rows":
            qo, ko = re_.fast_rope_embedding(qg * 1, kg * 1, cos[None, None, :T], sin[None, None, :T])
        else:
            qo, ko = re_.fast_rope_embedding(qg * 1, kg * 1, cos[None, None], sin[None, None], pos)
        c, s = cos.double()[pos][:, None], sin.double()[pos][:, None]
        def rot(x): return torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
        qr, kr = leaf(q), leaf(k)
        qref, kref = qr * c + rot(qr) * s, kr * c + rot(kr) * s
        yield {"q": (qo, qref, 1e-5), "k": (ko, kref, 1e-5)}
        torch.autograd.backward((qo, ko), (dq.clone(), dk.clone()))
        torch.autograd.backward((qref, kref), (dq.double(), dk.double()))
        yield {"dq": (qg.grad, qr.grad, 1e-5), "dk": (kg.grad, kr.grad, 1e-5)}
    return run

check("rope_embedding", rope("rows"))
check("rope_embedding qk", rope("qk"))
check("rope_embedding qk indices", rope("qk indices"))


# --- cross_entropy_loss.py -----------------------------------------------------------------------------------

def cross_entropy(vocab, softcap=0, scale=0, rows=(3, 7)):
    def run():
        ce = load("cross_entropy_loss")
        x = torch.randn(*rows, vocab) * 4; t = torch.randint(0, vocab, rows); t[0, 1] = t[-1, -1] = -100
        xg = x.clone().requires_grad_()
        loss = ce.fast_cross_entropy_loss(xg, t, logit_softcapping=softcap, logit_scaling=scale)
        xr = leaf(x)
        z = xr * scale if scale else xr
        z = softcap * torch.tanh(z / softcap) if softcap else z
        ref = torch.nn.functional.cross_entropy(z.view(-1, vocab), t.view(-1), ignore_index=-100, reduction="sum")
        ref = ref / (t != -100).sum()
        yield {"loss": (loss, ref, 1e-5)}
        loss.backward()  # writes dlogits into the logits
        ref.backward()
        yield {"dlogits": (xg.grad, xr.grad, 1e-5)}
    return run

check("cross_entropy", cross_entropy(5003))
check("cross_entropy softcap", cross_entropy(5003, softcap=30.0))
check("cross_entropy scaling", cross_entropy(5003, scale=0.125))
check("cross_entropy chunked", cross_entropy(70001, rows=(2, 3)))
check("cross_entropy chunked softcap scaling", cross_entropy(70001, softcap=30.0, scale=0.5, rows=(2, 3)))


# --- fp8.py ---------------------------------------------------------------------------------------------------

def blockwise(s, shape, bm, bn):
    return s.repeat_interleave(bm, 0)[:shape[0]].repeat_interleave(bn, 1)[:, :shape[1]]

def fp8_weight_dequant():
    fp8 = load("fp8")
    M, N = 200, 300  # partial 128-blocks at both edges
    x = (torch.randn(M, N) * 50).to(torch.float8_e4m3fn); s = torch.rand(2, 3) + 0.1
    y = fp8.weight_dequant(x, s, dtype=torch.float32)
    yield {"y": (y, x.double() * blockwise(s.double(), (M, N), 128, 128), 1e-6)}

def fp8_act_quant():
    fp8 = load("fp8")
    x = torch.randn(5, 3 * 128) * 10; x[2, 128:256] = 0  # an all-zero block keeps scale 1
    y, s = fp8.act_quant(x, 128)
    s_ref = x.double().view(5, 3, 128).abs().amax(-1) / 448.0; s_ref[2, 1] = 1.0
    y_ref = (x.double().view(5, 3, 128) / s_ref[..., None]).view(5, 384)
    # y against x / s before rounding to e4m3: within half an e4m3 step (2^-4 relative)
    yield {"s": (s, s_ref, 1e-6), "y rel": ((y.double() - y_ref) / y_ref.abs().clamp_min(2.0 ** -6), torch.zeros(5, 384), 2.0 ** -4)}

def fp8_block_matmul():
    fp8 = load("fp8")
    M, N, K = 37, 200, 320  # M pads to a 64 block, N and K end in partial 128-blocks
    a = (torch.randn(M, K) * 20).to(torch.float8_e4m3fn); b = (torch.randn(N, K) * 20).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 3) / 100 + 1e-3; sb = torch.rand(2, 3) / 100 + 1e-3
    c = fp8.w8a8_block_fp8_matmul_triton(a, b, sa, sb, [128, 128], output_dtype=torch.float32)
    ref = (a.double() * blockwise(sa.double(), (M, K), 1, 128)) @ (b.double() * blockwise(sb.double(), (N, K), 128, 128)).T
    yield {"c": (c, ref, 1e-5)}

check("fp8 weight_dequant_block", fp8_weight_dequant, ("",))
check("fp8 act_quant", fp8_act_quant, ("",))
check("fp8 w8a8_block_fp8_matmul", fp8_block_matmul, ("",))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:47s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} Unsloth cases match the torch references")
