"""bitsandbytes' Triton kernels (bitsandbytes-foundation/bitsandbytes) on Tegula, through the conformance shim's
`triton` package, against float64 references written here from the math (exact ones for codes and integer results):

  - bitsandbytes/backends/triton (the Triton backend bitsandbytes registers for XPU): through ops.py's functions,
    kernels_8bit_quant.py's `quantize_8bit_blockwise_kernel` (quantize_blockwise: the 256-entry dynamic map searched
    by bisection) and `dequant_8bit_kernel` (dequantize_blockwise and its in-place form, float32 / float16 /
    bfloat16 out); kernels_4bit.py's `quantize_nf4_blockwise_kernel` / `quantize_fp4_blockwise_kernel`
    (quantize_4bit: nested tl.where thresholds, split() of a (.., 2) tile into nibble pairs, uint8 and bfloat16
    storage), `dequant_nf4_kernel` / `dequant_fp4_kernel` (dequantize_4bit: tl.interleave of the nibbles),
    `dequant_4bit_kernel` (gemv_4bit: the code table through memory) and the debug quantizer
    `quantize_4bit_blockwise_kernel` (no host function: launched directly with the NF4 table, as its parameters
    say); kernels_optim.py's 32-bit optimizers (`_optimizer_update_{1,2}state_32bit_triton_kernel` with the
    `_optimizer_precondition_*` update-norm kernels for max_unorm > 0: Adam, LAMB, AdEMAMix, Momentum, LARS,
    RMSprop, Adagrad, Lion) and 8-bit blockwise optimizers (`_optimizer_update_{1,2}state_8bit_blockwise_triton_kernel`,
    which dequantize their states, step and requantize them in the kernel: Adam, AdEMAMix, Momentum, RMSprop,
    Adagrad, Lion);
  - bitsandbytes/triton (SwitchBack's kernels, removed from bitsandbytes by #1871 in February 2026, see below):
    `quantize_rowwise`, `dequantize_rowwise`, `quantize_global`, `quantize_global_transpose`,
    `quantize_columnwise_and_transpose` (int8 by tl.libdevice.llrint, which is Triton 2.0's spelling: Triton 2.1
    and later have no tl.libdevice and fail on these five, Tegula takes it; the two global quantizers pass llrint a
    float16 value, which Triton's libdevice, with float32 and float64 overloads only, refuses as "input arg type
    does not match" and Tegula accepts, as docs/triton-compat.md says) and the int8 GEMMs with fused
    dequantization `int8_matmul_rowwise_dequantize` / `int8_matmul_mixed_dequantize` (triton.ops.matmul's
    kernel: GROUP_M swizzle, EVEN_K heuristic, split-K by atomic_add into a float16 C, optional bias).

Sizes are not powers of two: rows 37 / 150 / 300, columns 300 / 200, vectors of 1000 / 1283 / 1300 / 3000 / 5000
elements (the block quantizers' blocks, 32 to 4096, are powers of two, as their tl.arange needs). Inputs are
random; optimizer states are random codes and block maxima (the 8-bit ones) or random floats.

A case passes when every output's largest difference from its reference is at most the tolerance times the
reference's largest magnitude: codes, block maxima and integer results exactly (the int8 quantizers against
rint(127 * x / absmax) in float32, Triton's type for a float16 / float16 quotient, and quantize_global's
rint(127 * (x * (1 / absmax))) in float16, a product of float16 tensors; the block quantizers' codes through the
table, against the nearest table entry of x / absmax, so that -0 and +0 of FP4 count as one); dequantized values
exactly against table[code] * absmax rounded to the output dtype; float16 results and the int8 GEMMs 2e-3,
gemv_4bit 1e-2; 32-bit optimizer parameters and states 1e-5 (bfloat16 parameters 4e-3), the 8-bit optimizers'
parameters 1e-5 and their requantized states as nearest codes of the float64 state given the kernel's new block
maximum (which is checked to 1e-6), up to near ties within 1e-6 of the block maximum.

bitsandbytes is not part of Tegula; point this at a source tree holding bitsandbytes/ (written against commit
95f9af3 of 2026-08-19, whose bitsandbytes/ this reads unchanged). bitsandbytes/triton/ was deleted by #1871
(c27dc581); its cases run when the tree also holds it, e.g. from the commit before (`git archive c27dc581^
bitsandbytes/triton | tar -x -C <tree>`), and are reported as not run otherwise:

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/bitsandbytes_ops.py <tree> [-k SUBSTRING]

(-k runs only the cases whose name holds SUBSTRING.) `import bitsandbytes` loads its native library and registers
its ops for every backend, so every bitsandbytes package is imported bare (its __init__ is not run) and the modules
above load from their files, with what they import from bitsandbytes (functional.py for the code tables,
cextension.py, which finds no native library and stands its own mock in) unchanged. What they reach that a CPU
machine, or the stand-in `triton` package, lacks is stood in for (none of it is a Triton kernel or reached from one):

  - torch.utils._triton.has_triton and has_triton_package: True (bitsandbytes/triton/triton_utils.py asks them and
    defines its kernels only then; torch answers False without a GPU);
  - Tensor.is_cuda, while the library's host functions run: True for tensors on TEGULA_CONFORMANCE_DEVICE (the
    bitsandbytes/triton host functions assert it), and a torch function mode that maps `device="cuda"` keywords
    to TEGULA_CONFORMANCE_DEVICE (quantize_global allocates so);
  - triton.testing's nvsmi, get_dram_gbps, get_max_tensorcore_tflops and get_max_simd_tflops, which
    bitsandbytes/triton/matmul_perf_model.py imports while it loads: placeholders that raise when called (only the
    GEMMs' config pruning reaches them, and an autotuner of one config prunes nothing, as in Triton);
  - torch.compile, while kernels_optim.py loads: an identity decorator (it decorates the file's pure-torch
    reference functions at import; the real one imports torch._dynamo and Inductor, which import triton.backends);
  - torch.cuda.device(d) for a device that is not CUDA: a null context (backends/triton/ops.py wraps every call in
    `with torch.cuda.device(A.device)`, torch.accelerator naming CUDA even without a GPU), and, where
    torch.accelerator.current_accelerator() is None, "cuda" while ops.py loads.

Autotuning: the bitsandbytes/triton kernels are autotuned over up to 14 configs (the GEMMs over 418, pruned by a
perf model); each is pinned to one config of its own list (its autotuner's `configs` is set to that one), named at
each case. The backends/triton kernels are not autotuned.

Not covered: kernels_optim.py's `optimizer_update_8bit_blockwise_pytorch` / `_triton_quant` (torch references
with torch.compile, no kernel of their own beyond those above) and the skip_zeros / paged-state paths (refused by
the Triton backend). The 8-bit 1-state kernel applies Lion's decoupled weight decay under `OPTIMIZER_ID == 2`
(Adagrad's id), so with weight decay its Adagrad would shrink the parameters and its Lion add the decay to the
gradient, unlike the 32-bit kernel; the 8-bit Adagrad and Lion cases use no weight decay. The 8-bit
AdEMAMix kernel finds the second momentum's block maxima at `n // 256`, right only when n is a multiple of 256,
so its case uses 1280 elements. The int8 GEMMs load the bias without a mask, so the bias cases use a multiple of
BLOCK_N columns. Tegula's recompile warnings are off unless TEGULA_RECOMPILE_WARNING is set. Prints one line per
case (the largest absolute difference from the reference over the case's outputs, each output's difference, or
the first line of the error) and a summary line.
"""

import contextlib
import importlib
import importlib.util
import os
import pathlib
import sys

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_args = sys.argv[1:]
ONLY = None
if len(_args) == 3 and _args[1] == "-k":
    ONLY = _args.pop(2); _args.pop(1)
if len(_args) != 1:
    sys.exit("usage: bitsandbytes_ops.py <bitsandbytes tree> [-k SUBSTRING]")
TREE = pathlib.Path(_args[0]).resolve()
for _file in ("kernels_4bit.py", "kernels_8bit_quant.py", "kernels_optim.py", "ops.py"):
    if not (TREE / "bitsandbytes" / "backends" / "triton" / _file).is_file():
        sys.exit(f"{TREE} holds no bitsandbytes/backends/triton/{_file}")
HAS_SWITCHBACK = (TREE / "bitsandbytes" / "triton" / "quantize_rowwise.py").is_file()
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

import torch.utils._triton  # noqa: E402

torch.utils._triton.has_triton = lambda *a, **k: True
torch.utils._triton.has_triton_package = lambda *a, **k: True


TESTING_NAMES = ("nvsmi", "get_dram_gbps", "get_max_tensorcore_tflops", "get_max_simd_tflops")


def _placeholder(name):
    def missing(*args, **kwargs):
        raise RuntimeError(f"triton.testing.{name} is a stand-in of bitsandbytes_ops.py (an NVIDIA query)")
    missing.__name__ = name
    return missing


for _name in TESTING_NAMES:
    if not hasattr(triton.testing, _name):
        setattr(triton.testing, _name, _placeholder(_name))

if not torch.cuda.is_available():
    _cuda_device = torch.cuda.device

    def _device_or_null(device):
        if isinstance(device, torch.device) and device.type != "cuda":
            return contextlib.nullcontext()
        return _cuda_device(device)

    torch.cuda.device = _device_or_null


standins.bare_packages(TREE, "bitsandbytes")


def load(name):
    return importlib.import_module(name)


def load_optim():
    if "bitsandbytes.backends.triton.kernels_optim" not in sys.modules:
        saved = torch.compile
        torch.compile = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)
        try:
            load("bitsandbytes.backends.triton.kernels_optim")
        finally:
            torch.compile = saved
    return sys.modules["bitsandbytes.backends.triton.kernels_optim"]


def load_ops():
    if "bitsandbytes.backends.triton.ops" not in sys.modules:
        load_optim()
        accel = getattr(torch, "accelerator", None)
        saved = accel.current_accelerator if accel is not None else None
        if accel is not None and saved() is None:
            accel.current_accelerator = lambda *a, **k: torch.device("cuda")
        try:
            load("bitsandbytes.backends.triton.ops")
        finally:
            if accel is not None:
                accel.current_accelerator = saved
    return sys.modules["bitsandbytes.backends.triton.ops"]


def functional():
    return load("bitsandbytes.functional")


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


def not_run(name, why):
    if ONLY is None or ONLY in name:
        results.append((name, "skip", float("nan"), why))


def nearest(table, v):
    """Index of the entry of the 1-D float64 table nearest to each of v (float64), the lower one on a tie."""
    return (v[..., None] - table).abs().argmin(-1)


def int8_rint(q32):
    """rint of a float32 tensor (round half to even), as libdevice.llrint."""
    return torch.round(q32).to(torch.int64)


# --- bitsandbytes/triton (SwitchBack, removed 2026-02) ---------------------------------------------------------------

def rowwise_case(dtype):
    def run():
        m = load("bitsandbytes.triton.quantize_rowwise")
        pin(m._quantize_rowwise, num_warps=4)
        x = (torch.randn(37, 300) * 3).to(dtype)
        with standins.cuda_claims(DEVICE):
            q, maxs = m.quantize_rowwise(x)
        amax = x.abs().amax(1, keepdim=True)  # in the input's dtype, as tl.max
        # 127 * (x / max): Triton divides float16 by float16 in float32 (semantic.py's computation type for / and
        # %), so the quotient and the product are float32, rounded half to even
        want = int8_rint(127.0 * (x.float() / amax.float()))
        return {"int8": (q.long(), want, 0.0), "row max (float16)": (maxs, amax[:, 0].to(F16), 0.0)}
    return run


def dequant_rowwise_case():
    m = load("bitsandbytes.triton.dequantize_rowwise")
    pin(m._dequantize_rowwise, num_warps=4)
    q = torch.randint(-127, 128, (37, 300), dtype=torch.int8)
    s = (torch.rand(37) * 4 + 0.5).to(F16)
    with standins.cuda_claims(DEVICE):
        y = m.dequantize_rowwise(q, s)
    return {"float16": (y, s.double()[:, None] * q.double() / 127.0, 2e-3)}


def global_case(transpose):
    def run():
        m = load("bitsandbytes.triton.quantize_global")
        x = (torch.randn(300, 200) * 3).to(F16)
        with standins.cuda_claims(DEVICE):
            if transpose:
                pin(m._quantize_global_transpose, BLOCK_M=128, BLOCK_N=128)
                q, amax = m.quantize_global_transpose(x)
            else:
                pin(m._quantize_global, BLOCK_SIZE=1024)
                q, amax = m.quantize_global(x)
        inv = 1.0 / x.abs().max().unsqueeze(0)  # float16, as the host computes it
        want = int8_rint((127.0 * (x * inv)).float())  # float16 products, as the kernel's (both operands float16)
        if transpose:
            want = want.T
        return {"int8": (q.long(), want, 0.0), "absmax": (amax, x.abs().max().unsqueeze(0), 0.0)}
    return run


def columnwise_case():
    m = load("bitsandbytes.triton.quantize_columnwise_and_transpose")
    pin(m._quantize_columnwise_and_transpose, num_warps=4)
    x = (torch.randn(300, 200) * 3).to(F16)
    with standins.cuda_claims(DEVICE):
        q, maxs = m.quantize_columnwise_and_transpose(x)
    amax = x.abs().amax(0, keepdim=True)
    want = int8_rint(127.0 * (x.float() / amax.float())).T  # a float32 quotient, as in rowwise_case
    return {"int8 transposed": (q.long(), want, 0.0), "column max": (maxs, amax[0], 0.0)}


def int8_gemm_case(mixed, bias, cfg, M=37):
    """a (M, K) rowwise-quantized, b (K, N) column-wise (rowwise: state_w per column) or globally (mixed: one
    state_w) quantized, C = a @ b * state_x * state_w / 127^2 (+ bias), float16."""
    def run():
        name = "int8_matmul_mixed_dequantize" if mixed else "int8_matmul_rowwise_dequantize"
        m = load(f"bitsandbytes.triton.{name}")
        pin(getattr(m, "_" + name), **cfg)
        K, N = 300, (192 if bias else 200)
        a = torch.randint(-127, 128, (M, K), dtype=torch.int8)
        b = torch.randint(-127, 128, (N, K), dtype=torch.int8).T  # the weight, transposed (column-major b)
        sx = (torch.rand(M) * 3 + 0.5).to(F16)
        sw = (torch.rand(1 if mixed else N) * 3 + 0.5).to(F16)
        bv = (torch.randn(N) * 50).to(F16) if bias else None
        with standins.cuda_claims(DEVICE):
            c = getattr(m, name)(a, b, sx, sw, bv)
        want = (a.double() @ b.double()) * sx.double()[:, None] * sw.double()[None, :] / (127.0 * 127.0)
        if bias:
            want = want.to(F16).double() + bv.double()
        return {"C float16": (c, want, 2e-3)}
    return run


SWITCHBACK = [
    ("quantize_rowwise 37x300 float32 [num_warps 4]", rowwise_case(F32)),
    ("quantize_rowwise 37x300 float16 [num_warps 4]", rowwise_case(F16)),
    ("dequantize_rowwise 37x300 [num_warps 4]", dequant_rowwise_case),
    ("quantize_global 300x200 float16 [BLOCK_SIZE 1024]", global_case(False)),
    ("quantize_global_transpose 300x200 float16 [128x128]", global_case(True)),
    ("quantize_columnwise_and_transpose 300x200 float16 [num_warps 4]", columnwise_case),
    ("int8_matmul_rowwise_dequantize 37x300x200 [64x32x32]",
     int8_gemm_case(False, False, dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, SPLIT_K=1, num_stages=5))),
    ("int8_matmul_rowwise_dequantize 37x300x192 bias [32x64x64]",
     int8_gemm_case(False, True, dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, SPLIT_K=1, num_stages=2))),
    ("int8_matmul_rowwise_dequantize 37x300x200 split-K 2 atomic_add [16x32x32]",
     int8_gemm_case(False, False, dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, SPLIT_K=2, num_stages=2))),
    ("int8_matmul_rowwise_dequantize 150x300x200 [128x256x32, num_warps 8: the library's first]",
     int8_gemm_case(False, False, dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, SPLIT_K=1), M=150)),
    ("int8_matmul_mixed_dequantize 37x300x200 [64x32x32]",
     int8_gemm_case(True, False, dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, SPLIT_K=1, num_stages=5))),
    ("int8_matmul_mixed_dequantize 37x300x192 bias [32x64x64]",
     int8_gemm_case(True, True, dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, SPLIT_K=1, num_stages=2))),
]

for _name, _case in SWITCHBACK:
    if HAS_SWITCHBACK:
        check(_name, _case)
    else:
        not_run(_name, "the tree holds no bitsandbytes/triton/ (removed by #1871; see the docstring)")


# --- backends/triton: blockwise 8-bit quantization -------------------------------------------------------------------

def dynamic_map(signed=True):
    return functional().create_dynamic_map(signed=signed).to(DEVICE)


def quant_blockwise_case(n, blocksize, dtype):
    def run():
        ops = load_ops()
        code = dynamic_map()
        x = (torch.randn(n) * 3).to(dtype)
        x[5] = 0.0
        q, absmax = ops.quantize_blockwise(x, code, blocksize)
        xd = x.double()
        blocks = -(n // -blocksize)
        xp = torch.nn.functional.pad(xd, (0, blocks * blocksize - n)).view(blocks, blocksize)
        amax = xp.abs().amax(1)
        # the kernel's normalized value: x / absmax in float32 (the input's dtype promoted with the float32 code)
        xn = (x.float().view(-1) / amax.float().repeat_interleave(blocksize)[:n]).clamp(-1, 1).double()
        want = nearest(code.double(), xn)
        table = code.double()
        return {"absmax": (absmax, amax, 0.0),
                "codes (as table values)": (table[q.long()], table[want], 0.0)}
    return run


def dequant_blockwise_case(dtype, inplace=False):
    def run():
        ops = load_ops()
        code = dynamic_map()
        n, blocksize = 1300, 256
        q = torch.randint(0, 256, (n,), dtype=torch.uint8)
        absmax = torch.rand(-(n // -blocksize)) * 5 + 0.1
        if inplace:
            out = torch.empty(n, dtype=dtype)
            ops.dequantize_blockwise_inplace(q, absmax, code, blocksize, dtype, out)
        else:
            out = ops.dequantize_blockwise(q, absmax, code, blocksize, dtype)
        want = (code[q.long()] * absmax.repeat_interleave(blocksize)[:n]).to(dtype)  # one float32 product, rounded
        return {"values": (out, want, 0.0)}
    return run


check("quantize_blockwise float32 n 1000 blocksize 256", quant_blockwise_case(1000, 256, F32))
check("quantize_blockwise float16 n 1283 blocksize 64", quant_blockwise_case(1283, 64, F16))
check("quantize_blockwise bfloat16 n 1000 blocksize 128", quant_blockwise_case(1000, 128, BF16))
check("quantize_blockwise float32 n 5000 blocksize 4096", quant_blockwise_case(5000, 4096, F32))
check("dequantize_blockwise float32 n 1300 blocksize 256", dequant_blockwise_case(F32))
check("dequantize_blockwise float16 n 1300 blocksize 256", dequant_blockwise_case(F16))
check("dequantize_blockwise_inplace bfloat16 n 1300", dequant_blockwise_case(BF16, True))


# --- backends/triton: 4-bit NF4 / FP4 ---------------------------------------------------------------------------------

def table4(quant_type):
    return functional().get_4bit_type(quant_type, device=DEVICE)


def unpack4(packed, n):
    """uint8 pairs -> codes, the first of a pair in the high nibble."""
    p = packed.view(torch.uint8).reshape(-1).long()
    return torch.stack([p >> 4, p & 0xF], 1).reshape(-1)[:n]


def quant4_case(quant_type, shape, blocksize, dtype, storage=torch.uint8):
    def run():
        ops = load_ops()
        x = (torch.randn(shape) * 2).to(dtype)
        n = x.numel()
        packed, absmax = ops.quantize_4bit(x, blocksize, quant_type, storage)
        xd = x.double().reshape(-1)
        blocks = -(n // -blocksize)
        amax = torch.nn.functional.pad(xd, (0, blocks * blocksize - n)).view(blocks, blocksize).abs().amax(1)
        xn = (x.float().reshape(-1) / amax.float().repeat_interleave(blocksize)[:n]).clamp(-1, 1).double()
        table = table4(quant_type).double()
        got = unpack4(packed, n)
        return {"absmax": (absmax[:blocks], amax, 0.0),
                "codes (as table values)": (table[got], table[nearest(table, xn)], 0.0)}
    return run


def dequant4_case(quant_type, shape, blocksize, dtype, inplace=False):
    def run():
        ops = load_ops()
        n = shape[0] * shape[1]
        packed = torch.randint(0, 256, ((n + 1) // 2, 1), dtype=torch.uint8)
        absmax = torch.rand(-(n // -blocksize)) * 3 + 0.2
        if inplace:
            out = torch.empty(shape, dtype=dtype)
            ops.dequantize_4bit_inplace(packed, absmax, blocksize, quant_type, shape, dtype, out)
        else:
            out = ops.dequantize_4bit(packed, absmax, blocksize, quant_type, shape, dtype)
        table = table4(quant_type)
        codes = unpack4(packed, n)
        want = (table[codes] * absmax.repeat_interleave(blocksize)[:n]).to(dtype).view(shape)
        return {"values": (out, want, 0.0)}
    return run


def gemv4_case(dtype):
    def run():
        ops = load_ops()
        N, K, blocksize = 72, 300, 64
        n = N * K
        packed = torch.randint(0, 256, (n // 2, 1), dtype=torch.uint8)
        absmax = torch.rand(-(n // -blocksize)) * 0.5 + 0.05
        code = table4("nf4")
        A = torch.randn(3, K).to(dtype)
        y = ops.gemv_4bit(A, packed, (N, K), absmax, code, blocksize)
        Bd = (code[unpack4(packed, n)] * absmax.repeat_interleave(blocksize)[:n]).to(dtype).double().view(N, K)
        return {"A @ B^T": (y, A.double() @ Bd.T, 1e-2)}
    return run


def quant4_code_case():
    """kernels_4bit.quantize_4bit_blockwise_kernel (the debug quantizer by code-table bisection, no host function),
    launched as its parameters say: BLOCK_SIZE a block, SPLIT_NUM_BLOCKS pairs of blocks a program."""
    k4 = load("bitsandbytes.backends.triton.kernels_4bit")
    blocksize, split = 64, 2
    n = 1000  # 16 blocks of 64 (the last partial); the kernel stores absmax unmasked: a buffer of whole programs
    per_prog = 2 * split
    blocks = -(n // -blocksize)
    progs = -(blocks // -per_prog)
    x = torch.randn(n) * 2
    code = table4("nf4")
    absmax = torch.zeros(progs * per_prog)
    out = torch.zeros(n // 2, dtype=torch.uint8)
    k4.quantize_4bit_blockwise_kernel[(progs,)](x, code, absmax, out, n, BLOCK_SIZE=blocksize, CODE_SIZE=16,
                                                SPLIT_NUM_BLOCKS=split)
    xd = x.double()
    amax = torch.nn.functional.pad(xd, (0, blocks * blocksize - n)).view(blocks, blocksize).abs().amax(1)
    xn = (x / amax.float().repeat_interleave(blocksize)[:n]).clamp(-1, 1).double()
    table = code.double()
    got = unpack4(out, n - n % 2)
    return {"absmax": (absmax[:blocks], amax, 0.0),
            "codes (as table values)": (table[got], table[nearest(table, xn)][:n - n % 2], 0.0)}


check("quantize_4bit nf4 37x35 float32 blocksize 64", quant4_case("nf4", (37, 35), 64, F32))
check("quantize_4bit fp4 37x35 float32 blocksize 64", quant4_case("fp4", (37, 35), 64, F32))
check("quantize_4bit nf4 1000 float16 blocksize 128", quant4_case("nf4", (1000,), 128, F16))
check("quantize_4bit fp4 1000 bfloat16 blocksize 128, bfloat16 storage", quant4_case("fp4", (1000,), 128, BF16, BF16))
check("quantize_4bit nf4 37x35 bfloat16 blocksize 32", quant4_case("nf4", (37, 35), 32, BF16))
check("quantize_4bit fp4 3000 float32 blocksize 512", quant4_case("fp4", (3000,), 512, F32))
check("dequantize_4bit nf4 40x75 float32 blocksize 64", dequant4_case("nf4", (40, 75), 64, F32))
check("dequantize_4bit fp4 40x75 float32 blocksize 64", dequant4_case("fp4", (40, 75), 64, F32))
check("dequantize_4bit nf4 40x75 bfloat16 blocksize 128", dequant4_case("nf4", (40, 75), 128, BF16))
check("dequantize_4bit_inplace fp4 40x75 float16 blocksize 64", dequant4_case("fp4", (40, 75), 64, F16, True))
check("dequantize_4bit nf4 37x35 (odd count) float32 blocksize 32", dequant4_case("nf4", (37, 35), 32, F32))
check("gemv_4bit nf4 code table 3x300 @ (72x300)^T float16", gemv4_case(F16))
check("quantize_4bit_blockwise_kernel (code bisection) nf4 n 1000", quant4_code_case)


# --- backends/triton: 32-bit optimizers -------------------------------------------------------------------------------

def sign(x):
    return torch.where(x > 0, 1.0, torch.where(x < 0, -1.0, 0.0)).double()


def ref_32bit(name, g, p, s1, s2, hp):
    """The 32-bit kernels' step in float64: returns (p, s1, s2) and the update norm the preconditioner sums."""
    b1, b2, b3, alpha, eps, wd, step, lr, gs = (hp[k] for k in ("b1", "b2", "b3", "alpha", "eps", "wd", "step", "lr",
                                                                "gs"))
    max_unorm, param_norm, unorm0 = hp["max_unorm"], hp["param_norm"], hp.get("unorm0", 0.0)
    g = g * gs
    unorm = None
    if name in ("adam", "lamb", "ademamix"):
        if max_unorm > 0 and name != "ademamix":  # 2-state preconditioner: Adam's update norm before the step
            n1 = s1 * b1 + (1 - b1) * g
            n2 = s2 * b2 + (1 - b2) * g * g
            u = (n1 / (1 - b1 ** step)) / ((n2 / (1 - b2 ** step)).sqrt() + eps)
            unorm = (u * u).sum()
        scale = 1.0
        if unorm is not None and unorm.sqrt() > max_unorm * param_norm:
            scale = max_unorm * param_norm / unorm.sqrt()
        if name == "ademamix":
            m1, m2 = s1[0], s1[1]
            m1 = m1 * b1 + (1 - b1) * g
            m2 = m2 * b3 + (1 - b3) * g
            nu = s2 * b2 + (1 - b2) * g * g
            c1, c2 = 1 - b1 ** step, (1 - b2 ** step) ** 0.5
            if wd > 0:
                p = p * (1 - lr * wd)
            p = p - lr * ((m1 / c1 + alpha * m2) / (nu.sqrt() / c2 + eps))
            return p, torch.stack([m1, m2]), nu, unorm
        s1 = s1 * b1 + (1 - b1) * g
        s2 = s2 * b2 + (1 - b2) * g * g
        c1, c2 = 1 - b1 ** step, (1 - b2 ** step) ** 0.5
        if wd > 0:
            p = p * (1 - lr * wd)
        p = p + scale * (-lr * c2 / c1) * (s1 / (s2.sqrt() + eps * c2))
        return p, s1, s2, unorm
    # 1-state; the preconditioner sees g without weight decay
    if max_unorm > 0 and name != "lion":
        if name in ("momentum", "lars"):
            n1 = g if step == 1 else s1 * b1 + g
            unorm = (n1 * n1).sum()
        elif name == "rmsprop":
            n1 = s1 * b1 + (1 - b1) * g * g
            u = g / (n1.sqrt() + eps)
            unorm = (u * u).sum()
    if name != "lion" and wd > 0:
        g = g + p * wd
    scale = 1.0
    current = unorm.sqrt() if unorm is not None else (torch.tensor(unorm0, dtype=F64).sqrt() if max_unorm > 0
                                                      else None)
    if max_unorm > 0 and name != "adagrad" and current > max_unorm * param_norm + eps:
        scale = (max_unorm * param_norm + eps) / current
    if name in ("momentum", "lars"):
        s1 = g if step == 1 else s1 * b1 + g
        p = p + scale * (-lr * s1)
    elif name == "lion":
        if wd > 0:
            p = p * (1 - lr * wd)
        mu = s1 * b1 + (1 - b1) * g
        p = p - scale * lr * sign(mu)
        s1 = s1 * b2 + (1 - b2) * g
        if max_unorm > 0:  # the preconditioner after the step, on the new state
            n1 = s1 * b2 + (1 - b2) * (g if wd == 0 else g)
            unorm = n1.sum()
    elif name == "rmsprop":
        s1 = s1 * b1 + (1 - b1) * g * g
        p = p - scale * lr * g / (s1.sqrt() + eps)
    elif name == "adagrad":
        s1 = s1 + g * g
        p = p - lr * g / (s1.sqrt() + eps)
    return p, s1, None, unorm


def opt32_case(name, n, step, wd=0.0, max_unorm=0.0, pdtype=F32):
    def run():
        ops = load_ops()
        hp = dict(b1=0.9, b2=0.995 if name != "lion" else 0.99, b3=0.9999, alpha=5.0, eps=1e-8, wd=wd, step=step,
                  lr=1e-2, gs=0.8, max_unorm=max_unorm, param_norm=0.0)
        g = torch.randn(n).to(pdtype)
        p = torch.randn(n).to(pdtype)
        two = name in ("adam", "lamb", "ademamix")
        s1 = torch.randn(2, n) * 0.1 if name == "ademamix" else torch.randn(n) * 0.1
        if name in ("rmsprop", "adagrad"):
            s1 = s1.abs()
        s2 = torch.rand(n) * 0.01 if two else None
        if max_unorm > 0:
            hp["param_norm"] = float(p.double().norm())
        unorm_vec = torch.zeros(1) if max_unorm > 0 else None
        want = ref_32bit(name, g.double(), p.double(), s1.double(), None if s2 is None else s2.double(), hp)
        ops.optimizer_update_32bit(name, g, p, s1, s2, unorm_vec, max_unorm, hp["param_norm"], hp["b1"], hp["b2"],
                                   hp["b3"], hp["alpha"], hp["eps"], wd, step, hp["lr"], hp["gs"])
        out = {"p": (p, want[0], 1e-5 if pdtype == F32 else 4e-3), "state1": (s1, want[1], 1e-5)}
        if two:
            out["state2"] = (s2, want[2], 1e-5)
        if max_unorm > 0 and want[3] is not None:
            out["update norm"] = (unorm_vec[0], want[3], 1e-5)
        return out
    return run


check("optimizer_update_32bit adam n 1000 step 3 weight decay", opt32_case("adam", 1000, 3, wd=0.01))
check("optimizer_update_32bit lamb n 1000 max_unorm 1 (preconditioner)", opt32_case("lamb", 1000, 2, max_unorm=1.0))
check("optimizer_update_32bit ademamix n 1000 step 4", opt32_case("ademamix", 1000, 4, wd=0.01))
check("optimizer_update_32bit momentum n 1283 step 1", opt32_case("momentum", 1283, 1))
check("optimizer_update_32bit momentum n 1283 step 5 weight decay", opt32_case("momentum", 1283, 5, wd=0.01))
check("optimizer_update_32bit lars n 1283 max_unorm 0.02 (preconditioner)",
      opt32_case("lars", 1283, 3, max_unorm=0.02))
check("optimizer_update_32bit rmsprop n 1283 step 2 weight decay", opt32_case("rmsprop", 1283, 2, wd=0.01))
check("optimizer_update_32bit adagrad n 1283 step 2", opt32_case("adagrad", 1283, 2))
check("optimizer_update_32bit lion n 1283 step 2 weight decay", opt32_case("lion", 1283, 2, wd=0.1))
check("optimizer_update_32bit adam bfloat16 params n 1000", opt32_case("adam", 1000, 2, pdtype=BF16))


# --- backends/triton: 8-bit blockwise optimizers ----------------------------------------------------------------------

def state8(n, signed, blocksize=256, rows=None):
    """Random codes and block maxima of a state quantized blockwise with the dynamic map, and its float64 value."""
    code = dynamic_map(signed)
    shape = (n,) if rows is None else (rows, n)
    q = torch.randint(0, 256, shape, dtype=torch.uint8)
    blocks = -(n // -blocksize)
    absmax = torch.rand(shape[:-1] + (blocks,)) * 0.2 + 0.01
    val = code.double()[q.long()] * absmax.double().repeat_interleave(blocksize, -1)[..., :n]
    return q, absmax, val, code


def requant_check(what, q, absmax, want, code, blocksize=256):
    """The kernel's requantized state against the float64 state: block maxima to 1e-6, and each code a nearest
    table entry of v = want / (the kernel's block maximum): |table[code] - v| exceeds the smallest distance by at
    most 1e-6 (the kernel's state is float32 arithmetic; the dynamic map's entries near 0 are 3e-7 apart, so only
    near ties may go either way)."""
    n = want.shape[-1]
    blocks = absmax.shape[-1]
    wp = torch.nn.functional.pad(want, (0, blocks * blocksize - n))
    amax = wp.view(*want.shape[:-1], blocks, blocksize).abs().amax(-1)
    scale = absmax.double().repeat_interleave(blocksize, -1)[..., :n]
    table = code.double()
    v = (want / scale).clamp(-1, 1)
    excess = (table[q.long()] - v).abs() - (table[nearest(table, v)] - v).abs()
    return {f"{what} absmax": (absmax, amax, 1e-6),
            f"{what} codes (distance past the nearest)": (excess, torch.zeros_like(excess), 1e-6)}


def opt8_case(name, n, step, wd=0.0):
    def run():
        ops = load_ops()
        b1, b2, b3, alpha, eps, lr, gs = 0.9, (0.995 if name != "lion" else 0.99), 0.9999, 5.0, 1e-8, 1e-2, 0.8
        g = torch.randn(n)
        p = torch.randn(n)
        gd, pd = g.double() * gs, p.double()
        bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
        if name == "adam":
            q1, a1, s1, c1 = state8(n, True)
            q2, a2, s2, c2 = state8(n, False)
            s1 = s1 * b1 + (1 - b1) * gd
            s2 = s2 * b2 + (1 - b2) * gd * gd
            if wd > 0:
                pd = pd * (1 - lr * wd)
            pd = pd - (lr / bc1) * (s1 / (s2.sqrt() / bc2 ** 0.5 + eps))
        elif name == "ademamix":
            q1, a1, s1, c1 = state8(n, True, rows=2)
            q2, a2, s2, c2 = state8(n, False)
            m1 = s1[0] * b1 + (1 - b1) * gd
            m2 = s1[1] * b3 + (1 - b3) * gd
            s2 = s2 * b2 + (1 - b2) * gd * gd
            s1 = torch.stack([m1, m2])
            if wd > 0:
                pd = pd * (1 - lr * wd)
            pd = pd - lr * ((m1 / bc1 + alpha * m2) / (s2.sqrt() / bc2 ** 0.5 + eps))
        else:
            q1, a1, s1, c1 = state8(n, True)
            q2 = a2 = c2 = None
            if name in ("rmsprop", "adagrad"):
                q1 = torch.maximum(q1, torch.full_like(q1, int((c1 <= 0).sum())))  # non-negative entries
                s1 = c1.double()[q1.long()] * a1.double().repeat_interleave(256)[:n]
            if wd > 0:
                gd = gd + pd * wd
            if name == "momentum":
                s1 = gd if step == 1 else s1 * b1 + gd
                pd = pd - lr * s1
            elif name == "rmsprop":
                s1 = s1 * b1 + (1 - b1) * gd * gd
                pd = pd - lr * (gd / (s1.sqrt() + eps))
            elif name == "adagrad":
                s1 = s1 + gd * gd
                pd = pd - lr * (gd / (s1.sqrt() + eps))
            elif name == "lion":
                pd = pd - lr * sign(s1 * b1 + (1 - b1) * gd)
                s1 = s1 * b2 + (1 - b2) * gd
        ops.optimizer_update_8bit_blockwise(name, g, p, q1, q2, b1, b2, b3, alpha, eps, step, lr, c1, c2, a1, a2,
                                            weight_decay=wd, gnorm_scale=gs)
        out = {"p": (p, pd, 1e-5)}
        out.update(requant_check("state1", q1, a1, s1, c1))
        if q2 is not None:
            out.update(requant_check("state2", q2, a2, s2, c2))
        return out
    return run


check("optimizer_update_8bit_blockwise adam n 1000 step 3 weight decay", opt8_case("adam", 1000, 3, wd=0.01))
check("optimizer_update_8bit_blockwise ademamix n 1280 step 4", opt8_case("ademamix", 1280, 4, wd=0.01))
check("optimizer_update_8bit_blockwise momentum n 1283 step 1", opt8_case("momentum", 1283, 1))
check("optimizer_update_8bit_blockwise momentum n 1283 step 4 weight decay", opt8_case("momentum", 1283, 4, wd=0.01))
check("optimizer_update_8bit_blockwise rmsprop n 1283 step 2 weight decay", opt8_case("rmsprop", 1283, 2, wd=0.01))
check("optimizer_update_8bit_blockwise adagrad n 1283 step 2", opt8_case("adagrad", 1283, 2))
check("optimizer_update_8bit_blockwise lion n 1283 step 2", opt8_case("lion", 1283, 2))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:78s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {sum(r[1] != 'skip' for r in results)} bitsandbytes cases match the "
      f"references" + (f" ({sum(r[1] == 'skip' for r in results)} not run)" if any(r[1] == 'skip' for r in results)
                       else ""))
