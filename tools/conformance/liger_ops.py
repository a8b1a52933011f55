"""Liger-Kernel's Triton ops (linkedin/Liger-Kernel, src/liger_kernel/ops) on Tegula, through the conformance
shim's `triton` package: each op's forward (and backward where it has one) against PyTorch on random data,
float32, sizes that are not powers of two. Liger is not part of Tegula; point this at a checkout:

    PYTHONPATH=<liger checkout>/src:tools/conformance/shim TEGULA_CONFORMANCE_DEVICE=cpu|cuda \
        .venv/bin/python tools/conformance/liger_ops.py

(torch and `packaging` must be importable). Several Liger backward passes write their gradients into the
saved inputs (and the cross entropy into its logits), so every reference runs on clones made first.
"""

import os
import torch

# The device of every tensor the checks make: the shim runs the kernels on the backend of the same name.
torch.set_default_device(os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu"))

torch.manual_seed(0)
results = []
def check(name, fn):
    try:
        fn(); results.append((name, "ok", ""))
    except Exception as e:
        results.append((name, "FAIL", f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"))
def close(a, b, tol=1e-4):
    assert torch.allclose(a.float(), b.float(), atol=tol, rtol=tol), f"max diff {(a.float()-b.float()).abs().max().item()}"

def fresh(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]

def rms():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    x = torch.randn(7, 300, requires_grad=True); w = torch.randn(300, requires_grad=True)
    xr, wr = fresh(x, w)
    y = LigerRMSNormFunction.apply(x, w, 1e-6); dy = torch.randn_like(y); dyr = dy.clone(); y.backward(dy)
    ref = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * wr; ref.backward(dyr)
    close(y, ref); close(x.grad, xr.grad); close(w.grad, wr.grad, 1e-3)
check("rms_norm", rms)

def swiglu():
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    a = torch.randn(5, 333, requires_grad=True); b = torch.randn(5, 333, requires_grad=True)
    ar, br = fresh(a, b)
    y = LigerSiLUMulFunction.apply(a, b); dy = torch.randn_like(y); y.backward(dy.clone())
    ref = torch.nn.functional.silu(ar) * br; ref.backward(dy)
    close(y, ref); close(a.grad, ar.grad); close(b.grad, br.grad)
check("swiglu", swiglu)

def geglu():
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    a = torch.randn(5, 333, requires_grad=True); b = torch.randn(5, 333, requires_grad=True)
    ar, br = fresh(a, b)
    y = LigerGELUMulFunction.apply(a, b); dy = torch.randn_like(y); y.backward(dy.clone())
    ref = torch.nn.functional.gelu(ar, approximate="tanh") * br; ref.backward(dy)
    close(y, ref, 1e-3); close(a.grad, ar.grad, 1e-3); close(b.grad, br.grad, 1e-3)
check("geglu", geglu)

def layer_norm():
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    x = torch.randn(9, 257, requires_grad=True); w = torch.randn(257, requires_grad=True); b = torch.randn(257, requires_grad=True)
    y = LigerLayerNormFunction.apply(x, w, b, 1e-5); dy = torch.randn_like(y); y.backward(dy)
    g = [t.grad.clone() for t in (x, w, b)]
    for t in (x, w, b): t.grad = None
    ref = torch.nn.functional.layer_norm(x, (257,), w, b, 1e-5); ref.backward(dy)
    close(y, ref); [close(a, t.grad, 1e-3) for a, t in zip(g, (x, w, b))]
check("layer_norm", layer_norm)

def cross_entropy():
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    x = torch.randn(11, 1000, requires_grad=True); t = torch.randint(0, 1000, (11,)); t[3] = -100
    (xr,) = fresh(x)
    out = LigerCrossEntropyFunction.apply(x, t, None)
    loss = out[0] if isinstance(out, tuple) else out
    loss.backward()
    ref = torch.nn.functional.cross_entropy(xr, t, ignore_index=-100); ref.backward()
    close(loss, ref); close(x.grad, xr.grad)
check("cross_entropy", cross_entropy)

def softmax():
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    x = torch.randn(6, 513, requires_grad=True)
    y = LigerSoftmaxFunction.apply(x); dy = torch.randn_like(y); y.backward(dy); g = x.grad.clone(); x.grad = None
    ref = torch.softmax(x, -1); ref.backward(dy); close(y, ref); close(g, x.grad)
check("softmax", softmax)

def rope():
    from liger_kernel.ops.rope import LigerRopeFunction
    B, H, T, D = 2, 4, 16, 64
    q = torch.randn(B, H, T, D, requires_grad=True); k = torch.randn(B, 2, T, D, requires_grad=True)
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D)); t = torch.arange(T).float()
    freqs = torch.outer(t, inv); emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos()[None], emb.sin()[None]
    qo, ko = LigerRopeFunction.apply(q, k, cos, sin)
    def rot(x): return torch.cat([-x[..., D//2:], x[..., :D//2]], -1)
    close(qo, q * cos[:, None] + rot(q) * sin[:, None]); close(ko, k * cos[:, None] + rot(k) * sin[:, None])
check("rope", rope)

def kl_div():
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction
    x = torch.randn(8, 100).log_softmax(-1).requires_grad_(); y = torch.randn(8, 100).softmax(-1)
    out = LigerKLDivLossFunction.apply(x, y, "batchmean", False, 1e-10)
    ref = torch.nn.functional.kl_div(x, y, reduction="batchmean"); close(out, ref)
check("kl_div", kl_div)

def jsd():
    from liger_kernel.ops.jsd import LigerJSDFunction
    x = torch.randn(8, 100).log_softmax(-1).requires_grad_(); y = torch.randn(8, 100).log_softmax(-1)
    out = LigerJSDFunction.apply(x, y, None, 0.5, -100); out.backward()
    m = 0.5 * (x.exp() + y.exp())
    ref = 0.5 * ((x.exp() * (x - m.log())).sum() + (y.exp() * (y - m.log())).sum()) / 8
    close(out, ref)
check("jsd", jsd)

def dyt():
    from liger_kernel.ops.dyt import LigerDyTFunction
    x = torch.randn(5, 300, requires_grad=True); alpha = torch.tensor([0.7], requires_grad=True)
    g = torch.randn(300, requires_grad=True); b = torch.randn(300, requires_grad=True)
    y = LigerDyTFunction.apply(x, alpha, g, b); ref = g * torch.tanh(alpha * x) + b; close(y, ref, 1e-3)
check("dyt", dyt)

def group_norm():
    from liger_kernel.ops.group_norm import LigerGroupNormFunction
    x = torch.randn(3, 8, 100, requires_grad=True); w = torch.randn(8); b = torch.randn(8)
    y = LigerGroupNormFunction.apply(x, w, b, 8, 4, 1e-5)
    ref = torch.nn.functional.group_norm(x, 4, w, b, 1e-5); close(y, ref, 1e-3)
check("group_norm", group_norm)

def fused_add_rms():
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    x = torch.randn(7, 300); r = torch.randn(7, 300); w = torch.randn(300)
    y, res = LigerFusedAddRMSNormFunction.apply(x, r, w, 1e-6)
    s = x + r; ref = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    close(res, s); close(y, ref)
check("fused_add_rms_norm", fused_add_rms)

def tvd():
    from liger_kernel.ops.tvd import LigerTVDLossFunction
    p = torch.randn(8, 100).softmax(-1).requires_grad_(); q = torch.randn(8, 100).softmax(-1)
    out = LigerTVDLossFunction.apply(p, q, None, "batchmean", -100)
    ref = 0.5 * (p - q).abs().sum() / 8; close(out, ref)
check("tvd", tvd)

def flce():
    from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction
    x = torch.randn(12, 64, requires_grad=True); w = torch.randn(500, 64, requires_grad=True); t = torch.randint(0, 500, (12,))
    out = LigerFusedLinearCrossEntropyFunction.apply(x, w, t)
    loss = out[0] if isinstance(out, tuple) else out
    ref = torch.nn.functional.cross_entropy(x @ w.T, t); close(loss, ref, 1e-3)
check("fused_linear_cross_entropy", flce)

def sparsemax():
    from liger_kernel.ops.sparsemax import LigerSparsemaxFunction
    x = torch.randn(4, 50, requires_grad=True)
    y = LigerSparsemaxFunction.apply(x, -1)
    assert torch.allclose(y.sum(-1), torch.ones(4), atol=1e-5) and (y >= 0).all()
check("sparsemax", sparsemax)

for name, status, why in results:
    print(f"{name:28s} {status} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} ops match PyTorch")
