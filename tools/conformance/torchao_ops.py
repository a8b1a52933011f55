"""torchao's Triton kernels (pytorch/ao) on Tegula, through the conformance shim's `triton` package, against float64
references written here from the math (exact integers for the integer kernels and index builders):

  - torchao/kernel/intmm_triton.py (removed from torchao in August 2026, see below): the int8 matmul
    `matmul_kernel_with_block_pointers` (block pointers with boundary checks, int32 out) and the Inductor-derived
    `scaled_matmul_kernel_with_block_pointers` (row scales), through their launch helpers int_matmul_kernel /
    int_scaled_matmul_kernel with configs of the library's int8_mm_kernel_configs (its autotuner,
    get_best_config_fn, times configs with CUDA events). The helpers pass the config's num_warps, num_stages
    and num_ctas on to the launch; torchao's configs set no num_ctas, which Triton's Config reads as 1 (Tegula's
    read None until 745be77);
  - blockwise FP8 inference: quantization/quantize_/workflows/float8/kernels.py `blockwise_fp8_gemm` (DeepSeek-V3's
    1x128 / 128x128-scaled FP8 GEMM, bfloat16 out) and prototype/blockwise_fp8_inference/kernels.py
    `fp8_blockwise_act_quant` (e4m3 and e5m2);
  - blockwise FP8 training (prototype/blockwise_fp8_training): kernels.py's GEMMs `triton_fp8_gemm_1x128_128x128`
    and `triton_fp8_gemm_1x128_128x1` and quantizers `triton_fp8_blockwise_act_quant_lhs` / `_rhs` /
    `_transposed_lhs`, `triton_fp8_blockwise_weight_quant_rhs` / `_transposed_rhs` (float64 amax, tl.div_rn
    reciprocal scales, transposed column-major stores, a scalar program id indexed as a tile); grouped_weight_quant.py's
    per-expert `..._grouped_forward_rhs` / `_dgrad_rhs`; deepgemm_quant.py's
    `triton_fp8_blockwise_act_quant_k_grouped_deepgemm` (ragged expert groups, one of them empty);
  - prototype/float8nocompile/kernels/fp8_dynamic_tensorwise.py: the seven `hp_to_fp8_*` layouts (row-major,
    transposed, column-major, both at once) with the global amax by atomic_max and by a block reduction, e4m3 and
    e5m2, float32 and bfloat16 inputs (torch.version.hip read inside the kernels);
  - prototype/hqq: `triton_mixed_mm` (int4 codes packed two to a byte, group scales and zeros, tl.join / permute
    dequantization, heuristics that override passed meta-parameters), float16, bfloat16 and transposed;
  - prototype/quantized_training/int8_mm.py: `_scaled_int8_mm_kernel` through the op's registered implementation
    (scaled_int8_mm_cuda, on CPU tensors: the op dispatches to CUDA only), row and column scales, a scalar column
    scale (a grid function that reads runtime arguments by name);
  - prototype/mx_formats/kernels.py: `triton_to_mxfp8_dim0` / `_dim1` (FLOOR and RCEIL e8m0 scales; RCEIL by the
    file's Triton path, see the stand-ins), `triton_mxfp8_dequant_dim0` (float32 and bfloat16),
    `triton_mx_block_rearrange` (cuBLAS's 128 x 4 scale swizzle);
  - prototype/moe_training: ep/kernels.py `generate_permute_indices` (against the library's fill_indices_cpu),
    kernels/jagged_float8_scales.py `triton_fp8_per_group_colwise_scales` (two-pass and fused kernels, power-of-two
    scales), kernels/float8_rowwise.py `triton_fp8_rowwise_3d_transpose_rhs` (atomic_min of float scales),
    `..._fused_reduction`, `triton_fp8_colwise_3d_scale_and_cast`, `triton_fp8_rowwise_2d_scale_and_cast`, and
    nvfp4_training/group_weight_amax_triton.py `triton_group_weight_amax` (atomic_max, NaN propagation).
    _triton_fp8_rowwise_3d_transpose_cast_rhs_kernel is autotuned with key=["num_elements"], which is not one of
    its parameters: Triton ignores such key names (Tegula refused them until 745be77, and now warns);
  - attention FP8 quantizers (prototype/attention/quantization): `triton_fp8_sdpa_quantize` (GQA, per-KV-group Q
    scales, three S chunks or the chunk count from the device), `triton_fp8_rope_sdpa_quantize` (half-split and
    interleaved RoPE, layout change), `triton_fp8_hadamard_sdpa_quantize` (a Hadamard butterfly through a
    global-memory shuffle buffer with debug barriers) and `inverse_hadamard_transform`; prototype/fp8_sdpa_inference
    `fp8_sdpa_quantize_func` (the fused Q/K/V kernels and the separate ones).

Inputs have sizes that are not powers of two where the kernels allow (M 37 / 200 / 301, K 300 / 384, N 136 / 200 /
320, sequences of 77 / 50 / 61 / 23 and head sizes 80 / 96); the 128-block kernels need multiples of 128 where
their hosts assert them, and some kernels' unmasked or mis-masked accesses (noted at their cases) need whole tiles.

Not covered: torchao/kernel/bsr_triton_ops.py (its imports reach torch.sparse's Triton tuning tables),
moe_training/kernels/mxfp8/ and ep/permute.py (they import mx_tensor, whose imports need the package __init__
re-exports of torchao.quantization), moe_training/kernels/triton_utils.py (PTX inline asm),
nvfp4_training's quantizers and Hadamard kernels (SM100 host checks, in-kernel TMA descriptors, PTX),
jagged_float8_scales.py's `triton_fp8_per_group_rowwise_scales` (its launch passes STRIDE_OUTPUT_ROW=1 for a
row-major output, so its stores overlap, under Triton as well) and `..._colwise_scales_dual`, mx_formats'
CUDA-extension and MSLK ops.

torchao is not part of Tegula; point this at a source tree holding torchao/ (written against commit 36027d8 of
2026-08-21, version 0.19.0, whose torchao/ this reads unchanged). torchao/kernel/ was deleted from torchao on
2026-08-07 (#4717 removed intmm_triton.py, #4728 the rest): the int8 matmul cases run when the tree also holds
torchao/kernel/intmm_triton.py and autotuner.py, e.g. from the last commit before #4717 (`git archive
fa6d1d0e9^ torchao/kernel | tar -x -C <tree>`), and are reported as not run otherwise:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/torchao_ops.py <torchao tree> [-k SUBSTRING]

(-k runs only the cases whose name holds SUBSTRING.) `import torchao` loads its C++ extensions and most of the
library, so every torchao package is imported bare (its __init__ is not run) and the modules above load from
their files, with what they import from torchao (torchao.utils, torchao.float8, torchao.prototype.mx_formats'
config, ...) unchanged. What they reach at module level or in their host code that a CPU machine, or the stand-in
`triton` package, lacks is stood in for (none of it is a Triton kernel or reached from one):

  - torch._dynamo: a module whose disable(fn) and allow_in_graph(fn) are fn and is_compiling() False. torchao's
    ops are torch.library custom ops, whose CPU kernels torch wraps in torch._dynamo.disable, imported on the
    first call; the real torch._dynamo imports Inductor, which imports triton.backends, absent from the stand-in
    package;
  - torch.library.triton_op: registers the op as torch.library.custom_op does (so that torchao's
    register_sharding / register_fake calls on it find it), its function run under torch's
    set_wrap_triton_enabled(False), so that wrap_triton(kernel) is the kernel itself, as in eager mode; the real
    one reads the function's source for kernels through Inductor;
  - torch.utils._triton.has_triton: True (torch's answer is False on a machine without a GPU, and these files
    define their kernels only behind it);
  - torch.cuda.get_device_properties, without a GPU (the attention quantizers size their chunk counts by the
    multiprocessor count): a device named "cpu" with the CPU backend's thread count as multiprocessors;
  - torch._inductor, while intmm_triton.py loads (it reads torch._inductor.config.max_autotune_gemm_search_space
    at import): a namespace whose config holds torch's default for it, "DEFAULT";
  - torchao.utils.is_ROCM and is_MI350, while mx_formats/kernels.py loads: True. The file defines its MXFP8
    quantizers only for CUDA SM100 GPUs or AMD MI350s, and on NVIDIA GPUs they compute RCEIL scales with a PTX
    instruction (inline asm); loaded as on an MI350 they take the file's own Triton RCEIL path.

Autotuning: each autotuned kernel is pinned to one config of its own list (its autotuner's `configs` is set to
that one, as flash_attn_ops.py does; an autotuner of one config launches it without tuning or pruning), chosen
for the shapes here and named at each case; torchao's lists hold up to 960 configs a kernel, minutes of compiles on
a CPU. blockwise_fp8_gemm's kernel is built inside a function and reached through the custom op's closure; the
fused jagged column-wise kernel's host code sets the kernel's configs itself (two) and they are tuned.

A case passes when every output's largest difference from its reference is at most the tolerance times the
reference's largest magnitude: integer results exactly; float32 results 1e-6 (int8 GEMMs' scaled sums, the MXFP8
dequantization) and 1e-4 (float8 GEMMs with float32 sums over K); bfloat16 results 1e-2 (the blockwise GEMM, the
inverse Hadamard) or 4e-3 (one bfloat16 rounding); the HQQ GEMM 5e-3 in float16, 2e-2 in bfloat16. Quantizers are
checked through their scales (1e-6 relative; e8m0 bytes exactly, against the format's FLOOR / RCEIL rules) and the
quantized values against x / scale (given the kernel's scale; float8 e4m3 within half a step, 2^-4 of the value,
e5m2 2^-3, clamped to the format's range where the kernel saturates), plus 2^-8 where the library rounds an
intermediate (RoPE, Hadamard) to bfloat16 before quantizing. Tegula's recompile warnings are off unless
TEGULA_RECOMPILE_WARNING is set. Prints one line per case (the largest absolute difference from the reference over
the case's outputs, each output's difference, or the first line of the error) and a summary line.
"""

import functools
import importlib
import importlib.util
import logging
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_args = sys.argv[1:]
ONLY = None
if len(_args) == 3 and _args[1] == "-k":
    ONLY = _args.pop(2); _args.pop(1)
if len(_args) != 1:
    sys.exit("usage: torchao_ops.py <torchao tree> [-k SUBSTRING]")
TREE = pathlib.Path(_args[0]).resolve()
if not (TREE / "torchao" / "prototype" / "blockwise_fp8_training" / "kernels.py").is_file():
    sys.exit(f"{TREE} holds no torchao/prototype/blockwise_fp8_training/kernels.py")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

# torchao's enums registered as pytree constants log a torch deprecation warning at import
logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

_dynamo = types.ModuleType("torch._dynamo")
_dynamo.disable = lambda fn=None, recursive=True, **k: fn if fn is not None else (lambda f: f)
_dynamo.allow_in_graph = lambda fn: fn
_dynamo.is_compiling = lambda: False
sys.modules["torch._dynamo"] = _dynamo
torch._dynamo = _dynamo

import torch.utils._triton  # noqa: E402
from torch._library.triton import set_wrap_triton_enabled  # noqa: E402

torch.utils._triton.has_triton = lambda *a, **k: True


def _triton_op(name, fn=None, /, *, mutates_args, schema=None):
    def make(f):
        @functools.wraps(f)
        def run(*args, **kwargs):
            with set_wrap_triton_enabled(False):
                return f(*args, **kwargs)
        return torch.library.custom_op(name, run, mutates_args=mutates_args, schema=schema)
    return make if fn is None else make(fn)


torch.library.triton_op = _triton_op
_wrap_triton = torch.library.wrap_triton


def _wrap_triton_eager(kernel):
    with set_wrap_triton_enabled(False):
        return _wrap_triton(kernel)


torch.library.wrap_triton = _wrap_triton_eager

if not torch.cuda.is_available():
    _props = types.SimpleNamespace(name="cpu", multi_processor_count=triton.runtime.driver.active.utils
                                .get_device_properties(0)["multiprocessor_count"])
    torch.cuda.get_device_properties = lambda *a, **k: _props


standins.bare_packages(TREE, "torchao")


def load(name):
    return importlib.import_module(name)


def load_intmm():
    saved = sys.modules.get("torch._inductor")
    ns = types.ModuleType("torch._inductor")
    ns.config = types.SimpleNamespace(max_autotune_gemm_search_space="DEFAULT")
    sys.modules["torch._inductor"] = ns
    torch._inductor = ns
    try:
        return load("torchao.kernel.intmm_triton")
    finally:
        del torch._inductor
        if saved is None:
            sys.modules.pop("torch._inductor", None)
        else:
            sys.modules["torch._inductor"] = saved


def load_mx_kernels():
    if "torchao.prototype.mx_formats.kernels" not in sys.modules:
        utils = load("torchao.utils")
        saved = utils.is_ROCM, utils.is_MI350
        utils.is_ROCM = utils.is_MI350 = lambda: True
        try:
            load("torchao.prototype.mx_formats.kernels")
        finally:
            utils.is_ROCM, utils.is_MI350 = saved
    return sys.modules["torchao.prototype.mx_formats.kernels"]


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


# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
HALF_STEP = {E4M3: 2.0 ** -4, E5M2: 2.0 ** -3}


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


def not_run(name, why):
    if ONLY is None or ONLY in name:
        results.append((name, "skip", float("nan"), why))


def blocks(x, bm, bn, fn=lambda b: b.abs().amax((1, 3))):
    """fn over the (bm x bn) blocks of the 2-D float64 x (partial edge blocks padded with zeros), repeated back
    to x's shape."""
    M, N = x.shape
    pm, pn = -M % bm, -N % bn
    xp = torch.nn.functional.pad(x, (0, pn, 0, pm))
    r = fn(xp.view((M + pm) // bm, bm, (N + pn) // bn, bn))
    return r, r.repeat_interleave(bm, 0).repeat_interleave(bn, 1)[:M, :N]


def fp8_values(y, v, dtype=E4M3):
    """{"y rel": ...}: the float8 y against the exact quotient v, relative to |v| (floored at the subnormal range),
    within half a step of the format."""
    floor = 2.0 ** -6 if dtype == E4M3 else 2.0 ** -14
    return ((y.double() - v) / v.abs().clamp_min(floor), torch.zeros_like(v), HALF_STEP[dtype] * 1.001)


def fp8_quant(x, y, s_recip, bm, bn, dtype=E4M3, top=None):
    """A (bm x bn)-block float8 quantization of x: s_recip (per element) is amax / top, y is x / s_recip."""
    top = top or torch.finfo(dtype).max
    _, amax = blocks(x.double(), bm, bn)
    s_ref = amax.clamp_min(1e-12) / top
    return {"scales": (s_recip, s_ref, 1e-6), "y rel": fp8_values(y, x.double() / s_recip.double(), dtype)}


# --- torchao/kernel/intmm_triton.py (removed 2026-08) ----------------------------------------------------------------

def intmm_case(scaled, cfg):
    """The launch helpers with a config of the library's list (num_warps 4, num_stages 2); they pass the config's
    num_warps, num_stages and num_ctas on to the launch."""
    def run():
        mm = load_intmm()
        config = next(c for c in mm.int8_mm_kernel_configs if all(c.kwargs[k] == v for k, v in cfg.items())
                      and c.num_warps == 4 and c.num_stages == 2)
        M, K, N = 37, 96, 70
        a = torch.randint(-128, 128, (M, K), dtype=torch.int8)
        b = torch.randint(-128, 128, (K, N), dtype=torch.int8)
        ref = a.long() @ b.long()
        if not scaled:
            c = torch.empty(M, N, dtype=torch.int32)
            mm.int_matmul_kernel(a, b, c, config)
            return {"c": (c.long(), ref, 0.0)}
        s = torch.rand(M, 1) + 0.5
        c = torch.empty(M, N, dtype=torch.float32)
        mm.int_scaled_matmul_kernel(a, b, s, c, config)
        return {"c": (c, ref.double() * s.double(), 1e-6)}
    return run


if (TREE / "torchao" / "kernel" / "intmm_triton.py").is_file():
    check("intmm int_matmul block pointers 37x96x70 (32x32x32)",
          intmm_case(False, {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}))
    check("intmm int_matmul block pointers 37x96x70 (64x32x32)",
          intmm_case(False, {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}))
    check("intmm int_scaled_matmul 37x96x70 (32x64x32)", intmm_case(True, {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32}))
else:
    for _n in ("int_matmul", "int_scaled_matmul"):
        not_run(f"intmm {_n}", "the tree holds no torchao/kernel/intmm_triton.py")


# --- blockwise fp8 inference: quantization/.../float8/kernels.py, prototype/blockwise_fp8_inference/kernels.py --------

def blockwise_gemm_case():
    mod = load("torchao.quantization.quantize_.workflows.float8.kernels")
    op = mod._get_blockwise_fp8_gemm_op()
    fn = op._init_fn
    kernel = dict(zip(fn.__code__.co_freevars, fn.__closure__))["blockwise_fp8_gemm_kernel"].cell_contents
    pin(kernel, BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, num_stages=3)
    M, K, N = 37, 384, 200
    a = (torch.randn(M, K) * 30).to(E4M3)
    b = (torch.randn(N, K) * 30).to(E4M3)
    a_s = torch.rand(M, K // 128) / 50 + 1e-3
    b_s = torch.rand(-(-N // 128), K // 128) / 50 + 1e-3
    c = mod._blockwise_fp8_gemm(a, a_s, b, b_s, 128)
    A = a.double() * a_s.double().repeat_interleave(128, 1)
    B = b.double() * b_s.double().repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)
    return {"c": (c, A @ B.T, 1e-2)}


check("blockwise_fp8_gemm 37x384x200 bf16 out", blockwise_gemm_case)


def inference_act_quant_case(dtype):
    def run():
        mod = load("torchao.prototype.blockwise_fp8_inference.kernels")
        x = torch.randn(5, 7, 384) * 4
        y, s = mod.fp8_blockwise_act_quant(x, 128, dtype)
        s_full = s.repeat_interleave(128, -1)
        # torchao scales both formats to 448 (e4m3's top)
        return fp8_quant(x.view(35, 384), y.view(35, 384), s_full.view(35, 384), 1, 128, dtype, top=448.0)
    return run


check("fp8_blockwise_act_quant e4m3 5x7x384", inference_act_quant_case(E4M3))
check("fp8_blockwise_act_quant e5m2 5x7x384", inference_act_quant_case(E5M2))


# --- blockwise fp8 training: prototype/blockwise_fp8_training/{kernels, grouped_weight_quant, deepgemm_quant}.py ------

def training():
    k = load("torchao.prototype.blockwise_fp8_training.kernels")
    if not getattr(k, "_pinned", False):
        pin(k.triton_fp8_gemm_1x128_128x128_kernel, BLOCK_SIZE_M=64, num_warps=4)
        pin(k.triton_fp8_gemm_1x128_128x1_kernel, BLOCK_SIZE_M=64, num_warps=4)
        for name in ("act_quant_lhs", "act_quant_rhs", "act_quant_transposed_lhs"):
            pin(getattr(k, f"triton_fp8_blockwise_{name}_kernel"), NUM_GROUPS=16, num_warps=4, num_stages=2)
        for name in ("weight_quant_rhs", "weight_quant_transposed_rhs"):
            pin(getattr(k, f"triton_fp8_blockwise_{name}_kernel"), num_warps=4, num_stages=2)
        k._pinned = True
    return k


def act_quant_case(kind):
    def run():
        k = training()
        if kind == "lhs":  # (1 x 128) groups, row-major y, column-major reciprocal scales (M, K / 128)
            x = torch.randn(200, 384) * 3
            y, s = k.triton_fp8_blockwise_act_quant_lhs(x, 128)
            return fp8_quant(x, y, s.repeat_interleave(128, 1), 1, 128)
        if kind == "rhs":  # (128 x 1) groups, column-major y, scales (ceil(M / 128), K)
            x = torch.randn(200, 384) * 3
            y, s = k.triton_fp8_blockwise_act_quant_rhs(x, 128)
            return fp8_quant(x, y, s.repeat_interleave(128, 0)[:200], 128, 1)
        # transposed lhs: y = (x's (128 x 1) groups)^T, (K, M); scales (K, M / 128)
        x = torch.randn(384, 200) * 3
        y, s = k.triton_fp8_blockwise_act_quant_transposed_lhs(x, 128)
        return fp8_quant(x.T.contiguous(), y, s.repeat_interleave(128, 1), 1, 128)
    return run


check("triton_fp8_blockwise_act_quant_lhs 200x384 (NUM_GROUPS 16)", act_quant_case("lhs"))
check("triton_fp8_blockwise_act_quant_rhs 200x384", act_quant_case("rhs"))
check("triton_fp8_blockwise_act_quant_transposed_lhs 384x200", act_quant_case("transposed_lhs"))


def weight_quant_case(transposed):
    def run():
        k = training()
        x = torch.randn(384, 640) * 3
        if not transposed:
            y, s = k.triton_fp8_blockwise_weight_quant_rhs(x, 128)
            return fp8_quant(x, y, s.repeat_interleave(128, 0).repeat_interleave(128, 1), 128, 128)
        y, s = k.triton_fp8_blockwise_weight_quant_transposed_rhs(x, 128)
        return fp8_quant(x.T.contiguous(), y, s.repeat_interleave(128, 0).repeat_interleave(128, 1), 128, 128)
    return run


check("triton_fp8_blockwise_weight_quant_rhs 384x640", weight_quant_case(False))
check("triton_fp8_blockwise_weight_quant_transposed_rhs 384x640", weight_quant_case(True))


def training_gemm_case(rhs_groups):
    """C = (a * a_s) @ (b * b_s): a (M, K) row-major e4m3 with (1 x 128) reciprocal scales, b (K, N) column-major
    with (128 x 128) or (128 x 1) ones, as torchao's quantizers above lay them out."""
    def run():
        k = training()
        M, K, N = 192, 384, 320
        a = (torch.randn(M, K) * 30).to(E4M3)
        b = (torch.randn(N, K) * 30).to(E4M3).T  # (K, N), column-major
        a_s = (torch.rand(K // 128, M) / 50 + 1e-3).T  # column-major
        A = a.double() * a_s.double().repeat_interleave(128, 1)
        if rhs_groups == "128x128":
            b_s = (torch.rand(-(-N // 128), K // 128) / 50 + 1e-3).T  # (K / 128, ceil(N / 128)), column-major
            c = k.triton_fp8_gemm_1x128_128x128(a, b, a_s, b_s, 128, torch.float32)
            B = b.double() * b_s.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:, :N]
        else:
            b_s = torch.rand(K // 128, N) / 50 + 1e-3  # row-major
            c = k.triton_fp8_gemm_1x128_128x1(a, b, a_s, b_s, 128, torch.float32)
            B = b.double() * b_s.double().repeat_interleave(128, 0)
        return {"c": (c, A @ B, 1e-4)}
    return run


check("triton_fp8_gemm_1x128_128x128 192x384x320", training_gemm_case("128x128"))
check("triton_fp8_gemm_1x128_128x1 192x384x320", training_gemm_case("128x1"))


def grouped_weight_quant_case(kind):
    def run():
        training()
        g = load("torchao.prototype.blockwise_fp8_training.grouped_weight_quant")
        for t in (g.triton_fp8_blockwise_weight_quant_grouped_forward_rhs_kernel,
                  g.triton_fp8_blockwise_weight_quant_grouped_dgrad_rhs_kernel):
            if len(t.configs) > 1:
                pin(t, num_warps=4, num_stages=2)
        E, K, N = 3, 384, 256
        w = torch.randn(E, N, K) * 3
        w_t = w.transpose(-2, -1)  # (E, K, N), per expert column-major
        out = {}
        if kind == "forward":  # q (E, N, K), scales (E, N / 128, K / 128)
            q, s = g.triton_fp8_blockwise_weight_quant_grouped_forward_rhs(w_t, 128)
            for e in range(E):
                c = fp8_quant(w[e], q[e], s[e].repeat_interleave(128, 0).repeat_interleave(128, 1), 128, 128)
                out.update({f"e{e} {n}": v for n, v in c.items()})
        else:  # q (E, K, N), scales (E, K / 128, N / 128)
            q, s = g.triton_fp8_blockwise_weight_quant_grouped_dgrad_rhs(w_t, 128)
            for e in range(E):
                c = fp8_quant(w_t[e], q[e], s[e].repeat_interleave(128, 0).repeat_interleave(128, 1), 128, 128)
                out.update({f"e{e} {n}": v for n, v in c.items()})
        return out
    return run


check("triton_fp8_blockwise_weight_quant_grouped_forward_rhs 3x384x256", grouped_weight_quant_case("forward"))
check("triton_fp8_blockwise_weight_quant_grouped_dgrad_rhs 3x384x256", grouped_weight_quant_case("dgrad"))


def deepgemm_case():
    training()
    d = load("torchao.prototype.blockwise_fp8_training.deepgemm_quant")
    pin(d.triton_fp8_blockwise_act_quant_k_grouped_deepgemm_kernel, NUM_GROUPS=16, num_warps=4, num_stages=2)
    sizes = [256, 0, 128, 384]  # an expert without tokens
    D, rows = 384, sum(sizes) + 37  # rows past the last group are not read
    x = torch.randn(rows, D) * 3
    ends = torch.tensor(sizes, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    q, s = d.triton_fp8_blockwise_act_quant_k_grouped_deepgemm(x, ends, 128)
    out, start, qpos, blk = {}, 0, 0, 0
    for e, n in enumerate(sizes):
        if n:
            xe = x[start:start + n].T.contiguous()  # (D, M_e): (1 x 128) groups along M_e
            qe = q[qpos:qpos + D * n].view(D, n)
            se = s[:, blk:blk + n // 128].repeat_interleave(128, 1)
            out.update({f"e{e} {k}": v for k, v in fp8_quant(xe, qe, se, 1, 128).items()})
        start, qpos, blk = start + n, qpos + D * n, blk + n // 128
    return out


check("triton_fp8_blockwise_act_quant_k_grouped_deepgemm groups 256/0/128/384", deepgemm_case)


# --- float8nocompile: prototype/float8nocompile/kernels/fp8_dynamic_tensorwise.py ------------------------------------

def nocompile():
    m = load("torchao.prototype.float8nocompile.kernels.fp8_dynamic_tensorwise")
    if not getattr(m, "_pinned", False):
        for v in list(m.__dict__.values()):
            if isinstance(v, triton.runtime.Autotuner):
                if "BLOCK_SIZE" in v.configs[0].kwargs:
                    pin(v, BLOCK_SIZE=512)
                else:
                    pin(v, BLOCK_SIZE_ROWS=32)
        m._pinned = True
    return m


def tensorwise_case(fn_name, algo, dtype=E4M3, x_dtype=F32, shape=(200, 136)):
    """hp_to_fp8_*: one scale for the tensor (fp8 max / amax); each output's data against x (or x^T) * scale."""
    def run():
        m = nocompile()
        f8 = load("torchao.float8.float8_training_tensor")
        x = (torch.randn(*shape) * 5).to(x_dtype)
        outs = getattr(m, fn_name)(x, dtype, f8.LinearMMConfig(), algo=getattr(m.KernelAlgorithm, algo))
        outs = outs if isinstance(outs, tuple) else (outs,)
        amax = x.double().abs().max()
        scale_ref = (torch.finfo(dtype).max / amax).float()
        wants = {"hp_to_fp8_row_major": ("x",), "hp_to_fp8_row_major_t": ("x^T",), "hp_to_fp8_col_major": ("x",),
                 "hp_to_fp8_col_major_t": ("x^T",), "hp_to_fp8_row_and_col_major": ("x", "x"),
                 "hp_to_fp8_row_major_t_and_non_t": ("x", "x^T"),
                 "hp_to_fp8_col_major_t_and_non_t": ("x", "x^T")}[fn_name]
        out = {}
        for i, (t, w) in enumerate(zip(outs, wants)):
            src = x.double() if w == "x" else x.double().T
            out[f"scale {i}"] = (t._scale.view(1), scale_ref.view(1), 1e-6)
            out[f"data {i} ({w}) rel"] = fp8_values(t._data, src * t._scale.double(), dtype)
        return out
    return run


for _fn in ("row_major", "col_major", "col_major_t", "row_and_col_major", "row_major_t_and_non_t",
            "col_major_t_and_non_t"):
    check(f"float8nocompile hp_to_fp8_{_fn} 200x136 atomic_max", tensorwise_case(f"hp_to_fp8_{_fn}", "ATOMIC_MAX"))
# _to_fp8_row_major_t masks its transposed store with the input block's row / column tests (out_mask compares
# input rows with the output's row count): a partial tile writes past the output, and a non-square input leaves
# part of it unwritten (under Triton as well), so a square input of whole 32 x 32 tiles.
check("float8nocompile hp_to_fp8_row_major_t 160x160 atomic_max",
      tensorwise_case("hp_to_fp8_row_major_t", "ATOMIC_MAX", shape=(160, 160)))
check("float8nocompile hp_to_fp8_row_major 200x136 reduction", tensorwise_case("hp_to_fp8_row_major", "REDUCTION"))
check("float8nocompile hp_to_fp8_col_major_t 200x136 reduction",
      tensorwise_case("hp_to_fp8_col_major_t", "REDUCTION"))
check("float8nocompile hp_to_fp8_row_major 200x136 e5m2 bf16 input",
      tensorwise_case("hp_to_fp8_row_major", "ATOMIC_MAX", E5M2, BF16))


# --- HQQ int4 mixed GEMM: prototype/hqq/{kernels, mixed_mm}.py --------------------------------------------------

def hqq_case(transposed, dtype=F16):
    """As torchao's test lays the operands out: W (N, K) 4-bit codes with (N, K / group) scales and zeros, b =
    pack_2xint4(W_q^T) (K / 2, N), scales^T and zeros^T passed (the kernel indexes them as such, K-stride 1);
    x (M, K) @ W^T, or with transposed=True x (M, N) @ W."""
    def run():
        k = load("torchao.prototype.hqq.kernels")
        mm = load("torchao.prototype.hqq.mixed_mm")
        if len(k.mixed_mm_kernel_compute_bound.configs) > 1:
            pin(k.mixed_mm_kernel_compute_bound, BLOCK_M=64, BLOCK_N=32, BLOCK_K=64, num_stages=5)
        # transposed reduces over W's N: a multiple of the pinned BLOCK_K (64), as the kernel's masked path for a
        # partial block builds a (BLOCK_K, 1) mask for a (BLOCK_N / 2, BLOCK_K) tile of B (an error under Triton too)
        M, K, N, group = 37, 384, 192 if transposed else 96, 128
        W_q = torch.randint(0, 16, (N, K), dtype=torch.uint8)
        scales = (torch.rand(N, K // group) / 8 + 0.05).to(dtype)
        zeros = (torch.rand(N, K // group) * 15).to(dtype)
        W = (W_q.double() - zeros.double().repeat_interleave(group, 1)) * scales.double().repeat_interleave(group, 1)
        x = torch.randn(M, N if transposed else K).to(dtype)
        c = mm.triton_mixed_mm(x, mm.pack_2xint4(W_q.T), scales.T, zeros.T, group, transposed=transposed)
        ref = x.double() @ (W if transposed else W.T)
        return {"c": (c, ref, 5e-3 if dtype == F16 else 2e-2)}
    return run


check("hqq triton_mixed_mm int4 g128 37x384x96 fp16", hqq_case(False))
check("hqq triton_mixed_mm int4 g128 37x384x96 bf16", hqq_case(False, BF16))
check("hqq triton_mixed_mm int4 g128 transposed 37x192x384 fp16", hqq_case(True))


# --- quantized_training/int8_mm.py -----------------------------------------------------------------------------

def int8_mm_case(col_scalar):
    def run():
        m = load("torchao.prototype.quantized_training.int8_mm")
        pin(m._scaled_int8_mm_kernel, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
        M, K, N = 37, 320, 136
        A = torch.randint(-128, 128, (M, K), dtype=torch.int8)
        B = torch.randint(-128, 128, (N, K), dtype=torch.int8).T  # column-major, as int8 linear layers pass it
        rs = torch.rand(M) + 0.5
        cs = torch.tensor(0.75) if col_scalar else torch.rand(N) + 0.5
        c = m.scaled_int8_mm_cuda(A, B, rs, cs)  # the op's registered (CUDA) implementation, on CPU tensors
        ref = (A.long() @ B.long()).double() * rs.double()[:, None] * cs.double()
        return {"c": (c, ref, 1e-6)}
    return run


check("scaled_int8_mm 37x320x136 row and column scales", int8_mm_case(False))
check("scaled_int8_mm 37x320x136 scalar column scale", int8_mm_case(True))


# --- mx_formats/kernels.py -----------------------------------------------------------------------------------------

def e8m0(u):
    return torch.pow(2.0, u.view(torch.uint8).to(F64) - 127)


def mx_scale_ref(amax, mode):
    """e8m0 bytes for blocks of amax (float32, of bfloat16 data): RCEIL 127 + ceil(log2(amax / 448)) as the
    file's Triton path rounds it (any mantissa bit rounds up); FLOOR 127 + floor(log2(amax)) - 8."""
    a = amax.float()
    bits = a.view(torch.int32)
    exp = (bits >> 23) & 0xFF
    if mode == "floor":
        e = (exp - 127 - 8).clamp(-127, 128)
        return (e + 127).clamp(0, 255)
    v = (a * (1.0 / 448.0)).view(torch.int32)
    ve, vm = (v >> 23) & 0xFF, v & 0x7FFFFF
    up = torch.where(ve == 0, vm > 0x400000, vm != 0).to(torch.int32)
    return (ve + up).clamp(0, 255)


def to_mxfp8_case(dim, mode):
    def run():
        k = load_mx_kernels()
        tuner = k.to_mxfp8_dim0_kernel if dim == 0 else k.to_mxfp8_dim1_kernel
        if len(tuner.configs) > 1:
            pin(tuner, ROW_TILE_SIZE=128, COL_TILE_SIZE=128, num_warps=4, num_stages=2)
        if dim == 0:
            x = (torch.randn(200, 320) * 3).to(BF16)
            x[3, 32:64] = 0
            y, s = k.triton_to_mxfp8_dim0(x, 32, mode)
            xb = x.double()
        else:  # dim 1 needs multiples of 128 rows and columns; scales along columns
            x = (torch.randn(384, 640) * 3).to(BF16)
            y, s = k.triton_to_mxfp8_dim1(x, 32, mode)
            xb, y, s = x.double().T, y.T, s  # y (M, N) column-major -> its transpose is row-major (N, M)
        amax, _ = blocks(xb, 1, 32)
        want = mx_scale_ref(amax, mode)
        # FLOOR scales let a block's largest values exceed 448: the float8 cast saturates them (satfinite)
        v = (xb / e8m0(s).repeat_interleave(32, 1)).clamp(-448.0, 448.0)
        return {"scales": (s.view(torch.uint8).double(), want.double(), 0.0), "y rel": fp8_values(y, v)}
    return run


check("triton_to_mxfp8_dim0 200x320 bf16 floor", to_mxfp8_case(0, "floor"))
check("triton_to_mxfp8_dim0 200x320 bf16 rceil", to_mxfp8_case(0, "rceil"))
check("triton_to_mxfp8_dim1 384x640 bf16 floor", to_mxfp8_case(1, "floor"))
check("triton_to_mxfp8_dim1 384x640 bf16 rceil", to_mxfp8_case(1, "rceil"))


def mx_dequant_case(out_dtype):
    def run():
        k = load_mx_kernels()
        if len(k._dequant_mxfp8_kernel.configs) > 1:
            pin(k._dequant_mxfp8_kernel, ROW_TILE_SIZE=128, COL_TILE_SIZE=128, num_warps=4, num_stages=2)
        x = (torch.randn(200, 320) * 40).to(E4M3)
        s = torch.randint(120, 135, (200, 10), dtype=torch.uint8)
        # the scale bytes as uint8: the op's e8m0_scales.to(torch.uint8) converts an e8m0 tensor by value (2^-3
        # becomes 0), not by bits; torchao's own test passes all-zero data, which hides it
        out = k.triton_mxfp8_dequant_dim0(x, s, out_dtype, 32)
        ref = x.double() * e8m0(s).repeat_interleave(32, 1)
        return {"out": (out, ref, 1e-6 if out_dtype == F32 else 4e-3)}
    return run


check("triton_mxfp8_dequant_dim0 200x320 to fp32", mx_dequant_case(F32))
check("triton_mxfp8_dequant_dim0 200x320 to bf16", mx_dequant_case(BF16))


def block_rearrange_case():
    k = load_mx_kernels()
    rows, cols = 200, 10  # pads to 256 x 12
    s = torch.randint(0, 256, (rows, cols), dtype=torch.uint8)
    out = k.triton_mx_block_rearrange(s)
    # the cuBLAS block-scaled layout: 128 x 4 tiles, row r of a tile at (r % 32) * 16 + (r // 32) * 4 + c
    padded = torch.zeros(256, 12, dtype=torch.long)
    padded[:rows, :cols] = s.long()
    tiles = padded.view(2, 128, 3, 4).permute(0, 2, 1, 3)  # (row tile, col tile, 128, 4)
    want = tiles.reshape(2, 3, 4, 32, 4).permute(0, 1, 3, 2, 4).reshape(256, 12)
    return {"swizzled": (out.view(torch.uint8).long().view(256, 12), want, 0.0)}


check("triton_mx_block_rearrange 200x10 -> 256x12", block_rearrange_case)


# --- moe_training/ep/kernels.py ----------------------------------------------------------------------------------

def permute_indices_case():
    k = load("torchao.prototype.moe_training.ep.kernels")
    experts, ranks, align = 5, 3, 16
    tokens = torch.randint(0, 40, (ranks * experts,), dtype=torch.int32)
    tokens[4] = 0
    tokens[4 + experts] = 0
    tokens[4 + 2 * experts] = 0  # an expert no rank sends tokens to
    max_len = int(tokens.sum()) + experts * align
    got = k.generate_permute_indices(tokens, experts, ranks, max_len, align)
    want = k.generate_permute_indices(tokens, experts, ranks, max_len, align, use_cpu=True)
    return {"permuted_indices": (got[0].long(), want[0].long(), 0.0), "m_sizes": (got[1].long(), want[1].long(), 0.0),
            "m_offsets": (got[2].long(), want[2].long(), 0.0)}


check("generate_permute_indices 5 experts x 3 ranks (against fill_indices_cpu)", permute_indices_case)



# --- attention FP8 quantizers: prototype/attention/quantization/*.py, prototype/fp8_sdpa_inference/ ----------------

def pin_all(mod, **want):
    for v in list(mod.__dict__.values()):
        if isinstance(v, triton.runtime.Autotuner) and len(v.configs) > 1:
            pin(v, **want)


def qkv_checks(refs, outs, groups, inter=0.0):
    """refs: float64 q, k, v ([B, H, S, D], after any RoPE / Hadamard) the kernels quantize; outs: torchao's
    (q_fp8, k_fp8, v_fp8, q_descale, k_descale, v_descale), descales [B, H_kv] (q's per group of `groups` heads).
    inter: the relative rounding of an intermediate the library stores in the input's dtype before quantizing."""
    out = {}
    for i, (name, ref) in enumerate(zip("qkv", refs)):
        y, descale = outs[i], outs[3 + i]
        B, H = ref.shape[:2]
        g = groups if name == "q" else 1
        amax = ref.abs().amax((2, 3)).view(B, H // g, g).amax(2)
        out[f"{name} descale"] = (descale, amax / 448.0, max(1e-6, inter))
        v = ref / descale.double().repeat_interleave(g, 1)[:, :, None, None]
        d, w, tol = fp8_values(y, v)
        out[f"{name} rel"] = (d, w, tol + inter * 1.01)
    return out


def _popcount(t):
    c = torch.zeros_like(t)
    while bool((t > 0).any()):
        c += t & 1
        t = t >> 1
    return c


def hadamard(D):
    """The normalized Sylvester Hadamard matrix, H[i, j] = (-1)^popcount(i & j) / sqrt(D), as the butterfly builds
    it (stage s: x[d] + x[d ^ 2^s] where bit s of d is clear, x[d ^ 2^s] - x[d] where it is set)."""
    idx = torch.arange(D)
    return ((-1.0) ** _popcount(idx[:, None] & idx[None, :]).double()) / D ** 0.5


def qkv_case(kind, dtype=BF16, num_chunks=3):
    def run():
        B, Hq, Hkv, Sq, Skv, D = 2, 6, 2, 77, 50, 96
        if kind == "sdpa":
            m = load("torchao.prototype.attention.quantization.triton_qkv_quantization")
            pin_all(m, BLOCK_SIZE=512)
            q, k, v = (torch.randn(B, h, s, D).to(dtype) * 3 for h, s in ((Hq, Sq), (Hkv, Skv), (Hkv, Skv)))
            outs = m.triton_fp8_sdpa_quantize(q, k, v, num_chunks)
            return qkv_checks([t.double() for t in (q, k, v)], outs, Hq // Hkv)
        if kind.startswith("rope"):
            m = load("torchao.prototype.attention.quantization.triton_rope_qkv_quantization")
            pin_all(m, BLOCK_SIZE=512)
            S = Sq
            q, k, v = (torch.randn(B, S, h, D).to(dtype) * 3 for h in (Hq, Hkv, Hkv))
            ang = torch.rand(S, D // 2, dtype=F64) * 6
            inter = kind == "rope interleaved"
            full = ang.repeat_interleave(2, 1) if inter else torch.cat([ang, ang], 1)  # cos[s, d_first] is read
            cos, sin = full.cos().float(), full.sin().float()

            def rope(x):  # [B, S, H, D] -> [B, H, S, D], pairs (2i, 2i+1) or (j, j + D/2)
                x = x.double().transpose(1, 2)
                c, s_ = cos.double()[None, None], sin.double()[None, None]
                if inter:
                    a, b = x[..., 0::2], x[..., 1::2]
                    cc, ss = c[..., 0::2], s_[..., 0::2]
                    return torch.stack([a * cc - b * ss, b * cc + a * ss], -1).flatten(-2)
                a, b = x[..., :D // 2], x[..., D // 2:]
                cc, ss = c[..., :D // 2], s_[..., :D // 2]
                return torch.cat([a * cc - b * ss, b * cc + a * ss], -1)
            outs = m.triton_fp8_rope_sdpa_quantize(q, k, v, cos, sin, num_chunks, rope_interleaved=inter)
            return qkv_checks([rope(q), rope(k), v.double().transpose(1, 2)], outs, Hq // Hkv, 2.0 ** -8)
        # Hadamard: D a power of two (the transform's)
        m = load("torchao.prototype.attention.quantization.triton_hadamard_qkv_quantization")
        pin_all(m, num_warps=4)
        D2 = 64
        q, k, v = (torch.randn(B, h, s, D2).to(dtype) * 3 for h, s in ((Hq, Sq), (Hkv, Skv), (Hkv, Skv)))
        H = hadamard(D2)
        outs = m.triton_fp8_hadamard_sdpa_quantize(q, k, v, num_chunks)
        return qkv_checks([t.double() @ H.T for t in (q, k, v)], outs, Hq // Hkv, 2.0 ** -8)
    return run


check("triton_fp8_sdpa_quantize GQA 6/2 S 77/50 D 96 bf16, 3 chunks", qkv_case("sdpa"))
check("triton_fp8_sdpa_quantize GQA 6/2 fp16, chunks from the device", qkv_case("sdpa", F16, None))
check("triton_fp8_rope_sdpa_quantize half-split GQA 6/2 S 77 D 96", qkv_case("rope"))
check("triton_fp8_rope_sdpa_quantize interleaved GQA 6/2 S 77 D 96", qkv_case("rope interleaved"))
check("triton_fp8_hadamard_sdpa_quantize GQA 6/2 S 77/50 D 64", qkv_case("hadamard"))


def inverse_hadamard_case():
    m = load("torchao.prototype.attention.quantization.triton_hadamard_utils")
    x = torch.randn(2, 3, 45, 128).to(BF16)
    y = m.inverse_hadamard_transform(x, 4)
    return {"y": (y, x.double() @ hadamard(128).T, 1e-2)}


check("inverse_hadamard_transform 2x3x45x128 bf16", inverse_hadamard_case)


def fp8_sdpa_case(same_shape):
    def run():
        m = load("torchao.prototype.fp8_sdpa_inference.fp8_sdpa_quantization")
        pin_all(m, BLOCK_SIZE=512)
        B, H, D = 2, 3, 80
        Sq, Skv = (61, 61) if same_shape else (61, 23)
        q = torch.randn(B, H, Sq, D).to(BF16) * 2
        k, v = (torch.randn(B, H, Skv, D).to(BF16) * 3 for _ in range(2))
        outs = m.fp8_sdpa_quantize_func(q, k, v)
        return qkv_checks([t.double() for t in (q, k, v)], outs, 1)
    return run


check("fp8_sdpa_quantize_func fused q/k/v 2x3x61x80", fp8_sdpa_case(True))
check("fp8_sdpa_quantize_func q 61 / kv 23 separate kernels", fp8_sdpa_case(False))


# --- MoE training: moe_training/kernels/jagged_float8_scales.py ------------------------------------------------------

def jagged_case(kind, pow2=False):
    """Column-wise scales per (group of rows, column), groups from end offsets (one empty). The column count is a
    multiple of the tile width: the kernels mask their scale stores with arange(BLOCK_SIZE) < N instead of the
    column offsets, so a partial tile writes into the next group's scales, past the buffer for the last group
    (under Triton as well); the fused kernel's host code sets its own configs (BLOCK_SIZE 32 and 64) and tunes
    them, so N is a multiple of 64 there."""
    def run():
        m = load("torchao.prototype.moe_training.kernels.jagged_float8_scales")
        if len(m._triton_fp8_per_group_colwise_scales_kernel.configs) > 1:
            pin(m._triton_fp8_per_group_colwise_scales_kernel, BLOCK_SIZE=32, BLOCK_SIZE_ITER=64, num_warps=4,
                num_stages=2)
        K, N = (300, 96) if kind == "colwise" else (600, 192)  # 3 groups of <= 256 rows: the fused kernel
        ends = [64, 64, 200, 300] if kind == "colwise" else [150, 350, 600]
        x = (torch.randn(K, N) * 4).to(BF16)
        y, s = m.triton_fp8_per_group_colwise_scales(x, torch.tensor(ends, dtype=torch.int32), E4M3, pow2)
        xs, ys = x.double().T, y.T  # groups along the transposed rows' columns
        rows = xs.shape[0]
        starts = [0] + ends[:-1]
        scale_full = torch.empty_like(xs)
        want = []
        for g, (a, b) in enumerate(zip(starts, ends)):
            amax = xs[:, a:b].abs().amax(1) if b > a else torch.zeros(rows, dtype=F64)
            sc = (448.0 / amax.clamp_min(1e-12)).float().double()
            if pow2:
                sc = torch.exp2(torch.floor(torch.log2(sc)))
            want.append(sc)
            scale_full[:, a:b] = sc[:, None]
        want = torch.cat(want)
        v = xs * scale_full
        d, w, tol = fp8_values(ys, v.clamp(-448.0, 448.0))
        # relative: the empty group's scales are 448 / 1e-12
        return {"scales rel": (s.double() / want - 1, torch.zeros_like(want), 1e-6), "y rel": (d, w, tol)}
    return run


check("triton_fp8_per_group_colwise_scales 300x96 groups 64/0/136/100", jagged_case("colwise"))
check("triton_fp8_per_group_colwise_scales power-of-2 scales", jagged_case("colwise", True))
check("triton_fp8_per_group_colwise_scales fused 600x192 groups 150/200/250", jagged_case("colwise fused"))


# --- MoE training: moe_training/kernels/float8_rowwise.py ------------------------------------------------------------

def axiswise_scales(x, dim, pow2=False):
    """fp8 max / amax along dim (float32, as the kernels store it), kept as a broadcastable float64 tensor."""
    sc = (448.0 / x.abs().amax(dim, keepdim=True).clamp_min(1e-12)).float().double()
    return torch.exp2(torch.floor(torch.log2(sc))) if pow2 else sc


def rowwise_moe_case(kind, pow2=False):
    def run():
        m = load("torchao.prototype.moe_training.kernels.float8_rowwise")
        pin_all(m, BLOCK_SIZE_K=128, BLOCK_SIZE_N=64, num_warps=4)
        E, K, N = 3, 200, 136
        if kind == "rowwise 2d":
            x = (torch.randn(301, K) * 4).to(BF16)
            y, s = m.triton_fp8_rowwise_2d_scale_and_cast(x, E4M3, pow2)
            sc = axiswise_scales(x.double(), 1, pow2)
            return {"scales": (s, sc, 1e-6), "y rel": fp8_values(y, x.double() * s.double())}
        if kind == "colwise 3d":  # (E, K, N) column-major, scales per (expert, column) over K
            x = (torch.randn(E, N, K) * 4).to(BF16).transpose(1, 2)
            y, s = m.triton_fp8_colwise_3d_scale_and_cast(x, E4M3, pow2)
            sc = axiswise_scales(x.double(), 1, pow2)
            return {"scales": (s.reshape(E, 1, N), sc, 1e-6),
                    "y rel": fp8_values(y, x.double() * s.double().reshape(E, 1, N))}
        # 3-D transpose for the RHS: (E, K, N) -> (E, N, K), scales (E, K) over N; atomic_min or one reduction
        x = (torch.randn(E, K, N) * 4).to(BF16)
        fn = m.triton_fp8_rowwise_3d_transpose_rhs if kind == "3d transpose rhs" else \
            m.triton_fp8_rowwise_3d_transpose_rhs_fused_reduction
        y, s = fn(x, E4M3, pow2)
        sc = axiswise_scales(x.double(), 2, pow2)[..., 0]
        return {"scales": (s, sc, 1e-6),
                "y rel": fp8_values(y, x.double().transpose(1, 2) * s.double()[:, None, :])}
    return run


check("triton_fp8_rowwise_3d_transpose_rhs 3x200x136 (atomic_min)", rowwise_moe_case("3d transpose rhs"))
check("triton_fp8_rowwise_3d_transpose_rhs power-of-2 scales", rowwise_moe_case("3d transpose rhs", True))
check("triton_fp8_rowwise_3d_transpose_rhs_fused_reduction 3x200x136", rowwise_moe_case("fused reduction"))
check("triton_fp8_colwise_3d_scale_and_cast 3x200x136 column-major", rowwise_moe_case("colwise 3d"))
check("triton_fp8_rowwise_2d_scale_and_cast 301x200", rowwise_moe_case("rowwise 2d"))


# --- NVFP4 training: moe_training/nvfp4_training/group_weight_amax_triton.py -----------------------------------------

def group_weight_amax_case(with_nan):
    def run():
        m = load("torchao.prototype.moe_training.nvfp4_training.group_weight_amax_triton")
        if len(m._group_weight_amax_kernel.configs) > 1:
            pin(m._group_weight_amax_kernel, BLOCK=2048, U=2, num_warps=4)
        E, M, N = 3, 200, 136  # 27200 elements an expert: 7 programs of 4096, the last partial
        w = (torch.randn(E, M, N) * 3).to(BF16)
        w[1, 150, 7] = -1000.0
        if with_nan:
            w[2, 199, 135] = float("nan")  # the expert's last element, in the partial program
        got = m.triton_group_weight_amax(w, E)
        want = w.double().abs().amax((1, 2))
        if with_nan:  # NaN propagates to its expert (the op's contract); compare the others and the NaN's place
            return {"finite experts": (got[:2], want[:2], 0.0),
                    "NaN expert is NaN": (got[2:].isnan().double(), torch.ones(1, dtype=F64), 0.0)}
        return {"amax": (got, want, 0.0)}
    return run


check("triton_group_weight_amax 3x200x136 bf16 (atomic_max)", group_weight_amax_case(False))
check("triton_group_weight_amax with a NaN (propagate_nan ALL, atomic_max)", group_weight_amax_case(True))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:74s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {sum(r[1] != 'skip' for r in results)} torchao cases match the "
      f"references" + (f" ({sum(r[1] == 'skip' for r in results)} not run)" if any(r[1] == 'skip' for r in results)
                       else ""))
