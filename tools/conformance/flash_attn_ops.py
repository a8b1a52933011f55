"""flash-attention's Triton kernels (Dao-AILab/flash-attention) on Tegula, through the conformance shim's `triton`
package, against torch float64 references written here from the math:

  - flash_attn/ops/triton/layer_norm.py (`layer_norm_fn`, `rms_norm_fn`, `layer_norm_linear_fn`):
    `_layer_norm_fwd_1pass_kernel` and `_layer_norm_bwd_kernel`, LayerNorm and RMSNorm, with and without bias,
    residual (prenorm, residual_in_fp32), rowscale, zero-centered weight, the parallel x1 / weight1 / bias1
    branch, dropout (checked through the mask the op returns; the backward recomputes it from the seeds) and
    the backward's recomputed output (RECOMPUTE_OUTPUT, through layer_norm_linear_fn), forward and backward;
  - flash_attn/ops/triton/rotary.py (`apply_rotary`): interleaved and not, partial rotary dims, seqlen_offsets
    int and tensor, varlen through cu_seqlens, conjugate, in place. Its kernel makes its pointer arguments
    blocks of pointers after `if pid_m * BLOCK_M >= seqlen: return`, which Tegula refused until 2026-12-05;
  - flash_attn/ops/triton/cross_entropy.py (`cross_entropy_loss`): forward and backward, label smoothing,
    ignore_index, logit_scale, lse_square_scale (z-loss), a precomputed LSE, in-place backward, a vocabulary
    past the forward's 16384 block (the process_group path is not run);
  - flash_attn/ops/triton/k_activations.py: its ten @triton.jit activations and gradients and its tanh / cosh,
    applied elementwise by a small kernel of this file's (the module has no kernel of its own). gelu and
    gelu_grad call `tl.libdevice.erf`, which Triton dropped in 2.1 (Triton 3 fails on it); Tegula takes it;
  - flash_attn/ops/triton/linear.py (`triton_linear_act`, `triton_dgrad_act`): the fused matmul + bias +
    activation forward (saving the activation input) and the matmul + activation-gradient backward;
  - flash_attn/flash_attn_triton.py (`flash_attn_func`): the old Triton FlashAttention, forward and backward,
    causal and not, bias none / vector / matrix, head dims 64 and 40, fp16 and bf16 (it refuses float32), the
    backward's autotuner free and pinned to either of its configs (SEQUENCE_PARALLEL, with atomic adds, or
    not). It is written against Triton 2.0's `tl.dot(a, b, trans_a=..., trans_b=...)`, which Triton dropped
    in 2.1 (and Tegula never had): the first case runs unchanged, and every case runs, marked "[trans
    stand-in]", from a second copy of the module whose `tl` is triton.language with `dot` taking trans_a /
    trans_b (a @triton.jit helper of this file's: tl.trans, then tl.dot), to check the kernels past that API.

Not covered: mlp.py (its second matmul is fused_dense_lib, a CUDA extension; its Triton is linear.py's);
flash_attn_triton_og.py and the AMD / CuTe kernels. Inputs are small, with sizes that are not powers of two.
flash-attention is not part of Tegula; point this at a directory holding its `flash_attn/` (a checkout, or a
`git archive` of flash_attn/ops/triton, flash_attn/utils and flash_attn/flash_attn_triton.py):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/flash_attn_ops.py <flash-attention source>

`import flash_attn` loads the CUDA extension, so the files are loaded on their own under bare `flash_attn...`
packages (flash_attn/utils/torch.py unchanged). What they need at module level or in their host code that a
CPU machine, or the stand-in `triton` package, lacks is stood in for:

  - flash_attn.utils.library.triton_op (layer_norm.py's two impl functions): a decorator that runs the function
    under torch's set_wrap_triton_enabled(False), as the op's backend function does, without registering it
    as a torch.library custom op: custom ops dispatch through torch._dynamo, which imports Triton's compiler
    backends (triton.backends), absent from the stand-in package;
  - torch.library.wrap_triton (rotary.py calls it outside a triton_op): each call runs under
    set_wrap_triton_enabled(False), torch's own switch, so it returns the kernel itself; the wrapper it returns
    otherwise launches through Inductor, which imports triton.backends too;
  - without a GPU: torch.cuda.device (entered around every launch, with the CPU device's index None) is a null
    context, torch.cuda.current_device gives 0 and torch.cuda.get_device_properties gives warp_size 32 (the
    layer norms' autotune configs: num_warps 1 to 32) and multi_processor_count 2 (the layer-norm backward's
    grid of 16 programs, so that one program gets no rows);
  - triton.ops.matmul_perf_model (linear.py imports it; Triton removed triton.ops in 3.0): early_config_prune
    keeps only linear.py's config BLOCK_M = BLOCK_N = BLOCK_K = 32, num_stages 2 (one compile a kernel on the
    CPU), and estimate_matmul_time gives 0. linear.py's kernel_fwd stores C unmasked (the library's choice),
    so M and N here are multiples of 32;
  - flash_attn_triton.py asserts q.is_cuda in its host code: it is compiled as under `python -O` (its asserts
    dropped; the kernels' source is unchanged).

The backward's two FlashAttention configs are pinned by keeping one in its autotuner's `configs` (and emptying
its `cache`), attributes Triton's autotuner has too; the case checks that `best_config` is the one kept.

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5 (1e-4 for the
norms' gradients), bfloat16 2e-2, float16 5e-3; FlashAttention fp16 1e-2 forward and 2e-2 gradients, bf16 3e-2
and 6e-2 (its P is rounded to the input dtype before the P @ V and dS @ K products). Tegula's recompile warnings
are off unless TEGULA_RECOMPILE_WARNING is set (the norms, rotary and the activation kernel compile one
specialization per option set, by design). Prints one line per case (the largest absolute difference from the
reference over the case's outputs, each output's difference, or the first line of the error) and a summary line.
"""

import contextlib
import importlib.util
import math
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: flash_attn_ops.py <flash-attention source>")
FA = pathlib.Path(sys.argv[1]).resolve()
for _file in ("ops/triton/layer_norm.py", "ops/triton/rotary.py", "ops/triton/cross_entropy.py",
              "ops/triton/k_activations.py", "ops/triton/linear.py", "flash_attn_triton.py", "utils/torch.py"):
    if not (FA / "flash_attn" / _file).is_file():
        sys.exit(f"{FA} holds no flash_attn/{_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._library.triton import set_wrap_triton_enabled  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)
# The norms, rotary and activation kernels compile one specialization per option set by design.
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from comparisons import check as comparisons_check, record as comparisons_record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"


def module(name, path=None, **attrs):
    m = types.ModuleType(name)
    m.__path__ = [str(path)] if path else []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def triton_op(name, fn=None, /, *, mutates_args, schema=None, allow_decomposition=True):
    def dec(f):
        def backend_fn(*args, **kwargs):
            with set_wrap_triton_enabled(False):
                return f(*args, **kwargs)
        return backend_fn
    return dec if fn is None else dec(fn)


def early_config_prune(configs, named_args, **kwargs):
    return [c for c in configs if (c.kwargs.get("BLOCK_M"), c.kwargs.get("BLOCK_N"), c.kwargs.get("BLOCK_K"),
                                   c.num_stages) == (32, 32, 32, 2)]


for _name, _path in (("flash_attn", "flash_attn"), ("flash_attn.ops", "flash_attn/ops"),
                     ("flash_attn.ops.triton", "flash_attn/ops/triton"), ("flash_attn.utils", "flash_attn/utils")):
    module(_name, FA / _path)
module("flash_attn.utils.library", triton_op=triton_op)
module("triton.ops")
module("triton.ops.matmul_perf_model", early_config_prune=early_config_prune,
       estimate_matmul_time=lambda *a, **k: 0.0)
if not torch.cuda.is_available():
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda index: contextlib.nullcontext() if index is None else _cuda_device(index)
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(warp_size=32, multi_processor_count=2)


def load(name):
    """flash_attn.<name> from its file (its relative imports come from the bare packages above)."""
    return importlib.import_module("flash_attn." + name)


def load_optimized(name, path, namespace=None):
    """A module compiled as under `python -O` (asserts dropped); namespace: names set before it runs."""
    if name not in sys.modules:
        mod = types.ModuleType(name)
        mod.__file__ = str(path)
        mod.__dict__.update(namespace or {})
        code = compile(path.read_text(), str(path), "exec", optimize=1)
        sys.modules[name] = mod
        try:
            exec(code, mod.__dict__)
            mod.__dict__.update(namespace or {})  # the module's own `import triton.language as tl` rebinds it
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


torch.manual_seed(0)
results = []


def record(name, comparisons):
    comparisons_record(results, name, comparisons)


def check(name, case, stages=("forward", "backward")):
    comparisons_check(results, name, case, stages)


def leaf(t):
    return t.detach().clone().double().requires_grad_()


# --- ops/triton/layer_norm.py --------------------------------------------------------------------------------

def norm_ref(x, w, b, rms, eps, residual=None, x1=None, w1=None, b1=None, rowscale=None, p=0.0, mask=None,
             mask1=None, zero_centered=False):
    """float64: h = dropout(x * rowscale) + dropout(x1) + residual; y = norm(h) * w + b (and y1 with w1, b1)."""
    h = x * rowscale[:, None] if rowscale is not None else x
    if p > 0:
        h = h * mask / (1 - p)
    if x1 is not None:
        h = h + (x1 * mask1 / (1 - p) if p > 0 else x1)
    if residual is not None:
        h = h + residual
    if rms:
        xhat = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)
    else:
        mu = h.mean(-1, keepdim=True)
        xhat = (h - mu) * torch.rsqrt((h - mu).square().mean(-1, keepdim=True) + eps)
    def affine(wt, bt):
        wt = wt + 1 if zero_centered else wt
        return xhat * wt + bt if bt is not None else xhat * wt
    return affine(w, b), (affine(w1, b1) if w1 is not None else None), h


def norm(rms=False, bias=True, residual=False, prenorm=False, residual_in_fp32=False, rowscale=False,
         parallel=False, dropout=0.0, zero_centered=False, dtype=torch.float32, tol=1e-5):
    """layer_norm_fn / rms_norm_fn on x [4, 25, 300] (100 rows of 300); parallel: x1, weight1, bias1."""
    def run():
        ln = load("ops.triton.layer_norm")
        shape, N, eps = (4, 25, 300), 300, 1e-5
        x = torch.randn(shape).to(dtype)
        w = (torch.rand(N) + 0.5).to(dtype) if not zero_centered else (torch.rand(N) - 0.5).to(dtype)
        b = torch.randn(N).to(dtype) if bias else None
        res = torch.randn(shape).to(dtype) if residual else None
        rs = (torch.rand(shape[:-1]) + 0.5).to(dtype) if rowscale else None
        x1 = torch.randn(shape).to(dtype) if parallel else None
        w1 = (torch.rand(N) + 0.5).to(dtype) if parallel else None
        b1 = torch.randn(N).to(dtype) if parallel and bias else None
        inputs = {"x": x, "weight": w, "bias": b, "residual": res, "x1": x1, "weight1": w1, "bias1": b1}
        got = {k: v.clone().requires_grad_() for k, v in inputs.items() if v is not None}
        fn = ln.rms_norm_fn if rms else ln.layer_norm_fn
        outs = fn(got["x"], got["weight"], got.get("bias"), residual=got.get("residual"), x1=got.get("x1"),
                  weight1=got.get("weight1"), bias1=got.get("bias1"), eps=eps, dropout_p=dropout, rowscale=rs,
                  prenorm=prenorm, residual_in_fp32=residual_in_fp32, zero_centered_weight=zero_centered,
                  return_dropout_mask=dropout > 0)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        y = outs.pop(0)
        y1 = outs.pop(0) if parallel else None
        res_out = outs.pop(0) if prenorm else None
        mask, mask1 = (outs.pop(0), outs.pop(0)) if dropout > 0 else (None, None)
        ref = {k: leaf(v) for k, v in inputs.items() if v is not None}
        y_ref, y1_ref, h_ref = norm_ref(
            ref["x"].view(-1, N), ref["weight"], ref.get("bias"), rms, eps,
            ref["residual"].view(-1, N) if residual else None, ref["x1"].view(-1, N) if parallel else None,
            ref.get("weight1"), ref.get("bias1"), rs.double().view(-1) if rowscale else None, dropout,
            mask.view(-1, N).double() if mask is not None else None,
            mask1.view(-1, N).double() if mask1 is not None else None, zero_centered)
        fwd = {"y": (y, y_ref.view(shape), tol)}
        if parallel:
            fwd["y1"] = (y1, y1_ref.view(shape), tol)
        if prenorm:
            fwd["residual_out"] = (res_out, h_ref.view(shape), tol)
            if residual_in_fp32 and res_out.dtype != torch.float32:
                raise AssertionError(f"residual_in_fp32 gave a {res_out.dtype} residual_out")
        if dropout > 0:  # the mask's keep rate; the mask itself is checked through y
            fwd["keep rate"] = (mask.double().mean().reshape(1), torch.tensor([1 - dropout]).double(), 0.05)
        yield fwd
        dy = torch.randn(shape).to(dtype)
        grads_out, refs_out, grads_in = [y], [y_ref], [dy]
        if parallel:
            dy1 = torch.randn(shape).to(dtype)
            grads_out.append(y1); refs_out.append(y1_ref); grads_in.append(dy1)
        if prenorm:
            dres = torch.randn(shape).to(res_out.dtype)
            grads_out.append(res_out); refs_out.append(h_ref); grads_in.append(dres)
        torch.autograd.backward(grads_out, grads_in)
        torch.autograd.backward([r.view(shape) for r in refs_out], [g.double() for g in grads_in])
        yield {f"d{k}": (got[k].grad, ref[k].grad, tol * 10) for k in got}
    return run

check("layer_norm", norm())
check("layer_norm no bias", norm(bias=False))
check("rms_norm", norm(rms=True, bias=False))
check("rms_norm bias zero-centered weight", norm(rms=True, zero_centered=True))
check("layer_norm residual prenorm", norm(residual=True, prenorm=True))
check("rms_norm residual", norm(rms=True, bias=False, residual=True))
check("layer_norm rowscale residual prenorm", norm(rowscale=True, residual=True, prenorm=True))
check("layer_norm parallel x1 weight1 bias1 residual prenorm", norm(residual=True, prenorm=True, parallel=True))
check("rms_norm parallel x1 weight1", norm(rms=True, bias=False, parallel=True))
check("layer_norm dropout 0.37 (returned mask) rowscale prenorm", norm(dropout=0.37, rowscale=True, prenorm=True))
check("rms_norm dropout 0.2 parallel residual", norm(rms=True, dropout=0.2, parallel=True, residual=True))
check("layer_norm bf16", norm(dtype=torch.bfloat16, tol=2e-2))
check("rms_norm bf16 residual_in_fp32 prenorm", norm(rms=True, bias=False, prenorm=True, residual_in_fp32=True,
                                                     dtype=torch.bfloat16, tol=2e-2))


def norm_linear(rms):
    """layer_norm_linear_fn: the norm, then F.linear; its backward recomputes the norm's output in the kernel."""
    def run():
        ln = load("ops.triton.layer_norm")
        M, N, O, eps = 37, 300, 72, 1e-5
        x, w, b = torch.randn(M, N), torch.rand(N) + 0.5, torch.randn(N)
        lw, lb, res = torch.randn(O, N) / N ** 0.5, torch.randn(O), torch.randn(M, N)
        got = [t.clone().requires_grad_() for t in (x, w, b, lw, lb, res)]
        out, res_out = ln.layer_norm_linear_fn(got[0], got[1], got[2], got[3], got[4], residual=got[5], eps=eps,
                                               prenorm=True, is_rms_norm=rms)
        ref = [leaf(t) for t in (x, w, b, lw, lb, res)]
        y_ref, _, h_ref = norm_ref(ref[0], ref[1], ref[2], rms, eps, residual=ref[5])
        out_ref = F.linear(y_ref, ref[3], ref[4])
        yield {"out": (out, out_ref, 1e-5), "residual_out": (res_out, h_ref, 1e-5)}
        dout, dres = torch.randn(M, O), torch.randn(M, N)
        torch.autograd.backward([out, res_out], [dout, dres])
        torch.autograd.backward([out_ref, h_ref], [dout.double(), dres.double()])
        names = ("dx", "dnorm_weight", "dnorm_bias", "dlinear_weight", "dlinear_bias", "dresidual")
        yield {n: (g.grad, r.grad, 1e-4) for n, g, r in zip(names, got, ref)}
    return run

check("layer_norm_linear_fn residual prenorm", norm_linear(False))
check("layer_norm_linear_fn rms", norm_linear(True))


# --- ops/triton/rotary.py ------------------------------------------------------------------------------------

def rotary_ref(x, cos, sin, positions, interleaved, conjugate):
    """x [..., T, H, D] float64; positions [..., T] index cos / sin [seqlen_ro, r / 2]."""
    r = cos.shape[1] * 2
    c, s = cos.double()[positions][..., None, :], sin.double()[positions][..., None, :]
    s = -s if conjugate else s
    out = x.clone()
    x0, x1 = (x[..., 0:r:2], x[..., 1:r:2]) if interleaved else (x[..., :r // 2], x[..., r // 2:r])
    o0, o1 = x0 * c - x1 * s, x0 * s + x1 * c
    if interleaved:
        out[..., 0:r:2], out[..., 1:r:2] = o0, o1
    else:
        out[..., :r // 2], out[..., r // 2:r] = o0, o1
    return out


def rotary(interleaved=False, offsets=0, varlen=False, conjugate=False, inplace=False, headdim=80, rotary_dim=48,
           dtype=torch.float32, tol=1e-5):
    """offsets: an int, or "tensor" (one per sequence); varlen: sequences of 13, 37, 1 and 20 packed."""
    def run():
        ro = load("ops.triton.rotary")
        H, seqlen_ro = 5, 64
        lens = [13, 37, 1, 20] if varlen else [37, 37, 37]
        B, T = len(lens), max(lens)
        ang = torch.rand(seqlen_ro, rotary_dim // 2) * 6.3
        cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
        off = torch.tensor([0, 5, 27, 9][:B], dtype=torch.int32) if offsets == "tensor" else offsets
        offs = off.long() if offsets == "tensor" else torch.full((B,), offsets)
        if varlen:
            x = torch.randn(sum(lens), H, headdim).to(dtype)
            cu = torch.tensor([0] + lens).cumsum(0).to(torch.int32)
            pos = torch.cat([torch.arange(L) + offs[i] for i, L in enumerate(lens)])
        else:
            x = torch.randn(B, T, H, headdim).to(dtype)
            cu = None
            pos = torch.arange(T)[None, :] + offs[:, None]
        x_in = x.clone()
        with set_wrap_triton_enabled(False):
            out = ro.apply_rotary(x_in, cos, sin, seqlen_offsets=off, cu_seqlens=cu, max_seqlen=T if varlen else None,
                                  interleaved=interleaved, inplace=inplace, conjugate=conjugate)
        if inplace and out.data_ptr() != x_in.data_ptr():
            raise AssertionError("inplace=True returned another tensor")
        yield {"out": (out, rotary_ref(x.double(), cos, sin, pos, interleaved, conjugate), tol)}
    return run

ROTARY_CASES = [
    ("apply_rotary", {}),
    ("apply_rotary interleaved", {"interleaved": True}),
    ("apply_rotary seqlen_offsets int 11", {"offsets": 11}),
    ("apply_rotary seqlen_offsets tensor", {"offsets": "tensor"}),
    ("apply_rotary varlen cu_seqlens", {"varlen": True}),
    ("apply_rotary varlen offsets tensor interleaved", {"varlen": True, "offsets": "tensor", "interleaved": True}),
    ("apply_rotary conjugate", {"conjugate": True, "offsets": 3}),
    ("apply_rotary inplace", {"inplace": True}),
    ("apply_rotary full dim 64 interleaved inplace", {"interleaved": True, "inplace": True, "headdim": 64,
                                                      "rotary_dim": 64}),
    ("apply_rotary bf16", {"dtype": torch.bfloat16, "tol": 2e-2}),
]
for _name, _kw in ROTARY_CASES:
    check(_name, rotary(**_kw), ("",))


# --- ops/triton/cross_entropy.py -----------------------------------------------------------------------------

def cross_entropy(vocab=5003, smoothing=0.0, scale=1.0, z=0.0, ignore_index=-100, precomputed=False,
                  inplace=False, dtype=torch.float32, tol=1e-5):
    def run():
        ce = load("ops.triton.cross_entropy")
        rows = 37
        x = (torch.randn(rows, vocab) * 3).to(dtype)
        labels = torch.randint(0, vocab, (rows,))
        labels[[2, 11, 30]] = ignore_index
        g = torch.randn(rows)
        xg = x.clone().requires_grad_()
        lse_in = torch.logsumexp(x.float(), -1) if precomputed else None
        loss, z_loss = ce.cross_entropy_loss(xg, labels, precomputed_lse=lse_in, label_smoothing=smoothing,
                                             logit_scale=scale, lse_square_scale=z, ignore_index=ignore_index,
                                             inplace_backward=inplace)
        xr = leaf(x)
        zz = xr * scale
        lse = torch.logsumexp(zz, -1)
        keep = labels != ignore_index
        picked = zz.gather(1, labels.clamp(0, vocab - 1)[:, None])[:, 0]
        ce_ref = lse - smoothing * zz.sum(-1) / vocab - (1 - smoothing) * picked
        z_ref = z * lse * lse
        loss_ref = torch.where(keep, ce_ref + z_ref, 0.0)
        z_loss_ref = torch.where(keep, z_ref, 0.0)
        yield {"loss": (loss, loss_ref, tol), "z_loss": (z_loss, z_loss_ref, tol)}
        loss.backward(g)
        loss_ref.backward(g.double())
        yield {"dlogits": (xg.grad, xr.grad, tol)}
    return run

check("cross_entropy", cross_entropy())
check("cross_entropy label_smoothing 0.1", cross_entropy(smoothing=0.1))
check("cross_entropy logit_scale 0.7", cross_entropy(scale=0.7))
check("cross_entropy lse_square_scale 1e-3", cross_entropy(z=1e-3))
check("cross_entropy ignore_index 7 smoothing scale z", cross_entropy(smoothing=0.2, scale=1.3, z=1e-3,
                                                                      ignore_index=7))
check("cross_entropy precomputed lse", cross_entropy(precomputed=True))
check("cross_entropy inplace_backward", cross_entropy(inplace=True))
check("cross_entropy vocab 20011 (2 fwd blocks) smoothing", cross_entropy(vocab=20011, smoothing=0.1))
check("cross_entropy bf16", cross_entropy(dtype=torch.bfloat16, tol=2e-2))


# --- ops/triton/k_activations.py -----------------------------------------------------------------------------

ka = None  # k_activations, once loaded: the kernel below calls its functions


@triton.jit
def _activation_kernel(X, Y, N, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    if ACT == "relu":
        y = ka.relu(x)
    elif ACT == "relu_grad":
        y = ka.relu_grad(x)
    elif ACT == "squared_relu":
        y = ka.squared_relu(x)
    elif ACT == "squared_relu_grad":
        y = ka.squared_relu_grad(x)
    elif ACT == "leaky_relu":
        y = ka.leaky_relu(x)
    elif ACT == "leaky_relu_grad":
        y = ka.leaky_relu_grad(x)
    elif ACT == "gelu":
        y = ka.gelu(x)
    elif ACT == "gelu_grad":
        y = ka.gelu_grad(x)
    elif ACT == "gelu_approx":
        y = ka.gelu_approx(x)
    elif ACT == "gelu_approx_grad":
        y = ka.gelu_approx_grad(x)
    elif ACT == "tanh":
        y = ka.tanh(x)
    else:
        y = ka.cosh(x)
    tl.store(Y + offs, y, mask=offs < N)


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def derivative(f, x):
    x = x.detach().clone().requires_grad_()
    f(x).sum().backward()
    return x.grad


ACTIVATIONS = {
    "relu": torch.relu,
    "relu_grad": lambda x: (x >= 0).double(),
    "squared_relu": lambda x: torch.relu(x) ** 2,
    "squared_relu_grad": lambda x: torch.where(x >= 0, 2 * x, 0.0),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.01),
    "leaky_relu_grad": lambda x: torch.where(x >= 0, 1.0, 0.01).double(),
    "gelu": F.gelu,
    "gelu_grad": lambda x: derivative(F.gelu, x),
    "gelu_approx": gelu_tanh,
    "gelu_approx_grad": lambda x: derivative(gelu_tanh, x),
    "tanh": torch.tanh,
    "cosh": torch.cosh,
}


def activation(name, dtype=torch.float32, tol=1e-5):
    def run():
        global ka
        ka = load("ops.triton.k_activations")
        x = (torch.randn(1000) * 3).to(dtype)
        x[:5] = 0.0
        y = torch.empty_like(x)
        _activation_kernel[(triton.cdiv(1000, 256),)](x, y, 1000, ACT=name, BLOCK=256)
        yield {name: (y, ACTIVATIONS[name](x.double()), tol)}
    return run

for _act in ACTIVATIONS:
    check(f"k_activations {_act}", activation(_act), ("",))
check("k_activations gelu_approx bf16", activation("gelu_approx", torch.bfloat16, 2e-2), ("",))
check("k_activations squared_relu fp16", activation("squared_relu", torch.float16, 5e-3), ("",))


# --- ops/triton/linear.py ------------------------------------------------------------------------------------

def linear_act(act, K=200, dtype=torch.float32, tol=1e-5):
    """triton_linear_act: act(x @ w.T + b) on x [96, K], w [160, K] (saving the activation input);
    triton_dgrad_act: (g @ w2) * act'(act_input) with g [96, 200], w2 [200, 160]."""
    def run():
        lin = load("ops.triton.linear")
        M, N = 96, 160
        x, w, b = torch.randn(M, K).to(dtype), (torch.randn(N, K) / K ** 0.5).to(dtype), torch.randn(N).to(dtype)
        out, act_in = lin.triton_linear_act(x, w, b, activation=act, save_act_input=True)
        pre = x.double() @ w.double().T + b.double()
        fn = {"id": lambda t: t, "gelu": F.gelu, "gelu_approx": gelu_tanh, "squared_relu": lambda t: torch.relu(t) ** 2}
        yield {"act_input": (act_in, pre, tol), "out": (out, fn[act](pre), tol)}
        g, w2 = torch.randn(M, 200).to(dtype), (torch.randn(200, N) / 200 ** 0.5).to(dtype)
        dgrad = lin.triton_dgrad_act(g, w2, activation=act, act_input=act_in)
        pre2 = act_in.double()
        dact = torch.ones_like(pre2) if act == "id" else \
            (torch.where(pre2 >= 0, 2 * pre2, 0.0) if act == "squared_relu" else derivative(fn[act], pre2))
        yield {"dgrad": (dgrad, (g.double() @ w2.double()) * dact, tol)}
    return run

check("triton_linear_act / dgrad id", linear_act("id"))
check("triton_linear_act / dgrad squared_relu", linear_act("squared_relu"))
check("triton_linear_act / dgrad gelu_approx K=192 (EVEN_K)", linear_act("gelu_approx", K=192))
check("triton_linear_act / dgrad gelu", linear_act("gelu"))
check("triton_linear_act / dgrad squared_relu fp16", linear_act("squared_relu", dtype=torch.float16, tol=5e-3))


# --- flash_attn_triton.py ------------------------------------------------------------------------------------

@triton.jit
def _dot_v2(a, b, trans_a: tl.constexpr = False, trans_b: tl.constexpr = False):
    """Triton 2.0's tl.dot(a, b, trans_a, trans_b)."""
    if trans_a:
        a = tl.trans(a)
    if trans_b:
        b = tl.trans(b)
    return tl.dot(a, b)


def tl_with_trans_dot():
    m = types.ModuleType("triton_language_with_trans_dot")
    m.__dict__.update({k: v for k, v in vars(tl).items() if not k.startswith("__")})
    m.dot = _dot_v2
    return m


def flash_attn_module(trans_stand_in):
    path = FA / "flash_attn" / "flash_attn_triton.py"
    if trans_stand_in:
        return load_optimized("flash_attn.flash_attn_triton_trans", path, {"tl": tl_with_trans_dot()})
    return load_optimized("flash_attn.flash_attn_triton", path)


@contextlib.contextmanager
def only_config(autotuner, **kwargs):
    """The autotuner keeps only its configs that set kwargs (and forgets what it chose)."""
    configs, cache = autotuner.configs, autotuner.cache
    autotuner.configs = [c for c in configs if all(c.kwargs.get(k) == v for k, v in kwargs.items())]
    autotuner.cache = {}
    try:
        yield
    finally:
        autotuner.configs, autotuner.cache = configs, cache


def flash_attn(d=64, causal=False, bias=None, seqlens=(113, 203), dtype=torch.float16, tol=1e-2,
               trans_stand_in=False, sequence_parallel=None):
    """flash_attn_func on q [2, Sq, 3, d], k / v [2, Sk, 3, d]; bias "vector" [2, 3, 1, Sk] or "matrix"
    [2, 3, Sq, Sk] (float32). Causal masks key j > query i (top-left aligned, as the kernel does).
    sequence_parallel True / False: the backward's autotuner keeps only that one of its two configs."""
    def run():
        fa = flash_attn_module(trans_stand_in)
        pinned = only_config(fa._bwd_kernel, SEQUENCE_PARALLEL=sequence_parallel) \
            if sequence_parallel is not None else contextlib.nullcontext()
        B, H = 2, 3
        Sq, Sk = seqlens
        q, k, v = (torch.randn(B, S, H, d).to(dtype) for S in (Sq, Sk, Sk))
        bias_t = None
        if bias == "vector":
            bias_t = torch.randn(B, H, 1, Sk)
        elif bias == "matrix":
            bias_t = torch.randn(B, H, Sq, Sk)
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        o = fa.flash_attn_func(qg, kg, vg, bias_t, causal)
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        s = torch.einsum("bqhd,bkhd->bhqk", qr, kr) / math.sqrt(d)
        if bias_t is not None:
            s = s + bias_t.double()
        if causal:
            s = s.masked_fill(torch.arange(Sk)[None, :] > torch.arange(Sq)[:, None], float("-inf"))
        o_ref = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), vr)
        yield {"o": (o, o_ref, tol)}
        do = torch.randn(B, Sq, H, d).to(dtype)
        with pinned:
            o.backward(do)
            chosen = fa._bwd_kernel.best_config.kwargs["SEQUENCE_PARALLEL"]
            if sequence_parallel is not None and chosen != sequence_parallel:
                raise AssertionError(f"the backward ran with SEQUENCE_PARALLEL={chosen}")
        o_ref.backward(do.double())
        yield {"dq": (qg.grad, qr.grad, tol * 2), "dk": (kg.grad, kr.grad, tol * 2), "dv": (vg.grad, vr.grad, tol * 2)}
    return run

FLASH_CASES = [
    ("flash_attn d64 fp16", {}),
    ("flash_attn d64 causal fp16", {"causal": True}),
    ("flash_attn d64 causal fp16 SEQUENCE_PARALLEL", {"causal": True, "sequence_parallel": True}),
    ("flash_attn d64 causal fp16 not SEQUENCE_PARALLEL", {"causal": True, "sequence_parallel": False}),
    ("flash_attn d64 128x203 (EVEN_M) fp16", {"seqlens": (128, 203)}),
    ("flash_attn d40 bias vector fp16", {"d": 40, "bias": "vector"}),
    ("flash_attn d64 causal bias matrix bf16", {"causal": True, "bias": "matrix", "dtype": torch.bfloat16,
                                                "tol": 3e-2}),
    ("flash_attn d40 causal 256x256 (EVEN_M, EVEN_N) bf16", {"d": 40, "causal": True, "seqlens": (256, 256),
                                                             "dtype": torch.bfloat16, "tol": 3e-2}),
    ("flash_attn d40 bias matrix 256x256 bf16 SEQUENCE_PARALLEL", {"d": 40, "bias": "matrix", "seqlens": (256, 256),
                                                                   "dtype": torch.bfloat16, "tol": 3e-2,
                                                                   "sequence_parallel": True}),
]
for _name, _kw in FLASH_CASES[:1]:
    check(_name, flash_attn(**_kw))
for _name, _kw in FLASH_CASES:
    check(_name + " [trans stand-in]", flash_attn(trans_stand_in=True, **_kw))


width = max(len(r[0]) for r in results)
for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:{width}s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} flash-attention cases match the torch float64 "
      "references")
