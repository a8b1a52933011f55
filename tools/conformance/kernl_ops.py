"""kernl's Triton kernels (ELS-RD/kernl, src/kernl/implementations) on Tegula, through the conformance shim's
`triton` package, against torch float64 references written here from the math:

  - attention.py (`attention_forward`): the flash-attention forward `_fwd_kernel` (128 x 128 blocks, launched
    with positional arguments), causal and not, without a mask, with a broadcast vector mask (batch 1, heads 1,
    one row, -inf entries as kernl's tests draw them; the kernel swaps -inf for the dtype's minimum) and with a
    matrix bias mask (one per head), with load masks on M and N, a one-row query (cross attention), and
    non-contiguous q / k / v / mask (a column-major q, an interlaced batch, a transposed mask, as kernl's
    test_mixed_stride), float16 and bfloat16;
  - attention_skinny.py (`skinny_attention_forward`): the split-N attention for few query rows (`_fwd_part_1`
    per 128-key split with its maxima and sums, `_fwd_part_2` merging them), with and without a vector mask,
    causal, float16 and bfloat16;
  - attention_vec_mat.py (`attention_vec_mat_forward` and `vec_mat_wrapper`): the one-query attention as two
    vector-matrix products (`vec_mat`: keyword tl.load / tl.sum / tl.store arguments, a constexpr float
    SCALER, an in-kernel softmax), and vec_mat_wrapper alone with and without the transposed matrix;
  - batched_matmul.py (`batched_matmul`): `matmul_kernel` (grouped program order, a constexpr parameter
    rebound to a runtime minimum);
  - layer_norm.py (`layer_norm`): `_layer_norm_fwd_fused_single_pass` (Welford's running mean and variance
    over 4096-wide blocks; LayerNorm and RMSNorm, with and without bias), `_layer_norm_fwd_fused_multi_pass`
    and `layer_norm_xformers`, float32 and float16;
  - linear_layer.py (`linear_layer`) with activation_func.py: `kernel_fma` (x @ W^T + bias with a fused tanh,
    gelu, fast_gelu or relu, written with Triton 2.0's `tl.libdevice`, and the pre-activation saved to
    act_inputs), K a multiple of BLOCK_K and not (the K_LOAD_MASK_NEEDED heuristic), float32 and float16.

Not covered: the optimizer package (torch.fx / dynamo rewriting and CUDA graphs: no Triton kernel of its own),
experimental/ and tutorial/.

kernl was written for Triton 2.0 (its requirements pin triton==2.0.0), and five of its kernels' quirks decide the
shapes here (the cases step around them):

  - attention.py's and attention_skinny.py's `qk = tl.where(n_range_offs[None, :] < n_size, qk, -inf)` masks the
    key positions past n_size with the block's local offsets rather than the global ones, so in a partial last
    key block past the first the padded keys count in the softmax (with score 0) unless a mask or causality
    excludes them: non-causal cases without a mask have N under 128 (attention.py) or a multiple of 128
    (skinny, whose splits are 128 keys each);
  - attention.py assigns `attention_mask_batch_idx = (current_batch_idx,)` and replaces it by 0 under
    `if attention_mask_batch_size == 1`, attention_skinny.py likewise under `if MASK_BATCH_SIZE == 1`. Triton
    2.0 assigned a one-element tuple as its element; since Triton's tuples are values (3.x) the tuple stays a
    tuple, and where the mask's batch is not 1 (the runtime `if` or the tuple product) Triton refuses the
    kernel. Masks here have batch 1 (an integer argument equal to 1 is a constant, so the `if` folds away);
  - attention_vec_mat.py's in-kernel softmax runs over the vector padded to the next power of two, the padding
    loaded as 0 (so exp(0 - max) joins each sum): attention_vec_mat_forward's keys are 256 here; vec_mat_wrapper
    without softmax runs on sizes that are not powers of two;
  - batched_matmul.py masks K with `k_range_offs < k_size` (not the remaining K), so K is a multiple of
    BLOCK_K_SIZE (96 with the pinned 32);
  - linear_layer.py's kernel_fma wraps its row and column offsets modulo M and N ("trick to avoid masking") and
    then declares them `tl.max_contiguous(tl.multiple_of(offs % N, BLOCK_N), BLOCK_N)`: contiguous and aligned
    over the whole block, which is false in a partial last block. A false hint is undefined behaviour under
    Triton's contract. On a GPU Triton vectorizes at most 16 bytes a thread, so the wrapped columns still land
    where they belong when N is a multiple of 4 (float32) or 8 (float16), as in kernl's own tests (N = 8, 768);
    Tegula's CPU backend stores the BLOCK_N columns as one contiguous run from the first, past the row's end
    (past the buffer on the last row: heap corruption, with N = 100 and BLOCK_N = 32). The wrapped rows (a
    strided dimension) do no harm on either. So N is a multiple of the pinned BLOCK_N here; M is 77 in one case.

The autotuned kernels are pinned to one config (below), except in two cases that let an autotuner time several of
its own configs: vec_mat's whole list, and kernel_fma over three configs (through its prune_configs_by with the
stand-in perf model).

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5; float16 5e-3
(layer norms, linear, batched matmul) and 1e-2 for attention (P is rounded to the input dtype before P @ V),
bfloat16 3e-2 (skinny's float16 partial outputs 1e-2).

kernl is not part of Tegula; point this at a checkout (a directory holding src/kernl/implementations; written
against commit 91e2cd92db44d503874d39a9f6dec42c9f481a8e of 2023-07-20, whose implementations/ this imports
unchanged; src/kernl/__init__.py is empty, so the package imports as it is):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/kernl_ops.py <kernl checkout>

What the files reach at module level or in their host code that a CPU machine, or the stand-in `triton`
package, lacks is stood in for (none of it is a Triton kernel or reached from one):

  - triton.ops.matmul_perf_model (linear_layer.py imports early_config_prune and estimate_matmul_time from it
    for kernel_fma's autotuner; Triton removed triton.ops in 3.0): a module whose early_config_prune returns
    the configs it is given and whose estimate_matmul_time gives 0 (kernel_fma is pinned to one config, below);
  - torch.empty maps device="cuda" to TEGULA_CONFORMANCE_DEVICE (layer_norm.py, attention_skinny.py and
    attention_vec_mat.py allocate their mean / rstd and intermediate buffers so).

`tl.libdevice` (activation_func.py's tanh and erf; Triton 2.0's name, gone in Triton 3) is Tegula's own: it is
not stood in for.

Autotuning: vec_mat (7 configs), matmul_kernel (10) and kernel_fma (98, pruned by the perf model) are each pinned
to one config of their own list (the autotuner's `configs` set to that one, as flash_attn_ops.py does), named at
each case, but for the two tuned cases above; attention.py's autotuner is commented out in kernl (the launch
passes 128 x 128 blocks itself).

Prints one line per case (the largest absolute difference from the reference over the case's outputs, each
output's difference, or the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set.
"""

import math
import os
import pathlib
import sys
import types
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: kernl_ops.py <kernl checkout>")
KERNL = pathlib.Path(sys.argv[1]).resolve()
for _file in ("attention.py", "attention_skinny.py", "attention_vec_mat.py", "batched_matmul.py", "layer_norm.py",
              "linear_layer.py", "activation_func.py"):
    if not (KERNL / "src" / "kernl" / "implementations" / _file).is_file():
        sys.exit(f"{KERNL} holds no src/kernl/implementations/{_file}")
sys.path.insert(0, str(SHIM))
sys.path.insert(1, str(KERNL / "src"))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning, message=r".*torch\.cuda\.amp\.custom_")

import torch  # noqa: E402

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


if "triton.ops" not in sys.modules:
    module("triton.ops")
module("triton.ops.matmul_perf_model", early_config_prune=lambda configs, named_args, **kwargs: configs,
       estimate_matmul_time=lambda *args, **kwargs: 0.0)

if DEVICE != "cuda":
    _empty = torch.empty

    def _empty_on_device(*args, device=None, **kwargs):
        """torch.empty with device="cuda" -> TEGULA_CONFORMANCE_DEVICE."""
        if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
            device = DEVICE
        return _empty(*args, device=device, **kwargs)

    torch.empty = _empty_on_device

from kernl.implementations import attention as kattention  # noqa: E402
from kernl.implementations import attention_skinny, attention_vec_mat, batched_matmul, layer_norm  # noqa: E402
from kernl.implementations import linear_layer  # noqa: E402

_ORIGINAL_CONFIGS = {}


def pin(tuner, *wants, **want):
    """Keeps the first config of the tuner's own list whose meta-parameters (and num_warps / num_stages) match want
    (or, given several dicts, the first match of each: the tuner then times them; none: the whole list)."""
    configs = _ORIGINAL_CONFIGS.setdefault(id(tuner), list(tuner.configs))
    kept = []
    for w in wants or (want,):
        match = [c for c in configs if all((c.kwargs[k] if k in c.kwargs else getattr(c, k, None)) == v
                                           for k, v in w.items())]
        if not match:
            raise LookupError(f"no config of {tuner!r} has {w}")
        kept.append(match[0])
    tuner.configs = kept if want or wants else configs
    tuner.cache.clear()
    return kept


# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
ATTN_TOL = {F16: 1e-2, BF16: 3e-2}


def check(name, case):
    comparisons_check(results, name, case, ("",))


def attention_ref(q, k, v, scale, causal, mask):
    """float64 softmax(q k^T * scale + mask [, causal]) v."""
    s = torch.einsum("bhmd,bhnd->bhmn", q.double(), k.double()) * scale
    if mask is not None:
        s = s + mask.double()
    if causal:
        M, N = s.shape[-2:]
        s = s.masked_fill(~torch.ones(M, N, dtype=torch.bool).tril(), float("-inf"))
    return torch.einsum("bhmn,bhnd->bhmd", torch.softmax(s, -1), v.double())


def vector_mask(N, dtype):
    """kernl's generate_broadcast_mask for batch 1: 0 for the first r positions (r random in [1, N)), -inf after."""
    keep = torch.randint(1, N, (1,))[:, None] > torch.arange(N)[None, :]
    return torch.where(keep, 0.0, float("-inf")).reshape(1, 1, 1, N).to(dtype)


def attention_case(fn, B, H, M, N, D, dtype, causal=False, mask=None, scale=0.3, layout=None, tol=None):
    """fn(q, k, v, output, sm_scale, is_causal, attention_mask) against float64 attention. mask: None, "vector"
    (1, 1, 1, N) or "bias" (1, H, M, N); layout "mixed": kernl's test_mixed_stride strides."""
    def run():
        if layout == "mixed":
            q = torch.randn(B, H, D, M).to(dtype).transpose(-1, -2)  # column-major rows
            k = torch.randn(H, B, N, D).to(dtype).transpose(0, 1)  # interlaced batch
            v = torch.randn(B, H, D, N).to(dtype).transpose(-1, -2)
        else:
            q, k, v = (torch.randn(B, H, M, D).to(dtype), torch.randn(B, H, N, D).to(dtype),
                       torch.randn(B, H, N, D).to(dtype))
        if mask == "vector":
            m = vector_mask(N, dtype)
        elif mask == "bias":
            m = torch.rand(1, H, M, N).to(dtype) if layout != "mixed" else \
                torch.rand(H, 1, N, M).to(dtype).transpose(0, 1).transpose(-1, -2)
        else:
            m = None
        out = torch.empty(B, H, M, D, dtype=dtype)
        got = fn(q, k, v, out, scale, causal, m)
        return_ = {"o": (got, attention_ref(q, k, v, scale, causal, m), tol or ATTN_TOL[dtype])}
        yield return_
    return run


# --- attention.py ----------------------------------------------------------------------------------------------

flash = kattention.attention_forward
check("attention non-causal fp16 2x3x77x77 D64", attention_case(flash, 2, 3, 77, 77, 64, F16))
check("attention causal fp16 2x3x200x200 D64", attention_case(flash, 2, 3, 200, 200, 64, F16, causal=True))
check("attention causal bf16 1x2x100x100 D32", attention_case(flash, 1, 2, 100, 100, 32, BF16, causal=True))
check("attention vector mask fp16 2x3x150x150 D64", attention_case(flash, 2, 3, 150, 150, 64, F16, mask="vector"))
check("attention bias mask (per head) fp16 2x3x150x150 D64",
      attention_case(flash, 2, 3, 150, 150, 64, F16, mask="bias"))
check("attention causal + bias mask fp16 1x2x130x130 D64",
      attention_case(flash, 1, 2, 130, 130, 64, F16, causal=True, mask="bias"))
check("attention cross 1 query, mask (1,H,1,24) fp16 1x8x1x24 D64",
      attention_case(flash, 1, 8, 1, 24, 64, F16, mask="bias", scale=1.0))
check("attention mixed strides + transposed bias mask fp16 2x3x90x90 D64",
      attention_case(flash, 2, 3, 90, 90, 64, F16, mask="bias", layout="mixed"))
check("attention M != N fp16 2x2x37x100 D16 vector mask",
      attention_case(flash, 2, 2, 37, 100, 16, F16, mask="vector"))
check("attention non-causal fp16 1x2x50x120 D128 (num_warps 8)", attention_case(flash, 1, 2, 50, 120, 128, F16))
check("attention causal + vector mask bf16 2x2x140x140 D64",
      attention_case(flash, 2, 2, 140, 140, 64, BF16, causal=True, mask="vector"))
check("attention 1 query 1 key fp16 3x2x1x1 D32", attention_case(flash, 3, 2, 1, 1, 32, F16))
check("attention causal fp16 1x3x257x257 D64 (kernl's test length)",
      attention_case(flash, 1, 3, 257, 257, 64, F16, causal=True))
check("attention non-causal vector mask fp16 4x2x33x33 D64 (kernl's test length)",
      attention_case(flash, 4, 2, 33, 33, 64, F16, mask="vector"))

# --- attention_skinny.py ---------------------------------------------------------------------------------------

skinny = attention_skinny.skinny_attention_forward
check("skinny attention fp16 2x6x1x384 D64", attention_case(skinny, 2, 6, 1, 384, 64, F16))
check("skinny attention fp16 beams 5: 1x3x5x300 D64 vector mask",
      attention_case(skinny, 1, 3, 5, 300, 64, F16, mask="vector"))
check("skinny attention fp16 2x2x3x100 D32", attention_case(skinny, 2, 2, 3, 100, 32, F16))
check("skinny attention causal fp16 1x2x40x40 D64", attention_case(skinny, 1, 2, 40, 40, 64, F16, causal=True))
check("skinny attention bias mask fp16 1x2x20x200 D64",
      attention_case(skinny, 1, 2, 20, 200, 64, F16, mask="bias"))
check("skinny attention bf16 1x3x2x256 D64", attention_case(skinny, 1, 3, 2, 256, 64, BF16))


# --- attention_vec_mat.py ----------------------------------------------------------------------------------------

def vec_mat_attention(B, H, N, D, dtype, n_size=16):
    """n_size None: vec_mat's whole config list, timed by the autotuner."""
    def run():
        if n_size is None:
            pin(attention_vec_mat.vec_mat)
        else:
            pin(attention_vec_mat.vec_mat, N_SIZE=n_size)
        q = torch.randn(B, H, 1, D).to(dtype)
        k, v = torch.randn(B, H, N, D).to(dtype), torch.randn(B, H, N, D).to(dtype)
        out = torch.empty(B, H, 1, D, dtype=dtype)
        got = attention_vec_mat.attention_vec_mat_forward(q, k, v, out, 0.3)
        return_ = {"o": (got, attention_ref(q, k, v, 0.3, False, None), ATTN_TOL[dtype])}
        yield return_
    return run


def vec_mat_case(B, H, R, C, transpose, scaler, n_size=16):
    """vec_mat_wrapper: out[b, h, 0, :] = scaler * vec[b, h, 0, :] @ M (M = matrix, or its transpose), float32."""
    def run():
        pin(attention_vec_mat.vec_mat, N_SIZE=n_size)
        vec = torch.randn(B, H, 1, R)
        matrix = torch.randn(B, H, C, R) if transpose else torch.randn(B, H, R, C)
        out = torch.empty(B, H, 1, C)
        got = attention_vec_mat.vec_mat_wrapper(vec, matrix, out, scaler, False, transpose)
        mat = matrix.double().transpose(-1, -2) if transpose else matrix.double()
        return_ = {"out": (got, scaler * vec.double() @ mat, 1e-5)}
        yield return_
    return run


check("attention_vec_mat fp16 2x3x1x256 D64 (N_SIZE 16)", vec_mat_attention(2, 3, 256, 64, F16))
check("attention_vec_mat fp16 1x4x1x128 D48 (N_SIZE 64)", vec_mat_attention(1, 4, 128, 48, F16, n_size=64))
check("attention_vec_mat fp16 1x2x1x128 D96 tuned over its 7 configs", vec_mat_attention(1, 2, 128, 96, F16, None))
check("attention_vec_mat fp16 2x2x1x64 D80 (N_SIZE 1)", vec_mat_attention(2, 2, 64, 80, F16, n_size=1))
check("attention_vec_mat bf16 1x3x1x512 D64 (N_SIZE 4)", vec_mat_attention(1, 3, 512, 64, BF16, n_size=4))
check("vec_mat_wrapper fp32 2x3 100x77 (N_SIZE 16)", vec_mat_case(2, 3, 100, 77, False, 1.0))
check("vec_mat_wrapper transposed fp32 2x3 80x300 scaler 0.3 (N_SIZE 32)", vec_mat_case(2, 3, 80, 300, True, 0.3, 32))
check("vec_mat_wrapper fp32 1x2 33x7 (N_SIZE 2)", vec_mat_case(1, 2, 33, 7, False, 2.5, 2))


# --- batched_matmul.py ---------------------------------------------------------------------------------------------

def bmm_case(B, M, K, N, blocks):
    def run():
        pin(batched_matmul.matmul_kernel, BLOCK_M_SIZE=blocks[0], BLOCK_N_SIZE=blocks[1], BLOCK_K_SIZE=blocks[2])
        a, b = torch.randn(B, M, K).half(), torch.randn(B, K, N).half()
        got = batched_matmul.batched_matmul(a, b)
        return_ = {"c": (got, a.double() @ b.double(), 5e-3)}
        yield return_
    return run


check("batched_matmul fp16 3x77x96x50 (64x32x32)", bmm_case(3, 77, 96, 50, (64, 32, 32)))
check("batched_matmul fp16 2x200x160x300 (32x64x32)", bmm_case(2, 200, 160, 300, (32, 64, 32)))
check("batched_matmul fp16 1x600x64x90 (64x32x32, 10 row blocks: groups of 8 and 2)",
      bmm_case(1, 600, 64, 90, (64, 32, 32)))


# --- layer_norm.py -------------------------------------------------------------------------------------------------

def layer_norm_case(impl, shape, dtype, rms=False, bias=True, eps=1e-5):
    def run():
        x = (torch.randn(shape) * 2 + 0.5).to(dtype)
        w = (torch.rand(shape[-1]) + 0.5).to(dtype)
        b = torch.randn(shape[-1]).to(dtype) if bias else None
        got = layer_norm.layer_norm(x, w, b, eps, getattr(layer_norm, impl), rms)
        e = max(eps, 1.6e-5) if dtype == F16 else eps  # the op raises eps for float16
        xd = x.double()
        if rms:
            ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + e)
        else:
            ref = (xd - xd.mean(-1, keepdim=True)) * torch.rsqrt(xd.var(-1, unbiased=False, keepdim=True) + e)
        ref = ref * w.double() + (b.double() if bias else 0)
        return_ = {"y": (got, ref, 1e-5 if dtype == F32 else 5e-3)}
        yield return_
    return run


check("layer_norm single pass fp32 3x37x300", layer_norm_case("_layer_norm_fwd_fused_single_pass", (3, 37, 300), F32))
check("layer_norm single pass fp32 7x5000 (2 blocks, Welford)",
      layer_norm_case("_layer_norm_fwd_fused_single_pass", (7, 5000), F32))
check("layer_norm single pass fp16 5x9000 no bias (3 blocks)",
      layer_norm_case("_layer_norm_fwd_fused_single_pass", (5, 9000), F16, bias=False))
check("rms_norm single pass fp32 4x29x777", layer_norm_case("_layer_norm_fwd_fused_single_pass", (4, 29, 777), F32,
                                                           rms=True))
check("rms_norm single pass fp16 6x5000 no bias", layer_norm_case("_layer_norm_fwd_fused_single_pass", (6, 5000), F16,
                                                                 rms=True, bias=False))
check("rms_norm single pass fp32 5x4100 with bias (2 blocks)",
      layer_norm_case("_layer_norm_fwd_fused_single_pass", (5, 4100), F32, rms=True))
check("layer_norm multi pass fp32 7x5000", layer_norm_case("_layer_norm_fwd_fused_multi_pass", (7, 5000), F32))
check("layer_norm multi pass fp16 3x37x300", layer_norm_case("_layer_norm_fwd_fused_multi_pass", (3, 37, 300), F16))
check("layer_norm xformers fp32 3x37x300", layer_norm_case("layer_norm_xformers", (3, 37, 300), F32))
check("layer_norm xformers fp16 11x3000", layer_norm_case("layer_norm_xformers", (11, 3000), F16))


# --- linear_layer.py / activation_func.py ----------------------------------------------------------------------

SQRT2PI = math.sqrt(2.0 / math.pi)
ACTIVATIONS = {
    "": lambda x: x,
    "tanh": torch.tanh,
    "gelu": lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "fast_gelu": lambda x: 0.5 * x * (1 + torch.tanh(SQRT2PI * (x + 0.044715 * x * x * x))),
    "relu": torch.relu,
}


def linear_case(shape, N, activation, dtype, bias=True, save=True, blocks=(64, 32, 32), transposed_x=False):
    """blocks: one (BLOCK_M, BLOCK_N, BLOCK_K), or a list of them, which kernel_fma's autotuner prunes and times."""
    def run():
        pin(linear_layer.kernel_fma, *[dict(BLOCK_M=b[0], BLOCK_N=b[1], BLOCK_K=b[2], SPLIT_K=1)
                                       for b in (blocks if isinstance(blocks, list) else [blocks])])
        K = shape[-1]
        if transposed_x:  # kernl's test_linear_layer "non-contiguous": x = randn(K, M).mT
            x = (torch.randn(shape[::-1]) / 2).to(dtype).mT
        else:
            x = (torch.randn(shape) / 2).to(dtype)
        w = (torch.randn(N, K) / K ** 0.5).to(dtype)
        b = torch.randn(N).to(dtype) if bias else None
        M = x.numel() // K
        act_inputs = torch.empty(M, N, dtype=F32) if save else None
        got = linear_layer.linear_layer(x, w, b, activation, act_inputs)
        pre = x.double().reshape(M, K) @ w.double().T + (b.double() if bias else 0)
        tol = 1e-5 if dtype == F32 else 5e-3
        return_ = {"y": (got.reshape(M, N), ACTIVATIONS[activation](pre), tol)}
        if save:
            return_["act_inputs"] = (act_inputs, pre, tol)
        yield return_
    return run


# kernel_fma wraps its row and column offsets modulo M and N and then declares them contiguous and aligned
# (tl.max_contiguous(tl.multiple_of(offs % N, BLOCK_N), BLOCK_N)), which is false in a partial last block: N is a
# multiple of the pinned BLOCK_N here (see the docstring). K need not be of BLOCK_K.
check("linear_layer fp32 192x150->160 bias, no activation (K masked)", linear_case((192, 150), 160, "", F32))
check("linear_layer fp32 3x64x150->96 tanh", linear_case((3, 64, 150), 96, "tanh", F32))
check("linear_layer fp32 192x96->96 gelu (K unmasked)", linear_case((192, 96), 96, "gelu", F32))
check("linear_layer fp32 320x150->160 fast_gelu", linear_case((320, 150), 160, "fast_gelu", F32))
check("linear_layer fp32 192x150->96 relu no bias", linear_case((192, 150), 96, "relu", F32, bias=False))
check("linear_layer fp16 3x64x200->224 gelu, no act_inputs", linear_case((3, 64, 200), 224, "gelu", F16, save=False))
check("linear_layer fp16 80x96->96 fast_gelu (16x32x32, io-bound config)",
      linear_case((80, 96), 96, "fast_gelu", F16, blocks=(16, 32, 32)))
check("linear_layer fp32 77x150->96 tanh (M wrapped in the last row block)", linear_case((77, 150), 96, "tanh", F32))
# N = 100 wraps inside the last 32-column block, where kernl's max_contiguous promise is false: Tegula's CPU backend
# checks the promise and computes every address there (before 90de099 it wrote past the rows and the buffer).
check("linear_layer fp32 77x150->100 gelu (N wrapped in the last column block: a false contiguity hint)",
      linear_case((77, 150), 100, "gelu", F32))
check("linear_layer fp32 192x150->96 gelu, x non-contiguous (x.mT)",
      linear_case((192, 150), 96, "gelu", F32, transposed_x=True))
check("linear_layer fp32 192x150->192 tanh tuned over (64x32x32, 32x64x32, 64x32x64)",
      linear_case((192, 150), 192, "tanh", F32, blocks=[(64, 32, 32), (32, 64, 32), (64, 32, 64)]))
check("linear_layer fp32 400x70->96 relu (16x32x32: 25 row blocks, groups of 8 and 1)",
      linear_case((400, 70), 96, "relu", F32, blocks=(16, 32, 32)))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:72s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} kernl cases match the torch float64 references")
