"""NVIDIA TransformerEngine's Triton kernels (transformer_engine/common/triton, launched through the PyTorch wrappers
in transformer_engine/pytorch/triton) on Tegula, through the conformance shim's `triton` package, against torch
float64 or exact references written here from the math:

  - permutation.py (MoE token permutation): `make_row_id_map` (`_row_id_map_pass_1_kernel`'s per-block tl.cumsum,
    `_row_id_map_pass_2_kernel`'s prefix over the workspace, `_row_id_map_pass_3_kernel`'s bitonic argsort built from
    reshapes, bitcasts and xors, with `triton.language.standard._log2` and `core.get_int_dtype` under
    `triton.constexpr_function`), compared exactly; `permute_with_mask_map` (`_permute_kernel`, with and without
    probs, FP8-style scales and fused padding offsets), `unpermute_with_mask_map` (`_unpermute_kernel`, with and
    without merging probs, with permuted probs, fused unpadding), `unpermute_with_mask_map_bwd_with_merging_probs`
    (`_unpermute_bwd_with_merging_probs_kernel`), `make_chunk_sort_map` (`_make_chunk_sort_map_kernel`, with
    tl.argmax, and padding tokens past the splits) and `sort_chunks_by_map` (`_sort_chunks_by_map_kernel`, forward
    and backward, with probs); float32 and bfloat16, copies compared exactly and weighted sums in float64;
  - cross_entropy.py: `cross_entropy_forward` (`online_softmax_kernel`, `cross_entropy_kernel`) and
    `cross_entropy_backward` (`element_mul_kernel`) against torch's float64 cross entropy and its gradient, with
    mean and per-token losses, label smoothing, ignore_idx, float32 and bfloat16 logits, V not a power of two and
    V over the 32768-column block (the wrapper's chunked loop);
  - pad.py: `pad_columnwise_scale_inv` (`zero_pad_kernel`, constexpr sizes), exact;
  - grouped_dbias_dscales.py: `compute_grouped_dbias` and `compute_grouped_dbias_dscales` (`_grouped_dbias_kernel`,
    float32 tl.atomic_add over row splits, groups of uneven sizes and an empty group).

Sizes are not powers of two (e.g. 37 or 203 tokens, 7 experts, hidden 300).

Not covered: mhc.py (manifold hyper-connections: its PyTorch wrapper imports TransformerEngine's compiled
cpp_extensions.gemm, and its kernels use tensor descriptors and TMA allocators when the GPU has them); the JAX
wrappers (transformer_engine/jax/triton_extensions), which launch the same common/triton kernels.

TransformerEngine is not part of Tegula; point this at a checkout (a directory holding transformer_engine/common/triton
and transformer_engine/pytorch/triton; written against commit d0067d0da6cb01811b8072a7d304f0e00344ce2b of
2026-08-22; `git archive HEAD transformer_engine/common/triton transformer_engine/pytorch/triton` will do):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/transformer_engine_ops.py <TransformerEngine>

Stand-ins (none is a Triton kernel or reached from one):

  - `transformer_engine`, `transformer_engine.common` and `transformer_engine.pytorch` are bare packages (their
    __init__ loads the compiled libtransformer_engine and CUDA), and `transformer_engine.pytorch.triton` too (its
    __init__ imports mhc, which needs the compiled GEMM bindings); the kernel files and their wrappers load unchanged
    from the checkout under those names;
  - torch.empty / torch.zeros map device="cuda" to TEGULA_CONFORMANCE_DEVICE (the permutation wrappers allocate so).

Autotuning: the permutation kernels' autotuner (seven BLOCK_SIZE configs, wrapped in permutation.py) is pinned to
BLOCK_SIZE 128 and pad.py's zero_pad_kernel (four configs) to its first (128 x 128), by setting the autotuner's
`configs` to that one config of its own list; the other kernels take their block sizes from the wrappers.

A case passes when every output is within tol * (the reference's largest magnitude): 0 for copies, maps and
padding (exact), float32 1e-5, bfloat16 1e-2 (outputs rounded to bfloat16).

Prints one line per case (the largest absolute difference from the reference over the case's outputs, each
output's difference, or the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set.
"""

import importlib
import os
import pathlib
import sys
import types
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "-k"):
    sys.exit("usage: transformer_engine_ops.py <TransformerEngine checkout> [-k SUBSTRING]")
TE = pathlib.Path(sys.argv[1]).resolve()
ONLY = sys.argv[3] if len(sys.argv) == 4 else None
for _file in ("common/triton/permutation.py", "common/triton/cross_entropy.py", "common/triton/pad.py",
              "common/triton/grouped_dbias_dscales.py", "pytorch/triton/permutation.py",
              "pytorch/triton/cross_entropy.py", "pytorch/triton/pad.py", "pytorch/triton/grouped_dbias_dscales.py"):
    if not (TE / "transformer_engine" / _file).is_file():
        sys.exit(f"{TE} holds no transformer_engine/{_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning)

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

for _name, _path in (("transformer_engine", TE / "transformer_engine"),
                     ("transformer_engine.common", TE / "transformer_engine" / "common"),
                     ("transformer_engine.common.triton", TE / "transformer_engine" / "common" / "triton"),
                     ("transformer_engine.pytorch", TE / "transformer_engine" / "pytorch"),
                     ("transformer_engine.pytorch.triton", TE / "transformer_engine" / "pytorch" / "triton")):
    _pkg = types.ModuleType(_name)
    _pkg.__path__ = [str(_path)]
    sys.modules[_name] = _pkg

if DEVICE != "cuda":
    def _on_device(alloc):
        def wrapped(*args, device=None, **kwargs):
            """torch allocation with device="cuda" -> TEGULA_CONFORMANCE_DEVICE."""
            if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
                device = DEVICE
            return alloc(*args, device=device, **kwargs)
        return wrapped

    torch.empty = _on_device(torch.empty)
    torch.zeros = _on_device(torch.zeros)

kperm = importlib.import_module("transformer_engine.common.triton.permutation")
kpad = importlib.import_module("transformer_engine.common.triton.pad")
perm = importlib.import_module("transformer_engine.pytorch.triton.permutation")
ce = importlib.import_module("transformer_engine.pytorch.triton.cross_entropy")
pad = importlib.import_module("transformer_engine.pytorch.triton.pad")
dbias = importlib.import_module("transformer_engine.pytorch.triton.grouped_dbias_dscales")


def pin(tuner, **want):
    """Keeps the first config of the tuner's own list whose meta-parameters match want."""
    match = [c for c in tuner.configs if all(c.kwargs.get(k) == v for k, v in want.items())]
    if not match:
        raise LookupError(f"no config of {tuner!r} has {want}")
    tuner.configs = match[:1]
    return match[0]


PINNED = []
for _kernel in ("_permute_kernel", "_unpermute_kernel", "_unpermute_bwd_with_merging_probs_kernel",
                "_sort_chunks_by_map_kernel"):
    _k = getattr(kperm, _kernel)
    if hasattr(_k, "configs"):
        pin(_k, BLOCK_SIZE=128)
        PINNED.append(_kernel)
pin(kpad.zero_pad_kernel, BLOCK_M=128, BLOCK_N=128)

# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
BF16, F32 = torch.bfloat16, torch.float32
TOL = {F32: 1e-5, BF16: 1e-2}


def check(name, case, stages=("",)):
    if ONLY is None or ONLY in name:
        comparisons_check(results, name, case, stages)


def routing(T, E, k):
    """A [T, E] bool routing map with k experts a token (some tokens routed to fewer, one to none)."""
    scores = torch.rand(T, E)
    top = scores.topk(k, dim=1).indices
    rmap = torch.zeros(T, E, dtype=torch.bool)
    rmap.scatter_(1, top, True)
    rmap[torch.rand(T) < 0.2, 0] = False
    rmap[T // 2] = False
    return rmap


def row_id_ref(rmap):
    """dst[t, e]: the permuted row of token t for expert e (experts in order, tokens in order within), -1 if none;
    and TE's row_id_map layout ([dst rows descending, expert ids, n_routed])."""
    T, E = rmap.shape
    r = rmap.T.reshape(-1).long()
    dst = (torch.cumsum(r, 0) - 1).reshape(E, T).T
    dst = torch.where(rmap, dst, -1)
    out = torch.full((T, 2 * E + 1), 0, dtype=torch.int64)
    for t in range(T):
        es = rmap[t].nonzero().flatten()
        rows = dst[t, es]
        order = torch.argsort(rows, descending=True)
        n = es.numel()
        out[t, :n] = rows[order]
        out[t, E:E + n] = es[order]
        out[t, 2 * E] = n
    return dst, out


def masked_map(got, rmap):
    """The row_id_map entries TE defines (past n_routed they are left as they were)."""
    T, E = rmap.shape
    n = rmap.sum(1)
    keep = torch.zeros(T, 2 * E + 1, dtype=torch.bool)
    ar = torch.arange(E)
    keep[:, :E] = ar[None, :] < n[:, None]
    keep[:, E:2 * E] = ar[None, :] < n[:, None]
    keep[:, 2 * E] = True
    return torch.where(keep, got.long(), 0)


def row_id_map_case(T, E, k):
    def case():
        rmap = routing(T, E, k)
        got = perm.make_row_id_map(rmap.to(torch.int32), T, E)
        _, want = row_id_ref(rmap)
        yield {"row_id_map": (masked_map(got, rmap), want, 0)}
    return case


check("make_row_id_map T=37 E=7 k=2", row_id_map_case(37, 7, 2))
check("make_row_id_map T=2500 E=5 k=3 (3 token blocks)", row_id_map_case(2500, 5, 3))
check("make_row_id_map T=203 E=16 k=4", row_id_map_case(203, 16, 4))


def permute_case(T, E, k, H, dtype, probs=False, scale=False, pad_to=None):
    """permute, unpermute (merging probs or plain sum, permuted probs) and unpermute's backward."""
    def case():
        rmap = routing(T, E, k)
        dst, _ = row_id_ref(rmap)
        row_id_map = perm.make_row_id_map(rmap.to(torch.int32), T, E)
        n_out = int(rmap.sum())
        x = torch.randn(T, H).to(dtype)
        p = torch.where(rmap, torch.rand(T, E), 0.0) if probs else None
        S = 11
        s = torch.randn(T, S) if scale else None
        pad_offsets, n_alloc = None, n_out
        shift = torch.zeros(E, dtype=torch.int64)
        if pad_to:
            counts = rmap.sum(0)
            padded = (counts + pad_to - 1) // pad_to * pad_to
            shift = torch.cumsum(padded - counts, 0) - (padded - counts)
            pad_offsets = shift.to(torch.int32)
            n_alloc = int(padded.sum())
        out, pscale, pprobs = perm.permute_with_mask_map(x, row_id_map, p, s, pad_offsets, T, E, n_alloc, H,
                                                         S if scale else 0)
        want = torch.zeros(n_alloc, H, dtype=torch.float64)
        want_p = torch.zeros(n_alloc, dtype=torch.float64)
        want_s = torch.zeros(n_alloc, S, dtype=torch.float64)
        tt, ee = rmap.nonzero(as_tuple=True)
        rows = dst[tt, ee] + shift[ee]
        want[rows] = x.double()[tt]
        if probs:
            want_p[rows] = p.double()[tt, ee]
        if scale:
            want_s[rows] = s.double()[tt]
        written = torch.zeros(n_alloc, dtype=torch.bool)
        written[rows] = True
        if pad_to is None:
            assert bool(written.all())
        comparisons = {"permuted": (torch.where(written[:, None], out.double(), 0.0), want, 0)}
        if probs:
            comparisons["permuted_probs"] = (torch.where(written, pprobs.double(), 0.0), want_p, 0)
        if scale:
            comparisons["permuted_scale"] = (torch.where(written[:, None], pscale.double(), 0.0), want_s, 0)
        yield comparisons

        y = torch.randn(n_alloc, H).to(dtype)
        merging = torch.where(rmap, torch.rand(T, E), 0.0) if probs else None
        pp = torch.rand(n_alloc) if probs else None
        un, un_probs = perm.unpermute_with_mask_map(y, row_id_map, merging, pp, pad_offsets, T, E, H)
        w = merging.double()[tt, ee] if probs else torch.ones(len(tt), dtype=torch.float64)
        want_un = torch.zeros(T, H, dtype=torch.float64).index_add_(0, tt, y.double()[rows] * w[:, None])
        comparisons = {"unpermuted": (un, want_un, TOL[dtype])}
        if probs:
            want_up = torch.zeros(T, E, dtype=torch.float64)
            want_up[tt, ee] = pp.double()[rows]
            comparisons["unpermuted_probs"] = (un_probs, want_up, 0)
        if probs:
            g = torch.randn(T, H).to(dtype)
            act_grad, probs_grad = perm.unpermute_with_mask_map_bwd_with_merging_probs(
                g, row_id_map, y, merging, pad_offsets, T, E, n_alloc, H)
            want_ag = torch.zeros(n_alloc, H, dtype=torch.float64)
            want_ag[rows] = g.double()[tt] * w[:, None]
            want_pg = torch.zeros(T, E, dtype=torch.float64)
            want_pg[tt, ee] = (g.double()[tt] * y.double()[rows]).sum(1)
            comparisons["act_grad"] = (torch.where(written[:, None], act_grad.double(), 0.0), want_ag, TOL[dtype])
            comparisons["merging_probs_grad"] = (probs_grad, want_pg, TOL[dtype])
        yield comparisons
    return case


STAGES = ("permute", "unpermute")
check("permute T=37 E=7 k=2 H=300 float32", permute_case(37, 7, 2, 300, F32), STAGES)
check("permute probs scale T=37 E=7 k=2 H=300 float32", permute_case(37, 7, 2, 300, F32, probs=True, scale=True),
      STAGES)
check("permute probs T=203 E=6 k=3 H=200 bfloat16", permute_case(203, 6, 3, 200, BF16, probs=True), STAGES)
check("permute probs fused pad (16) T=53 E=5 k=2 H=96 bfloat16",
      permute_case(53, 5, 2, 96, BF16, probs=True, pad_to=16), STAGES)
check("permute fused pad (16) no probs T=53 E=5 k=2 H=96 float32", permute_case(53, 5, 2, 96, F32, pad_to=16),
      STAGES)


def chunk_sort_case(splits, H, dtype, probs=False, extra=0):
    def case():
        sizes = torch.tensor(splits, dtype=torch.int32)
        n = len(splits)
        order = torch.randperm(n).to(torch.int32)
        T = int(sizes.sum()) + extra
        row_map = perm.make_chunk_sort_map(sizes, order, T, n)
        starts = torch.cumsum(sizes.long(), 0) - sizes.long()
        out_starts = torch.zeros(n, dtype=torch.int64)
        acc = 0
        for c in order.tolist():
            out_starts[c] = acc
            acc += int(sizes[c])
        want_map = torch.arange(T)
        for c in range(n):
            want_map[starts[c]:starts[c] + sizes[c]] = out_starts[c] + torch.arange(int(sizes[c]))
        yield {"row_id_map": (row_map, want_map, 0)}
        x = torch.randn(T, H).to(dtype)
        p = torch.rand(T) if probs else None
        out, pp = perm.sort_chunks_by_map(x, row_map, p, T, H, True)
        want = torch.empty(T, H, dtype=torch.float64)
        want[want_map] = x.double()
        comparisons = {"forward": (out, want, 0)}
        if probs:
            want_p = torch.empty(T, dtype=torch.float64)
            want_p[want_map] = p.double()
            comparisons["forward_probs"] = (pp, want_p, 0)
        back, bp = perm.sort_chunks_by_map(out, row_map, pp, T, H, False)
        comparisons["backward"] = (back, x.double(), 0)
        if probs:
            comparisons["backward_probs"] = (bp, p.double(), 0)
        yield comparisons
    return case


check("sort_chunks 9 splits H=300 float32", chunk_sort_case([5, 0, 13, 7, 1, 22, 3, 9, 4], 300, F32, probs=True),
      ("map", "sort"))
check("sort_chunks 5 splits + 6 padding tokens H=130 bfloat16", chunk_sort_case([17, 3, 40, 8, 11], 130, BF16,
                                                                                  extra=6), ("map", "sort"))


def ce_case(B, SQ, V, dtype, smoothing=0.0, reduce=True, ignore=0.0, grad_out=None):
    def case():
        x = (torch.randn(B, SQ, V) * 2).to(dtype)
        y = torch.randint(0, V, (B, SQ))
        if ignore:
            y = torch.where(torch.rand(B, SQ) < ignore, torch.full_like(y, -100), y)
        loss, grad = ce.cross_entropy_forward(x, y, smoothing, reduce, None, -100)
        x64 = x.double().requires_grad_()
        ref = torch.nn.functional.cross_entropy(x64.reshape(-1, V), y.reshape(-1), ignore_index=-100,
                                                label_smoothing=smoothing, reduction="mean" if reduce else "none")
        if not reduce:
            ref = ref.reshape(B, SQ)
        yield {"loss": (loss, ref, TOL[dtype] if dtype != F32 else 1e-5)}
        go = torch.tensor(grad_out) if reduce and grad_out is not None else (
            torch.randn(B, SQ) if not reduce else torch.tensor(1.0))
        got = ce.cross_entropy_backward(grad, go)
        (ref * go.double()).sum().backward()
        yield {"grad_input": (got, x64.grad, 1e-5)}
    return case


check("cross_entropy mean B=3 SQ=25 V=1000 float32", ce_case(3, 25, 1000, F32), ("forward", "backward"))
check("cross_entropy mean grad_out=0.7 ignore label_smoothing=0.1 V=777 float32",
      ce_case(2, 19, 777, F32, smoothing=0.1, ignore=0.2, grad_out=0.7), ("forward", "backward"))
check("cross_entropy none ignore V=1000 bfloat16", ce_case(2, 13, 1000, BF16, reduce=False, ignore=0.2),
      ("forward", "backward"))
check("cross_entropy none label_smoothing=0.2 V=40000 (two blocks) float32",
      ce_case(1, 5, 40000, F32, smoothing=0.2, reduce=False), ("forward", "backward"))


def pad_case(d0, d1, dtype):
    def case():
        x = torch.randint(1, 100, (d0, d1)).to(dtype)
        got = pad.pad_columnwise_scale_inv(x)
        want = torch.zeros((d0 + 127) // 128 * 128, (d1 + 3) // 4 * 4, dtype=torch.float64)
        want[:d0, :d1] = x.double()
        yield {"padded": (got, want, 0)}
    return case


check("pad_columnwise_scale_inv 300 x 37 float32", pad_case(300, 37, F32))
check("pad_columnwise_scale_inv 129 x 258 uint8", pad_case(129, 258, torch.uint8))
check("pad_columnwise_scale_inv 128 x 4 (no padding) float32", pad_case(128, 4, F32))


def dbias_case(sizes, H, dtype, scaled):
    def case():
        sizes_t = torch.tensor(sizes)
        G, T = len(sizes), int(sizes_t.sum())
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(sizes_t, 0)])
        dy = torch.randn(T, H).to(dtype)
        group = torch.repeat_interleave(torch.arange(G), sizes_t)
        if scaled:
            scales = torch.rand(T)
            b = torch.randn(G, H).to(dtype)
            db, ds = dbias.compute_grouped_dbias_dscales(dy, scales, b, offsets)
            want_db = torch.zeros(G, H, dtype=torch.float64).index_add_(0, group, dy.double() * scales.double()[:, None])
            want_ds = (dy.double() * b.double()[group]).sum(1)
            yield {"dbias": (db, want_db, 1e-5), "dscales": (ds, want_ds, 1e-5)}
        else:
            db = dbias.compute_grouped_dbias(dy, offsets, G)
            want_db = torch.zeros(G, H, dtype=torch.float64).index_add_(0, group, dy.double())
            yield {"dbias": (db, want_db, 1e-5)}
    return case


check("grouped_dbias groups [70,0,301,5] H=200 float32", dbias_case([70, 0, 301, 5], 200, F32, False))
check("grouped_dbias groups [33,517,90] H=300 bfloat16", dbias_case([33, 517, 90], 300, BF16, False))
check("grouped_dbias_dscales groups [70,0,301,5] H=200 float32", dbias_case([70, 0, 301, 5], 200, F32, True))
check("grouped_dbias_dscales groups [33,517,90] H=130 bfloat16", dbias_case([33, 517, 90], 130, BF16, True))

print(f"autotuners pinned: {', '.join(PINNED) or 'none'} to BLOCK_SIZE=128; zero_pad_kernel to 128 x 128")
width = max(len(r[0]) for r in results) if results else 10
for name, status, worst, text in results:
    print(f"{name:<{width}}  {status:<4}  {worst:9.2e}  {text}")
passed = sum(r[1] == "ok" for r in results)
print(f"{passed} of {len(results)} cases match")
sys.exit(0 if passed == len(results) else 1)
