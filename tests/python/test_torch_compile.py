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


@torch.library.custom_op("tegula_tests::scaled_add", mutates_args=())
def scaled_add_op(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    scaled_add[(tegula.cdiv(x.numel(), 256),)](x, y, out, alpha, x.numel(), BLOCK=256)
    return out


@scaled_add_op.register_fake
def _(x, y, alpha):
    return torch.empty_like(x)


def _backward(ctx, grad):
    return grad * ctx.alpha, grad, None


def _setup_context(ctx, inputs, output):
    ctx.alpha = inputs[2]


scaled_add_op.register_autograd(_backward, setup_context=_setup_context)


def loss_of(x, y):
    return torch.tanh(scaled_add_op(x, y, 0.5)).square().sum()


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_custom_op_launching_tegula_stays_in_the_graph_with_gradients(n):
    dynamo.reset()
    gen = torch.Generator().manual_seed(n + 7)
    x = torch.randn(n, generator=gen, requires_grad=True)
    y = torch.randn(n, generator=gen, requires_grad=True)
    loss = torch.compile(loss_of, fullgraph=True)(x, y)
    loss.backward()
    xr, yr = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    want = torch.tanh(0.5 * xr + yr).square().sum()
    want.backward()
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(y.grad, yr.grad, rtol=1e-5, atol=1e-6)
    assert dynamo.explain(loss_of)(x, y).graph_break_count == 0
