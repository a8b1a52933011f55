"""DeepSeek-V3's Triton kernels (deepseek-ai/DeepSeek-V3, inference/kernel.py) on Tegula, through the conformance
shim's `triton` package, against torch float64 (or exact) references written here from the math:

  - `act_quant` (`act_quant_kernel`): per 128 (or 64) consecutive elements of the last dimension, scale =
    max(absmax, 1e-4) / 448 and codes x / scale in float8 e4m3; with scale_fmt "ue8m0" the scale is rounded up to
    a power of two (2 ** ceil(log2(scale))); float32 and bfloat16 inputs, 2-D and 3-D, an all-zero block (the
    1e-4 floor);
  - `weight_dequant` (`weight_dequant_kernel`): float8 e4m3 weights times their 128 x 128 block scales, shapes
    that end in partial blocks (300 x 200, the kernel's masks) and whole ones, into torch's default dtype:
    float32, and bfloat16 as DeepSeek-V3's model sets it (torch.set_default_dtype);
  - `fp8_gemm` (`fp8_gemm_kernel`): a (M, K) float8 with per-row, per-128-column scales times b (N, K) float8 with
    128 x 128 block scales, C = sum over K blocks of (a_blk @ b_blk.T) * a_s * b_s, into the default dtype
    (float32 / bfloat16); M 37 (a partial row block: the kernel wraps rows with `% M` and masks the store),
    N 200 / 300 (a partial 128-column scale block), K 384 and 320 (a partial K block: the kernel's K masks), 3-D a;
    through its autotuner pinned to one config (BLOCK_SIZE_M 32, N 64, K 128; and M 16 / N 128) and once over all
    36 of its configs, as DeepSeek-V3 runs it; and act_quant -> fp8_gemm end to end, against a weight quantized
    here.

Inputs are seeded per case (the seed is the case name's CRC, so -k reproduces a case's data). A case passes when
every output's largest difference from its reference is at most the tolerance times the reference's largest
magnitude: float32 1e-5, bfloat16 2e-2; act_quant's scales 1e-6 relative (power-of-two scales exactly), its
codes within half an e4m3 step of x / scale, and bit for bit against torch's rounding of x / scale (ties to
even) where the scale is a power of two, so the quotient is exact.

DeepSeek-V3 is not part of Tegula; point this at a tree holding its inference/kernel.py (`git archive HEAD
inference/kernel.py | tar -x -C <tree>`; written against commit 9b4e9788e4a3a731f7567338ed15d3ec549ce03b of
2025-08-28):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/deepseek_v3_ops.py <tree> [-k SUBSTRING] \
        [--json out.json]

kernel.py imports only torch and triton and its host functions allocate like their inputs, so it loads from
its file unchanged and nothing is stood in for. act_quant needs the last dimension to be a multiple of the
block (its loads are unmasked), so its shapes are (the library asserts it). Prints one line per case (ok / FAIL,
the largest difference from the reference, each output's difference or the first line of the error) and the
total.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import pathlib
import sys
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a tree holding DeepSeek-V3's inference/kernel.py")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
KERNEL_FILE = ARGS.source.resolve() / "inference/kernel.py"
if not KERNEL_FILE.is_file():
    sys.exit(f"{ARGS.source} holds no inference/kernel.py")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, fp8_codes  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

_spec = importlib.util.spec_from_file_location("deepseek_v3_kernel", KERNEL_FILE)
kernel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel)

F32, BF16, U8 = torch.float32, torch.bfloat16, torch.uint8
E4M3 = torch.float8_e4m3fn
TOL = {F32: 1e-5, BF16: 2e-2}
SHORT = {F32: "fp32", BF16: "bf16"}
cdiv = triton.cdiv
ALL_GEMM_CONFIGS = list(kernel.fp8_gemm_kernel.configs)
results = []


def case(name, run):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    check(results, name, run, stages=("run",))


@contextlib.contextmanager
def default_dtype(dtype):
    """torch's default dtype, which weight_dequant and fp8_gemm give their outputs (the model sets bfloat16)."""
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


def gemm_configs(**want):
    """fp8_gemm_kernel's autotuner with the one of its configs whose meta-parameters match `want` (or all of
    them when want is empty), its tuning cache cleared."""
    tuner = kernel.fp8_gemm_kernel
    keep = [c for c in ALL_GEMM_CONFIGS if all(c.kwargs.get(k, getattr(c, k, None)) == v for k, v in want.items())]
    if not keep:
        raise LookupError(f"no config of fp8_gemm_kernel has {want}")
    tuner.configs = keep[:1] if want else keep
    tuner.cache.clear()


def blocks(s, shape, bm, bn):
    """Block scales s expanded to the elements of a matrix of `shape` (partial blocks at the edges)."""
    return s.repeat_interleave(bm, 0)[:shape[0]].repeat_interleave(bn, 1)[:, :shape[1]]


def to_fp8(x, scale):
    """x / scale rounded to float8 e4m3 (torch's rounding; the inputs here stay within +-448)."""
    return (x.double() / scale).to(E4M3)


# --- act_quant -----------------------------------------------------------------------------------------------------

def act_quant_case(dtype, shape, block=128, scale_fmt=None, zero_block=False):
    def run():
        x = (torch.randn(*shape) * torch.rand(*shape[:-1], 1) * 8).to(dtype)
        if zero_block:
            x.view(-1, shape[-1])[1, block:2 * block] = 0
        y, s = kernel.act_quant(x, block, scale_fmt)
        groups = x.double().reshape(*shape[:-1], shape[-1] // block, block)
        ref_s = groups.abs().amax(-1).clamp_min(1e-4) / 448.0
        if scale_fmt == "ue8m0":
            ref_s = torch.exp2(torch.ceil(torch.log2(ref_s)))
        quotient = (groups / ref_s[..., None]).reshape(shape)
        out = {"shape / dtype": exact(torch.tensor([*y.shape, *s.shape, y.dtype == E4M3, s.dtype == F32]),
                                      torch.tensor([*shape, *ref_s.shape, True, True]))}
        if scale_fmt == "ue8m0":  # a power of two: the scale exactly, the codes bit for bit
            out["scale"] = exact(s, ref_s)
            out["codes (bits)"] = exact(y.view(U8), quotient.float().to(E4M3).view(U8))
        else:
            out["scale (relative)"] = ((s.double() - ref_s) / ref_s, torch.zeros_like(ref_s), 1e-6)
            out["codes"] = fp8_codes(y, quotient)
        yield out
    return run


# --- weight_dequant ------------------------------------------------------------------------------------------------

def weight_dequant_case(out_dtype, shape):
    def run():
        M, N = shape
        x = (torch.randn(M, N) * 60).to(E4M3)
        s = torch.rand(cdiv(M, 128), cdiv(N, 128)) + 0.05
        with default_dtype(out_dtype):
            y = kernel.weight_dequant(x, s)
        yield {"y": (y, x.double() * blocks(s.double(), shape, 128, 128), TOL[out_dtype]),
               "dtype": exact(torch.tensor(y.dtype == out_dtype), torch.tensor(True))}
    return run


# --- fp8_gemm ------------------------------------------------------------------------------------------------------

def fp8_gemm_reference(a, a_s, b, b_s):
    """sum over the 128-wide K blocks of (a_blk @ b_blk.T) * a_s[:, blk] * b_s[n // 128, blk], in float64."""
    K = a.shape[-1]
    a2 = a.reshape(-1, K).double() * blocks(a_s.reshape(-1, a_s.shape[-1]).double(), (a.numel() // K, K), 1, 128)
    b2 = b.double() * blocks(b_s.double(), b.shape, 128, 128)
    return (a2 @ b2.T).reshape(*a.shape[:-1], b.shape[0])


def gemm_inputs(a_shape, N):
    K = a_shape[-1]
    a = (torch.randn(*a_shape) * 40).to(E4M3)
    a_s = torch.rand(*a_shape[:-1], cdiv(K, 128)) / 50 + 1e-3
    b = (torch.randn(N, K) * 40).to(E4M3)
    b_s = torch.rand(cdiv(N, 128), cdiv(K, 128)) / 50 + 1e-3
    return a, a_s, b, b_s


def fp8_gemm_case(out_dtype, a_shape, N, config):
    def run():
        gemm_configs(**config)
        a, a_s, b, b_s = gemm_inputs(a_shape, N)
        with default_dtype(out_dtype):
            c = kernel.fp8_gemm(a, a_s, b, b_s)
        yield {"c": (c, fp8_gemm_reference(a, a_s, b, b_s), TOL[out_dtype]),
               "shape / dtype": exact(torch.tensor([*c.shape, c.dtype == out_dtype]),
                                      torch.tensor([*a_shape[:-1], N, True]))}
    return run


def fp8_gemm_autotuned():
    def run():
        gemm_configs()
        a, a_s, b, b_s = gemm_inputs((37, 384), 200)
        c = kernel.fp8_gemm(a, a_s, b, b_s)
        yield {"c": (c, fp8_gemm_reference(a, a_s, b, b_s), TOL[F32])}
    return run


def act_quant_gemm(out_dtype):
    """act_quant of bf16 activations, then fp8_gemm with a weight quantized here in 128 x 128 blocks (scale =
    block absmax / 448), as DeepSeek-V3's Linear does with an fp8 weight."""
    def run():
        gemm_configs(BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, num_stages=3)
        M0, M1, K, N = 2, 9, 512, 300
        x = torch.randn(M0, M1, K).to(BF16)
        w = torch.randn(N, K) * 0.05
        w_s = blocks_absmax(w) / 448.0
        w_q = to_fp8(w, blocks(w_s, w.shape, 128, 128))
        w_s = w_s.float()
        x_q, x_s = kernel.act_quant(x)
        with default_dtype(out_dtype):
            y = kernel.fp8_gemm(x_q, x_s, w_q, w_s)
        yield {"y": (y, fp8_gemm_reference(x_q, x_s, w_q, w_s), TOL[out_dtype])}
    return run


def blocks_absmax(w):
    """The absolute maximum of every 128 x 128 block of w (partial blocks at the edges), in float64."""
    M, N = w.shape
    return torch.stack([torch.stack([w[i:i + 128, j:j + 128].double().abs().max() for j in range(0, N, 128)])
                        for i in range(0, M, 128)])


# --- cases ---------------------------------------------------------------------------------------------------------

case("act_quant fp32 3 x 5 x 384, an all-zero block", act_quant_case(F32, (3, 5, 384), zero_block=True))
case("act_quant bf16 7 x 640", act_quant_case(BF16, (7, 640)))
case("act_quant bf16 7 x 640 ue8m0 scales", act_quant_case(BF16, (7, 640), scale_fmt="ue8m0"))
case("act_quant fp32 2 x 3 x 448, block 64, ue8m0 scales, a zero block",
     act_quant_case(F32, (2, 3, 448), block=64, scale_fmt="ue8m0", zero_block=True))
for _dtype in (F32, BF16):
    case(f"weight_dequant e4m3 300 x 200 -> {SHORT[_dtype]} (partial blocks)", weight_dequant_case(_dtype, (300, 200)))
case("weight_dequant e4m3 256 x 384 -> fp32", weight_dequant_case(F32, (256, 384)))
_PIN = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, num_stages=3)
for _dtype in (F32, BF16):
    case(f"fp8_gemm 37 x 384 @ (200 x 384).T -> {SHORT[_dtype]}, M 32 / N 64", fp8_gemm_case(_dtype, (37, 384), 200,
                                                                                             _PIN))
case("fp8_gemm 2 x 19 x 320 @ (300 x 320).T -> fp32 (partial K block), M 16 / N 128",
     fp8_gemm_case(F32, (2, 19, 320), 300, dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=128, num_stages=3)))
case("fp8_gemm 1 x 256 @ (128 x 256).T -> bf16, M 32 / N 64", fp8_gemm_case(BF16, (1, 256), 128, _PIN))
for _dtype in (F32, BF16):
    case(f"act_quant -> fp8_gemm bf16 2 x 9 x 512 @ (300 x 512).T -> {SHORT[_dtype]}", act_quant_gemm(_dtype))
case("fp8_gemm 37 x 384 @ (200 x 384).T -> fp32, autotuned over all 36 configs", fp8_gemm_autotuned())

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:84s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} cases match")
if ARGS.json:
    ARGS.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                     for n, s, w, t in results], indent=1))
