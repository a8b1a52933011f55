"""xformers' Triton kernels (facebookresearch/xformers, snapshot ca6d2aa of 2026-04-21) on Tegula, through the
conformance shim's `triton` package, against torch float64 references written here from the math:

  - xformers/ops/rmsnorm.py (`rms_norm`, `rms_norm_add`) on xformers/ops/_triton/rmsnorm_kernels.py
    (`_rms_norm_kernel`, `_rms_norm_add_kernel`; rsqrt through xformers/triton/importing.py's libdevice_find):
    with and without weight, float32 / float16 / bfloat16, rows of 300 and of 10007 (two column blocks of 8192),
    rms_norm_add's in-place x += y;
  - xformers/ops/rope_padded.py (`rope_padded`) on rope_padded_kernels.py (`_rope_padded_kernel`): RoPE of the
    queries and of the keys, written with the values into a padded KV cache (the cache update: every other cache
    row must stay as it was), for a batch of sequences of different query and cache lengths; adjacent and split
    halves, internal_dtype "", "f32" and "f64", float32 / float16 / bfloat16, 4-D and 5-D (3 groups) inputs,
    linear_scale, dynamic (YaRN-style) frequency scaling, first_seqpos and seqpos, a given out_q, and head dim
    4098 (two loop iterations of the kernel's 4096 block). The kernel module takes `pow` from
    xformers/triton/importing.py's libdevice_find("pow"), which executes a fresh copy of the module
    triton.language.extra.libdevice from its import spec and returns that copy's function, which Triton (and
    Tegula since 2026-12-05) resolves to the language's libdevice by its __module__ and name;
  - xformers/ops/indexing.py (`index_select_cat`, `scaled_index_add`, autograd functions) on
    k_index_select_cat.py and k_scaled_index_add.py: forward and backward, with and without scaling, float32 and
    float16, rows wider than the kernels' 512-column block;
  - xformers/ops/tiled_matmul.py (`tiled_matmul_out`, and its `tiled_matmul_fwd` / `tiled_matmul_bwd`) on
    tiled_matmul_kernels.py (`_xformers_tiled_matmul_kernel`, autotuned, with the EVEN_K heuristic): grids of up to
    3 x 3 x 3 tiles of different sizes, float32 / float16 / bfloat16, SPLIT_K 1 and SPLIT_K 2 / 4 (atomic adds
    into C zeroed by the configs' pre_hook), EVEN_K, and the backward's products with transposed tiles.

Not covered, absent from this snapshot: xformers/triton/ holds only importing.py (the fused softmax, layer norm
and dropout kernels are gone); sequence_parallel_fused_ops.py has no Triton kernel; the split-K attention
kernels of ops/fmha now live in the `mslk` package (ops/fmha/triton_splitk.py re-exports them). Inputs are small,
with sizes that are not powers of two. xformers is not part of Tegula; point this at a directory that holds its
`xformers/` (a checkout, or a `git archive` of xformers/ops/_triton, xformers/triton, xformers/ops/common.py,
indexing.py, rmsnorm.py, rope_padded.py and tiled_matmul.py):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/xformers_ops.py <xformers source>

`import xformers` loads its C++ extension, so the files are loaded on their own under bare `xformers` packages
(xformers/ops/_triton/__init__.py, xformers/triton/importing.py and xformers/ops/common.py unchanged), and what
they need at module level or in their host code that a CPU machine, or the stand-in `triton` package, lacks is
stood in for (none of these stand-ins is a Triton kernel or is reached by one):

  - xformers._is_triton_available: True (what the real one answers under XFORMERS_ENABLE_TRITON=1, xformers' own
    switch; without CUDA it answers False);
  - xformers.ops.fmha.attn_bias.BlockDiagonalCausalWithOffsetPaddedKeysMask (rope_padded.py's layout argument;
    the real class is mslk's, not in xformers): a class with `from_seqlens(q_seqlen, kv_padding, kv_seqlen)` and
    the fields rope_padded reads: q_seqinfo.seqstart (int32), seqstart_py, max_seqlen; k_seqinfo.seqstart (b *
    kv_padding), seqstart_py and seqlen (int32);
  - xformers.ops._triton.matmul_perf_model (imports Triton's NVIDIA tables from triton.testing and
    triton.runtime.driver): early_config_prune keeps only the config a case pins (its BLOCK_M, BLOCK_N, BLOCK_K,
    SPLIT_K and num_stages; one compile a case on the CPU), estimate_matmul_time gives 0; the autotuner's cache
    is emptied before each case;
  - torch.library.custom_op / register_fake / register_autograd while tiled_matmul.py loads: the op's function
    unchanged, without registering it (the op is registered for CUDA only, and custom ops dispatch through
    torch._dynamo, which imports Triton's compiler backends); the backward is checked by calling the library's
    tiled_matmul_setup_context and tiled_matmul_bwd on a context object;
  - without a GPU: torch.cuda.device (entered around the rms_norm and rope_padded launches with x.device) is a
    null context for a CPU device; torch.cuda.get_device_capability gives (8, 0) (tiled_matmul's
    _should_use_triton); and torch.Tensor.is_cuda reads True while index_select_cat and scaled_index_add run
    (their host functions raise unless every tensor is a CUDA one; Tegula's launcher still places the tensors on
    the CPU, by their DLPack device).

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5 (rope with
internal float64 1e-6; rope computing in float32 at least 2e-7 times the largest position, as its float32 angles
carry that error: 6e-4 for the seqpos case's positions of up to 3000), float16 2e-3 (5e-3 for tiled matmuls,
whose SPLIT_K partial sums are added in float16), bfloat16 1e-2 (2e-2 for tiled matmuls); copies and untouched
cache rows exactly. Prints one line per case (the
largest absolute difference from the reference over the case's outputs, each output's difference, or the first
line of the error) and a summary line.
"""

import contextlib
import importlib
import importlib.util
import math
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: xformers_ops.py <xformers source>")
XF = pathlib.Path(sys.argv[1]).resolve()
for _file in ("ops/_triton/__init__.py", "ops/_triton/rmsnorm_kernels.py", "ops/_triton/rope_padded_kernels.py",
              "ops/_triton/k_index_select_cat.py", "ops/_triton/k_scaled_index_add.py",
              "ops/_triton/tiled_matmul_kernels.py", "ops/rmsnorm.py", "ops/rope_padded.py", "ops/indexing.py",
              "ops/tiled_matmul.py", "ops/common.py", "triton/importing.py"):
    if not (XF / "xformers" / _file).is_file():
        sys.exit(f"{XF} holds no xformers/{_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"


def module(name, path=None, **attrs):
    m = types.ModuleType(name)
    m.__path__ = [str(path)] if path else []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


class _SeqInfo:
    def __init__(self, seqstart, seqlen=None):
        self.seqstart_py = list(seqstart)
        self.seqstart = torch.tensor(seqstart, dtype=torch.int32)
        if seqlen is not None:
            self.seqlen_py = list(seqlen)
            self.seqlen = torch.tensor(seqlen, dtype=torch.int32)
        lens = [b - a for a, b in zip(seqstart, seqstart[1:])]
        self.max_seqlen, self.min_seqlen = max(lens), min(lens)


class BlockDiagonalCausalWithOffsetPaddedKeysMask:
    """The fields rope_padded reads of mslk's class of this name."""

    def __init__(self, q_seqinfo, k_seqinfo):
        self.q_seqinfo, self.k_seqinfo = q_seqinfo, k_seqinfo

    @classmethod
    def from_seqlens(cls, q_seqlen, kv_padding, kv_seqlen):
        starts = [0]
        for n in q_seqlen:
            starts.append(starts[-1] + n)
        return cls(_SeqInfo(starts), _SeqInfo([i * kv_padding for i in range(len(kv_seqlen) + 1)], kv_seqlen))


PINNED = {}  # the tiled matmul config a case keeps: BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_stages


def early_config_prune(configs, named_args, **kwargs):
    return [c for c in configs if all(c.kwargs.get(k) == v for k, v in PINNED.items() if k != "num_stages")
            and c.num_stages == PINNED["num_stages"]]


module("xformers", XF / "xformers", _is_triton_available=lambda: True)
module("xformers.triton", XF / "xformers" / "triton")
module("xformers.ops", XF / "xformers" / "ops")
module("xformers.ops.fmha")
module("xformers.ops.fmha.attn_bias",
       BlockDiagonalCausalWithOffsetPaddedKeysMask=BlockDiagonalCausalWithOffsetPaddedKeysMask)
module("xformers.ops._triton.matmul_perf_model", early_config_prune=early_config_prune,
       estimate_matmul_time=lambda *a, **k: 0.0)
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


def load(name):
    """xformers.ops.<name> from its file."""
    return importlib.import_module("xformers.ops." + name)


def load_tiled_matmul():
    name = "xformers.ops.tiled_matmul"
    if name in sys.modules:
        return sys.modules[name]
    lib = torch.library
    saved = lib.custom_op, lib.register_fake, lib.register_autograd
    lib.custom_op = lambda *a, **k: (lambda fn: fn)
    lib.register_fake = lambda *a, **k: (lambda fn: fn)
    lib.register_autograd = lambda *a, **k: None
    try:
        return importlib.import_module(name)
    finally:
        lib.custom_op, lib.register_fake, lib.register_autograd = saved


torch.manual_seed(0)
results = []


def check(name, case, stages=("",)):
    comparisons_check(results, name, case, stages)


TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}


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
        bias = BlockDiagonalCausalWithOffsetPaddedKeysMask.from_seqlens(q_seqlen=nq, kv_padding=pad, kv_seqlen=kv)
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


width = max(len(r[0]) for r in results)
for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:{width}s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} xformers cases match the torch float64 references")
