"""FlashInfer's Triton kernels (flashinfer-ai/flashinfer) on Tegula, through the conformance shim's `triton` package,
against float64 references written here from the math (exact ones for the index and pointer kernels):

  - flashinfer/triton (FlashInfer's Triton package): cascade.py's `merge_state`, `merge_state_in_place` (with and
    without its mask of positions to leave alone), `merge_states` and `variable_length_merge_states` (the
    attention-state merges over log2-sum-exp scores, scalar loops over tl.range, pointer truthiness tests, an
    empty segment); activation.py's `silu_and_mul` (plain, input scale, float8 E4M3 output through
    kernels/quant.py's `scale_and_clamp`); norm.py's `rms_norm` (plain, input scale, float8 output) and
    `rms_norm_add_residual` (in place, and into a separate output); sm_constraint_gemm.py's `gemm`,
    `gemm_persistent` (a persistent loop over tiles with tl.range(..., flatten=True), C = alpha * A @ B + beta * C
    by tl.fma, float16, bfloat16 and float8 E4M3 operands) and `gemm_descriptor_persistent` (tl.make_tensor_descriptor
    with triton.set_allocator, EPILOGUE_SUBTILE's reshape / permute / split); kernels/ssd_chunk_state.py's
    `chunk_cumsum_fwd` (Mamba-2's dt processing and per-chunk cumsum of dt * A, bias, softplus, limits);
    page.py's `get_batch_indices_positions_kernel` (tl.range with num_stages) and gemm.py's
    `compute_sm80_group_gemm_args` / `compute_sm90_group_gemm_args` (pointers stored as int64 values, optional
    weight indices) and `compute_padding_mapping`, launched as flashinfer/page.py's get_batch_indices_positions and
    gemm/gemm_base.py's launch_compute_sm80/sm90_group_gemm_args and pad_indptr_to_multiple_of_4 launch them
    (those modules import FlashInfer's JIT machinery; the launches here copy their few host lines);
  - flashinfer/fused_moe/cute_dsl/blackwell_sm12x: triton_compact.py's `compact_topk_ids` (pairwise
    first-occurrence masks, cumsum, min) and moe_w4a16_route_pack.py's `pack_topk_routes_by_expert` (the
    single-launch small path; the large path's atomic histogram with `sem="relaxed"`, padded prefix, block-expert
    table and atomic-rank scatter; and the same with the single-program prefix kernel the library takes under CUDA
    graph capture; with and without an expert map);
  - two Triton kernel files of FlashInfer's tests, when the tree holds tests/mamba (reported as not run
    otherwise): triton_reference/selective_state_update_varlen.py's `selective_state_update_varlen_triton`
    (Mamba-2's decoding update over a state cache: None-pointer heuristics, do_not_specialize, varlen sequences
    with an early return for an empty one, source / destination slot indices with a padding slot, speculative
    decoding's per-token state writes, the stride-0 TIE_HDIM path) against the recurrence in float64, and
    test_philox_rounding.py's `triton_philox` / `triton_philox_offsets` (tl.randint with 1, 4 and 10 rounds,
    tl.randint4x with int64 offsets past 2^32 and negative ones) bit for bit against Philox4x32 computed here as
    triton/language/random.py defines it (the file's other kernels are PTX inline asm).

Sizes are not powers of two (37 positions, 3 heads, head size 80 for the merges; 37 / 150 rows, widths 300 / 1000;
GEMMs 150x200x136 and 37x300x200; 1100 tokens x top-4 routes for the large routing path).

A case passes when every output's largest difference from its reference is at most the tolerance times the
reference's largest magnitude: float32 results 1e-5, float16 results 2e-3 (GEMMs 5e-3), bfloat16 1e-2, the
merges' log2-sum-exp in float32 1e-5 of its magnitude; float8 outputs within half an E4M3 step (2^-4) of the exact
value relative to its magnitude (floored at 2^-6), as they round a float32 value computed with other rounding
than float64's; indices, pointers and routing tables exactly (the routes within an expert's segment as a set, since
they are ranked by atomic_add, in no fixed order under Triton either).

FlashInfer is not part of Tegula; point this at a source tree holding flashinfer/ and, for the test kernels,
tests/mamba (written against commit fb28d72 of 2026-08-22, whose files this reads unchanged; `git archive HEAD
flashinfer tests/mamba | tar -x -C <tree>`):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/flashinfer_ops.py <flashinfer tree> [-k SUBSTRING]

(-k runs only the cases whose name holds SUBSTRING.) `import flashinfer` loads its JIT machinery, pynvml and its
CUDA extensions, so every flashinfer package is imported bare (its __init__ is not run) and the modules above load
from their files. What they reach that a CPU machine, or the stand-in `triton` package, lacks is stood in for
(none of it is a Triton kernel or reached from one):

  - flashinfer.utils (flashinfer/triton/utils.py imports get_compute_capability and GPUArchitectureError from it;
    the real module imports pynvml and FlashInfer's JIT environment): a module with GPUArchitectureError and
    get_compute_capability(device) = (9, 0) (cascade.py's functions require a Hopper GPU, major 9);
  - Tensor.is_cuda, while a case runs: True for tensors on TEGULA_CONFORMANCE_DEVICE
    (flashinfer/triton/utils.py's check_input asserts it), and a torch function mode that maps `device="cuda"`
    to TEGULA_CONFORMANCE_DEVICE (gemm_descriptor_persistent's allocator allocates so);
  - torch.cuda.get_device_properties without a GPU (sm_constraint_gemm.py sizes its persistent grids by the
    multiprocessor count): a device named "cpu" with the CPU backend's thread count as multiprocessors;
  - torch.cuda.is_current_stream_capturing (moe_w4a16_route_pack.py asks it; torch raises without a driver):
    True for the case that takes the library's capture path (with preallocated workspaces, as under capture),
    otherwise torch's answer on a GPU and False without one;
  - torch.cuda.device(d) for d None or a device that is not CUDA, without a GPU: a null context
    (ssd_chunk_state.py launches under `with torch.cuda.device(dt.device.index)`, None for a CPU tensor, which
    torch refuses without a driver: "invalid argument to exchangeDevice").

Autotuning: ssd_chunk_state.py's `_chunk_cumsum_fwd_kernel` is autotuned over BLOCK_SIZE_H 1 to 64; it is pinned
to one config of its own list (BLOCK_SIZE_H 2, so that 3 heads take a partial block). sm_constraint_gemm.py's
autotuned kernels have one config each (128 x 128 x 64). Nothing else is autotuned.

Library behaviour the cases step around: the GEMMs read C for the beta term even when the host allocated it
with torch.empty, so every GEMM case passes an initialized C (NaN * 0 is NaN under Triton as well).

Not covered: flashinfer/comm (multi-GPU all-gather matmul and quantized all-reduce over symmetric memory, PTX
inline asm), flashinfer/moe_ep (CuTe DSL mega-MoE runners; its few Triton kernels sit in files that import
cutlass), the other Triton references under tests/mamba/triton_reference (copies of Mamba's and vLLM's SSD and
conv1d kernels, which mamba_ops.py and vllm_ops.py cover, and the Blackwell TMA replay kernel with PTX stochastic
rounding) and benchmarks/. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set. Prints one line per case (the largest absolute difference from the
reference over the case's outputs, each output's difference, or the first line of the error) and a summary line.
"""

import contextlib
import importlib
import logging
import importlib.util
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_args = sys.argv[1:]
ONLY = None
if len(_args) == 3 and _args[1] == "-k":
    ONLY = _args.pop(2); _args.pop(1)
if len(_args) != 1:
    sys.exit("usage: flashinfer_ops.py <flashinfer tree> [-k SUBSTRING]")
TREE = pathlib.Path(_args[0]).resolve()
for _file in ("triton/cascade.py", "triton/sm_constraint_gemm.py", "triton/kernels/ssd_chunk_state.py",
              "fused_moe/cute_dsl/blackwell_sm12x/moe_w4a16_route_pack.py"):
    if not (TREE / "flashinfer" / _file).is_file():
        sys.exit(f"{TREE} holds no flashinfer/{_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import record  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------


standins.bare_packages(TREE, "flashinfer")

_utils = types.ModuleType("flashinfer.utils")


class GPUArchitectureError(Exception):
    pass


_utils.GPUArchitectureError = GPUArchitectureError
_utils.get_compute_capability = lambda device: (9, 0)
_utils.is_cvt_rs_supported = lambda *args, **kwargs: False
sys.modules["flashinfer.utils"] = _utils


CAPTURING = [False]
_real_capturing = torch.cuda.is_current_stream_capturing
torch.cuda.is_current_stream_capturing = lambda: CAPTURING[0] or (torch.cuda.is_available() and _real_capturing())
if not torch.cuda.is_available():
    _props = types.SimpleNamespace(name="cpu", multi_processor_count=triton.runtime.driver.active.utils
                                   .get_device_properties(0)["multiprocessor_count"])
    torch.cuda.get_device_properties = lambda *a, **k: _props
    _cuda_device = torch.cuda.device

    def _device_or_null(device):
        if device is None or (isinstance(device, torch.device) and device.type != "cuda"):
            return contextlib.nullcontext()
        return _cuda_device(device)

    torch.cuda.device = _device_or_null


def load(name):
    return importlib.import_module(name)


def pin(tuner, **want):
    """Keeps the first of the autotuner's configs (its list as the library made it) whose meta-parameters (and
    num_warps / num_stages) match."""
    if not isinstance(tuner, triton.runtime.Autotuner):
        raise TypeError(f"{tuner!r} is not an autotuner")
    if not hasattr(tuner, "_library_configs"):
        tuner._library_configs = list(tuner.configs)
    for c in tuner._library_configs:
        if all((c.kwargs[k] if k in c.kwargs else getattr(c, k, None)) == v for k, v in want.items()):
            tuner.configs = [c]
            tuner.cache.clear()
            return c
    raise LookupError(f"no config of {tuner!r} has {want}")


# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
E4M3 = torch.float8_e4m3fn


def check(name, case):
    """case() returns {what: (got, want, tol)}; passes when every max |got - want| <= tol * max |want|."""
    if ONLY is not None and ONLY not in name:
        return
    try:
        with standins.cuda_claims(DEVICE):
            comparisons = case()
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        results.append((name, "FAIL", float("nan"), f"{type(e).__name__}: {first}"))
        return
    record(results, name, comparisons)


def fp8_values(y, v):
    """{"y rel": ...}: the E4M3 y against the exact v, relative to |v| (floored at 2^-6), within half a step."""
    return ((y.double() - v) / v.abs().clamp_min(2.0 ** -6), torch.zeros_like(v), 2.0 ** -4 * 1.001)


# --- triton/cascade.py ------------------------------------------------------------------------------------------------

def merge64(vs, ss):
    """Attention states (v [..., n, D], s [..., n] log2-sum-exp) merged over n in float64."""
    m = ss.amax(-1, keepdim=True)
    w = torch.exp2(ss - m)
    d = w.sum(-1)
    return (vs * w[..., None]).sum(-2) / d[..., None], m[..., 0] + torch.log2(d)


def merge_state_case(dtype):
    def run():
        c = load("flashinfer.triton.cascade")
        L, H, D = 37, 3, 80
        va, vb = (torch.randn(L, H, D).to(dtype) for _ in range(2))
        sa, sb = (torch.randn(L, H) * 4 for _ in range(2))
        v, s = c.merge_state(va, sa, vb, sb)
        wv, ws = merge64(torch.stack([va.double(), vb.double()], -2), torch.stack([sa.double(), sb.double()], -1))
        tol = 1e-5 if dtype == F32 else 2e-3
        return {"v": (v, wv, tol), "s": (s, ws, 1e-5)}
    return run


def merge_in_place_case(masked, dtype=F32):
    def run():
        c = load("flashinfer.triton.cascade")
        L, H, D = 37, 3, 80
        v, vo = (torch.randn(L, H, D).to(dtype) for _ in range(2))
        s, so = (torch.randn(L, H) * 4 for _ in range(2))
        v0, s0 = v.double(), s.double()
        mask = (torch.rand(L) < 0.7).to(torch.uint8) if masked else None
        c.merge_state_in_place(v, s, vo, so, mask)
        wv, ws = merge64(torch.stack([v0, vo.double()], -2), torch.stack([s0, so.double()], -1))
        if masked:
            keep = mask.bool()
            wv = torch.where(keep[:, None, None], wv, v0)
            ws = torch.where(keep[:, None], ws, s0)
        return {"v": (v, wv, {F32: 1e-5, F16: 2e-3, BF16: 1e-2}[dtype]), "s": (s, ws, 1e-5)}
    return run


def merge_states_case(dtype):
    def run():
        c = load("flashinfer.triton.cascade")
        L, n, H, D = 37, 5, 3, 80
        v = torch.randn(L, n, H, D).to(dtype)
        s = torch.randn(L, n, H) * 4
        vm, sm = c.merge_states(v, s)
        wv, ws = merge64(v.double().transpose(1, 2), s.double().transpose(1, 2))
        return {"v": (vm, wv, {F32: 1e-5, F16: 2e-3, BF16: 1e-2}[dtype]), "s": (sm, ws, 1e-5)}
    return run


def varlen_merge_case():
    c = load("flashinfer.triton.cascade")
    lens = [3, 0, 5, 1, 4, 2]  # one position with no states
    H, D = 3, 80
    indptr = torch.tensor([0] + lens).cumsum(0)
    total = sum(lens)
    v = torch.randn(total, H, D)
    s = torch.randn(total, H) * 4
    vm, sm = c.variable_length_merge_states(v, s, indptr)
    wv, ws = [], []
    for i, n in enumerate(lens):
        a = int(indptr[i])
        if n == 0:  # the kernel's empty state: o 0, m -5e4, d 1
            wv.append(torch.zeros(H, D, dtype=F64))
            ws.append(torch.full((H,), -5e4, dtype=F64))
            continue
        x, y = merge64(v[a:a + n].double().transpose(0, 1), s[a:a + n].double().transpose(0, 1))
        wv.append(x)
        ws.append(y)
    return {"v": (vm, torch.stack(wv), 1e-5), "s": (sm, torch.stack(ws), 1e-5)}


check("merge_state 37x3x80 float32", merge_state_case(F32))
check("merge_state 37x3x80 float16", merge_state_case(F16))
check("merge_state_in_place 37x3x80", merge_in_place_case(False))
check("merge_state_in_place with a mask", merge_in_place_case(True))
check("merge_state_in_place float16 with a mask", merge_in_place_case(True, F16))
check("merge_states 37x5x3x80 float32", merge_states_case(F32))
check("merge_states 37x5x3x80 bfloat16", merge_states_case(BF16))
check("variable_length_merge_states (an empty segment)", varlen_merge_case)


# --- triton/activation.py, triton/norm.py ----------------------------------------------------------------------------

def silu_mul_case(x_scale, o_scale, dtype=F16):
    def run():
        a = load("flashinfer.triton.activation")
        b, d = 37, 1000
        x = (torch.randn(b, 2 * d) * 2).to(dtype)
        xs = torch.tensor([0.7]) if x_scale else None
        os_ = torch.tensor([3.0]) if o_scale else None
        o = a.silu_and_mul(x, xs, os_, E4M3 if o_scale else None)
        xd = x.double() * (0.7 if x_scale else 1.0)
        g, u = xd[:, :d], xd[:, d:]
        want = torch.nn.functional.silu(g) * u
        if o_scale:
            return {"o e4m3 rel": fp8_values(o, (want * 3.0).clamp(-448, 448))}
        return {"o": (o, want, 2e-3 if dtype == F16 else 1e-5)}
    return run


check("silu_and_mul 37x2000 float16", silu_mul_case(False, False))
check("silu_and_mul 37x2000 float32, input scale", silu_mul_case(True, False, F32))
check("silu_and_mul 37x2000 scales, float8 E4M3 out", silu_mul_case(True, True))


def rms64(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rms_norm_case(in_scale, out_scale, n=1000, dtype=F16):
    def run():
        m = load("flashinfer.triton.norm")
        b, eps = 37, 1e-6
        x = (torch.randn(b, n) * 2).to(dtype)
        w = (torch.rand(n) + 0.5).to(dtype)
        out = torch.empty(b, n, dtype=E4M3 if out_scale else dtype)
        xs = torch.tensor([0.5]) if in_scale else None
        os_ = torch.tensor([2.0]) if out_scale else None
        m.rms_norm(x, w, out, eps, xs, os_)
        want = rms64(x.double() * (0.5 if in_scale else 1.0), w.double(), eps)
        if out_scale:
            return {"out e4m3 rel": fp8_values(out, (want * 2.0).clamp(-448, 448))}
        return {"out": (out, want, {F32: 1e-5, F16: 2e-3, BF16: 1e-2}[dtype])}
    return run


def rms_residual_case(separate_out, dtype=F16):
    def run():
        m = load("flashinfer.triton.norm")
        b, n, eps = 37, 300, 1e-6
        x = torch.randn(b, n).to(dtype)
        r = torch.randn(b, n).to(dtype)
        w = (torch.rand(n) + 0.5).to(dtype)
        s = x.double() + r.double()
        x_out = torch.empty(b, n, dtype=dtype) if separate_out else None
        x0 = x.clone()
        m.rms_norm_add_residual(x, r, w, eps, x_out)
        y = x_out if separate_out else x
        out = {"residual = x + r": (r, s, 2e-3), "norm": (y, rms64(s, w.double(), eps), 2e-3)}
        if separate_out:
            out["x untouched"] = (x, x0.double(), 0.0)
        return out
    return run


check("rms_norm 37x1000 float16", rms_norm_case(False, False))
check("rms_norm 37x300 bfloat16", rms_norm_case(False, False, 300, BF16))
check("rms_norm 37x1000 input scale, float8 E4M3 out", rms_norm_case(True, True))
check("rms_norm_add_residual 37x300 in place", rms_residual_case(False))
check("rms_norm_add_residual 37x300 into x_out", rms_residual_case(True))


# --- triton/sm_constraint_gemm.py -------------------------------------------------------------------------------------

def gemm_case(kind, dtype, M=150, N=200, K=136, alpha=1.5, beta=0.5, subtile=False, num_sms=None):
    def run():
        g = load("flashinfer.triton.sm_constraint_gemm")
        if dtype == E4M3:
            a = (torch.randn(M, K) * 2).to(E4M3)
            bt = (torch.randn(N, K) * 2).to(E4M3)
            out_dtype = BF16
        else:
            a = (torch.randn(M, K) / K ** 0.5).to(dtype)
            bt = torch.randn(N, K).to(dtype)
            out_dtype = dtype
        c = torch.randn(M, N).to(out_dtype)
        c0 = c.double()
        if kind == "descriptor":
            y = g.gemm_descriptor_persistent(a, bt, c, alpha, beta, num_sms=num_sms, EPILOGUE_SUBTILE=subtile)
        elif kind == "persistent":
            y = g.gemm_persistent(a, bt.T, c, alpha, beta, num_sms=num_sms)
        else:
            y = g.gemm(a, bt.T, c, alpha, beta)
        # the kernels round A @ B to C's dtype before the fma with alpha and beta * C
        ab = (a.double() @ bt.double().T).to(out_dtype).double()
        tol = {F16: 5e-3, BF16: 1e-2, F32: 1e-5}[out_dtype]
        return {"C": (y, alpha * ab + beta * c0, tol), "in place": (c, y.double(), 0.0)}
    return run


check("gemm 150x136 @ 136x200 float16, alpha 1.5 beta 0.5", gemm_case("plain", F16))
check("gemm 37x300 @ 300x200 bfloat16", gemm_case("plain", BF16, M=37, N=200, K=300))
check("gemm_persistent 150x200x136 float16, 2 programs over 4 tiles", gemm_case("persistent", F16))
check("gemm_persistent float8 E4M3 -> bfloat16, num_sms 1", gemm_case("persistent", E4M3, num_sms=1))
check("gemm_descriptor_persistent 150x200x136 float16", gemm_case("descriptor", F16))
check("gemm_descriptor_persistent bfloat16 EPILOGUE_SUBTILE", gemm_case("descriptor", BF16, subtile=True))
check("gemm_descriptor_persistent float32 (BLOCK_N 64)", gemm_case("descriptor", F32, K=72))


# --- triton/kernels/ssd_chunk_state.py --------------------------------------------------------------------------------

def chunk_cumsum_case(bias, softplus, limit):
    def run():
        m = load("flashinfer.triton.kernels.ssd_chunk_state")
        pin(m._chunk_cumsum_fwd_kernel, BLOCK_SIZE_H=2)
        batch, seqlen, nheads, chunk = 2, 150, 3, 64
        dt = torch.randn(batch, seqlen, nheads) * 2
        dt[0, 3, 1] = 30.0  # past softplus's threshold of 20
        A = -torch.rand(nheads) - 0.5
        db = torch.randn(nheads) if bias else None
        lim = (0.05, 3.0) if limit else (0.0, float("inf"))
        dA_cs, dt_out = m.chunk_cumsum_fwd(dt, A, chunk, db, softplus, lim)
        x = dt.double() + (db.double() if bias else 0)
        if softplus:
            x = torch.where(x <= 20.0, torch.log1p(torch.exp(x)), x)
        x = x.clamp(lim[0], lim[1])
        nchunks = -(seqlen // -chunk)
        xp = torch.zeros(batch, nchunks * chunk, nheads, dtype=F64)
        xp[:, :seqlen] = x
        want_dt = xp.view(batch, nchunks, chunk, nheads).permute(0, 3, 1, 2)
        want_cs = (want_dt * A.double()[None, :, None, None]).cumsum(-1)
        return {"dt_out": (dt_out, want_dt, 1e-5), "dA_cumsum": (dA_cs, want_cs, 1e-5)}
    return run


check("chunk_cumsum_fwd 2x150x3 chunk 64 [BLOCK_SIZE_H 2]", chunk_cumsum_case(False, False, False))
check("chunk_cumsum_fwd dt bias, softplus, limits (0.05, 3)", chunk_cumsum_case(True, True, True))


# --- triton/page.py, triton/gemm.py -----------------------------------------------------------------------------------

def batch_indices_case():
    """get_batch_indices_positions_kernel launched as flashinfer/page.py's get_batch_indices_positions launches it
    (batch_indices filled with -1, positions with 0, grid (batch,), num_stages=2)."""
    p = load("flashinfer.triton.page")
    lens = [1, 0, 200, 45, 129]
    append_indptr = torch.tensor([0] + lens).cumsum(0).to(torch.int32)
    seq_lens = torch.tensor([5, 3, 300, 45, 1000], dtype=torch.int32)
    nnz = sum(lens) + 3  # room past the last entry stays untouched
    batch_indices = torch.full((nnz,), -1, dtype=torch.int32)
    positions = torch.zeros((nnz,), dtype=torch.int32)
    p.get_batch_indices_positions_kernel[(len(lens),)](append_indptr, seq_lens, batch_indices, positions, num_stages=2)
    wb = torch.full((nnz,), -1, dtype=torch.int64)
    wp = torch.zeros((nnz,), dtype=torch.int64)
    for b, n in enumerate(lens):
        a = int(append_indptr[b])
        wb[a:a + n] = b
        wp[a:a + n] = torch.arange(n) + int(seq_lens[b]) - n
    return {"batch_indices": (batch_indices.long(), wb, 0.0), "positions": (positions.long(), wp, 0.0)}


check("get_batch_indices_positions 5 requests (one empty)", batch_indices_case)


def group_gemm_args_case(sm, w_column_major, with_indices):
    """compute_sm80/sm90_group_gemm_args launched as gemm_base.py's launch_compute_sm80/sm90_group_gemm_args
    launch them: problem sizes, and the x / w / y pointers of each segment stored as int64 values."""
    def run():
        g = load("flashinfer.triton.gemm")
        kernel = g.compute_sm80_group_gemm_args if sm == 80 else g.compute_sm90_group_gemm_args
        seg = [45, 0, 70, 35]
        batch, d_in, d_out, n_w = len(seg), 96, 136, 3
        x = torch.randn(sum(seg), d_in).to(F16)
        weights = (torch.randn(n_w, d_out, d_in) if w_column_major else torch.randn(n_w, d_in, d_out)).to(F16)
        y = torch.empty(sum(seg), d_out, dtype=F16)
        seg_indptr = torch.tensor([0] + seg).cumsum(0).to(torch.int64)
        w_idx = torch.tensor([2, 0, 1, 2], dtype=torch.int64) if with_indices else None
        problems = torch.empty((batch, 3), dtype=torch.int32)
        ptrs = [torch.empty(batch, dtype=torch.int64) for _ in range(6)]
        kernel[(batch,)](problems, *ptrs, x, weights, y, seg_indptr, w_idx, d_in, d_out, w_column_major)
        wi = w_idx if with_indices else torch.arange(batch)
        es = 2  # float16
        want_problems = torch.tensor([[m, d_out, d_in] for m in seg])
        want = [torch.tensor([x.data_ptr() + int(seg_indptr[i]) * d_in * es for i in range(batch)]),
                torch.tensor([weights.data_ptr() + int(wi[i]) * d_in * d_out * es for i in range(batch)]),
                torch.tensor([y.data_ptr() + int(seg_indptr[i]) * d_out * es for i in range(batch)]),
                torch.full((batch,), d_in), torch.full((batch,), d_in if w_column_major else d_out),
                torch.full((batch,), d_out)]
        names = ["x ptrs", "w ptrs", "y ptrs", "x ld", "w ld", "y ld"]
        out = {"problems": (problems.long(), want_problems, 0.0)}
        for name, got, w in zip(names, ptrs, want):  # pointers compared as offsets from the first expected one
            out[name] = ((got - w[0]).double(), (w - w[0]).double(), 0.0)
        return out
    return run


check("compute_sm80_group_gemm_args 4 segments (one empty)", group_gemm_args_case(80, False, False))
check("compute_sm90_group_gemm_args column-major weights, weight indices", group_gemm_args_case(90, True, True))


def padding_mapping_case():
    """compute_padding_mapping launched as gemm_base.py's pad_indptr_to_multiple_of_4 launches it."""
    g = load("flashinfer.triton.gemm")
    seg = [5, 0, 13, 4, 7]
    m_indptr = torch.tensor([0] + seg).cumsum(0).to(torch.int32)
    m = m_indptr[1:] - m_indptr[:-1]
    m = m + 3 - (m + 3) % 4
    padded = torch.cat((torch.zeros((1,), dtype=m.dtype), m)).cumsum(dim=0, dtype=m.dtype)
    m_rank = torch.zeros((int(m_indptr[-1]),), dtype=m_indptr.dtype)
    padded_rank = torch.zeros((int(m_indptr[-1]),), dtype=m_indptr.dtype)
    g.compute_padding_mapping[(len(seg),)](m_indptr, padded, m_rank, padded_rank)
    wr = torch.arange(int(m_indptr[-1]))
    wp = torch.cat([int(padded[i]) + torch.arange(n) for i, n in enumerate(seg)])
    return {"m_rank": (m_rank.long(), wr, 0.0), "padded_m_rank": (padded_rank.long(), wp, 0.0)}


check("compute_padding_mapping 5 segments (one empty)", padding_mapping_case)


# --- fused_moe/cute_dsl/blackwell_sm12x: routing kernels --------------------------------------------------------------

def compact_case(pairs, experts):
    def run():
        m = load("flashinfer.fused_moe.cute_dsl.blackwell_sm12x.triton_compact")
        ids = torch.randint(0, experts, (pairs,), dtype=torch.int32)
        compact = torch.full((pairs,), -7, dtype=torch.int32)
        wexp = torch.full((pairs,), -7, dtype=torch.int32)
        count = torch.zeros(1, dtype=torch.int32)
        m.compact_topk_ids(ids, compact, wexp, count)
        order = []
        for e in ids.tolist():
            if e not in order:
                order.append(e)
        want_c = torch.tensor([order.index(e) for e in ids.tolist()])
        want_w = torch.full((pairs,), -7, dtype=torch.int64)
        want_w[:len(order)] = torch.tensor(order)
        return {"compact ids": (compact.long(), want_c, 0.0), "local -> global": (wexp.long(), want_w, 0.0),
                "active experts": (count.long(), torch.tensor([len(order)]), 0.0)}
    return run


check("compact_topk_ids 37 routes over 20 experts", compact_case(37, 20))
check("compact_topk_ids 300 routes over 100 experts", compact_case(300, 100))


def routes_case(tokens, topk, experts, block, expert_map=False, capture=False):
    def run():
        m = load("flashinfer.fused_moe.cute_dsl.blackwell_sm12x.moe_w4a16_route_pack")
        ids = torch.randint(0, experts, (tokens, topk), dtype=torch.int32)
        ids[0, 0] = -1  # an invalid route
        emap = None
        mapped = ids.long().clone()
        if expert_map:  # global -> local, a third of the experts elsewhere (-1)
            emap = torch.arange(experts, dtype=torch.int32)
            emap[torch.randperm(experts)[: experts // 3]] = -1
            local = (emap >= 0).nonzero()[:, 0]
            emap[local] = torch.arange(len(local), dtype=torch.int32)
            mapped = torch.where(ids >= 0, emap.long()[ids.long().clamp_min(0)], -1)
        numel = ids.numel()
        kw = {}
        if capture:  # preallocated workspaces, as under CUDA graph capture
            from flashinfer.fused_moe.cute_dsl.blackwell_sm12x.moe_w4a16_host import (max_packed_route_slots,
                                                                                     route_pack_numel_capacity)
            cap = max_packed_route_slots(route_pack_numel_capacity(numel, topk=topk), block, experts)
            kw = dict(packed_route_indices=torch.empty(cap, dtype=torch.int32),
                      block_expert_ids=torch.empty(-(cap // -block), dtype=torch.int32),
                      packed_route_count=torch.empty(1, dtype=torch.int32),
                      expert_offsets=torch.empty(experts + 1, dtype=torch.int32))
        CAPTURING[0] = capture
        try:
            packed, block_ids, count = m.pack_topk_routes_by_expert(ids, block, experts, expert_map=emap, **kw)
        finally:
            CAPTURING[0] = False
        flat = mapped.reshape(-1)
        valid = (flat >= 0) & (flat < experts)
        counts = torch.bincount(flat[valid], minlength=experts)
        padded = (counts + block - 1) // block * block
        starts = torch.cat([torch.zeros(1, dtype=torch.int64), padded.cumsum(0)])
        total = int(padded.sum())
        # each expert's segment: its routes (as a set: atomic ranks), then the filler numel up to the padding
        got_seg, want_seg = [], []
        for e in range(experts):
            a, n, p = int(starts[e]), int(counts[e]), int(padded[e])
            got_seg.append(torch.sort(packed[a:a + p].long()).values)
            routes = (flat == e).nonzero()[:, 0]
            want_seg.append(torch.sort(torch.cat([routes, torch.full((p - n,), numel)])).values)
        rest = packed[total:].long()
        want_blocks = torch.full((block_ids.numel(),), -1, dtype=torch.int64)
        for e in range(experts):
            want_blocks[int(starts[e]) // block:int(starts[e + 1]) // block] = e
        return {"packed routes (sorted within experts)": (torch.cat(got_seg), torch.cat(want_seg), 0.0),
                "filler past the total": (rest, torch.full_like(rest, numel), 0.0),
                "block expert ids": (block_ids.long(), want_blocks, 0.0),
                "packed route count": (count.long(), torch.tensor([total]), 0.0)}
    return run


check("pack_topk_routes_by_expert 37 tokens x top-2, 10 experts, block 16 (small path)", routes_case(37, 2, 10, 16))
check("pack_topk_routes_by_expert small path with an expert map", routes_case(37, 2, 10, 16, expert_map=True))
check("pack_topk_routes_by_expert 1100 x top-4, 24 experts, block 32 (atomic count)", routes_case(1100, 4, 24, 32))
check("pack_topk_routes_by_expert large, expert map", routes_case(1100, 4, 24, 32, expert_map=True))
check("pack_topk_routes_by_expert large, capture path (prefix kernel)", routes_case(1100, 4, 24, 32, capture=True))


# --- tests/mamba/triton_reference/selective_state_update_varlen.py ----------------------------------------------------

def load_test_file(relpath, name):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TREE / relpath)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def ssu_case(kind):
    """selective_state_update_varlen_triton: the Mamba-2 decoding state update over a state cache, against the
    recurrence in float64 (state = state * exp(A dt) + B dt x, out = C . state + D x, gated by silu(z)), with
    dt bias and softplus, 4 heads over 2 groups, head dim 40 (two blocks of 32, one partial), dstate 12 (a block
    of 16)."""
    def run():
        m = load_test_file("tests/mamba/triton_reference/selective_state_update_varlen.py",
                           "flashinfer_tests_mamba_selective_state_update_varlen")
        pad = m.PAD_SLOT_ID
        H, G, P, S = 4, 2, 40, 12
        slots = 9
        lens = {"batch": [1] * 5, "varlen": [2, 0, 3, 1], "spec": [3, 2, 4], "tied": [2, 3]}[kind]
        T = sum(lens)
        cache = torch.randn(slots, H, P, S)
        x = torch.randn(T, H, P)
        tied = kind == "tied"
        if tied:  # one dt and one A per head, broadcast by stride 0 (the kernel's TIE_HDIM path)
            dt = torch.randn(T, H, 1).expand(T, H, P)
            A = (-torch.rand(H, 1, 1) - 0.2).expand(H, P, S)
            dt_bias = torch.randn(H, 1).expand(H, P)
        else:
            dt = torch.randn(T, H, P)
            A = -torch.rand(H, P, S) - 0.2
            dt_bias = torch.randn(H, P)
        B, C = torch.randn(T, G, S), torch.randn(T, G, S)
        D, z = torch.randn(H, P), torch.randn(T, H, P)
        cu = torch.tensor([0] + lens).cumsum(0).to(torch.int32) if kind != "batch" else None
        n = len(lens)
        src = dst = acc = None
        if kind == "batch":
            src = None
        elif kind in ("varlen", "tied"):
            src = torch.tensor([[5], [2], [7], [pad]][:n], dtype=torch.int32)  # the last a padding slot
            dst = torch.tensor([[1], [3], [0], [4]][:n], dtype=torch.int32)
        else:  # speculative decoding: a source and a destination slot per token, the start at num_accepted - 1
            width = max(lens)
            src = torch.tensor([[2, 4, 6, 8], [1, 3, pad, pad], [0, 5, 7, pad]], dtype=torch.int32)[:, :width]
            dst = torch.tensor([[8, 6, 4, pad], [3, pad, pad, pad], [5, pad, 0, 1]], dtype=torch.int32)[:, :width]
            acc = torch.tensor([2, 1, 3], dtype=torch.int32)
        cache0 = cache.double().clone()
        out = m.selective_state_update_varlen_triton(cache, x, dt, A, B, C, D=D, dt_bias=dt_bias, z=z, dt_softplus=True,
                                                     state_batch_indices=src, dst_state_batch_indices=dst,
                                                     pad_slot_id=pad, num_accepted_tokens=acc, cu_seqlens=cu)
        want_cache = cache0.clone()
        want_out = torch.empty(T, H, P, dtype=F64)
        group = torch.arange(H) // (H // G)
        starts = [0] + list(torch.tensor(lens).cumsum(0).tolist())
        for b in range(n):
            init = max(int(acc[b]) - 1, 0) if acc is not None else 0
            slot = b if src is None else int(src[b, init])
            h = torch.zeros(H, P, S, dtype=F64) if slot == pad else cache0[slot].clone()
            for i in range(lens[b]):
                t = starts[b] + i
                d = dt[t].double() + dt_bias.double()
                d = torch.where(d <= 20.0, torch.log1p(torch.exp(d)), d)
                h = h * torch.exp(A.double() * d[..., None]) + B[t].double()[group][:, None, :] * d[..., None] * \
                    x[t].double()[..., None]
                y = (h * C[t].double()[group][:, None, :]).sum(-1) + x[t].double() * D.double()
                want_out[t] = y * torch.nn.functional.silu(z[t].double())
                if acc is not None and int(dst[b, i]) != pad and slot != pad:
                    want_cache[int(dst[b, i])] = h
            if acc is None and lens[b] > 0 and slot != pad:
                want_cache[b if dst is None else int(dst[b, 0])] = h
        return {"out": (out, want_out, 1e-5), "state cache": (cache, want_cache, 1e-5)}
    return run


if (TREE / "tests" / "mamba" / "triton_reference" / "selective_state_update_varlen.py").is_file():
    check("selective_state_update_varlen 5 sequences of 1 token", ssu_case("batch"))
    check("selective_state_update_varlen varlen 2/0/3/1, state indices, a padding slot", ssu_case("varlen"))
    check("selective_state_update_varlen speculative decoding, per-token slots", ssu_case("spec"))
    check("selective_state_update_varlen TIE_HDIM (stride-0 dt, A, dt_bias)", ssu_case("tied"))
else:
    results.append(("selective_state_update_varlen", "skip", float("nan"),
                    "the tree holds no tests/mamba/triton_reference/selective_state_update_varlen.py"))


# --- tests/mamba/test_philox_rounding.py: Triton's Philox through tl.randint / tl.randint4x ---------------------------

MASK32 = (1 << 32) - 1


def philox64(seed, offsets, n_rounds):
    """Philox4x32 as triton/language/random.py's randint4x computes it (counter: offset's low and high 32 bits,
    0, 0; key: the seed's low and high 32 bits), in Python integers: four int64 tensors of uint32 values."""
    out = []
    for off in offsets.tolist():
        c0, c1, c2, c3 = off & MASK32, (off >> 32) & MASK32, 0, 0
        k0, k1 = seed & MASK32, (seed >> 32) & MASK32
        for _ in range(n_rounds):
            _c0, _c2 = c0, c2
            c0 = ((0xCD9E8D57 * _c2) >> 32) ^ c1 ^ k0
            c2 = ((0xD2511F53 * _c0) >> 32) ^ c3 ^ k1
            c1 = (0xCD9E8D57 * _c2) & MASK32
            c3 = (0xD2511F53 * _c0) & MASK32
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        out.append((c0, c1, c2, c3))
    return torch.tensor(out, dtype=torch.int64)


def as_uint32(t):
    return t.long() & MASK32


def load_philox_tests():
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found"
    return load_test_file("tests/mamba/test_philox_rounding.py", "flashinfer_tests_mamba_test_philox_rounding")


def philox_case(seed, n_rounds, n=3000):
    def run():
        t = load_philox_tests()
        got = t.triton_philox(seed, n, n_rounds)
        want = philox64(seed, torch.arange(n), n_rounds)[:, 0]
        return {"randint (uint32 bits)": (as_uint32(got).double(), want.double(), 0.0)}
    return run


def philox_offsets_case(seed, n_rounds):
    def run():
        t = load_philox_tests()
        offsets = torch.cat([torch.randint(0, 2 ** 40, (500,)), torch.tensor([0, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1]),
                             torch.randint(-2 ** 40, 0, (3,))])
        got = t.triton_philox_offsets(seed, offsets, n_rounds)
        want = philox64(seed, offsets, n_rounds)
        return {"randint4x (uint32 bits)": (as_uint32(got).double(), want.double(), 0.0)}
    return run


if (TREE / "tests" / "mamba" / "test_philox_rounding.py").is_file():
    for _seed, _rounds in ((0, 10), (42, 1), (123456, 4), (2 ** 31 - 1, 10)):
        check(f"tl.randint (test_philox_rounding) seed {_seed} rounds {_rounds} n 3000", philox_case(_seed, _rounds))
    check("tl.randint4x int64 offsets past 2^32 seed 0xDEADBEEF", philox_offsets_case(0xDEADBEEF, 10))
    check("tl.randint4x int64 offsets seed 42 rounds 4", philox_offsets_case(42, 4))
else:
    results.append(("tl.randint (test_philox_rounding)", "skip", float("nan"),
                    "the tree holds no tests/mamba/test_philox_rounding.py"))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:78s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {sum(r[1] != 'skip' for r in results)} FlashInfer cases match the "
      f"references" + (f" ({sum(r[1] == 'skip' for r in results)} not run)" if any(r[1] == 'skip' for r in results)
                       else ""))
