"""shawntan/scattermoe's Triton kernels on Tegula, through the conformance shim's `triton` package, forward and
backward, against torch float64 references written here from the math.

Result on the CPU backend (2026-12-07): 69 of 69 lines match (a case's forward and backward are a line each), in
about two minutes on two cores from an empty Tegula cache (about a minute with the kernels cached); under
TEGULA_DEBUG=1 the same, with no access outside its tensor. No divergence from Triton and no bug of scattermoe's
was found.

The grouping, from its definition: a token t routed to experts e[t, 0 .. k-1] has k scattered rows r = t k + j;
sorting the flattened expert indices gives sorted_expert_idxs (the experts in order) and sorted_scattered_idxs
(the scattered row at each grouped position i), and expert_offsets[e] the number of grouped rows of experts 0 .. e.
A row's output is x[t] @ W[e] (+ b[e]); "grouped" input or output rows are in sorted order, "scattered" ones in
token order.

Cases (inputs seeded per case, the seed being the case name's CRC, so -k reproduces a case's data; token counts and
widths are mostly not multiples of the kernels' blocks: BLOCK_M 128 and BLOCK_N 128 x BLOCK_K 32 for
scatter2scatter, 32 x 128 x 128 for groupXtY, 256 x 128 for group):

  - `scatter2scatter` (kernels/ops.py, `_scatter2scatter` through the `scattermoe::scatter2scatter` custom op):
    scattered and grouped inputs and outputs, with and without biases, top-k 1 and 2, 1 to 13 experts (some of them
    given no rows), 1 to 300 tokens, K of 64 to 200 (partial 32-wide K blocks and exact ones) and N of 72 to 300,
    float32, float16 and bfloat16, into a given `out` buffer, and called as torch.ops.scattermoe.scatter2scatter;
  - `group` (`_group`, custom op `scattermoe::group`): rows gathered into grouped order with fan-out 1 and 2, with
    and without per-row coefficients, K of 100 to 300 (partial 128-wide blocks) and 1 to 600 rows;
  - `group_bwd_W` (`_groupXtY`, custom op `scattermoe::groupXtY`): per expert X_e^T @ DY_e over its row range and,
    with has_bias, DY_e's column sums, experts with no rows (their zeroed gradient left as it is), float32 and
    bfloat16;
  - `single2scatter` (kernels/single.py, one token's decoding step; its grid and loads are unmasked, so K and N
    are multiples of 128 as the library requires): one input row to k experts and k rows to k experts;
  - `parallel_linear` / `ParallelExperts` (parallel_experts.py) forward and backward (x, the weights, biases and
    gates): the four combinations of grouped_in / grouped_out the layer allows (gates only with a scattered output),
    top-k 1 and 2, 1 to 8 experts, float32 and bfloat16;
  - `MLP` and `GLUMLP` (mlp.py) end to end, forward and backward (x, the routing weights, both layers' weights and
    biases), GELU and SiLU, 1 to 13 experts, top-k 1 and 2, 1 to 300 tokens, float32, float16 and bfloat16.

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2; float16 and
bfloat16 layers 5e-3 and 3e-2 (each layer rounds its output, the hidden activations and every gradient to the
input's type, where the reference keeps float64). The kernels accumulate in float32 (ACC_TYPE); the references
take the inputs as rounded to the case's type.

scattermoe is not part of Tegula; point this at a checkout (a `git archive HEAD | tar -x -C <tree>` of the
repository will do; written against commit 47b5e1502e5a10e82c8e5945d761b877849871e7 of 2025-10-03):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/scattermoe_ops.py <scattermoe tree> \\
        [-k SUBSTRING] [--json out.json]

`import scattermoe` loads the package as it is. Stand-ins and settings, none of them a Triton kernel or reached from
one:

  - torch.compile, while scattermoe loads: the identity (parallel_experts.flatten_sort_count, a torch sort and
    bincount, is decorated with it; the real one imports torch._dynamo and Inductor, which import Triton's compiler
    backends, absent from the stand-in package);
  - kernels.ops.ALLOW_TF32 = False, as the library's own test sets it (it reaches tl.dot's allow_tf32; a CPU has
    no TF32, but TEGULA_CONFORMANCE_DEVICE=cuda would take it).

Prints one line per case and stage (ok / FAIL / FAIL (library), the largest absolute difference from the reference,
each output's difference or the first line of the error) and the totals.
"""

import argparse
import os
import pathlib
import sys
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a scattermoe checkout (a directory holding scattermoe/)")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
for _file in ("scattermoe/kernels/ops.py", "scattermoe/kernels/single.py", "scattermoe/parallel_experts.py",
              "scattermoe/mlp.py"):
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, report  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- loading -------------------------------------------------------------------------------------------------------

sys.path.insert(0, str(SRC))
_compile = torch.compile
torch.compile = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
try:
    import scattermoe
    from scattermoe.kernels import ops
    from scattermoe.kernels import single
    from scattermoe import mlp, parallel_experts
finally:
    torch.compile = _compile
assert pathlib.Path(scattermoe.__file__).is_relative_to(SRC), f"another scattermoe was imported: {scattermoe.__file__}"
ops.ALLOW_TF32 = False

# --- cases ---------------------------------------------------------------------------------------------------------

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
LAYER_TOL = {F32: 1e-5, F16: 5e-3, BF16: 3e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
results = []
LIBRARY = {}  # case name -> why it fails: the library's own bug, on any machine


def case(name, run, stages=("run",), library=None):
    """library: the reason the case fails on any machine (scattermoe's bug), printed as FAIL (library)."""
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    if library is not None:
        for stage in stages if len(stages) > 1 else ("",):
            LIBRARY[f"{name} {stage}" if stage else name] = library
    check(results, name, run, stages)


def routing(T, E, k):
    """Each of T tokens routed to k distinct experts of E: [T, k] expert indices."""
    return torch.rand(T, E).topk(k, dim=1).indices


def grouping(expert_idxs, E):
    """(sorted_expert_idxs, sorted_scattered_idxs, expert_offsets) from the definition (a stable sort; the kernels
    take any order of the rows within an expert)."""
    flat = expert_idxs.flatten()
    sorted_e, sorted_s = torch.sort(flat, stable=True)
    return sorted_e, sorted_s, torch.bincount(flat, minlength=E).cumsum(0)


def scattered_rows(x, k, sorted_s, grouped):
    """x's rows in scattered order: a grouped x holds scattered row sorted_s[i] at i; a scattered x of tokens gives
    token r // k to row r."""
    if grouped:
        out = torch.empty_like(x)
        out[sorted_s] = x
        return out
    return x.repeat_interleave(k, 0)


def experts_apply(x_scat, W, b, expert_of_row):
    """Row r: x_scat[r] @ W[e_r] (+ b[e_r]), W [E, K, N]."""
    y = torch.einsum("rk,rkn->rn", x_scat, W[expert_of_row])
    return y + b[expert_of_row] if b is not None else y


def scatter2scatter_case(T, E, k, K, N, dtype=F32, bias=False, x_grouped=False, y_grouped=False, into_out=False,
                         direct=False):
    """scatter2scatter of x [T, K] (or, x_grouped, [T k, K] in grouped order and fan-out 1) by W [E, K, N]."""
    def run():
        idx = routing(T, E, k)
        sorted_e, sorted_s, _ = grouping(idx, E)
        rows = T * k if x_grouped else T
        fan = 1 if x_grouped else k
        X = torch.randn(rows, K).to(dtype)
        W = (torch.randn(E, K, N) / K ** 0.5).to(dtype)
        b = torch.randn(E, N).to(dtype) if bias else None
        if direct:
            got = torch.full((T * k, N), float("nan"), dtype=dtype)
            torch.ops.scattermoe.scatter2scatter(got, W, X, fan, sorted_e, sorted_s, b, x_grouped, y_grouped)
        else:
            out = torch.full((T * k, N), float("nan"), dtype=dtype) if into_out else None
            got = ops.scatter2scatter(X, W, sorted_e, sorted_s, fan, b=b, x_grouped=x_grouped, y_grouped=y_grouped,
                                      out=out)
            if into_out:
                assert got is out, "scatter2scatter did not return its out buffer"
        x_scat = scattered_rows(X.double(), fan, sorted_s, x_grouped)
        y_scat = experts_apply(x_scat, W.double(), b.double() if bias else None, idx.flatten())
        want = y_scat[sorted_s] if y_grouped else y_scat
        yield {"Y": (got, want, TOL[dtype]),
               "shape / dtype": exact(torch.tensor([*got.shape, got.dtype == dtype]), torch.tensor([T * k, N, 1]))}
    return run


def group_case(T, fan_out, K, coeff=False, dtype=F32, direct=False):
    """group: Y[i] = A[sorted_s[i] // fan_out] (* coeff[sorted_s[i]])."""
    def run():
        E = 5
        idx = routing(T, E, fan_out)
        _, sorted_s, _ = grouping(idx, E)
        A = torch.randn(T, K).to(dtype)
        c = torch.rand(T * fan_out).to(dtype) if coeff else None
        if direct:
            got = torch.full((T * fan_out, K), float("nan"), dtype=dtype)
            torch.ops.scattermoe.group(A, K, T * fan_out, got, c, coeff, fan_out, sorted_s)
        else:
            got = ops.group(A, sorted_s, coeff=c, fan_out=fan_out)
        want = A.double()[sorted_s // fan_out]
        if coeff:
            want = want * c.double()[sorted_s][:, None]
        yield {"Y": (got, want, TOL[dtype])}
    return run


def group_bwd_W_case(counts, K, N, bias=False, dtype=F32, direct=False):
    """group_bwd_W: DW[e] = X_e^T DY_e, Db[e] = sum of DY_e's rows, for experts owning counts[e] consecutive rows."""
    def run():
        E = len(counts)
        M = sum(counts)
        offsets = torch.tensor(counts).cumsum(0)
        DY = torch.randn(M, N).to(dtype)
        X = torch.randn(M, K).to(dtype)
        if direct:
            DW = torch.zeros(E, N, K, dtype=dtype).permute(0, 2, 1)
            Db = torch.zeros(E, N, dtype=dtype) if bias else None
            torch.ops.scattermoe.groupXtY(E, DW, Db, DY, X, offsets)
        else:
            DW, Db = ops.group_bwd_W(DY, X, offsets, E, has_bias=bias)
        starts = [0] + offsets.tolist()[:-1]
        want_W = torch.stack([X.double()[s:s + n].T @ DY.double()[s:s + n] for s, n in zip(starts, counts)])
        out = {"DW": (DW, want_W, TOL[dtype])}
        if bias:
            out["Db"] = (Db, torch.stack([DY.double()[s:s + n].sum(0) for s, n in zip(starts, counts)]), TOL[dtype])
        else:
            out["Db is None"] = exact(torch.tensor(Db is None), torch.tensor(True))
        yield out
    return run


def single2scatter_case(rows, k, E, K, N, dtype=F32):
    """single2scatter: one token's x (one row, or k rows) through its k experts: Y[j] = x[j or 0] @ W[e_j]."""
    def run():
        X = torch.randn(rows, K).to(dtype)
        W = (torch.randn(E, K, N) / K ** 0.5).to(dtype)
        idx = routing(1, E, k)
        got = single.single2scatter(X, W, idx)
        x = X.double() if rows == k else X.double().expand(k, K)
        yield {"Y": (got, torch.einsum("jk,jkn->jn", x, W.double()[idx[0]]), TOL[dtype])}
    return run


def parallel_experts_case(T, E, k, din, dout, dtype=F32, bias=False, gates=False, grouped_in=False,
                          grouped_out=False):
    """ParallelExperts(E, din, dout) on x, forward and backward. grouped_in: x is [T k, din] in grouped order
    and the layer gets k = 1 (as MLP's second layer); gates [T, k] sum each token's k outputs."""
    def run():
        layer = parallel_experts.ParallelExperts(E, din, dout, bias=bias).to(dtype)
        with torch.no_grad():
            layer.weight.copy_(torch.randn(E, dout, din) / din ** 0.5)
            if bias:
                layer.bias.copy_(torch.randn(E, dout))
        idx = routing(T, E, k)
        sorted_e, sorted_s, offsets = parallel_experts.flatten_sort_count(idx, num_experts=E)
        x = torch.randn(T * k if grouped_in else T, din).to(dtype).requires_grad_()
        g = torch.softmax(torch.randn(T, k), -1).to(dtype).requires_grad_() if gates else None
        y = layer(x, 1 if grouped_in else k, sorted_e, sorted_s, offsets, gates=g, grouped_in=grouped_in,
                  grouped_out=grouped_out)
        # the reference
        xr = x.detach().double().requires_grad_()
        Wr = layer.weight.detach().double().requires_grad_()
        br = layer.bias.detach().double().requires_grad_() if bias else None
        gr = g.detach().double().requires_grad_() if gates else None
        x_scat = scattered_rows(xr, 1 if grouped_in else k, sorted_s, grouped_in)
        y_scat = experts_apply(x_scat, Wr.permute(0, 2, 1), br, idx.flatten())
        if gates:
            want = (gr[:, :, None] * y_scat.view(T, k, dout)).sum(1)
        else:
            want = y_scat[sorted_s] if grouped_out else y_scat
        tol = LAYER_TOL[dtype]
        yield {"y": (y, want, tol)}
        dy = torch.randn(y.shape).to(dtype)
        leaves = [x, layer.weight] + ([layer.bias] if bias else []) + ([g] if gates else [])
        refs = [xr, Wr] + ([br] if bias else []) + ([gr] if gates else [])
        names = ["dx", "dW"] + (["db"] if bias else []) + (["dgates"] if gates else [])
        got = torch.autograd.grad(y, leaves, dy)
        wanted = torch.autograd.grad(want, refs, dy.double())
        yield {n: (a, b, tol) for n, a, b in zip(names, got, wanted)}
    return run


def gelu(x):
    return torch.nn.functional.gelu(x)


def mlp_case(T, E, k, din, dh, dtype=F32, bias=False, glu=False, activation="gelu", batch=None):
    """mlp.MLP (or GLUMLP) on x [T, din] (or [*batch, din]), routing weights p [T, k], forward and backward of
    x, p and every weight and bias, against sum_j p[t, j] (act(x W1[e]^T + b1) W2[e]^T + b2) in float64 (GLUMLP:
    the first layer's 2 dh outputs h, g give act(g) * h)."""
    def run():
        act = torch.nn.GELU() if activation == "gelu" else torch.nn.SiLU()
        cls = mlp.GLUMLP if glu else mlp.MLP
        m = cls(din, dh, E, k, bias=bias, activation=act).to(dtype)
        with torch.no_grad():
            m.experts.weight.copy_(torch.randn(m.experts.weight.shape) / din ** 0.5)
            m.output_experts.weight.copy_(torch.randn(m.output_experts.weight.shape) / dh ** 0.5)
            if bias:
                m.experts.bias.copy_(torch.randn(m.experts.bias.shape) * 0.5)
                m.output_experts.bias.copy_(torch.randn(m.output_experts.bias.shape) * 0.5)
        shape = (*batch, din) if batch else (T, din)
        tokens = T
        x = torch.randn(*shape).to(dtype).requires_grad_()
        logits = torch.randn(tokens, E)
        p, idx = torch.softmax(logits, -1).topk(k, dim=1)
        p = p.to(dtype).requires_grad_()
        y = m(x, p, idx)
        params = [m.experts.weight, m.output_experts.weight] + ([m.experts.bias, m.output_experts.bias] if bias
                                                                else [])
        refs = [t.detach().double().requires_grad_() for t in [x, p] + params]
        xr, pr, W1, W2 = refs[:4]
        b1, b2 = (refs[4], refs[5]) if bias else (None, None)
        xf = xr.reshape(tokens, din)
        h = torch.einsum("tk,tjhk->tjh", xf, W1[idx]) + (b1[idx] if bias else 0)
        if glu:
            hh, gg = h.chunk(2, dim=-1)
            a = act(gg) * hh
        else:
            a = act(h)
        o = torch.einsum("tjh,tjoh->tjo", a, W2[idx]) + (b2[idx] if bias else 0)
        want = (pr[:, :, None] * o).sum(1).reshape(*shape)
        tol = LAYER_TOL[dtype]
        yield {"y": (y, want, tol)}
        dy = torch.randn(y.shape).to(dtype)
        names = ["dx", "dp", "dW1", "dW2"] + (["db1", "db2"] if bias else [])
        got = torch.autograd.grad(y, [x, p] + params, dy)
        wanted = torch.autograd.grad(want, refs, dy.double())
        yield {n: (a, b, tol) for n, a, b in zip(names, got, wanted)}
    return run


FB = ("forward", "backward")

# scatter2scatter
case("scatter2scatter 37 tokens, 4 experts, top-2, 100 -> 72 (partial K, N and M blocks)",
     scatter2scatter_case(37, 4, 2, 100, 72))
case("scatter2scatter 300 tokens, 8 experts, top-2, 128 -> 300, grouped output",
     scatter2scatter_case(300, 8, 2, 128, 300, y_grouped=True))
case("scatter2scatter 300 tokens, 8 experts, top-1, 200 -> 128, bias",
     scatter2scatter_case(300, 8, 1, 200, 128, bias=True))
case("scatter2scatter 1 token, 13 experts, top-2, 64 -> 72 (11 experts without rows)",
     scatter2scatter_case(1, 13, 2, 64, 72))
case("scatter2scatter 5 tokens, 13 experts, top-1, 100 -> 200, bias, grouped output",
     scatter2scatter_case(5, 13, 1, 100, 200, bias=True, y_grouped=True))
case("scatter2scatter 129 tokens, 1 expert, top-1, 96 -> 130 (one row past a 128-row block)",
     scatter2scatter_case(129, 1, 1, 96, 130))
case("scatter2scatter 100 x 2 grouped rows in, 6 experts, 100 -> 72, grouped output",
     scatter2scatter_case(100, 6, 2, 100, 72, x_grouped=True, y_grouped=True))
case("scatter2scatter 100 x 2 grouped rows in, 6 experts, 100 -> 72, scattered output, bias",
     scatter2scatter_case(100, 6, 2, 100, 72, bias=True, x_grouped=True))
case("scatter2scatter 37 tokens, 4 experts, top-2, 100 -> 72, into a given out buffer",
     scatter2scatter_case(37, 4, 2, 100, 72, into_out=True))
for _dtype in (F16, BF16):
    case(f"scatter2scatter {SHORT[_dtype]} 200 tokens, 8 experts, top-2, 100 -> 200, bias",
         scatter2scatter_case(200, 8, 2, 100, 200, _dtype, bias=True))
    case(f"scatter2scatter {SHORT[_dtype]} 77 tokens, 4 experts, top-1, 128 -> 72, grouped output",
         scatter2scatter_case(77, 4, 1, 128, 72, _dtype, y_grouped=True))
case("torch.ops.scattermoe.scatter2scatter 37 tokens, 4 experts, top-2, 100 -> 72, bias",
     scatter2scatter_case(37, 4, 2, 100, 72, bias=True, direct=True))

# group
case("group 37 tokens, fan-out 2, K 100", group_case(37, 2, 100))
case("group 300 tokens, fan-out 2, K 300, coefficients", group_case(300, 2, 300, coeff=True))
case("group 300 tokens, fan-out 1, K 256 (whole K blocks)", group_case(300, 1, 256))
case("group 1 token, fan-out 2, K 100, coefficients", group_case(1, 2, 100, coeff=True))
case("group bf16 129 tokens, fan-out 2, K 200, coefficients", group_case(129, 2, 200, coeff=True, dtype=BF16))
case("torch.ops.scattermoe.group 37 tokens, fan-out 2, K 100, coefficients",
     group_case(37, 2, 100, coeff=True, direct=True))

# group_bwd_W
case("group_bwd_W 4 experts of 10, 0, 37, 70 rows, 100 x 72", group_bwd_W_case([10, 0, 37, 70], 100, 72))
case("group_bwd_W 4 experts of 10, 0, 37, 70 rows, 100 x 72, bias",
     group_bwd_W_case([10, 0, 37, 70], 100, 72, bias=True))
case("group_bwd_W 8 experts of 64 rows each, 128 x 256, bias", group_bwd_W_case([64] * 8, 128, 256, bias=True))
case("group_bwd_W 13 experts, 9 without rows, 300 x 200, bias",
     group_bwd_W_case([0, 5, 0, 0, 33, 0, 0, 1, 0, 0, 0, 95, 0], 300, 200, bias=True))
case("group_bwd_W 1 expert of 1 row, 100 x 72", group_bwd_W_case([1], 100, 72))
case("group_bwd_W bf16 4 experts of 10, 0, 37, 70 rows, 100 x 72, bias",
     group_bwd_W_case([10, 0, 37, 70], 100, 72, bias=True, dtype=BF16))
case("torch.ops.scattermoe.groupXtY 3 experts of 7, 50, 0 rows, 100 x 72, bias",
     group_bwd_W_case([7, 50, 0], 100, 72, bias=True, direct=True))

# single2scatter
case("single2scatter 1 row to 2 of 8 experts, 256 -> 384", single2scatter_case(1, 2, 8, 256, 384))
case("single2scatter 2 rows to 2 of 8 experts, 128 -> 256", single2scatter_case(2, 2, 8, 128, 256))
case("single2scatter 1 row to 1 of 4 experts, 128 -> 128", single2scatter_case(1, 1, 4, 128, 128))
case("single2scatter bf16 1 row to 2 of 8 experts, 256 -> 128", single2scatter_case(1, 2, 8, 256, 128, BF16))

# ParallelExperts
case("ParallelExperts 37 tokens, 4 experts, top-2, 100 -> 72, scattered in and out",
     parallel_experts_case(37, 4, 2, 100, 72), FB)
case("ParallelExperts 37 tokens, 4 experts, top-2, 100 -> 72, bias, gates",
     parallel_experts_case(37, 4, 2, 100, 72, bias=True, gates=True), FB)
case("ParallelExperts 200 tokens, 8 experts, top-2, 100 -> 200, grouped out",
     parallel_experts_case(200, 8, 2, 100, 200, grouped_out=True), FB)
case("ParallelExperts 200 tokens, 8 experts, top-2, 200 -> 100, grouped in, gates, bias",
     parallel_experts_case(200, 8, 2, 200, 100, bias=True, gates=True, grouped_in=True), FB)
case("ParallelExperts 77 tokens, 5 experts, top-1, 100 -> 72, grouped in and out, bias",
     parallel_experts_case(77, 5, 1, 100, 72, bias=True, grouped_in=True, grouped_out=True), FB)
case("ParallelExperts 300 tokens, 1 expert, top-1, 64 -> 130, gates",
     parallel_experts_case(300, 1, 1, 64, 130, gates=True), FB)
case("ParallelExperts bf16 37 tokens, 4 experts, top-2, 100 -> 72, bias, gates",
     parallel_experts_case(37, 4, 2, 100, 72, BF16, bias=True, gates=True), FB)

# MLP / GLUMLP
case("MLP 37 tokens, 4 experts, top-2, 100 -> 72 -> 100, GELU", mlp_case(37, 4, 2, 100, 72), FB)
case("MLP 300 tokens, 8 experts, top-2, 128 -> 200 -> 128, GELU, bias", mlp_case(300, 8, 2, 128, 200, bias=True),
     FB)
case("MLP 200 tokens, 8 experts, top-1, 100 -> 130 -> 100, SiLU, bias",
     mlp_case(200, 8, 1, 100, 130, bias=True, activation="silu"), FB)
case("MLP 1 token, 13 experts, top-2, 64 -> 72 -> 64, GELU", mlp_case(1, 13, 2, 64, 72), FB)
case("MLP 3 x 11 tokens, 6 experts, top-2, 100 -> 50 -> 100, GELU, bias",
     mlp_case(33, 6, 2, 100, 50, bias=True, batch=(3, 11)), FB)
case("MLP 129 tokens, 2 experts, top-2, 100 -> 72 -> 100, GELU", mlp_case(129, 2, 2, 100, 72), FB)
case("GLUMLP 37 tokens, 4 experts, top-2, 100 -> 2 x 72 -> 100, SiLU", mlp_case(37, 4, 2, 100, 72, glu=True,
                                                                            activation="silu"), FB)
case("GLUMLP 200 tokens, 8 experts, top-1, 128 -> 2 x 100 -> 128, SiLU, bias",
     mlp_case(200, 8, 1, 128, 100, bias=True, glu=True, activation="silu"), FB)
for _dtype in (F16, BF16):
    case(f"MLP {SHORT[_dtype]} 77 tokens, 4 experts, top-2, 100 -> 72 -> 100, GELU, bias",
         mlp_case(77, 4, 2, 100, 72, _dtype, bias=True), FB)
    case(f"GLUMLP {SHORT[_dtype]} 77 tokens, 4 experts, top-2, 100 -> 2 x 72 -> 100, SiLU",
         mlp_case(77, 4, 2, 100, 72, _dtype, glu=True, activation="silu"), FB)

# --- report ----------------------------------------------------------------------------------------------------

sys.exit(report(results, ARGS.json, LIBRARY, "scattermoe"))
