"""FBGEMM's Triton kernels on Tegula, through the conformance shim's `triton` package, forward and backward,
against float64 references: FBGEMM's own CPU implementations (fbgemm_gpu/sll/cpu/cpu_sll.py, the torch paths of
fp8_gemm.py, triton/quantize_ref.py), run in float64 where they are pure torch, or the math written here.

pytorch/FBGEMM, commit 71d6f8b of 2026-08-21: fbgemm_gpu/fbgemm_gpu/sll/triton (jagged tensor ops of its
sequence-learning library), fbgemm_gpu/fbgemm_gpu/triton (MX4 quantization) and
fbgemm_gpu/experimental/gemm/triton_gemm/fp8_gemm.py (row-wise float8 quantization).

Result on the CPU backend (2026-12-07): 45 of 45 lines match (a case's forward and backward are a line each), in
about a minute on two cores from an empty Tegula cache. fp8_gemm.py did not load at first: Tegula refused, while the
module was imported, autotune configs naming Triton's AMD options (waves_per_eu, matrix_instr_nonkdim, kpack),
which Triton takes until such a config launches; fixed. No bug of FBGEMM's was found.

Cases (inputs seeded per case by the CRC of its name, so -k reproduces a case's data; sequence lengths drawn
from 0 to the maximum, so some are empty, and widths that are not powers of two where the kernels allow):

  - sll: jagged_dense_bmm and jagged_jagged_bmm (JaggedDenseBmm / JaggedJaggedBmm, forward and backward, whose
    backward runs the other kernel), jagged_softmax (JaggedSoftmax) and jagged2_softmax (both orientations),
    jagged_dense_elementwise_add (JaggedDenseAdd, through fbgemm_gpu.triton.jagged's kernels),
    jagged_dense_elementwise_mul_jagged_out, array_jagged_bmm_jagged_out and jagged_jagged_bmm_jagged_out,
    jagged2_to_padded_dense (and its backward, padded_dense_to_jagged2), dense_jagged_cat_jagged_out,
    jagged_self_substraction_jagged_out, jagged_flash_attention_basic with and without its mask,
    jagged_dense_flash_attention and multi_head_jagged_flash_attention, forward and backward;
  - MX4: triton_quantize_mx4 / triton_dequantize_mx4 (E2M1, group sizes 32 and 64, rounding modes nearest,
    floor, even and ceil) against py_quantize_mx4 / py_dequantize_mx4 bit for bit;
  - fp8_gemm.triton_quantize_fp8_row (2-D to 4-D inputs, scale upper bounds, zero_start_index_M) and
    dequantize_fp8_row, against the library's own torch path (quantize_fp8_row's use_triton=False).

Tolerances, relative to the reference's largest magnitude: float32 1e-5 (allow_tf32 off); float8 codes within
half an e4m3 step of the exact quotient; the copies and MX4 exactly.

FBGEMM is not part of Tegula; point this at a tree holding fbgemm_gpu/fbgemm_gpu and
fbgemm_gpu/experimental/gemm (a `git archive HEAD fbgemm_gpu/fbgemm_gpu/sll fbgemm_gpu/fbgemm_gpu/triton
fbgemm_gpu/experimental/gemm/triton_gemm` of the repository will do):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/fbgemm_ops.py <FBGEMM tree> [-k SUBSTRING] \\
        [--json out.json]

Stand-ins, none of them a Triton kernel or reached from one:

  - the fbgemm_gpu package imports bare, with the installed package's layout (fbgemm_gpu/fbgemm_gpu as
    `fbgemm_gpu`, fbgemm_gpu/experimental as `fbgemm_gpu.experimental`); fbgemm_gpu/__init__.py and
    fbgemm_gpu/sll/__init__.py load its compiled operator library;
  - torch.cuda.device(None) a null context without a GPU (the fp8 wrappers enter `torch.cuda.device(a.device.index)`);
  - for jagged_dense_elementwise_add only, device="cuda" allocations and Tensor.cuda() to the conformance device
    (fbgemm_gpu/triton/jagged allocates its outputs on "cuda").

Not covered: the fp8 block and group quantizers and all fp8 / grouped GEMMs (their wrappers refuse or bypass
CPU tensors: `assert x.device != cpu`, or the torch fallback), and gen_ai/moe (its __init__ loads CUDA operator
libraries). fp8_gemm.py's AMD-tuned autotune configs (waves_per_eu, kpack) load, as under Triton.

Prints one line per case and stage (ok / FAIL, the largest absolute difference from the reference, each output's
difference or the first line of the error) and the totals.
"""

import argparse
import contextlib
import os
import pathlib
import sys
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="an FBGEMM tree (a directory holding fbgemm_gpu/)")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve() / "fbgemm_gpu"
for _file in ("fbgemm_gpu/sll/triton/triton_jagged_bmm.py", "fbgemm_gpu/sll/cpu/cpu_sll.py",
              "fbgemm_gpu/triton/quantize.py", "experimental/gemm/triton_gemm/fp8_gemm.py"):
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, fp8_codes, report  # noqa: E402
import standins  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- loading -------------------------------------------------------------------------------------------------------

_root = types.ModuleType("fbgemm_gpu")
_root.__path__ = [str(SRC / "fbgemm_gpu"), str(SRC)]
sys.modules["fbgemm_gpu"] = _root
standins.bare_packages(SRC, "fbgemm_gpu", as_is=("fbgemm_gpu.sll.triton", "fbgemm_gpu.triton",
                                                 "fbgemm_gpu.triton.jagged"))
if DEVICE != "cuda":
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda index: contextlib.nullcontext() if index is None else _cuda_device(index)

import fbgemm_gpu.sll.triton as sll  # noqa: E402
from fbgemm_gpu.sll.cpu import cpu_sll  # noqa: E402
from fbgemm_gpu.sll.triton import triton_jagged_softmax as sll_softmax  # noqa: E402
from fbgemm_gpu.sll.triton import triton_jagged_dense_elementwise_add as sll_add  # noqa: E402
from fbgemm_gpu.sll.triton import triton_jagged2_to_padded_dense as sll_j2p  # noqa: E402
from fbgemm_gpu.triton import quantize as mx4, quantize_ref as mx4_ref  # noqa: E402
from fbgemm_gpu.triton.common import RoundingMode  # noqa: E402
import fbgemm_gpu.experimental.gemm.triton_gemm.fp8_gemm as fp8  # noqa: E402

for _mod in (sll, cpu_sll, mx4, fp8):
    assert pathlib.Path(_mod.__file__).is_relative_to(SRC), f"another copy: {_mod.__file__}"

@contextlib.contextmanager
def cuda_tensors():
    """fbgemm_gpu.triton.jagged allocates with device="cuda" and moves offsets with Tensor.cuda()."""
    if DEVICE == "cuda":
        yield
        return
    # Patched functions rather than standins.cuda_claims: its TorchFunctionMode did not reach the allocations
    # of the backward, which autograd's engine runs.
    real = {name: getattr(torch, name) for name in ("empty", "zeros")}
    real_cuda = torch.Tensor.cuda

    def on_device(fn):
        return lambda *a, **k: fn(*a, **{**k, "device": DEVICE} if standins.is_cuda(k.get("device")) else k)

    torch.Tensor.cuda = lambda self, *a, **k: self.to(DEVICE)
    for name, fn in real.items():
        setattr(torch, name, on_device(fn))
    try:
        yield
    finally:
        torch.Tensor.cuda = real_cuda
        for name, fn in real.items():
            setattr(torch, name, fn)


# --- cases ---------------------------------------------------------------------------------------------------------

F32, F64 = torch.float32, torch.float64
TOL = 1e-5
results = []


def case(name, run, stages=("run",)):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    check(results, name, run, stages)


def jagged(B, N, empty=True):
    """B lengths in [0 or 1, N] (the last one N, so max_seq_len is reached) and their int64 offsets."""
    lengths = torch.randint(0 if empty else 1, N + 1, (B,))
    lengths[-1] = N
    return lengths, torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])


def padded(x, offsets, N):
    """[sum_B, ...] -> [B, N, ...] with zeros."""
    B = len(offsets) - 1
    out = x.new_zeros(B, N, *x.shape[1:])
    for b in range(B):
        s, e = int(offsets[b]), int(offsets[b + 1])
        out[b, :e - s] = x[s:e]
    return out


def unpadded(y, offsets):
    return torch.cat([y[b, :int(offsets[b + 1] - offsets[b])] for b in range(len(offsets) - 1)])


def leaves(*ts):
    """(float32 leaves for the kernels, float64 leaves for the reference) of the same values."""
    got = [t.to(F32).requires_grad_() for t in ts]
    ref = [t.detach().double().requires_grad_() for t in got]
    return got, ref


def fwd_bwd(y, want, got_in, ref_in, names):
    """Yields the forward comparison, then the gradients of a random cotangent."""
    yield {"y": (y, want, TOL)}
    dy = torch.randn(y.shape)
    g = torch.autograd.grad(y, got_in, dy)
    w = torch.autograd.grad(want, ref_in, dy.double())
    yield {f"d{n}": (a, b, TOL) for n, a, b in zip(names, g, w)}


def jagged_dense_bmm_case(B, N, D, T):
    def run():
        _, off = jagged(B, N)
        (x, y), (xr, yr) = leaves(torch.randn(int(off[-1]), D), torch.randn(B, D, T))
        got = sll.jagged_dense_bmm(x, y, off, N, allow_tf32=False, use_fbgemm_kernel=False)
        want = unpadded(torch.bmm(padded(xr, off, N), yr), off)
        yield from fwd_bwd(got, want, [x, y], [xr, yr], "xy")
    return run


def jagged_jagged_bmm_case(B, N, D, T):
    def run():
        _, off = jagged(B, N)
        (x, y), (xr, yr) = leaves(torch.randn(int(off[-1]), D), torch.randn(int(off[-1]), T))
        got = sll.jagged_jagged_bmm(x, y, off, N, allow_tf32=False, use_fbgemm_kernel=False)
        want = torch.bmm(padded(xr, off, N).transpose(1, 2), padded(yr, off, N))
        yield from fwd_bwd(got, want, [x, y], [xr, yr], "xy")
    return run


def jagged_softmax_case(B, N, D):
    def run():
        _, off = jagged(B, N)
        (x,), (xr,) = leaves(torch.randn(int(off[-1]), D) * 3)
        got = sll_softmax.JaggedSoftmax.apply(x, off, N)
        want = torch.cat([torch.softmax(xr[int(off[b]):int(off[b + 1])], 0) for b in range(B)])
        yield from fwd_bwd(got, want, [x], [xr], "x")
    return run


def square_jagged(B, N):
    """Jagged N_i x N_i matrices: lengths, offsets, total lengths N_i^2 and their offsets."""
    lengths, off = jagged(B, N)
    total = lengths * lengths
    return lengths, off, total, torch.cat([torch.zeros(1, dtype=torch.int64), total.cumsum(0)])


def jagged2_softmax_case(B, N, transpose):
    def run():
        lengths, off, _, off_total = square_jagged(B, N)
        (x,), (xr,) = leaves(torch.randn(int(off_total[-1])) * 3)
        got = sll.jagged2_softmax(x, off, off_total, N, transpose)
        want = torch.cat([torch.softmax(xr[int(off_total[b]):int(off_total[b + 1])].view(int(n), int(n)),
                                        0 if transpose else 1).flatten() for b, n in enumerate(lengths)])
        yield from fwd_bwd(got, want, [x], [xr], "x")
    return run


def jagged_dense_add_case(B, N, D):
    def run():
        _, off = jagged(B, N)
        (x, y), (xr, yr) = leaves(torch.randn(int(off[-1]), D), torch.randn(B, N, D))
        with cuda_tensors():
            got = sll_add.JaggedDenseAdd.apply(x, off, y, N)
            want = unpadded(padded(xr, off, N) + yr, off)
            yield from fwd_bwd(got, want, [x, y], [xr, yr], "xy")
    return run


def jagged_dense_mul_case(B, N):
    def run():
        lengths, off, _, off_total = square_jagged(B, N)
        (x,), (xr,) = leaves(torch.randn(int(off_total[-1])))
        y = torch.randn(N, N)
        got = sll.jagged_dense_elementwise_mul_jagged_out(x, y, lengths, off_total, N)
        want = torch.cat([(xr[int(off_total[b]):int(off_total[b + 1])].view(int(n), int(n)) *
                           y.double()[:n, :n]).flatten() for b, n in enumerate(lengths)])
        yield from fwd_bwd(got, want, [x], [xr], "x")
    return run


def array_jagged_bmm_case(B, N, D):
    """z_b = X_b (N_b x N_b, flattened) @ y_b (N_b x D)."""
    def run():
        lengths, off, total, off_total = square_jagged(B, N)
        (x, y), (xr, yr) = leaves(torch.randn(int(off_total[-1])), torch.randn(int(off[-1]), D))
        got = sll.array_jagged_bmm_jagged_out(x, y, total, off_total, lengths, off, lengths, off, N, False)
        want = torch.cat([xr[int(off_total[b]):int(off_total[b + 1])].view(int(n), int(n)) @
                          yr[int(off[b]):int(off[b + 1])] for b, n in enumerate(lengths)])
        yield from fwd_bwd(got, want, [x, y], [xr, yr], "xy")
    return run


def jagged_jagged_bmm_out_case(B, N, D):
    """z_b = x_b y_b^T (N_b x N_b, flattened)."""
    def run():
        lengths, off, total, off_total = square_jagged(B, N)
        (x, y), (xr, yr) = leaves(torch.randn(int(off[-1]), D), torch.randn(int(off[-1]), D))
        got = sll.jagged_jagged_bmm_jagged_out(x, y, lengths, off, lengths, off, total, off_total, N, False)
        want = torch.cat([(xr[int(off[b]):int(off[b + 1])] @ yr[int(off[b]):int(off[b + 1])].T).flatten()
                          for b in range(B)])
        yield from fwd_bwd(got, want, [x, y], [xr, yr], "xy")
    return run


def jagged2_to_padded_case(B, N, pad):
    def run():
        lengths, off, _, off_total = square_jagged(B, N)
        (x,), (xr,) = leaves(torch.randn(int(off_total[-1])))
        got = sll.jagged2_to_padded_dense(x, off_total, N, pad)
        want = cpu_sll.cpu_jagged2_to_padded_dense(xr, off_total, N, pad)
        yield from fwd_bwd(got, want, [x], [xr], "x")
    return run


def dense_jagged_cat_case(B, N):
    def run():
        _, off = jagged(B, N)
        a, b = torch.randn(B), torch.randn(int(off[-1]))
        got, got_off = sll.dense_jagged_cat_jagged_out(a, b, off, N)
        want, want_off = cpu_sll.cpu_dense_jagged_cat_jagged_out(a.double(), b.double(), off, N)
        yield {"c": exact(got, want), "c_offsets": exact(got_off, want_off)}
    return run


def self_substraction_case(B, N):
    def run():
        lengths, off = jagged(B, N, empty=False)
        out_len = (lengths - 1) * (lengths - 1)
        off_b = torch.cat([torch.zeros(1, dtype=torch.int64), out_len.cumsum(0)])
        a = torch.randn(int(off[-1]))
        got = sll.triton_jagged_self_substraction_jagged_out(a, off, off_b, N)
        want = cpu_sll.cpu_jagged_self_substraction_jagged_out(a.double(), off, off_b, N)
        yield {"b": exact(got, want.float())}
    return run


def flash_basic_case(B, N, D, use_mask):
    """softmax(q_b k_b^T, over each row) / N, masked to the upper triangle when use_mask, times v_b."""
    def run():
        lengths, off = jagged(B, N)
        (q, k, v), (qr, kr, vr) = leaves(*(torch.randn(int(off[-1]), D) * 0.5 for _ in range(3)))
        got = sll.jagged_flash_attention_basic(q, k, v, off, N, use_mask, False)
        outs = []
        for b in range(B):
            s, e = int(off[b]), int(off[b + 1])
            p = torch.softmax(qr[s:e] @ kr[s:e].T, 1) / N
            if use_mask:
                p = p * torch.ones(e - s, e - s, dtype=F64).triu()
            outs.append(p @ vr[s:e])
        yield from fwd_bwd(got, torch.cat(outs), [q, k, v], [qr, kr, vr], "qkv")
    return run


def dense_flash_case(B, N, D, T):
    """out[b] = softmax_l(q_b k_b + bias_b)^T v_b: [B, T, D], the softmax over each sequence."""
    def run():
        _, off = jagged(B, N)
        L = int(off[-1])
        (q, k, v, bias), (qr, kr, vr, br) = leaves(torch.randn(L, D) * 0.5, torch.randn(B, D, T) * 0.5,
                                                   torch.randn(L, D), torch.randn(B, N, T))
        got = sll.jagged_dense_flash_attention(q, k, v, bias, off, N, False)
        outs = []
        for b in range(B):
            s, e = int(off[b]), int(off[b + 1])
            if e == s:
                outs.append(torch.zeros(T, D, dtype=F64))
                continue
            p = torch.softmax(qr[s:e] @ kr[b] + br[b, :e - s], 0)
            outs.append(p.T @ vr[s:e])
        yield from fwd_bwd(got, torch.stack(outs), [q, k, v, bias], [qr, kr, vr, br], ["q", "k", "v", "bias"])
    return run


def multi_head_flash_case(H, B, N, D):
    """Per head h and sequence b: softmax(q k^T, over each row) / N v, in the library's [H, sum_B, D] layout."""
    def run():
        _, off = jagged(B, N)
        L = int(off[-1])
        (q, k, v), (qr, kr, vr) = leaves(*(torch.randn(H, L, D) * 0.5 for _ in range(3)))
        got = sll.multi_head_jagged_flash_attention(q, k, v, off, N, False)
        outs = []
        for b in range(B):
            s, e = int(off[b]), int(off[b + 1])
            p = torch.softmax(qr[:, s:e] @ kr[:, s:e].transpose(1, 2), -1) / N
            outs.append(p @ vr[:, s:e])
        yield from fwd_bwd(got, torch.cat(outs, 1), [q, k, v], [qr, kr, vr], "qkv")
    return run


def mx4_case(M, K, group, rounding):
    def run():
        x = torch.randn(M, K) * torch.logspace(-3, 3, M)[:, None]
        got = mx4.triton_quantize_mx4(x, group, rounding_mode=rounding)
        want = mx4_ref.py_quantize_mx4(x, group, rounding_mode=rounding)
        back = mx4.triton_dequantize_mx4(got, group)
        yield {"packed": exact(got, want), "dequantized": exact(back, mx4_ref.py_dequantize_mx4(want, group))}
    return run


def fp8_row_case(shape, scale_ub=None, zero_start=False):
    def run():
        a = torch.randn(shape) * 4
        ub = torch.tensor([scale_ub]) if scale_ub is not None else None
        zs = None
        if zero_start:
            zs = torch.randint(0, shape[-2] + 1, shape[:-2])
        q, s = fp8.triton_quantize_fp8_row(a, ub, zs)
        if zs is not None:
            rows = torch.arange(shape[-2])
            live = rows < zs[..., None]
            a = a * live[..., None]
        _, want_s = fp8.quantize_fp8_row(a, ub, use_triton=False)
        want_s = want_s.view(s.shape)
        out = {"scale": (s, want_s, 1e-6)}
        if zs is not None:
            out["rows past zero_start"] = exact(q.float()[~live], torch.zeros(int((~live).sum()), shape[-1]))
            a, q = a[live], q[live]
            want_s, s = want_s[live], s[live]
        out["codes"] = fp8_codes(q, (a.double() / s.double()[..., None]).clamp(-448, 448))
        deq = fp8.dequantize_fp8_row(q.contiguous(), s.contiguous())
        out["dequantized"] = (deq, q.double() * s.double()[..., None], 1e-2)
        yield out
    return run


FB = ("forward", "backward")

case("jagged_dense_bmm B 7, N 50, D 33, T 70", jagged_dense_bmm_case(7, 50, 33, 70), FB)
case("jagged_dense_bmm B 3, N 130, D 100, T 17", jagged_dense_bmm_case(3, 130, 100, 17), FB)
case("jagged_jagged_bmm B 7, N 50, D 33, T 70", jagged_jagged_bmm_case(7, 50, 33, 70), FB)
case("jagged_jagged_bmm B 4, N 200, D 20, T 65", jagged_jagged_bmm_case(4, 200, 20, 65), FB)
case("jagged_softmax B 9, N 40, D 37", jagged_softmax_case(9, 40, 37), FB)
case("jagged_softmax B 3, N 300, D 5", jagged_softmax_case(3, 300, 5), FB)
case("jagged2_softmax B 6, N 30, rows", jagged2_softmax_case(6, 30, False), FB)
case("jagged2_softmax B 6, N 45, transposed", jagged2_softmax_case(6, 45, True), FB)
case("jagged_dense_elementwise_add B 8, N 45, D 70", jagged_dense_add_case(8, 45, 70), FB)
case("jagged_dense_elementwise_mul_jagged_out B 6, N 37", jagged_dense_mul_case(6, 37), FB)
case("array_jagged_bmm_jagged_out B 5, N 40, D 24", array_jagged_bmm_case(5, 40, 24), FB)
case("jagged_jagged_bmm_jagged_out B 5, N 40, D 24", jagged_jagged_bmm_out_case(5, 40, 24), FB)
case("jagged2_to_padded_dense B 6, N 37, padding -1", jagged2_to_padded_case(6, 37, -1.0), FB)
case("dense_jagged_cat_jagged_out B 9, N 50", dense_jagged_cat_case(9, 50))
case("jagged_self_substraction_jagged_out B 7, N 40", self_substraction_case(7, 40))
case("jagged_flash_attention_basic B 5, N 40, D 32", flash_basic_case(5, 40, 32, False), FB)
case("jagged_flash_attention_basic B 5, N 40, D 32, mask", flash_basic_case(5, 40, 32, True), FB)
case("jagged_dense_flash_attention B 4, N 50, D 32, T 40", dense_flash_case(4, 50, 32, 40), FB)
case("multi_head_jagged_flash_attention H 2, B 4, N 50, D 32", multi_head_flash_case(2, 4, 50, 32), FB)
for _mode in (RoundingMode.nearest, RoundingMode.floor, RoundingMode.even, RoundingMode.ceil):
    case(f"mx4 5 x 320, group 32, {_mode.name}", mx4_case(5, 320, 32, _mode))
case("mx4 7 x 192, group 64, even", mx4_case(7, 192, 64, RoundingMode.even))
case("quantize_fp8_row 37 x 300", fp8_row_case((37, 300)))
case("quantize_fp8_row 3 x 37 x 300, scale_ub 1.5", fp8_row_case((3, 37, 300), scale_ub=1.5))
case("quantize_fp8_row 2 x 3 x 17 x 130, zero_start_index_M", fp8_row_case((2, 3, 17, 130), zero_start=True))
case("quantize_fp8_row 1 x 1000", fp8_row_case((1, 1000)))

# --- report ----------------------------------------------------------------------------------------------------

sys.exit(report(results, ARGS.json))
