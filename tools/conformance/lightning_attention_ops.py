"""Lightning Attention-2's Triton kernels (OpenNLPLab/lightning-attention, lightning_attn/ops/triton) on Tegula,
through the conformance shim's `triton` package, against torch float64 references written here from the math:

  - lightning_attn2.py (`lightning_attn2`): causal linear attention with a per-head exponential decay
    (o_i = sum_{j <= i} exp(-s_h (i - j)) (q_i . k_j) v_j), the chunk-loop forward `_fwd_kernel` (one
    program a (batch, head, 32-channel slice of v) looping over 64-row blocks with a running kv state) and
    the backward `_bwd_intra_kernel` (the diagonal blocks in parallel) and `_bwd_inter_kernel` (dq forward
    and dk / dv backward over the blocks, 32-row sub-blocks, read-modify-write of the intra results);
  - lightning_attn2_no_decay.py (`lightning_attn2_no_decay`): the same without decay (tl.where masks in place
    of the decay matrix);
  - lightning_attn2_parallel.py (`lightning_attn2_parallel`): the fully parallel variant with decay
    (`_fwd_diag_kernel`, `_fwd_kv_parallel`, `_fwd_kv_reduce`, the second `_fwd_none_diag_kernel`, and the
    backward's `_bwd_diag_kernel`, `_bwd_dkv_parallel`, `_bwd_dkv_reduce`, `_bwd_none_diag_kernel`). Its host
    code takes NUM_BLOCK = n // 256 and its kv kernels load unmasked, so n is a multiple of 256 (768);
  - lightning_attn_interface.py (`lightning_attn_func`): the entry point, which pads v's feature dimension to
    a power of two (e = 48 -> 64) and, for a head dimension over 128, runs the kernel on 64-wide slices of q / k
    and sums (d = 192);
  - srmsnorm.py (`SimpleRMSNorm`): `srms_norm_fw` and `srms_norm_bwd_dx_fused`, against float64 RMS norm.

Sequence lengths are not powers of two (33, 77, 129, 150, 201; 768 for the parallel variant), heads 3 (the slopes of
_build_slope_tensor for a head count that is not a power of two), v dimensions 48 through the interface. The
kernels' tl.arange(0, d) / tl.arange(0, e) need powers of two for d and e when called directly. Inputs are
randn / 10, as the library's tests draw them; float32, float16 and bfloat16 (the kernels compute in float32
and store in the input dtype).

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5 forward and
1e-4 gradients (the running states sum exp-weighted float32 products over the sequence), float16 1e-2 / 2e-2,
bfloat16 3e-2 / 6e-2; SimpleRMSNorm float32 1e-5, float16 5e-3, bfloat16 2e-2 (twice that for dx).

The library is not part of Tegula; point this at a checkout (a directory holding lightning_attn/; this imports
lightning_attn from there, unchanged: its package needs only torch and triton):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/lightning_attention_ops.py <lightning-attention>

Written against commit d15c38529bbd5c2c82b44ddda3cac885825aa873 (2025-02-23). Nothing is stood in: the host
code allocates on the inputs' device and asks nothing of CUDA. None of the kernels is autotuned. Not covered:
lightning_attn/ops/torch (torch only; its linear_attn rounds through the input dtype, so the references here are
written in float64 instead). Prints one line per case (the largest absolute difference from the reference over
the case's outputs, each output's difference, or the first line of the error) and a summary line. Tegula's
recompile warnings are off unless TEGULA_RECOMPILE_WARNING is set (n, d and e are constexpr parameters, one
specialization per shape by design).
"""

import os
import pathlib
import sys

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: lightning_attention_ops.py <lightning-attention checkout>")
LA = pathlib.Path(sys.argv[1]).resolve()
for _file in ("lightning_attn2.py", "lightning_attn2_no_decay.py", "lightning_attn2_parallel.py", "srmsnorm.py"):
    if not (LA / "lightning_attn" / "ops" / "triton" / _file).is_file():
        sys.exit(f"{LA} holds no lightning_attn/ops/triton/{_file}")
sys.path.insert(0, str(SHIM))
sys.path.insert(1, str(LA))

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

from lightning_attn.ops import (lightning_attn2, lightning_attn2_no_decay, lightning_attn2_parallel,  # noqa: E402
                                lightning_attn_func)
from lightning_attn.ops.triton.srmsnorm import SimpleRMSNorm  # noqa: E402
from lightning_attn.utils import _build_slope_tensor  # noqa: E402

torch.manual_seed(0)
results = []
F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
TOL = {F32: (1e-5, 1e-4), F16: (1e-2, 2e-2), BF16: (3e-2, 6e-2)}


def check(name, case, stages=("forward", "backward")):
    comparisons_check(results, name, case, stages)


def leaf(t):
    return t.detach().clone().double().requires_grad_()


def grads(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]


def linear_attention_ref(q, k, v, s=None):
    """float64 causal linear attention, q / k [b, h, n, d], v [b, h, n, e], s the per-head decay [h, 1, 1] or None."""
    n = q.shape[2]
    i = torch.arange(n, dtype=torch.float64)
    diff = i[:, None] - i[None, :]
    causal = diff >= 0
    if s is None:
        mask = causal.double()
    else:
        mask = torch.where(causal, torch.exp(-s.double().view(-1, 1, 1) * diff.clamp_min(0)), 0.0)  # [h, n, n]
    return torch.einsum("bhij,bhje->bhie", torch.einsum("bhid,bhjd->bhij", q, k) * mask, v)


def attention(fn, b, h, n, d, e, dtype, decay=True):
    """fn(q, k, v[, s]) against the float64 reference, forward and backward."""
    def run():
        q, k = (torch.randn(b, h, n, d) / 10).to(dtype), (torch.randn(b, h, n, d) / 10).to(dtype)
        v = (torch.randn(b, h, n, e) / 10).to(dtype)
        s = _build_slope_tensor(h).to(torch.float32) if decay else None
        qg, kg, vg = grads(q, k, v)
        o = fn(qg, kg, vg, s) if decay else fn(qg, kg, vg)
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        ref = linear_attention_ref(qr, kr, vr, s)
        ftol, btol = TOL[dtype]
        yield {"o": (o, ref, ftol)}
        do = (torch.randn(o.shape) / 10).to(dtype)
        o.backward(do)
        ref.backward(do.double())
        yield {"dq": (qg.grad, qr.grad, btol), "dk": (kg.grad, kr.grad, btol), "dv": (vg.grad, vr.grad, btol)}
    return run


# --- lightning_attn2.py: chunk loop with decay ------------------------------------------------------------------

check("lightning_attn2 decay fp32 b2 h3 n150 d64 e64", attention(lightning_attn2, 2, 3, 150, 64, 64, F32))
check("lightning_attn2 decay fp16 b1 h3 n201 d32 e64", attention(lightning_attn2, 1, 3, 201, 32, 64, F16))
check("lightning_attn2 decay bf16 b2 h2 n77 d64 e32", attention(lightning_attn2, 2, 2, 77, 64, 32, BF16))
check("lightning_attn2 decay fp32 b1 h2 n100 d128 e128 (4 v slices)",
      attention(lightning_attn2, 1, 2, 100, 128, 128, F32))
check("lightning_attn2 decay fp32 b3 h1 n33 d16 e32 (one partial block)",
      attention(lightning_attn2, 3, 1, 33, 16, 32, F32))

# --- lightning_attn2_no_decay.py --------------------------------------------------------------------------------

check("lightning_attn2_no_decay fp32 b2 h3 n150 d64 e32",
      attention(lightning_attn2_no_decay, 2, 3, 150, 64, 32, F32, decay=False))
check("lightning_attn2_no_decay fp16 b1 h2 n201 d32 e64",
      attention(lightning_attn2_no_decay, 1, 2, 201, 32, 64, F16, decay=False))
check("lightning_attn2_no_decay bf16 b2 h3 n129 d64 e16",
      attention(lightning_attn2_no_decay, 2, 3, 129, 64, 16, BF16, decay=False))

# --- lightning_attn2_parallel.py (n a multiple of 256) ----------------------------------------------------------

check("lightning_attn2_parallel decay fp32 b1 h3 n768 d64 e64",
      attention(lightning_attn2_parallel, 1, 3, 768, 64, 64, F32))
check("lightning_attn2_parallel decay fp16 b1 h2 n768 d32 e64",
      attention(lightning_attn2_parallel, 1, 2, 768, 32, 64, F16))
check("lightning_attn2_parallel decay bf16 b2 h1 n768 d64 e32",
      attention(lightning_attn2_parallel, 2, 1, 768, 64, 32, BF16))

# --- lightning_attn_interface.py: v padded to a power of two, heads over 128 split into 64-wide slices ---------

check("lightning_attn_func chunk_loop decay fp32 n77 d64 e48 (v padded)",
      attention(lambda q, k, v, s: lightning_attn_func(q, k, v, s, variant="chunk_loop"), 2, 3, 77, 64, 48, F32))
check("lightning_attn_func parallel decay fp32 n768 d64 e48 (v padded)",
      attention(lambda q, k, v, s: lightning_attn_func(q, k, v, s, variant="parallel"), 1, 2, 768, 64, 48, F32))
check("lightning_attn_func no decay fp32 n150 d192 e48 (d split)",
      attention(lambda q, k, v: lightning_attn_func(q, k, v), 1, 2, 150, 192, 48, F32, decay=False))
check("lightning_attn_func chunk_loop decay fp16 n130 d192 e64 (d split)",
      attention(lambda q, k, v, s: lightning_attn_func(q, k, v, s), 1, 3, 130, 192, 64, F16))


# --- srmsnorm.py ----------------------------------------------------------------------------------------------

def srmsnorm(shape, dtype, tol, eps=1e-6):
    def run():
        x = torch.randn(shape).to(dtype)
        xg, = grads(x)
        y = SimpleRMSNorm(shape[-1], eps)(xg)
        xr = leaf(x)
        eps_used = max(eps, 1.6e-5) if dtype == F16 else eps  # the op raises eps for float16
        ref = xr * torch.rsqrt(xr.square().mean(-1, keepdim=True) + eps_used)
        yield {"y": (y, ref, tol)}
        dy = torch.randn(shape).to(dtype)
        y.backward(dy)
        ref.backward(dy.double())
        yield {"dx": (xg.grad, xr.grad, tol * 2)}
    return run


check("SimpleRMSNorm fp32 5x37x300", srmsnorm((5, 37, 300), F32, 1e-5))
check("SimpleRMSNorm fp16 3x29x1000", srmsnorm((3, 29, 1000), F16, 5e-3))
check("SimpleRMSNorm bf16 7x100", srmsnorm((7, 100), BF16, 2e-2))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:76s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} lightning attention cases match the torch float64 "
      f"references")
