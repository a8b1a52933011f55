"""DeepSpeed's Triton kernels (deepspeedai/DeepSpeed) on Tegula, through the conformance shim's `triton` package,
against float64 references written here from the math (exact ones for the index kernels):

  - deepspeed/ops/transformer/inference/triton (the Triton inference ops): gelu.py (`gelu_kernel`, erf GELU),
    residual_add.py (`residual_add_bias_kernel`: the three mlp_after_attn / pre_attn_norm / add_attn_bias
    variants, mp_size 2), layer_norm.py (`layer_norm_kernel`, `layer_norm_residual_kernel`,
    `layer_norm_residual_bias_kernel`, widths below and above one block), softmax.py (`softmax_kernel`,
    `masked_softmax_kernel` with a broadcast and a per-row mask), triton_matmul_kernel.py through matmul_ext.py
    (`_fp_matmul`: fp16_matmul with bias and the relu / leaky_relu / gelu / sigmoid epilogues chosen by a string
    constexpr, EVEN_K heuristic, split-K by atomic_add; `matmul_4d_kernel`: matmul_4d, score_4d_matmul and
    context_4d_matmul on the packed QKV layout, and its causal MASK branch launched directly, since no host
    function of DeepSpeed sets MASK), attention.py (`_triton_attention`: the score / masked softmax / context
    pipeline, and `_flash_packed_kernel` through `_triton_packed_flash`: packed-QKV flash attention, non-causal,
    causal and with an additive mask);
  - deepspeed/ops/transformer/inference/triton_ops.py (`triton_flash_attn`, block pointers with tl.advance);
  - deepspeed/ops/triton_ops: group_gemm_triton.py (`group_gemm_triton` forward and backward, trans_b both ways:
    `_group_meta_kernel`, `_group_gemm_kernel` with its per-tile group search and early return,
    `_group_gemm_dw_kernel` with tl.trans, one expert without rows), swiglu_triton.py (`swiglu` forward and
    backward);
  - deepspeed/ops/fp_quantizer/fp8_gemm_triton.py (`matmul_fp8_triton` with bfloat16 activations:
    `matmul_kernel_fp8_bf16`, FP8 E4M3 bytes turned into bfloat16 by bit arithmetic, group scales);
  - deepspeed/moe/ep_kernels.py (`generate_permute_indices` through `_fill_indices_kernel`, against the file's
    own `fill_indices_cpu`).

Sizes are not powers of two where the kernels allow it (rows 37 / 150, widths 300 / 1000 / 3000 / 5000, GEMMs
37x300x200, sequences of 77, or 192 where a kernel needs whole blocks of 64, group sizes 45 / 0 / 70 / 35).
Inputs are float16 unless a kernel takes others.

A case passes when every output's largest difference from its reference is at most the tolerance times the
reference's largest magnitude: float32 results 1e-5, float16 outputs 2e-3 (elementwise, norms, softmax) to 5e-3
(GEMMs over K = 300 with float16 operands), the attention kernels 1e-2 (float16 probabilities) and 2e-2 where the
kernel keeps QK^T in float16 (`_flash_packed_kernel` without a mask), bfloat16 outputs 1e-2, indices exactly.

DeepSpeed is not part of Tegula; point this at a source tree holding deepspeed/ and accelerator/ (written against
commit edaa722 of 2026-08-22, whose files this reads unchanged; deepspeed/accelerator is a link to ../accelerator
in the repository, so take both: `git archive HEAD deepspeed accelerator | tar -x -C <tree>`):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/deepspeed_ops.py <DeepSpeed tree> [-k SUBSTRING]

(-k runs only the cases whose name holds SUBSTRING.) `import deepspeed` initializes its communication, op builders
and much of the library, so every deepspeed package is imported bare (its __init__ is not run) except
deepspeed.accelerator, which loads as it is (on a machine without a GPU it picks its CPU accelerator, whose
on_accelerator() the host functions assert). What the modules above reach that a CPU machine, or the stand-in
`triton` package, lacks is stood in for (none of it is a Triton kernel or reached from one):

  - deepspeed.HAS_TRITON: True, set on the bare package (deepspeed/__init__.py sets it when Triton imports;
    matmul_ext.py defines its matmul functions only then);
  - deepspeed.ops.transformer.inference.op_binding, while attention.py loads: a module whose LinearOp,
    VectorMatMulOp, SoftmaxContextOp and QKVGemmOp raise when used (attention.py's TritonSelfAttention module uses
    them with DeepSpeed's CUDA inference extension; the functions checked here do not), and on the bare
    deepspeed.ops.transformer.inference.triton package the three names attention.py imports from it, as its
    __init__ re-exports them (softmax.softmax, matmul_ext.score_4d_matmul, matmul_ext.context_4d_matmul);
  - matmul_ext.py's autotune table: TRITON_CACHE_DIR, which DeepSpeed reads to place it (Tegula does not read
    it), is a temporary directory removed at exit, and its atexit hook that pickles the autotuners' caches into
    it is unregistered.

Autotuning: `_fp_matmul`, `matmul_4d_kernel` and the two grouped-GEMM kernels are pinned to one config of their
own lists (the autotuner's `configs` set to that one), named at each case; an autotuner of one config prunes
nothing, as in Triton (DeepSpeed's prune hooks call torch.cuda). DeepSpeed's `_fp_matmul` list holds SPLIT_K 1
only; its split-K case runs one config of the list with SPLIT_K 2 and a pre_hook that zeroes C, as
triton.ops.matmul's split-K configs have (the kernel's atomic_add branch is otherwise never compiled).

`_flash_packed_kernel` reads the module's plain float global `minus_inf`: Triton refuses that ("Cannot access
global variable minus_inf from within @jit'ed function", unless TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1) and Tegula
reads it as a constant (docs/triton-compat.md lists this difference), so these cases run on Tegula only.

Library behaviour the cases step around: the unmasked loads and stores of some kernels need whole tiles, noted at
their cases (`_flash_packed_kernel` reads its mask without a mask, so the mask row is padded; the MASK branch of
`matmul_4d_kernel` stores whole tiles; `triton_flash_attn` loads block pointers without boundary checks;
matmul_kernel_fp8_bf16 reads its scales without a mask, so K is a multiple of BLOCK_SIZE_K). `_triton_attention`
passes `triangular` to score_4d_matmul as its unused input_mask and applies no causal mask, and softmax() gives a
mask of several rows a row stride, so the masked pipeline runs with one batch.

Not covered: matmul_kernel_fp8_fp16 (its dequantization shifts uint8 values left by 7 and 8 bits in uint8
arithmetic, which Triton leaves undefined or truncates, so it has no meaningful reference), ops/sparse_attention
(Triton 1.0 kernels with `**meta` parameters and host code in triton._C.libtriton), ops/transformer/inference/
triton/ops.py and mlp.py (host glue over the kernels above and DeepSpeed's CUDA inference extension).
Tegula's recompile warnings are off unless TEGULA_RECOMPILE_WARNING is set. Prints one line per case (the largest
absolute difference from the reference over the case's outputs, each output's difference, or the first line of
the error) and a summary line.
"""

import atexit
import importlib
import importlib.util
import math
import os
import pathlib
import shutil
import sys
import tempfile
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_args = sys.argv[1:]
ONLY = None
if len(_args) == 3 and _args[1] == "-k":
    ONLY = _args.pop(2); _args.pop(1)
if len(_args) != 1:
    sys.exit("usage: deepspeed_ops.py <DeepSpeed tree> [-k SUBSTRING]")
TREE = pathlib.Path(_args[0]).resolve()
for _file in ("deepspeed/ops/transformer/inference/triton/matmul_ext.py",
              "deepspeed/ops/triton_ops/group_gemm_triton.py", "deepspeed/moe/ep_kernels.py",
              "deepspeed/accelerator/real_accelerator.py"):
    if not (TREE / _file).is_file():
        sys.exit(f"{TREE} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
_AUTOTUNE_TABLES = tempfile.mkdtemp(prefix="deepspeed-autotune-")
atexit.register(shutil.rmtree, _AUTOTUNE_TABLES, True)
os.environ["TRITON_CACHE_DIR"] = _AUTOTUNE_TABLES

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

LOADED_AS_IS = ("deepspeed.accelerator",)


standins.bare_packages(TREE, "deepspeed", as_is=LOADED_AS_IS)

import deepspeed  # noqa: E402

deepspeed.HAS_TRITON = True
INFER = "deepspeed.ops.transformer.inference.triton"


def load(name):
    return importlib.import_module(name)


def load_matmul_ext():
    if f"{INFER}.matmul_ext" not in sys.modules:
        m = load(f"{INFER}.matmul_ext")
        atexit.unregister(m.matmul_ext_update_autotune_table)
        for kernel in (m.Fp16Matmul._2d_kernel, m.Fp16Matmul._4d_kernel):  # the lists pin() chooses from
            kernel._library_configs = list(kernel.configs)
    return sys.modules[f"{INFER}.matmul_ext"]


def _unavailable(name):
    class Op:
        def __init__(self, *args, **kwargs):
            raise RuntimeError(f"{name} is a stand-in of deepspeed_ops.py (DeepSpeed's CUDA inference extension)")
    Op.__name__ = name
    return Op


def load_attention():
    if f"{INFER}.attention" not in sys.modules:
        mx = load_matmul_ext()
        pkg = load(INFER)
        pkg.softmax = load(f"{INFER}.softmax").softmax
        pkg.score_4d_matmul = mx.score_4d_matmul
        pkg.context_4d_matmul = mx.context_4d_matmul
        binding = types.ModuleType("deepspeed.ops.transformer.inference.op_binding")
        for name in ("LinearOp", "VectorMatMulOp", "SoftmaxContextOp", "QKVGemmOp"):
            setattr(binding, name, _unavailable(name))
        saved = sys.modules.get(binding.__name__)
        sys.modules[binding.__name__] = binding
        try:
            load(f"{INFER}.attention")
        finally:
            if saved is None:
                sys.modules.pop(binding.__name__, None)
            else:
                sys.modules[binding.__name__] = saved
    return sys.modules[f"{INFER}.attention"]


def pin(tuner, **want):
    """Keeps the first of the autotuner's configs (its list as the library made it) whose meta-parameters (and
    num_warps / num_stages) match."""
    if not isinstance(tuner, triton.runtime.Autotuner):
        raise TypeError(f"{tuner!r} is not an autotuner")
    if not hasattr(tuner, "_library_configs"):
        tuner._library_configs = list(tuner.configs)
    for c in tuner._library_configs:
        if all((c.kwargs[k] if k in c.kwargs else getattr(c, k, None)) == v for k, v in want.items()):
            tuner.configs = [c]
            tuner.cache.clear()
            return c
    raise LookupError(f"no config of {tuner!r} has {want}")


# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64


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


def gelu64(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


# --- inference/triton: gelu, residual_add, layer_norm, softmax --------------------------------------------------------

def gelu_case(dtype):
    def run():
        m = load(f"{INFER}.gelu")
        x = (torch.randn(37, 300) * 3).to(dtype)
        return {"y": (m.gelu(x), gelu64(x.double()), 2e-3 if dtype != F32 else 1e-5)}
    return run


check("gelu 37x300 float16", gelu_case(F16))
check("gelu 37x300 float32", gelu_case(F32))


def residual_case(mlp_after_attn, pre_attn_norm, add_attn_bias):
    def run():
        m = load(f"{INFER}.residual_add")
        B, S, H, mp = 2, 37, 300, 2
        hs, res, attn = (torch.randn(B, S, H).to(F16) for _ in range(3))
        ab, fb = (torch.randn(H).to(F16) for _ in range(2))
        y = m.residual_add_bias(hs, res, attn, ab, fb, mp, mlp_after_attn, add_attn_bias, pre_attn_norm)
        h, r, a, abd, fbd = (t.double() for t in (hs, res, attn, ab, fb))
        if mlp_after_attn:
            want = h + (r + fbd + a + abd) / mp if pre_attn_norm else h + r + fbd
        else:
            want = h + a + (r + fbd) / mp + (abd / mp if add_attn_bias else 0)
        return {"out": (y, want, 2e-3)}
    return run


check("residual_add_bias mlp_after_attn pre_attn_norm 2x37x300 mp 2", residual_case(True, True, False))
check("residual_add_bias mlp_after_attn 2x37x300", residual_case(True, False, False))
check("residual_add_bias attn bias, mp 2", residual_case(False, False, True))


def layer_norm_case(kind, N, dtype=F16):
    def run():
        m = load(f"{INFER}.layer_norm")
        M = 37
        a = (torch.randn(M, N) * 2 + 0.5).to(dtype)
        w = (torch.rand(N) + 0.5).to(dtype)
        b = torch.randn(N).to(dtype)
        eps = 1e-5
        x = a.double()
        out = {}
        if kind == "plain":
            y = m.layer_norm(a, w, b, eps)
        else:
            r = torch.randn(M, N).to(dtype)
            ib = torch.randn(N).to(dtype) if kind == "residual bias" else None
            y = m.layer_norm_residual(a, ib, r, w, b, eps)
            x = x + r.double() + (ib.double() if ib is not None else 0)
        mu = x.mean(1, keepdim=True)
        var = ((x - mu) ** 2).mean(1, keepdim=True)
        want = (x - mu) / (var + eps).sqrt() * w.double() + b.double()
        out["out"] = (y, want, 2e-3 if dtype != F32 else 1e-5)
        return out
    return run


check("layer_norm 37x300 float16", layer_norm_case("plain", 300))
check("layer_norm 37x5000 float16 (block 8192)", layer_norm_case("plain", 5000))
check("layer_norm 37x1000 float32", layer_norm_case("plain", 1000, F32))
check("layer_norm_residual 37x300 float16", layer_norm_case("residual", 300))
check("layer_norm_residual with input bias 37x1000 float16", layer_norm_case("residual bias", 1000))


def softmax_case(kind):
    def run():
        m = load(f"{INFER}.softmax")
        x = (torch.randn(2, 3, 37, 77) * 3).to(F16)
        if kind == "plain":
            return {"p": (m.softmax(x), torch.softmax(x.double(), -1), 2e-3)}
        if kind == "broadcast mask":
            mask = (torch.rand(1, 77) < 0.2).to(F16) * -10000.0
        else:
            mask = torch.randn(2 * 3 * 37, 77).to(F16)
        y = m.softmax(x, mask)
        rows = x.double().view(-1, 77)
        want = torch.softmax(rows + mask.double(), -1).view_as(x)  # the mask added after the row maximum: same result
        return {"p": (y, want, 2e-3)}
    return run


check("softmax 2x3x37x77 float16", softmax_case("plain"))
check("masked softmax 2x3x37x77, broadcast mask", softmax_case("broadcast mask"))
check("masked softmax 2x3x37x77, per-row mask", softmax_case("row mask"))


# --- inference/triton: matmul_ext (triton_matmul_kernel.py) -----------------------------------------------------------

FP_MATMUL = dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, SPLIT_K=1, num_stages=5)  # the library's last config
MATMUL_4D = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, num_stages=5)


def act64(c, activation):
    if activation == "relu":
        return c.clamp_min(0)
    if activation == "leaky_relu":
        return torch.where(c >= 0, c, 0.01 * c)
    if activation == "gelu":
        return gelu64(c)
    if activation == "sigmoid":
        return torch.sigmoid(c)
    return c


def fp16_matmul_case(activation="", bias=False, K=300, batch=False, split_k=False, skip_autotune=False):
    def run():
        mx = load_matmul_ext()
        cfg = dict(FP_MATMUL)
        if skip_autotune:  # the library's own switch: the first config of each list (2-D: 128 x 256 x 32, 8 warps)
            for kernel in (mx.Fp16Matmul._2d_kernel, mx.Fp16Matmul._4d_kernel):
                kernel.configs = list(kernel._library_configs)
                kernel.cache.clear()
            mx.fp16_matmul.skip_autotune()
        elif split_k:  # not in the library's list of SPLIT_K 1 configs: its first config with SPLIT_K 2
            kernel = mx.Fp16Matmul._2d_kernel
            base = next(c for c in kernel._library_configs if c.kwargs["BLOCK_M"] == 64 and c.kwargs["BLOCK_N"] == 32)
            kernel.configs = [triton.Config({**base.kwargs, "SPLIT_K": 2}, num_warps=base.num_warps,
                                            num_stages=base.num_stages, pre_hook=lambda nargs: nargs["C"].zero_())]
            kernel.cache.clear()
        else:
            pin(mx.Fp16Matmul._2d_kernel, **cfg)
        M, N = 37, 200
        A = (torch.randn(2, M, K) if batch else torch.randn(M, K)).to(F16)
        B = (torch.randn(K, N) / K ** 0.5).to(F16)
        bv = torch.randn(N).to(F16) if bias else None
        C = mx.matmul(A, B, bias=bv, activation=activation, use_triton=True)
        acc = A.double() @ B.double() + (bv.double() if bias else 0)
        return {"C": (C, act64(acc, activation), 5e-3)}
    return run


check("fp16_matmul 37x300x200 [64x32x32]", fp16_matmul_case())
check("fp16_matmul 37x256x200 EVEN_K, bias, relu", fp16_matmul_case("relu", True, K=256))
check("fp16_matmul bias, leaky_relu", fp16_matmul_case("leaky_relu", True))
check("fp16_matmul bias, gelu (fused_gemm_gelu's first GEMM)", fp16_matmul_case("gelu", True))
check("fp16_matmul sigmoid, 3-D input 2x37x300", fp16_matmul_case("sigmoid", batch=True))
check("fp16_matmul split-K 2 (atomic_add into float16)", fp16_matmul_case(split_k=True))
check("fp16_matmul bias, gelu, Fp16Matmul.skip_autotune() [128x256x32]", fp16_matmul_case("gelu", True,
                                                                                         skip_autotune=True))


def matmul_4d_case():
    mx = load_matmul_ext()
    pin(mx.Fp16Matmul._4d_kernel, **MATMUL_4D)
    a = (torch.randn(2, 3, 77, 80) / 9).to(F16)
    b = torch.randn(2, 3, 80, 50).to(F16)
    return {"c": (mx.matmul_4d(a, b), a.double() @ b.double(), 5e-3)}


check("matmul_4d 2x3x77x80 @ 80x50 [32x64x32]", matmul_4d_case)


def qkv_split(qkv, heads):
    B, S, H3 = qkv.shape
    d = H3 // 3 // heads
    q, k, v = (qkv[:, :, i * H3 // 3:(i + 1) * H3 // 3].double().view(B, S, heads, d).transpose(1, 2) for i in range(3))
    return q, k, v


def score_context_case():
    mx = load_matmul_ext()
    pin(mx.Fp16Matmul._4d_kernel, **MATMUL_4D)
    B, S, heads, d = 2, 77, 3, 64
    qkv = torch.randn(B, S, 3 * heads * d).to(F16)
    scale = 1 / d ** 0.5
    s = mx.score_4d_matmul(qkv, d, None, scale)
    q, k, v = qkv_split(qkv, heads)
    s_ref = (q @ k.transpose(-1, -2)).to(F16).double() * scale  # the kernel rounds to float16, then scales
    p = torch.softmax(s.double(), -1).to(F16)
    ctx = mx.context_4d_matmul(p, qkv, d)
    ctx_ref = (p.double() @ v).transpose(1, 2).reshape(B, S, heads * d)
    return {"scores": (s, s_ref, 5e-3), "context": (ctx, ctx_ref, 5e-3)}


check("score_4d_matmul / context_4d_matmul packed QKV 2x77x3x64", score_context_case)


def matmul_4d_mask_case():
    """matmul_4d_kernel's MASK branch (causal: -inf above the diagonal, whole tiles above it stored without a
    mask), launched directly as matmul_ext's _matmul_4d launches the kernel, with MASK=True and a scale; 128 x 128
    scores, whole tiles."""
    mx = load_matmul_ext()
    pin(mx.Fp16Matmul._4d_kernel, **MATMUL_4D)
    a = (torch.randn(1, 2, 128, 48) / 7).to(F16)
    b = torch.randn(1, 2, 48, 128).to(F16)
    c = torch.empty(1, 2, 128, 128, dtype=F16)
    M, K = a.shape[2:]
    N = b.shape[3]
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), 2, 1)
    mx.Fp16Matmul._4d_kernel[grid](a, b, c, M, N, K, M // 32, N // 32, K // 32, *a.stride(), *b.stride(), *c.stride(),
                                   scale=0.5, MASK=True)
    ref = (a.double() @ b.double()).to(F16).double() * 0.5
    causal = torch.ones(128, 128, dtype=torch.bool).tril()
    finite = (c.isfinite() == causal).all()
    return {"lower triangle": (torch.where(causal, c.double(), 0.0), torch.where(causal, ref, 0.0), 5e-3),
            "-inf exactly above the diagonal": (finite.double(), torch.ones((), dtype=F64), 0.0)}


check("matmul_4d_kernel MASK (causal) 2x128x48 @ 48x128, scale 0.5", matmul_4d_mask_case)


# --- inference/triton/attention.py ------------------------------------------------------------------------------------

def attention64(q, k, v, scale, causal=False, mask=None):
    s = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s + mask
    if causal:
        S = s.shape[-1]
        s = s.masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, -1) @ v


def triton_attention_case():
    """_triton_attention without flash: score_4d_matmul, masked softmax, context_4d_matmul (one batch: softmax
    gives a mask of several rows a row stride)."""
    at = load_attention()
    mx = load_matmul_ext()
    pin(mx.Fp16Matmul._4d_kernel, **MATMUL_4D)
    B, S, heads, d = 1, 77, 3, 64
    qkv = torch.randn(B, S, 3 * heads * d).to(F16)
    mask = ((torch.rand(B, 1, 1, S) < 0.25).to(F16) * -10000.0)
    scale = 1 / d ** 0.5
    out = at._triton_attention(qkv, mask, None, None, scale, d)
    q, k, v = qkv_split(qkv, heads)
    want = attention64(q, k, v, scale, mask=mask.double()).transpose(1, 2).reshape(B, S, heads * d)
    return {"context": (out, want, 1e-2)}


check("_triton_attention score / masked softmax / context 1x77x3x64", triton_attention_case)


def flash_packed_case(causal, masked, d=64):
    """_triton_packed_flash (BLOCK_M 128, BLOCK_N 64 or 32). The kernel reads its mask without a mask, a whole
    BLOCK_N past the sequence: the mask is a (B, 1, 1, S) view of a row padded with zeros to whole blocks (the
    kernel steps through it by its stride)."""
    def run():
        at = load_attention()
        B, S, heads = 2, 77, 3
        qkv = torch.randn(B, S, 3 * heads * d).to(F16)
        scale = 1 / d ** 0.5
        mask = None
        if masked:
            padded = torch.zeros(B, 1, 1, 128, dtype=F16)
            padded[..., :S] = (torch.rand(B, 1, 1, S) < 0.25).to(F16) * -10000.0
            mask = padded[..., :S]
        o = at._triton_packed_flash(qkv, d, mask, scale, causal=causal, add_mask=masked)
        q, k, v = qkv_split(qkv, heads)
        want = attention64(q, k, v, scale, causal=causal, mask=None if mask is None else mask.double())
        return {"o": (o, want.transpose(1, 2).reshape(B, S, heads * d), 1e-2 if masked else 2e-2)}
    return run


check("_triton_packed_flash 2x77x3x64", flash_packed_case(False, False))
check("_triton_packed_flash causal 2x77x3x64", flash_packed_case(True, False))
check("_triton_packed_flash additive mask 2x77x3x64", flash_packed_case(False, True))
check("_triton_packed_flash head size 32 (BLOCK_N 64)", flash_packed_case(False, False, d=32))
check("_triton_packed_flash causal head size 128 (BLOCK_N 32)", flash_packed_case(True, False, d=128))


def triton_flash_attn_case(block_128):
    """triton_ops.py's block-pointer flash attention (no boundary checks: the sequence a multiple of the block)."""
    def run():
        m = load("deepspeed.ops.transformer.inference.triton_ops")
        B, H, S, d = 2, 3, 192 if not block_128 else 256, 64
        q, k, v = (torch.randn(B, H, S, d).to(F16) for _ in range(3))
        scale = 1 / d ** 0.5
        o = m.triton_flash_attn()(q, k, v, scale, block_128=block_128)
        return {"o": (o, attention64(q.double(), k.double(), v.double(), scale), 1e-2)}
    return run


check("triton_flash_attn 2x3x192x64 block 64", triton_flash_attn_case(False))
check("triton_flash_attn 2x3x256x64 block 128", triton_flash_attn_case(True))


# --- ops/triton_ops: grouped GEMM and SwiGLU --------------------------------------------------------------------------

GMM = dict(BLOCK_M=32, BLOCK_N=128, BLOCK_K=32)
GMM_DW = dict(BLOCK_K=32, BLOCK_N=128, BLOCK_M=32)


def group_gemm_case(trans_b, dtype=F16):
    def run():
        m = load("deepspeed.ops.triton_ops.group_gemm_triton")
        pin(m._group_gemm_kernel, **GMM)
        pin(m._group_gemm_dw_kernel, **GMM_DW)
        sizes = [45, 0, 70, 35]
        E, K, N = len(sizes), 96, 136
        M = sum(sizes)
        offs = torch.tensor(sizes).cumsum(0).to(torch.int32)
        a = (torch.randn(M, K) / K ** 0.5).to(dtype).requires_grad_()
        b = (torch.randn(E, N, K) if trans_b else torch.randn(E, K, N)).to(dtype).requires_grad_()
        out = m.group_gemm_triton(a, b, offs, trans_b=trans_b)
        g = torch.randn(M, N).to(dtype)
        out.backward(g)
        a64 = a.detach().double().requires_grad_()
        b64 = b.detach().double().requires_grad_()
        bk = b64.transpose(-1, -2) if trans_b else b64
        group = torch.repeat_interleave(torch.arange(E), torch.tensor(sizes))
        ref = torch.einsum("mk,mkn->mn", a64, bk[group])
        ref.backward(g.double())
        tol = 5e-3 if dtype != F32 else 1e-5
        return {"out": (out, ref, tol), "grad a": (a.grad, a64.grad, tol), "grad b": (b.grad, b64.grad, tol)}
    return run


check("group_gemm_triton 4 experts (one empty) 150x96 -> 136, fwd + bwd", group_gemm_case(False))
check("group_gemm_triton trans_b, fwd + bwd", group_gemm_case(True))
check("group_gemm_triton float32 trans_b, fwd + bwd", group_gemm_case(True, F32))


def swiglu_case(dtype):
    def run():
        m = load("deepspeed.ops.triton_ops.swiglu_triton")
        gate = (torch.randn(37, 3000) * 2).to(dtype).requires_grad_()
        up = torch.randn(37, 3000).to(dtype).requires_grad_()
        y = m.swiglu(gate, up)
        g = torch.randn(37, 3000).to(dtype)
        y.backward(g)
        g64, u64 = gate.detach().double().requires_grad_(), up.detach().double().requires_grad_()
        ref = torch.nn.functional.silu(g64) * u64
        ref.backward(g.double())
        tol = 2e-3 if dtype != F32 else 1e-5
        if dtype == BF16:
            tol = 1e-2
        return {"y": (y, ref, tol), "grad gate": (gate.grad, g64.grad, tol), "grad up": (up.grad, u64.grad, tol)}
    return run


check("swiglu 37x3000 float32 fwd + bwd", swiglu_case(F32))
check("swiglu 37x3000 bfloat16 fwd + bwd", swiglu_case(BF16))


# --- fp_quantizer/fp8_gemm_triton.py ----------------------------------------------------------------------------------

def fp8_gemm_case(qgs):
    """bfloat16 activations times E4M3 bytes with one scale per (row k, group of qgs columns): the kernel turns
    a byte into bfloat16 by moving its bits (E4M3 subnormals come out as normals), so the bytes are normal E4M3
    numbers (exponent field 1 to 15, no NaN), whose value is float8_e4m3fn's. Its scales are read without a mask,
    so K is a multiple of BLOCK_SIZE_K = max(64, qgs)."""
    def run():
        m = load("deepspeed.ops.fp_quantizer.fp8_gemm_triton")
        M, K, N = 37, 384, 3 * qgs
        exp = torch.randint(1, 16, (K, N), dtype=torch.int32)
        man = torch.randint(0, 8, (K, N), dtype=torch.int32)
        man = torch.where(exp == 15, man.clamp_max(6), man)
        sgn = torch.randint(0, 2, (K, N), dtype=torch.int32)
        w = ((sgn << 7) | (exp << 3) | man).to(torch.uint8)
        scale = torch.rand(K, N // qgs) * 0.01 + 0.001
        inp = torch.randn(M, K).to(BF16)
        out = m.matmul_fp8_triton(inp, w, scale, qgs)
        wv = w.view(torch.float8_e4m3fn).double()
        deq = (wv * scale.double().repeat_interleave(qgs, 1)).float().to(BF16).double()
        return {"out": (out, inp.double() @ deq, 1e-2)}
    return run


check("matmul_fp8_triton bfloat16 37x384x192 group 64", fp8_gemm_case(64))
check("matmul_fp8_triton bfloat16 37x384x384 group 128", fp8_gemm_case(128))


# --- moe/ep_kernels.py ------------------------------------------------------------------------------------------------

def permute_case(experts, ranks):
    def run():
        m = load("deepspeed.moe.ep_kernels")
        tokens = torch.randint(0, 40, (ranks * experts,), dtype=torch.int32)
        tokens[2] = 0
        tokens[2 + experts] = 0  # an expert that no rank sends tokens to (pads to the alignment)
        if ranks > 2:
            tokens[2 + 2 * experts] = 0
        tokens[0] = 300  # more than one block of 128
        align = 8
        max_len = int(tokens.sum()) + experts * align
        got = m.generate_permute_indices(tokens, experts, ranks, max_len, align)
        want = m.generate_permute_indices(tokens.cpu(), experts, ranks, max_len, align, use_cpu=True)
        return {"permuted_indices": (got[0].long(), want[0].long().to(DEVICE), 0.0),
                "m_sizes": (got[1].long(), want[1].long().to(DEVICE), 0.0),
                "m_offsets": (got[2].long(), want[2].long().to(DEVICE), 0.0)}
    return run


check("generate_permute_indices 5 experts x 3 ranks (against fill_indices_cpu)", permute_case(5, 3))
check("generate_permute_indices 7 experts x 2 ranks", permute_case(7, 2))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:78s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} DeepSpeed cases match the references")
