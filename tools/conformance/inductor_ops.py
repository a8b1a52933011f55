"""Kernels in the shape PyTorch Inductor generates them, on Tegula, through the conformance shim's `triton`
package, with torch's own `torch._inductor.runtime.triton_helpers` (the helpers those kernels call: maximum,
minimum, max2, min2, max_with_index, min_with_index, welford_reduce, welford_combine, welford, any, prod,
promote_to_tensor, div_floor_integer, remainder_integer, bucketize_binary_search, exclusive_scan_decoupled_lookback,
frexp, randint64, sort_with_index, if_mask, constexpr_next_power_of_2; and its `libdevice` and `math as tl_math`)
imported unchanged from the installed torch.

The kernels are written here, in Inductor's style, not taken from generated code: `xoffset = tl.program_id(0) *
XBLOCK`, `xindex = xoffset + tl.arange(0, XBLOCK)[:, None]`, `xmask = xindex < xnumel`, persistent reductions
(`R0_BLOCK` covering the whole row) and looped ones (`for r0_offset in range(0, r0_numel, R0_BLOCK)` with
`_tmp = tl.where(r0_mask & xmask, ..., _tmp)` accumulators from `tl.full`), int64 index math, `tl.device_assert`
on indirect indices, gather loads and `tl.atomic_add(..., sem='relaxed')` scatters, `tl.reduce` /
`tl.associative_scan` with combine functions, bf16 / fp16 inputs upcast to fp32, libdevice calls, random numbers
(against a Philox reference written here, bit for bit). Each has a torch reference (float64 where it applies) on
random inputs, on sizes that are not powers of two (masked tails), over fp32, fp16, bf16, int32, int64 where they
apply. Kernels launch directly (`kernel[grid](...)`); Inductor's host runtime (its CachingAutotuner and
launchers) is not exercised.

    PYTHONPATH=tools/conformance/shim .venv/bin/python tools/conformance/inductor_ops.py [-k SUBSTRING] [--json OUT]

(the script puts the shim on sys.path itself; PYTHONPATH as above also works). Nothing is stood in: the shim maps
`triton`, `triton.language`, `triton.language.extra.libdevice`, `triton.backends.compiler`,
`triton.compiler.compiler` and `triton.runtime.cache` (the module paths torch._inductor imports while it loads)
onto Tegula.

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5, float16 2e-3,
bfloat16 1e-2, integers and random bits exactly. Prints one line per case (ok or FAIL, the largest difference, each
output's difference or the first line of the error) and the total. Tegula's recompile warnings are off unless
TEGULA_RECOMPILE_WARNING is set.
"""

import argparse
import json
import os
import pathlib
import sys
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning)

import torch  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from comparisons import check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

from torch._inductor.runtime import triton_helpers  # noqa: E402
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)
F16, BF16, F32, F64, I32, I64 = torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 1e-2, F64: 1e-12, I32: 0, I64: 0, torch.bool: 0}
SHORT = {F32: "float32", F16: "float16", BF16: "bfloat16", F64: "float64", I32: "int32", I64: "int64"}


def rand(*shape, dtype=F32, low=-3.0, high=3.0):
    """Random values of `dtype` on the conformance device (integers uniform in [low, high))."""
    if dtype.is_floating_point:
        return (torch.rand(*shape, dtype=F64) * (high - low) + low).to(dtype).to(DEVICE)
    return torch.randint(int(low), int(high), shape, dtype=dtype).to(DEVICE)


def cdiv(a, b):
    return (a + b - 1) // b


# --- pointwise kernels -------------------------------------------------------------------------------------------


@triton.jit
def triton_poi_fused_add_mul_relu_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x2 = xindex
    x0 = xindex % 37
    tmp0 = tl.load(in_ptr0 + (x2), xmask).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0), xmask, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp3 = 0.5
    tmp4 = tmp2 * tmp3
    tmp5 = tl.full([1], 0, tl.int32)
    tmp6 = triton_helpers.maximum(tmp5, tmp4)
    tl.store(out_ptr0 + (x2), tmp6, xmask)


def add_mul_relu(dtype):
    def case():
        x, b = rand(5, 37 * 7, dtype=dtype), rand(37, dtype=dtype)
        out = torch.empty_like(x)
        n = x.numel()
        triton_poi_fused_add_mul_relu_0[(cdiv(n, 128),)](x, b, out, n, XBLOCK=128)
        want = torch.relu((x.double().reshape(-1, 37) + b.double()) * 0.5).reshape(x.shape)
        yield {"out": (out, want, TOL[dtype])}
    return case


@triton.jit
def triton_poi_fused_gelu_1(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp1 = 0.5
    tmp2 = tmp0 * tmp1
    tmp3 = 0.7071067811865476
    tmp4 = tmp0 * tmp3
    tmp5 = libdevice.erf(tmp4)
    tmp6 = 1.0
    tmp7 = tmp5 + tmp6
    tmp8 = tmp2 * tmp7
    tl.store(out_ptr0 + (x0), tmp8, xmask)


def gelu(dtype):
    def case():
        x = rand(1000, dtype=dtype)
        out = torch.empty_like(x)
        triton_poi_fused_gelu_1[(cdiv(1000, 256),)](x, out, 1000, XBLOCK=256)
        yield {"out": (out, torch.nn.functional.gelu(x.double()), TOL[dtype])}
    return case


@triton.jit
def triton_poi_fused_libdevice_2(in_ptr0, in_ptr1, out_ptr0, out_ptr1, out_ptr2, out_ptr3, out_ptr4, out_ptr5,
                                 xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0).to(tl.int64) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:].to(tl.int64)
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (x0), xmask, other=0.0).to(tl.float32)
    tmp2 = tl_math.abs(tmp0)
    tmp3 = 1e-05
    tmp4 = tmp2 + tmp3
    tmp5 = libdevice.rsqrt(tmp4)
    tmp6 = libdevice.tanh(tmp0)
    tmp7 = libdevice.pow(tmp4, tmp1)
    tmp8 = libdevice.floor(tmp0)
    tmp9 = libdevice.nearbyint(tmp0 * 2.0)
    tmp10 = libdevice.isnan(tmp1).to(tl.int1)
    tmp11 = tl_math.exp(tmp6) + tl_math.log(tmp4)
    tl.store(out_ptr0 + (x0), tmp5, xmask)
    tl.store(out_ptr1 + (x0), tmp6, xmask)
    tl.store(out_ptr2 + (x0), tmp7, xmask)
    tl.store(out_ptr3 + (x0), tmp8 + tmp9, xmask)
    tl.store(out_ptr4 + (x0), tmp10, xmask)
    tl.store(out_ptr5 + (x0), tmp11, xmask)


def libdevice_calls(dtype):
    def case():
        n = 777
        x, y = rand(n, dtype=dtype), rand(n, dtype=dtype, low=-2, high=2)
        y[::13] = float("nan")
        outs = [torch.empty(n, dtype=F32) for _ in range(4)] + [torch.empty(n, dtype=torch.bool),
                                                                   torch.empty(n, dtype=F32)]
        triton_poi_fused_libdevice_2[(cdiv(n, 128),)](x, y, *outs, n, XBLOCK=128)
        xd, yd = x.float().double(), y.float().double()
        a = xd.abs() + 1e-5
        tol = 1e-5
        pw = torch.pow(a, yd)
        finite = ~torch.isnan(yd)
        yield {"rsqrt": (outs[0], torch.rsqrt(a), tol), "tanh": (outs[1], torch.tanh(xd), tol),
               "pow": (outs[2][finite], pw[finite], tol), "pow nan": (outs[2][~finite].isnan().all(), True, 0),
               "floor+nearbyint": (outs[3], torch.floor(xd) + torch.round(xd * 2), tol),
               "isnan": (outs[4], torch.isnan(yd), 0), "exp+log": (outs[5], torch.exp(torch.tanh(xd)) + torch.log(a),
                                                                   tol)}
    return case


@triton.jit
def triton_poi_fused_div_remainder_3(in_ptr0, in_ptr1, out_ptr0, out_ptr1, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.load(in_ptr1 + (x0), xmask, other=1)
    tmp2 = triton_helpers.div_floor_integer(tmp0, tmp1)
    tmp3 = triton_helpers.remainder_integer(tmp0, tmp1)
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp3, xmask)


def div_remainder(dtype):
    def case():
        n = 1001
        a = rand(n, dtype=dtype, low=-1000, high=1000)
        b = rand(n, dtype=dtype, low=-17, high=17)
        b[b == 0] = 3
        q, r = torch.empty_like(a), torch.empty_like(a)
        triton_poi_fused_div_remainder_3[(cdiv(n, 256),)](a, b, q, r, n, XBLOCK=256)
        yield {"floordiv": (q, torch.div(a, b, rounding_mode="floor"), 0), "remainder": (r, torch.remainder(a, b), 0)}
    return case


@triton.jit
def triton_poi_fused_minimum_maximum_4(in_ptr0, in_ptr1, out_ptr0, out_ptr1, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.load(in_ptr1 + (x0), xmask)
    tmp2 = triton_helpers.minimum(tmp0, tmp1)
    tmp3 = triton_helpers.maximum(tmp0, tmp1)
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp3, xmask)


def minimum_maximum(dtype):
    def case():
        n = 500
        a, b = rand(n, dtype=dtype, low=-100, high=100), rand(n, dtype=dtype, low=-100, high=100)
        if dtype.is_floating_point:
            a[::7] = float("nan")
            b[::11] = float("nan")
        lo, hi = torch.empty_like(a), torch.empty_like(a)
        triton_poi_fused_minimum_maximum_4[(cdiv(n, 128),)](a, b, lo, hi, n, XBLOCK=128)
        want_lo, want_hi = torch.minimum(a, b), torch.maximum(a, b)
        nan = torch.isnan(want_lo) if dtype.is_floating_point else torch.zeros(n, dtype=torch.bool)
        yield {"minimum": (lo[~nan], want_lo[~nan], 0), "maximum": (hi[~nan], want_hi[~nan], 0),
               "nan propagated": (torch.isnan(lo[nan]).all() & torch.isnan(hi[nan]).all(), True, 0)}
    return case


@triton.jit
def triton_poi_fused_broadcast_scalar_5(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + 0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK])
    tmp2 = tl.load(in_ptr1 + (x0), xmask)
    tmp3 = tmp2.to(tl.float32)
    tmp4 = tmp1 * tmp3
    tmp5 = tl.where(tmp3 > 0, tmp4, float("-inf"))
    tmp6 = tmp5.to(tl.bfloat16)
    tl.store(out_ptr0 + (x0), tmp6, xmask)


def broadcast_scalar():
    def case():
        n = 999
        s = rand(1)
        x = rand(n, dtype=I32, low=-50, high=50)
        out = torch.empty(n, dtype=BF16)
        triton_poi_fused_broadcast_scalar_5[(cdiv(n, 256),)](s, x, out, n, XBLOCK=256)
        want = torch.where(x > 0, s.double() * x.double(), float("-inf")).to(BF16)
        finite = x > 0
        yield {"out": (out[finite].float(), want[finite].float(), 0),
               "-inf": ((out[~finite] == float("-inf")).all(), True, 0)}
    return case


@triton.jit
def triton_poi_fused_frexp_6(in_ptr0, out_ptr0, out_ptr1, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1, tmp2 = triton_helpers.frexp(tmp0)
    tl.store(out_ptr0 + (x0), tmp1, xmask)
    tl.store(out_ptr1 + (x0), tmp2, xmask)


def frexp(dtype):
    def case():
        n = 300
        x = rand(n, dtype=F64, low=-1e4, high=1e4).to(dtype)
        x[5] = 0.0
        m, e = torch.empty_like(x), torch.empty(n, dtype=I32)
        triton_poi_fused_frexp_6[(cdiv(n, 64),)](x, m, e, n, XBLOCK=64)
        want_m, want_e = torch.frexp(x)
        yield {"mantissa": (m, want_m, 0), "exponent": (e, want_e, 0)}
    return case


@triton.jit
def triton_poi_fused_pow2_7(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    P: tl.constexpr = triton_helpers.constexpr_next_power_of_2(XBLOCK // 4 + 3)
    tmp0 = tl.load(in_ptr0 + (x0), xmask, other=0.0)
    tmp1 = tmp0 * P
    tl.store(out_ptr0 + (x0), tmp1, xmask)


def constexpr_pow2():
    def case():
        n = 333
        x = rand(n)
        out = torch.empty_like(x)
        triton_poi_fused_pow2_7[(cdiv(n, 128),)](x, out, n, XBLOCK=128)
        yield {"out": (out, x.double() * 64, 1e-6)}
    return case


@triton.jit
def triton_poi_fused_if_mask_7b(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask, other=triton_helpers.if_mask(xmask, 0.0))
    tl.store(out_ptr0 + (x0), tmp0 + 1.0, xmask)


def if_mask():
    def case():
        n = 333
        x = rand(n)
        out = torch.empty_like(x)
        triton_poi_fused_if_mask_7b[(cdiv(n, 128),)](x, out, n, XBLOCK=128)
        yield {"out": (out, x.double() + 1, 1e-6)}
    return case


# --- gathers, scatters, asserts ----------------------------------------------------------------------------------


@triton.jit
def triton_poi_fused_embedding_8(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0).to(tl.int64) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:].to(tl.int64)
    xmask = xindex < xnumel
    x1 = xindex // 19
    x0 = xindex % 19
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x1), xmask, eviction_policy='evict_last')
    tmp1 = tl.full([XBLOCK], 50, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 50)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 50")
    tmp6 = tl.load(in_ptr1 + (x0 + 19 * tmp4), xmask).to(tl.float32)
    tl.store(out_ptr0 + (x2), tmp6, xmask)


def embedding(idtype, dtype):
    def case():
        table = rand(50, 19, dtype=dtype)
        idx = rand(41, dtype=idtype, low=-50, high=50)
        out = torch.empty(41, 19, dtype=F32)
        n = out.numel()
        triton_poi_fused_embedding_8[(cdiv(n, 128),)](idx, table, out, n, XBLOCK=128)
        yield {"out": (out, table.float()[idx.long() % 50], 0)}
    return case


@triton.jit
def triton_poi_fused_index_add_9(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x1 = xindex // 13
    x0 = xindex % 13
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x1), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (x2), xmask)
    tmp2 = tl.full([XBLOCK], 29, tl.int64)
    tmp3 = tmp0 + tmp2
    tmp4 = tmp0 < 0
    tmp5 = tl.where(tmp4, tmp3, tmp0)
    tl.device_assert(((0 <= tmp5) & (tmp5 < 29)) | ~(xmask), "index out of bounds: 0 <= tmp5 < 29")
    tl.atomic_add(out_ptr0 + (tl.broadcast_to(x0 + 13 * tmp5, [XBLOCK])), tmp1, xmask, sem='relaxed')


def index_add(dtype):
    def case():
        idx = rand(211, dtype=I64, low=-29, high=29)
        src = rand(211, 13, dtype=dtype)
        out = rand(29, 13, dtype=dtype)
        want = out.double().index_add(0, idx % 29, src.double())
        n = src.numel()
        triton_poi_fused_index_add_9[(cdiv(n, 256),)](idx, src, out, n, XBLOCK=256)
        yield {"out": (out, want, TOL[dtype] if dtype != F32 else 1e-6)}
    return case


@triton.jit
def triton_poi_fused_bincount_10(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tmp0.to(tl.int64)
    tmp2 = tl.full([1], 1, tl.int64)
    tl.device_assert(((0 <= tmp1) & (tmp1 < 23)) | ~(xmask), "index out of bounds: 0 <= tmp1 < 23")
    tl.atomic_add(out_ptr0 + (tl.broadcast_to(tmp1, [XBLOCK])), tl.broadcast_to(tmp2, [XBLOCK]), xmask,
                  sem='relaxed')


def bincount():
    def case():
        x = rand(5003, dtype=I32, low=0, high=23)
        out = torch.zeros(23, dtype=I64)
        triton_poi_fused_bincount_10[(cdiv(5003, 512),)](x, out, 5003, XBLOCK=512)
        yield {"counts": (out, torch.bincount(x, minlength=23), 0)}
    return case


@triton.jit
def triton_poi_fused_bucketize_11(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = triton_helpers.bucketize_binary_search(tmp0, in_ptr1, 21, 21, 1, 0, tl.int64, False, None, None, None)
    tmp2 = triton_helpers.bucketize_binary_search(tmp0, in_ptr1, 21, 21, 1, 0, tl.int64, True, None, None, None)
    tl.store(out_ptr0 + (x0), tmp1 * 100 + tmp2, xmask)


def bucketize(dtype):
    def case():
        n = 700
        bounds = torch.sort(rand(21, dtype=dtype, low=-50, high=50)).values
        x = rand(n, dtype=dtype, low=-60, high=60)
        x[::9] = bounds[torch.randint(0, 21, (cdiv(n, 9),))]
        out = torch.empty(n, dtype=I64)
        triton_poi_fused_bucketize_11[(cdiv(n, 128),)](x, bounds, out, n, XBLOCK=128)
        want = torch.bucketize(x, bounds) * 100 + torch.bucketize(x, bounds, right=True)
        yield {"out": (out, want, 0)}
    return case


# --- persistent reductions ---------------------------------------------------------------------------------------


@triton.jit
def triton_per_fused_sum_12(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = r0_index < r0_numel
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 100 * x0), r0_mask & xmask, other=0.0).to(tl.float32)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(r0_mask & xmask, tmp1, 0)
    tmp4 = tl.sum(tmp3, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp4, xmask)


def persistent_sum(dtype):
    def case():
        x = rand(37, 100, dtype=dtype)
        out = torch.empty(37, dtype=F32)
        triton_per_fused_sum_12[(cdiv(37, 8),)](x, out, 37, 100, XBLOCK=8)
        yield {"sum": (out, x.double().sum(1), 1e-5)}
    return case


@triton.jit
def triton_per_fused__softmax_13(in_out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, other=0.0).to(tl.float32)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(r0_mask & xmask, tmp1, float("-inf"))
    tmp4 = triton_helpers.max2(tmp3, 1)[:, None]
    tmp5 = tmp0 - tmp4
    tmp6 = tl_math.exp(tmp5)
    tmp7 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
    tmp9 = tl.where(r0_mask & xmask, tmp7, 0)
    tmp10 = tl.sum(tmp9, 1)[:, None]
    tmp11 = tmp6 / tmp10
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (r0_1 + r0_numel * x0), tmp11, r0_mask & xmask)


def persistent_softmax(dtype):
    def case():
        x = rand(19, 75, dtype=dtype, low=-8, high=8)
        want = torch.softmax(x.double(), 1)
        triton_per_fused__softmax_13[(cdiv(19, 4),)](x, 19, 75, XBLOCK=4, R0_BLOCK=128)
        yield {"softmax": (x, want, TOL[dtype])}
    return case


@triton.jit
def triton_per_fused_argmax_max_14(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 50 * x0), r0_mask & xmask, other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(r0_mask & xmask, tmp1, float("-inf"))
    tmp4 = triton_helpers.max2(tmp3, 1)[:, None]
    tmp5 = tl.broadcast_to(r0_1, tmp3.shape)
    _, tmp6_tmp = triton_helpers.max_with_index(tmp3, tmp5, 1)
    tmp6 = tmp6_tmp[:, None]
    tl.store(out_ptr0 + (x0), tmp4, xmask)
    tl.store(out_ptr1 + (x0), tmp6, xmask)


def persistent_argmax(dtype):
    def case():
        x = rand(23, 50, dtype=dtype, low=-20, high=20) if dtype.is_floating_point else rand(23, 50, dtype=dtype,
                                                                                            low=-5, high=5)
        if not dtype.is_floating_point:
            x = x.float()  # the kernel's -inf padding is a float; integer rows go through float32
        mx, am = torch.empty(23, dtype=x.dtype), torch.empty(23, dtype=I64)
        triton_per_fused_argmax_max_14[(cdiv(23, 8),)](x, mx, am, 23, 50, XBLOCK=8)
        # torch.argmax picks the first of equal maxima, as max_with_index does
        yield {"max": (mx, x.max(1).values, 0), "argmax": (am, x.argmax(1), 0)}
    return case


@triton.jit
def triton_per_fused_any_prod_15(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 32
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, other=0)
    tmp1 = tl.full([1, 1], 3, tmp0.dtype)
    tmp2 = tmp0 > tmp1
    tmp3 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])
    tmp5 = tl.where(r0_mask & xmask, tmp3, 0)
    tmp6 = triton_helpers.any(tmp5, 1)[:, None]
    tmp7 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp9 = tl.where(r0_mask & xmask, tmp7, 1)
    tmp10 = triton_helpers.prod(tmp9, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp6, xmask)
    tl.store(out_ptr1 + (x0), tmp10, xmask)


def any_prod(dtype):
    def case():
        x = rand(29, 9, dtype=dtype, low=-2, high=5)
        if dtype.is_floating_point:
            x = x * 0.9
        any_out, prod_out = torch.empty(29, dtype=torch.bool), torch.empty(29, dtype=dtype)
        triton_per_fused_any_prod_15[(cdiv(29, 4),)](x, any_out, prod_out, 29, 9, XBLOCK=4)
        yield {"any": (any_out, (x > 3).any(1), 0), "prod": (prod_out, x.double().prod(1), TOL[dtype] * 10)}
    return case


@triton.jit
def triton_per_fused_sum_16(in_ptr0, out_ptr0, xnumel, r0_numel):
    XBLOCK: tl.constexpr = 1
    R0_BLOCK: tl.constexpr = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = tl.full([1], xoffset, tl.int32)
    xmask = tl.full([R0_BLOCK], True, tl.int1)
    r0_index = tl.arange(0, R0_BLOCK)[:]
    r0_mask = r0_index < r0_numel
    r0_0 = r0_index
    tmp0 = tl.load(in_ptr0 + (r0_0), r0_mask, other=0.0)
    tmp1 = tmp0 * tmp0
    tmp2 = tl.broadcast_to(tmp1, [R0_BLOCK])
    tmp4 = tl.where(r0_mask, tmp2, 0)
    tmp5 = triton_helpers.promote_to_tensor(tl.sum(tmp4, 0))
    tl.store(out_ptr0 + (tl.full([1], 0, tl.int32)), tmp5, None)


def promote_to_tensor_sum():
    def case():
        x = rand(1000)
        out = torch.empty((), dtype=F32)
        triton_per_fused_sum_16[(1,)](x, out, 1, 1000)
        yield {"sum of squares": (out, (x.double() ** 2).sum(), 1e-5)}
    return case


@triton.jit
def triton_per_fused_native_layer_norm_17(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, r0_numel,
                                          XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 128
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 96 * x0), r0_mask & xmask, other=0.0).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp2 = tl.load(in_ptr2 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
    tmp3 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp5 = tl.where(r0_mask & xmask, tmp3, 0)
    tmp6 = tl.broadcast_to(tmp3, [XBLOCK, R0_BLOCK])
    tmp8 = tl.where(r0_mask & xmask, tmp6, 0)
    tmp9 = tl.sum(tmp8, 1)[:, None]
    tmp10 = tl.full([XBLOCK, 1], 96, tl.int32)
    tmp11 = tmp10.to(tl.float32)
    tmp12 = tmp9 / tmp11
    tmp13 = tmp3 - tmp12
    tmp14 = tmp13 * tmp13
    tmp15 = tl.broadcast_to(tmp14, [XBLOCK, R0_BLOCK])
    tmp17 = tl.where(r0_mask & xmask, tmp15, 0)
    tmp18 = tl.sum(tmp17, 1)[:, None]
    tmp19 = 96.0
    tmp20 = tmp18 / tmp19
    tmp21 = 1e-05
    tmp22 = tmp20 + tmp21
    tmp23 = libdevice.rsqrt(tmp22)
    tmp24 = tmp0 - tmp12
    tmp25 = tmp24 * tmp23
    tmp26 = tmp25 * tmp1
    tmp27 = tmp26 + tmp2
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (x0), tmp23, xmask)
    tl.store(out_ptr0 + (r0_1 + 96 * x0), tmp27, r0_mask & xmask)


def persistent_layer_norm(dtype):
    def case():
        x, w, b = rand(21, 96, dtype=dtype), rand(96, dtype=dtype), rand(96, dtype=dtype)
        rstd, out = torch.empty(21, dtype=F32), torch.empty(21, 96, dtype=dtype)
        triton_per_fused_native_layer_norm_17[(cdiv(21, 4),)](rstd, x, w, b, out, 21, 96, XBLOCK=4)
        xd = x.double()
        want = torch.nn.functional.layer_norm(xd, (96,), w.double(), b.double(), 1e-5)
        want_rstd = torch.rsqrt(xd.var(1, unbiased=False) + 1e-5)
        yield {"out": (out, want, TOL[dtype]), "rstd": (rstd, want_rstd, 1e-5)}
    return case


# --- looped reductions -------------------------------------------------------------------------------------------


@triton.jit
def triton_red_fused_sum_max_min_18(in_ptr0, out_ptr0, out_ptr1, out_ptr2, xnumel, r0_numel, XBLOCK: tl.constexpr,
                                    R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    _tmp4 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    _tmp6 = tl.full([XBLOCK, R0_BLOCK], float("inf"), tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, eviction_policy='evict_first',
                       other=0.0).to(tl.float32)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(r0_mask & xmask, tmp3, _tmp2)
        tmp5 = triton_helpers.maximum(_tmp4, tmp1)
        _tmp4 = tl.where(r0_mask & xmask, tmp5, _tmp4)
        tmp7 = triton_helpers.minimum(_tmp6, tmp1)
        _tmp6 = tl.where(r0_mask & xmask, tmp7, _tmp6)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tmp4 = triton_helpers.max2(_tmp4, 1)[:, None]
    tmp6 = triton_helpers.min2(_tmp6, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp4, xmask)
    tl.store(out_ptr2 + (x0), tmp6, xmask)


def looped_sum_max_min(dtype):
    def case():
        x = rand(13, 1000, dtype=dtype)
        s, mx, mn = (torch.empty(13, dtype=F32) for _ in range(3))
        triton_red_fused_sum_max_min_18[(cdiv(13, 2),)](x, s, mx, mn, 13, 1000, XBLOCK=2, R0_BLOCK=128)
        xd = x.double()
        yield {"sum": (s, xd.sum(1), 1e-5), "max": (mx, xd.max(1).values, 0), "min": (mn, xd.min(1).values, 0)}
    return case


@triton.jit
def triton_red_fused_argmin_19(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0).to(tl.int64) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None].to(tl.int64)
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :].to(tl.int64)
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], float("inf"), tl.float32)
    _tmp2_index = tl.full([XBLOCK, R0_BLOCK], 9223372036854775807, tl.int64)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        _tmp2_next, _tmp2_index_next = triton_helpers.minimum_with_index(_tmp2, _tmp2_index, tmp1, r0_index)
        _tmp2 = tl.where(r0_mask & xmask, _tmp2_next, _tmp2)
        _tmp2_index = tl.where(r0_mask & xmask, _tmp2_index_next, _tmp2_index)
    tmp2_val, tmp2_idx = triton_helpers.min_with_index(_tmp2, _tmp2_index, 1)
    tmp2 = tmp2_idx[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)


def looped_argmin(dtype):
    def case():
        x = rand(11, 517, dtype=dtype, low=-4, high=4)
        x = torch.round(x.float() * 4).to(dtype)  # ties, so the first index has to win
        out = torch.empty(11, dtype=I64)
        triton_red_fused_argmin_19[(cdiv(11, 4),)](x, out, 11, 517, XBLOCK=4, R0_BLOCK=64)
        yield {"argmin": (out, x.float().argmin(1), 0)}
    return case


@triton.jit
def triton_red_fused_var_mean_20(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr,
                                 R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    tmp2_mean = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp2_m2 = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp2_weight = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, eviction_policy='evict_first',
                       other=0.0).to(tl.float32)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp2_mean_next, tmp2_m2_next, tmp2_weight_next = triton_helpers.welford_reduce(
            tmp1, tmp2_mean, tmp2_m2, tmp2_weight, r0_offset == 0
        )
        tmp2_mean = tl.where(r0_mask & xmask, tmp2_mean_next, tmp2_mean)
        tmp2_m2 = tl.where(r0_mask & xmask, tmp2_m2_next, tmp2_m2)
        tmp2_weight = tl.where(r0_mask & xmask, tmp2_weight_next, tmp2_weight)
    tmp3, tmp4, tmp5 = triton_helpers.welford(tmp2_mean, tmp2_m2, tmp2_weight, 1)
    tmp2 = tmp3[:, None]
    tmp6 = tmp4[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp6 / (r0_numel - 1), xmask)


def looped_var_mean(dtype):
    def case():
        x = rand(9, 2047, dtype=dtype) + 2.0
        mean, var = torch.empty(9, dtype=F32), torch.empty(9, dtype=F32)
        triton_red_fused_var_mean_20[(cdiv(9, 2),)](x, mean, var, 9, 2047, XBLOCK=2, R0_BLOCK=256)
        xd = x.double()
        yield {"mean": (mean, xd.mean(1), 1e-5), "var": (var, xd.var(1), 1e-4)}
    return case


@triton.jit
def triton_per_fused_welford_combine_21(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    x0 = xindex
    # the row's two halves, each reduced on its own and then combined
    tmp0 = tl.load(in_ptr0 + (r0_index + 2 * r0_numel * x0), r0_mask & xmask, other=0.0)
    tmp1 = tl.load(in_ptr0 + (r0_numel + r0_index + 2 * r0_numel * x0), r0_mask & xmask, other=0.0)
    tmp2 = tl.where(r0_mask & xmask, 1.0, 0.0)
    tmp3 = tl.zeros_like(tmp0)
    m_a, m2_a, w_a = triton_helpers.welford(tmp0, tmp3, tmp2, 1)
    m_b, m2_b, w_b = triton_helpers.welford(tmp1, tmp3, tmp2, 1)
    mean, m2, weight = triton_helpers.welford_combine(m_a, m2_a, w_a, m_b, m2_b, w_b)
    tl.store(out_ptr0 + (x0), mean[:, None], xmask)
    tl.store(out_ptr1 + (x0), (m2 / weight)[:, None], xmask)


def welford_combine():
    def case():
        x = rand(14, 2 * 45) + 1.5
        mean, var = torch.empty(14), torch.empty(14)
        triton_per_fused_welford_combine_21[(cdiv(14, 4),)](x, mean, var, 14, 45, XBLOCK=4)
        xd = x.double()
        yield {"mean": (mean, xd.mean(1), 1e-5), "var": (var, xd.var(1, unbiased=False), 1e-5)}
    return case


@triton.jit
def triton_red_fused_sum_split_22(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    # a split reduction's first stage: each of xnumel programs sums its slice of one long row
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp5 = tl.full([XBLOCK, R0_BLOCK], 0, tl.int64)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = r0_1 + x0 * ((1000 + xnumel - 1) // xnumel)
        tmp1 = tl.full([1, 1], 1000, tl.int32)
        tmp2 = tmp0 < tmp1
        tmp3 = tl.load(in_ptr0 + (tmp0), r0_mask & tmp2 & xmask, eviction_policy='evict_first', other=0)
        tmp4 = tl.broadcast_to(tmp3.to(tl.int64), [XBLOCK, R0_BLOCK])
        tmp6 = _tmp5 + tmp4
        _tmp5 = tl.where(r0_mask & xmask, tmp6, _tmp5)
    tmp5 = tl.sum(_tmp5, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp5, xmask)


def split_sum(dtype):
    def case():
        x = rand(1000, dtype=dtype, low=-1000, high=1000)
        part = torch.empty(7, dtype=I64)
        triton_red_fused_sum_split_22[(cdiv(7, 2),)](x, part, 7, cdiv(1000, 7), XBLOCK=2, R0_BLOCK=64)
        yield {"sum": (part.sum(), x.long().sum(), 0)}
    return case


# --- tl.reduce, scans, sorts -------------------------------------------------------------------------------------


@triton.jit
def _triton_helper_fn_add0(arg0_0, arg1_0):
    tmp0 = arg0_0 + arg1_0
    return tmp0


@triton.jit
def triton_per_fused_cumsum_23(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 128
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, other=0)
    tmp1 = tmp0.to(tl.int64) if tmp0.dtype.is_int() else tmp0.to(tl.float32)
    tmp2 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])
    tmp3 = tl.associative_scan((tmp2,), 1, _triton_helper_fn_add0)[0]
    tl.store(out_ptr0 + (r0_1 + r0_numel * x0), tmp3, r0_mask & xmask)


def cumsum(dtype):
    def case():
        x = rand(17, 100, dtype=dtype, low=-100 if not dtype.is_floating_point else -3,
                 high=100 if not dtype.is_floating_point else 3)
        out_dtype = I64 if not dtype.is_floating_point else F32
        out = torch.empty(17, 100, dtype=out_dtype)
        triton_per_fused_cumsum_23[(cdiv(17, 4),)](x, out, 17, 100, XBLOCK=4)
        want = x.long().cumsum(1) if not dtype.is_floating_point else x.double().cumsum(1)
        yield {"cumsum": (out, want, 0 if out_dtype == I64 else 1e-5)}
    return case


@triton.jit
def _triton_helper_fn_maximum_with_index(arg0_0, arg0_1, arg1_0, arg1_1):
    tmp0 = arg0_0 > arg1_0
    tmp1 = arg0_0 == arg1_0
    tmp2 = arg0_1 > arg1_1
    tmp3 = tmp1 & tmp2
    tmp4 = tmp0 | tmp3
    tmp5 = tl.where(tmp4, arg0_0, arg1_0)
    tmp6 = tl.where(tmp4, arg0_1, arg1_1)
    return tmp5, tmp6


@triton.jit
def triton_per_fused_cummax_24(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, other=0.0)
    tmp1 = r0_1
    tmp2 = tmp1.to(tl.int64)
    tmp3 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp4 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])
    tmp5, tmp6, = tl.associative_scan((tmp3, tmp4), 1, _triton_helper_fn_maximum_with_index)
    tl.store(out_ptr0 + (r0_1 + r0_numel * x0), tmp5, r0_mask & xmask)
    tl.store(out_ptr1 + (r0_1 + r0_numel * x0), tmp6, r0_mask & xmask)


def cummax(dtype):
    def case():
        x = rand(10, 50, dtype=dtype, low=-10, high=10)
        if dtype.is_floating_point:
            x = torch.round(x)  # ties: cummax reports the last index among equal maxima
        v, i = torch.empty_like(x), torch.empty(10, 50, dtype=I64)
        triton_per_fused_cummax_24[(cdiv(10, 4),)](x, v, i, 10, 50, XBLOCK=4)
        want = torch.cummax(x, 1)
        yield {"values": (v, want.values, 0), "indices": (i, want.indices, 0)}
    return case


@triton.jit
def _triton_helper_fn_sumsq0(arg0_0, arg1_0):
    tmp0 = arg0_0 + arg1_0
    return tmp0


@triton.jit
def triton_per_fused_reduce_custom_25(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_index + r0_numel * x0), r0_mask & xmask, other=0.0).to(tl.float32)
    tmp1 = tl.where(r0_mask & xmask, tmp0 * tmp0, 0.0)
    tmp2 = tl.reduce(tmp1, 1, _triton_helper_fn_sumsq0)[:, None]
    tmp3 = tl.where(r0_mask & xmask, tmp0, float("-inf"))
    tmp4 = tl.reduce(tmp3, 1, triton_helpers.maximum)[:, None]
    tl.store(out_ptr0 + (x0), tmp2 + tmp4, xmask)


def reduce_custom(dtype):
    def case():
        x = rand(15, 60, dtype=dtype)
        out = torch.empty(15, dtype=F32)
        triton_per_fused_reduce_custom_25[(cdiv(15, 4),)](x, out, 15, 60, XBLOCK=4)
        xd = x.double()
        yield {"out": (out, (xd * xd).sum(1) + xd.max(1).values, 1e-5)}
    return case


@triton.jit
def triton_per_fused_sort_26(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr,
                             DESCENDING: tl.constexpr, STABLE: tl.constexpr):
    R0_BLOCK: tl.constexpr = 64
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, other=0.0)
    tmp1 = r0_1
    tmp2 = tmp1.to(tl.int16)
    tmp3 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp4 = tl.broadcast_to(tmp2, [XBLOCK, R0_BLOCK])
    tmp5, tmp6, = triton_helpers.sort_with_index(tmp3, tmp4, r0_numel, 1, stable=STABLE, descending=DESCENDING)
    tmp7 = tmp6.to(tl.int64)
    tl.store(out_ptr0 + (r0_1 + r0_numel * x0), tmp5, r0_mask & xmask)
    tl.store(out_ptr1 + (r0_1 + r0_numel * x0), tmp7, r0_mask & xmask)


def sort_with_index(dtype, descending, stable):
    def case():
        x = rand(9, 45, dtype=dtype, low=-20, high=20)
        if dtype.is_floating_point:
            x = torch.round(x)
        v, i = torch.empty_like(x), torch.empty(9, 45, dtype=I64)
        triton_per_fused_sort_26[(cdiv(9, 4),)](x, v, i, 9, 45, XBLOCK=4, DESCENDING=descending, STABLE=stable)
        want = torch.sort(x, dim=1, descending=descending, stable=True)
        got = {"values": (v, want.values, 0)}
        if stable:
            got["indices"] = (i, want.indices, 0)
        else:  # any order among ties: the indices must pick the sorted values
            got["gathered"] = (x.gather(1, i), want.values, 0)
        yield got
    return case


@triton.jit
def triton_per_fused_tl_sort_27(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_index + R0_BLOCK * x0), xmask, other=0)
    tmp1 = tl.sort(tmp0, 1, descending=True)
    tl.store(out_ptr0 + (r0_index + R0_BLOCK * x0), tmp1, xmask)


def tl_sort(dtype):
    def case():
        x = rand(7, 32, dtype=dtype, low=-1000, high=1000)
        out = torch.empty_like(x)
        triton_per_fused_tl_sort_27[(cdiv(7, 2),)](x, out, 7, XBLOCK=2, R0_BLOCK=32)
        yield {"sorted": (out, torch.sort(x, 1, descending=True).values, 0)}
    return case


@triton.jit
def triton_per_fused_cumsum_lookback_28(in_ptr0, out_ptr0, ws_ptr, xnumel, R0_BLOCK: tl.constexpr):
    # one long row scanned by many programs, each publishing its block's total through the workspace
    r0_offset = tl.program_id(0) * R0_BLOCK
    r0_index = r0_offset + tl.arange(0, R0_BLOCK)
    r0_mask = r0_index < xnumel
    tmp0 = tl.load(in_ptr0 + (r0_index), r0_mask, other=0.0)
    tmp1 = tmp0.to(tl.float32)
    tmp2 = tl.where(r0_mask, tmp1, 0.0)
    tmp3 = tl.reduce(tmp2, 0, _triton_helper_fn_add0)
    scratch_base = ws_ptr.to(tl.pointer_type(tl.uint64))
    exclusive_prefix = triton_helpers.exclusive_scan_decoupled_lookback(
        scratch_base, tmp3, tl.program_id(0), _triton_helper_fn_add0, DTYPE_VALUE_AS_UINT=tl.uint32,
        DTYPE_PACK=tl.uint64)
    tmp4 = tl.associative_scan(tmp2, 0, _triton_helper_fn_add0)
    tmp5 = _triton_helper_fn_add0(exclusive_prefix, tmp4)
    tl.store(out_ptr0 + (r0_index), tmp5, r0_mask)


def cumsum_lookback():
    def case():
        n = 5000
        x = rand(n)
        out = torch.empty(n)
        ws = torch.zeros(cdiv(n, 256), dtype=torch.int64)  # uint64 words, zero: no block has published
        triton_per_fused_cumsum_lookback_28[(cdiv(n, 256),)](x, out, ws, n, R0_BLOCK=256)
        yield {"cumsum": (out, x.double().cumsum(0), 1e-5)}
    return case


# --- random numbers ----------------------------------------------------------------------------------------------

MASK32 = (1 << 32) - 1


def philox(seed, offsets, rounds=10):
    """Philox-4x32 with the counter (offset's low 32 bits, its high 32 bits, 0, 0) and the key (seed's low and
    high 32 bits), in Python integers: a list of four-word tuples."""
    out = []
    for off in offsets:
        c0, c1, c2, c3 = off & MASK32, (off >> 32) & MASK32, 0, 0
        k0, k1 = seed & MASK32, (seed >> 32) & MASK32
        for _ in range(rounds):
            p0, p2 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
            c0, c1, c2, c3 = (p2 >> 32) ^ c1 ^ k0, p2 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
            k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
        out.append((c0, c1, c2, c3))
    return out


def uniform(word):
    """uint_to_uniform_float of one 32-bit word, in float32 arithmetic."""
    signed = word - (1 << 32) if word >= 1 << 31 else word
    magnitude = -signed - 1 if signed < 0 else signed
    return torch.tensor(magnitude, dtype=F32) * torch.tensor(4.6566127342e-10, dtype=F32)


@triton.jit
def triton_poi_fused_rand_randn_29(in_ptr0, out_ptr0, out_ptr1, load_seed_offset, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + load_seed_offset)
    tmp1 = x0
    tmp2 = tl.rand(tmp0, (tmp1).to(tl.uint32))
    tmp3 = tl.randn(tmp0, (tmp1).to(tl.uint32))
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp3, xmask)


def rand_randn():
    def case():
        n = 777
        seeds = torch.tensor([123456789012, 987654321], dtype=I64)
        u, z = torch.empty(n), torch.empty(n)
        triton_poi_fused_rand_randn_29[(cdiv(n, 128),)](seeds, u, z, 1, n, XBLOCK=128)
        words = philox(int(seeds[1]), range(n))
        want_u = torch.stack([uniform(w[0]) for w in words])
        u1 = torch.stack([uniform(w[0]) for w in words]).clamp(min=1e-7).double()
        u2 = torch.stack([uniform(w[1]) for w in words])
        theta = (torch.tensor(6.283185307179586, dtype=F32) * u2).double()
        want_z = torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(theta)
        yield {"rand": (u, want_u, 0), "randn": (z, want_z, 1e-5)}
    return case


@triton.jit
def triton_poi_fused_randint_30(in_ptr0, out_ptr0, load_seed_offset, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + load_seed_offset)
    tmp1 = x0
    tmp2 = tl.full([1], -1000, tl.int64)
    tmp3 = tl.full([1], 5000000000, tl.int64)
    tmp4 = triton_helpers.randint64(tmp0, (tmp1).to(tl.uint32), tmp2, tmp3)
    tl.store(out_ptr0 + (x0), tmp4, xmask)


def randint64():
    def case():
        n = 501
        seeds = torch.tensor([42, 2**40 + 7], dtype=I64)
        out = torch.empty(n, dtype=I64)
        triton_poi_fused_randint_30[(cdiv(n, 128),)](seeds, out, 1, n, XBLOCK=128)
        size = 5000000000 + 1000
        want = torch.tensor([((w[0] | (w[1] << 32)) % size) - 1000 for w in philox(2**40 + 7, range(n))], dtype=I64)
        yield {"randint64": (out, want, 0)}
    return case


@triton.jit
def triton_poi_fused_native_dropout_31(in_ptr0, in_ptr1, out_ptr0, out_ptr1, load_seed_offset, xnumel,
                                       XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + load_seed_offset)
    tmp1 = x0
    tmp2 = tl.rand(tmp0, (tmp1).to(tl.uint32))
    tmp3 = tl.load(in_ptr1 + (x0), xmask).to(tl.float32)
    tmp4 = 0.2
    tmp5 = tmp2 > tmp4
    tmp6 = tmp5.to(tl.float32)
    tmp7 = tmp6 * tmp3
    tmp8 = 1.25
    tmp9 = tmp7 * tmp8
    tl.store(out_ptr0 + (x0), tmp5, xmask)
    tl.store(out_ptr1 + (x0), tmp9, xmask)


def dropout(dtype):
    def case():
        n = 1234
        seeds = torch.tensor([5, 77], dtype=I64)
        x = rand(n, dtype=dtype)
        keep, out = torch.empty(n, dtype=torch.bool), torch.empty(n, dtype=dtype)
        triton_poi_fused_native_dropout_31[(cdiv(n, 256),)](seeds, x, keep, out, 0, n, XBLOCK=256)
        want_keep = torch.stack([uniform(w[0]) for w in philox(5, range(n))]) > 0.2
        yield {"keep": (keep, want_keep, 0), "out": (out, x.double() * want_keep * 1.25, TOL[dtype])}
    return case


# --- the cases ---------------------------------------------------------------------------------------------------

CASES = [
    *[(f"pointwise add-mul-relu {SHORT[d]}", add_mul_relu(d)) for d in (F32, F16, BF16)],
    *[(f"pointwise gelu(erf) {SHORT[d]}", gelu(d)) for d in (F32, BF16)],
    *[(f"pointwise libdevice rsqrt/tanh/pow/floor/nearbyint/isnan {SHORT[d]}", libdevice_calls(d)) for d in (F32, F16)],
    *[(f"pointwise div_floor_integer/remainder_integer {SHORT[d]}", div_remainder(d)) for d in (I32, I64)],
    *[(f"pointwise minimum/maximum with NaN {SHORT[d]}", minimum_maximum(d)) for d in (F32, BF16, I32)],
    ("pointwise scalar load, broadcast_to, int32 -> bf16", broadcast_scalar()),
    *[(f"pointwise frexp {SHORT[d]}", frexp(d)) for d in (F32, F64, F16)],
    ("pointwise constexpr_next_power_of_2", constexpr_pow2()),
    ("pointwise load other=if_mask(xmask, 0.0)", if_mask()),
    *[(f"gather embedding {SHORT[i]} indices, {SHORT[d]} table, device_assert", embedding(i, d))
      for i, d in ((I64, F32), (I32, BF16))],
    *[(f"scatter index_add atomic_add relaxed {SHORT[d]}", index_add(d)) for d in (F32, F16)],
    ("scatter bincount atomic_add int64", bincount()),
    *[(f"bucketize_binary_search {SHORT[d]}", bucketize(d)) for d in (F32, I32)],
    *[(f"persistent sum {SHORT[d]}", persistent_sum(d)) for d in (F32, BF16)],
    *[(f"persistent softmax (max2) in place {SHORT[d]}", persistent_softmax(d)) for d in (F32, F16)],
    *[(f"persistent max2 + max_with_index {SHORT[d]}", persistent_argmax(d)) for d in (F32, I32)],
    *[(f"persistent any + prod {SHORT[d]}", any_prod(d)) for d in (F32, I32, I64)],
    ("persistent full reduction promote_to_tensor", promote_to_tensor_sum()),
    *[(f"persistent layer norm {SHORT[d]}", persistent_layer_norm(d)) for d in (F32, BF16)],
    *[(f"looped sum / maximum+max2 / minimum+min2 {SHORT[d]}", looped_sum_max_min(d)) for d in (F32, F16)],
    *[(f"looped argmin minimum_with_index + min_with_index {SHORT[d]}", looped_argmin(d)) for d in (F32, BF16)],
    *[(f"looped var_mean welford_reduce + welford {SHORT[d]}", looped_var_mean(d)) for d in (F32, BF16)],
    ("persistent welford + welford_combine float32", welford_combine()),
    *[(f"split reduction first stage int64 accumulate {SHORT[d]}", split_sum(d)) for d in (I32, I64)],
    *[(f"associative_scan cumsum {SHORT[d]}", cumsum(d)) for d in (F32, I32, I64)],
    *[(f"associative_scan cummax (value, index) {SHORT[d]}", cummax(d)) for d in (F32, I64)],
    *[(f"tl.reduce custom combine + triton_helpers.maximum {SHORT[d]}", reduce_custom(d)) for d in (F32, F16)],
    *[(f"sort_with_index {SHORT[d]} descending={desc} stable={stable}", sort_with_index(d, desc, stable))
      for d, desc, stable in ((F32, False, True), (F32, True, False), (I32, True, True), (I64, False, False))],
    *[(f"tl.sort descending {SHORT[d]}", tl_sort(d)) for d in (I32, F32)],
    ("exclusive_scan_decoupled_lookback cumsum float32", cumsum_lookback()),
    ("tl.rand + tl.randn against Philox", rand_randn()),
    ("randint64 against Philox", randint64()),
    *[(f"native_dropout tl.rand {SHORT[d]}", dropout(d)) for d in (F32, BF16)],
]


def as_tensors(case):
    """The case with every compared value a tensor (a case may compare with a Python bool or number)."""
    def run():
        for comparisons in case():
            yield {what: tuple(torch.as_tensor(v) if i < 2 else v for i, v in enumerate(c))
                   for what, c in comparisons.items()}
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="only", help="run the cases whose name contains this")
    parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []
    for name, case in CASES:
        if args.only and args.only not in name:
            continue
        check(results, name, as_tensors(case), stages=("run",))
    width = max(len(r[0]) for r in results) if results else 10
    for name, status, worst, text in results:
        print(f"{name:<{width}}  {status:<4}  {worst:9.2e}  {text}")
    passed = sum(r[1] == "ok" for r in results)
    print(f"{passed} of {len(results)} cases match")
    if args.json:
        args.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                         for n, s, w, t in results], indent=1))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
