"""Mamba's Triton ops (state-spaces/mamba, mamba_ssm/ops/triton) on Tegula, through the conformance shim's
`triton` package: selective_state_update (the decoding step) and mamba_chunk_scan_combined (Mamba-2's SSD
scan, forward and backward) against the library's own references, float32, on the CPU backend. Mamba is not
part of Tegula; point this at a checkout (it needs torch and einops):

    TEGULA_CONFORMANCE_DEVICE=cpu|cuda .venv/bin/python tools/conformance/mamba_ops.py <mamba checkout>

mamba_ssm's __init__ modules load its CUDA extension, so the Triton modules are imported under bare
packages. Without a GPU, torch.cuda.device (which Mamba enters around its launches) is a null context and
torch.cuda.get_device_properties (which sizes a backward grid by the multiprocessors) says 2.
"""

import contextlib
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: mamba_ops.py <mamba checkout>")
MAMBA = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(SHIM))
sys.path.insert(0, str(MAMBA))

import torch  # noqa: E402

# The device of every tensor the checks make: the shim runs the kernels on the backend of the same name.
torch.set_default_device(os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu"))

if not torch.cuda.is_available():
    torch.cuda.device = lambda *a, **k: contextlib.nullcontext()
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(multi_processor_count=2)
for name, path in (("mamba_ssm", "mamba_ssm"), ("mamba_ssm.ops", "mamba_ssm/ops"),
                   ("mamba_ssm.ops.triton", "mamba_ssm/ops/triton")):
    package = types.ModuleType(name)
    package.__path__ = [str(MAMBA / path)]
    sys.modules[name] = package

import triton  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

from mamba_ssm.ops.triton.selective_state_update import (  # noqa: E402
    selective_state_update, selective_state_update_ref)
from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined, ssd_chunk_scan_combined_ref  # noqa: E402


def diff(got, want):
    return f"{(got - want).abs().max().item():.3g} of {want.abs().max().item():.3g}"


torch.manual_seed(0)
B, H, DH, N = 2, 3, 16, 16
state = torch.randn(B, H, DH, N)
x, dt, z = torch.randn(B, H, DH), torch.randn(B, H, DH), torch.randn(B, H, DH)
A, D, dt_bias = -torch.rand(H, DH, N), torch.randn(H, DH), torch.randn(H, DH)
Bm, Cm = torch.randn(B, 1, N), torch.randn(B, 1, N)
s_got, s_want = state.clone(), state.clone()
out = selective_state_update(s_got, x, dt, A, Bm, Cm, D=D, z=z, dt_bias=dt_bias, dt_softplus=True)
ref = selective_state_update_ref(s_want, x, dt, A, Bm, Cm, D=D, z=z, dt_bias=dt_bias, dt_softplus=True)
print(f"selective_state_update     out {diff(out, ref)}; state {diff(s_got, s_want)}")

b, L, h, p, n, chunk = 1, 128, 2, 16, 16, 32  # the reference needs whole chunks
X = torch.randn(b, L, h, p, requires_grad=True)
DT = torch.rand(b, L, h, requires_grad=True)
AA = -torch.rand(h, requires_grad=True)
BB, CC = torch.randn(b, L, 1, n, requires_grad=True), torch.randn(b, L, 1, n, requires_grad=True)
y = mamba_chunk_scan_combined(X, DT, AA, BB, CC, chunk)
y_ref = ssd_chunk_scan_combined_ref(X, DT, AA, BB, CC, chunk)
print(f"mamba_chunk_scan_combined  out {diff(y, y_ref)}")
dy = torch.randn_like(y)
grads = torch.autograd.grad(y, (X, DT, AA, BB, CC), dy)
grads_ref = torch.autograd.grad(y_ref, (X, DT, AA, BB, CC), dy)
print("  backward                 " + "; ".join(f"d{name} {diff(g, r)}" for name, g, r in
                                             zip(("x", "dt", "A", "B", "C"), grads, grads_ref)))
