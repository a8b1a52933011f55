"""MegaBlocks' and STK's Triton kernels on Tegula, through the conformance shim's `triton` package, forward and
backward, against float64 references written here from the math.

MegaBlocks (databricks/megablocks, megablocks/backend/kernels.py, commit 78eea65 of 2025-06-26) permutes tokens
between token order and expert order for its mixture-of-experts layers; STK (stanford-futuredata/stk,
stk/backend/triton_kernels.py, commit 7363137 of 2024-08-21), which MegaBlocks' dropless MoE builds on, holds its
block-sparse matmuls.

Result on the CPU backend (2026-12-07): 125 of 125 lines match (a case's forward and backward are a line each),
in about two minutes on two cores from an empty Tegula cache. No divergence from Triton and no bug of either
library was found.

The routing, from its definition: T tokens each routed to top_k experts give T top_k assignments a = t top_k + j;
sorting the flattened expert ids (stably) gives bin_ids (the expert at each sorted position i) and indices (the
assignment a at i); bins[e] = the number of assignments to experts 0 .. e; padded_bins the same with each expert's
count rounded up to a multiple of `blocking`. Then, per sorted position i of expert e, the kernels copy row
x[a // top_k] (scaled by weights[a]) to row i (gather), to row padded_bins[e - 1] + i - bins[e - 1] (padded_gather),
or to slot [e, i - bins[e - 1]] of an [E, capacity, H] array, dropping the rows past the capacity (binned_gather);
the scatters go the other way and sum each token's top_k rows; the *_wgrad kernels give each assignment's dot of its
expert-order row with the token's output gradient.

Cases (inputs seeded per case by the CRC of its name, so -k reproduces a case's data; widths that are not
multiples of the kernels' BLOCK_X of 64 to 256, token counts down to 1, experts given no tokens):

  - kernels.py directly: gather / scatter / scatter_wgrad, padded_gather / padded_scatter / padded_scatter_wgrad,
    binned_gather (capacities of 3 to 64 rows an expert; the rows past one are dropped) / binned_scatter /
    binned_scatter_wgrad, with and without weights, top_k 1 to 4, float32, float16 and bfloat16; each kernel runs
    under the library's autotuner (five configs, so every BLOCK_X runs);
  - megablocks.ops' autograd Functions (gather, scatter, padded_gather, padded_scatter, binned_gather,
    binned_scatter), forward and backward (the scatters' weight gradients too); their backward launches the
    opposite kernels;
  - STK: stk.ops.dsd, dds and sdd (sparse x dense, dense x sparse, dense x dense into a sparse topology) with all
    four transpositions of their operands, forward and backward (the gradients run the other two kernels with
    transposed operands), at 0 %, 50 % and 75 % block sparsity, float16 and bfloat16; stk.ops.row_indices (the
    row-index kernel) on topologies with empty block rows. STK's kernels take whole 128 x 128 blocks and assert
    M, N multiples of 128 and K of 32, so their sizes are multiples of 128.

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (the kernels
compute in float32 and round their output); the copies are checked exactly where there is no scale.

MegaBlocks and STK are not part of Tegula; point this at a tree of each (`git archive HEAD megablocks` and
`git archive HEAD stk` of the two repositories will do):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/megablocks_ops.py <megablocks tree> \\
        <stk tree> [-k SUBSTRING] [--json out.json]

Stand-ins, none of them a Triton kernel or reached from one:

  - megablocks' packages import bare (megablocks/__init__.py imports its layers, which import grouped_gemm and
    megablocks_ops, the library's compiled CUDA extension), but megablocks.ops, whose autograd Functions the cases
    call;
  - `megablocks_ops`, the compiled extension, an empty module: megablocks/ops/__init__.py imports the wrappers of
    its sort, histogram, cumsum, replicate and topology ops, which import it while they load; no case calls them
    (the cases sort and count the routing with torch).

Prints one line per case and stage (ok / FAIL, the largest absolute difference from the reference, each output's
difference or the first line of the error) and the totals.
"""

import argparse
import os
import pathlib
import sys
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("megablocks", type=pathlib.Path, help="a megablocks tree (a directory holding megablocks/)")
_parser.add_argument("stk", type=pathlib.Path, help="an stk tree (a directory holding stk/)")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
MB, STK = ARGS.megablocks.resolve(), ARGS.stk.resolve()
for _tree, _file in ((MB, "megablocks/backend/kernels.py"), (MB, "megablocks/ops/gather.py"),
                     (STK, "stk/backend/triton_kernels.py"), (STK, "stk/ops/linear_ops.py")):
    if not (_tree / _file).is_file():
        sys.exit(f"{_tree} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, report  # noqa: E402
import standins  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- loading -------------------------------------------------------------------------------------------------------


# megablocks/ops/__init__.py imports the sort, histogram, cumsum, replicate and topology wrappers, which import the
# compiled extension at load time; no case calls them.
_megablocks_ops = types.ModuleType("megablocks_ops")
sys.modules["megablocks_ops"] = _megablocks_ops

sys.path.insert(0, str(STK))
standins.bare_packages(MB, "megablocks", as_is=("megablocks.ops",))
import stk  # noqa: E402
import stk.ops  # noqa: E402
from megablocks.backend import kernels  # noqa: E402
import megablocks.ops as mops  # noqa: E402

for _mod in (stk, kernels, mops):
    _where = STK if _mod is stk else MB
    assert pathlib.Path(_mod.__file__).is_relative_to(_where), f"another copy: {_mod}"

# --- cases ---------------------------------------------------------------------------------------------------------

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
results = []


def case(name, run, stages=("run",)):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    check(results, name, run, stages)


def routing(T, E, top_k, skip=()):
    """T tokens each to top_k distinct experts of E (none to the experts in `skip`): the flattened [T top_k]
    expert ids, the sorted (bin_ids, indices), and the per-expert counts."""
    scores = torch.rand(T, E)
    for e in skip:
        scores[:, e] = -1.0
    top = scores.topk(top_k, dim=1).indices.flatten().to(torch.int32)
    bin_ids, indices = torch.sort(top, stable=True)
    counts = torch.bincount(top.long(), minlength=E).to(torch.int32)
    return top, bin_ids.to(torch.int32), indices.to(torch.int32), counts


def padded(counts, blocking):
    return ((counts + blocking - 1) // blocking * blocking).to(torch.int32)


def positions(bin_ids, counts, blocking=None):
    """The output row of each sorted position i: i itself, or (blocking) its row within its expert's padded
    range."""
    bins = torch.cumsum(counts, 0)
    starts = torch.cat([bins.new_zeros(1), bins[:-1]])
    rows = torch.arange(len(bin_ids))
    if blocking is None:
        return rows
    pb = torch.cumsum(padded(counts, blocking), 0)
    pstarts = torch.cat([pb.new_zeros(1), pb[:-1]])
    return pstarts[bin_ids.long()] + rows - starts[bin_ids.long()]


def gather_ref(x, indices, top_k, weights, rows_out, where):
    out = torch.zeros(rows_out, x.shape[1], dtype=F64)
    src = x.double()[indices.long() // top_k]
    if weights is not None:
        src = src * weights.double()[indices.long()][:, None]
    out[where] = src
    return out


def scatter_ref(xe, indices, top_k, weights, T, where):
    """Token t's output: sum over its assignments a of (weights[a] *) xe[row of a]."""
    out = torch.zeros(T * top_k, xe.shape[1], dtype=F64)
    src = xe.double()[where]
    if weights is not None:
        src = src * weights.double()[indices.long()][:, None]
    out[indices.long()] = src
    return out.view(T, top_k, -1).sum(1)


def wgrad_ref(xe, grad, indices, top_k, where):
    out = torch.zeros(len(indices), dtype=F64)
    out[indices.long()] = (xe.double()[where] * grad.double()[indices.long() // top_k]).sum(1)
    return out


def tol_of(dtype, scaled):
    """Plain copies are exact; a scaled row rounds x * w to the dtype."""
    return TOL[dtype] if scaled else 0.0


def copy_case(kind, T, E, top_k, H, dtype=F32, weights=False, blocking=128, skip=()):
    """kind: gather / scatter / wgrad, each plain or padded (blocking)."""
    def run():
        _, bin_ids, indices, counts = routing(T, E, top_k, skip)
        bins = torch.cumsum(counts, 0).to(torch.int32)
        w = torch.rand(T * top_k).to(dtype) if weights else None
        pad = kind.startswith("padded")
        where = positions(bin_ids, counts, blocking if pad else None)
        pbins = torch.cumsum(padded(counts, blocking), 0).to(torch.int32) if pad else bins
        rows_e = int(pbins[-1]) if pad else T * top_k
        if kind.endswith("gather"):
            x = torch.randn(T, H).to(dtype)
            got = (kernels.padded_gather(x, indices, bin_ids, w, bins, pbins, top_k) if pad
                   else kernels.gather(x, indices, bin_ids, w, bins, top_k))
            want = gather_ref(x, indices, top_k, w, rows_e, where)
            yield {"out": (got, want, tol_of(dtype, weights)),
                   "shape": exact(torch.tensor(got.shape), torch.tensor(want.shape))}
        elif kind.endswith("scatter"):
            xe = torch.randn(rows_e, H).to(dtype)
            got = (kernels.padded_scatter(xe, indices, bin_ids, w, bins, pbins, top_k) if pad
                   else kernels.scatter(xe, indices, bin_ids, w, bins, top_k))
            want = scatter_ref(xe, indices, top_k, w, T, where)
            # the kernel rounds each row to the dtype before torch sums the top_k rows in the dtype
            yield {"out": (got, want, tol_of(dtype, weights or top_k > 1))}
        else:
            xe = torch.randn(rows_e, H).to(dtype)
            grad = torch.randn(T, H).to(dtype)
            got = (kernels.padded_scatter_wgrad(xe, grad, indices, bin_ids, bins, pbins, top_k) if pad
                   else kernels.scatter_wgrad(xe, grad, indices, bin_ids, bins, top_k))
            yield {"wgrad": (got, wgrad_ref(xe, grad, indices, top_k, where), TOL[dtype])}
    return run


def binned_where(bin_ids, counts, capacity):
    """(expert, slot) of each sorted position, and whether it fits the capacity."""
    bins = torch.cumsum(counts, 0)
    starts = torch.cat([bins.new_zeros(1), bins[:-1]])
    slot = torch.arange(len(bin_ids)) - starts[bin_ids.long()]
    return bin_ids.long(), slot, slot < capacity


def binned_case(kind, T, E, top_k, H, capacity, dtype=F32, weights=False, skip=()):
    def run():
        _, bin_ids, indices, counts = routing(T, E, top_k, skip)
        bins = torch.cumsum(counts, 0).to(torch.int32)
        w = torch.rand(T * top_k).to(dtype) if weights else None
        e, slot, keep = binned_where(bin_ids, counts, capacity)
        if kind == "gather":
            x = torch.randn(T, H).to(dtype)
            got = kernels.binned_gather(x, indices, w, bins, capacity, top_k)
            want = torch.zeros(E, capacity, H, dtype=F64)
            src = x.double()[indices.long() // top_k]
            if weights:
                src = src * w.double()[indices.long()][:, None]
            want[e[keep], slot[keep]] = src[keep]
            yield {"out": (got, want, tol_of(dtype, weights))}
        elif kind == "scatter":
            xe = torch.randn(E, capacity, H).to(dtype)
            got = kernels.binned_scatter(xe, indices, w, bins, top_k)
            flat = torch.zeros(T * top_k, H, dtype=F64)
            src = xe.double()[e[keep], slot[keep]]
            if weights:
                src = src * w.double()[indices.long()[keep]][:, None]
            flat[indices.long()[keep]] = src
            yield {"out": (got, flat.view(T, top_k, H).sum(1), tol_of(dtype, weights or top_k > 1))}
        else:
            xe = torch.randn(E, capacity, H).to(dtype)
            grad = torch.randn(T, H).to(dtype)
            got = kernels.binned_scatter_wgrad(xe, grad, indices, bins, top_k)
            want = torch.zeros(T * top_k, dtype=F64)
            a = indices.long()[keep]
            want[a] = (xe.double()[e[keep], slot[keep]] * grad.double()[a // top_k]).sum(1)
            yield {"wgrad": (got, want, TOL[dtype])}
    return run


def autograd_case(op, T, E, top_k, H, dtype=F32, blocking=64, capacity=None, skip=()):
    """megablocks.ops' autograd Functions forward and backward, against the same maps in float64 autograd."""
    def run():
        _, bin_ids, indices, counts = routing(T, E, top_k, skip)
        bins = torch.cumsum(counts, 0).to(torch.int32)
        pbins = torch.cumsum(padded(counts, blocking), 0).to(torch.int32)
        tol = TOL[dtype]
        if op in ("gather", "padded_gather", "binned_gather"):
            x = torch.randn(T, H).to(dtype).requires_grad_()
            xr = x.detach().double().requires_grad_()
            src = xr[indices.long() // top_k]
            if op == "gather":
                y = mops.gather(x, indices, bin_ids, bins, top_k)
                want = src
            elif op == "padded_gather":
                y = mops.padded_gather(x, indices, bin_ids, bins, pbins, top_k)
                want = torch.zeros(int(pbins[-1]), H, dtype=F64).index_put(
                    (positions(bin_ids, counts, blocking),), src)
            else:
                y = mops.binned_gather(x, indices, bins, capacity, top_k)
                e, slot, keep = binned_where(bin_ids, counts, capacity)
                want = torch.zeros(E, capacity, H, dtype=F64).index_put((e[keep], slot[keep]), src[keep])
            yield {"y": (y, want, tol)}
            dy = torch.randn(y.shape).to(dtype)
            (gx,) = torch.autograd.grad(y, [x], dy)
            (wx,) = torch.autograd.grad(want, [xr], dy.double())
            yield {"dx": (gx, wx, tol)}
        else:
            w = torch.rand(T * top_k).to(dtype).requires_grad_()
            wr = w.detach().double().requires_grad_()
            if op == "binned_scatter":
                xe = torch.randn(E, capacity, H).to(dtype).requires_grad_()
                xr = xe.detach().double().requires_grad_()
                e, slot, keep = binned_where(bin_ids, counts, capacity)
                a = indices.long()[keep]
                src = xr[e[keep], slot[keep]] * wr[a][:, None]
                y = mops.binned_scatter(xe, indices, w, bins, top_k)
            else:
                pad = op == "padded_scatter"
                rows = int(pbins[-1]) if pad else T * top_k
                xe = torch.randn(rows, H).to(dtype).requires_grad_()
                xr = xe.detach().double().requires_grad_()
                a = indices.long()
                src = xr[positions(bin_ids, counts, blocking if pad else None)] * wr[a][:, None]
                y = (mops.padded_scatter(xe, indices, bin_ids, w, bins, pbins, top_k) if pad
                     else mops.scatter(xe, indices, bin_ids, w, bins, top_k))
            want = torch.zeros(T * top_k, H, dtype=F64).index_put((a,), src).view(T, top_k, H).sum(1)
            yield {"y": (y, want, tol)}
            dy = torch.randn(y.shape).to(dtype)
            gx, gw = torch.autograd.grad(y, [xe, w], dy)
            wx, ww = torch.autograd.grad(want, [xr, wr], dy.double())
            yield {"dx": (gx, wx, tol), "dweights": (gw, ww, tol)}
    return run


# --- STK -----------------------------------------------------------------------------------------------------------


def dense_and_sparse(rows, cols, sparsity, dtype, blocking=128):
    """A dense matrix with `sparsity` of its 128 x 128 blocks zero, and its stk.Matrix."""
    block_rows, block_cols = rows // blocking, cols // blocking
    nnz = round(block_rows * block_cols * (1 - sparsity))
    keep = torch.zeros(block_rows * block_cols)
    keep[torch.randperm(block_rows * block_cols)[:nnz]] = 1
    mask = keep.view(block_rows, 1, block_cols, 1).expand(block_rows, blocking, block_cols, blocking)
    dense = (torch.randn(rows, cols) * mask.reshape(rows, cols)).to(dtype)
    return dense, stk.ops.to_sparse(dense, blocking)


def block_mask(sparse):
    return stk.ops.to_dense(stk.ops.ones_like(sparse)).double()


def stk_case(op, m, k, n, sparsity, trans_a, trans_b, dtype=F16):
    """stk.ops.<op>(a, b) with a and b given transposed or not: forward and the gradients of both operands (a
    sparse operand's gradient is a stk.Matrix on the operand's topology)."""
    def run():
        a_shape = (k, m) if trans_a else (m, k)
        b_shape = (n, k) if trans_b else (k, n)
        tol = TOL[dtype]
        if op == "dsd":
            a_dense, a = dense_and_sparse(*a_shape, sparsity, dtype)
            b = torch.randn(b_shape).to(dtype)
        elif op == "dds":
            a = torch.randn(a_shape).to(dtype)
            b_dense, b = dense_and_sparse(*b_shape, sparsity, dtype)
        else:
            a = torch.randn(a_shape).to(dtype)
            b = torch.randn(b_shape).to(dtype)
            _, topo = dense_and_sparse(m, n, sparsity, dtype)
        a.requires_grad_(True)
        b.requires_grad_(True)
        ar = (a_dense if op == "dsd" else a).detach().double().requires_grad_()
        br = (b_dense if op == "dds" else b).detach().double().requires_grad_()
        a_op = a.t() if trans_a else a
        b_op = b.t() if trans_b else b
        want = (ar.t() if trans_a else ar) @ (br.t() if trans_b else br)
        if op == "dsd":
            y = stk.ops.dsd(a_op, b_op)
        elif op == "dds":
            y = stk.ops.dds(a_op, b_op)
        else:
            y = stk.ops.sdd(a_op, b_op, topo)
            want = want * block_mask(topo)
        y_dense = stk.ops.to_dense(y) if op == "sdd" else y
        yield {"y": (y_dense, want, tol)}
        dy_dense = torch.randn(m, n).to(dtype)
        leaves = [t.data if isinstance(t, stk.Matrix) else t for t in (a, b)]
        if op == "sdd":
            dy_dense = (dy_dense.double() * block_mask(topo)).to(dtype)
            ga, gb = torch.autograd.grad(y.data, leaves, _blocks_of(dy_dense, topo))
        else:
            ga, gb = torch.autograd.grad(y, leaves, dy_dense)
        wa, wb = torch.autograd.grad(want, [ar, br], dy_dense.double())
        out = {}
        for name, g, w, operand in (("da", ga, wa, a), ("db", gb, wb, b)):
            if isinstance(operand, stk.Matrix):
                out[name] = (_grad_dense(g, operand), w * block_mask(operand), tol)
            else:
                out[name] = (g, w, tol)
        yield out
    return run


def _blocks_of(dense, topo):
    """dense's values on topo's blocks, in topo's block order (the shape of topo.data)."""
    bs = topo.blocking
    rows = topo.row_indices.long()
    cols = topo.column_indices.long()
    view = dense.view(dense.shape[0] // bs, bs, dense.shape[1] // bs, bs).permute(0, 2, 1, 3)
    return view[rows, cols].contiguous()


def _grad_dense(data_grad, operand):
    """A sparse operand's gradient given as its blocks' data: scattered back to a dense matrix."""
    return stk.ops.to_dense(stk.Matrix(operand.size(), data_grad, operand.row_indices, operand.column_indices,
                                       operand.offsets))


def row_indices_case(rows, cols, sparsity, empty_rows=()):
    def run():
        dense, sparse = dense_and_sparse(rows, cols, sparsity, F16)
        for r in empty_rows:
            dense[r * 128:(r + 1) * 128] = 0
        sparse = stk.ops.to_sparse(dense, 128)
        got = stk.ops.row_indices(sparse.size(), sparse.data, sparse.offsets, sparse.column_indices)
        want = torch.repeat_interleave(torch.arange(len(sparse.offsets) - 1), torch.diff(sparse.offsets.long()))
        yield {"row_indices": exact(got.long(), want)}
    return run


FB = ("forward", "backward")

# kernels.py: gather / scatter / wgrad
for _kind in ("gather", "scatter", "wgrad", "padded_gather", "padded_scatter", "padded_wgrad"):
    case(f"{_kind} 37 tokens, 4 experts, top-2, H 100", copy_case(_kind, 37, 4, 2, 100))
    case(f"{_kind} 300 tokens, 8 experts, top-1, H 1000, weights (partial 256-wide block)",
         copy_case(_kind, 300, 8, 1, 1000, weights=True))
    case(f"{_kind} 1 token, 13 experts, top-4, H 257, weights", copy_case(_kind, 1, 13, 4, 257, weights=True))
    case(f"{_kind} 129 tokens, 6 experts (2 idle), top-2, H 64, blocking 64",
         copy_case(_kind, 129, 6, 2, 64, blocking=64, skip=(1, 4)))
    for _dtype in (F16, BF16):
        case(f"{_kind} {SHORT[_dtype]} 77 tokens, 5 experts, top-2, H 300, weights",
             copy_case(_kind, 77, 5, 2, 300, _dtype, weights=True))
    case(f"{_kind} fp16 77 tokens, 5 experts, top-1, H 130", copy_case(_kind, 77, 5, 1, 130, F16))

# kernels.py: binned
for _kind in ("gather", "scatter", "wgrad"):
    case(f"binned_{_kind} 37 tokens, 4 experts, top-2, H 100, capacity 30 (some dropped)",
         binned_case(_kind, 37, 4, 2, 100, 30))
    case(f"binned_{_kind} 300 tokens, 8 experts, top-1, H 1000, capacity 64, weights",
         binned_case(_kind, 300, 8, 1, 1000, 64, weights=True))
    case(f"binned_{_kind} 5 tokens, 13 experts (3 idle), top-2, H 257, capacity 3, weights",
         binned_case(_kind, 5, 13, 2, 257, 3, weights=True, skip=(0, 6, 12)))
    for _dtype in (F16, BF16):
        case(f"binned_{_kind} {SHORT[_dtype]} 77 tokens, 5 experts, top-2, H 300, capacity 40, weights",
             binned_case(_kind, 77, 5, 2, 300, 40, _dtype, weights=True))

# megablocks.ops autograd
for _op in ("gather", "scatter", "padded_gather", "padded_scatter"):
    case(f"ops.{_op} 37 tokens, 4 experts, top-2, H 100", autograd_case(_op, 37, 4, 2, 100), FB)
    case(f"ops.{_op} bf16 129 tokens, 6 experts (1 idle), top-2, H 300",
         autograd_case(_op, 129, 6, 2, 300, BF16, skip=(3,)), FB)
for _op in ("binned_gather", "binned_scatter"):
    case(f"ops.{_op} 37 tokens, 4 experts, top-2, H 100, capacity 25",
         autograd_case(_op, 37, 4, 2, 100, capacity=25), FB)
    case(f"ops.{_op} fp16 100 tokens, 7 experts, top-1, H 200, capacity 20",
         autograd_case(_op, 100, 7, 1, 200, F16, capacity=20), FB)

# STK
for _op in ("dsd", "dds", "sdd"):
    for _ta in (False, True):
        for _tb in (False, True):
            _t = "".join("T" if t else "N" for t in (_ta, _tb))
            case(f"stk.{_op} {_t} 256 x 384 x 512, 50 % sparse", stk_case(_op, 256, 384, 512, 0.5, _ta, _tb), FB)
    case(f"stk.{_op} NN 128 x 128 x 128, dense", stk_case(_op, 128, 128, 128, 0.0, False, False), FB)
    case(f"stk.{_op} NN 512 x 256 x 384, 75 % sparse", stk_case(_op, 512, 256, 384, 0.75, False, False), FB)
    case(f"stk.{_op} bf16 NT 384 x 256 x 256, 50 % sparse",
         stk_case(_op, 384, 256, 256, 0.5, False, True, BF16), FB)
case("stk.row_indices 512 x 384, 50 % sparse", row_indices_case(512, 384, 0.5))
case("stk.row_indices 768 x 256, block rows 0 and 3 empty", row_indices_case(768, 256, 0.3, empty_rows=(0, 3)))

# --- report ----------------------------------------------------------------------------------------------------

sys.exit(report(results, ARGS.json))
