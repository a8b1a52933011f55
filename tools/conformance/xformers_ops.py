"""xformers' Triton kernels on Tegula, through the conformance shim's `triton` package, against float64 references
(the library's own masks, materialized in float64, and the math written here).

facebookresearch/xformers: HEAD (ca6d2aa0 of 2026-04-21) holds xformers/ops/_triton's five kernel files; ca6d2aa0
replaced ops/fmha by stubs re-exporting the `mslk` package, so the split-K attention is read from 14f0a4fc (its last
change, 2025-12-25; the files read are the same at ca6d2aa0's parent), and the sequence-parallel fused matmul from
a99afbbd's parent (2024-09-27). The SOURCES table below names each file's commit:

  - rmsnorm.py (`rms_norm`, `rms_norm_add`): with and without weight, fp32 / fp16 / bf16, rows of 300 and 10007;
  - rope_padded.py (`rope_padded`) into a padded KV cache under the library's own
    BlockDiagonalCausalWithOffsetPaddedKeysMask: adjacent and split halves, internal_dtype "", f32, f64, 4-D and
    5-D, linear_scale, dynamic scaling, first_seqpos, seqpos, out_q, head dim 4098; untouched cache rows exactly;
  - indexing.py (`index_select_cat`, `scaled_index_add`) forward and backward;
  - tiled_matmul.py (`tiled_matmul_out`, `tiled_matmul_bwd`) with SPLIT_K 1 / 2 / 4 and EVEN_K;
  - fmha/triton_splitk.py (FwOp.apply, as memory_efficient_attention_forward calls it, after the library's own
    not_supported_reasons but the device's): no mask and an additive tensor bias; split-K 1 (no reduce), the
    library's heuristic, and 2 to 16 (the reduce kernel, chunks with masked tails and empty ones); MQA (4-D keys
    expanded to the query heads) and GQA (5-D, G groups), which the wrapper runs as heads swapped into queries;
    BlockDiagonalPaddedKeysMask (variable query lengths), ...CausalWithOffsetPaddedKeysMask, the gappy, local and
    causal-local masks, and the paged ones (shuffled block tables, pages no sequence uses) including paged gappy;
    int4 K/V (row-wise and 2 / 4 / 8 groups) and fp8 K/V (row-wise scales and shifts, paged too), against the
    values dequantized in float16 as the kernel forms them; the lse output (needs_gradient) with rows that see no
    key (-inf, exactly); fp16 and bf16 (the op's dtypes), head dims 16 to 256 (the op's; the kernel needs a power
    of two), sequence lengths that are not;
  - triton_splitk.merge_attentions (_splitK_reduce: split_k a power of two or masked to one, head dims masked),
    merge_attentions_varargs (_splitK_reduce_varargs unrolled by vararg_kernel.py for 1 to 5 partials, strided
    partials) and merge_attentions_varargs_backward, against float64 autograd of the merge;
  - sequence_parallel_fused_kernels._launch_triton_matmul (the host function of the removed fused ops), in one
    process: 1 to 4 ranks' row blocks, up to three Bs, both directions, wait counters already at seq_num and write
    counters (checked exactly), separate my-shard A and C, SPLIT_K 4 with the configs' zeroing pre_hook.

Result on the CPU backend (2026-12-07): 89 of 90 lines match (a case's forward and backward are a
line each) and 1 fails by xformers' own bug (the causal gappy case below), in about 2 minutes on two cores from an
empty Tegula cache; under TEGULA_DEBUG=1 the merge case with head dim 48 fails too, by the library's unmasked load
below, and nothing else reads or writes out of bounds.

Tegula bugs found and fixed (the commit beside this one): tl.constexpr(tensor), which the split-K kernel uses for
its causal diagonal, was refused (E0601); and a constant-false tl.device_assert (the seqpar kernel's timeout, in a
branch no run reaches) was refused at compile time in debug mode (E0604) where Triton fails only when it is reached.

xformers' bugs:
  - _fwd_kernel_splitK with unpaged gappy keys and a causal (or local) mask: k_base already starts at the
    sequence's first key, yet the masks compare with start_n - start_kv_idx, so the diagonal moves start_kv_idx keys
    later (the paged gappy path is right);
  - _splitK_reduce loads Out_splitK without a mask when split_k is a power of two, over head_dim_pow_2 columns: a
    head dim below its power of two reads past the last row (the values stored are right; TEGULA_DEBUG=1 stops it);
  - merge_attentions_varargs_backward allocates the partials' gradients with empty_like (dense) but writes them
    with the partials' strides: partials given as strided views (rows of stride K + 3) make it write past the
    gradients' end (run plainly it corrupted the heap; TEGULA_DEBUG=1 stops the first store out of bounds). Its
    cases use dense partials; the forward's use strided ones.

Not covered: FwOp's AUTOTUNE path (_fwd_kernel_splitK_autotune, 160 configs a shape), AMD's paths (IS_HIP); the
sequence-parallel ops themselves (torch.distributed and CUDA symmetric memory); the older Triton kernels of
xformers/triton (softmax, layer norm, dropout, fused linear; removed in 2023-2024).

Stand-ins, none of them a Triton kernel or reached from one: bare `xformers` packages (its __init__ loads the C++
extension) with xformers._is_triton_available (True) and xformers._cpp_lib._built_with_cuda (False);
ops/_triton/matmul_perf_model.py and triton.ops.matmul_perf_model (the seqpar autotuner's, from Triton's former
triton.ops): early_config_prune keeps the config a case pins, estimate_matmul_time gives 0; torch.library's
custom_op / register_fake / register_autograd leave the functions unregistered while tiled_matmul.py and
triton_splitk.py load; without a GPU, torch.cuda.device is a null context for the CPU,
torch.cuda.get_device_capability gives (8, 0), and Tensor.is_cuda reads True while indexing.py's functions run.

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/xformers_ops.py <xformers git dir or tree> \\
        [-k SUBSTRING] [--json out.json]

Tolerances, relative to the reference's largest magnitude: fp32 1e-5, fp16 2e-3, bf16 1e-2 (tiled and seqpar
matmuls 5e-3 / 2e-2), lse 2e-5; copies, counters and untouched memory exactly. Prints one line per case and stage
and the totals.
"""

import argparse
import contextlib
import importlib
import math
import os
import pathlib
import sys
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# Each file from the newest commit that holds it: ca6d2aa0 replaced ops/fmha with stubs re-exporting mslk's modules
# and removed vararg_kernel.py (the six files below are the same at 14f0a4fc, the split-K kernels' last change, as at
# ca6d2aa0's parent bed3978b), and a99afbbd removed the sequence-parallel fused kernels.
SOURCES = {
    "ca6d2aa0d43241fc8a8dcd872debc2406160160d": (  # HEAD, 2026-04-21
        "xformers/ops/_triton/__init__.py",
        "xformers/ops/_triton/rmsnorm_kernels.py",
        "xformers/ops/_triton/rope_padded_kernels.py",
        "xformers/ops/_triton/k_index_select_cat.py",
        "xformers/ops/_triton/k_scaled_index_add.py",
        "xformers/ops/_triton/tiled_matmul_kernels.py",
        "xformers/ops/rmsnorm.py",
        "xformers/ops/rope_padded.py",
        "xformers/ops/indexing.py",
        "xformers/ops/tiled_matmul.py",
        "xformers/ops/common.py",
        "xformers/triton/importing.py",
    ),
    "14f0a4fc5ebba681047b377ff84f5effb6a96439": (  # 2025-12-25
        "xformers/ops/fmha/_triton/__init__.py",
        "xformers/ops/fmha/_triton/splitk_kernels.py",
        "xformers/ops/fmha/triton_splitk.py",
        "xformers/ops/fmha/attn_bias.py",
        "xformers/ops/fmha/common.py",
        "xformers/triton/vararg_kernel.py",
    ),
    "4a4dc43db91044f98a170d0b0e411f6f0bd60b19": (  # 2024-09-27, the parent of a99afbbd
        "xformers/ops/_triton/sequence_parallel_fused_kernels.py",
    ),
}

_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path,
                     help="xformers' git directory, or a tree holding the files of SOURCES")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()


import git_sources  # noqa: E402

SRC = git_sources.source_tree(ARGS.source, SOURCES, "xformers_ops_")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check, exact, refusal, report  # noqa: E402
import standins  # noqa: E402
from standins import module  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- loading -------------------------------------------------------------------------------------------------------

PINNED = {}  # the matmul config a case keeps: BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_stages


def early_config_prune(configs, named_args, **kwargs):
    return [c for c in configs if all(c.kwargs.get(k) == v for k, v in PINNED.items() if k != "num_stages")
            and c.num_stages == PINNED["num_stages"]]


# `import xformers` loads its C++ extension: the packages import bare, with the few names they read of it here.
module("xformers", _is_triton_available=lambda: True)
module("xformers._cpp_lib", _built_with_cuda=False)
module("xformers.ops._triton.matmul_perf_model", early_config_prune=early_config_prune,
       estimate_matmul_time=lambda *a, **k: 0.0)
module("triton.ops")  # the sequence-parallel kernels' autotuner takes Triton's former matmul perf model
module("triton.ops.matmul_perf_model", early_config_prune=early_config_prune,
       estimate_matmul_time=lambda *a, **k: 0.0)
standins.bare_packages(SRC, "xformers", as_is=("xformers", "xformers.ops._triton"))
sys.modules["xformers"].__path__ = [str(SRC / "xformers")]
if not torch.cuda.is_available():
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda device: (contextlib.nullcontext() if torch.device(device).type == "cpu"
                                        else _cuda_device(device))
    torch.cuda.get_device_capability = lambda *a, **k: (8, 0)


@contextlib.contextmanager
def cuda_looking_tensors():
    """torch.Tensor.is_cuda reads True (CPU runs only; the host functions refuse tensors that are not CUDA's)."""
    if DEVICE != "cpu":
        yield
        return
    torch.Tensor.is_cuda = property(lambda self: True)
    try:
        yield
    finally:
        del torch.Tensor.is_cuda


@contextlib.contextmanager
def plain_custom_ops():
    """torch.library.custom_op / register_fake / register_autograd leave the function as it is, unregistered."""
    lib = torch.library
    saved = lib.custom_op, lib.register_fake, lib.register_autograd
    def plain(fn):
        fn.register_autograd = fn.register_fake = lambda *a, **k: None
        return fn
    lib.custom_op = lambda *a, **k: plain
    lib.register_fake = lambda *a, **k: (lambda fn: fn)
    lib.register_autograd = lambda *a, **k: None
    try:
        yield
    finally:
        lib.custom_op, lib.register_fake, lib.register_autograd = saved


def load(name):
    """xformers.ops.<name> from its file."""
    return importlib.import_module("xformers.ops." + name)


def load_tiled_matmul():
    with plain_custom_ops():
        return load("tiled_matmul")


attn_bias = load("fmha.attn_bias")  # imports torch._dynamo (allow_in_graph), which registers custom ops itself
fmha_common = load("fmha.common")
with plain_custom_ops():
    splitk = load("fmha.triton_splitk")
splitk_kernels = load("fmha._triton.splitk_kernels")
seqpar = load("_triton.sequence_parallel_fused_kernels")
for _mod in (splitk, attn_bias, fmha_common, splitk_kernels, seqpar):
    assert pathlib.Path(_mod.__file__).is_relative_to(SRC), f"another copy: {_mod.__file__}"

results = []


def check(name, run, stages=("run",)):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    comparisons_check(results, name, run, stages)


def expect_refusal(name, launch, expected):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    refusal(results, name, launch, expected)


TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
FB = ("forward", "backward")
AB = attn_bias
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


# --- rmsnorm.py ---------------------------------------------------------------------------------------------

def rms_ref(h, w, eps):
    y = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)
    return y * w.double() if w is not None else y


def rmsnorm(N=300, dtype=torch.float32, weight=True, add=False):
    def run():
        rn = load("rmsnorm")
        eps = 1e-6
        x = (torch.randn(3, 37, N) * 2).to(dtype)
        w = (torch.rand(N) + 0.5).to(dtype) if weight else None
        with torch.no_grad():
            if add:
                y = torch.randn(3, 37, N).to(dtype)
                x_in = x.clone()
                out = rn.rms_norm_add(x_in, y, w, eps)
                h = x.double() + y.double()
                yield {"out": (out, rms_ref(h, w, eps), TOL[dtype]), "x += y": (x_in, h, TOL[dtype])}
            else:
                out = rn.rms_norm(x, w, eps)
                yield {"out": (out, rms_ref(x.double(), w, eps), TOL[dtype])}
    return run

check("rms_norm f32 N=300", rmsnorm())
check("rms_norm f32 N=300 no weight", rmsnorm(weight=False))
check("rms_norm f16 N=10007 (2 column blocks)", rmsnorm(10007, torch.float16))
check("rms_norm bf16 N=300", rmsnorm(300, torch.bfloat16))
check("rms_norm_add f32 N=300", rmsnorm(add=True))
check("rms_norm_add f32 N=10007 no weight", rmsnorm(10007, weight=False, add=True))
check("rms_norm_add bf16 N=300", rmsnorm(300, torch.bfloat16, add=True))


# --- rope_padded.py -----------------------------------------------------------------------------------------

def rope_freqs(dim, theta, dynamic):
    """float64 theta ** (-2j / dim), with rope_padded's dynamic scaling (old context 8192, scale 16, low 1,
    high 32: its defaults) when dynamic."""
    f = theta ** (-torch.arange(0, dim // 2, dtype=torch.float64) * 2 / dim)
    if dynamic:
        old, scale, low, high = 8192.0, 16.0, 1.0, 32.0
        wl = 2 * math.pi / f
        lo_wl, hi_wl = old / low, old / high
        smooth = (old / wl - low) / (high - low)
        f = torch.where(wl > lo_wl, f / scale,
                        torch.where((wl > hi_wl) & (wl <= lo_wl), (1 - smooth) * f / scale + smooth * f, f))
    return f


def rope_ref(x, pos, freqs, linear_scale, adjacents):
    """x float64 [1, n, (G,) H, dim]; pos float64 [n]."""
    ang = (pos / linear_scale)[:, None] * freqs[None, :]  # [n, dim / 2]
    for _ in range(x.ndim - 3):
        ang = ang[:, None]
    c, s = ang.cos()[None], ang.sin()[None]
    half = x.shape[-1] // 2
    re, im = (x[..., 0::2], x[..., 1::2]) if adjacents else (x[..., :half], x[..., half:])
    out = x.clone()
    ro, io = re * c - im * s, im * c + re * s
    if adjacents:
        out[..., 0::2], out[..., 1::2] = ro, io
    else:
        out[..., :half], out[..., half:] = ro, io
    return out




def rope(dim=100, dtype=torch.float32, adjacents=True, internal="", groups=1, linear_scale=1.0, dynamic=False,
         first_seqpos=False, seqpos=False, out_q=False, tol=None):
    """Four sequences of 2, 1, 5 and 3 new queries on caches of 27, 44, 13 and 5 keys (those included), padded to
    47 rows each; 10 query heads and 2 KV heads (3 and 1 for dim 4098)."""
    def run():
        rp = load("rope_padded")
        nq, kv, pad = [2, 1, 5, 3], [27, 44, 13, 5], 47
        Hq, Hkv = (3, 1) if dim > 1000 else (10, 2)
        n, theta = sum(nq), 10000.0
        g = (groups,) if groups > 1 else ()
        bias = AB.BlockDiagonalCausalWithOffsetPaddedKeysMask.from_seqlens(q_seqlen=nq, kv_padding=pad, kv_seqlen=kv)
        xq = torch.randn(1, n, *g, Hq, dim).to(dtype)
        xk = torch.randn(1, n, *g, Hkv, dim).to(dtype)
        xv = torch.randn(1, n, *g, Hkv, dim).to(dtype)
        cache_k = torch.randn(1, len(kv) * pad, *g, Hkv, dim).to(dtype)
        cache_v = torch.randn(1, len(kv) * pad, *g, Hkv, dim).to(dtype)
        k0, v0 = cache_k.clone(), cache_v.clone()
        rows = torch.tensor([b * pad + kv[b] - nq[b] + i for b in range(len(nq)) for i in range(nq[b])])
        pos = torch.tensor([kv[b] - nq[b] + i for b in range(len(nq)) for i in range(nq[b])], dtype=torch.float64)
        kw = {}
        if first_seqpos:
            first = torch.tensor([4, 0, 100, 7], dtype=torch.int32)
            kw["first_seqpos"] = first
            pos = pos + torch.tensor([first[b].item() for b in range(len(nq)) for _ in range(nq[b])])
        if seqpos:
            custom = torch.randint(0, 3000, (n,), dtype=torch.int32)
            kw["seqpos"] = custom
            pos = custom.double()
        given = torch.empty_like(xq) if out_q else None
        ctx = torch.no_grad() if out_q else contextlib.nullcontext()  # rope_padded refuses out_q under grad mode
        with ctx:
            out = rp.rope_padded(xq, xk, xv, cache_k, cache_v, bias, theta=theta, linear_scale=linear_scale,
                                 use_dynamic_scaling=dynamic, out_q=given, adjacents=adjacents,
                                 internal_dtype=internal, **kw)
        if out_q and out.data_ptr() != given.data_ptr():
            raise AssertionError("rope_padded did not write into the out_q it was given")
        freqs = rope_freqs(dim, theta, dynamic)
        t = tol if tol is not None else TOL[dtype]
        if internal != "f64":  # float32 theta ** power and pos * freq: angles off by ~2e-7 of the position
            t = max(t, 2e-7 * pos.abs().max().item())
        want_k, want_v = k0.double(), v0.double()
        want_k[:, rows] = rope_ref(xk.double(), pos, freqs, linear_scale, adjacents)
        want_v[:, rows] = xv.double()
        untouched = torch.ones(cache_k.shape[1], dtype=torch.bool)
        untouched[rows] = False
        yield {"out_q": (out, rope_ref(xq.double(), pos, freqs, linear_scale, adjacents), t),
               "cache_k": (cache_k, want_k, t), "cache_v": (cache_v, want_v, 0.0),
               "other cache_k rows": (cache_k[:, untouched], k0[:, untouched], 0.0)}
    return run

ROPE_CASES = [
    ("rope_padded f32 dim 100 adjacents", {}),
    ("rope_padded f32 dim 100 split halves", {"adjacents": False}),
    ("rope_padded f32 internal f32", {"internal": "f32"}),
    ("rope_padded f32 internal f64", {"internal": "f64", "tol": 1e-6}),
    ("rope_padded bf16 internal f64 split halves", {"dtype": torch.bfloat16, "internal": "f64", "adjacents": False}),
    ("rope_padded f16", {"dtype": torch.float16}),
    ("rope_padded bf16 5-D (3 groups)", {"dtype": torch.bfloat16, "groups": 3}),
    ("rope_padded f32 linear_scale 4", {"linear_scale": 4.0}),
    ("rope_padded f32 dynamic scaling", {"dynamic": True}),
    ("rope_padded f32 dynamic scaling internal f64 split halves", {"dynamic": True, "internal": "f64",
                                                                   "adjacents": False, "tol": 1e-6}),
    ("rope_padded f32 first_seqpos", {"first_seqpos": True}),
    ("rope_padded f32 seqpos", {"seqpos": True}),
    ("rope_padded f32 out_q given", {"out_q": True}),
    ("rope_padded f32 dim 4098 (2 loop iterations)", {"dim": 4098}),
    ("rope_padded bf16 dim 4098 split halves 5-D", {"dim": 4098, "dtype": torch.bfloat16, "adjacents": False,
                                                    "groups": 3}),
]
for _name, _kw in ROPE_CASES:
    check(_name, rope(**_kw))


# --- indexing.py: index_select_cat and scaled_index_add -------------------------------------------------------

def index_select_cat(dtype=torch.float32, widths=(300, 700)):
    """Sources [113, 300] and [64, 700] with 40 and 25 distinct indices; the output is the flattened rows."""
    def run():
        ix = load("indexing")
        sources = [torch.randn(r, w).to(dtype) for r, w in zip((113, 64), widths)]
        indices = [torch.randperm(r)[:k] for r, k in zip((113, 64), (40, 25))]
        got = [s.clone().requires_grad_() for s in sources]
        with cuda_looking_tensors():
            out = ix.index_select_cat(got, indices)
        ref_src = [s.double().requires_grad_() for s in sources]
        ref = torch.cat([s[i].flatten() for s, i in zip(ref_src, indices)])
        yield {"out": (out, ref, 0.0)}
        g = torch.randn(out.shape).to(dtype)
        with cuda_looking_tensors():
            out.backward(g)
        ref.backward(g.double())
        yield {f"dsource{i}": (s.grad, r.grad, 0.0) for i, (s, r) in enumerate(zip(got, ref_src))}
    return run

check("index_select_cat f32", index_select_cat(), ("forward", "backward"))
check("index_select_cat f16", index_select_cat(torch.float16), ("forward", "backward"))


def scaled_index_add(dtype=torch.float32, scaling=True, D=300, alpha=0.7):
    """input [23, 7, D], source [11, 7, D] into 11 distinct rows, scaling [D]."""
    def run():
        ix = load("indexing")
        inp = torch.randn(23, 7, D).to(dtype)
        src = torch.randn(11, 7, D).to(dtype)
        sc = torch.randn(D).to(dtype) if scaling else None
        index = torch.randperm(23)[:11]
        inp_leaf = inp.clone().requires_grad_()
        src_g = src.clone().requires_grad_()
        sc_g = sc.clone().requires_grad_() if scaling else None
        with cuda_looking_tensors():
            out = ix.scaled_index_add(inp_leaf * 1, index, src_g, sc_g, alpha)
        r_inp, r_src = inp.double().requires_grad_(), src.double().requires_grad_()
        r_sc = sc.double().requires_grad_() if scaling else None
        ref = r_inp.index_add(0, index, r_src * r_sc if scaling else r_src, alpha=alpha)
        t = TOL[dtype]
        yield {"out": (out, ref, t)}
        g = torch.randn(out.shape).to(dtype)
        with cuda_looking_tensors():
            out.backward(g)
        ref.backward(g.double())
        grads = {"dinput": (inp_leaf.grad, r_inp.grad, 0.0), "dsource": (src_g.grad, r_src.grad, t)}
        if scaling:
            grads["dscaling"] = (sc_g.grad, r_sc.grad, t)
        yield grads
    return run

check("scaled_index_add f32 scaling", scaled_index_add(), ("forward", "backward"))
check("scaled_index_add f32 no scaling", scaled_index_add(scaling=False), ("forward", "backward"))
check("scaled_index_add f16 scaling D=700 (2 column blocks)", scaled_index_add(torch.float16, D=700),
      ("forward", "backward"))


# --- tiled_matmul.py ----------------------------------------------------------------------------------------

def tiled(ms, ns, ks, config, dtype=torch.float32, tol=None):
    """a: tiles [m_i, k_j], b: tiles [k_j, n_l]; config (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_stages), one of the
    library's configs, pinned through the perf-model stand-in. Forward through tiled_matmul_out, backward through
    tiled_matmul_bwd (the products with transposed tiles)."""
    def run():
        tm = load_tiled_matmul()
        kern = importlib.import_module("xformers.ops._triton.tiled_matmul_kernels")
        PINNED.clear()
        PINNED.update(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K", "num_stages"), config))
        kern._xformers_tiled_matmul_kernel.cache = {}
        t = tol if tol is not None else {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}[dtype]
        a = [[(torch.randn(m, k) / k ** 0.25).to(dtype) for k in ks] for m in ms]
        b = [[(torch.randn(k, n) / k ** 0.25).to(dtype) for n in ns] for k in ks]
        c = [[torch.full((m, n), float("nan"), dtype=dtype) for n in ns] for m in ms]
        tm.tiled_matmul_out(a, b, out=c)
        A = torch.cat([torch.cat(row, 1) for row in a], 0).double()
        B = torch.cat([torch.cat(row, 1) for row in b], 0).double()
        C = torch.cat([torch.cat(row, 1) for row in c], 0)
        chosen = kern._xformers_tiled_matmul_kernel.best_config
        if chosen is not None and chosen.kwargs["SPLIT_K"] != PINNED["SPLIT_K"]:
            raise AssertionError(f"the kernel ran with {chosen}")
        yield {"c": (C, A @ B, t)}
        grad = [[torch.randn(m, n).to(dtype) for n in ns] for m in ms]
        ctx = types.SimpleNamespace(save_for_backward=lambda *ts: setattr(ctx, "saved_tensors", ts))
        flat_a = [x for row in a for x in row]
        flat_b = [x for row in b for x in row]
        tm.tiled_matmul_setup_context(ctx, (flat_a, flat_b, ms, ns, ks), None)
        flat_ga, flat_gb, *_ = tm.tiled_matmul_bwd(ctx, [x for row in grad for x in row])
        G = torch.cat([torch.cat(row, 1) for row in grad], 0).double()
        GA = torch.cat([torch.cat(flat_ga[i * len(ks):(i + 1) * len(ks)], 1) for i in range(len(ms))], 0)
        GB = torch.cat([torch.cat(flat_gb[i * len(ns):(i + 1) * len(ns)], 1) for i in range(len(ks))], 0)
        yield {"da": (GA, G @ B.T, t), "db": (GB, A.T @ G, t)}
    return run

check("tiled_matmul f32 3x3x3 tiles 64x32x32 SPLIT_K 1", tiled([37, 64, 5], [50, 16, 129], [33, 64, 100],
                                                              (64, 32, 32, 1, 5)), ("forward", "backward"))
check("tiled_matmul f16 2x3x3 tiles 16x32x32 SPLIT_K 4", tiled([37, 20], [50, 16, 70], [33, 100, 7],
                                                               (16, 32, 32, 4, 2), torch.float16),
      ("forward", "backward"))
check("tiled_matmul bf16 1x2x2 tiles EVEN_K 128x32x32", tiled([37], [50, 129], [64, 128], (128, 32, 32, 1, 4),
                                                              torch.bfloat16), ("forward", "backward"))
check("tiled_matmul f32 1x1x1 32x64x64 SPLIT_K 2", tiled([45], [77], [300], (32, 64, 64, 2, 3)),
      ("forward", "backward"))


# --- ops/fmha/triton_splitk.py: split-K decoding attention (14f0a4fc) ----------------------------------------------

def attention_ref(q, k, v, scale, mask=None):
    """float64 softmax(q k^T * scale + mask) v and its log-sum-exp: q [B, Mq, G, H, D], k / v [B, Mk, G, H, D]
    (heads expanded), mask [Mq, Mk] or [B, G, H, Mq, Mk]. Rows with no key give 0 and lse -inf."""
    s = torch.einsum("bmghd,bnghd->bghmn", q.double(), k.double()) * scale
    if mask is not None:
        s = s + mask.double()
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return torch.einsum("bghmn,bnghd->bmghd", p, v.double()), lse


def int4_quantize(x, groups):
    """x [..., D] -> (int32 [..., groups + D / 8]: each group's float16 scale and shift packed in an int32, then
    its 4-bit codes, 8 an int32, lowest nibble first; the dequantized values, formed in float16 as the kernel forms
    them), as FwOp's docstring and
    benchmark_attn_decoding.quantize_kv_int4 lay them out."""
    D = x.shape[-1]
    xg = x.double().reshape(*x.shape[:-1], groups, D // groups)
    lo, hi = xg.amin(-1, keepdim=True), xg.amax(-1, keepdim=True)
    scale, shift = ((hi - lo) / 15).half(), lo.half()
    codes = ((xg - shift.double()) / scale.double() + 0.5).floor().clamp(0, 15).long()
    deq = (codes.half() * scale + shift).reshape(x.shape)  # float16 products and sums, as the kernel's
    nib = codes.reshape(*codes.shape[:-1], D // groups // 8, 8)
    packed = (nib << (4 * torch.arange(8))).sum(-1)
    packed = torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32).flatten(-2)
    coef = torch.cat([scale, shift], -1).contiguous().view(torch.int32)  # [..., groups, 1]
    return torch.cat([coef.flatten(-2), packed.reshape(*x.shape[:-1], -1)], -1), deq


def fp8_quantize(x):
    """x [..., D] -> (int32 [..., D / 4]: four float8 e4m3 codes an int32, lowest byte first; int32 [...]: the
    row's float16 scale and shift packed; the dequantized values, in float16 as the kernel's). Row-wise, shift the
    row mean."""
    xd = x.double()
    shift = xd.mean(-1, keepdim=True).half()
    scale = ((xd - shift.double()).abs().amax(-1, keepdim=True) / 448).half()
    codes = ((xd - shift.double()) / scale.double()).to(torch.float8_e4m3fn)
    deq = codes.half() * scale + shift  # float16 products and sums, as the kernel's
    return (codes.view(torch.uint8).view(torch.int32), torch.cat([scale, shift], -1).view(torch.int32)[..., 0],
            deq)


def fwop(split_k=None, groups=1, **attrs):
    """FwOp, or the library's get_operator(split_k) subclass, with NUM_GROUPS (int4 groups) set."""
    op = splitk.FwOp if split_k is None else splitk.FwOp.get_operator(split_k)
    if groups != 1 or attrs:
        op = type(f"{op.__name__}_G{groups}", (op,), {"NUM_GROUPS": groups, **attrs})
    return op


def check_reasons(op, inp):
    """The library's own not_supported_reasons, but the device's (the CPU is not CUDA, nor an A100 for bfloat16)."""
    reasons = [r for r in op.not_supported_reasons(inp) if "device" not in r and "cuda" not in r.lower()
               and "A100" not in r]
    if reasons:
        raise AssertionError(f"FwOp does not support this case: {reasons}")


def lse_comparisons(got, want, tol):
    finite = torch.isfinite(want)
    return {"lse": (got[finite], want[finite], tol),
            "lse -inf rows": exact(torch.isneginf(got), torch.isneginf(want))}


def splitk_inputs(q, kq, vq, Hq, hkv, quant, bias, scale=None, scales=None):
    """The split-K op's inputs: K and V (and fp8's scale-shifts) broadcast from hkv to Hq heads, as the library's
    MQA/GQA callers pass them."""
    expand = lambda t: t.expand(*t.shape[:-2], Hq, t.shape[-1]) if hkv != Hq else t  # noqa: E731
    if quant == "fp8":
        ks, vs = (t.expand(*t.shape[:-1], Hq) if hkv != Hq else t for t in scales)
        return splitk.InputsFp8(query=q, key=expand(kq), value=expand(vq), attn_bias=bias, scale=scale,
                                k_fp8_scale_shift=ks, v_fp8_scale_shift=vs)
    return fmha_common.Inputs(query=q, key=expand(kq), value=expand(vq), attn_bias=bias, scale=scale)

def splitk_dense(B=2, Mq=1, Mk=300, Hq=5, Hkv=None, G=None, D=64, dtype=F16, split_k=None, quant=None, groups=1,
                 lse=True, tensor_bias=False, scale=None, expected_split=None):
    """No mask (or an additive tensor bias): q [B, Mq, (G), Hq, D], k / v [B, Mk, (G), Hkv, D]. Hkv 1 with 4-D
    inputs is MQA (keys expanded to Hq heads, stride 0), with G groups GQA; the kernel then takes the Hq heads as
    Hq * Mq queries of one head (mqa_swap_seqlen_head). quant: "int4" (groups of D / groups) or "fp8"."""
    def run():
        five = G is not None
        g = (G,) if five else ()
        hkv = Hkv or Hq
        q = torch.randn(B, Mq, *g, Hq, D).to(dtype)
        k = torch.randn(B, Mk, *g, hkv, D).to(dtype)
        v = torch.randn(B, Mk, *g, hkv, D).to(dtype)
        kw = {}
        if quant == "int4":
            kq, k_ref = int4_quantize(k, groups)
            vq, v_ref = int4_quantize(v, groups)
        elif quant == "fp8":
            kq, ks, k_ref = fp8_quantize(k)
            vq, vs, v_ref = fp8_quantize(v)
        else:
            kq, vq, k_ref, v_ref = k, v, k, v
        k_ref, v_ref = k_ref.to(dtype), v_ref.to(dtype)  # the kernel casts dequantized K / V to q's dtype
        bias = None
        if quant != "fp8" and tensor_bias:
            bias = (torch.randn(B, *g, Hq, Mq, Mk) * 2).to(dtype)
            kw["bias"] = bias
        inp = splitk_inputs(q, kq, vq, Hq, hkv, quant, bias, scale=scale,
                            scales=(ks, vs) if quant == "fp8" else None)
        op = fwop(split_k, groups)
        check_reasons(op, inp)
        out, ctx = op.apply(inp, needs_gradient=lse)
        q5, k5, v5 = (t if five else t.unsqueeze(2) for t in (q, k_ref, v_ref))
        k5, v5 = k5.expand(*k5.shape[:-2], Hq, D), v5.expand(*v5.shape[:-2], Hq, D)
        mask = kw["bias"] if tensor_bias else None
        if mask is not None and not five:
            mask = mask.unsqueeze(1)
        want, want_lse = attention_ref(q5, k5, v5, inp.scale_float, mask)
        if not five:
            want = want[:, :, 0]
        comps = {"out": (out, want, TOL[dtype])}
        if lse:
            got_lse = ctx.lse if five else ctx.lse.unsqueeze(1)
            comps.update(lse_comparisons(got_lse, want_lse, 2e-5))
        if expected_split is not None:
            chosen = op.SPLIT_K or op.get_split_k(B, G or 1, 1 if hkv != Hq else Hq, Mk, Mq, 0)
            if chosen != expected_split:
                raise AssertionError(f"split_k {chosen}, expected {expected_split}")
        yield comps
    return run


check("splitk f16 B2 Mq1 Mk300 H5 D64, heuristic split-K 3 (reduce kernel), lse",
      splitk_dense(expected_split=3))
check("splitk bf16 B3 Mq3 Mk77 H2 D128, split-K 1 (no reduce), lse", splitk_dense(3, 3, 77, 2, D=128, dtype=BF16,
                                                                             split_k=1))
check("splitk f16 B1 Mq2 Mk1000 H3 D32, split-K 8 (chunks of 125: masked tails)",
      splitk_dense(1, 2, 1000, 3, D=32, split_k=8))
check("splitk f16 B1 Mq1 Mk100 H1 D16, split-K 3 (reduce over a non-power-of-two split)",
      splitk_dense(1, 1, 100, 1, D=16, split_k=3))
check("splitk bf16 B2 Mq1 Mk33 H4 D64, split-K 16 (empty chunks past the keys)",
      splitk_dense(2, 1, 33, 4, dtype=BF16, split_k=16))
check("splitk f16 MQA B2 Mq3 Mk150 Hq6 Hkv1 D64 (heads swapped into queries), split-K 2",
      splitk_dense(2, 3, 150, 6, Hkv=1, split_k=2))
check("splitk bf16 GQA 5-D B2 Mq2 Mk211 G3 Hq4 Hkv1 D64, heuristic split-K", splitk_dense(2, 2, 211, 4, Hkv=1, G=3,
                                                                                      dtype=BF16))
check("splitk f16 5-D B1 Mq1 Mk129 G2 H3 D128 (no head grouping), split-K 2",
      splitk_dense(1, 1, 129, 3, G=2, D=128, split_k=2))
check("splitk f16 additive tensor bias B2 Mq5 Mk90 H3 D64, split-K 1", splitk_dense(2, 5, 90, 3, split_k=1,
                                                                                  tensor_bias=True))
check("splitk bf16 additive tensor bias 5-D G2 B1 Mq3 Mk70 H2 D32 (bias boundary-checked)",
      splitk_dense(1, 3, 70, 2, G=2, D=32, dtype=BF16, split_k=1, tensor_bias=True))
check("splitk f16 scale 0.3, no lse, split-K 2", splitk_dense(2, 1, 200, 2, split_k=2, scale=0.3, lse=False))
check("splitk f16 int4 row-wise B2 Mq1 Mk300 H2 D128, split-K 2", splitk_dense(2, 1, 300, 2, D=128, split_k=2,
                                                                               quant="int4"))
check("splitk bf16 int4 4 groups B1 Mq2 Mk150 H3 D128, heuristic split-K",
      splitk_dense(1, 2, 150, 3, D=128, dtype=BF16, quant="int4", groups=4))
check("splitk f16 int4 2 groups MQA B2 Mq1 Mk97 Hq4 Hkv1 D64, split-K 1",
      splitk_dense(2, 1, 97, 4, Hkv=1, D=64, split_k=1, quant="int4", groups=2))
check("splitk bf16 int4 8 groups 5-D GQA G2 Hq2 Hkv1 B1 Mq1 Mk200 D256, split-K 4",
      splitk_dense(1, 1, 200, 2, Hkv=1, G=2, D=256, dtype=BF16, split_k=4, quant="int4", groups=8))
check("splitk f16 fp8 row-wise B2 Mq1 Mk300 H2 D64, split-K 2", splitk_dense(2, 1, 300, 2, split_k=2, quant="fp8"))
check("splitk bf16 fp8 MQA B1 Mq3 Mk130 Hq4 Hkv1 D128, split-K 1",
      splitk_dense(1, 3, 130, 4, Hkv=1, D=128, dtype=BF16, split_k=1, quant="fp8"))


def splitk_blockdiag(kind, q_lens, kv_lens, pad=None, Hq=3, Hkv=None, G=None, D=64, dtype=F16, split_k=None,
                     quant=None, page_size=None, starts=None, window=None, lse=True):
    """A batch of sequences packed along one row: q [1, sum(q_lens), (G), Hq, D]; keys padded to `pad` rows a
    sequence (k / v [1, B * pad, (G), Hkv, D]), or gappy (sequence b's keys start at starts[b] of its pad rows),
    or paged (page_size: the logical [B, pad] rows scattered over pages of a shuffled block table, with pages no
    sequence uses). kind names the mask: "padded", "causal" (BlockDiagonalCausalWithOffsetPaddedKeysMask), "gappy",
    "causal gappy", "local" (window (left, right)) or "causal local" (window size). The reference materializes the
    library's unpaged mask of the same sequences over the logical rows."""
    def run():
        B = len(q_lens)
        five = G is not None
        g = (G,) if five else ()
        hkv = Hkv or Hq
        P = pad
        n_q = sum(q_lens)
        q = torch.randn(1, n_q, *g, Hq, D).to(dtype)
        k = torch.randn(1, B * P, *g, hkv, D).to(dtype)
        v = torch.randn(1, B * P, *g, hkv, D).to(dtype)
        if kind in ("padded", "causal"):
            cls = AB.BlockDiagonalPaddedKeysMask if kind == "padded" else AB.BlockDiagonalCausalWithOffsetPaddedKeysMask
            bias = cls.from_seqlens(q_seqlen=q_lens, kv_padding=P, kv_seqlen=kv_lens)
        elif kind in ("gappy", "causal gappy"):
            cls = AB.BlockDiagonalGappyKeysMask if kind == "gappy" else AB.BlockDiagonalCausalWithOffsetGappyKeysMask
            bias = cls.from_seqlens(q_seqlen=q_lens, kv_seqstarts=[b * P + s for b, s in enumerate(starts)] + [B * P],
                                    kv_seqlen=kv_lens)
        elif kind == "local":
            bias = AB.BlockDiagonalLocalAttentionPaddedKeysMask.from_seqlens_local(q_lens, P, kv_lens, *window)
        elif kind == "causal local":
            bias = AB.BlockDiagonalCausalLocalAttentionPaddedKeysMask.from_seqlens_local(q_lens, P, kv_lens, window)
        mask = bias.materialize((n_q, B * P), dtype=torch.float64)
        if quant == "int4":
            kq, k_ref = int4_quantize(k, 1)
            vq, v_ref = int4_quantize(v, 1)
        elif quant == "fp8":
            kq, ks, k_ref = fp8_quantize(k)
            vq, vs, v_ref = fp8_quantize(v)
        else:
            kq, vq, k_ref, v_ref = k, v, k, v
        k_ref, v_ref = k_ref.to(dtype), v_ref.to(dtype)  # the kernel casts dequantized K / V to q's dtype
        if page_size is not None:
            per_row = P // page_size
            n_pages = B * per_row + 3
            perm = torch.randperm(n_pages)[:B * per_row]
            tables = perm.view(B, per_row).to(torch.int32)

            def scatter(t):
                phys = torch.randint(-100, 100, (1, n_pages * page_size, *t.shape[2:])).to(t.dtype) \
                    if not t.is_floating_point() else torch.randn(1, n_pages * page_size, *t.shape[2:]).to(t.dtype)
                pages = t.view(B * per_row, page_size, *t.shape[2:])
                phys.view(n_pages, page_size, *t.shape[2:])[perm] = pages
                return phys
            kq, vq = scatter(kq), scatter(vq)
            if quant == "fp8":
                ks, vs = scatter(ks), scatter(vs)
            if kind == "padded":
                bias = AB.PagedBlockDiagonalPaddedKeysMask.from_seqlens(q_lens, kv_lens, tables, page_size)
            elif kind == "causal":
                bias = AB.PagedBlockDiagonalCausalWithOffsetPaddedKeysMask.from_seqlens(q_lens, kv_lens, tables,
                                                                                       page_size)
            else:
                paged_type = (AB.PagedBlockDiagonalGappyKeysMask if kind == "gappy"
                              else AB.PagedBlockDiagonalCausalWithOffsetGappyKeysMask)
                bias = bias.make_paged(tables, page_size, P, paged_type)
        inp = splitk_inputs(q, kq, vq, Hq, hkv, quant, bias, scales=(ks, vs) if quant == "fp8" else None)
        op = fwop(split_k)
        check_reasons(op, inp)
        out, ctx = op.apply(inp, needs_gradient=lse)
        q5, k5, v5 = (t if five else t.unsqueeze(2) for t in (q, k_ref, v_ref))
        k5, v5 = k5.expand(*k5.shape[:-2], Hq, D), v5.expand(*v5.shape[:-2], Hq, D)
        want, want_lse = attention_ref(q5, k5, v5, inp.scale_float, mask)
        if not five:
            want = want[:, :, 0]
        comps = {"out": (out.reshape(want.shape), want, TOL[dtype])}
        if lse:
            got_lse = ctx.lse if five else ctx.lse.unsqueeze(1)
            comps.update(lse_comparisons(got_lse.reshape(want_lse.shape), want_lse, 2e-5))
        yield comps
    return run


check("splitk f16 BlockDiagonalCausalWithOffsetPaddedKeysMask q 1 x3, kv 37/100/0 of 128, heuristic split-K",
      splitk_blockdiag("causal", [1, 1, 1], [37, 100, 0], 128))
check("splitk bf16 causal padded q 3 x2, kv 50/129 of 150, MQA Hq4 Hkv1, split-K 2",
      splitk_blockdiag("causal", [3, 3], [50, 129], 150, Hq=4, Hkv=1, dtype=BF16, split_k=2))
check("splitk f16 BlockDiagonalPaddedKeysMask variable q 2/5/1, kv 20/70/3 of 80, split-K 1",
      splitk_blockdiag("padded", [2, 5, 1], [20, 70, 3], 80, split_k=1))
check("splitk f16 padded variable q 3/1, MQA Hq5 Hkv1 (queries x heads), split-K 4",
      splitk_blockdiag("padded", [3, 1], [90, 45], 100, Hq=5, Hkv=1, split_k=4))
check("splitk bf16 padded 5-D GQA G2 Hq3 Hkv1, q 1 x3, kv 11/200/64 of 200, heuristic split-K",
      splitk_blockdiag("padded", [1, 1, 1], [11, 200, 64], 200, Hq=3, Hkv=1, G=2, dtype=BF16))
check("splitk f16 BlockDiagonalGappyKeysMask q 2/1, kv 30 from 7 / 55 from 40 of 100, split-K 2",
      splitk_blockdiag("gappy", [2, 1], [30, 55], 100, starts=[7, 40], split_k=2))
check("splitk f16 BlockDiagonalCausalWithOffsetGappyKeysMask q 2 x2, kv 25 from 3 / 60 from 0 of 70",
      splitk_blockdiag("causal gappy", [2, 2], [25, 60], 70, starts=[3, 0], split_k=1))
check("splitk f16 BlockDiagonalLocalAttentionPaddedKeysMask q 1 x2, window (20, 0), kv 90/33 of 100",
      splitk_blockdiag("local", [1, 1], [90, 33], 100, window=(20, 0), split_k=1))
check("splitk bf16 BlockDiagonalCausalLocalAttentionPaddedKeysMask q 3 x2, window 17, kv 100/41 of 120, split-K 2",
      splitk_blockdiag("causal local", [3, 3], [100, 41], 120, window=17, dtype=BF16, split_k=2))
check("splitk f16 PagedBlockDiagonalPaddedKeysMask pages of 64, q 1 x3, kv 100/250/1 of 256, heuristic split-K",
      splitk_blockdiag("padded", [1, 1, 1], [100, 250, 1], 256, page_size=64))
check("splitk bf16 PagedBlockDiagonalCausalWithOffsetPaddedKeysMask pages of 128, q 2 x2, MQA Hq4 Hkv1, split-K 3",
      splitk_blockdiag("causal", [2, 2], [300, 129], 384, Hq=4, Hkv=1, dtype=BF16, page_size=128, split_k=3))
check("splitk f16 paged padded variable q 4/1, pages of 64, split-K 1",
      splitk_blockdiag("padded", [4, 1], [77, 128], 128, page_size=64, split_k=1))
check("splitk f16 PagedBlockDiagonalGappyKeysMask pages of 64, q 1 x2, kv 70 from 5 / 100 from 90 of 256, split-K 2",
      splitk_blockdiag("gappy", [1, 1], [70, 100], 256, starts=[5, 90], page_size=64, split_k=2))
check("splitk f16 paged causal gappy pages of 64, q 2 x2, kv 60 from 64 / 10 from 1 of 128, split-K 2",
      splitk_blockdiag("causal gappy", [2, 2], [60, 10], 128, starts=[64, 1], page_size=64, split_k=2))
check("splitk f16 int4 causal padded q 1 x2, kv 200/55 of 256, split-K 2",
      splitk_blockdiag("causal", [1, 1], [200, 55], 256, D=128, quant="int4", split_k=2))
check("splitk bf16 int4 paged padded pages of 64, q 1 x2, MQA Hq3 Hkv1, kv 130/64 of 192",
      splitk_blockdiag("padded", [1, 1], [130, 64], 192, Hq=3, Hkv=1, D=128, dtype=BF16, quant="int4",
                       page_size=64))
check("splitk f16 fp8 causal padded q 2 x2, kv 99/180 of 200, split-K 2",
      splitk_blockdiag("causal", [2, 2], [99, 180], 200, quant="fp8", split_k=2))
check("splitk bf16 fp8 paged causal pages of 64, q 1 x3, MQA Hq4 Hkv1, kv 10/128/190 of 192 (tests/utils' layout)",
      splitk_blockdiag("causal", [1, 1, 1], [10, 128, 190], 192, Hq=4, Hkv=1, D=128, dtype=BF16, quant="fp8",
                       page_size=64))


def merge_ref(outs, lses):
    """float64 merge of partial attentions: outs [S, ..., M, K] (as [B, G, H, M, K] each), lses [S, B, G, H, M]."""
    lse = torch.logsumexp(lses, 0)
    w = torch.exp(lses - lse).nan_to_num(0.0)
    return (w[..., None] * outs).sum(0), lse


def random_partials(S, B, G, H, M, K, empty_rows=True):
    outs = torch.randn(S, B, G, H, M, K)
    lses = torch.randn(S, B, G, H, M) * 3
    if empty_rows:
        lses[0, 0, 0, 0, :2] = float("-inf")  # a split that saw no key on two rows
        lses[:, -1, -1, -1, -1] = float("-inf")  # a row that saw no key at all
    return outs, lses


def merge_stacked(S, B, M, G, H, K, dtype=F32, write_lse=True):
    """triton_splitk.merge_attentions (the _splitK_reduce kernel FwOp runs after split-K) on stacked partials
    [B, G, H, S, M, K] in float32."""
    def run():
        outs, lses = random_partials(S, B, G, H, M, K)
        attn_split = outs.permute(1, 2, 3, 0, 4, 5).contiguous()
        lse_split = lses.permute(1, 2, 3, 0, 4).contiguous()
        out = torch.full((B, M, G, H, K), float("nan"), dtype=dtype)
        lse = torch.full((B, G, H, M), float("nan")) if write_lse else None
        splitk.merge_attentions(out, lse, attn_split, lse_split)
        want, want_lse = merge_ref(outs.double(), lses.double())
        comps = {"out": (out, want.permute(0, 3, 1, 2, 4), TOL[dtype])}
        if write_lse:
            comps.update(lse_comparisons(lse, want_lse, 1e-5))
        yield comps
    return run


check("merge_attentions f32 S4 B2 M3 G1 H3 K64, lse", merge_stacked(4, 2, 3, 1, 3, 64))
check("merge_attentions bf16 out S5 (masked to 8) B1 M7 G2 H2 K128, lse", merge_stacked(5, 1, 7, 2, 2, 128, BF16))
check("merge_attentions f16 out S3 B3 M1 G1 H5 K80 (head dim masked to 128), no lse",
      merge_stacked(3, 3, 1, 1, 5, 80, F16, write_lse=False))
check("merge_attentions f32 S2 B1 M5 G1 H1 K48 (head dim 48 of 64, split_k a power of two)",
      merge_stacked(2, 1, 5, 1, 1, 48))


def merge_varargs(S, B, M, G, H, K, output_dtype=None, backward=True):
    """merge_attentions_varargs (the _splitK_reduce_varargs kernel, unrolled for S partials by vararg_kernel.py)
    and merge_attentions_varargs_backward (_splitK_reduce_varargs_backward) on S partials [B, G, H, M, K] (strided
    views, rows of stride K + 3, where the backward is not run; see LIBRARY_BUGS' note); the backward against float64
    autograd of the merge."""
    def run():
        outs, lses = random_partials(S, B, G, H, M, K, empty_rows=False)
        if backward:  # the backward's gradients are empty_like(partials): dense, so the partials must be too
            attn_split = [o.clone() for o in outs]
        else:
            attn_split = [torch.randn(B, G, H, M, K + 3)[..., :K].copy_(o) for o in outs]  # rows of stride K + 3
        lse_split = [l.clone() for l in lses]
        got = splitk.merge_attentions_varargs(attn_split, lse_split, True, output_dtype, B, M, G, H, K)
        o64, l64 = outs.double().requires_grad_(), lses.double().requires_grad_()
        want, want_lse = merge_ref(o64, l64)
        dtype = output_dtype or F32
        yield {"out": (got[0], want.permute(0, 3, 1, 2, 4), TOL[dtype]), **lse_comparisons(got[1], want_lse, 1e-5)}
        if not backward:
            return
        g_out, g_lse = torch.randn(B, M, G, H, K), torch.randn(B, G, H, M)
        d_attn, d_lse = splitk.merge_attentions_varargs_backward(attn_split, lse_split, got[0].float(), got[1],
                                                                  g_out, g_lse)
        w_attn, w_lse = torch.autograd.grad((want, want_lse), (o64, l64),
                                            (g_out.double().permute(0, 2, 3, 1, 4), g_lse.double()))
        yield {"dattn": (torch.stack(d_attn), w_attn, 1e-5), "dlse": (torch.stack(d_lse), w_lse, 1e-5)}
    return run


check("merge_attentions_varargs f32 3 partials B2 M5 G1 H3 K64", merge_varargs(3, 2, 5, 1, 3, 64), FB)
check("merge_attentions_varargs 5 partials B1 M3 G2 H2 K32, bf16 out", merge_varargs(5, 1, 3, 2, 2, 32, BF16,
                                                                                    backward=False))
check("merge_attentions_varargs f32 2 partials B3 M1 G1 H1 K100 (head dim masked to 128)",
      merge_varargs(2, 3, 1, 1, 1, 100, backward=False))
check("merge_attentions_varargs f32 1 partial B1 M7 G1 H2 K16", merge_varargs(1, 1, 7, 1, 2, 16), FB)


# --- ops/_triton/sequence_parallel_fused_kernels.py (2024-09-27): the fused sequence-parallel matmul --------------

def seqpar_case(world, rank, K, Ns, m_per_rank, config, dtype=F32, direction=0, counters=True, shards=False):
    """_launch_triton_matmul, the host function sequence_parallel_fused_ops.py launched the kernel through, in one
    process: A [world * m_per_rank, K] gathered from `world` ranks times up to three B [K, N_i]; each program takes
    one rank's rows, this rank's from A_my_shard into C_my_shard (separate tensors when `shards`, else views of A and
    C). counters: wait counters already at seq_num (every wait passes at once) and write counters, which the
    programs of each other rank's rows set to seq_num when the last of them is done; this rank's stays. The first
    launch runs with _wait False (the library's autotuning run), the second with _wait True."""
    def run():
        PINNED.clear()
        PINNED.update(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K", "num_stages"), config))
        seqpar._xformers_seqpar_matmul_kernel.cache = {}
        seqpar.AUTOTUNED_SIZES.clear()
        M = world * m_per_rank
        a = (torch.randn(M, K) / K ** 0.25).to(dtype)
        bs = [(torch.randn(K, n) / K ** 0.25).to(dtype) for n in Ns]
        cs = [torch.full((M, n), float("nan"), dtype=dtype) for n in Ns]
        a_mine = cs_mine = None
        if shards:
            a_mine = a[rank * m_per_rank:(rank + 1) * m_per_rank].clone()
            a[rank * m_per_rank:(rank + 1) * m_per_rank] = float("nan")  # must be read from A_my_shard instead
            cs_mine = [torch.full((m_per_rank, n), float("nan"), dtype=dtype) for n in Ns]
        seq = 7
        wait = torch.full((world,), seq, dtype=torch.int32) if counters else None
        write = torch.zeros(world, dtype=torch.int32) if counters else None
        seqpar._launch_triton_matmul(a_mine, a, bs, cs, cs_mine, rank, world, wait, write, direction, seq, 10)
        A = a.double()
        if shards:
            A[rank * m_per_rank:(rank + 1) * m_per_rank] = a_mine.double()
        t = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}[dtype]
        comps = {}
        for i, (b, c) in enumerate(zip(bs, cs)):
            want = A @ b.double()
            if shards:
                mine = slice(rank * m_per_rank, (rank + 1) * m_per_rank)
                comps[f"c{i + 1} my shard"] = (cs_mine[i], want[mine], t)
                others = torch.ones(M, dtype=torch.bool)
                others[mine] = False
                comps[f"c{i + 1} other rows"] = (c[others], want[others], t)
                comps[f"c{i + 1} my rows untouched"] = exact(c[mine].isnan(), torch.ones_like(c[mine], dtype=torch.bool))
            else:
                comps[f"c{i + 1}"] = (c, want, t)
        if counters:
            want_write = torch.full((world,), seq, dtype=torch.int32)
            want_write[rank] = 0
            comps["write counters"] = exact(write, want_write)
        yield comps
    return run


# configs of the library's list: (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_stages)
check("seqpar matmul f32 world 1, one B 77 x 130, no counters, 64x32x32", seqpar_case(1, 0, 130, [77], 45,
                                                                                      (64, 32, 32, 1, 5), counters=False))
check("seqpar matmul f32 world 3 rank 1 backwards, three Bs 50/16/70, K 100, counters, 32x64x32",
      seqpar_case(3, 1, 100, [50, 16, 70], 37, (32, 64, 32, 1, 2)))
check("seqpar matmul bf16 world 4 rank 3 forwards, two Bs 129/33, K 64 (EVEN_K), counters, 16x32x32",
      seqpar_case(4, 3, 64, [129, 33], 20, (16, 32, 32, 1, 2), BF16, direction=1))
check("seqpar matmul f16 world 2 rank 0, separate my-shard A and C, two Bs 40/90, K 70, 64x32x32",
      seqpar_case(2, 0, 70, [40, 90], 33, (64, 32, 32, 1, 5), F16, shards=True))
check("seqpar matmul f32 world 2 rank 1, SPLIT_K 4 (atomic adds into C zeroed by the config's pre_hook), 32x64x32",
      seqpar_case(2, 1, 300, [50], 19, (32, 64, 32, 4, 2)))


# --- report --------------------------------------------------------------------------------------------------------

CAUSAL_GAPPY = "splitk f16 BlockDiagonalCausalWithOffsetGappyKeysMask q 2 x2, kv 25 from 3 / 60 from 0 of 70"
MERGE_POW2 = "merge_attentions f32 S2 B1 M5 G1 H1 K48 (head dim 48 of 64, split_k a power of two)"
LIBRARY_BUGS = {
    CAUSAL_GAPPY: "xformers' _fwd_kernel_splitK, unpaged gappy keys: k_base already starts at the sequence's first key "
                  "(start_kv_idx), yet the causal and local masks compare with start_n - start_kv_idx, so the "
                  "diagonal moves start_kv_idx keys later and queries see later keys (the paged gappy path, whose "
                  "start_n counts from the row's start, is right)",
    MERGE_POW2: "xformers' _splitK_reduce loads Out_splitK without a mask when split_k is a power of two, over "
                "head_dim_pow_2 columns, so a head dim below its power of two reads past the last row (the results "
                "are right, the extra columns are not stored; TEGULA_DEBUG=1 stops the read out of bounds)",
}
sys.exit(report(results, ARGS.json, library=LIBRARY_BUGS, library_name="xformers"))
