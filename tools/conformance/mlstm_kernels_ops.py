"""NX-AI/mlstm_kernels's Triton kernels (the mLSTM of xLSTM) on Tegula, through the conformance shim's `triton`
package, forward and backward, against the library's own native PyTorch implementations run in float64.

Result on the CPU backend (2026-12-07): 87 of 102 lines match (a case's forward and backward are a line each), in
about six minutes on two cores from an empty Tegula cache (about a minute with the kernels cached). The 15 lines
left are mlstm_kernels's own bugs, on any machine (FAIL (library)); no divergence from Triton was found. Five of
them are accesses past an array's end, which on a CPU corrupt the host's heap (the process aborts: "double free or
corruption"), so those cases run in Tegula's debug mode (triton.knobs.runtime.debug), which checks every access
and reports the first outside its array as a DeviceError naming the kernel, the line and the array:

  - DHQK not a multiple of its head-dim block (the next power of two, at most 64: 48, 96) in the chunkwise
    C-state kernels of limit_chunk, xl_chunk and xl_chunk_siging (6 lines): `vecN_initial` is loaded and
    `vecN_states` stored with `tl.arange(0, siz_b_DHQK)` unmasked (the C blocks beside them use boundary_check),
    so the last chunk's store writes past vecN_states (xl_chunk/fw_kernel_recurrent.py:228,
    limit_chunk/fw_kernel_recurrent.py:222, xl_chunk_siging/fw_kernel_recurrent.py:212; the stores before it
    write the padded lanes over the next chunk's state, a race between programs on a GPU). DHHV of any size
    matches (48, 80, 96: its accesses are block pointers with boundary checks). The launcher's check that would
    refuse such sizes is commented out (triton/kernel_param_heuristics.py, "TODO make proper tests");
  - fw_step_fused.py (the recurrent step, `recurrent_step__triton`) with DHQK or DHHV not a multiple of its block
    (2 lines): q, k, v, n are loaded and n, h stored unmasked (fw_step_fused.py:147-148);
  - fw_step_alternate.py's autotuning (1 line): its configs take blocks of 16 to 256 over unmasked loads and
    stores, so every config wider than a head dim reads and writes past the arrays; the autotuner runs each one.
    In debug mode Tegula's autotuner skips each config that faults with an AutotuneWarning, so the alternate
    step's own cases run there and match; the line that fails counts the faulting configs (10 of 12 for DHQK 64,
    DHHV 128). On a GPU, a faulting config may be the one chosen;
  - xl_chunk with chunk_size 256 (1 line, the backward): the intra chunk is 256 and the inter chunk 128, so the
    C states are saved every second inter chunk, NC_intra + 1 of them; the backward's dC kernel
    (bw_kernel_recurrent.py:137) indexes scaM_inter by inter chunk, reading one past the end. The value only
    stabilizes states that are zero or whose scale cancels, so the same case without debug mode matches while the
    bytes there are a finite float (the two lines before it; under TEGULA_DEBUG=1 those two backward lines fail
    with the same DeviceError, and the run gives 85 of 102 with nothing else outside an array);

and three of the library's host code:

  - `parallel--triton_limit_headdim` with head dim 16 (2 lines): the launcher admits 16, but every autotune config
    has BLOCK_KV 32 or 64 and the kernel asserts tl.static_assert(BLOCK_KV <= HEAD_DIM), so each config is refused
    at compile time (CompileTimeAssertionFailure, E0604), as Triton's autotuner refuses them;
  - `mlstm_recurrent_sequence__triton_alternate_step_fw` (1 line): the sequence loop passes dtype_state to its
    step function, which takes none (TypeError; its registry entry is commented out).

Tolerances were set from the float64 references and the library's own float32 native: at chunk size 256 the
native chunkwise reference run in float32 is itself 3.3e-5 off its float64 run (the float32 cumsum of the log
forget gates over a chunk), as the xl_chunk kernel is; hence float32 5e-5.

The mLSTM: with S = q k^T / sqrt(DHQK), F_t the running sum of logsigmoid(f) and D_ts = exp(F_t - F_s + i_s) for s
<= t (0 above the diagonal), H = (S * D) V / (N + eps) with the normalizer N_t = max(|sum_s (S * D)_ts|, 1) (both
stabilized by a running maximum m of the log gates, which cancels but for eps); with initial states C0, n0, m0 the
recurrence C_t = f_t C_{t-1} + i_t k_t v_t^T carries them in. The sigmoid-input-gate variant ("siging") has D_ts =
exp(F_t - F_s) sigmoid(i_s), no m, and N_t = max(|...|, 1) only with normalize=True.

The references are the library's native PyTorch implementations (mlstm_kernels/torch/.../native*), which follow the
same formulation, run on the float64 copies of the inputs (they take any dtype): `chunkwise--native_custbw` for the
chunkwise kernels, `parallel--native_custbw` for the parallel kernel, `mlstm_siging_parallel__native_custbw` for
the siging kernels, `recurrent_step__native` / `recurrent_sequence__native_fw` for the step kernels. The library's
backward, in its native references and its Triton kernels alike, holds the normalizer N constant (its custom
backward does not differentiate N = max(|rowsum|, exp(-m))), so it is not the autograd gradient of the forward
(they differ by O(1) in dq, dk, di, df; dv agrees); the references here are the custom backward, in float64. A
case checks that this is the gradient with N held constant, from the math (`native_custbw float64 = autograd of
the math with N constant`).

Cases (B = 1 or 2 sequences, NH = 2 heads; inputs q, k, v ~ N(0, 1), i ~ N(0, 1), f ~ N(2, 1) (N(0, 1) where a case
says so), initial states random; seeded per case, the seed being the case name's CRC, so -k reproduces a case's
data):

  - `chunkwise--triton_limit_chunk` (triton/chunkwise/limit_chunk: the recurrent C-state and the parallel H kernels,
    forward and backward): chunk sizes 16, 32 and 64, sequence lengths 64 to 256 (96: three chunks of 32), head
    dims (DHQK, DHHV) of (16, 16), (32, 48), (64, 64), with initial and last states; float32, bfloat16 and
    float16; DHQK 48 in debug mode;
  - `chunkwise--triton_xl_chunk` (triton/chunkwise/xl_chunk: C-state and H kernels forward; dC recurrent, dQ, dK,
    dV kernels backward): chunk sizes 64, 128 and 256 (and, below 128, the sequence length chosen by the
    heuristics), sequence lengths 16 to 512, DHQK 16 to 128 and DHHV 32 to 128 (48, 80 and 96: partial head-dim
    blocks), initial and last states, recompute_states_in_bw False (the states of the forward kept), float32,
    bfloat16 and float16; DHQK 48 and 96 in debug mode;
  - `chunkwise--triton_xl_chunk_siging` (triton/chunkwise/xl_chunk_siging), normalize True and False, float32
    and bfloat16; DHQK 48 in debug mode;
  - `parallel--triton_limit_headdim` (triton/parallel/limit_headdim, forward and backward, autotuned over the
    library's configs): sequence lengths 64 to 256, head dims 16 to 128 (it needs DHQK = DHHV), float32,
    bfloat16 and float16;
  - `recurrent_step__triton` (triton/recurrent/fw_step_fused.py): one step from random states, head dims (16, 16)
    to (128, 32), float32 and bfloat16, (32, 48) and (48, 80) in debug mode; `recurrent_step__triton_alternate`
    (fw_step_alternate.py), in debug mode, (16, 16) to (64, 128) and (48, 80); and the sequence loops over them
    (`native_sequence__triton`, and the alternate step) with initial and last states;
  - `mLSTMBackend` (torch/backend_module.py) with the xl_chunk kernel: mode "inference" (chunkwise kernel over
    chunks of 64, 32 and 16 and the triton step kernel for what remains: sequence lengths 1, 37, 100 and 150, not
    multiples of the chunk) against the native recurrent sequence, with last states; mode "train_with_padding"
    (zeros appended to a multiple of the chunk) forward and backward for sequence lengths 100 and 200 against the
    chunkwise native reference on the unpadded sequence.

Tolerances, relative to the reference's largest magnitude: float32 5e-5, bfloat16 4e-2, float16 5e-3 (the
low-precision kernels keep their states in float32 but round their inputs' products and H, and the backward's
intermediates, to the input dtype); the parallel kernel's df in bfloat16 and float16 twice that, since its
launcher forms df = rev_cumsum(sum(q dq - k dk)) sigmoid(-f) in torch in the input dtype.

mlstm_kernels is not part of Tegula; point this at a checkout (a `git archive HEAD | tar -x -C <tree>` of the
repository will do; written against commit 39d3c61741e5d2c0e6ab8922106dd236632c5139 of 2025-11-25):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/mlstm_kernels_ops.py <mlstm_kernels tree> \\
        [-k SUBSTRING] [--json out.json]

It needs einops (the native references import it). `import mlstm_kernels.torch` loads the package as it is.
Stand-ins, none of them a Triton kernel or reached from one:

  - torch.compile: the identity (chunkwise_gates.py's torch gate cumsums are decorated with it, some in modules
    the backward imports as it runs; the real one imports torch._dynamo and Inductor, which import Triton's
    compiler backends, absent from the stand-in package).

The JAX kernels (mlstm_kernels/jax, through jax-triton) are not covered, nor the baselines/ (other libraries'
kernels: flash attention, flash-linear-attention, lightning attention).

Prints one line per case and stage (ok / FAIL / FAIL (library), the largest absolute difference from the reference,
each output's difference or the first line of the error) and the totals.
"""

import argparse
import contextlib
import functools
import os
import pathlib
import sys
import warnings
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="an mlstm_kernels checkout (a directory holding mlstm_kernels/)")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
for _file in ("mlstm_kernels/torch/__init__.py", "mlstm_kernels/triton/chunkwise/xl_chunk/__init__.py",
              "mlstm_kernels/torch/backend_module.py", "mlstm_kernels/torch/chunkwise/native/fwbw.py"):
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
torch.compile = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
import mlstm_kernels  # noqa: E402
from mlstm_kernels.torch import backend_module, get_mlstm_kernel, get_mlstm_sequence_kernel  # noqa: E402
from mlstm_kernels.torch.parallel.native_siging import mlstm_siging_parallel__native_custbw  # noqa: E402
from mlstm_kernels.torch.recurrent import native_sequence, triton_step_alternate  # noqa: E402
from mlstm_kernels.torch.recurrent.native_step import mlstm_recurrent_step__native  # noqa: E402
from mlstm_kernels.torch.recurrent.triton_step import mlstm_recurrent_step__triton  # noqa: E402
assert pathlib.Path(mlstm_kernels.__file__).is_relative_to(SRC), f"another mlstm_kernels: {mlstm_kernels.__file__}"

# --- cases ---------------------------------------------------------------------------------------------------------

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
TOL = {F32: 5e-5, F16: 5e-3, BF16: 4e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
results = []
LIBRARY = {}  # case name -> why it fails: the library's own bug, on any machine
FB = ("forward", "backward")
HEAD_DIM_BLOCK_N = ("mlstm_kernels's bug: with DHQK not a multiple of its block (the next power of two, at most 64), "
                    "the chunkwise C-state kernels (limit_chunk, xl_chunk, xl_chunk_siging) load vecN_initial and "
                    "store vecN_states unmasked, past the array's end (without debug mode: heap corruption on a CPU)")
STEP_HEAD_DIMS = ("mlstm_kernels's bug: fw_step_fused.py loads q, k, v, n and stores n, h unmasked, so head dims "
                  "that are not multiples of their block (next power of two, at most 64) read and write past the "
                  "arrays (without debug mode: heap corruption on a CPU)")
STATES_EVERY_NTH = ("mlstm_kernels's bug: with chunk_size > 128 (inter chunks of 128, states saved every n-th), "
                    "the backward's dC kernel indexes scaM_inter by inter chunk in states saved per intra chunk, "
                    "reading past its end (the value enters only as a stabilizer that cancels, so without debug "
                    "mode the gradients still match while the bytes past the array are finite)")
PARALLEL_DH16 = ("mlstm_kernels's bug: the parallel launcher admits head dim 16, but every autotune config has "
                 "BLOCK_KV >= 32 and the kernel's tl.static_assert(BLOCK_KV <= HEAD_DIM) refuses each (so does "
                 "Triton's autotuner)")
ALTERNATE_CONFIGS = ("mlstm_kernels's bug: fw_step_alternate.py's autotune configs take blocks of 16 to 256 over "
                     "unmasked loads and stores, so every config whose block exceeds a head dim reads and writes "
                     "past the arrays (without debug mode, tuning corrupts the heap on a CPU; on a GPU a faulting "
                     "config may be the one chosen)")
ALTERNATE_SEQUENCE = ("mlstm_kernels's bug: the sequence loop passes dtype_state to every step function, and "
                      "mlstm_recurrent_step__triton_alternate_fw takes none (its registry entry is commented out)")

LIMIT_CHUNK = get_mlstm_kernel("chunkwise--triton_limit_chunk")
XL_CHUNK = get_mlstm_kernel("chunkwise--triton_xl_chunk")
XL_SIGING = get_mlstm_kernel("chunkwise--triton_xl_chunk_siging")
PARALLEL = get_mlstm_kernel("parallel--triton_limit_headdim")
NATIVE_CHUNKWISE = get_mlstm_kernel("chunkwise--native_custbw")
NATIVE_PARALLEL = get_mlstm_kernel("parallel--native_custbw")
SEQUENCE_TRITON = get_mlstm_sequence_kernel("native_sequence__triton")
SEQUENCE_NATIVE = get_mlstm_sequence_kernel("native_sequence__native")


def case(name, run, stages=FB, library=None):
    """library: the reason the case fails on any machine (mlstm_kernels's bug), printed as FAIL (library)."""
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    if library is not None:
        for stage in stages if len(stages) > 1 else ("",):
            LIBRARY[f"{name} {stage}" if stage else name] = library
    check(results, name, run, stages)


@contextlib.contextmanager
def debug_mode(on=True):
    """Tegula's debug mode (triton.knobs.runtime.debug), which checks every access against its array: the cases
    whose kernels access memory past their arrays run under it, so that the access is reported (a DeviceError
    naming the kernel, the line and the array) and not made."""
    saved = triton.knobs.runtime.debug
    triton.knobs.runtime.debug = on or saved
    try:
        yield
    finally:
        triton.knobs.runtime.debug = saved


def qkvif(B, NH, S, DQ, DV, dtype, f_offset=2.0):
    """q, k, v, i, f of `dtype`, leaves that want a gradient."""
    shapes = [(B, NH, S, DQ), (B, NH, S, DQ), (B, NH, S, DV), (B, NH, S), (B, NH, S)]
    xs = [torch.randn(s) for s in shapes]
    xs[4] = xs[4] + f_offset
    return [x.to(dtype).requires_grad_() for x in xs]


def initial_states(B, NH, DQ, DV, dtype=F32):
    """C0, n0, m0 (float32, as the library keeps its states)."""
    return (torch.randn(B, NH, DQ, DV).to(dtype), torch.randn(B, NH, DQ).to(dtype), torch.randn(B, NH, 1).to(dtype))


def f64(xs):
    return [x.detach().double().requires_grad_(x.requires_grad) for x in xs]


def sequence_case(kernel, reference, B, NH, S, DQ, DV, dtype=F32, init=False, last=False, kernel_kw=None,
                  reference_kw=None, f_offset=2.0, backward=True, tol=None, debug=False, tols=None):
    """kernel(q, k, v, i, f, c_initial=, n_initial=, m_initial=, return_last_states=, **kernel_kw) against
    reference(the float64 copies, ..., **reference_kw): H (and the last states), then the gradients of q, k, v, i,
    f for a random upstream gradient of H. tols: {output: tolerance} where an output's differs; debug: run under
    debug_mode."""
    tol = tol if tol is not None else TOL[dtype]
    tols = tols or {}

    def run():
        with debug_mode(debug):
            yield from checked()

    def checked():
        xs = qkvif(B, NH, S, DQ, DV, dtype, f_offset)
        states = initial_states(B, NH, DQ, DV) if init else (None, None, None)
        kw = dict(c_initial=states[0], n_initial=states[1], m_initial=states[2], return_last_states=last)
        ref_kw = dict(c_initial=None if not init else states[0].double(),
                      n_initial=None if not init else states[1].double(),
                      m_initial=None if not init else states[2].double(), return_last_states=last)
        got = kernel(*xs, **kw, **(kernel_kw or {}))
        refs = f64(xs)
        want = reference(*refs, **ref_kw, **(reference_kw or {}))
        h, w = (got[0], want[0]) if last else (got, want)
        out = {"h": (h, w, tol),
               "shape / dtype": exact(torch.tensor([*h.shape, h.dtype == dtype]), torch.tensor([B, NH, S, DV, 1]))}
        if last:
            for name, a, b in zip(("c_last", "n_last", "m_last"), got[1], want[1]):
                out[name] = (a, b, tol)
        yield out
        if not backward:
            return
        dh = torch.randn(h.shape).to(dtype)
        grads = torch.autograd.grad(h, xs, dh)
        wanted = torch.autograd.grad(w, refs, dh.double())
        yield {f"d{n}": (a, b, tols.get(f"d{n}", tol)) for n, a, b in zip("qkvif", grads, wanted)}
    return run


def native_chunkwise(chunk):
    return functools.partial(NATIVE_CHUNKWISE, chunk_size=chunk)


def normalizer_held_constant():
    """The library's custom backward (native_custbw, float64) against autograd of the parallel math written here
    with the normalizer N = max(|rowsum(S D)|, 1) detached: its gradient is that one (and the full autograd
    gradient, with N differentiated, is another)."""
    def run():
        B, NH, S, DQ, DV = 1, 2, 64, 32, 48
        xs = [x.detach().double().requires_grad_() for x in qkvif(B, NH, S, DQ, DV, F32)]
        eps = 1e-6
        h_lib = NATIVE_PARALLEL(*xs, eps=eps)
        q, k, v, i, f = xs
        Fcum = torch.nn.functional.logsigmoid(f).cumsum(-1)
        logD = Fcum[..., :, None] - Fcum[..., None, :] + i[..., None, :]
        causal = torch.ones(S, S, dtype=torch.bool).tril()
        logD = torch.where(causal, logD, float("-inf"))
        m = logD.max(-1, keepdim=True).values.detach()  # the stabilizer, as the library's: cancels but for eps
        Ct = (q @ k.transpose(-1, -2)) * DQ ** -0.5 * torch.exp(logD - m)
        N = torch.maximum(Ct.sum(-1, keepdim=True).abs(), torch.exp(-m))
        h_const = (Ct / (N.detach() + eps)) @ v
        h_full = (Ct / (N + eps)) @ v
        dh = torch.randn(h_lib.shape, dtype=F64)
        g_lib = torch.autograd.grad(h_lib, xs, dh)
        g_const = torch.autograd.grad(h_const, xs, dh, retain_graph=True)
        g_full = torch.autograd.grad(h_full, xs, dh)
        out = {"h": (h_lib, h_const, 1e-12)}
        out.update({f"d{n}": (a, b, 1e-10) for n, a, b in zip("qkvif", g_lib, g_const)})
        differs = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(g_lib[:2], g_full[:2]))
        out["full autograd dq, dk differ by > 1e-2"] = exact(torch.tensor(differs > 1e-2), torch.tensor(True))
        yield out
    return run


case("native_custbw float64 = autograd of the math with N constant (the references' backward)",
     normalizer_held_constant(), ("run",))

# chunkwise--triton_limit_chunk
for _S, _DQ, _DV, _chunk in ((128, 32, 48, 64), (64, 16, 16, 16), (256, 64, 64, 32), (96, 32, 48, 32)):
    case(f"limit_chunk S {_S}, DHQK {_DQ}, DHHV {_DV}, chunk {_chunk}",
         sequence_case(LIMIT_CHUNK, native_chunkwise(16), 2, 2, _S, _DQ, _DV, kernel_kw=dict(chunk_size=_chunk)))
case("limit_chunk S 128, DHQK 32, DHHV 48, chunk 32, initial and last states",
     sequence_case(LIMIT_CHUNK, native_chunkwise(16), 1, 2, 128, 32, 48, init=True, last=True,
                   kernel_kw=dict(chunk_size=32)))
case("limit_chunk S 128, DHQK 32, DHHV 32, chunk 64, f ~ N(0, 1)",
     sequence_case(LIMIT_CHUNK, native_chunkwise(16), 1, 2, 128, 32, 32, kernel_kw=dict(chunk_size=64),
                   f_offset=0.0))
case("limit_chunk S 128, DHQK 48, DHHV 80, chunk 64, in debug mode",
     sequence_case(LIMIT_CHUNK, native_chunkwise(16), 1, 2, 128, 48, 80, kernel_kw=dict(chunk_size=64), debug=True),
     library=HEAD_DIM_BLOCK_N)
for _dtype in (BF16, F16):
    case(f"limit_chunk {SHORT[_dtype]} S 128, DHQK 32, DHHV 48, chunk 64",
         sequence_case(LIMIT_CHUNK, native_chunkwise(16), 1, 2, 128, 32, 48, _dtype, kernel_kw=dict(chunk_size=64)))

# chunkwise--triton_xl_chunk
for _S, _DQ, _DV, _chunk in ((256, 32, 48, 128), (128, 64, 128, 64), (64, 16, 32, 128), (16, 32, 32, 128),
                             (512, 64, 96, 128), (192, 128, 80, 64)):
    case(f"xl_chunk S {_S}, DHQK {_DQ}, DHHV {_DV}, chunk {_chunk}",
         sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, _S, _DQ, _DV, kernel_kw=dict(chunk_size=_chunk)))
case("xl_chunk S 256, DHQK 32, DHHV 48, chunk 128, initial and last states",
     sequence_case(XL_CHUNK, native_chunkwise(16), 2, 2, 256, 32, 48, init=True, last=True,
                   kernel_kw=dict(chunk_size=128)))
case("xl_chunk S 256, DHQK 32, DHHV 48, chunk 64, states kept for the backward",
     sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, 256, 32, 48, init=True,
                   kernel_kw=dict(chunk_size=64, recompute_states_in_bw=False)))
case("xl_chunk S 256, DHQK 64, DHHV 64, chunk 256 (inter chunks of 128, states every 2nd), f ~ N(0, 1)",
     sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, 256, 64, 64, kernel_kw=dict(chunk_size=256),
                   f_offset=0.0))
case("xl_chunk S 256, DHQK 64, DHHV 64, chunk 256",
     sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, 256, 64, 64, kernel_kw=dict(chunk_size=256)))
case("xl_chunk S 256, DHQK 64, DHHV 64, chunk 256, in debug mode",
     sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, 256, 64, 64, kernel_kw=dict(chunk_size=256), debug=True),
     library=STATES_EVERY_NTH)
for _S, _DQ, _DV, _chunk in ((192, 96, 80, 64), (128, 48, 48, 64)):
    case(f"xl_chunk S {_S}, DHQK {_DQ}, DHHV {_DV}, chunk {_chunk}, in debug mode",
         sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, _S, _DQ, _DV, kernel_kw=dict(chunk_size=_chunk),
                       debug=True), library=HEAD_DIM_BLOCK_N)
for _dtype in (BF16, F16):
    case(f"xl_chunk {SHORT[_dtype]} S 256, DHQK 32, DHHV 48, chunk 128",
         sequence_case(XL_CHUNK, native_chunkwise(16), 1, 2, 256, 32, 48, _dtype, kernel_kw=dict(chunk_size=128)))

# chunkwise--triton_xl_chunk_siging
for _normalize in (True, False):
    for _S, _DQ, _DV, _chunk in ((128, 32, 48, 64), (256, 64, 64, 128), (64, 16, 16, 128)):
        case(f"xl_chunk_siging S {_S}, DHQK {_DQ}, DHHV {_DV}, chunk {_chunk}, normalize {_normalize}",
             sequence_case(XL_SIGING, mlstm_siging_parallel__native_custbw, 1, 2, _S, _DQ, _DV,
                           kernel_kw=dict(chunk_size=_chunk, normalize=_normalize),
                           reference_kw=dict(normalize=_normalize)))
case("xl_chunk_siging S 128, DHQK 48, DHHV 80, chunk 64, normalize True, in debug mode",
     sequence_case(XL_SIGING, mlstm_siging_parallel__native_custbw, 1, 2, 128, 48, 80,
                   kernel_kw=dict(chunk_size=64, normalize=True), reference_kw=dict(normalize=True), debug=True),
     library=HEAD_DIM_BLOCK_N)
case("xl_chunk_siging bf16 S 128, DHQK 32, DHHV 48, chunk 64, normalize True",
     sequence_case(XL_SIGING, mlstm_siging_parallel__native_custbw, 1, 2, 128, 32, 48, BF16,
                   kernel_kw=dict(chunk_size=64, normalize=True), reference_kw=dict(normalize=True)))

# parallel--triton_limit_headdim
for _S, _D in ((128, 32), (256, 64), (192, 32), (128, 128)):
    case(f"parallel limit_headdim S {_S}, DH {_D}",
         sequence_case(PARALLEL, NATIVE_PARALLEL, 2, 2, _S, _D, _D))
case("parallel limit_headdim S 64, DH 16", sequence_case(PARALLEL, NATIVE_PARALLEL, 1, 2, 64, 16, 16),
     library=PARALLEL_DH16)
# the launcher forms df = rev_cumsum(sum(q dq - k dk)) sigmoid(-f) in torch, in the input dtype: twice the tolerance
case("parallel limit_headdim bf16 S 128, DH 32",
     sequence_case(PARALLEL, NATIVE_PARALLEL, 1, 2, 128, 32, 32, BF16, tols={"df": 2 * TOL[BF16]}))
case("parallel limit_headdim fp16 S 128, DH 64",
     sequence_case(PARALLEL, NATIVE_PARALLEL, 1, 2, 128, 64, 64, F16, tols={"df": 2 * TOL[F16]}))


# recurrent step kernels
def step_case(kernel, B, NH, DQ, DV, dtype=F32, debug=False):
    """One step from random states: h and the new C, n, m against the native step in float64."""
    def run():
        with debug_mode(debug):
            yield from checked()

    def checked():
        q, k, v = torch.randn(B, NH, DQ).to(dtype), torch.randn(B, NH, DQ).to(dtype), torch.randn(B, NH, DV).to(dtype)
        i, f = torch.randn(B, NH, 1).to(dtype), (torch.randn(B, NH, 1) + 2).to(dtype)
        c, n, m = initial_states(B, NH, DQ, DV)
        h, (c1, n1, m1) = kernel(q=q, k=k, v=v, i=i, f=f, c=c, n=n, m=m)
        want, (wc, wn, wm) = mlstm_recurrent_step__native(
            q=q.double(), k=k.double(), v=v.double(), i=i.double(), f=f.double(), c=c.double(), n=n.double(),
            m=m.double(), dtype_state=F64)
        tol = TOL[dtype]
        yield {"h": (h, want, tol), "c": (c1, wc, tol), "n": (n1, wn, tol), "m": (m1, wm, tol)}
    return run


for _DQ, _DV in ((16, 16), (32, 64), (64, 128), (128, 32)):
    case(f"recurrent_step__triton DHQK {_DQ}, DHHV {_DV}", step_case(mlstm_recurrent_step__triton, 2, 2, _DQ, _DV),
         ("run",))
case("recurrent_step__triton bf16 DHQK 32, DHHV 64", step_case(mlstm_recurrent_step__triton, 2, 2, 32, 64, BF16),
     ("run",))
for _DQ, _DV in ((32, 48), (48, 80)):
    case(f"recurrent_step__triton DHQK {_DQ}, DHHV {_DV}, in debug mode",
         step_case(mlstm_recurrent_step__triton, 2, 2, _DQ, _DV, debug=True), ("run",), library=STEP_HEAD_DIMS)
for _DQ, _DV in ((16, 16), (32, 48), (64, 128), (48, 80)):
    case(f"recurrent_step__triton_alternate DHQK {_DQ}, DHHV {_DV}, in debug mode (faulting configs skipped)",
         step_case(triton_step_alternate.mlstm_recurrent_step__triton_alternate, 2, 2, _DQ, _DV, debug=True),
         ("run",))


def alternate_configs_in_bounds(DQ, DV):
    """The alternate step kernel's autotuning in debug mode: no config may fault (the autotuner reports each one
    that does as an AutotuneWarning and skips it)."""
    def run():
        kernels = (triton_step_alternate.recurrent_step_fw_kernel_C, triton_step_alternate.recurrent_step_fw_kernel_H)
        for kernel in kernels:
            kernel.cache.clear()  # tune again, whatever ran before (and not from the tuning cache on disk)
        saved = triton.knobs.autotuning.cache
        triton.knobs.autotuning.cache = False
        try:
            with debug_mode(), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                step = step_case(triton_step_alternate.mlstm_recurrent_step__triton_alternate, 1, 1, DQ, DV)
                for _ in step():
                    pass
        finally:
            triton.knobs.autotuning.cache = saved
        faults = [str(w.message) for w in caught if "DeviceError" in str(w.message)]
        if faults:
            raise AssertionError(f"{len(faults)} configs fault: {faults[0]}")
        yield {"no config faults": exact(torch.tensor(0), torch.tensor(0))}
    return run


case("recurrent_step__triton_alternate DHQK 64, DHHV 128: every autotune config in bounds",
     alternate_configs_in_bounds(64, 128), ("run",), library=ALTERNATE_CONFIGS)

SEQUENCE_NATIVE_F64 = functools.partial(SEQUENCE_NATIVE, dtype_state=F64)
for _S, _DQ, _DV in ((7, 32, 64), (20, 16, 64)):
    case(f"native_sequence__triton S {_S}, DHQK {_DQ}, DHHV {_DV}, initial and last states",
         sequence_case(SEQUENCE_TRITON, SEQUENCE_NATIVE_F64, 2, 2, _S, _DQ, _DV, init=True, last=True,
                       backward=False), ("forward",))
case("native_sequence__triton_alternate_step S 9, DHQK 32, DHHV 32, initial and last states",
     sequence_case(native_sequence.mlstm_recurrent_sequence__triton_alternate_step_fw, SEQUENCE_NATIVE_F64, 1, 2, 9,
                   32, 32, init=True, last=True, backward=False), ("forward",), library=ALTERNATE_SEQUENCE)


# mLSTMBackend
def backend(mode, chunk=64):
    config = backend_module.mLSTMBackendConfig(
        chunkwise_kernel="chunkwise--triton_xl_chunk", sequence_kernel="native_sequence__triton", step_kernel="triton",
        mode=mode, chunk_size=chunk, return_last_states=mode == "inference", autocast_kernel_dtype="float32")
    return backend_module.mLSTMBackend(config)


def backend_inference(q, k, v, i, f, c_initial=None, n_initial=None, m_initial=None, return_last_states=True):
    return backend("inference")(q, k, v, i, f, c_initial, n_initial, m_initial)


def backend_padding(q, k, v, i, f, c_initial=None, n_initial=None, m_initial=None, return_last_states=False):
    return backend("train_with_padding")(q, k, v, i, f, c_initial, n_initial, m_initial)


for _S in (1, 37, 100, 150):
    case(f"mLSTMBackend inference, xl_chunk + triton step, S {_S}, DHQK 32, DHHV 64, initial and last states",
         sequence_case(backend_inference, SEQUENCE_NATIVE_F64, 1, 2, _S, 32, 64, init=True, last=True,
                       backward=False), ("forward",))
for _S in (100, 200):
    case(f"mLSTMBackend train_with_padding, xl_chunk, S {_S}, DHQK 32, DHHV 48",
         sequence_case(backend_padding, NATIVE_PARALLEL, 1, 2, _S, 32, 48))

# --- report ----------------------------------------------------------------------------------------------------

sys.exit(report(results, ARGS.json, LIBRARY, "mlstm_kernels"))
