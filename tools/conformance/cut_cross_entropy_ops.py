"""Apple's Cut Cross-Entropy kernels (apple/ml-cross-entropy, cut_cross_entropy/) on Tegula, through the conformance
shim's `triton` package, against torch float64 references written here from the math (logits = e @ c^T [+ bias],
optionally soft-capped as softcap * tanh(logits / softcap); lse = logsumexp over the vocabulary; nll = lse -
logits[target]):

  - cce_lse_forward.py (`cce_lse_forward_kernel`): `_cce_lse_forward_kernel`, the blocked e @ c^T with the running
    log-sum-exp merged across vocabulary blocks under a spin lock (tl.atomic_cas / tl.atomic_xchg) and libdevice's
    log1p; with and without bias, soft-capping, a `valids` row list, and the per-vocabulary average logit
    (`return_logit_avg`, tl.atomic_add) that the sorted-vocabulary backward uses; D a multiple of BLOCK_D and not;
    float32 (ieee dots), float16, bfloat16;
  - indexed_dot.py (`indexed_neg_dot_forward_kernel`): `_indexed_neg_dot_forward_kernel`, -(e_i . c_{t_i}) [-
    bias], with shift and valids;
  - cce_backward.py (`cce_backward_kernel`): `_cce_backward_kernel` with `_mm_backward`, the lock-guarded
    accumulation of dE and dC (tl_lock_add, into the inputs' dtype or into float32 under accum_*_fp32), dBias by
    tl.atomic_add,
    gradient filtering (`filter_eps`, a whole-block early `return` and a per-block skip), the sorted-vocabulary
    order (`vocab_ordering`), soft-capping, dLSE;
  - cce.py (`cce_linear_cross_entropy`, the library's autograd Function): forward (loss and lse) and backward through
    all three kernels, reductions mean / sum / none, ignore_index, shift, soft-capping, bias, filter_eps "auto"
    (logit averages and the sorted vocabulary) and None, accum_e_fp32 / accum_c_fp32, return_lse with a gradient
    through lse.

Sizes are not powers of two (B = 77 or 2 x 45 tokens, V = 333 or 517, D = 72 or 96), but for one library quirk the
soft-capped cases step around: `_cce_lse_forward_kernel` sets the logits of the vocabulary columns past V to -inf
and then soft-caps them, so they become -softcap (tanh(-inf) = -1) and count in the log-sum-exp of the last
vocabulary block (exp(-softcap - max) each), under Triton as here; soft-capped cases have V a multiple of BLOCK_V
(384 = 3 x 128, 640 = 5 x 128). The backward masks those columns itself.

Cut Cross-Entropy is not part of Tegula; point this at a checkout (a directory holding cut_cross_entropy/; written
against commit d42911f9b1a1f98289bb601c35c8151562603d74 of 2025-06-26, version 25.6.4), whose package this imports
unchanged:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/cut_cross_entropy_ops.py <ml-cross-entropy>

Autotuning: the library's own switch, CCE_AUTOTUNE (read when tl_autotune.py loads), is left at its default 0, under
which each kernel gets the library's one best config through triton.heuristics (forward 256 x 128 x 32, backward
128 x 128 x 32, indexed dot 128 x 256); the harness sets CCE_AUTOTUNE=0 explicitly.

Not covered: the Kahan-compensated accumulation (tl_lock_kahan_sum), which cce_backward_kernel takes only under
Triton older than 3.2 (it asks importlib.metadata for the installed `triton` distribution's version, so a `triton`
distribution must be installed in the environment; the shim's module is the one imported); vocab_parallel/ (torch
distributed, no kernel of its own); torch_compile.py and transformers/ (no Triton kernel).

Stand-ins (none is a Triton kernel or reached from one):

  - torch.cuda.is_bf16_supported() answers True when TEGULA_CONFORMANCE_DEVICE is not cuda (cce_linear_cross_entropy
    refuses to run otherwise: "requires an ampere GPU");
  - torch.compile is the identity (on CPU its Inductor would build C++; cce.py's `sort_logit_avg`, an argsort of the
    average logits, and utils.py's z-loss helper are decorated with it), set before the package loads;
  - torch.set_float32_matmul_precision("highest"), so the kernels' DOT_PRECISION heuristic picks "ieee" (as the
    library does on a GPU under that setting).

tl_autotune.py imports nvsmi, get_dram_gbps, get_max_simd_tflops and get_max_tensorcore_tflops from triton.testing;
the shim has them, and they are reached only under CCE_AUTOTUNE=1.

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5 (forward) and
1e-4 (backward), float16 5e-3, bfloat16 3e-2; filtered backward cases (filter_eps "auto") are checked at the same
tolerances, as the filtered blocks' gradients are below eps.

Prints one line per case (the largest absolute difference from the reference over the case's outputs, each
output's difference, or the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set.
"""

import os
import pathlib
import sys
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "-k"):
    sys.exit("usage: cut_cross_entropy_ops.py <ml-cross-entropy checkout> [-k SUBSTRING]")
CCE = pathlib.Path(sys.argv[1]).resolve()
ONLY = sys.argv[3] if len(sys.argv) == 4 else None
for _file in ("cce.py", "cce_lse_forward.py", "cce_backward.py", "indexed_dot.py", "tl_autotune.py", "tl_utils.py"):
    if not (CCE / "cut_cross_entropy" / _file).is_file():
        sys.exit(f"{CCE} holds no cut_cross_entropy/{_file}")
sys.path.insert(0, str(SHIM))
sys.path.insert(1, str(CCE))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
os.environ["CCE_AUTOTUNE"] = "0"
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning, message=r".*autocast.*")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)
torch.set_float32_matmul_precision("highest")

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

if DEVICE != "cuda":
    torch.cuda.is_bf16_supported = lambda *args, **kwargs: True


def _no_compile(fn=None, *args, **kwargs):
    """torch.compile stand-in: the function itself."""
    return fn if fn is not None else (lambda f: f)


torch.compile = _no_compile

from cut_cross_entropy import cce as cce_mod  # noqa: E402
from cut_cross_entropy.cce_backward import cce_backward_kernel  # noqa: E402
from cut_cross_entropy.cce_lse_forward import cce_lse_forward_kernel  # noqa: E402
from cut_cross_entropy.indexed_dot import indexed_neg_dot_forward_kernel  # noqa: E402
from cut_cross_entropy.utils import TensorInfo  # noqa: E402

# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
FWD_TOL = {F32: 1e-5, F16: 5e-3, BF16: 3e-2}
BWD_TOL = {F32: 1e-4, F16: 5e-3, BF16: 3e-2}


def check(name, case, stages=("",)):
    if ONLY is None or ONLY in name:
        comparisons_check(results, name, case, stages)


def inputs(B, V, D, dtype, bias=False, scale=1.0):
    e = (torch.randn(B, D) * scale).to(dtype)
    c = (torch.randn(V, D) * scale).to(dtype)
    b = torch.randn(V).to(dtype) if bias else None
    return e, c, b


def logits_ref(e, c, bias, softcap):
    z = e.double() @ c.double().T
    if bias is not None:
        z = z + bias.double()
    if softcap is not None:
        z = torch.tanh(z / softcap) * softcap
    return z


def lse_case(B, V, D, dtype, bias=False, softcap=None, valids=False, logit_avg=False):
    def case():
        e, c, b = inputs(B, V, D, dtype, bias, 0.5)
        rows = torch.randperm(B)[: B * 2 // 3].sort().values.to(torch.int32) if valids else None
        ret = cce_lse_forward_kernel(e, c, b, rows, softcap, return_logit_avg=logit_avg)
        z = logits_ref(e, c, b, softcap)
        zr = z[rows.long()] if valids else z
        want = {"lse": torch.logsumexp(zr, -1)}
        got = ret[0] if logit_avg else ret
        comparisons = {"lse": (got, want["lse"], FWD_TOL[dtype])}
        if logit_avg:
            # the kernel averages over all B rows (its padded rows load e as 0, so add bias; none here)
            comparisons["logit_avg"] = (ret[1], zr.sum(0) / zr.size(0), FWD_TOL[dtype])
        yield comparisons
    return case


for dtype in (F32, F16, BF16):
    n = str(dtype).split(".")[-1]
    check(f"lse forward B=77 V=333 D=72 {n}", lse_case(77, 333, 72, dtype))
check("lse forward D=96 (EVEN_D) float32", lse_case(77, 333, 96, F32))
check("lse forward bias float32", lse_case(77, 333, 72, F32, bias=True))
check("lse forward softcap=3 V=384 float32", lse_case(77, 384, 72, F32, softcap=3.0))
check("lse forward valids bias softcap V=640 bfloat16", lse_case(300, 640, 72, BF16, bias=True, softcap=5.0,
                                                                 valids=True))
check("lse forward logit_avg float32", lse_case(77, 333, 72, F32, logit_avg=True))
check("lse forward logit_avg softcap valids V=384 float16", lse_case(90, 384, 72, F16, softcap=4.0, valids=True,
                                                                    logit_avg=True))
check("lse forward B=300 (two B blocks, locks) float32", lse_case(300, 517, 40, F32))


def indexed_dot_case(B, V, D, dtype, bias=False, shift=0, valids=False):
    def case():
        e, c, b = inputs(B, V, D, dtype, bias)
        t = torch.randint(0, V, (B,))
        if valids:
            rows = torch.randperm(B - shift)[: (B - shift) * 2 // 3].sort().values.to(torch.int32)
        else:
            rows = None
            assert shift == 0
        got = indexed_neg_dot_forward_kernel(e, c, t, b, shift, rows, out_dtype=torch.float32)
        r = rows.long() if valids else torch.arange(B)
        want = -(e.double()[r] * c.double()[t[r + shift]]).sum(-1)
        if bias:
            want = want - b.double()[t[r + shift]]
        yield {"neg_dot": (got, want, FWD_TOL[dtype])}
    return case


check("indexed_dot B=77 D=300 float32", indexed_dot_case(77, 333, 300, F32))
check("indexed_dot D=256 (EVEN_D) bias bfloat16", indexed_dot_case(77, 333, 256, BF16, bias=True))
check("indexed_dot shift=1 valids float16", indexed_dot_case(150, 333, 72, F16, shift=1, valids=True))


def backward_kernel_case(B, V, D, dtype, bias=False, softcap=None, filter_eps=None, ordering=False, dlse=False,
                         item_do=False, accum_fp32=False):
    """cce_backward_kernel on its own: the gradient of sum_i do_i * nll_i (+ dlse_i * lse_i) wrt e, c, bias."""
    def case():
        e, c, b = inputs(B, V, D, dtype, bias, 0.5)
        t = torch.randint(0, V, (B,))
        z = logits_ref(e, c, b, softcap)
        lse = torch.logsumexp(z, -1).float()
        do = torch.randn(()) if item_do else torch.randn(B)
        dl = torch.randn(B) if dlse else None
        order = torch.randperm(V).to(torch.int32) if ordering else None
        info = TensorInfo(dtype, True)
        # as cce.py does, gradient filtering only with a filter_eps (the kernel compares against it)
        de, dc, db = cce_backward_kernel(do, dl, e, info, c, info, b, info if bias else None, lse, None, softcap,
                                         filter_eps, t, 0, order, 1.0, accum_fp32, accum_fp32,
                                         filter_e_grad=filter_eps is not None, filter_c_grad=filter_eps is not None)
        e64 = e.double().requires_grad_()
        c64 = c.double().requires_grad_()
        b64 = b.double().requires_grad_() if bias else None
        z = logits_ref(e64, c64, b64, softcap)
        lse64 = torch.logsumexp(z, -1)
        nll = lse64 - z.gather(1, t[:, None]).squeeze(1)
        loss = (nll * do.double()).sum()
        if dlse:
            loss = loss + (lse64 * dl.double()).sum()
        loss.backward()
        comparisons = {"dE": (de, e64.grad, BWD_TOL[dtype]), "dC": (dc, c64.grad, BWD_TOL[dtype])}
        if bias:
            comparisons["dBias"] = (db, b64.grad, BWD_TOL[dtype])
        yield comparisons
    return case


check("backward kernel B=77 V=333 D=72 float32", backward_kernel_case(77, 333, 72, F32))
check("backward kernel D=96 bias softcap float32", backward_kernel_case(77, 333, 96, F32, bias=True, softcap=4.0))
check("backward kernel dLSE scalar dOut float32", backward_kernel_case(77, 333, 72, F32, dlse=True, item_do=True))
check("backward kernel vocab_ordering filter_eps float32",
      backward_kernel_case(150, 517, 72, F32, filter_eps=1e-9, ordering=True))
check("backward kernel accum fp32 float16", backward_kernel_case(150, 333, 72, F16, accum_fp32=True))
check("backward kernel bias bfloat16", backward_kernel_case(150, 333, 72, BF16, bias=True))


def cce_case(shape, V, D, dtype, bias=False, softcap=None, reduction="mean", shift=0, ignore=0.0,
             filter_eps="auto", return_lse=False, accum=False):
    """cce_linear_cross_entropy forward and backward against log_softmax(e @ c^T) in float64."""
    def case():
        e, c, b = inputs(shape[0] * shape[1], V, D, dtype, bias, 0.5)
        e = e.reshape(*shape, D)
        t = torch.randint(0, V, shape)
        if ignore:
            t = torch.where(torch.rand(shape) < ignore, torch.full_like(t, -100), t)
        ws = [e.requires_grad_(), c.requires_grad_()] + ([b.requires_grad_()] if bias else [])
        loss, lse = cce_mod.cce_linear_cross_entropy(e, c, t, b, softcap=softcap, reduction=reduction, shift=shift,
                                                     return_lse=return_lse, filter_eps=filter_eps,
                                                     accum_e_fp32=accum, accum_c_fp32=accum)
        r64 = [w.detach().double().requires_grad_() for w in ws]
        e64, c64 = r64[0], r64[1]
        b64 = r64[2] if bias else None
        es, ts = (e64[..., :-shift, :], t[..., shift:]) if shift else (e64, t)
        z = logits_ref(es.reshape(-1, D), c64, b64, softcap)
        lse64 = torch.logsumexp(z, -1)
        tf = ts.reshape(-1)
        keep = tf != -100
        nll = torch.where(keep, lse64 - z.gather(1, tf.clamp(min=0)[:, None]).squeeze(1), 0.0)
        if reduction == "mean":
            want = nll.sum() / keep.sum()
        elif reduction == "sum":
            want = nll.sum()
        else:
            want = nll.reshape(ts.shape)
        comparisons = {"loss": (loss, want, FWD_TOL[dtype])}
        if return_lse:
            want_lse = torch.where(keep, lse64, 0.0).reshape(ts.shape)
            comparisons["lse"] = (lse, want_lse, FWD_TOL[dtype])
        yield comparisons
        g = torch.randn(loss.shape) if reduction == "none" else torch.tensor(1.0)
        gl = torch.randn(lse.shape) if return_lse else None
        outs, grads = [loss], [g]
        if return_lse:
            outs.append(lse)
            grads.append(gl)
        torch.autograd.backward(outs, grads)
        ref_out = (want * g.double()).sum()
        if return_lse:
            ref_out = ref_out + (want_lse * gl.double()).sum()
        ref_out.backward()
        names = ["dE", "dC", "dBias"]
        yield {names[i]: (w.grad, r.grad, BWD_TOL[dtype]) for i, (w, r) in enumerate(zip(ws, r64))}
    return case


check("cce mean B=2x45 V=333 D=72 float32", cce_case((2, 45), 333, 72, F32), ("forward", "backward"))
check("cce mean filter_eps=None float32", cce_case((2, 45), 333, 72, F32, filter_eps=None), ("forward", "backward"))
check("cce sum bias softcap V=384 float32", cce_case((2, 45), 384, 96, F32, bias=True, softcap=3.0, reduction="sum"),
      ("forward", "backward"))
check("cce none ignore_index shift=1 return_lse float32",
      cce_case((3, 31), 517, 72, F32, reduction="none", shift=1, ignore=0.2, return_lse=True), ("forward", "backward"))
check("cce mean ignore_index bfloat16", cce_case((2, 45), 333, 72, BF16, ignore=0.2), ("forward", "backward"))
check("cce mean accum fp32 float16", cce_case((2, 45), 333, 72, F16, accum=True, bias=True),
      ("forward", "backward"))

width = max(len(r[0]) for r in results) if results else 10
for name, status, worst, text in results:
    print(f"{name:<{width}}  {status:<4}  {worst:9.2e}  {text}")
passed = sum(r[1] == "ok" for r in results)
print(f"{passed} of {len(results)} cases match")
sys.exit(0 if passed == len(results) else 1)
