"""flash-attention's Triton attention backend (flash_attn/flash_attn_triton_amd, written for ROCm in plain Triton)
on Tegula, through the conformance shim's `triton` package, against float64 references written here from the math
(softmax(Q K^T * scale + masks) V, its gradients by float64 autograd).

Dao-AILab/flash-attention removed the backend in 3f94643f ("Migrate to Triton Backend to Aiter"); its files are
read from that commit's parent, bbe25bac (SOURCES below). Cases run through the backend's own interface functions,
interface_v2's fwd / bwd / varlen_fwd / varlen_bwd / fwd_kvcache, with the arguments flash_attn's Python API gives
them:

  - fwd + bwd (attn_fwd; bwd_kernel_fused_causal / _noncausal and _bwd_preprocess, the default BWD_MODE "fused"):
    head dims 40, 64, 72, 96, 128, sequence lengths 77 / 130 / 257 (masked tails) and seqlen_q != seqlen_k both
    ways (causal rows that see no key: zeros, lse -inf), causal and not, ALiBi slopes (per head and per batch and
    head), MQA and GQA, float16 / bfloat16 / float32, dropout (the keep mask read from the sign bit of the
    returned S_dmask, which the kernel writes as p or -p; the backward regenerates it from the seeds, so its
    gradients against the same mask check that the two agree);
  - the backward's other two modes, "split" (_bwd_kernel_split_dkdv_* and _dq_*) and "fused_atomic"
    (_bwd_kernel_fused_atomic_*), through the module global interface_v2.BWD_MODE the interface passes;
  - sliding windows (forward only: the backward refuses them) with and without causal;
  - varlen_fwd / varlen_bwd through cu_seqlens (sequences of 1 to 257 rows, causal and not, GQA);
  - fwd_kvcache (fwd_decode's _fwd_kernel_splitK and _splitK_reduce; split_k from the library's own heuristic,
    4 to 8 here): cache_seqlens, new keys appended (the cache's rows checked too), causal with several new
    queries, GQA / MQA, ALiBi, sliding window, cache_batch_idx, paged caches through block_table (pages shuffled,
    pages of 16 and 64 rows), rotary embeddings (common.py's _rotary_kernel on q and the new keys, interleaved and
    not, partial rotary dim);
  - expected refusals, the library's own: softcap, fp8 inputs to the FA2 interface, the backward with a sliding
    window, fwd_kvcache with num_splits > 1, and interface_v3's fp8 forward (fwd_prefill's arch gate: FP8 needs
    gfx942 / gfx950).

Result on the CPU backend (2026-12-07, benchmarks/results/2026-12-07-cpu-conformance-flash-attn-triton-amd.txt): 67
of 80 lines match (a case's forward and backward are a line each), 8 are refused as expected and 13 fail by
flash-attention's own bugs, in about 1.5 minutes on two threads from an empty Tegula cache. By family: fwd / bwd
("fused") 24 of 24, the "split" backward 11 of 16 (5 library), "fused_atomic" 8 of 16 (its 8 backward lines
library), sliding-window forwards 4 of 4, varlen 8 of 8, fwd_kvcache 12 of 12. Under TEGULA_DEBUG=1 (bounds-checked)
every line is the same, and no access out of bounds happens but the split bug's below. No Tegula bug was found.

waves_per_eu: attn_fwd's generic config, bwd.py's and fwd_decode.py's configs and the "split" / "fused_atomic"
launches set waves_per_eu (1 or 2), an option of Triton's AMD backend. Triton's NVIDIA backend refuses it at launch
(JITFunction._pack_args: KeyError "Keyword argument waves_per_eu was specified but unrecognised"), and so does Tegula
(E0705; it takes the option's default, 0). So the backend does not run unchanged on NVIDIA either: the first
lines show the refusals with the configs and launches as they are; after them the option is removed from every
autotune config of fwd_prefill.py, fwd_decode.py and bwd.py, and bwd.py's host-launched _bwd_kernel_* drop the
keyword (WithoutWavesPerEu). Nothing else of a config or a kernel changes.

flash-attention's bugs (the LIBRARY_BUGS below; the default "fused" backward has none of them):
  - the "split" backward passes HEAD_DIM_QK, already the padded power of two, as both BLOCK_D_MODEL and
    BLOCK_D_MODEL_POW2, so PADDED_HEAD is False and its kernels load and store the padded columns unmasked: past
    each row, and past the tensor's end on the last (head dims 40 and 72). Run plainly it corrupted the heap (a
    segfault), so those launches run bounds-checked (debug=True) and fail at the first access out of bounds;
  - the "split" backward has no ALiBi: its kernels take no slopes and the impl drops alibi_slopes;
  - the "fused_atomic" backward launches _bwd_kernel_fused_atomic_* without the dk strides the kernels take (four
    positional arguments short; Triton raises the same TypeError), so it cannot run at all.

Not covered: fp8 (the FA2 interface refuses it and fwd_prefill / fwd_decode / bwd refuse it outside gfx942 /
gfx950; interface_v3 was loaded but not run); softcap (refused); the backward with a sliding window (refused);
fwd_kvcache's num_splits > 1 (refused: split_k comes from the library's heuristic, 4 to 8 here); AUTOTUNE's
sweeps; the "rounded" SHAPE_EXPECTATIONS; the new keys' rotated rows in the cache (the output checks them).

Stood in or set, and why:
  - the FLASH_ATTENTION_TRITON_AMD_* environment variables (AUTOTUNE, DEBUG, ENABLE, FWD_..._CONFIG_JSON) are
    removed before utils.py reads them, so the backend takes its fixed configs, no autotune sweep and no
    interpreter (its DEBUG 2 sets TRITON_INTERPRET);
  - the architecture is not stood in: utils.get_arch() reads triton.runtime.driver.active.get_current_target(),
    which on Tegula's CPU driver names the CPU, neither a CDNA nor an RDNA arch, so the backend takes its generic
    configs (forward BLOCK_M = BLOCK_N = 64; decode 64 x 64; the backward's generic ones), FORCE_MASKING off, and
    refuses fp8 (supports_fp8 False), as it does on NVIDIA; is_hip() is False;
  - without a GPU: Tensor.is_cuda reads True and device="cuda" allocations go to the CPU (standins.cuda_claims),
    and torch.cuda.current_device() gives None, the CPU device's index, for the impls' check
    `q.is_cuda and q.device.index == current_device`;
  - `import flash_attn` loads the CUDA extension: the packages import bare (standins.bare_packages), the backend's
    modules from their files unchanged.

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/flash_attn_triton_amd_ops.py \\
        <flash-attention git dir or tree> [-k SUBSTRING] [--json out.json]

Tolerances, relative to the reference's largest magnitude: forward (out) float32 1e-5, float16 2e-3, bfloat16
1e-2; backward (dq, dk, dv) float32 1e-4, float16 1e-2, bfloat16 3e-2 (the kernels round P and dS to the input
dtype before their dots); lse 1e-5 absolute-relative on the rows that see a key, -inf exactly on those that see
none; cache rows and copies exactly. Prints one line per case and stage and the totals.
"""

import argparse
import contextlib
import math
import os
import pathlib
import sys
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

COMMIT = "bbe25bacff9f337568b66e69950e549df9839068"  # the parent of 3f94643f, which removed the backend
SOURCES = {
    COMMIT: tuple(f"flash_attn/flash_attn_triton_amd/{f}.py" for f in (
        "__init__", "utils", "common", "fwd_prefill", "fwd_decode", "bwd", "interface_v2", "interface_v3")),
}

_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path,
                     help="flash-attention's git directory, or a tree holding the files of SOURCES")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()


import git_sources  # noqa: E402

SRC = git_sources.source_tree(ARGS.source, SOURCES, "flash_attn_triton_amd_ops_")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
for _var in ("FLASH_ATTENTION_TRITON_AMD_AUTOTUNE", "FLASH_ATTENTION_TRITON_AMD_DEBUG",
             "FLASH_ATTENTION_TRITON_AMD_ENABLE", "FLASH_ATTENTION_FWD_TRITON_AMD_CONFIG_JSON"):
    os.environ.pop(_var, None)

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check, exact, refusal, report  # noqa: E402
import standins  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

if DEVICE == "cpu":
    torch.cuda.current_device = lambda: None  # the CPU device's index, which the impls compare q.device.index with
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda device: (contextlib.nullcontext() if device is None or torch.device(device).type == "cpu"
                                        else _cuda_device(device))  # common.py's rotary: cuda.device(x.device.index)

standins.bare_packages(SRC, "flash_attn")
import importlib  # noqa: E402

utils = importlib.import_module("flash_attn.flash_attn_triton_amd.utils")
iv2 = importlib.import_module("flash_attn.flash_attn_triton_amd.interface_v2")
iv3 = importlib.import_module("flash_attn.flash_attn_triton_amd.interface_v3")
for _mod in (utils, iv2, iv3):
    assert pathlib.Path(_mod.__file__).is_relative_to(SRC), f"another copy: {_mod.__file__}"
assert not utils.get_arch().is_cdna and not utils.get_arch().is_rdna and not utils.AUTOTUNE

results = []

fwd_prefill = importlib.import_module("flash_attn.flash_attn_triton_amd.fwd_prefill")
fwd_decode = importlib.import_module("flash_attn.flash_attn_triton_amd.fwd_decode")
bwd_module = importlib.import_module("flash_attn.flash_attn_triton_amd.bwd")
AUTOTUNED = [obj for mod in (fwd_prefill, fwd_decode, bwd_module) for obj in vars(mod).values()
             if isinstance(obj, triton.runtime.Autotuner)]
WAVES = sorted({c.kwargs.get("waves_per_eu") for a in AUTOTUNED for c in a.configs} - {None})


def strip_waves_per_eu():
    """Removes AMD's waves_per_eu from every config of the backend's autotuned kernels (see the docstring)."""
    for tuner in AUTOTUNED:
        for config in tuner.configs:
            config.kwargs.pop("waves_per_eu", None)
        if hasattr(tuner, "cache"):
            tuner.cache.clear()


BOUNDS_CHECKED = False  # bwd.py's host-launched kernels run bounds-checked (the launch option debug=True)


class WithoutWavesPerEu:
    """One of bwd.py's host-launched kernels whose launches drop the waves_per_eu keyword the impl passes (the
    "split" and "fused_atomic" modes pass waves_per_eu=1 at every launch); the kernel itself is unchanged."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        launch = self.kernel[grid]
        extra = {"debug": True} if BOUNDS_CHECKED else {}
        return lambda *args, **kwargs: launch(*args, **{k: v for k, v in kwargs.items() if k != "waves_per_eu"},
                                              **extra)

    def __getattr__(self, name):
        return getattr(self.kernel, name)


def launches_without_waves_per_eu():
    for name in [n for n in vars(bwd_module) if n.startswith("_bwd_kernel_")]:
        setattr(bwd_module, name, WithoutWavesPerEu(getattr(bwd_module, name)))


def check(name, run, stages=("forward", "backward")):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    with standins.cuda_claims(DEVICE):
        comparisons_check(results, name, run, stages)


def expect_refusal(name, launch, expected):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    with standins.cuda_claims(DEVICE):
        refusal(results, name, launch, expected)


F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32

# The backend's configs unchanged: attn_fwd's generic config sets waves_per_eu 2, an option of Triton's AMD
# backend, which Triton's NVIDIA backend refuses at launch (KeyError: "Keyword argument waves_per_eu was specified
# but unrecognised") and Tegula too (E0705). Every later case runs with the option removed from the configs.
expect_refusal("fwd f16 d64 s64/64 with the backend's configs unchanged (waves_per_eu 2)",
               lambda: iv2.fwd(*[torch.randn(1, 64, 2, 64).to(F16) for _ in range(3)], None, None, 0.0, 0.125,
                               False, -1, -1, 0.0, False, None),
               r"E0705.*waves_per_eu=2")
strip_waves_per_eu()
for _mode in ("split", "fused_atomic"):
    def _bwd_in_mode(mode=_mode):
        q, k, v, o, do = [torch.randn(1, 64, 2, 64).to(F16) for _ in range(5)]
        iv2.BWD_MODE = mode
        try:
            iv2.bwd(do, q, k, v, o, torch.zeros(1, 2, 64), None, None, None, None, 0.0, 0.125, False, -1, -1, 0.0,
                    False, None, None)
        finally:
            iv2.BWD_MODE = "fused"
    expect_refusal(f"bwd[{_mode}] f16 d64 s64/64 as the impl launches it (waves_per_eu=1)", _bwd_in_mode,
                   r"E0705.*waves_per_eu=1")
launches_without_waves_per_eu()

TOL_FWD = {F32: 1e-5, F16: 2e-3, BF16: 1e-2}
TOL_BWD = {F32: 1e-4, F16: 1e-2, BF16: 3e-2}
TOL_LSE = 1e-5
# fwd_decode.py rounds q * sm_scale * log2(e) to the input dtype before its dot (`q = (q * qk_scale).to(q.dtype)`),
# so its lse is that of the rounded scores
TOL_LSE_DECODE = {F32: 1e-5, F16: 1e-4, BF16: 5e-4}


# --- references ----------------------------------------------------------------------------------------------------

def ref_attention(q, k, v, scale, causal=False, window=(-1, -1), alibi=None, keep=None, p_drop=0.0):
    """float64 attention of one batch of bshd tensors (q [B, Sq, Hq, D], k / v [B, Sk, Hk, D]), keys aligned to the
    bottom right as flash-attention does (query i sees key j when j <= i + Sk - Sq under causal). alibi: [B, Hq]
    slopes, bias -slope * |i + Sk - Sq - j|. keep: [B, Hq, Sq, Sk] booleans of dropout. Returns (out, lse) with
    out [B, Sq, Hq, D] (rows that see no key: zeros) and lse [B, Hq, Sq] (-inf there)."""
    B, Sq, Hq, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    k = k.repeat_interleave(Hq // Hk, dim=2)
    v = v.repeat_interleave(Hq // Hk, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    i = torch.arange(Sq, dtype=torch.float64)[:, None]
    j = torch.arange(Sk, dtype=torch.float64)[None, :]
    diag = i + Sk - Sq
    if alibi is not None:
        s = s - alibi.double()[:, :, None, None] * (diag - j).abs()
    left, right = window
    if causal:
        right = 0
    masked = torch.zeros(Sq, Sk, dtype=torch.bool)
    if right >= 0:
        masked |= j > diag + right
    if left >= 0:
        masked |= j < diag - left
    s = s.masked_fill(masked, -math.inf)
    m = s.amax(-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    l = e.sum(-1, keepdim=True)
    p = e / torch.where(l == 0, torch.ones_like(l), l)
    lse = (m + torch.log(l)).squeeze(-1)
    if keep is not None:
        p = p * keep / (1 - p_drop)
    out = torch.einsum("bhqk,bkhd->bqhd", p, v)
    return out, lse


def lse_comparison(got, want, tol=TOL_LSE):
    """lse on rows that see a key (within tol of the largest |lse|); -inf exactly on the rows that see none."""
    none = torch.isinf(want)
    got_finite = got.double()[~none]
    comps = {"lse": (got_finite, want[~none], tol)}
    if none.any():
        comps["lse rows seeing no key"] = exact(torch.isneginf(got[none]), torch.ones_like(got[none], dtype=torch.bool))
    return comps


def grads(fn, inputs, dout):
    """float64 gradients of fn(*inputs) against dout."""
    leaves = [x.detach().double().requires_grad_() for x in inputs]
    out = fn(*leaves)
    out.backward(dout.double())
    return [x.grad for x in leaves]


# --- fwd / bwd ---------------------------------------------------------------------------------------------------

def dense(B=2, Sq=130, Sk=130, Hq=2, Hk=2, D=64, dtype=F16, causal=False, window=(-1, -1), alibi=None,
          p_drop=0.0, mode=None, backward=True):
    def run():
        global BOUNDS_CHECKED
        q = torch.randn(B, Sq, Hq, D).to(dtype)
        k = torch.randn(B, Sk, Hk, D).to(dtype)
        v = torch.randn(B, Sk, Hk, D).to(dtype)
        slopes = None
        if alibi == "heads":
            slopes = torch.rand(Hq, dtype=F32) * 0.3
        elif alibi == "batch":
            slopes = torch.rand(B, Hq, dtype=F32) * 0.3
        scale = D ** -0.5
        out, lse, sd_mask, rng = iv2.fwd(q, k, v, None, slopes, p_drop, scale, causal, window[0], window[1], 0.0,
                                         p_drop > 0, None)
        keep = None
        if p_drop > 0:
            keep = ~torch.signbit(sd_mask[:, :, :Sq, :Sk])
        al = None if slopes is None else (slopes if slopes.dim() == 2 else slopes[None].expand(B, Hq))
        fn = lambda q_, k_, v_: ref_attention(q_, k_, v_, scale, causal, window, al, keep, p_drop)[0]
        want, want_lse = ref_attention(q.double(), k.double(), v.double(), scale, causal, window, al, keep, p_drop)
        comps = {"out": (out, want, TOL_FWD[dtype])}
        comps.update(lse_comparison(lse, want_lse))
        if p_drop > 0:
            i, j = torch.arange(Sq)[:, None], torch.arange(Sk)[None, :]
            visible = (j <= i + Sk - Sq) if causal else torch.ones(Sq, Sk, dtype=torch.bool)
            kept = keep[:, :, visible].double().mean().item()  # the kernel stores no score where the mask hides it
            if not abs(kept - (1 - p_drop)) < 0.05:
                raise AssertionError(f"dropout kept {kept:.3f} of the scores, expected about {1 - p_drop}")
        yield comps
        if not backward:
            return
        dout = torch.randn(B, Sq, Hq, D).to(dtype)
        saved = iv2.BWD_MODE
        if mode is not None:
            iv2.BWD_MODE = mode
        # "split" with a head dim that is not a power of two reads and writes past the rows (SPLIT_PADDED below):
        # bounds-checked, its first access out of bounds stops the launch instead of corrupting the heap
        BOUNDS_CHECKED = mode == "split" and D & (D - 1) != 0
        try:
            dq, dk, dv, _ = iv2.bwd(dout, q, k, v, out, lse, None, None, None, slopes, p_drop, scale, causal,
                                    window[0], window[1], 0.0, False, None, rng)
        finally:
            iv2.BWD_MODE = saved
            BOUNDS_CHECKED = False
        wq, wk, wv = grads(fn, (q, k, v), dout)
        t = TOL_BWD[dtype]
        yield {"dq": (dq, wq, t), "dk": (dk, wk, t), "dv": (dv, wv, t)}
    return run


check("fwd/bwd f16 d64 s130/130", dense())
check("fwd/bwd f16 d64 s130/130 causal", dense(causal=True))
check("fwd/bwd f16 d40 s77/130 causal", dense(Sq=77, Sk=130, D=40, causal=True))
check("fwd/bwd bf16 d72 s130/77 causal (rows seeing no key)", dense(Sq=130, Sk=77, D=72, dtype=BF16, causal=True))
check("fwd/bwd f32 d96 s257/257", dense(B=1, Sq=257, Sk=257, D=96, dtype=F32))
check("fwd/bwd f32 d40 s77/130 causal", dense(B=1, Sq=77, Sk=130, D=40, dtype=F32, causal=True))
check("fwd/bwd bf16 d128 s64/257 GQA 4/2", dense(B=1, Sq=64, Sk=257, Hq=4, Hk=2, D=128, dtype=BF16))
check("fwd/bwd f16 d64 s130/77 MQA 4/1 causal", dense(Sq=130, Sk=77, Hq=4, Hk=1, causal=True))
check("fwd/bwd f16 d64 s130/130 alibi per head causal", dense(alibi="heads", causal=True))
check("fwd/bwd f16 d72 s77/130 alibi per batch and head", dense(Sq=77, D=72, alibi="batch"))
check("fwd/bwd f16 d64 s77/130 dropout 0.2", dense(Sq=77, p_drop=0.2))
check("fwd/bwd f16 d40 s130/130 dropout 0.3 causal", dense(D=40, p_drop=0.3, causal=True))
for _mode in ("split", "fused_atomic"):
    check(f"fwd/bwd[{_mode}] f16 d64 s130/130", dense(mode=_mode))
    check(f"fwd/bwd[{_mode}] f16 d72 s77/130 causal", dense(Sq=77, D=72, causal=True, mode=_mode))
    check(f"fwd/bwd[{_mode}] f32 d40 s130/77 GQA 4/2 causal",
          dense(B=1, Sq=130, Sk=77, Hq=4, Hk=2, D=40, dtype=F32, causal=True, mode=_mode))
    check(f"fwd/bwd[{_mode}] f16 d64 s77/130 causal", dense(Sq=77, causal=True, mode=_mode))
    check(f"fwd/bwd[{_mode}] f16 d72 s130/130", dense(D=72, mode=_mode))
    check(f"fwd/bwd[{_mode}] f16 d64 s77/130 alibi", dense(Sq=77, alibi="heads", mode=_mode))
    check(f"fwd/bwd[{_mode}] f16 d64 s128/128 alibi", dense(Sq=128, Sk=128, alibi="heads", mode=_mode))
    check(f"fwd/bwd[{_mode}] f16 d64 s77/130 dropout 0.2", dense(Sq=77, p_drop=0.2, mode=_mode))
check("fwd f16 d64 s130/130 window (32, 0)", dense(window=(32, 0), backward=False), ("forward",))
check("fwd f16 d72 s77/130 window (16, 8)", dense(Sq=77, D=72, window=(16, 8), backward=False), ("forward",))
check("fwd bf16 d64 s130/77 window (-1, 8)", dense(Sq=130, Sk=77, dtype=BF16, window=(-1, 8), backward=False),
      ("forward",))
check("fwd f16 d64 s130/130 causal window (40, 0)", dense(causal=True, window=(40, 0), backward=False),
      ("forward",))


# --- varlen ---------------------------------------------------------------------------------------------------------

def varlen(q_lens, k_lens, Hq=2, Hk=2, D=72, dtype=F16, causal=False, alibi=False):
    def run():
        cq = torch.tensor([0] + q_lens).cumsum(0).to(torch.int32)
        ck = torch.tensor([0] + k_lens).cumsum(0).to(torch.int32)
        q = torch.randn(sum(q_lens), Hq, D).to(dtype)
        k = torch.randn(sum(k_lens), Hk, D).to(dtype)
        v = torch.randn(sum(k_lens), Hk, D).to(dtype)
        slopes = torch.rand(len(q_lens), Hq, dtype=F32) * 0.3 if alibi else None
        scale = D ** -0.5
        out, lse, _, rng = iv2.varlen_fwd(q, k, v, None, cq, ck, None, None, None, slopes, max(q_lens), max(k_lens),
                                          0.0, scale, False, causal, -1, -1, 0.0, False, None)

        def fn(q_, k_, v_):
            outs = []
            for b in range(len(q_lens)):
                sl_q, sl_k = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
                al = None if slopes is None else slopes[b:b + 1]
                outs.append(ref_attention(q_[sl_q][None], k_[sl_k][None], v_[sl_k][None], scale, causal,
                                          alibi=al)[0][0])
            return torch.cat(outs)
        want = fn(q.double(), k.double(), v.double())
        want_lse = torch.cat([ref_attention(q.double()[cq[b]:cq[b + 1]][None], k.double()[ck[b]:ck[b + 1]][None],
                                            v.double()[ck[b]:ck[b + 1]][None], scale, causal,
                                            alibi=None if slopes is None else slopes[b:b + 1])[1][0]
                              for b in range(len(q_lens))], dim=1)
        comps = {"out": (out, want, TOL_FWD[dtype])}
        comps.update(lse_comparison(lse, want_lse))
        yield comps
        dout = torch.randn_like(q)
        dq, dk, dv, _ = iv2.varlen_bwd(dout, q, k, v, out, lse, None, None, None, cq, ck, slopes, max(q_lens),
                                       max(k_lens), 0.0, scale, False, causal, -1, -1, 0.0, False, None, rng)
        wq, wk, wv = grads(fn, (q, k, v), dout)
        t = TOL_BWD[dtype]
        yield {"dq": (dq, wq, t), "dk": (dk, wk, t), "dv": (dv, wv, t)}
    return run


check("varlen f16 d72 q 77/1/130 k 130/40/77", varlen([77, 1, 130], [130, 40, 77]))
check("varlen f16 d72 q 77/1/130 k 130/40/77 causal", varlen([77, 1, 130], [130, 40, 77], causal=True))
check("varlen bf16 d96 q 64/257 k 64/257 GQA 4/2 causal", varlen([64, 257], [64, 257], 4, 2, 96, BF16, True))
check("varlen f32 d40 q 33/100 k 90/20 alibi", varlen([33, 100], [90, 20], D=40, dtype=F32, alibi=True))


# --- fwd_kvcache (fwd_decode) --------------------------------------------------------------------------------------

def rotate(x, cos, sin, pos, interleaved):
    """float64 rotary embedding of x [..., S, H, D] at positions pos [S] (cos / sin [*, rotary_dim / 2])."""
    rd = cos.shape[1] * 2
    c, s = cos.double()[pos][:, None, :], sin.double()[pos][:, None, :]
    out = x.clone()
    r = x[..., :rd]
    if interleaved:
        a, b = r[..., 0::2], r[..., 1::2]
        out[..., 0:rd:2], out[..., 1:rd:2] = a * c - b * s, a * s + b * c
    else:
        a, b = r[..., :rd // 2], r[..., rd // 2:]
        out[..., :rd // 2], out[..., rd // 2:rd] = a * c - b * s, a * s + b * c
    return out


def kvcache(B=2, cache=300, lens=(77, 257), Sq=1, new=0, Hq=4, Hk=4, D=64, dtype=F16, causal=False,
            window=(-1, -1), alibi=False, batch_idx=False, page=None, rotary=None):
    """rotary: (rotary_dim, interleaved)."""
    def run():
        lens_t = torch.tensor(lens, dtype=torch.int32)
        q = torch.randn(B, Sq, Hq, D).to(dtype)
        nb = B + 1 if batch_idx else B
        if page is None:
            kc = torch.randn(nb, cache, Hk, D).to(dtype)
            vc = torch.randn(nb, cache, Hk, D).to(dtype)
            table = None
        else:
            per_seq = -(-cache // page)
            n_pages = B * per_seq + 3  # pages no sequence uses
            kc = torch.randn(n_pages, page, Hk, D).to(dtype)
            vc = torch.randn(n_pages, page, Hk, D).to(dtype)
            table = torch.randperm(n_pages)[:B * per_seq].reshape(B, per_seq).to(torch.int32)
        k0, v0 = kc.clone(), vc.clone()
        kn = torch.randn(B, new, Hk, D).to(dtype) if new else None
        vn = torch.randn(B, new, Hk, D).to(dtype) if new else None
        cbi = torch.tensor([2, 0], dtype=torch.int32)[:B] if batch_idx else None
        slopes = torch.rand(B, Hq, dtype=F32) * 0.3 if alibi else None
        cos = sin = None
        if rotary is not None:
            rd, _ = rotary
            ang = torch.rand(cache, rd // 2, dtype=torch.float64) * 2 * math.pi
            cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
        scale = D ** -0.5
        seqlens = lens_t.clone()
        out, lse = iv2.fwd_kvcache(q, kc, vc, kn, vn, seqlens, cos, sin, cbi, None, table, slopes, None, scale,
                                   causal, window[0], window[1], 0.0,
                                   rotary[1] if rotary is not None else False, 0)
        outs, lses, comps = [], [], {}
        kd, vd = k0.double(), v0.double()
        for b in range(B):
            L = lens[b]
            if page is None:
                row = cbi[b].item() if batch_idx else b
                keys, vals = kd[row, :L], vd[row, :L]
            else:
                keys = kd[table[b].long()].reshape(-1, Hk, D)[:L]
                vals = vd[table[b].long()].reshape(-1, Hk, D)[:L]
            qb = q[b].double()
            if new:
                knb, vnb = kn[b].double(), vn[b].double()
                if rotary is not None:
                    knb = rotate(knb, cos, sin, torch.arange(L, L + new), rotary[1])
                keys, vals = torch.cat([keys, knb]), torch.cat([vals, vnb])
            if rotary is not None:
                if causal or window != (-1, -1):
                    qpos = torch.arange(L, L + Sq)
                else:
                    qpos = torch.full((Sq,), L)
                qb = rotate(qb, cos, sin, qpos, rotary[1])
            o, l_ = ref_attention(qb[None], keys[None], vals[None], scale, causal, window,
                                  None if slopes is None else slopes[b:b + 1])
            outs.append(o[0])
            lses.append(l_[0])
        tol = TOL_FWD[dtype] if rotary is None else 2 * TOL_FWD[dtype]  # q and the new keys rotated in dtype
        comps["out"] = (out, torch.stack(outs), tol)
        comps.update(lse_comparison(lse, torch.stack(lses), TOL_LSE_DECODE[dtype]))
        if new:
            comps["cache_seqlens"] = exact(seqlens, lens_t + new)
            want_k, want_v = k0.clone(), v0.clone()
            for b in range(B):
                for i in range(new):
                    pos = lens[b] + i
                    kv_new = (kn[b, i] if rotary is None else None), vn[b, i]
                    if page is None:
                        idx = (cbi[b].item() if batch_idx else b, pos)
                    else:
                        idx = (table[b, pos // page].item(), pos % page)
                    if rotary is None:
                        want_k[idx] = kv_new[0]
                    want_v[idx] = kv_new[1]
            if rotary is None:
                comps["k_cache"] = exact(kc, want_k)
            comps["v_cache"] = exact(vc, want_v)
        yield comps
    return run


KV = ("forward",)
check("kvcache f16 d64 cache 300 lens 77/257 q1", kvcache(), KV)
check("kvcache f16 d40 cache 300 lens 77/257 q1 MQA 4/1", kvcache(Hk=1, D=40), KV)
check("kvcache bf16 d72 cache 200 lens 130/1 q4 causal GQA 4/2", kvcache(cache=200, lens=(130, 1), Sq=4, Hk=2,
                                                                         D=72, dtype=BF16, causal=True), KV)
check("kvcache f16 d64 lens 77/250 q3 new 3 causal (appended)", kvcache(Sq=3, new=3, causal=True), KV)
check("kvcache f32 d96 lens 100/7 q2 new 2 causal", kvcache(lens=(100, 7), Sq=2, new=2, D=96, dtype=F32,
                                                             causal=True), KV)
check("kvcache f16 d64 lens 77/257 q1 alibi", kvcache(alibi=True), KV)
check("kvcache f16 d64 lens 200/257 q2 causal window (50, 0)", kvcache(lens=(200, 257), Sq=2, causal=True,
                                                                       window=(50, 0)), KV)
check("kvcache f16 d64 lens 77/257 q1 cache_batch_idx", kvcache(batch_idx=True), KV)
check("kvcache f16 d64 paged 64 lens 77/257 q1", kvcache(page=64), KV)
check("kvcache f16 d72 paged 16 lens 77/250 q2 new 2 causal GQA 4/2", kvcache(lens=(77, 250), Sq=2, new=2, Hk=2,
                                                                              D=72, causal=True, page=16), KV)
check("kvcache f16 d64 lens 77/250 q3 new 3 causal rotary 32", kvcache(Sq=3, new=3, causal=True,
                                                                       lens=(77, 250), rotary=(32, False)), KV)
check("kvcache f16 d64 lens 77/250 q1 new 1 rotary 64 interleaved", kvcache(Sq=1, new=1, lens=(77, 250),
                                                                            rotary=(64, True)), KV)


# --- expected refusals (the library's) -----------------------------------------------------------------------------

def _qkv(dtype=F16, B=1, S=64, H=2, D=64):
    return [torch.randn(B, S, H, D).to(dtype) for _ in range(3)]


expect_refusal("fwd softcap 30 (refused by the FA2 interface)",
               lambda: iv2.fwd(*_qkv(), None, None, 0.0, 0.125, False, -1, -1, 30.0, False, None),
               r"NotImplementedError: softcap is not supported")
expect_refusal("fwd fp8 e4m3 (refused by the FA2 interface)",
               lambda: iv2.fwd(*_qkv(torch.float8_e4m3fn), None, None, 0.0, 0.125, False, -1, -1, 0.0, False, None),
               r"NotImplementedError: FP8 tensors are not supported")
expect_refusal("bwd window (32, 0) (refused by the FA2 interface)",
               lambda: iv2.bwd(*_qkv(), *_qkv()[:2], torch.zeros(1, 2, 64), None, None, None, None, 0.0, 0.125,
                               False, 32, 0, 0.0, False, None, None),
               r"NotImplementedError: Sliding window attention is not yet supported")
expect_refusal("fwd_kvcache num_splits 4 (refused by the FA2 interface)",
               lambda: iv2.fwd_kvcache(*_qkv(), None, None, None, None, None, None, None, None, None, None, 0.125,
                                       False, -1, -1, 0.0, False, 4),
               r"NotImplementedError: num_splits > 1 not supported")
expect_refusal("fwd_prefill fp8 e4m3 (arch gate: fp8 needs gfx942 / gfx950)",
               lambda: importlib.import_module("flash_attn.flash_attn_triton_amd.fwd_prefill")
               .attention_forward_prefill_triton_impl(
                   *_qkv(torch.float8_e4m3fn), torch.zeros(1, 64, 2, 64, dtype=F16), torch.zeros(1, 2, 64), None,
                   0.125, None, False, -1, -1, None, "bshd", None, None, 64, 64, 0.0, None, None, False, True,
                   None, None, None),
               r"RuntimeError: .* does not support FP8")


SPLIT_PADDED = ("bwd.py's \"split\" backward passes the padded head dim as both BLOCK_D_MODEL and "
                "BLOCK_D_MODEL_POW2 (HEAD_DIM_QK, already rounded up to a power of two), so PADDED_HEAD is False and "
                "_bwd_dkdv_inner_split / _bwd_dq_inner_split load q, k, v, do and store dk, dv, dq over the padded "
                "columns unmasked: past each row, and past the tensor's end on the last one (run bounds-checked)")
SPLIT_ALIBI = ("bwd.py's \"split\" backward has no ALiBi: its kernels take no slopes and the impl drops "
               "alibi_slopes, so the gradients are those without the bias")
ATOMIC_ARGS = ("bwd.py's \"fused_atomic\" backward launches _bwd_kernel_fused_atomic_* without the four dk strides "
               "(stride_dkb ... stride_dkk) the kernels take, so every later argument shifts by four and the last four "
               "are missing (Triton raises the same TypeError)")
LIBRARY_BUGS = {}
for _mode, _cases in (("split", ("f16 d72 s77/130 causal", "f32 d40 s130/77 GQA 4/2 causal", "f16 d72 s130/130",
                                 "f16 d64 s77/130 alibi", "f16 d64 s128/128 alibi")),
                      ("fused_atomic", ("f16 d64 s130/130", "f16 d72 s77/130 causal", "f32 d40 s130/77 GQA 4/2 causal",
                                        "f16 d64 s77/130 causal", "f16 d72 s130/130", "f16 d64 s77/130 alibi",
                                        "f16 d64 s128/128 alibi", "f16 d64 s77/130 dropout 0.2"))):
    for _case in _cases:
        LIBRARY_BUGS[f"fwd/bwd[{_mode}] {_case} backward"] = (
            ATOMIC_ARGS if _mode == "fused_atomic" else SPLIT_ALIBI if "alibi" in _case else SPLIT_PADDED)
sys.exit(report(results, ARGS.json, library=LIBRARY_BUGS, library_name="flash-attention"))
