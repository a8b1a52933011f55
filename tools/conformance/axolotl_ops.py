"""Axolotl's Triton kernels on Tegula, through the conformance shim's `triton` package, forward and backward, against
float64 references written here from the definitions (the library's own torch paths, run in float64, where it has
them).

axolotl-ai-cloud/axolotl, src/axolotl/kernels. Its main branch holds only part of what the library's branches have
written there, so the harness covers every file it finds in the tree it is given, and is run on six trees:

  main        067b021 (2026-07-24)  swiglu.py, geglu.py, lora.py, dora.py, quantize.py, rms_norm_gated.py,
                                    gemma4_fused_rope.py (op_registry.py, utils.py)
  vendor-moe  dd85358 (2025-09-25)  moe/indices, moe/tt_cg_gemm, moe/tt_mg_gemm (TorchTitan's MoE kernels)
  feat/memft  56b44ba (2026-06-04)  memft_xentropy.py (PR 3703, open)
  PR 3721     5f7c90b (2026-06-29)  bf16_fused_ce.py, lm_head_ce.py, fp8_*.py, nvfp4_*.py (none run: see below)
  PR 1601     7430615 (2024-05-08)  efficient_cross_entropy_loss.py
  PR 2324     7794e18 (2025-02-17)  silu.py, gelu.py (removed by the PR's next commit)

Result on the CPU backend (2026-12-07, two cores, empty Tegula cache): main 109 of 109 lines match (24 s);
vendor-moe with -k moe 21 of 23 (2 fail by the library's bugs, below; 26 s); feat/memft with -k memft 12 of
12; PR 1601 with -k efficient_ce 6 of 8 (2 by the library's bug); PR 2324 with -k silu -k gelu 16 of 16 (each
under 10 s). No divergence from Triton was found, so nothing of Tegula changed. The first two library bugs below
were confirmed by writing the library's own rule into the reference (a chunk's last row taking
targ[token_end_idx + 1]; the dW kernel's floor-divided tiling, simulated tile by tile): Tegula's results then
match within the tolerances; the third is the library's own ValueError. PR 3721 adds no Triton kernel that can
run here (below). Every tree gives the same lines under TEGULA_DEBUG=1, which checks each load and store against
its array (and each descriptor load against its shape). benchmarks/results/2026-12-07-cpu-conformance-axolotl.txt
has the commands.

Cases (inputs seeded per case by the CRC of its name, so -k reproduces a case's data; random data, sizes that are
not powers of two and masked tails wherever the kernels allow; a case's forward and backward are a line each):

  - swiglu.py / geglu.py: swiglu_forward / geglu_forward and the in-place swiglu_backward / geglu_backward (h,
    dgate, dup), fp32, fp16, bf16, 1 to 66300 elements against blocks of 1024;
  - lora.py through its entry points on PEFT-shaped modules (base_layer, lora_A / lora_B ModuleDicts, scaling,
    lora_dropout, lora_magnitude_vector): apply_lora_mlp_swiglu and apply_lora_mlp_geglu (LoRA_MLP, whose forward
    and backward run the SwiGLU / GEGLU kernels), apply_lora_qkv (LoRA_QKV), apply_lora_qk (LoRA_QK),
    apply_lora_o and apply_lora_linear (LoRA_O), apply_lora_gdn_in_proj (LoRA_FusedProj); plain, with base and
    LoRA biases, with a fixed dropout mask, and with DoRA (whose magnitude scale runs dora.py's kernel); fp32 and
    bf16; the output and the gradients of X, every A, B, LoRA bias and magnitude. Without DoRA, QKV / QK / O /
    FusedProj run torch matmuls only (no Triton kernel): their lines check the library's autograd around them;
  - dora.py: triton_dora_scale directly (rank 1 to 16, in_features up to 2500 over 2048-wide tiles), fp32, bf16;
  - rms_norm_gated.py: FusedRMSNormGatedFunction forward and backward (dX, dG, dW) with offset 0 and 1, fp32,
    bf16, over 2 and 132 "multiprocessors" (the backward's persistent grid);
  - gemma4_fused_rope.py: fused_rms_norm_rope (full and partial rotary, cos / sin broadcast over the batch,
    unit_offset) and fused_rms_norm_noscale, forward and backward through their torch.library triton_ops, fp32,
    bf16; the backward kernel runs under its autotuner (12 configs);
  - memft_xentropy.py: memft_linear_cross_entropy (loss, d hidden, d weight) with ignored and out-of-range labels,
    vocabularies up to 131075 over the kernel's 8192-wide blocks, token chunks with a tail, fp32, fp16, bf16; the
    loss threshold is put in the widest gap between the tokens' float64 losses near their median, so that no
    token's rounding moves it across;
  - efficient_cross_entropy_loss.py: FusedCrossEntropyLossFunction (loss, d input, d weight), mean and sum, with
    ignored targets, fp32 and bf16;
  - silu.py / gelu.py: the forward and in-place backward kernels, fp32, fp16, bf16;
  - moe/indices: generate_permute_indices (and fill_indices_wrapper over fewer programs than experts) against the
    library's own CPU path (use_cpu=True) and the definition, exactly;
  - moe/tt_cg_gemm: cg_grouped_gemm_forward (persistent), cg_grouped_gemm_forward_dynamic (autotuned), and
    cg_backward's ContiguousGroupedGEMM forward and backward (dX autotuned, dW), against cg_reference's
    pytorch_reference run in float64;
  - moe/tt_mg_gemm: grouped_gemm_forward (tensor descriptors made in the kernel, groups of 0 rows), the dx and
    dw wrappers and GroupedGemmMg forward and backward, all under the library's autotuner and pruning (K a
    multiple of 64: the pruning keeps only BLOCK_K that divide K).

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (the kernels
compute in float32 and round their inputs and outputs to the dtype; torch's own bf16 matmuls around them round
too); integers exactly. A loss and its gradients are compared the same way. With TEGULA_CONFORMANCE_DEVICE=cuda the
grouped GEMMs' float32 products take TF32, as under Triton (tl.dot's default precision; the CPU backend has none),
so their float32 tolerance there is 1e-3 (TF32 rounds each operand to 11 significant bits).

Stand-ins, none of them a Triton kernel or reached from one (the package and its modules' imports of what a CPU
machine lacks):

  - the axolotl packages import bare (axolotl/__init__.py imports the whole trainer); axolotl.utils.logging is a
    module with get_logger = logging.getLogger (op_registry.py's only import of axolotl);
  - liger_kernel.ops.utils (calculate_settings, compare_version, ensure_contiguous, torch_to_triton_dtype) and
    liger_kernel.utils.is_npu_available, as Liger-Kernel defines them (compare_version reads the shim's
    triton.__version__); rms_norm_gated.py and gemma4_fused_rope.py import them;
  - bitsandbytes and bitsandbytes.functional: QuantState (a class no case makes), get_ptr and the CUDA dequantizers
    of `lib` (placeholders that raise): quantize.py's NF4 path calls bitsandbytes' CUDA library, not Triton, and no
    case quantizes;
  - while the library's host code runs: device="cuda" allocations (torch.empty / zeros / full) go to the CPU and
    Tensor.is_cuda says yes for CPU tensors (lora.py takes dora.py's kernel only `if W.is_cuda`);
  - torch.cuda.get_device_properties: multi_processor_count 2 (this machine's threads) or 132 (an H100's), per
    case; torch.cuda.current_device 0;
  - moe/tt_mg_gemm only, while its wrappers run: CudaUtils.verify_tma() and get_num_sms() are the library's own,
    reading driver.active.get_current_target() (a CUDA sm_90 target here), torch.cuda.is_available() (True) and
    get_device_capability() ((9, 0)); kernels still compile for and run on the CPU backend, and the pruning reads
    the CPU driver's real properties (2 threads, 1 MiB of L2 as shared memory).

The LoRA cases with DoRA also count the calls of dora.triton_dora_scale (a counting wrapper while the forward runs;
lora.py imports it at each call), so that a line says the kernel ran rather than lora.py's torch fallback.

Not covered:

  - relu2.py and glm4_moe_lite.py: no such file in any commit or branch of the repository snapshot;
  - quantize.py: no Triton kernel (its NF4 dequantizer is bitsandbytes' CUDA library through ctypes, its FP8 one
    torch);
  - bf16_fused_ce.py, lm_head_ce.py, fp8_fused_ce.py, fp8_lm_head.py, nvfp4_fused_ce.py (PR 3721): no Triton
    kernel (torch, torch._scaled_mm and torchao);
  - nvfp4_rmsnorm.py (PR 3721): packs its FP4 values with MSLK's convert_fp32_to_fp4_packed
    (mslk.quantize.triton.fp4_quantize, mslk-cuda 1.1.0), PTX inline assembly (cvt.rn.satfinite.e2m1x2.f32,
    Blackwell only), for Blackwell's torch._scaled_mm;
  - lora.py's LoRA_Embedding (torch only) and the NF4 / FP8 base weights (bitsandbytes CUDA, torchao);
  - blackwell/ (a branch): CuTe DSL kernels, not Triton.

Library bugs (lines marked FAIL (library), which the exit status accepts):

  - efficient_cross_entropy_loss.py shifts the targets by one inside each chunk, and gives a chunk's last row
    targ[token_end_idx + 1] where the next row's target is targ[token_end_idx]: with n_loop_iters > 1 each chunk
    boundary's loss and gradient use the wrong target;
  - cg_backward.py's _kernel_cg_backward_dw numbers its tiles with floor divisions ((N * K) // (BLOCK_N *
    BLOCK_K), K // BLOCK_K) under a grid of ceiling divisions, so a K that is not a multiple of 32 (or an N not a
    multiple of 128 above 128) leaves weight-gradient tiles unwritten or given to the wrong expert;
  - GroupedGemmMg (tt_mg_gemm) computes each group's output from its own N // G rows of w, but its backward
    passes the whole w to grouped_gemm_dx_tma, which refuses (N of grad_output != N of w) for G > 1.

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/axolotl_ops.py <axolotl tree> \\
        [-k SUBSTRING ...] [--json out.json]

where the tree holds src/axolotl/kernels (a `git archive <commit> src/axolotl/kernels` will do); -k may be given
more than once (a case runs when its name holds any of them). On a branch's tree, -k picks the branch's own files:
its lora.py and activations are older versions of main's. Prints one line per case and stage
(ok / FAIL, the largest absolute difference from the reference, each output's difference or the first line of the
error) and the totals.
"""

import argparse
import contextlib
import functools
import importlib.metadata
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
_parser.add_argument("source", type=pathlib.Path, help="an axolotl tree (a directory holding src/axolotl/kernels)")
_parser.add_argument("-k", dest="only", action="append", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve() / "src"
KERNELS = SRC / "axolotl" / "kernels"
if not KERNELS.is_dir():
    sys.exit(f"{ARGS.source} holds no src/axolotl/kernels")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from comparisons import check, exact, report  # noqa: E402
import standins  # noqa: E402
from standins import module  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------


def placeholder(name):
    return standins.placeholder(name, "axolotl_ops.py")


# axolotl.utils.logging (op_registry.py, lora.py's siblings)
module("axolotl.utils", __path__=[])
module("axolotl.utils.logging", get_logger=logging.getLogger)


# liger_kernel.ops.utils and liger_kernel.utils, as Liger-Kernel defines them.
def calculate_settings(n):
    MAX_FUSED_SIZE = 65536
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"Cannot launch Triton kernel since n = {n} exceeds the recommended Triton blocksize "
                           f"= {MAX_FUSED_SIZE}.")
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


def compare_version(package, op, target):
    from packaging.version import Version

    have = triton.__version__ if package == "triton" else importlib.metadata.version(package)
    return op(Version(have), Version(target))


def ensure_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        def maybe_to_contiguous(x):
            return x.contiguous() if isinstance(x, torch.Tensor) else x
        args = [maybe_to_contiguous(arg) for arg in args]
        kwargs = {k: maybe_to_contiguous(v) for k, v in kwargs.items()}
        return fn(ctx, *args, **kwargs)
    return wrapper


module("liger_kernel", __path__=[])
module("liger_kernel.ops", __path__=[])
module("liger_kernel.ops.utils", calculate_settings=calculate_settings, compare_version=compare_version,
       ensure_contiguous=ensure_contiguous,
       torch_to_triton_dtype={torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32})
module("liger_kernel.utils", is_npu_available=lambda: False)


# bitsandbytes (quantize.py, lora.py): no case quantizes.
class QuantState:
    """bitsandbytes.functional.QuantState's name only (type hints; no case makes one)."""


_bnb_lib = types.SimpleNamespace(**{name: placeholder(f"bitsandbytes.functional.lib.{name}") for name in (
    "cdequantize_blockwise_fp32", "cdequantize_blockwise_fp16_nf4", "cdequantize_blockwise_bf16_nf4",
    "cdequantize_blockwise_fp32_nf4")})
_bnb_functional = module("bitsandbytes.functional", QuantState=QuantState, get_ptr=placeholder("get_ptr"),
                         lib=_bnb_lib, dequantize_4bit=placeholder("dequantize_4bit"))
module("bitsandbytes", __path__=[], functional=_bnb_functional, __version__="0.45.0")

# torch.cuda's device queries without a GPU.
GPU = {"sms": 2}
if DEVICE != "cuda":
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        multi_processor_count=GPU["sms"], name="cpu")
    torch.cuda.current_device = lambda: 0

_REAL_IS_CUDA = torch.Tensor.is_cuda


@contextlib.contextmanager
def cuda_claims():
    """While the library's host code runs: device="cuda" allocations on DEVICE, Tensor.is_cuda true there.
    Patched functions rather than a TorchFunctionMode, which a custom op's body and autograd's backward do not
    see."""
    if DEVICE == "cuda":
        yield
        return
    real = {name: getattr(torch, name) for name in ("empty", "zeros", "full", "ones")}

    def on_device(fn):
        return lambda *a, **k: fn(*a, **{**k, "device": DEVICE} if standins.is_cuda(k.get("device")) else k)

    for name, fn in real.items():
        setattr(torch, name, on_device(fn))
    torch.Tensor.is_cuda = property(lambda self: self.device.type == DEVICE or _REAL_IS_CUDA.__get__(self))
    try:
        yield
    finally:
        torch.Tensor.is_cuda = _REAL_IS_CUDA
        for name, fn in real.items():
            setattr(torch, name, fn)


@contextlib.contextmanager
def hopper_claims():
    """tt_mg_gemm's wrappers: CudaUtils asks the driver's target, torch.cuda.is_available and the capability."""
    if DEVICE == "cuda":
        yield
        return
    from triton.runtime import driver

    active = driver.active
    saved = (torch.cuda.is_available, torch.cuda.get_device_capability)
    active.get_current_target = lambda: types.SimpleNamespace(backend="cuda", arch=90, warp_size=32)
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    try:
        with cuda_claims():
            yield
    finally:
        del active.get_current_target
        torch.cuda.is_available, torch.cuda.get_device_capability = saved


# --- loading -------------------------------------------------------------------------------------------------------

standins.bare_packages(SRC, "axolotl")
LOADED, MISSING = {}, []


def have(name):
    """Whether the tree has axolotl/kernels/<name>.py (else its cases do not run)."""
    if KERNELS.joinpath(*name.split(".")).with_suffix(".py").is_file():
        return True
    MISSING.append(name)
    return False


def need(name):
    """axolotl.kernels.<name>, imported when a case first runs (an error importing it is that case's line)."""
    if name not in LOADED:
        mod = __import__(f"axolotl.kernels.{name}", fromlist=["_"])
        assert pathlib.Path(mod.__file__).is_relative_to(KERNELS), f"another copy: {mod.__file__}"
        LOADED[name] = mod
    return LOADED[name]


def wanted(name):
    return ARGS.only is None or any(k in name for k in ARGS.only)


F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
DOT_TOL = {**TOL, F32: 1e-3} if DEVICE == "cuda" else TOL  # the grouped GEMMs' tl.dot: TF32 on a GPU
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
FB = ("forward", "backward")
results = []
LIBRARY = {}


def case(name, run, stages=("run",), sms=2, library=None):
    if not wanted(name):
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    GPU["sms"] = sms
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


# --- GLU and plain activations -------------------------------------------------------------------------------------

def silu64(x):
    return x * torch.sigmoid(x)


def gelu64(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def glu_case(name, kind, shape, dtype):
    """swiglu / geglu forward, then the in-place backward (h, d gate, d up) on copies."""
    act = silu64 if kind == "swiglu" else gelu64

    def run():
        fwd, bwd = getattr(need(name), f"{kind}_forward"), getattr(need(name), f"{kind}_backward")
        gate, up = rnd(*shape, dtype=dtype, scale=2), rnd(*shape, dtype=dtype)
        out = fwd(gate, up)
        g, u = d64(gate, True), d64(up, True)
        want = act(g) * u
        yield {"out": (out, want, TOL[dtype]), "dtype": exact(torch.tensor(out.dtype == dtype), torch.tensor(True))}
        grad = rnd(*shape, dtype=dtype)
        h, dg, du = bwd(grad.clone(), gate.clone(), up.clone())
        wg, wu = torch.autograd.grad(want, [g, u], d64(grad))
        yield {"h": (h, want, TOL[dtype]), "dgate": (dg, wg, TOL[dtype]), "dup": (du, wu, TOL[dtype])}
    return run


def act_case(name, kind, shape, dtype):
    """silu / gelu forward and the in-place backward (h, d x)."""
    act = silu64 if kind == "silu" else gelu64

    def run():
        fwd, bwd = getattr(need(name), f"{kind}_forward"), getattr(need(name), f"{kind}_backward")
        x = rnd(*shape, dtype=dtype, scale=2)
        out = fwd(x)
        xr = d64(x, True)
        want = act(xr)
        yield {"out": (out, want, TOL[dtype])}
        grad = rnd(*shape, dtype=dtype)
        h, dx = bwd(grad.clone(), x.clone())
        (wx,) = torch.autograd.grad(want, [xr], d64(grad))
        yield {"h": (h, want, TOL[dtype]), "dx": (dx, wx, TOL[dtype])}
    return run


# --- LoRA ----------------------------------------------------------------------------------------------------------

class FixedDropout(torch.nn.Module):
    """A dropout module whose mask is fixed by the case (so the reference applies the same one)."""

    def __init__(self, mask, p):
        super().__init__()
        self.mask, self.p = mask, p

    def forward(self, x):
        return x * self.mask.to(x.dtype) / (1 - self.p)


class Magnitude(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = torch.nn.Parameter(weight)


class LoraLinear(torch.nn.Module):
    """The attributes of a PEFT LoRA linear layer that get_lora_parameters reads."""

    def __init__(self, n_in, n_out, rank, s, dtype, bias=False, lora_bias=False, dora=False, dropout=None):
        super().__init__()
        self.base_layer = torch.nn.Linear(n_in, n_out, bias=bias, dtype=dtype)
        self.base_layer.weight.data = rnd(n_out, n_in, dtype=dtype, scale=n_in ** -0.5)
        self.base_layer.weight.requires_grad_(False)
        if bias:
            self.base_layer.bias.data = rnd(n_out, dtype=dtype, scale=0.5)
            self.base_layer.bias.requires_grad_(False)
        a = torch.nn.Linear(n_in, rank, bias=False, dtype=dtype)
        a.weight.data = rnd(rank, n_in, dtype=dtype, scale=n_in ** -0.5)
        b = torch.nn.Linear(rank, n_out, bias=lora_bias, dtype=dtype)
        b.weight.data = rnd(n_out, rank, dtype=dtype, scale=rank ** -0.5)  # not zero, as after training
        if lora_bias:
            b.bias.data = rnd(n_out, dtype=dtype, scale=0.5)
        self.lora_A = torch.nn.ModuleDict({"default": a})
        self.lora_B = torch.nn.ModuleDict({"default": b})
        self.scaling = {"default": s}
        self.active_adapter = "default"
        self.disable_adapters = False
        self.merged = False
        self.lora_dropout = torch.nn.ModuleDict({"default": dropout if dropout is not None else torch.nn.Identity()})
        mag = (torch.rand(n_out, dtype=F64) + 0.5).to(dtype) if dora else None
        self.lora_magnitude_vector = torch.nn.ModuleDict({"default": Magnitude(mag)} if dora else {})

    def leaves(self):
        """The trainable tensors (A, B, LoRA bias, magnitude) by name."""
        out = {"A": self.lora_A["default"].weight, "B": self.lora_B["default"].weight}
        if self.lora_B["default"].bias is not None:
            out["lora_bias"] = self.lora_B["default"].bias
        if len(self.lora_magnitude_vector):
            out["magnitude"] = self.lora_magnitude_vector["default"].weight
        return out

    def ref(self, x, x_lora, p):
        """The layer in float64 from its definition: x W^T + s (x_lora A^T) B^T + s lora_bias + b; DoRA scales
        the sum before the base bias by magnitude / ||W + s B A|| (row norms, not differentiated, as PEFT)."""
        W = d64(self.base_layer.weight)
        s = self.scaling["default"]
        y = x @ W.t() + s * (x_lora @ p["A"].t()) @ p["B"].t()
        if "lora_bias" in p:
            y = y + s * p["lora_bias"]
        if "magnitude" in p:
            norm = torch.linalg.norm(W + s * d64(p["B"]) @ d64(p["A"]), dim=1)
            y = (p["magnitude"] / norm) * y
        if self.base_layer.bias is not None:
            y = y + d64(self.base_layer.bias)
        return y


class Holder(torch.nn.Module):
    pass


def lora_forward(kind):
    lora = need("lora")

    def forward(m, X, names):
        if kind == "mlp_swiglu":
            outs = (lora.apply_lora_mlp_swiglu(m, X),)
        elif kind == "mlp_geglu":
            outs = (lora.apply_lora_mlp_geglu(m, X),)
        elif kind == "qkv":
            outs = lora.apply_lora_qkv(m, X)
        elif kind == "qk":
            outs = lora.apply_lora_qk(m, X)
        elif kind == "o":
            outs = (lora.apply_lora_o(m, X),)
        elif kind == "linear":
            outs = (lora.apply_lora_linear(m.o_proj, X),)
        else:
            outs = tuple(lora.apply_lora_gdn_in_proj(m, X, tuple(names)).values())
        return outs
    return forward


def lora_case(kind, B, S, H, I, rank, dtype, bias=False, lora_bias=False, dora=False, dropout=0.0):
    """kind: mlp_swiglu, mlp_geglu, qkv, qk, o, linear, gdn. Forward through the library's apply_* entry point,
    backward through its autograd Function; the reference is the same layers in float64 autograd."""

    def run():
        forward = lora_forward(kind)
        mask = (torch.rand(B, S, H) >= dropout) if dropout else None
        drop = FixedDropout(mask, dropout) if dropout else None
        mk = lambda n_in, n_out, s: LoraLinear(n_in, n_out, rank, s, dtype, bias, lora_bias, dora, drop)  # noqa
        m = Holder()
        if kind.startswith("mlp"):
            names = {"gate_proj": (H, I, 2.0), "up_proj": (H, I, 0.5), "down_proj": (I, H, 1.0)}
        elif kind in ("qkv", "qk"):
            names = {"q_proj": (H, I, 2.0), "k_proj": (H, I // 2, 0.5), "v_proj": (H, I // 2, 1.0)}
            if kind == "qk":
                del names["v_proj"]
        elif kind == "gdn":
            names = {"in_proj_qkvz": (H, I, 2.0), "in_proj_ba": (H, 6, 0.5), "in_proj_x": (H, I // 3, 1.0)}
        else:
            names = {"o_proj": (H, I, 2.0)}
        for name, (n_in, n_out, s) in names.items():
            setattr(m, name, mk(n_in, n_out, s))
        X = rnd(B, S, H, dtype=dtype).requires_grad_()
        params = {f"{n}.{k}": v for n in names for k, v in getattr(m, n).leaves().items()}
        for v in params.values():
            v.requires_grad_()
        calls = []
        if dora:  # count dora.py's kernel launches (lora.py imports triton_dora_scale from it at each call)
            dmod = need("dora")
            real_scale = dmod.triton_dora_scale
            dmod.triton_dora_scale = lambda *a, **k: calls.append(1) or real_scale(*a, **k)
        try:
            outs = forward(m, X, names)
        finally:
            if dora:
                dmod.triton_dora_scale = real_scale
        # reference
        Xr = d64(X, True)
        Xl = Xr * mask.double() / (1 - dropout) if dropout else Xr
        pr = {k: d64(v, True) for k, v in params.items()}
        per = lambda n: {k.split(".", 1)[1]: v for k, v in pr.items() if k.startswith(n + ".")}  # noqa: E731
        if kind.startswith("mlp"):
            act = silu64 if kind == "mlp_swiglu" else gelu64
            g = m.gate_proj.ref(Xr, Xl, per("gate_proj"))
            u = m.up_proj.ref(Xr, Xl, per("up_proj"))
            h = act(g) * u
            wants = (m.down_proj.ref(h, h, per("down_proj")),)
        elif kind == "qk":
            k = m.k_proj.ref(Xr, Xl, per("k_proj"))
            wants = (m.q_proj.ref(Xr, Xl, per("q_proj")), k, k)
        else:
            wants = tuple(getattr(m, n).ref(Xr, Xl, per(n)) for n in names)
        tol = TOL[dtype]
        yield {**{f"out{i}": (o, w, tol) for i, (o, w) in enumerate(zip(outs, wants))},
               **({"dora kernel calls": exact(torch.tensor(len(calls)), torch.tensor(len(names)))} if dora else {})}
        grads = [rnd(*o.shape, dtype=dtype) for o in outs]
        # (qk returns K twice, as K and V: autograd sums both gradients into dK, as in the library's use)
        got = torch.autograd.grad(outs, [X, *params.values()], grads)
        want = torch.autograd.grad(wants, [Xr, *pr.values()], [d64(g) for g in grads])
        yield {name: (g, w, tol) for name, g, w in zip(["dX", *params], got, want)}
    return run


def dora_case(n_out, n_in, rank, s, dtype):

    def run():
        dora = need("dora")
        W = rnd(n_out, n_in, dtype=dtype, scale=n_in ** -0.5)
        A = rnd(rank, n_in, dtype=dtype, scale=n_in ** -0.5)
        Bm = rnd(n_out, rank, dtype=dtype, scale=rank ** -0.5)
        mag = (torch.rand(n_out, dtype=F64) + 0.5).to(dtype)
        # dora.py passes W_quant=None through quantize.dequantize, which returns W itself
        got = dora.triton_dora_scale(W.t().contiguous().t(), None, A, Bm, s, mag, dtype)
        want = d64(mag) / torch.sqrt((d64(W) + s * d64(Bm) @ d64(A)).pow(2).sum(1) + 1e-12)
        yield {"scale": (got, want, TOL[dtype])}
    return run


# --- norms -----------------------------------------------------------------------------------------------------------

def rms_gated_case(shape, dtype, offset):

    def run():
        mod = need("rms_norm_gated")
        H = shape[-1]
        X, G = rnd(*shape, dtype=dtype), rnd(*shape, dtype=dtype, scale=2)
        W = rnd(H, dtype=dtype, scale=0.5)
        Xg, Gg, Wg = (t.clone().requires_grad_() for t in (X, G, W))
        y = mod.FusedRMSNormGatedFunction.apply(Xg, Gg, Wg, 1e-6, offset)
        xr, gr, wr = d64(X, True), d64(G, True), d64(W, True)
        want = (wr + offset) * xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * silu64(gr)
        tol = TOL[dtype]
        yield {"y": (y, want, tol)}
        dy = rnd(*shape, dtype=dtype)
        got = torch.autograd.grad(y, [Xg, Gg, Wg], dy)
        ref = torch.autograd.grad(want, [xr, gr, wr], d64(dy))
        yield {"dX": (got[0], ref[0], tol), "dG": (got[1], ref[1], tol), "dW": (got[2], ref[2], tol)}
    return run


def rope_ref(x, w, cos, sin, eps, unit_offset):
    """RMSNorm over D, times w (or w + 1), then RoPE (rotate_half) on the first n_rot columns."""
    n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if w is not None:
        n = n * ((w + 1) if unit_offset else w)
    r = cos.shape[-1]
    rot, rest = n[..., :r], n[..., r:]
    x1, x2 = rot[..., : r // 2], rot[..., r // 2:]
    c, s = cos[:, :, None, :], sin[:, :, None, :]
    return torch.cat([rot * c + torch.cat([-x2, x1], -1) * s, rest], -1)


def rope_case(B, S, H, D, n_rot, dtype, unit_offset=False, cos_batch=None):

    def run():
        mod = need("gemma4_fused_rope")
        x = rnd(B, S, H, D, dtype=dtype)
        w = rnd(D, dtype=dtype, scale=0.5)
        ang = torch.rand(cos_batch or B, S, n_rot, dtype=F64) * 6
        cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        y = mod.fused_rms_norm_rope(xg, wg, cos, sin, 1e-6, unit_offset)
        xr, wr = d64(x, True), d64(w, True)
        c, s = d64(cos).expand(B, S, n_rot), d64(sin).expand(B, S, n_rot)
        want = rope_ref(xr, wr, c, s, 1e-6, unit_offset)
        tol = TOL[dtype]
        yield {"y": (y, want, tol)}
        dy = rnd(B, S, H, D, dtype=dtype)
        gx, gw = torch.autograd.grad(y, [xg, wg], dy)
        rx, rw = torch.autograd.grad(want, [xr, wr], d64(dy))
        yield {"dX": (gx, rx, tol), "dW": (gw, rw, tol)}
    return run


def noscale_case(shape, dtype):

    def run():
        mod = need("gemma4_fused_rope")
        x = rnd(*shape, dtype=dtype, scale=3)
        xg = x.clone().requires_grad_()
        y = mod.fused_rms_norm_noscale(xg, 1e-6)
        xr = d64(x, True)
        want = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6)
        yield {"y": (y, want, TOL[dtype])}
        dy = rnd(*shape, dtype=dtype)
        (gx,) = torch.autograd.grad(y, [xg], dy)
        (rx,) = torch.autograd.grad(want, [xr], d64(dy))
        yield {"dX": (gx, rx, TOL[dtype])}
    return run


# --- cross entropies -------------------------------------------------------------------------------------------------

def memft_case(N, Hd, V, dtype, chunk_tokens=None, ignored=0, out_of_range=0):

    def run():
        mod = need("memft_xentropy")
        hidden = rnd(N, Hd, dtype=dtype)
        weight = rnd(V, Hd, dtype=dtype, scale=2 * Hd ** -0.5)
        labels = torch.randint(0, V, (N,))
        pick = torch.randperm(N)
        labels[pick[:ignored]] = -100
        labels[pick[ignored:ignored + out_of_range]] = torch.tensor([-7, V, V + 5])[:out_of_range]
        hr, wr = d64(hidden, True), d64(weight, True)
        valid = (labels >= 0) & (labels < V)
        logits = hr @ wr.t()
        ce = torch.logsumexp(logits, -1) - logits.gather(1, labels.clamp(0, V - 1)[:, None])[:, 0]
        # the threshold in the widest gap between the valid tokens' losses near their median, so that rounding
        # cannot move a token across it
        vals = ce.detach()[valid].sort().values
        mid = len(vals) // 2
        lo, hi = max(1, mid - len(vals) // 4), min(len(vals) - 1, mid + len(vals) // 4)
        gaps = vals[lo:hi + 1] - vals[lo - 1:hi]
        j = int(gaps.argmax()) + lo
        crit = float((vals[j - 1] + vals[j]) / 2)
        w = ((ce.detach() > crit) & valid).double()
        want = (w * torch.where(valid, ce, 0.0)).sum() / (w.sum() + 1e-8)
        hg, wg = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = mod.memft_linear_cross_entropy(hg, wg, labels, critical_loss=crit, chunk_tokens=chunk_tokens)
        tol = TOL[dtype]
        yield {"loss": (loss, want, tol)}
        gh, gw = torch.autograd.grad(loss * 1.5, [hg, wg])
        rh, rw = torch.autograd.grad(want * 1.5, [hr, wr])
        yield {"dhidden": (gh, rh, tol), "dweight": (gw, rw, tol)}
    return run


def cel_case(N, Hd, V, dtype, n_loop_iters=1, reduction="mean", ignored=0):

    def run():
        mod = need("efficient_cross_entropy_loss")
        x = rnd(N, Hd, dtype=dtype)
        w = rnd(V, Hd, dtype=dtype, scale=2 * Hd ** -0.5)
        targ = torch.randint(0, V, (N,))
        targ[torch.randperm(N)[:ignored]] = -100
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        loss = mod.FusedCrossEntropyLossFunction.apply(xg, wg, targ, n_loop_iters, -100, reduction)
        # row r predicts targ[r + 1]; the last row has none; a mean divides by the count of targ != -100
        xr, wr = d64(x, True), d64(w, True)
        shifted = torch.cat([targ[1:], torch.tensor([-100])])
        keep = shifted != -100
        logits = xr @ wr.t()
        ce = torch.logsumexp(logits, -1) - logits.gather(1, shifted.clamp(0)[:, None])[:, 0]
        total = torch.where(keep, ce, 0.0).sum()
        want = total / (targ != -100).sum() if reduction == "mean" else total
        tol = TOL[dtype]
        yield {"loss": (loss, want, tol)}
        gx, gw = torch.autograd.grad(loss, [xg, wg])
        rx, rw = torch.autograd.grad(want, [xr, wr])
        yield {"dx": (gx, rx, tol), "dw": (gw, rw, tol)}
    return run


# --- MoE -------------------------------------------------------------------------------------------------------------

def indices_ref(tokens, experts, ranks, max_len, alignment):
    """Expert e's rows, in rank order, each rank's run of its tokens' source indices, at the expert's aligned
    offset; -1 elsewhere."""
    tokens = tokens.tolist()
    starts = [sum(tokens[:i]) for i in range(len(tokens))]
    out = [-1] * max_len
    write = 0
    for e in range(experts):
        total = sum(tokens[r * experts + e] for r in range(ranks))
        size = -(-max(total, alignment) // alignment) * alignment
        pos = write
        for r in range(ranks):
            i = r * experts + e
            for t in range(tokens[i]):
                if pos + t < max_len:
                    out[pos + t] = starts[i] + t
            pos += tokens[i]
        write += size
    return torch.tensor(out, dtype=torch.int32)


def indices_case(experts, ranks, max_tokens, alignment, max_blocks=None):

    def run():
        mod = need("moe.indices.indices")
        tokens = torch.randint(0, max_tokens + 1, (experts * ranks,), dtype=torch.int32)
        tokens[0] = 0
        tokens[-1] = max_tokens
        totals = tokens.view(ranks, -1).sum(0).clamp_min(alignment)
        max_len = int(((totals + alignment - 1) // alignment * alignment).sum())
        if max_blocks is None:
            got, m_sizes, m_offsets = mod.generate_permute_indices(tokens, experts, ranks, max_len, alignment)
        else:
            starts = torch.cumsum(tokens, 0) - tokens
            sizes = ((totals + alignment - 1) // alignment * alignment).to(torch.int32)
            got = mod.fill_indices_wrapper(tokens, starts, torch.cumsum(sizes, 0) - sizes, experts, ranks, max_len,
                                           block_size=64, max_blocks=max_blocks)
            m_sizes = sizes
        cpu, cpu_sizes, _ = mod.generate_permute_indices(tokens, experts, ranks, max_len, alignment, use_cpu=True)
        yield {"indices": exact(got, indices_ref(tokens, experts, ranks, max_len, alignment)),
               "vs use_cpu": exact(got, cpu), "m_sizes": exact(m_sizes, cpu_sizes)}
    return run


def cg_inputs(groups, K, N, E, dtype, group_size=128):
    x = rnd(groups * group_size, K, dtype=dtype)
    w = rnd(E, N, K, dtype=dtype, scale=K ** -0.5)
    experts = torch.randint(0, E, (groups,), dtype=torch.int32)
    experts[0] = E - 1
    idx = experts.repeat_interleave(group_size).contiguous()
    return x, w, idx


def cg_forward_case(kind, groups, K, N, E, dtype):
    """kind: persistent (cg_grouped_gemm_forward, bf16 output) or dynamic (cg_grouped_gemm_forward_dynamic)."""

    def run():
        fwd = need("moe.tt_cg_gemm.cg_forward")
        ref = need("moe.tt_cg_gemm.cg_reference")
        x, w, idx = cg_inputs(groups, K, N, E, dtype)
        if kind == "persistent":
            got = fwd.cg_grouped_gemm_forward(x, w, idx)
        else:
            got = fwd.cg_grouped_gemm_forward_dynamic(x, w, idx)
        want = ref.pytorch_reference(d64(x), d64(w), idx)
        out_dtype = BF16 if kind == "persistent" else dtype
        yield {"out": (got, want, DOT_TOL[out_dtype]),
               "dtype": exact(torch.tensor(got.dtype == out_dtype), torch.tensor(True))}
    return run


def cg_autograd_case(groups, K, N, E, dtype):

    def run():
        bwd = need("moe.tt_cg_gemm.cg_backward")
        ref = need("moe.tt_cg_gemm.cg_reference")
        x, w, idx = cg_inputs(groups, K, N, E, dtype)
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        y = bwd.ContiguousGroupedGEMM.apply(xg, wg, idx)
        xr, wr = d64(x, True), d64(w, True)
        want = torch.cat([xr[i:i + 128] @ wr[int(idx[i])].t() for i in range(0, len(idx), 128)])
        assert torch.equal(want.detach(), ref.pytorch_reference(d64(x), d64(w), idx))
        yield {"y": (y, want, TOL[BF16])}  # the forward's output is bfloat16 whatever the inputs
        dy = rnd(*y.shape, dtype=BF16)
        gx, gw = torch.autograd.grad(y, [xg, wg], dy)
        rx, rw = torch.autograd.grad(want, [xr, wr], d64(dy))
        yield {"dx": (gx, rx, TOL[BF16]), "dw": (gw, rw, TOL[BF16])}
    return run


def mg_sizes(G, M):
    """G group sizes summing to M, some of them 0."""
    cuts = torch.sort(torch.randint(0, M + 1, (G - 1,))).values
    sizes = torch.diff(torch.cat([torch.tensor([0]), cuts, torch.tensor([M])])).to(torch.int32)
    if G > 2:  # one group (not the first) empty
        empty = G // 2 if G > 3 else G - 1
        sizes[0] += sizes[empty]
        sizes[empty] = 0
    return sizes


def mg_forward_ref(x, w, sizes):
    G = len(sizes)
    n = w.shape[0] // G
    out, start = [], 0
    for g, m in enumerate(sizes.tolist()):
        out.append(x[start:start + m] @ w[g * n:(g + 1) * n].t())
        start += m
    return torch.cat(out)


def mg_case(kind, G, M, N, K, dtype):
    """kind: forward (grouped_gemm_forward), dx / dw (their wrappers: dx = dy w, dw = dy^T x over all groups),
    autograd (GroupedGemmMg forward and backward)."""

    def run():
        mg = need("moe.tt_mg_gemm.mg_grouped_gemm")
        sizes = mg_sizes(G, M)
        x = rnd(M, K, dtype=dtype)
        w = rnd(N, K, dtype=dtype, scale=K ** -0.5)
        tol = DOT_TOL[dtype]
        with hopper_claims():
            if kind == "forward":
                got = mg.grouped_gemm_forward(x, w, sizes)
                yield {"out": (got, mg_forward_ref(d64(x), d64(w), sizes), tol)}
            elif kind == "dx":
                dy = rnd(M, N, dtype=dtype)
                got = mg.grouped_gemm_dx_tma(dy, w, sizes, num_sms=GPU["sms"])
                yield {"dx": (got, d64(dy) @ d64(w), tol)}
            elif kind == "dw":
                dy = rnd(M, N, dtype=dtype)
                got = mg.grouped_gemm_dw_tma(x, dy, sizes, num_sms=GPU["sms"])
                yield {"dw": (got, d64(dy).t() @ d64(x), tol)}
            else:
                xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
                y = mg.mg_grouped_gemm(xg, wg, sizes)
                xr, wr = d64(x, True), d64(w, True)
                want = mg_forward_ref(xr, wr, sizes)
                yield {"y": (y, want, tol)}
                dy = rnd(*y.shape, dtype=dtype)
                gx, gw = torch.autograd.grad(y, [xg, wg], dy)
                rx, rw = torch.autograd.grad(want, [xr, wr], d64(dy))
                yield {"dx": (gx, rx, tol), "dw": (gw, rw, tol)}
    return run


# --- the cases -----------------------------------------------------------------------------------------------------

DTYPES = (F32, F16, BF16)

if have("swiglu"):
    for _dt in DTYPES:
        case(f"swiglu {SHORT[_dt]} 2 x 37 x 300", glu_case("swiglu", "swiglu", (2, 37, 300), _dt), FB)
    case("swiglu fp32 1 x 1 x 1", glu_case("swiglu", "swiglu", (1, 1, 1), F32), FB)
    case("swiglu bf16 3 x 17 x 1300", glu_case("swiglu", "swiglu", (3, 17, 1300), BF16), FB)

if have("geglu"):
    for _dt in DTYPES:
        case(f"geglu {SHORT[_dt]} 2 x 37 x 300", glu_case("geglu", "geglu", (2, 37, 300), _dt), FB)
    case("geglu fp32 1 x 3 x 5", glu_case("geglu", "geglu", (1, 3, 5), F32), FB)
    case("geglu bf16 3 x 17 x 1300", glu_case("geglu", "geglu", (3, 17, 1300), BF16), FB)

for _name in ("silu", "gelu"):
    if have(_name):
        for _dt in DTYPES:
            case(f"{_name} {SHORT[_dt]} 2 x 37 x 300", act_case(_name, _name, (2, 37, 300), _dt), FB)
        case(f"{_name} fp32 1 x 1 x 3", act_case(_name, _name, (1, 1, 3), F32), FB)

if have("dora"):
    case("dora scale fp32 out 37, in 300, rank 8", dora_case(37, 300, 8, 2.0, F32))
    case("dora scale fp32 out 5, in 2500, rank 5 (two 2048-wide tiles)", dora_case(5, 2500, 5, 0.5, F32))
    case("dora scale bf16 out 100, in 129, rank 16", dora_case(100, 129, 16, 1.0, BF16))
    case("dora scale fp32 out 3, in 7, rank 1", dora_case(3, 7, 1, 4.0, F32))
    case("dora scale fp16 out 64, in 3000, rank 32", dora_case(64, 3000, 32, 0.25, F16))

if have("lora"):
    for _kind in ("mlp_swiglu", "mlp_geglu"):
        case(f"lora {_kind} fp32 2 x 19 x 48 -> 100, rank 8", lora_case(_kind, 2, 19, 48, 100, 8, F32), FB)
        case(f"lora {_kind} bf16 2 x 19 x 48 -> 100, rank 8", lora_case(_kind, 2, 19, 48, 100, 8, BF16), FB)
        case(f"lora {_kind} fp16 3 x 7 x 72 -> 200, rank 16", lora_case(_kind, 3, 7, 72, 200, 16, F16), FB)
        case(f"lora {_kind} fp32 biases, dropout 0.3, 1 x 33 x 40 -> 70, rank 4",
             lora_case(_kind, 1, 33, 40, 70, 4, F32, bias=True, lora_bias=True, dropout=0.3), FB)
        case(f"lora {_kind} fp32 DoRA, 2 x 9 x 40 -> 70, rank 4",
             lora_case(_kind, 2, 9, 40, 70, 4, F32, dora=True), FB)
        case(f"lora {_kind} bf16 DoRA, bias, dropout 0.2, 2 x 9 x 40 -> 70, rank 6",
             lora_case(_kind, 2, 9, 40, 70, 6, BF16, bias=True, dora=True, dropout=0.2), FB)
    for _kind in ("qkv", "qk", "o", "linear", "gdn"):
        case(f"lora {_kind} fp32 2 x 13 x 40 -> 48, rank 8", lora_case(_kind, 2, 13, 40, 48, 8, F32), FB)
        case(f"lora {_kind} fp32 DoRA, biases, 2 x 13 x 40 -> 48, rank 8",
             lora_case(_kind, 2, 13, 40, 48, 8, F32, bias=True, lora_bias=True, dora=True), FB)
        case(f"lora {_kind} bf16 DoRA, dropout 0.25, 1 x 21 x 64 -> 96, rank 16",
             lora_case(_kind, 1, 21, 64, 96, 16, BF16, dora=True, dropout=0.25), FB)

if have("rms_norm_gated"):
    case("rms_norm_gated fp32 2 x 37 x 300", rms_gated_case((2, 37, 300), F32, 0.0), FB)
    case("rms_norm_gated fp32 offset 1, 75 x 1000 (132 programs)", rms_gated_case((75, 1000), F32, 1.0), FB,
         sms=132)
    case("rms_norm_gated bf16 3 x 11 x 129", rms_gated_case((3, 11, 129), BF16, 0.0), FB)
    case("rms_norm_gated bf16 offset 1, 1 x 1 x 64", rms_gated_case((1, 1, 64), BF16, 1.0), FB)
    case("rms_norm_gated fp16 5 x 77 x 200 (132 programs)", rms_gated_case((5, 77, 200), F16, 0.0), FB, sms=132)

if have("gemma4_fused_rope"):
    case("fused_rms_norm_rope fp32 2 x 7 x 3 x 128, full rotary", rope_case(2, 7, 3, 128, 128, F32), FB)
    case("fused_rms_norm_rope fp32 2 x 7 x 3 x 100, rotary 64, unit_offset",
         rope_case(2, 7, 3, 100, 64, F32, unit_offset=True), FB)
    case("fused_rms_norm_rope fp32 3 x 5 x 2 x 72, rotary 72, cos batch 1 (132 programs)",
         rope_case(3, 5, 2, 72, 72, F32, cos_batch=1), FB, sms=132)
    case("fused_rms_norm_rope bf16 1 x 13 x 4 x 256, rotary 192", rope_case(1, 13, 4, 256, 192, BF16), FB)
    case("fused_rms_norm_rope bf16 2 x 3 x 5 x 40, rotary 10, unit_offset",
         rope_case(2, 3, 5, 40, 10, BF16, unit_offset=True), FB)
    case("fused_rms_norm_noscale fp32 2 x 5 x 3 x 100", noscale_case((2, 5, 3, 100), F32), FB)
    case("fused_rms_norm_noscale bf16 7 x 256", noscale_case((7, 256), BF16), FB)
    case("fused_rms_norm_rope fp16 2 x 9 x 2 x 80, rotary 32", rope_case(2, 9, 2, 80, 32, F16), FB)
    case("fused_rms_norm_rope bf16 2 x 6 x 2 x 512, rotary 128, unit_offset (132 programs)",
         rope_case(2, 6, 2, 512, 128, BF16, unit_offset=True), FB, sms=132)
    case("fused_rms_norm_noscale fp16 3 x 7 x 5 x 96", noscale_case((3, 7, 5, 96), F16), FB)

if have("memft_xentropy"):
    case("memft_xentropy fp32 N 50, H 32, V 1000, chunks of 7, ignored and out-of-range labels",
         memft_case(50, 32, 1000, F32, chunk_tokens=7, ignored=6, out_of_range=3), FB)
    case("memft_xentropy fp32 N 37, H 48, V 10000 (two 8192 blocks)", memft_case(37, 48, 10000, F32, ignored=3), FB)
    case("memft_xentropy fp32 N 64, H 16, V 300, heuristic chunks", memft_case(64, 16, 300, F32), FB)
    case("memft_xentropy fp32 N 9, H 16, V 131075 (17 blocks of 8192)", memft_case(9, 16, 131075, F32), FB)
    case("memft_xentropy bf16 N 41, H 64, V 777, chunks of 16", memft_case(41, 64, 777, BF16, chunk_tokens=16,
                                                                          ignored=4), FB)
    case("memft_xentropy fp16 N 30, H 32, V 9000, chunks of 8", memft_case(30, 32, 9000, F16, chunk_tokens=8,
                                                                          out_of_range=2), FB)

if have("efficient_cross_entropy_loss"):
    case("efficient_ce fp32 mean, N 37, H 48, V 1000", cel_case(37, 48, 1000, F32), FB)
    case("efficient_ce fp32 sum, N 20, H 32, V 3001, ignored targets", cel_case(20, 32, 3001, F32, reduction="sum",
                                                                             ignored=4), FB)
    case("efficient_ce bf16 mean, N 33, H 64, V 500, ignored targets", cel_case(33, 64, 500, BF16, ignored=3), FB)
    case("efficient_ce fp32 mean, N 40, H 32, V 700, 4 loop iterations", cel_case(40, 32, 700, F32, n_loop_iters=4),
         FB, library="chunk boundaries take targ[token_end_idx + 1], one past the next row's target")

if have("moe.indices.indices"):
    case("moe generate_permute_indices 8 experts, 2 ranks, alignment 16", indices_case(8, 2, 40, 16))
    case("moe generate_permute_indices 5 experts, 3 ranks, alignment 128 (runs over 128)",
         indices_case(5, 3, 300, 128))
    case("moe fill_indices_wrapper 13 experts, 1 rank, 3 programs, block 64", indices_case(13, 1, 150, 8,
                                                                                        max_blocks=3))

if have("moe.tt_cg_gemm.cg_forward") and have("moe.tt_cg_gemm.cg_reference"):
    case("moe cg_grouped_gemm_forward bf16 3 groups, K 100, N 200, 4 experts",
         cg_forward_case("persistent", 3, 100, 200, 4, BF16))
    case("moe cg_grouped_gemm_forward fp32 in, 2 groups, K 64, N 96, 3 experts (132 programs)",
         cg_forward_case("persistent", 2, 64, 96, 3, F32), sms=132)
    case("moe cg_grouped_gemm_forward_dynamic fp32 3 groups, K 100, N 200, 4 experts",
         cg_forward_case("dynamic", 3, 100, 200, 4, F32))
    case("moe cg_grouped_gemm_forward_dynamic bf16 2 groups, K 48, N 130, 2 experts",
         cg_forward_case("dynamic", 2, 48, 130, 2, BF16))
    case("moe cg_grouped_gemm_forward_dynamic fp16 4 groups, K 200, N 72, 3 experts",
         cg_forward_case("dynamic", 4, 200, 72, 3, F16))

if have("moe.tt_cg_gemm.cg_backward"):
    case("moe ContiguousGroupedGEMM bf16 3 groups, K 96, N 384, 4 experts", cg_autograd_case(3, 96, 384, 4, BF16),
         FB)
    case("moe ContiguousGroupedGEMM bf16 2 groups, K 64, N 64, 3 experts", cg_autograd_case(2, 64, 64, 3, BF16), FB)
    case("moe ContiguousGroupedGEMM bf16 2 groups, K 100, N 200, 2 experts", cg_autograd_case(2, 100, 200, 2, BF16),
         FB, library="_kernel_cg_backward_dw tiles N x K by floor division under a grid of ceiling divisions")

if have("moe.tt_mg_gemm.mg_grouped_gemm"):
    case("moe mg grouped_gemm_forward bf16 G 4, M 300, N 4 x 96, K 128", mg_case("forward", 4, 300, 384, 128, BF16))
    case("moe mg grouped_gemm_forward fp32 G 3, M 200, N 3 x 50, K 64 (132 programs)",
         mg_case("forward", 3, 200, 150, 64, F32), sms=132)
    case("moe mg grouped_gemm_dx_tma bf16 G 4, M 300, N 160, K 192", mg_case("dx", 4, 300, 160, 192, BF16))
    case("moe mg grouped_gemm_dw_tma fp32 G 3, M 257, N 300, K 64", mg_case("dw", 3, 257, 300, 64, F32))
    case("moe mg grouped_gemm_forward fp16 G 5, M 333, N 5 x 40, K 256", mg_case("forward", 5, 333, 200, 256, F16))
    case("moe mg GroupedGemmMg fp32 G 1, M 150, N 200, K 64", mg_case("autograd", 1, 150, 200, 64, F32), FB)
    case("moe mg GroupedGemmMg bf16 G 2, M 256, N 2 x 64, K 64", mg_case("autograd", 2, 256, 128, 64, BF16), FB,
         library="the backward passes the whole w to grouped_gemm_dx_tma, which refuses N // G != N")

# --- report --------------------------------------------------------------------------------------------------------

if MISSING:
    print(f"not in this tree (their cases did not run): {', '.join(sorted(set(MISSING)))}")
sys.exit(report(results, ARGS.json, LIBRARY, "Axolotl"))
