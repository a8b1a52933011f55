"""AutoAWQ's Triton kernels (casper-hansen/AutoAWQ, awq/modules/triton/gemm.py, vLLM's awq_triton.py) on Tegula,
through the conformance shim's `triton` package, against torch float64 (or exact) references that unpack the AWQ
int4 packing here from its definition.

The AWQ packing: an int32 of qweight [K, N / 8] (and of qzeros [K / G, N / 8]) holds the 4-bit values of eight
consecutive output columns 8c .. 8c + 7, column 8c + AWQ_ORDER[i] in bits 4i .. 4i + 3, AWQ_ORDER = [0, 2, 4, 6,
1, 3, 5, 7] (WQLinear_GEMM.from_linear's order_map); so column 8c + j sits at nibble [0, 4, 1, 5, 2, 6, 3, 7][j].
The weight is W[k, n] = (w[k, n] - z[k // G, n]) * s[k // G, n] with per-group zeros z and scales s (G the group
size; -1 means one group of all K rows). The references unpack qweight and qzeros by that rule from random int32
words (any word is a valid packing, the sign bit included) and compute W and x @ W in float64.

Cases (inputs seeded per case, the seed being the case name's CRC, so -k reproduces a case's data):

  - `awq_dequantize_triton` (`awq_dequantize_kernel`): W in the scales' dtype, float16 (as AutoAWQ stores them),
    bfloat16 and float32, checked exactly (W's (w - z) * s is rounded once, so the float64 product rounded to the
    output type is what the kernel must give); group sizes 32, 64, 128 and -1 (one group of all K rows); K of 80 to
    384 rows (80 and 100, one group each, end in a partial 32-row block) and N of 40, 200 and 1000 columns (5, 25
    and 125 words: partial 32-word blocks); the default 32 x 32 blocks and 8 words x 16 rows;
  - `awq_gemm_triton` (`awq_gemm_kernel`): x @ W for M = 1, 5, 37 and 77 rows (partial 32-row blocks), N = 200 and
    1000 (partial 32-column blocks) and K = 80 (one group: a partial K block), 160, 256 and 512 with groups 32, 64,
    128 and -1; split-K 1 (a plain store), 2, 4 and 8 (AutoAWQ's choice: programs over K that tl.atomic_add their
    float16 partial sums into the zeroed output; with K = 160, programs 5 to 7 of 8 have nothing to add); blocks
    32 x 32 x 32 (the default) and 16 x 64 x 64; float16 and float32; bfloat16 scales make the kernel accumulate
    with tl.dot(..., out_dtype=tl.bfloat16), which Triton refuses ("out_dtype=bfloat16 is unsupported"): an
    expected refusal;
  - AutoAWQ's `WQLinear_GEMM` (awq/modules/linear/gemm.py): `from_linear` packing an nn.Linear holding exactly
    (q - z) * s, its qweight / qzeros unpacked by the rule above (exactly q and z: the reference's reading of the
    packing order agrees with AutoAWQ's), then `forward` through WQLinearMMFunction: fewer than 1024 tokens take
    awq_gemm_triton with split_k_iters=8, 1024 or more awq_dequantize_triton and torch.matmul, plus the bias; and
    with training=True the backward, dx = dy @ W^T through awq_dequantize_triton. from_linear packs into
    out_features // 32 * 4 words (floor division first), so its N is a multiple of 32 (224, 992) where the module
    itself asks only a multiple of 8; and it indexes the scales by idx // group_size, so a whole-K group is passed
    as group_size = K, not -1 (AutoAWQ's quantizer passes the resolved size).

Tolerances, relative to the reference's largest magnitude: dequantized weights exactly; float32 GEMMs 1e-5; float16
GEMMs 2e-3. The GEMM kernel's accumulator has the output's dtype (tl.zeros(..., dtype=c's element type) and
tl.dot(..., out_dtype=that)), so a float16 GEMM rounds its running sum to float16 after every K block and adds the
split-K partials in float16: the float16 references take those roundings (each block's product exact in float64,
the sum rounded to float16 after each block, the partials added in program order with a rounding each), leaving
the kernel's own rounding within a block's dot. WQLinear_GEMM's outputs are float16 (torch.matmul in float16 on
the dequantized path) and compared with 2e-3 against the plain float64 products.

AutoAWQ is not part of Tegula; point this at a tree holding awq/modules/triton/gemm.py, awq/modules/linear/gemm.py
and awq/utils/{module,utils,packing_utils}.py (a `git archive HEAD awq | tar -x -C <tree>` of the repository will
do; written against commit 88e4c76b20755db275574e6a03c83c84ba3bece5 of 2025-05-11):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/autoawq_ops.py <AutoAWQ tree> [-k SUBSTRING] \
        [--json out.json]

gemm.py (the Triton kernels and their launchers) imports only torch and triton and loads from its file. For
WQLinear_GEMM, `import awq` loads the models and transformers, so the awq packages are imported bare
(standins.bare_packages: no __init__ runs) and the modules load from the tree with their own imports. Stand-ins
for what a CPU machine, or this environment, lacks (none is a Triton kernel or reached by one):

  - torch.cuda.device(None), without a GPU: a null context (gemm.py's launchers enter
    `torch.cuda.device(t.device.index)` around each launch, and a CPU tensor's index is None, which torch refuses
    without a GPU);
  - accelerate, when it is not installed: an empty module (awq/utils/utils.py imports it at module level for its
    offloading helpers, which no case calls).

Prints one line per case (ok / FAIL / refused (expected), the largest absolute difference from the reference over
the case's outputs, each output's difference or the first line of the error) and the total.

On the CPU backend (2026-12-06) 27 of 27 lines match (the two training cases are a line for forward and one for
backward) and the bfloat16 GEMM is refused as expected, in about 15 seconds on two cores from an empty Tegula cache;
under TEGULA_DEBUG=1 the same, with no access outside its tensor. No divergence from Triton was found.
"""

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import pathlib
import sys
import types
import warnings
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a tree holding AutoAWQ's awq/ package")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
for _file in ("awq/modules/triton/gemm.py", "awq/modules/linear/gemm.py", "awq/utils/module.py",
              "awq/utils/utils.py", "awq/utils/packing_utils.py"):
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, refusal  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------

if DEVICE != "cuda":
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda index: contextlib.nullcontext() if index is None else _cuda_device(index)
try:
    import accelerate  # noqa: F401
except ImportError:
    sys.modules["accelerate"] = types.ModuleType("accelerate")

_spec = importlib.util.spec_from_file_location("awq_triton_gemm", SRC / "awq/modules/triton/gemm.py")
awq_triton = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(awq_triton)

standins.bare_packages(SRC, "awq")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    awq_linear = importlib.import_module("awq.modules.linear.gemm")
assert awq_linear.awq_ext is None and awq_linear.TRITON_AVAILABLE, "WQLinear_GEMM would not take the Triton kernels"

F16, BF16, F32, F64, I32 = torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32
SHORT = {F16: "fp16", BF16: "bf16", F32: "fp32"}
TOL = {F16: 2e-3, F32: 1e-5}
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
NIBBLE_OF_COLUMN = [AWQ_ORDER.index(j) for j in range(8)]  # [0, 4, 1, 5, 2, 6, 3, 7]
results = []


def case(name, run, stages=("run",)):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    check(results, name, run, stages)


def expect_refusal(name, launch, expected):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    refusal(results, name, launch, expected)


# --- the AWQ packing, from its definition --------------------------------------------------------------------------

def unpack(packed):
    """[R, C] int32 words -> [R, 8 C] int64 4-bit values: column 8c + j is nibble NIBBLE_OF_COLUMN[j] of word c."""
    shifts = torch.tensor(NIBBLE_OF_COLUMN, device=packed.device) * 4
    return ((packed.long()[:, :, None] >> shifts) & 0xF).reshape(packed.shape[0], -1)


def pack(values):
    """[R, 8 C] values in [0, 16) -> [R, C] int32 words (the inverse of unpack), for the references' inputs."""
    v = values.long().reshape(values.shape[0], -1, 8)
    word = sum(v[:, :, AWQ_ORDER[i]] << (4 * i) for i in range(8))
    return ((word + 2 ** 31) % 2 ** 32 - 2 ** 31).to(I32)


def random_words(*shape):
    return torch.randint(-2 ** 31, 2 ** 31, shape, dtype=torch.int64).to(I32)


def quantized(K, N, group, dtype):
    """Random qweight [K, N / 8], qzeros [K / G, N / 8] (every bit pattern) and scales [K / G, N] of `dtype`;
    returns them with the group size and the float64 weight W [K, N] = (w - z) * s."""
    G = K if group == -1 else group
    qweight, qzeros = random_words(K, N // 8), random_words(K // G, N // 8)
    scales = (torch.rand(K // G, N) * 0.02 + 0.001).to(dtype)
    W = (unpack(qweight) - unpack(qzeros).repeat_interleave(G, 0)).double() * scales.double().repeat_interleave(G, 0)
    return qweight, qzeros, scales, W


def gemm_reference(x, W, dtype, block_k, split_k):
    """x @ W in float64; for float16 with the kernel's float16 accumulator: program z of the split sums the K blocks
    z, z + split_k, ... rounding the running sum to float16 after each block, and the partials are added to the
    zeroed output in program order, rounded after each add."""
    xd = x.double()
    if dtype != F16:
        return xd @ W
    K = W.shape[0]
    c = torch.zeros(x.shape[0], W.shape[1], dtype=F64, device=x.device)
    for z in range(split_k):
        acc = torch.zeros_like(c)
        for k0 in range(z * block_k, K, block_k * split_k):
            acc = (acc + xd[:, k0:k0 + block_k] @ W[k0:k0 + block_k]).to(F16).double()
        c = (c + acc).to(F16).double()
    return c


# --- cases ---------------------------------------------------------------------------------------------------------

def dequantize(K, N, group, dtype, blocks=(32, 32)):
    def run():
        qweight, qzeros, scales, W = quantized(K, N, group, dtype)
        got = awq_triton.awq_dequantize_triton(qweight, scales, qzeros, block_size_x=blocks[0],
                                               block_size_y=blocks[1])
        yield {"W": exact(got, W.to(dtype)),
               "shape / dtype": exact(torch.tensor([*got.shape, got.dtype == dtype]), torch.tensor([K, N, True]))}
    return run


def gemm(M, K, N, group, dtype, split_k, blocks=(32, 32, 32)):
    def run():
        qweight, qzeros, scales, W = quantized(K, N, group, dtype)
        x = torch.randn(M, K).to(dtype)
        got = awq_triton.awq_gemm_triton(x, qweight, scales, qzeros, split_k, *blocks)
        yield {"x @ W": (got, gemm_reference(x, W, dtype, blocks[2], split_k), TOL[dtype]),
               "shape / dtype": exact(torch.tensor([*got.shape, got.dtype == dtype]), torch.tensor([M, N, True]))}
    return run


def bf16_gemm():
    qweight, qzeros, scales, _ = quantized(160, 200, 32, BF16)
    x = torch.randn(37, 160).to(BF16)
    awq_triton.awq_gemm_triton(x, qweight, scales, qzeros, 2)


def wqlinear(tokens, K, N, group, bias=True, training=False):
    """WQLinear_GEMM.from_linear on an nn.Linear holding (q - z) * s exactly, its packing read back by `unpack`,
    then forward (and backward with training=True) on float16 x of shape `tokens` + (K,)."""
    def run():
        G = K if group == -1 else group
        q = torch.randint(0, 16, (K, N))
        z = torch.randint(0, 16, (K // G, N))
        s = (torch.rand(K // G, N) * 0.02 + 0.001).half()
        W = (q - z.repeat_interleave(G, 0)).double() * s.double().repeat_interleave(G, 0)  # [K, N]
        linear = torch.nn.Linear(K, N, bias=bias)
        linear.weight.data = W.T.float().contiguous()  # (q - z) * s is exact in float32
        if bias:
            linear.bias.data = torch.randn(N).half().float()
        # from_linear takes scales and zeros [groups, out] (awq/quantize/quantizer.py transposes them so), the
        # zeros as numbers; float32 keeps z * s exact, so round((W + z s) / s) recovers q.
        layer = awq_linear.WQLinear_GEMM.from_linear(linear, 4, G, scales=s.float(), zeros=z.float())
        layer.training = training
        out = {"unpacked qweight": exact(unpack(layer.qweight), q),
               "unpacked qzeros": exact(unpack(layer.qzeros), z)}
        x = torch.randn(*tokens, K).half()
        xg = x.clone().requires_grad_(training)
        y = layer(xg)
        xr = x.double().requires_grad_(training)
        ref = xr @ W + (linear.bias.data.double() if bias else 0)
        out["y"] = (y, ref, 2e-3)
        out["shape / dtype"] = exact(torch.tensor([*y.shape, y.dtype == F16]), torch.tensor([*tokens, N, True]))
        yield out
        if training:
            dy = torch.randn(y.shape).half()
            y.backward(dy)
            ref.backward(dy.double())
            yield {"dx": (xg.grad, xr.grad, 2e-3)}
    return run


for _dtype in (F16, BF16, F32):
    case(f"awq_dequantize {SHORT[_dtype]} K 160 x N 200, group 32", dequantize(160, 200, 32, _dtype))
case("awq_dequantize fp16 K 352 x N 1000, group 32 (125 words: a partial word block)", dequantize(352, 1000, 32, F16))
case("awq_dequantize fp16 K 256 x N 40, group 64", dequantize(256, 40, 64, F16))
case("awq_dequantize fp16 K 384 x N 200, group 128", dequantize(384, 200, 128, F16))
case("awq_dequantize fp16 K 80 x N 200, group -1 (one group of 80 rows: a partial row block)",
     dequantize(80, 200, -1, F16))
case("awq_dequantize bf16 K 100 x N 40, group -1 (a partial row block and a partial word block)",
     dequantize(100, 40, -1, BF16))
case("awq_dequantize fp16 K 160 x N 1000, group 32, blocks 8 words x 16 rows", dequantize(160, 1000, 32, F16, (8, 16)))

for _split in (1, 2, 4, 8):
    case(f"awq_gemm fp16 37 x 160 @ 160 x 200, group 32, split-K {_split}", gemm(37, 160, 200, 32, F16, _split))
case("awq_gemm fp16 1 x 512 @ 512 x 1000, group 128, split-K 8", gemm(1, 512, 1000, 128, F16, 8))
case("awq_gemm fp16 77 x 256 @ 256 x 200, group 64, split-K 1", gemm(77, 256, 200, 64, F16, 1))
case("awq_gemm fp16 5 x 160 @ 160 x 200, group -1 (160 rows), split-K 4", gemm(5, 160, 200, -1, F16, 4))
case("awq_gemm fp16 37 x 80 @ 80 x 200, group -1 (80 rows: a partial K block), split-K 2",
     gemm(37, 80, 200, -1, F16, 2))
case("awq_gemm fp16 37 x 256 @ 256 x 200, group 64, split-K 2, blocks 16 x 64 x 64",
     gemm(37, 256, 200, 64, F16, 2, (16, 64, 64)))
case("awq_gemm fp32 37 x 160 @ 160 x 200, group 32, split-K 1", gemm(37, 160, 200, 32, F32, 1))
case("awq_gemm fp32 37 x 256 @ 256 x 1000, group 128, split-K 4", gemm(37, 256, 1000, 128, F32, 4))
expect_refusal("awq_gemm bf16 (tl.dot with out_dtype=tl.bfloat16, refused by Triton)", bf16_gemm,
               r"CompilationError.*bf16|bfloat16")

case("WQLinear_GEMM 2 x 7 tokens, 160 -> 224, group 32 (awq_gemm_triton, split-K 8)",
     wqlinear((2, 7), 160, 224, 32))
case("WQLinear_GEMM 1 x 3 tokens, 256 -> 992, group 128, no bias", wqlinear((1, 3), 256, 992, 128, bias=False))
case("WQLinear_GEMM 2 x 512 tokens, 128 -> 224, group 64 (awq_dequantize_triton + matmul)",
     wqlinear((2, 512), 128, 224, 64))
case("WQLinear_GEMM training 2 x 5 tokens, 160 -> 224, group 32",
     wqlinear((2, 5), 160, 224, 32, training=True), ("forward", "backward"))
case("WQLinear_GEMM training 1 x 1030 tokens, 96 -> 96, one group of 96 rows",
     wqlinear((1, 1030), 96, 96, -1, training=True), ("forward", "backward"))

width = max((len(r[0]) for r in results), default=10)
for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:{width}s}  {status:18s}  {err:16s}  {why}")
passed = sum(r[1] == "ok" for r in results)
refused = sum(r[1] == "refused (expected)" for r in results)
print(f"{passed} of {len(results) - refused} cases match; {refused} refused as expected; "
      f"{len(results) - passed - refused} failed")
if ARGS.json:
    ARGS.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                     for n, s, w, t in results], indent=1))
sys.exit(0 if passed + refused == len(results) else 1)
