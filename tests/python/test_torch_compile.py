"""A Tegula launch inside a function torch.compile traces: the function is
compiled around it, with one graph break whose reason names the custom-op
route, and computes what eager execution computes (CPU tensors here)."""

import pytest

torch = pytest.importorskip("torch")
dynamo = pytest.importorskip("torch._dynamo")

import tegula  # noqa: E402
import tegula.language as tl  # noqa: E402


@tegula.jit
def scaled_add(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def fused(x, y):
    out = torch.empty_like(x)
    scaled_add[(tegula.cdiv(x.numel(), 256),)](x, y, out, 0.5, x.numel(), BLOCK=256)
    return torch.tanh(out) * 2


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_launch_inside_torch_compile_breaks_the_graph_and_computes(n):
    dynamo.reset()
    gen = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=gen), torch.randn(n, generator=gen)
    want = torch.tanh(0.5 * x + y) * 2
    got = torch.compile(fused)(x, y)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    explained = dynamo.explain(fused)(x, y)
    assert explained.graph_break_count == 1
    reasons = " ".join(str(r.reason) for r in explained.break_reasons)
    assert "Tegula launch" in reasons and "custom op" in reasons
