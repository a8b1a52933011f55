"""AutoGPTQ's Triton kernels (AutoGPTQ/AutoGPTQ, auto_gptq/nn_modules) on Tegula, through the conformance shim's
`triton` package, against float64 (or exact) references written here from the packed integers:

  - triton_utils/kernels.py: `quant_matmul_248_kernel` (x @ W for W packed 32 / bits rows to an int32, per-group
    scales and packed zeros stored minus one, a g_idx giving each input row's group) and
    `transpose_quant_matmul_248_kernel` (dy @ W^T, the backward), under the library's own autotuner
    (triton_utils/custom_autotune.py), called directly on float32 and float16 inputs and through
    qlinear/qlinear_triton.py's QuantLinear (its `pack` builds qweight / qzeros / scales from an nn.Linear;
    `forward` through QuantLinearInferenceOnlyFunction, and with trainable=True through QuantLinearFunction,
    forward and backward);
  - triton_utils/dequant.py: `dequant_kernel_248` (elementwise unpacking to a float16 weight, tl.device_assert
    on g_idx) through `dequant248`, checked exactly, and qlinear/qlinear_tritonv2.py's QuantLinear (dequant +
    torch matmul) forward and backward;
  - fused_llama_mlp.py: `quant_fused_matmul_248_kernel` (silu(x @ W_gate) * (x @ W_up), two packed weights in
    one kernel) through FusedLlamaMLPForQuantizedModel's forward (then down_proj, a QuantLinear).

Bits 2, 4 and 8; group sizes 32 and 64 (the last group partial), -1 (one group) and act-order g_idx (each
input row's group drawn by a random permutation, as desc_act checkpoints store them); M = 37 and 5 rows, K and N
96, 160, 192, 320 (multiples of 32, as QuantLinear requires, not powers of two). The packed values are drawn
as integers q in [0, 2^bits), zeros z in [1, 2^bits) and float16 scales s, and the nn.Linear packed holds
exactly (q - z) * s, so `pack` recovers them exactly; the reference weight is (q - z) * s in float64.

The matmul kernels load B, g_idx, scales and zeros unmasked along K and N (only A's rows are masked), so K is a
multiple of the pinned BLOCK_SIZE_K and N of BLOCK_SIZE_N (noted at the cases). A case passes when every
output is within tol * (the reference's largest magnitude): float32 1e-5; float16 5e-3 (W's dequantized
values are rounded to float16 in the kernel, (b - zeros) * scales in the scales' dtype, then float32 sums),
1e-2 for the fused MLP (its float16 intermediate goes through a second quantized matmul); dequant248's float16
weight exactly.

AutoGPTQ is not part of Tegula; point this at a checkout (a directory holding auto_gptq/; written against commit
9f7d37072917ab3a7545835f23e808294a542153 of 2025-04-11, whose nn_modules/ and utils/import_utils.py this reads
unchanged; numpy must be importable):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/autogptq_ops.py <AutoGPTQ checkout>

`import auto_gptq` imports transformers, accelerate, peft and the CUDA extensions, so every auto_gptq package is
imported bare (its __init__ is not run) and the modules load from their files. What they reach at module
level or in their host code that a CPU machine, or this environment, lacks is stood in for (none of it is a
Triton kernel or reached from one):

  - transformers (not installed here): a module holding pytorch_utils.Conv1D (an empty class: `pack` tests
    isinstance(linear, Conv1D)) and models.llama.modeling_llama.LlamaMLP (an empty nn.Module subclass:
    fused_llama_mlp.py imports it for its injection code, not run);
  - torch.cuda.device, without a GPU: a null context for a CPU device (the launch helpers enter
    `torch.cuda.device(input.device)` around every launch; torch refuses a CPU device there);
  - torch.empty maps device="cuda" to TEGULA_CONFORMANCE_DEVICE (dequant248 allocates its output so; a torch
    function mode would not do, since QuantLinearFunction's backward calls it, and autograd runs backward
    functions outside the caller's torch function modes).

Autotuning: each kernel is pinned to one config of its own list (the autotuner's `configs` set to that one,
chosen by its block sizes for the case's shape and named at each case). With one config the library's
autotuner launches it without pruning or benchmarking (its run() takes configs[0]); dequant_kernel_248 is
under the stand-in package's triton.autotune, whose single config is launched untimed as well.

Prints one line per case (the largest absolute difference from the reference over the case's outputs, each
output's difference, or the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set.
"""

import contextlib
import importlib
import importlib.util
import math
import os
import pathlib
import sys
import types
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: autogptq_ops.py <AutoGPTQ checkout>")
TREE = pathlib.Path(sys.argv[1]).resolve()
for _file in ("triton_utils/kernels.py", "triton_utils/custom_autotune.py", "triton_utils/dequant.py",
              "qlinear/qlinear_triton.py", "qlinear/qlinear_tritonv2.py", "fused_llama_mlp.py"):
    if not (TREE / "auto_gptq" / "nn_modules" / _file).is_file():
        sys.exit(f"{TREE} holds no auto_gptq/nn_modules/{_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning, message=r".*torch\.cuda\.amp\.custom_")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


class Conv1D:
    """transformers.pytorch_utils.Conv1D, for pack's isinstance check."""


class LlamaMLP(torch.nn.Module):
    """transformers' LlamaMLP, imported by fused_llama_mlp.py for its injection code."""


try:
    import transformers  # noqa: F401
except ImportError:
    for _name in ("transformers", "transformers.models", "transformers.models.llama"):
        module(_name)
    module("transformers.pytorch_utils", Conv1D=Conv1D)
    module("transformers.models.llama.modeling_llama", LlamaMLP=LlamaMLP)
    sys.modules["transformers"].pytorch_utils = sys.modules["transformers.pytorch_utils"]
    sys.modules["transformers"].models = sys.modules["transformers.models"]
    sys.modules["transformers.models"].llama = sys.modules["transformers.models.llama"]
    sys.modules["transformers.models.llama"].modeling_llama = sys.modules["transformers.models.llama.modeling_llama"]


if DEVICE != "cuda":
    _empty = torch.empty

    def _empty_on_device(*args, device=None, **kwargs):
        """torch.empty with device="cuda" -> TEGULA_CONFORMANCE_DEVICE."""
        if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
            device = DEVICE
        return _empty(*args, device=device, **kwargs)

    torch.empty = _empty_on_device
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda device: (contextlib.nullcontext() if device is None or torch.device(device).type == "cpu"
                                        else _cuda_device(device))


standins.bare_packages(TREE, "auto_gptq")


def load(name):
    return importlib.import_module("auto_gptq.nn_modules." + name)


_ORIGINAL_CONFIGS = {}


def pin(tuner, *wants, **want):
    """Keeps the first config of the tuner's own list whose block sizes (and num_warps / num_stages) match want
    (or, given several dicts, the first match of each: the tuner then times them)."""
    configs = _ORIGINAL_CONFIGS.setdefault(id(tuner), list(tuner.configs))
    kept = []
    for w in wants or (want,):
        match = [c for c in configs if all((c.kwargs[k] if k in c.kwargs else getattr(c, k, None)) == v
                                           for k, v in w.items())]
        if not match:
            raise LookupError(f"no config of {tuner!r} has {w}")
        kept.append(match[0])
    tuner.configs = kept
    tuner.cache.clear()
    return kept


# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, F32 = torch.float16, torch.float32


def check(name, case, stages=("",)):
    comparisons_check(results, name, case, stages)


def quantized(K, N, bits, group_size, act_order=False):
    """Random packed-weight ingredients: q [K, N] in [0, 2^bits), zeros z [G, N] in [1, 2^bits), float16 scales
    s [G, N], g_idx [K]; and the float64 weight W [K, N] = (q - z[g]) * s[g]."""
    gs = K if group_size == -1 else group_size
    G = math.ceil(K / gs)
    maxq = 2 ** bits - 1
    with torch.device("cpu"):
        q = torch.randint(0, maxq + 1, (K, N), dtype=torch.int32)
        z = torch.randint(1, maxq + 1, (G, N), dtype=torch.int32)
        s = (torch.rand(G, N) * 0.02 + 0.002).half()
        g_idx = torch.arange(K, dtype=torch.int32) // gs
        if act_order:
            g_idx = g_idx[torch.randperm(K)]
        W = (q - z[g_idx.long()]).double() * s[g_idx.long()].double()
    return q, z, s, g_idx, W


def pack_layer(cls, bits, group_size, K, N, bias=True, trainable=False, act_order=False):
    """A QuantLinear of qlinear_triton / qlinear_tritonv2 packed by its own `pack` from an nn.Linear holding
    exactly (q - z) * s; returns it (on DEVICE) with the float64 weight [K, N] and bias."""
    q, z, s, g_idx, W = quantized(K, N, bits, group_size, act_order)
    with torch.device("cpu"):
        layer = cls(bits, group_size, K, N, bias, trainable=trainable)
        linear = torch.nn.Linear(K, N, bias=bias)
        linear.weight.data = W.T.float().contiguous()
        if bias:
            linear.bias.data = torch.randn(N).half().float()
        layer.pack(linear, s.float().T.contiguous(), z.float().T.contiguous(), g_idx)
    b = linear.bias.data.double() if bias else None
    return layer.to(DEVICE), W.to(DEVICE), (b.to(DEVICE) if bias else None)


def kernels_direct(bits, group_size, M, K, N, dtype, tol, act_order=False, fwd_blocks=(64, 64, 32),
                   bwd_blocks=(64, 32, 64), tuned=None):
    """kernels.quant_matmul_248 and transpose_quant_matmul_248 on packed tensors (from QuantLinear.pack).
    tuned: several forward block triples, which the library's autotuner prunes and times."""
    def run():
        k = load("triton_utils.kernels")
        qt = load("qlinear.qlinear_triton")
        fwd = [dict(BLOCK_SIZE_M=b[0], BLOCK_SIZE_N=b[1], BLOCK_SIZE_K=b[2]) for b in (tuned or [fwd_blocks])]
        pin(k.quant_matmul_248_kernel, *fwd)
        pin(k.transpose_quant_matmul_248_kernel, BLOCK_SIZE_M=bwd_blocks[0], BLOCK_SIZE_N=bwd_blocks[1],
            BLOCK_SIZE_K=bwd_blocks[2])
        layer, W, _ = pack_layer(qt.QuantLinear, bits, group_size, K, N, bias=False, act_order=act_order)
        x = torch.randn(M, K).to(dtype)
        y = k.quant_matmul_248(x, layer.qweight, layer.scales, layer.qzeros, layer.g_idx, bits, layer.maxq)
        dy = torch.randn(M, N).to(dtype)
        dx = k.transpose_quant_matmul_248(dy, layer.qweight, layer.scales, layer.qzeros, layer.g_idx, bits,
                                          layer.maxq)
        return_ = {"x @ W": (y, x.double() @ W, tol), "dy @ W^T": (dx, dy.double() @ W.T, tol)}
        if tuned:
            timed = getattr(k.quant_matmul_248_kernel, "configs_timings", {})
            return_[f"configs timed ({len(timed)} of {len(tuned)})"] = (
                torch.tensor(float(len(timed))), torch.tensor(float(len(tuned))), 0.0)
        yield return_
    return run


def qlinear_module(version, bits, group_size, M, K, N, act_order=False, trainable=False, fwd_blocks=(64, 64, 32),
                   bwd_blocks=(64, 32, 64)):
    """QuantLinear.forward (float16 in and out, plus bias); backward where trainable (v1) or always (v2)."""
    def run():
        if version == 1:
            k = load("triton_utils.kernels")
            cls = load("qlinear.qlinear_triton").QuantLinear
            pin(k.quant_matmul_248_kernel, BLOCK_SIZE_M=fwd_blocks[0], BLOCK_SIZE_N=fwd_blocks[1],
                BLOCK_SIZE_K=fwd_blocks[2])
            pin(k.transpose_quant_matmul_248_kernel, BLOCK_SIZE_M=bwd_blocks[0], BLOCK_SIZE_N=bwd_blocks[1],
                BLOCK_SIZE_K=bwd_blocks[2])
        else:
            d = load("triton_utils.dequant")
            cls = load("qlinear.qlinear_tritonv2").QuantLinear
            pin(d.dequant_kernel_248, X_BLOCK=256, num_warps=4)
        layer, W, b = pack_layer(cls, bits, group_size, K, N, bias=True, trainable=trainable, act_order=act_order)
        x = torch.randn(3, M, K).half()
        xg = x.clone().requires_grad_(trainable or version == 2)
        y = layer(xg)
        xr = x.double().requires_grad_()
        ref = xr @ W + b
        yield {"y": (y, ref, 5e-3)}
        if not xg.requires_grad:
            return
        dy = torch.randn(y.shape).half()
        y.backward(dy)
        ref.backward(dy.double())
        yield {"dx": (xg.grad, xr.grad, 5e-3)}
    return run


def dequant_exact(bits, group_size, K, N, act_order=False, x_block=256):
    """dequant248: the float16 weight, exactly ((q - z) * s in float32, rounded once to float16). x_block: one
    X_BLOCK, or several, which the stand-in package's autotuner times."""
    def run():
        d = load("triton_utils.dequant")
        qt2 = load("qlinear.qlinear_tritonv2")
        pin(d.dequant_kernel_248, *[dict(X_BLOCK=b, num_warps=4) for b in (x_block if isinstance(x_block, tuple)
                                                                           else (x_block,))])
        layer, W, _ = pack_layer(qt2.QuantLinear, bits, group_size, K, N, bias=False, act_order=act_order)
        got = d.dequant248(layer.qweight, layer.scales, layer.qzeros, layer.g_idx, bits)
        if got.dtype != F16:
            raise AssertionError(f"dequant248 gave {got.dtype}, expected float16")
        return_ = {"W": (got, W.half(), 0.0)}
        yield return_
    return run


def fused_mlp(bits, group_size, M, K, N, act_order=False, blocks=(64, 32, 64)):
    """FusedLlamaMLPForQuantizedModel.forward: down(silu(x @ W_gate) * (x @ W_up)), the first part in one kernel."""
    def run():
        f = load("fused_llama_mlp")
        k = load("triton_utils.kernels")
        qt = load("qlinear.qlinear_triton")
        pin(f.quant_fused_matmul_248_kernel, BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1], BLOCK_SIZE_K=blocks[2])
        pin(k.quant_matmul_248_kernel, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32)  # down_proj, N -> K
        gate, Wg, _ = pack_layer(qt.QuantLinear, bits, group_size, K, N, bias=False, act_order=act_order)
        up, Wu, _ = pack_layer(qt.QuantLinear, bits, group_size, K, N, bias=False, act_order=act_order)
        down, Wd, bd = pack_layer(qt.QuantLinear, bits, group_size, N, K, bias=True)
        mlp = f.FusedLlamaMLPForQuantizedModel(gate, down, up)
        x = (torch.randn(M, K) / 4).half()
        inner = mlp.triton_llama_mlp(x)
        y = mlp(x)
        xr = x.double()
        g = xr @ Wg
        ref_inner = g * torch.sigmoid(g) * (xr @ Wu)
        return_ = {"silu(x Wg) * (x Wu)": (inner, ref_inner, 5e-3),
                   "mlp": (y, ref_inner @ Wd + bd, 1e-2)}
        yield return_
    return run


# kernels.py directly (float32: tight; float16 as the library uses them). Forward pinned to (BLOCK_SIZE_M 64, N 64,
# K 32), the transposed kernel to (64, 32, 64): K a multiple of 64, N of 64.
check("quant_matmul_248 + transpose 4-bit g32 fp32 37x192x320",
      kernels_direct(4, 32, 37, 192, 320, F32, 1e-5))
check("quant_matmul_248 + transpose 2-bit g64 fp32 37x192x192 act-order",
      kernels_direct(2, 64, 37, 192, 192, F32, 1e-5, act_order=True))
check("quant_matmul_248 + transpose 8-bit g-1 fp32 5x192x320",
      kernels_direct(8, -1, 5, 192, 320, F32, 1e-5))
check("quant_matmul_248 + transpose 4-bit g32 fp16 37x192x192 act-order",
      kernels_direct(4, 32, 37, 192, 192, F16, 5e-3, act_order=True))
check("quant_matmul_248 + transpose 4-bit g32 fp32 600x192x192 (10 row blocks: groups of 8 and 2)",
      kernels_direct(4, 32, 600, 192, 192, F32, 1e-5))
# Tuned by the library's autotuner (custom_autotune.py: its pruner, a generator, then triton.testing.do_bench with
# quantiles for each config): (64, 64, 32) and (64, 128, 32), N a multiple of both.
check("quant_matmul_248 4-bit g32 fp32 37x192x384 tuned over 2 configs (library autotuner)",
      kernels_direct(4, 32, 37, 192, 384, F32, 1e-5, tuned=[(64, 64, 32), (64, 128, 32)]))
# K = 160, N = 96: forward (128, 32, 32), transposed (128, 32, 32).
check("quant_matmul_248 + transpose 8-bit g64 fp32 37x160x96 (blocks 128x32x32)",
      kernels_direct(8, 64, 37, 160, 96, F32, 1e-5, fwd_blocks=(128, 32, 32), bwd_blocks=(128, 32, 32)))

# qlinear_triton.QuantLinear (kernels.py): inference-only forward, and trainable forward + backward.
check("qlinear_triton QuantLinear 4-bit g32 inference 3x37x192->320",
      qlinear_module(1, 4, 32, 37, 192, 320), ("forward",))
check("qlinear_triton QuantLinear 2-bit g-1 inference 3x5x192->192",
      qlinear_module(1, 2, -1, 5, 192, 192), ("forward",))
check("qlinear_triton QuantLinear 8-bit g64 trainable act-order 3x37x192->192",
      qlinear_module(1, 8, 64, 37, 192, 192, act_order=True, trainable=True), ("forward", "backward"))
check("qlinear_triton QuantLinear 4-bit g32 trainable 3x37x160->96 (blocks 128x32x32)",
      qlinear_module(1, 4, 32, 37, 160, 96, trainable=True, fwd_blocks=(128, 32, 32), bwd_blocks=(128, 32, 32)),
      ("forward", "backward"))

# dequant.py (tritonv2): exact float16 weights, X_BLOCK 256 (K * N is a multiple of 1024: its loads are unmasked).
check("dequant248 2-bit g32 160x96", dequant_exact(2, 32, 160, 96))
check("dequant248 4-bit g64 act-order 192x320", dequant_exact(4, 64, 192, 320, act_order=True))
check("dequant248 8-bit g-1 96x160 (X_BLOCK 1024)", dequant_exact(8, -1, 96, 160, x_block=1024))
check("dequant248 4-bit g32 192x160 tuned over X_BLOCK 128 / 512", dequant_exact(4, 32, 192, 160, x_block=(128, 512)))
check("qlinear_tritonv2 QuantLinear 4-bit g32 3x37x192->320",
      qlinear_module(2, 4, 32, 37, 192, 320), ("forward", "backward"))
check("qlinear_tritonv2 QuantLinear 8-bit g64 act-order 3x5x160->96",
      qlinear_module(2, 8, 64, 5, 160, 96, act_order=True), ("forward", "backward"))

# fused_llama_mlp.py: (64, 32, 64) blocks, K 192 (a multiple of 64), N 160 / 96 (multiples of 32).
check("FusedLlamaMLP 4-bit g32 37x192->160", fused_mlp(4, 32, 37, 192, 160))
check("FusedLlamaMLP 2-bit g64 act-order 5x192->96", fused_mlp(2, 64, 5, 192, 96, act_order=True))
check("FusedLlamaMLP 8-bit g-1 600x192->96 (10 row blocks)", fused_mlp(8, -1, 600, 192, 96))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:82s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} AutoGPTQ cases match the references")
