"""flash-linear-attention's Triton ops (fla-org/flash-linear-attention, fla/ops) on Tegula, through the
conformance shim's `triton` package: chunked simple GLA (forward and backward), GLA, delta rule (bf16: the op
refuses float32), gated delta rule and linear attention against the library's own naive recurrences, on the
CPU backend. FLA is not part of Tegula; point this at a checkout (it needs torch and einops):

    TEGULA_CONFORMANCE_DEVICE=cpu|cuda .venv/bin/python tools/conformance/fla_ops.py <fla checkout>

The ops are imported one by one under bare `fla` and `fla.ops` packages: their __init__ modules import every
op, and some of those go through torch.compile or torch._dynamo, which import the real Triton when one is
installed beside torch. torch.compile and torch.compiler.disable are identities here for the same reason
(the kernels run eagerly through Tegula).
"""

import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: fla_ops.py <flash-linear-attention checkout>")
FLA = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(SHIM))
sys.path.insert(0, str(FLA))

import torch  # noqa: E402

# The device of every tensor the checks make: the shim runs the kernels on the backend of the same name.
torch.set_default_device(os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu"))

torch.compiler.disable = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
torch.compile = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
for _name, _path in (("fla", FLA / "fla"), ("fla.ops", FLA / "fla" / "ops")):
    _pkg = types.ModuleType(_name)
    _pkg.__path__ = [str(_path)]
    _pkg.__version__ = "0"
    sys.modules[_name] = _pkg

import triton  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"


torch.manual_seed(0)
results = []
def check(name, fn):
    try:
        results.append((name, fn()))
    except Exception as e:
        results.append((name, f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:240] if str(e) else ''}"))
B, T, H, K, V = 1, 100, 2, 32, 32
def rel(a, b): return f"max diff {(a.float() - b.float()).abs().max().item():.3g} of {b.float().abs().max().item():.3g}"

def simple_gla_bwd():
    # FLA refuses its gated chunk_bwd_dqkwg on Hopper under Triton 3.4 to 3.7.0, whose compiler gets it wrong
    # there (FLA's #640), and the shim reports Triton 3.6's API. Tegula's kernels are what this checks against
    # the naive recurrence, so the guard is lifted.
    import fla.ops.common.chunk_o as chunk_o
    chunk_o.TRITON_ABOVE_3_7_1 = True
    from fla.ops.simple_gla import chunk_simple_gla
    from fla.ops.simple_gla.naive import naive_recurrent_simple_gla
    q, k, v = (torch.randn(B, T, H, d, requires_grad=True) for d in (K, K, V))
    g = torch.nn.functional.logsigmoid(torch.randn(B, T, H)).requires_grad_()
    o, _ = chunk_simple_gla(q, k, v, g, scale=K ** -0.5); do = torch.randn_like(o); o.backward(do)
    got = [t.grad.clone() for t in (q, k, v, g)]
    for t in (q, k, v, g): t.grad = None
    ref, _ = naive_recurrent_simple_gla(q, k, v, g, scale=K ** -0.5); ref.backward(do)
    return "; ".join(f"d{n} {rel(a, t.grad)}" for n, a, t in zip("qkvg", got, (q, k, v, g)))
check("simple_gla backward", simple_gla_bwd)

def gla():
    from fla.ops.gla import chunk_gla
    from fla.ops.gla.naive import naive_recurrent_gla
    q, k, v = torch.randn(B, T, H, K), torch.randn(B, T, H, K), torch.randn(B, T, H, V)
    gk = torch.nn.functional.logsigmoid(torch.randn(B, T, H, K))
    o, _ = chunk_gla(q, k, v, gk, scale=K ** -0.5)
    ref, _ = naive_recurrent_gla(q, k, v, gk)
    return rel(o, ref)
check("gla", gla)

def delta_rule():
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.delta_rule.naive import delta_rule_recurrence
    q, k, v = torch.randn(B, T, H, K), torch.nn.functional.normalize(torch.randn(B, T, H, K), dim=-1), torch.randn(B, T, H, V)
    beta = torch.rand(B, T, H).sigmoid()
    o, _ = chunk_delta_rule(*(t.bfloat16() for t in (q, k, v, beta)), scale=K ** -0.5)
    ref, _ = delta_rule_recurrence(*(x.transpose(1, 2) for x in (q, k, v, beta)))
    return rel(o, ref.transpose(1, 2))
check("delta_rule", delta_rule)

def gated_delta_rule():
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
    q, k, v = torch.randn(B, T, H, K), torch.nn.functional.normalize(torch.randn(B, T, H, K), dim=-1), torch.randn(B, T, H, V)
    beta = torch.rand(B, T, H).sigmoid(); g = torch.nn.functional.logsigmoid(torch.randn(B, T, H))
    o, _ = chunk_gated_delta_rule(q, k, v, g, beta, scale=K ** -0.5)
    ref, _ = naive_recurrent_gated_delta_rule(q, k, v, beta, g, scale=K ** -0.5)
    return rel(o, ref)
check("gated_delta_rule", gated_delta_rule)

def linear_attn():
    from fla.ops.linear_attn import chunk_linear_attn
    from fla.ops.linear_attn.naive import naive_recurrent_linear_attn
    q, k, v = torch.randn(B, T, H, K), torch.randn(B, T, H, K), torch.randn(B, T, H, V)
    o, _ = chunk_linear_attn(q, k, v, scale=K ** -0.5, normalize=False)
    ref, _ = naive_recurrent_linear_attn(q, k, v, scale=K ** -0.5)
    return rel(o, ref)
check("linear_attn", linear_attn)

for name, r in results:
    print(f"{name:22s} {r}")
