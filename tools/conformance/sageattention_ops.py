"""SageAttention's Triton kernels (thu-ml/SageAttention, sageattention/triton, snapshot d1a57a5 of 2026-01-17) on
Tegula, through the conformance shim's `triton` package, against torch float64 references written here from the
math:

  - quant_per_block.py (`per_block_int8`, `quant_per_block_int8_kernel`): Q and K in blocks of 128 and 64 rows,
    HND and NHD layouts, float16 / bfloat16 / float32 inputs, head dims 64 and 128, with and without smoothing of K
    (K minus its mean over the sequence, passed as km);
  - quant_per_block_varlen.py (`per_block_int8` over packed sequences through cu_seqlens, with the per-sequence
    block scales it lays out);
  - quant_per_thread.py: `per_thread_int8` (`quant_query_per_thread_int8_kernel`, Q in groups of the rows of a
    warp of WARPQ = 32 or 16 rows that share their row index modulo 8; `quant_key_per_thread_int8_kernel`, K in
    groups of two adjacent rows of each 8 of a 64-row warp; the second takes Python's `max` of two tensors), and the
    two int4 kernels `quant_query_per_thread_int4_kernel` and `quant_key_per_thread_int4_kernel` (the second builds
    its row offsets with tl.cat(..., can_reorder=True)), which have no host function in the library: they are
    launched here with per_thread_int8's grids and arguments;
  - attn_qk_int8_per_block.py and attn_qk_int8_per_block_causal.py (`forward`, `_attn_fwd`: int8 Q @ K^T with an
    int32 dot, the per-block scales, exp2 online softmax, P rounded to float16 and P @ V with a float16
    accumulator), through the library's `sageattn_qk_int8_pv_fp16_triton` (core.py: quantization with
    quant_per_block.py, the K smoothing, v cast to float16, head dims padded to 64 / 128, the LSE correction):
    causal and not, GQA (6 query heads on 2 KV heads), HND and NHD, float16 and bfloat16, smooth_k on and off,
    return_lse, a boolean mask (with a 64-key block masked for every query, which the kernel skips) and a float16
    additive mask, head dims 40 / 64 / 80 / 128; and `forward` called directly with output_dtype float32;
  - attn_qk_int8_block_varlen.py and attn_qk_int8_per_block_causal_varlen.py, through `sageattn_varlen` (packed
    sequences of different lengths; causal with equal query and key lengths).

Every attention case is checked twice: against float64 softmax attention on the dequantized inputs the kernel
read (int8 values times their block scales, in the kernel's base-2 units; V as the float16 the kernel read), and
against float64 softmax attention on the original inputs with a tolerance that covers the int8 quantization of Q
and K. Quantized values are checked against round(x / scale) (rounding half away from zero, as the kernels do)
with the kernel's own scale, exactly, except where x / scale lies within 1e-4 of a rounding tie (there one step
either way passes); scales against max |x| / 127 (or / 7, plus the kernels' 1e-7) over the group, to 1e-6. The
additive float mask is added to the scores in the kernel's base-2 units (the host code passes it on unchanged),
so the references do the same.

Not covered: the CUDA kernels (sageattention/quant.py and the sm80 / sm89 / sm90 extensions) and core.py's paths
through them; the snapshot has no fp8 Triton kernel. Inputs are small, with sizes that are not powers of two
(sequences of 200, 157, 37, 150, 1, 83; head dims 40 and 80 padded by core.py). SageAttention is not part of
Tegula; point this at a directory that holds its `sageattention/` (a checkout, or a `git archive` of
sageattention/triton and sageattention/core.py):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/sageattention_ops.py <SageAttention source>

`import sageattention` imports core.py, which imports the CUDA extension modules, so the files are loaded on their
own under bare `sageattention` packages (sageattention/triton/*.py unchanged), and what core.py needs at module
level or in its host code that a CPU machine lacks is stood in for (none of these stand-ins is a Triton kernel or
is reached by one):

  - sageattention.quant (per_block_int8, per_warp_int8, sub_mean, per_channel_fp8: the CUDA quantization
    extension): placeholders that raise when called (only the Triton quantization backend is run);
  - sageattention.sm80_compile / sm89_compile / sm90_compile: absent (core.py imports them in try blocks);
  - without a GPU, torch.cuda.set_device (core.py calls it with v.device) does nothing for a CPU device;
  - core.py asserts q.is_cuda in its host code: it is compiled as under `python -O` (its asserts dropped; the
    kernels' source is unchanged).

A case passes when every output is within tol * (the reference's largest magnitude): attention outputs 1e-2
(float16) and 1.5e-2 (bfloat16) of the dequantized reference, as the kernel rounds P to float16 and accumulates
P @ V over each 64-key block in float16; 4e-2 of the original-input reference; log-sum-exps 1e-5 of the
dequantized reference and 1e-2 of the original one. Prints one line per case (the largest absolute difference
from the reference over the case's outputs, each output's difference, or the first line of the error) and a
summary line.
"""

import importlib
import math
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: sageattention_ops.py <SageAttention source>")
SA = pathlib.Path(sys.argv[1]).resolve()
for _file in ("triton/quant_per_block.py", "triton/quant_per_block_varlen.py", "triton/quant_per_thread.py",
              "triton/attn_qk_int8_per_block.py", "triton/attn_qk_int8_per_block_causal.py",
              "triton/attn_qk_int8_block_varlen.py", "triton/attn_qk_int8_per_block_causal_varlen.py", "core.py"):
    if not (SA / "sageattention" / _file).is_file():
        sys.exit(f"{SA} holds no sageattention/{_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

LOG2E = 1.44269504


def module(name, path=None, **attrs):
    m = types.ModuleType(name)
    m.__path__ = [str(path)] if path else []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _cuda_only(name):
    def placeholder(*args, **kwargs):
        raise RuntimeError(f"sageattention.quant.{name} is SageAttention's CUDA extension, not run here")
    return placeholder


module("sageattention", SA / "sageattention")
module("sageattention.triton", SA / "sageattention" / "triton")
module("sageattention.quant", **{n: _cuda_only(n) for n in ("per_block_int8", "per_warp_int8", "sub_mean",
                                                              "per_channel_fp8")})
for _name in ("sm80_compile", "sm89_compile", "sm90_compile"):
    sys.modules["sageattention." + _name] = None  # `from . import sm80_compile` raises ImportError
if not torch.cuda.is_available():
    _set_device = torch.cuda.set_device
    torch.cuda.set_device = lambda device: None if torch.device(device).type == "cpu" else _set_device(device)


def load(name):
    """sageattention.triton.<name> from its file."""
    return importlib.import_module("sageattention.triton." + name)


def core():
    """core.py compiled as under `python -O` (its asserts on q.is_cuda dropped)."""
    name = "sageattention.core"
    if name not in sys.modules:
        path = SA / "sageattention" / "core.py"
        mod = types.ModuleType(name)
        mod.__file__ = str(path)
        mod.__package__ = "sageattention"
        sys.modules[name] = mod
        try:
            exec(compile(path.read_text(), str(path), "exec", optimize=1), mod.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


torch.manual_seed(0)
results = []


def check(name, case):
    comparisons_check(results, name, case, ("",))


# --- references ----------------------------------------------------------------------------------------------

def round_away(v):
    """float64: round half away from zero (x / scale + 0.5 * sign, then truncation to int8)."""
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


def quantized(got, v):
    """got (int8) against round(v) where v = x / scale in float64; one step either way passes where v lies within
    1e-4 of a tie (the kernel's float32 x / scale can round to the other side)."""
    want = round_away(v)
    tie = ((v.abs() - v.abs().floor()) - 0.5).abs() < 1e-4
    close = (got.double() - want).abs() <= 1
    return torch.where(tie & close, got.double(), want)


def per_block_ref(x, blk, sm):
    """x float64 [B, H, L, D] (HND order) times sm, in blocks of blk rows (zero-padded): the float64 scale
    [B, H, nblk], the blocks [B, H, nblk, blk, D] and nblk."""
    B, H, L, D = x.shape
    nblk = -(-L // blk)
    xs = torch.nn.functional.pad(x * sm, (0, 0, 0, nblk * blk - L)).view(B, H, nblk, blk, D)
    scale = xs.abs().amax((-1, -2)) / 127.0
    return scale, xs, nblk


def check_per_block(x, got_int8, got_scale, blk, sm, layout):
    """x [B, H, L, D] or [B, L, H, D] as `layout` says: the comparisons of the kernel's scale with the float64 one
    and of its int8 values with round(x / its scale)."""
    xh = x.double() if layout == "HND" else x.double().transpose(1, 2)
    B, H, L, D = xh.shape
    scale_ref, xs, nblk = per_block_ref(xh, blk, sm)
    v = (xs / got_scale.double()[..., None, None]).view(B, H, nblk * blk, D)[:, :, :L]
    gi = got_int8 if layout == "HND" else got_int8.transpose(1, 2)
    return {"scale": (got_scale, scale_ref, 1e-6), "int8": (gi, quantized(gi, v), 0.0)}


def dequant_per_block(x_int8, scale, blk, layout):
    """float64 [B, H, L, D]: int8 values times their block's scale."""
    xh = x_int8 if layout == "HND" else x_int8.transpose(1, 2)
    L = xh.shape[2]
    rows = scale.double().repeat_interleave(blk, -1)[..., :L]
    return xh.double() * rows[..., None]


def attention2(q2, k, v, causal=False, mask=None):
    """Softmax attention in base 2: q2 [B, Hq, Lq, D] already holds sm_scale * log2(e); k, v [B, Hkv, Lk, D];
    mask: bool (True keeps) or additive (base-2 units), broadcast to [B, Hq, Lq, Lk]. Returns o and log2-sum-exp2."""
    g = q2.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q2 @ k.transpose(-1, -2)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    if causal:
        Lq, Lk = s.shape[-2:]
        s = s.masked_fill(torch.arange(Lk)[None, :] > torch.arange(Lq)[:, None], float("-inf"))
    lse2 = torch.logsumexp(s * math.log(2), -1) / math.log(2)
    return torch.softmax(s * math.log(2), -1) @ v, lse2


# --- quant_per_block.py ----------------------------------------------------------------------------------------

def per_block(layout="HND", dtype=torch.float16, d=64, smooth=False, Lq=200, Lk=157):
    def run():
        qb = load("quant_per_block")
        B, Hq, Hk = 2, 6, 2
        shape = (lambda H, L: (B, H, L, d)) if layout == "HND" else (lambda H, L: (B, L, H, d))
        q = (torch.randn(shape(Hq, Lq)) * 2).to(dtype)
        k = (torch.randn(shape(Hk, Lk)) + 0.7).to(dtype)
        seq = 2 if layout == "HND" else 1
        km = k.mean(dim=seq, keepdim=True) if smooth else None
        q8, qs, k8, ks = qb.per_block_int8(q, k, km=km, sm_scale=None, tensor_layout=layout)
        sm = d ** -0.5 * LOG2E
        kin = k - km if smooth else k  # as per_block_int8 computes it, in k's dtype
        cq = check_per_block(q, q8, qs, 128, sm, layout)
        ck = check_per_block(kin, k8, ks, 64, 1.0, layout)
        yield {"q scale": cq["scale"], "q int8": cq["int8"], "k scale": ck["scale"], "k int8": ck["int8"]}
    return run

check("per_block_int8 HND fp16 d64", per_block())
check("per_block_int8 NHD bf16 d128 smooth_k", per_block("NHD", torch.bfloat16, 128, smooth=True))
check("per_block_int8 HND fp32 d64 smooth_k", per_block("HND", torch.float32, 64, smooth=True, Lq=37, Lk=300))


# --- quant_per_block_varlen.py -------------------------------------------------------------------------------

def per_block_varlen(dtype=torch.float16, d=64):
    def run():
        qv = load("quant_per_block_varlen")
        Hq, Hk = 6, 2
        lq, lk = [37, 150, 1, 83], [50, 150, 20, 131]
        cq = torch.tensor([0] + lq).cumsum(0).to(torch.int32)
        ck = torch.tensor([0] + lk).cumsum(0).to(torch.int32)
        q = (torch.randn(sum(lq), Hq, d) * 2).to(dtype)
        k = torch.randn(sum(lk), Hk, d).to(dtype)
        q8, qs, k8, ks, cqs, cks = qv.per_block_int8(q, k, cq, ck, max(lq), max(lk))
        sm = d ** -0.5 * LOG2E
        out = {}
        for what, x, x8, s, cu, cus, lens, blk, mult in (("q", q, q8, qs, cq, cqs, lq, 128, sm),
                                                         ("k", k, k8, ks, ck, cks, lk, 64, 1.0)):
            scales, scale_refs, ints, int_refs = [], [], [], []
            for i, L in enumerate(lens):
                xi = x[cu[i]:cu[i + 1]].transpose(0, 1)[None]  # [1, H, L, d]
                si = s[cus[i]:cus[i + 1]].T[None]  # [1, H, nblk]
                c = check_per_block(xi, x8[cu[i]:cu[i + 1]].transpose(0, 1)[None], si, blk, mult, "HND")
                scales.append(c["scale"][0].flatten()); scale_refs.append(c["scale"][1].flatten())
                ints.append(c["int8"][0].flatten()); int_refs.append(c["int8"][1].flatten())
            out[f"{what} scale"] = (torch.cat(scales), torch.cat(scale_refs), 1e-6)
            out[f"{what} int8"] = (torch.cat(ints), torch.cat(int_refs), 0.0)
            want_cus = torch.tensor([0] + [-(-L // blk) for L in lens]).cumsum(0)
            out[f"cu_seqlens_{what}_scale"] = (cus, want_cus, 0.0)
        yield out
    return run

check("per_block_int8 varlen fp16 d64", per_block_varlen())
check("per_block_int8 varlen bf16 d128", per_block_varlen(torch.bfloat16, 128))


# --- quant_per_thread.py -------------------------------------------------------------------------------------

def per_thread_q_ref(L, warp):
    """The group (scale index) of each of L rows: the rows of each warp of `warp` rows that share row % 8, at
    (row // warp) * 8 + row % 8."""
    rows = torch.arange(L)
    return (rows // warp) * 8 + rows % 8


def per_thread_k_ref(L, warp=64):
    """The group of each of L rows: two adjacent rows of each 8 of a warp of 64 rows, at (row // 64) * 4 +
    (row % 8) // 2."""
    rows = torch.arange(L)
    return (rows // warp) * 4 + (rows % 8) // 2


def check_groups(x, got_int8, got_scale, group, levels):
    """x float64 [B, H, L, D] (HND order); scale of group g = max |x| over its rows / levels + 1e-7."""
    amax = x.abs().amax(-1)  # [B, H, L]
    n = got_scale.shape[-1]
    ref = torch.zeros(x.shape[0], x.shape[1], n, dtype=torch.float64)
    ref = ref.scatter_reduce(-1, group.expand_as(amax), amax, "amax", include_self=False)
    used = torch.zeros(n, dtype=torch.bool)
    used[group] = True
    scale_ref = ref[..., used] / levels + 1e-7
    v = x / got_scale.double()[..., group][..., None]
    return {"scale": (got_scale[..., used], scale_ref, 1e-6), "int8": (got_int8, quantized(got_int8, v), 0.0)}


def per_thread(layout="HND", dtype=torch.float16, d=64, warpq=32, smooth=False, Lq=200, Lk=157):
    def run():
        pt = load("quant_per_thread")
        B, Hq, Hk = 2, 6, 2
        shape = (lambda H, L: (B, H, L, d)) if layout == "HND" else (lambda H, L: (B, L, H, d))
        q = (torch.randn(shape(Hq, Lq)) * 2).to(dtype)
        k = (torch.randn(shape(Hk, Lk)) + 0.7).to(dtype)
        seq = 2 if layout == "HND" else 1
        km = k.mean(dim=seq, keepdim=True) if smooth else None
        q8, qs, k8, ks = pt.per_thread_int8(q, k, km, BLKQ=128, WARPQ=warpq, BLKK=64, WARPK=64, tensor_layout=layout)
        kin = k - km if smooth else k
        hnd = (lambda t: t) if layout == "HND" else (lambda t: t.transpose(1, 2))
        cq = check_groups(hnd(q).double(), hnd(q8), qs, per_thread_q_ref(Lq, warpq), 127.0)
        ck = check_groups(hnd(kin).double(), hnd(k8), ks, per_thread_k_ref(Lk), 127.0)
        yield {"q scale": cq["scale"], "q int8": cq["int8"], "k scale": ck["scale"], "k int8": ck["int8"]}
    return run

check("per_thread_int8 HND fp16 d64 WARPQ 32", per_thread())
check("per_thread_int8 NHD bf16 d128 WARPQ 16 smooth_k", per_thread("NHD", torch.bfloat16, 128, 16, smooth=True))


def per_thread_int4(which, dtype=torch.float16, d=64, L=157):
    """quant_{query,key}_per_thread_int4_kernel, launched with per_thread_int8's grid and arguments (HND)."""
    def run():
        pt = load("quant_per_thread")
        B, H = 2, 3
        x = (torch.randn(B, H, L, d) * 2).to(dtype)
        out = torch.empty(x.shape, dtype=torch.int8)
        if which == "query":
            BLK, WARP, per = 128, 32, 8
            kernel, group = pt.quant_query_per_thread_int4_kernel, per_thread_q_ref(L, WARP)
        else:
            BLK, WARP, per = 64, 64, 4
            kernel, group = pt.quant_key_per_thread_int4_kernel, per_thread_k_ref(L)
        n = -(-L // BLK) * (BLK // WARP) * per
        scale = torch.empty((B, H, n), dtype=torch.float32)
        kernel[(n, H, B)](x, out, scale, L, x.stride(0), x.stride(1), x.stride(2),
                          out.stride(0), out.stride(1), out.stride(2), scale.stride(0), scale.stride(1),
                          C=d, BLK=WARP)
        c = check_groups(x.double(), out, scale, group, 7.0)
        yield {"scale": c["scale"], "int4 values": c["int8"]}
    return run

check("quant_query_per_thread_int4_kernel fp16 d64", per_thread_int4("query"))
check("quant_key_per_thread_int4_kernel (tl.cat) fp16 d64", per_thread_int4("key"))


# --- attention through core.py -------------------------------------------------------------------------------

def sageattn(layout="HND", dtype=torch.float16, d=64, causal=False, smooth=True, lse=False, mask=None,
             Lq=200, Lk=157, tol=1e-2):
    """sageattn_qk_int8_pv_fp16_triton on q [2, 6, Lq, d], k / v [2, 2, Lk, d] (HND, or NHD's transpose).
    mask: "bool" (random, every query keeping some key, keys 64..127 masked for all: a block the kernel skips) or
    "float" (float16 additive, in [-3, 0])."""
    def run():
        c = core()
        qb = load("quant_per_block")
        B, Hq, Hk = 2, 6, 2
        shape = (lambda H, L: (B, H, L, d)) if layout == "HND" else (lambda H, L: (B, L, H, d))
        hnd = (lambda t: t) if layout == "HND" else (lambda t: t.transpose(1, 2))
        q = torch.randn(shape(Hq, Lq)).to(dtype)
        k = (torch.randn(shape(Hk, Lk)) + 0.5).to(dtype)
        v = torch.randn(shape(Hk, Lk)).to(dtype)
        m = None
        if mask == "bool":
            m = torch.rand(B, Hq, Lq, Lk) > 0.3
            m[..., 64:128] = False
            m[..., 0] = True
        elif mask == "float":
            m = (-3 * torch.rand(B, Hq, Lq, Lk)).to(dtype)
        res = c.sageattn_qk_int8_pv_fp16_triton(q, k, v, tensor_layout=layout, is_causal=causal, attn_mask=m,
                                                smooth_k=smooth, return_lse=lse)
        o, lse_got = res if lse else (res, None)
        # What the kernel read: core.py's padding, smoothing and quantization, redone through the library.
        D = 64 if d <= 64 else 128
        pad = lambda t: torch.nn.functional.pad(t, (0, D - d))  # noqa: E731
        qp, kp = pad(q), pad(k)
        seq = 2 if layout == "HND" else 1
        km = kp.mean(dim=seq, keepdim=True) if smooth else None
        sm = d ** -0.5
        q8, qs, k8, ks = qb.per_block_int8(qp, kp, km=km, sm_scale=sm, tensor_layout=layout)
        qd = dequant_per_block(q8, qs, 128, layout)
        kd = dequant_per_block(k8, ks, 64, layout)
        v16 = hnd(pad(v)).to(torch.float16).double()
        o_deq, lse2_deq = attention2(qd, kd, v16, causal, m)
        o_deq = o_deq[..., :d]
        # The original inputs, in float64.
        o_ref, lse2_ref = attention2(hnd(q).double() * sm * LOG2E, hnd(k).double(), hnd(v).double(), causal, m)
        out = {"o vs dequantized": (hnd(o), o_deq, tol), "o vs original": (hnd(o), o_ref, 4e-2)}
        if lse:
            out["lse vs original"] = (lse_got, lse2_ref / LOG2E, 1e-2)
        yield out
    return run

check("sageattn triton HND fp16 d64 smooth_k", sageattn())
check("sageattn triton NHD bf16 d128 no smoothing", sageattn("NHD", torch.bfloat16, 128, smooth=False, tol=1.5e-2))
check("sageattn triton HND fp16 d40 (padded to 64) return_lse", sageattn(d=40, lse=True))
check("sageattn triton NHD bf16 d80 (padded to 128) return_lse no smoothing",
      sageattn("NHD", torch.bfloat16, 80, smooth=False, lse=True, tol=1.5e-2))
check("sageattn triton HND fp16 bool mask (a skipped block)", sageattn(mask="bool"))
check("sageattn triton NHD fp16 float mask", sageattn("NHD", mask="float"))
check("sageattn triton causal HND fp16 d64", sageattn(causal=True, Lq=200, Lk=200))
check("sageattn triton causal NHD bf16 d128 return_lse",
      sageattn("NHD", torch.bfloat16, 128, causal=True, lse=True, Lq=200, Lk=200, tol=1.5e-2))
check("sageattn triton causal HND fp16 d64 256x256 no smoothing",
      sageattn(causal=True, smooth=False, Lq=256, Lk=256))


def forward_direct(causal=False, out_dtype=torch.float32, lse=True, d=64, Lq=200):
    """attn_qk_int8_per_block(_causal).forward called directly (HND) on the library's own quantization, with
    output_dtype float32 and the raw log2-sum-exp2 it returns, against the dequantized reference."""
    def run():
        qb = load("quant_per_block")
        fw = load("attn_qk_int8_per_block_causal" if causal else "attn_qk_int8_per_block")
        B, Hq, Hk, Lk = 2, 6, 2, (Lq if causal else 157)
        q, k, v = (torch.randn(B, H, L, d).to(torch.float16) for H, L in ((Hq, Lq), (Hk, Lk), (Hk, Lk)))
        q8, qs, k8, ks = qb.per_block_int8(q, k)
        o, l2 = fw.forward(q8, k8, v, qs, ks, tensor_layout="HND", output_dtype=out_dtype, return_lse=lse)
        o_deq, lse2 = attention2(dequant_per_block(q8, qs, 128, "HND"), dequant_per_block(k8, ks, 64, "HND"),
                                 v.double(), causal)
        out = {"o": (o, o_deq, 1e-2)}
        if lse:
            out["lse (log2)"] = (l2, lse2, 1e-5)
        yield out
    return run

check("attn_qk_int8_per_block forward output float32 + lse", forward_direct())
check("attn_qk_int8_per_block_causal forward output float32 + lse", forward_direct(causal=True))


# --- varlen attention through core.py ----------------------------------------------------------------------

def sageattn_varlen(causal=False, dtype=torch.float16, d=64, smooth=True, tol=1e-2):
    def run():
        c = core()
        qv = load("quant_per_block_varlen")
        Hq, Hk = 6, 2
        lq = [37, 150, 1, 83]
        lk = lq if causal else [50, 150, 20, 131]
        cq = torch.tensor([0] + lq).cumsum(0).to(torch.int32)
        ck = torch.tensor([0] + lk).cumsum(0).to(torch.int32)
        q = torch.randn(sum(lq), Hq, d).to(dtype)
        k = (torch.randn(sum(lk), Hk, d) + 0.5).to(dtype)
        v = torch.randn(sum(lk), Hk, d).to(dtype)
        o = c.sageattn_varlen(q, k, v, cq, ck, max(lq), max(lk), is_causal=causal, smooth_k=smooth)
        D = 64 if d <= 64 else 128
        pad = lambda t: torch.nn.functional.pad(t, (0, D - d))  # noqa: E731
        qp, kp = pad(q), pad(k)
        if smooth:
            kp = kp - kp.mean(dim=0, keepdim=True)
        sm = d ** -0.5
        q8, qs, k8, ks, cqs, cks = qv.per_block_int8(qp, kp, cq, ck, max(lq), max(lk), sm_scale=sm)
        o_deq = torch.empty(o.shape, dtype=torch.float64)
        o_ref = torch.empty(o.shape, dtype=torch.float64)
        v16 = pad(v).to(torch.float16).double()
        for i in range(len(lq)):
            qs_i = qs[cqs[i]:cqs[i + 1]].T[None]
            ks_i = ks[cks[i]:cks[i + 1]].T[None]
            qd = dequant_per_block(q8[cq[i]:cq[i + 1]].transpose(0, 1)[None], qs_i, 128, "HND")
            kd = dequant_per_block(k8[ck[i]:ck[i + 1]].transpose(0, 1)[None], ks_i, 64, "HND")
            od, _ = attention2(qd, kd, v16[ck[i]:ck[i + 1]].transpose(0, 1)[None], causal)
            o_deq[cq[i]:cq[i + 1]] = od[0].transpose(0, 1)[..., :d]
            orf, _ = attention2(q[cq[i]:cq[i + 1]].transpose(0, 1)[None].double() * sm * LOG2E,
                                k[ck[i]:ck[i + 1]].transpose(0, 1)[None].double(),
                                v[ck[i]:ck[i + 1]].transpose(0, 1)[None].double(), causal)
            o_ref[cq[i]:cq[i + 1]] = orf[0].transpose(0, 1)
        yield {"o vs dequantized": (o, o_deq, tol), "o vs original": (o, o_ref, 4e-2)}
    return run

check("sageattn_varlen fp16 d64 smooth_k", sageattn_varlen())
check("sageattn_varlen bf16 d128 no smoothing", sageattn_varlen(dtype=torch.bfloat16, d=128, smooth=False, tol=1.5e-2))
check("sageattn_varlen causal fp16 d64", sageattn_varlen(causal=True))
check("sageattn_varlen causal bf16 d80 (padded to 128)", sageattn_varlen(causal=True, dtype=torch.bfloat16, d=80,
                                                                         tol=1.5e-2))


width = max(len(r[0]) for r in results)
for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:{width}s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} SageAttention cases match the torch float64 "
      "references")
