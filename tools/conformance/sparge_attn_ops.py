"""SpargeAttn's Triton kernels (thu-ml/SpargeAttn) on Tegula, through the conformance shim's `triton` package,
against float64 or exact references on sizes that are not powers of two:

  - spas_sage_attn/quant_per_block.py: `quant_per_block_int8_kernel` through `per_block_int8` (q scaled by
    sm_scale * log2(e) in 128-row blocks, k in 64-row blocks; HND and NHD layouts, a partial last block), against
    the same float32 arithmetic in torch, bit for bit;
  - spas_sage_attn/utils.py: `qk_quantize` (through `get_quant` / `get_vanilla_qk_quant`, with and without the
    fused mean subtraction), `triton_bmm_pool_sim_simmean` (`get_pool_sim_triton_simmean`: block means and the
    mean-cosine-similarity flag) and its fused-quantization twin `triton_bmm_pool_sim_simmean_fuse_quant`,
    `triton_fill_causal_mask` (an integer and a fractional BLKQ / BLKK), `triton_fill_block_map_kernel`,
    `triton_block_map_to_lut_kernel` (`block_map_lut_triton`: the delta-encoded look-up table), and the whole
    `get_block_map_meansim` / `get_block_map_meansim_fuse_quant` mask prediction (cdf and top-k, causal and not),
    whose maps feed the attention cases;
  - Triton_SpargeAttn/triton_kernel_example.py: the block-sparse int8-QK / fp16-PV attention `_attn_fwd` (with
    `_attn_fwd_inner`) through its `forward`, non-causal and causal, with random block maps, all-ones maps, the
    maps get_block_map_meansim predicts and GQA, against a float64 reference from the same int8 q / k and scales
    (so the reference is exact up to the kernel's float16 P and P @ V), and `spas_sage_attn_meansim` end to end
    with every block kept (simthreshd1 = 1: no block is "similar") against float64 dense attention.

The similarity flags are compared where the float64 mean similarity is more than 1e-3 from the threshold; the
block maps of get_block_map_meansim are not compared (its torch part sorts and thresholds softmax scores, so a
float rounding flips a block), but the maps built from the Triton kernels' outputs are checked in the
fill_block_map / lut / causal cases, and the attention uses them.

Not covered (not Triton): spas_sage_attn/core.py's kernels (`spas_sage_attn._qattn` and `._fused`, CUDA
extensions built from csrc/), quant_per_warp_cuda.py (the CUDA `_fused` quantizer), autotune.py (drives the CUDA
kernels). quant_per_block.py's `per_warp_int8` launches the same Triton kernel as per_block_int8 but returns
nothing (no `return`), so it is not covered on its own.

SpargeAttn is not part of Tegula; point this at a checkout (a directory holding spas_sage_attn/ and
Triton_SpargeAttn/; written against commit bfd980b781784c04ad6a53e7ee657c0645d99171 of 2025-12-29, whose files
this imports unchanged; needs einops):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/sparge_attn_ops.py <SpargeAttn checkout>

Stand-ins (none of them is a Triton kernel or reached from one):

  - `spas_sage_attn` is a bare package (its __init__ imports core.py, which imports the CUDA extensions
    spas_sage_attn._qattn and ._fused); utils.py and quant_per_block.py are loaded from their files under it, and
    Triton_SpargeAttn/triton_kernel_example.py as `spas_sage_attn.triton_kernel_example`, so that its relative
    imports (`.utils`, `.quant_per_block`: the example is meant to sit beside them) resolve to the library's files;
  - torch.cuda.set_device (spas_sage_attn_meansim calls it with the tensors' device): a no-op for a device that is
    not a CUDA one;
  - torch.compiler.disable (the example decorates spas_sage_attn_meansim with it; it imports torch._dynamo, whose
    Inductor imports `triton.backends`, which the stand-in `triton` package lacks): the identity, as in
    unsloth_ops.py.

Library quirks the shapes step around (Triton gives the same results as Tegula there, so they are not Tegula's):

  - the attention kernel loads K and V past kv_len with a mask and no `other`, and the padded keys still join the
    softmax (their scores are not masked), so kv_len (= qo_len, which `forward` asserts) is a multiple of
    BLOCK_N = 64 (192, 320: not multiples of BLOCK_M = 128, so the last query block is partial);
  - in the causal diagonal block a row whose selected key blocks are all past it would softmax over -1e6 scores,
    so the causal cases keep both 64-key blocks of each diagonal 128-row block;
  - triton_bmm_pool_sim_simmean's pool divides by the block's real row count but sums the rows past N, loaded with
    a mask and no `other`, and normalizes those rows by their zero norms (0 / 0), so N is a multiple of the block
    size in its cases (the quantizers mask properly: their cases have partial blocks).

No autotuning: every kernel is plain @triton.jit; the launch configurations are the library's.

Prints one line per case and a summary line.
"""

import importlib.util
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: sparge_attn_ops.py <SpargeAttn checkout>")
SPARGE = pathlib.Path(sys.argv[1]).resolve()
for _file in ("spas_sage_attn/utils.py", "spas_sage_attn/quant_per_block.py",
              "Triton_SpargeAttn/triton_kernel_example.py"):
    if not (SPARGE / _file).is_file():
        sys.exit(f"{SPARGE} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

_set_device = torch.cuda.set_device
torch.cuda.set_device = lambda device: (None if DEVICE != "cuda" and torch.device(device).type != "cuda"
                                        else _set_device(device))

torch.compiler.disable = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)

_pkg = types.ModuleType("spas_sage_attn")
_pkg.__path__ = [str(SPARGE / "spas_sage_attn")]
sys.modules["spas_sage_attn"] = _pkg


def load(name, path):
    full = "spas_sage_attn." + name
    spec = importlib.util.spec_from_file_location(full, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[full] = mod
    spec.loader.exec_module(mod)
    return mod


utils = load("utils", SPARGE / "spas_sage_attn" / "utils.py")
qpb = load("quant_per_block", SPARGE / "spas_sage_attn" / "quant_per_block.py")
example = load("triton_kernel_example", SPARGE / "Triton_SpargeAttn" / "triton_kernel_example.py")

# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
LOG2E = 1.44269504


def check(name, case):
    comparisons_check(results, name, case, ("",))


def quant_ref(x, block, sm_scale=1.0, mean=None):
    """The kernels' per-block int8 quantization in float32 torch: (int8 (..., N, D), scale (..., nblocks))."""
    if mean is not None:
        x = x - mean  # in x's dtype, as the kernel's `x -= x_mean`
    x = x.float() * sm_scale
    N = x.shape[-2]
    nb = (N + block - 1) // block
    pad = torch.nn.functional.pad(x, (0, 0, 0, nb * block - N)).unflatten(-2, (nb, block))
    scale = pad.abs().amax(dim=(-1, -2)) / 127.0 + 1e-7
    q = pad / scale[..., None, None]
    q = (q + 0.5 * torch.where(q >= 0, 1.0, -1.0)).to(torch.int8)
    return q.flatten(-3, -2)[..., :N, :], scale


def per_block_case(B, H, L, D, dtype, layout="HND"):
    def case():
        shape = (B, H, L, D) if layout == "HND" else (B, L, H, D)
        q, k = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
        q_i8, q_s, k_i8, k_s = qpb.per_block_int8(q, k, tensor_layout=layout)
        if layout == "NHD":
            q, k, q_i8, k_i8 = (t.transpose(1, 2) for t in (q, k, q_i8, k_i8))
        wq, wqs = quant_ref(q, 128, D ** -0.5 * LOG2E)
        wk, wks = quant_ref(k, 64)
        yield {"q int8": (q_i8, wq, 0.0), "q scale": (q_s[..., 0], wqs, 0.0),
               "k int8": (k_i8, wk, 0.0), "k scale": (k_s[..., 0], wks, 0.0)}
    return case


def get_quant_case(B, H, Nq, Nk, D, dtype, mean):
    def case():
        q, k = torch.randn(B, H, Nq, D, dtype=dtype), torch.randn(B, H, Nk, D, dtype=dtype) + 0.5
        km = k.mean(dim=-2, keepdim=True) if mean else None
        q_i8, q_s, k_i8, k_s = utils.get_vanilla_qk_quant(q, k, km)
        wq, wqs = quant_ref(q, 128)
        wk, wks = quant_ref(k, 64, mean=km)
        yield {"q int8": (q_i8, wq, 0.0), "q scale": (q_s, wqs, 0.0), "k int8": (k_i8, wk, 0.0),
               "k scale": (k_s, wks, 0.0)}
    return case


def sim_ref(x, block, mean=None):
    """float64 block means and mean cosine similarity of the block's rows (N a multiple of block)."""
    if mean is not None:
        x = x - mean  # in x's dtype, as the kernel's `x -= x_mean`
    x = x.double()
    blocks = x.unflatten(-2, (x.shape[-2] // block, block))
    xn = blocks / blocks.norm(dim=-1, keepdim=True)
    sim = (xn @ xn.transpose(-1, -2)).mean(dim=(-1, -2))
    return blocks.mean(dim=-2), sim


def pool_sim_case(B, H, N, D, block, dtype, fuse=False, mean=False):
    def case():
        x = torch.randn(B, H, N, D, dtype=dtype)
        # some blocks of near-parallel rows, so that both flags occur
        x[..., :block, :] = x[..., :1, :] + 0.2 * x[..., :block, :]
        thr = torch.linspace(-0.05, 0.3, H)
        xm = x.mean(dim=-2, keepdim=True) if mean else None
        if fuse:
            pool, sim, x_i8, x_s = utils.get_pool_sim_triton_simmean_fuse_quant(x, xm, block, thr)
        else:
            pool, sim = utils.get_pool_sim_triton_simmean(x, block, thr)
        wpool, wsim = sim_ref(x, block, xm if fuse else None)
        clear = (wsim - thr[None, :, None].double()).abs() > 1e-3
        want_flag = wsim > thr[None, :, None].double()
        comparisons = {"pool": (pool, wpool, {F16: 2e-3, BF16: 8e-3}.get(dtype, 1e-6)),
                       "sim flags (clear ones)": (torch.where(clear, sim, False).double(),
                                                  torch.where(clear, want_flag, False).double(), 0.0)}
        if fuse:
            wq, ws = quant_ref(x, block, mean=xm)
            comparisons["int8"] = (x_i8, wq, 0.0)
            comparisons["scale"] = (x_s, ws, 0.0)
        yield comparisons
    return case


def causal_mask_case(nq, nk, ratio):
    def case():
        m = utils.fill_causal_mask_triton(torch.empty(nq, nk, dtype=torch.bool), ratio)
        want = torch.arange(nk)[None, :] < (torch.arange(nq)[:, None] + 1) * ratio
        yield {"mask": (m.double(), want.double(), 0.0)}
    return case


def fill_map_case(B, H, Q, K):
    def case():
        base = torch.rand(B, H, Q, K) < 0.2
        num = torch.randint(0, K + 1, (B, H, Q))
        idx = torch.argsort(torch.rand(B, H, Q, K), dim=-1)
        got = utils.fill_block_map_triton(base.clone(), num, idx)
        want = base.clone()
        n = torch.where(num == 0, 1, num)
        sel = torch.arange(K)[None, None, None, :] < n[..., None]
        want.scatter_(-1, idx, sel | want.gather(-1, idx))
        yield {"map": (got.double(), want.double(), 0.0)}
    return case


def lut_case(B, H, Q, K, density):
    def case():
        bm = torch.rand(B, H, Q, K) < density
        lut, valid = utils.block_map_lut_triton(bm)
        want_lut = torch.zeros(B, H, Q, K, dtype=torch.int32)
        for b in range(B):
            for h in range(H):
                for q in range(Q):
                    cols = bm[b, h, q].nonzero().flatten()
                    if len(cols):
                        want_lut[b, h, q, :len(cols)] = torch.diff(cols, prepend=cols.new_zeros(1)).int()
        keep = torch.arange(K)[None, None, None, :] < bm.sum(-1, keepdim=True)
        yield {"valid": (valid.double(), bm.sum(-1).double(), 0.0),
               "lut": (torch.where(keep, lut, 0).double(), want_lut.double(), 0.0)}
    return case


def attn_ref(q_i8, q_s, k_i8, k_s, v, bmap, causal):
    """float64 softmax2(q_i8 k_i8^T * q_scale * k_scale) V over the selected blocks (128-row, 64-key)."""
    B, H, L, D = q_i8.shape
    g = H // k_i8.shape[1]
    k_i8, v = k_i8.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    k_s, bmap = k_s.repeat_interleave(g, 1), bmap.repeat_interleave(g, 1)
    s = q_i8.double() @ k_i8.double().transpose(-1, -2)
    s = s * q_s[..., 0].double().repeat_interleave(128, -1)[..., :L, None]
    s = s * k_s[..., 0].double().repeat_interleave(64, -1)[..., None, :L]
    w = bmap.repeat_interleave(128, -2).repeat_interleave(64, -1)[..., :L, :L].bool()
    if causal:
        w = w & torch.ones(L, L, dtype=torch.bool).tril()
    s = s.masked_fill(~w, float("-inf"))
    p = torch.exp2(s - s.amax(-1, keepdim=True).clamp(min=-1e300))
    p = torch.nan_to_num(p)
    return (p @ v.double()) / p.sum(-1, keepdim=True).clamp(min=1e-300)


def attn_case(B, H, Hkv, L, D, causal, bmap="random", dtype=F16):
    def case():
        q, k, v = torch.randn(B, H, L, D, dtype=dtype), torch.randn(B, Hkv, L, D, dtype=dtype), \
            torch.randn(B, Hkv, L, D, dtype=F16)
        nq, nk = (L + 127) // 128, (L + 63) // 64
        if bmap == "random":
            m = torch.rand(B, Hkv, nq, nk) < 0.5
            m[..., 0] = True
        elif bmap == "ones":
            m = torch.ones(B, Hkv, nq, nk, dtype=torch.bool)
        else:  # predicted by the library from q (its first kv heads' worth) and k
            m = utils.get_block_map_meansim(q[:, ::H // Hkv].contiguous(), k, is_causal=causal, simthreshd1=0.1,
                                            cdfthreshd=0.5)
        if causal:
            for i in range(nq):
                m[..., i, 2 * i:2 * i + 2] = True
        m = m.contiguous()
        q_i8, q_s, k_i8, k_s = qpb.per_block_int8(q, k)
        thr = torch.full((H,), 20.0)
        out = example.forward(q_i8, k_i8, m, v, q_s, k_s, thr, is_causal=causal, output_dtype=F16)
        yield {"out": (out, attn_ref(q_i8, q_s, k_i8, k_s, v, m, causal), 1e-2)}
    return case


def meansim_case(B, H, L, D, causal):
    def case():
        q, k, v = (torch.randn(B, H, L, D, dtype=F16) for _ in range(3))
        out = example.spas_sage_attn_meansim(q, k, v, is_causal=causal, simthreshd1=1.0, cdfthreshd=0.96)
        s = q.double() @ k.double().transpose(-1, -2) * D ** -0.5
        if causal:
            s = s.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), float("-inf"))
        yield {"out vs dense": (out, torch.softmax(s, -1) @ v.double(), 5e-2)}
    return case


check("per_block_int8 HND fp16 2x3x200x64 (q 128-, k 64-row blocks)", per_block_case(2, 3, 200, 64, F16))
check("per_block_int8 NHD bf16 1x2x150x128", per_block_case(1, 2, 150, 128, BF16, "NHD"))
check("get_vanilla_qk_quant (qk_quantize) fp16 q 200 k 150 d 64", get_quant_case(2, 2, 200, 150, 64, F16, False))
check("get_vanilla_qk_quant (qk_quantize) bf16 fused k mean q 300 k 90", get_quant_case(1, 3, 300, 90, 64, BF16, True))
check("get_pool_sim_triton_simmean fp16 N 320 block 64", pool_sim_case(2, 3, 320, 64, 64, F16))
check("get_pool_sim_triton_simmean fp32 N 384 block 128 d 128", pool_sim_case(1, 2, 384, 128, 128, F32))
check("get_pool_sim_triton_simmean_fuse_quant fp16 N 320 block 64", pool_sim_case(2, 3, 320, 64, 64, F16, True))
check("get_pool_sim_triton_simmean_fuse_quant bf16 fused mean N 192 block 64",
      pool_sim_case(1, 2, 192, 64, 64, BF16, True, True))
check("fill_causal_mask_triton 5x10, BLKQ/BLKK 2.0", causal_mask_case(5, 10, 2.0))
check("fill_causal_mask_triton 7x11, ratio 1.5", causal_mask_case(7, 11, 1.5))
check("fill_block_map_triton 2x3x5x13", fill_map_case(2, 3, 5, 13))
check("block_map_lut_triton 2x3x5x13 density 0.4", lut_case(2, 3, 5, 13, 0.4))
check("block_map_lut_triton 1x2x3x7 density 0 and 1 rows", lut_case(1, 2, 3, 7, 0.0))


def meansim_map_case(causal, topk):
    def case():
        q, k = torch.randn(1, 2, 320, 64, dtype=F16), torch.randn(1, 2, 320, 64, dtype=F16)
        kw = dict(cdfthreshd=None, topk=0.5) if topk else dict(cdfthreshd=0.9)
        m = utils.get_block_map_meansim(q, k, is_causal=causal, simthreshd1=0.1, **kw)
        m2, q_i8, q_s, k_i8, k_s = utils.get_block_map_meansim_fuse_quant(q, k, k.mean(-2, keepdim=True),
                                                                         is_causal=causal, simthreshd1=0.1, **kw)
        lut, valid = utils.block_map_lut_triton(m.contiguous())
        comparisons = {"map is boolean 0/1": (m.double().clamp(0, 1), m.double(), 0.0),
                       "valid = row sums": (valid.double(), m.sum(-1).double(), 0.0),
                       "q int8": (q_i8, quant_ref(q, 128)[0], 0.0),
                       "k int8": (k_i8, quant_ref(k, 64, mean=k.mean(-2, keepdim=True))[0], 0.0)}
        if causal:
            causal_blocks = torch.arange(5)[None, :] < (torch.arange(3)[:, None] + 1) * 2
            comparisons["no block past the diagonal"] = ((m & ~causal_blocks).double(), torch.zeros(m.shape), 0.0)
        yield comparisons
    return case


check("get_block_map_meansim (+fuse_quant) cdf 0.9 non-causal fp16 L 320", meansim_map_case(False, False))
check("get_block_map_meansim (+fuse_quant) top-k 0.5 causal fp16 L 320", meansim_map_case(True, True))
check("attention forward non-causal fp16 2x2x192x64 random map", attn_case(2, 2, 2, 192, 64, False))
check("attention forward causal fp16 1x2x320x64 random map", attn_case(1, 2, 2, 320, 64, True))
check("attention forward non-causal fp16 1x2x192x128 all blocks", attn_case(1, 2, 2, 192, 128, False, "ones"))
check("attention forward non-causal GQA 4/2 fp16 1x4x320x64", attn_case(1, 4, 2, 320, 64, False))
check("attention forward causal bf16 q/k 1x2x320x64 predicted map", attn_case(1, 2, 2, 320, 64, True, "meansim",
                                                                              BF16))
check("spas_sage_attn_meansim non-causal fp16 1x2x192x64 every block vs dense", meansim_case(1, 2, 192, 64, False))
check("spas_sage_attn_meansim causal fp16 1x2x320x64 every block vs dense", meansim_case(1, 2, 320, 64, True))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:72s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} SpargeAttn cases match the references")
