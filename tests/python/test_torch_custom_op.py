"""tegula.torch's custom-op route: a host function that launches a Tegula
kernel becomes a torch.library custom op with a fake implementation and a
gradient formula whose backward also launches a kernel; torch.compile with
fullgraph=True keeps forward and backward whole (no graph break), and the
results and gradients match torch's own ops (CPU tensors here)."""

import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import tegula  # noqa: E402
import tegula.language as tl  # noqa: E402
import tegula.torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


@tegula.jit
def scaled_tanh_kernel(x_ptr, y_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    e = tl.exp(-2.0 * tl.abs(alpha * x))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(alpha * x < 0, -t, t), mask=mask)


@tegula.jit
def scaled_tanh_backward_kernel(dy_ptr, y_ptr, dx_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(dx_ptr + offs, tl.load(dy_ptr + offs, mask=mask) * alpha * (1.0 - y * y), mask=mask)


def _launch_grid(n):
    return (tegula.cdiv(n, 256),)


@tegula.torch.custom_op("tegula_tests::scaled_tanh", fake=lambda x, alpha: x.new_empty(x.shape))
def scaled_tanh(x: torch.Tensor, alpha: float) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    scaled_tanh_kernel[_launch_grid(x.numel())](x, y, alpha, x.numel(), BLOCK=256)
    return y


@tegula.torch.custom_op("tegula_tests::scaled_tanh_backward", fake=lambda dy, y, alpha: y.new_empty(y.shape))
def scaled_tanh_backward(dy: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    dy = dy.contiguous()
    dx = torch.empty_like(y)
    scaled_tanh_backward_kernel[_launch_grid(y.numel())](dy, y, dx, alpha, y.numel(), BLOCK=256)
    return dx


tegula.torch.register_autograd(scaled_tanh, lambda saved, dy: (scaled_tanh_backward(dy, *saved), None),
                               save=lambda inputs, output: (output, inputs[1]))


def model(x, w):
    return (scaled_tanh(x @ w, 0.7) * 2).sum(dim=1).square().mean()


def reference(x, w):
    return (torch.tanh(0.7 * (x @ w)) * 2).sum(dim=1).square().mean()


def _inputs(m, n, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=gen, dtype=dtype, requires_grad=True)
    w = torch.randn(n, n, generator=gen, dtype=dtype).div_(n ** 0.5).requires_grad_()
    return x, w


def _assert_matches_reference(loss, x, w):
    """loss (backward done) and the gradients of x and w against eager torch's."""
    xr, wr = (t.detach().clone().requires_grad_() for t in (x, w))
    want = reference(xr, wr)
    want.backward()
    # float32 on the CPU backend: the tanh formula differs from torch's in the last bits.
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w.grad, wr.grad, rtol=1e-4, atol=1e-5)


def test_op_is_registered_under_its_name_and_passes_opcheck():
    assert torch.ops.tegula_tests.scaled_tanh.default is not None
    x = torch.randn(5, 33, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(scaled_tanh, (x, 0.7))


class _PassThrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_eager_calls_skip_the_dispatcher_with_the_same_results():
    # In plain eager mode a call runs the host function under a torch.autograd.Function (no dispatcher
    # round trip). torch.ops.<ns>.<op> goes through the dispatcher, whose autograd kernel for CPU and
    # CUDA tensors is Tegula's and takes the same Function. Under a dispatch mode (what tracers use) the
    # autograd kernel hands the call to custom_op's own. Same values, same gradients on every route.
    x = torch.randn(6, 29, requires_grad=True)
    fast = scaled_tanh(x, 0.7)
    assert type(fast.grad_fn).__name__.startswith("scaled_tanh_function")
    routed = torch.ops.tegula_tests.scaled_tanh(x, 0.7)
    assert type(routed.grad_fn).__name__ == type(fast.grad_fn).__name__
    torch.testing.assert_close(fast, routed, rtol=0, atol=0)
    upstream = torch.randn(6, 29)
    (g_fast,) = torch.autograd.grad(fast, x, upstream)
    (g_routed,) = torch.autograd.grad(routed, x, upstream)
    torch.testing.assert_close(g_fast, g_routed, rtol=0, atol=0)
    with _PassThrough():
        through_custom_op = torch.ops.tegula_tests.scaled_tanh(x, 0.7)
    assert "scaled_tanh" in type(through_custom_op.grad_fn).__name__
    assert type(through_custom_op.grad_fn).__name__ != type(fast.grad_fn).__name__
    torch.testing.assert_close(fast, through_custom_op, rtol=0, atol=0)
    (g_custom_op,) = torch.autograd.grad(through_custom_op, x, upstream)
    torch.testing.assert_close(g_fast, g_custom_op, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(scaled_tanh(x, 0.7), fast.detach(), rtol=0, atol=0)
    # Under a dispatch mode (what tracers use) the call goes through the dispatcher: fake outputs.
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fake = scaled_tanh(mode.from_tensor(x), 0.7)
    assert fake.shape == x.shape and type(fake).__name__ == "FakeTensor"


def test_gradients_match_finite_differences_in_float64():
    x, w = _inputs(3, 13, torch.float64)
    assert torch.autograd.gradcheck(model, (x, w))


@pytest.mark.parametrize("m,n", [(7, 37)])
def test_fullgraph_compile_keeps_the_op_and_matches_torch(m, n):
    torch._dynamo.reset()
    x, w = _inputs(m, n, seed=m * n)
    explained = torch._dynamo.explain(model)(x, w)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    loss = torch.compile(model, fullgraph=True)(x, w)
    loss.backward()
    _assert_matches_reference(loss, x, w)
    # Both ops reached Inductor as fallbacks registered from their fake implementations
    # (tegula/torch/_inductor_fallback.py), not as implicit ones, whose log line formats the
    # arguments' IR whole on older torch.
    from torch._inductor import lowering
    for op in (torch.ops.tegula_tests.scaled_tanh.default, torch.ops.tegula_tests.scaled_tanh_backward.default):
        assert op in tegula.torch._inductor_fallback._registered and op in lowering.lowerings


class _Seen(TorchDispatchMode):
    """Records the ops that reach torch's dispatcher."""
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_compiled_graphs_call_the_host_functions_directly():
    # The compiled forward and backward call each op's direct attribute, not the op through the
    # dispatcher; the values and gradients are the dispatcher route's. Under a dispatch mode the
    # direct attribute takes the dispatcher's route after all, so the mode sees the op.
    from torch._inductor.utils import run_and_get_code
    from tegula.torch import _inductor_fallback
    torch._dynamo.reset()
    x, w = _inputs(5, 23, seed=11)

    def step(x, w):
        loss = torch.compile(model, fullgraph=True)(x, w)
        loss.backward()
        return loss
    with torch._inductor.config.patch(fx_graph_cache=False):  # the code this Tegula generates, not a cached one
        loss, codes = run_and_get_code(step, x, w)
    code = "\n".join(codes)
    for name in ("scaled_tanh", "scaled_tanh_backward"):
        assert f"torch.ops.tegula_tests.{name}.default.{_inductor_fallback.DIRECT}(" in code
        assert f"torch.ops.tegula_tests.{name}.default(" not in code
    # The ops' outputs get no size asserts (their host functions allocate what the fake implementations
    # say); the graph's inputs still do.
    outputs = [line.split("=")[0].strip() for line in code.splitlines() if f".{_inductor_fallback.DIRECT}(" in line]
    asserted = [line.strip() for line in code.splitlines() for buf in outputs
                for check in ("assert_size_stride", "assert_tensor_metadata") if f"{check}({buf}," in line]
    assert outputs and not asserted, asserted
    assert "assert_size_stride" in code  # the inputs' checks
    _assert_matches_reference(loss, x, w)
    direct = getattr(torch.ops.tegula_tests.scaled_tanh.default, _inductor_fallback.DIRECT)
    with torch.no_grad():
        plain = direct(x, 0.7)
        with _Seen() as seen:
            through_mode = direct(x, 0.7)
    assert "tegula_tests.scaled_tanh.default" in seen.ops
    torch.testing.assert_close(plain, through_mode, rtol=0, atol=0)
    torch.testing.assert_close(plain, torch.tanh(0.7 * x), rtol=1e-5, atol=1e-6)


def test_graphs_compiled_with_direct_calls_off_call_the_ops():
    from torch._inductor.utils import run_and_get_code
    from tegula.torch import _inductor_fallback
    torch._dynamo.reset()
    x, w = _inputs(3, 17, seed=5)
    _inductor_fallback.CALL_DIRECTLY = False
    try:
        with torch._inductor.config.patch(fx_graph_cache=False):
            loss, codes = run_and_get_code(lambda: torch.compile(model, fullgraph=True)(x, w))
    finally:
        _inductor_fallback.CALL_DIRECTLY = True
    assert "torch.ops.tegula_tests.scaled_tanh.default(" in "\n".join(codes)
    assert _inductor_fallback.DIRECT not in "\n".join(codes)
    torch.testing.assert_close(loss, reference(x, w), rtol=1e-5, atol=1e-5)


@tegula.torch.custom_op("tegula_tests::scaled_tanh_no_formula", fake=lambda x, alpha: x.new_empty(x.shape))
def scaled_tanh_no_formula(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return scaled_tanh._tegula_fn(x, alpha)


def test_an_op_without_a_formula_runs_and_refuses_its_backward_on_every_route():
    x = torch.randn(4, 37, requires_grad=True)
    want = torch.tanh(0.7 * x.detach())
    for call in (scaled_tanh_no_formula, torch.ops.tegula_tests.scaled_tanh_no_formula):
        with torch.no_grad():
            torch.testing.assert_close(call(x, 0.7), want, rtol=1e-5, atol=1e-6)
        y = call(x, 0.7)
        with pytest.raises(RuntimeError, match="register_autograd"):
            y.sum().backward()



@tegula.torch.custom_op("tegula_tests::tanh_with_square",
                        fake=lambda x, alpha: (x.new_empty(x.shape), x.new_empty(x.shape)))
def tanh_with_square(x: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    y = scaled_tanh._tegula_fn(x, alpha)
    return y, y * y  # the square: a value for the backward, as a norm's statistics are


_GRADS_SEEN = []


def _tanh_with_square_backward(saved, dy, dsquare):
    _GRADS_SEEN.append((dy, dsquare))
    if dy is None:
        return None, None
    y, square, alpha = saved
    return dy * alpha * (1.0 - square), None


tegula.torch.register_autograd(tanh_with_square, _tanh_with_square_backward, non_differentiable=(1,),
                               save=lambda inputs, output: (output[0], output[1], inputs[1]))


@pytest.mark.parametrize("route", ["direct", "torch.ops"])
def test_non_differentiable_outputs_carry_no_gradient(route):
    # Marked outputs do not require grad; the backward gets None, not allocated zeros, for every
    # output without a gradient, on both routes into the op.
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(3), dtype=torch.float64, requires_grad=True)
    call = tanh_with_square if route == "direct" else torch.ops.tegula_tests.tanh_with_square
    y, square = call(x, 0.7)
    assert y.requires_grad and not square.requires_grad
    _GRADS_SEEN.clear()
    (got,) = torch.autograd.grad((y * 3).sum(), x)
    assert len(_GRADS_SEEN) == 1 and _GRADS_SEEN[0][1] is None
    torch.testing.assert_close(got, 3 * 0.7 * (1 - torch.tanh(0.7 * x.detach()) ** 2))
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(square.sum(), x)


@tegula.torch.custom_op("tegula_tests::doubled", fake=lambda x: x.new_empty(x.shape))
def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_register_autograd_checks_what_it_is_given():
    """A save that returns a bare tensor (a tuple of its rows, before), indices of outputs the op
    lacks, and an op that is no custom op are errors that say so, not wrong gradients."""
    with pytest.raises(TypeError, match="register_autograd takes an op made by tegula.torch.custom_op, "
                                        "got function"):
        tegula.torch.register_autograd(lambda x: x, lambda saved, g: (g,), save=lambda i, o: ())
    with pytest.raises(TypeError, match="non_differentiable holds output indices"):
        tegula.torch.register_autograd(doubled, lambda saved, g: (g,), save=lambda i, o: (), non_differentiable="0")
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    tegula.torch.register_autograd(doubled, lambda saved, g: (g * 2,), save=lambda i, o: i[0])
    with pytest.raises(TypeError, match=r"register_autograd's save must return a tuple of what the backward "
                                        r"needs, got Tensor \(write `lambda inputs, output: \(inputs\[0\],\)`\)"):
        doubled(x)
    tegula.torch.register_autograd(doubled, lambda saved, g: (g * 2,), save=lambda i, o: (), non_differentiable=(3,))
    with pytest.raises(ValueError, match=r"non_differentiable \(3,\) names an output the op does not have "
                                         r"\(it has 1\)"):
        doubled(x)
    tegula.torch.register_autograd(doubled, lambda saved, g: (g * 2 * saved[0],), save=lambda i, o: (i[0],))
    doubled(x).sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())


def test_eager_calls_on_meta_tensors_run_the_fake():
    """A meta tensor has no memory to launch on: an eager call takes the dispatcher's route, whose Meta
    kernel is the op's fake (the direct call launched on a null address before)."""
    from tegula.torch import ops
    x, w = torch.empty(4, 8, device="meta"), torch.empty(8, device="meta")
    y = ops.rms_norm(x, w)
    assert (y.shape, y.device.type) == ((4, 8), "meta")
    x = torch.empty(5, 7, device="meta", requires_grad=True)
    y, square = tanh_with_square(x, 0.5)
    assert y.device.type == "meta" and y.requires_grad


def test_negated_views_take_the_dispatchers_route_which_resolves_them():
    """x.conj().imag and torch._neg_view(x) hold their values with the other sign: a launch refuses them
    (E0702), so an eager call takes the dispatcher's route, whose negative-bit fallback hands the op a
    resolved copy, as for any torch op. Values and gradients are those of the resolved tensor."""
    gen = torch.Generator().manual_seed(3)
    base = torch.randn(5, 37, generator=gen)
    imag = torch.complex(torch.randn(5, 37, generator=gen), base).conj().imag  # -base
    assert imag.is_neg()
    torch.testing.assert_close(scaled_tanh(imag, 0.7), torch.tanh(-0.7 * base), rtol=1e-5, atol=1e-6)
    x = base.clone().requires_grad_()
    y = scaled_tanh(torch._neg_view(x), 0.7)
    upstream = torch.randn(5, 37, generator=gen)
    (grad,) = torch.autograd.grad(y, x, upstream)
    xr = base.clone().requires_grad_()
    (want,) = torch.autograd.grad(torch.tanh(-0.7 * xr), xr, upstream)
    torch.testing.assert_close(y, torch.tanh(-0.7 * base), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad, want, rtol=1e-4, atol=1e-6)


def test_a_fake_that_launches_is_told_to_allocate_only():
    """A custom op's fake implementation that calls the real function launches on FakeTensors, which have
    no memory: the launch says so and what a fake should do, under torch.compile and under FakeTensorMode."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    message = ("argument 'x_ptr' of kernel 'scaled_tanh_kernel' is a FakeTensor, a tracer's tensor with a shape "
               "and no memory")
    with FakeTensorMode() as mode, warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fake = mode.from_tensor(torch.randn(7, 3))
        with pytest.raises(TypeError, match=message):
            scaled_tanh_kernel[(1,)](fake, torch.empty_like(fake), 0.5, 21, BLOCK=256)
    assert not [w for w in said if "data pointer" in str(w.message)]  # told before data_ptr() is asked

    def launch(x):
        y = torch.empty_like(x)
        scaled_tanh_kernel[_launch_grid(x.numel())](x, y, 0.5, x.numel(), BLOCK=256)
        return y

    @tegula.torch.custom_op("tegula_tests::launching_fake", fake=launch)
    def launching_fake(x: torch.Tensor) -> torch.Tensor:
        return launch(x)

    x = torch.randn(4, 9)
    torch.testing.assert_close(launching_fake(x), torch.tanh(0.5 * x), rtol=1e-5, atol=1e-6)  # eager: no fake
    compiled = torch.compile(lambda t: launching_fake(t) + 1, fullgraph=True, backend="eager")
    with pytest.raises(Exception, match=message):
        compiled(x)
