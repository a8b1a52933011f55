"""tegula.torch.ops.add_rms_norm (``h = x + residual``, ``y = rms_norm(h) *
weight`` in a chosen dtype) against eager torch: values and gradients of x,
residual and weight on random data, with upstream gradients for both h and
y and with h unused; hidden sizes that are not powers of two (masked
tails); a float32 stream with a bf16 residual and a bf16 y (autocast's
situation) and the default out_dtype under torch.autocast; float64
gradients against finite differences (gradcheck), torch.library.opcheck of
the op, bad arguments, and torch.compile(fullgraph=True).

Tolerances per dtype as in test_torch_ops.py: float64 at 1e-10; float32 at
rtol 1e-5 / atol 1e-5 for values and 1e-4 / 1e-5 for gradients; bfloat16
(inputs or y) against the float32 reference of the same rounded inputs at
2e-2 / 2e-2 for values and 3e-2 / 3e-2 for gradients. Few distinct
shapes and dtypes, so few kernel specializations."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

from tegula import _device  # noqa: E402
from tegula.torch.ops.add_rms_norm import add_rms_norm  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and _device.is_available() else [])

TOLERANCES = {torch.float64: dict(value=(1e-10, 1e-10), grad=(1e-10, 1e-10)),
              torch.float32: dict(value=(1e-5, 1e-5), grad=(1e-4, 1e-5)),
              torch.bfloat16: dict(value=(2e-2, 2e-2), grad=(3e-2, 3e-2))}

DTYPES = [torch.float32, torch.float64, torch.bfloat16]
DTYPE_IDS = ["float32", "float64", "bfloat16"]
HIDDEN = [37, 200]  # not powers of two: the last tile of each row is masked


def _randn(*shape, dtype, gen, scale=1.0, shift=0.0, device="cpu"):
    values = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + shift
    return values.to(device=device, dtype=dtype).requires_grad_()


def reference(x, residual, weight, eps=1e-6, h_dtype=None):
    """(h, y) in eager torch, in the dtype of x (residual widened to it). With h_dtype, h's values
    are rounded to it (as the op stores h, and y is the norm of that h), its gradient passes unchanged."""
    h = x + residual.to(x.dtype)
    if h_dtype is not None:
        h = h + (h.to(h_dtype).to(h.dtype) - h).detach()
    return h, h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps) * weight


def _reference_dtype(dtype):
    return torch.float32 if dtype == torch.bfloat16 else dtype


def _close(got, want, dtype, kind):
    rtol, atol = TOLERANCES[dtype][kind]
    torch.testing.assert_close(got.to(want.dtype), want, rtol=rtol, atol=atol)


def _check(x, residual, weight, out_dtype=None, use_h=True, gen=None):
    """add_rms_norm(x, residual, weight) and the gradients of x, residual and weight for random
    upstream gradients of y (and of h when use_h) equal the reference's, computed in float32 for
    bfloat16 tensors (from the same rounded values, h rounded to x's dtype) and in x's dtype
    otherwise. Each output and gradient is held to the tolerances of its own dtype."""
    ref_dtype = _reference_dtype(x.dtype)
    got_inputs = [t.detach().clone().requires_grad_() for t in (x, residual, weight)]
    want_inputs = [t.detach().to(ref_dtype).requires_grad_() for t in (x, residual, weight)]
    h, y = add_rms_norm(*got_inputs, out_dtype=out_dtype)
    want_h, want_y = reference(*want_inputs, h_dtype=x.dtype)
    assert h.dtype == x.dtype and y.dtype == (out_dtype or x.dtype)
    _close(h, want_h, x.dtype, "value")
    _close(y, want_y, y.dtype, "value")
    dy = torch.randn(y.shape, generator=gen, dtype=torch.float64).to(device=y.device, dtype=y.dtype)
    dh = torch.randn(h.shape, generator=gen, dtype=torch.float64).to(device=h.device, dtype=h.dtype)
    outputs, want_outputs, upstream = [y], [want_y], [dy]
    if use_h:
        outputs, want_outputs, upstream = [h, y], [want_h, want_y], [dh, dy]
    got_grads = torch.autograd.grad(outputs, got_inputs, upstream)
    want_grads = torch.autograd.grad(want_outputs, want_inputs, [u.to(ref_dtype) for u in upstream])
    # The reference sees the same upstream values, so a bfloat16 y rounds no gradient: each is held
    # to the tolerance of its own dtype (bfloat16 for all of them when x is bfloat16).
    for g, w, leaf in zip(got_grads, want_grads, got_inputs):
        assert g.dtype == leaf.dtype
        _close(g, w, leaf.dtype, "grad")
    return got_grads


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", HIDDEN)
@pytest.mark.parametrize("use_h", [True, False], ids=["h_and_y", "y_only"])
def test_add_rms_norm_matches_torch(device, dtype, n, use_h):
    # y_only: h's gradient reaches the backward as zeros (autograd materializes it) or None.
    gen = torch.Generator().manual_seed(n + use_h)
    # 69 rows: each of the backward's programs gets 2 (the last one 1).
    x = _randn(3, 23, n, dtype=dtype, gen=gen, scale=2, shift=0.5, device=device)
    residual = _randn(3, 23, n, dtype=dtype, gen=gen, device=device)
    weight = _randn(n, dtype=dtype, gen=gen, shift=1, device=device)
    _check(x, residual, weight, use_h=use_h, gen=gen)


@pytest.mark.parametrize("ahead", [False, True], ids=["in_step", "ahead"])
@pytest.mark.parametrize("use_h", [True, False], ids=["h_and_y", "y_only"])
def test_backward_steps_with_partial_last_step(monkeypatch, ahead, use_h):
    # 1001 rows of 200: 63 programs of 16 rows in steps of 8, the last program 9 rows (its second
    # step one row). "ahead": the loop that loads each step's tiles during the step before, the
    # GPU's (_rows.LOAD_AHEAD), run on the CPU backend.
    from tegula.torch.ops import _rows
    monkeypatch.setattr(_rows, "LOAD_AHEAD", {"cuda": True, "cpu": ahead})
    gen = torch.Generator().manual_seed(1001 + use_h)
    x = _randn(7, 143, 200, dtype=torch.float32, gen=gen, scale=2, shift=0.5)
    residual = _randn(7, 143, 200, dtype=torch.float32, gen=gen)
    weight = _randn(200, dtype=torch.float32, gen=gen, shift=1)
    _check(x, residual, weight, use_h=use_h, gen=gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", HIDDEN)
def test_float32_stream_with_bf16_residual_and_bf16_output(device, n):
    # The residual stream in float32, the block's output projection in bf16, y for a bf16 projection.
    gen = torch.Generator().manual_seed(3 * n)
    x = _randn(2, 3, n, dtype=torch.float32, gen=gen, scale=2, device=device)
    residual = _randn(2, 3, n, dtype=torch.bfloat16, gen=gen, device=device)
    weight = _randn(n, dtype=torch.float32, gen=gen, shift=1, device=device)
    dx, dresidual, _ = _check(x, residual, weight, out_dtype=torch.bfloat16, gen=gen)
    assert dresidual.dtype == torch.bfloat16 and dx.dtype == torch.float32
    # One kernel writes both gradients: the same values, in two tensors.
    assert dx.data_ptr() != dresidual.data_ptr()
    torch.testing.assert_close(dresidual, dx.to(torch.bfloat16), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_default_out_dtype_follows_autocast(device):
    gen = torch.Generator().manual_seed(41)
    x = _randn(2, 3, 37, dtype=torch.float32, gen=gen, device=device)
    residual = _randn(2, 3, 37, dtype=torch.bfloat16, gen=gen, device=device)
    weight = _randn(37, dtype=torch.float32, gen=gen, shift=1, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        h, y = add_rms_norm(x, residual, weight)
    assert h.dtype == torch.float32 and y.dtype == torch.bfloat16
    chosen = add_rms_norm(x, residual, weight, out_dtype=torch.bfloat16)
    torch.testing.assert_close(y, chosen[1], rtol=0, atol=0)
    h, y = add_rms_norm(x, residual, weight)
    assert h.dtype == torch.float32 and y.dtype == torch.float32
    _, want_y = reference(x, residual, weight)
    torch.testing.assert_close(y, want_y, rtol=1e-5, atol=1e-5)


def test_backward_takes_none_for_the_gradient_of_h():
    # dh None (h unused): the same results as a zero dh, from a kernel specialized without it (nothing read).
    gen = torch.Generator().manual_seed(43)
    h, dy = (torch.randn(2, 3, 37, generator=gen, dtype=torch.float64) for _ in range(2))
    weight = torch.randn(37, generator=gen, dtype=torch.float64)
    backward = torch.ops.tegula.add_rms_norm_backward
    without = backward(None, dy, h, weight, 1e-6)
    with_zero = backward(torch.zeros_like(h), dy, h, weight, 1e-6)
    assert len(without) == 2
    for a, b in zip(without, with_zero):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_gradients_of_h_alone_pass_through():
    # y unused: dx = dresidual = dh, no gradient for weight.
    gen = torch.Generator().manual_seed(44)
    x, residual = (_randn(2, 3, 37, dtype=torch.float64, gen=gen) for _ in range(2))
    weight = _randn(37, dtype=torch.float64, gen=gen, shift=1)
    h, _ = add_rms_norm(x, residual, weight)
    dh = torch.randn(h.shape, generator=gen, dtype=torch.float64)
    dx, dresidual, dweight = torch.autograd.grad(h, [x, residual, weight], dh, allow_unused=True)
    torch.testing.assert_close(dx, dh, rtol=0, atol=0)
    torch.testing.assert_close(dresidual, dh, rtol=0, atol=0)
    assert dweight is None or not dweight.any()


def test_float64_gradients_match_finite_differences():
    gen = torch.Generator().manual_seed(7)
    f64 = dict(dtype=torch.float64, gen=gen)
    x, residual = _randn(2, 3, 37, **f64), _randn(2, 3, 37, **f64)
    weight = _randn(37, **f64, shift=1)
    assert torch.autograd.gradcheck(add_rms_norm, (x, residual, weight))


def _opcheck_cases():
    gen = torch.Generator().manual_seed(11)
    f64 = dict(dtype=torch.float64, gen=gen)
    h, dy = (torch.randn(6, 37, generator=gen, dtype=torch.float64) for _ in range(2))
    weight = _randn(37, **f64, shift=1)
    return {
        "forward": (torch.ops.tegula.add_rms_norm, (_randn(6, 37, **f64), _randn(6, 37, **f64), weight, 1e-6,
                                                    torch.float64)),
        # A transposed x (as a model's layout may hand it): the fake must give the real outputs' strides.
        "forward_permuted": (torch.ops.tegula.add_rms_norm, (_randn(37, 6, **f64).t(), _randn(6, 37, **f64), weight,
                                                             1e-6, torch.float64)),
        "backward": (torch.ops.tegula.add_rms_norm_backward, (dy.flip(0), dy, h, weight.detach(), 1e-6)),
        "backward_without_dh": (torch.ops.tegula.add_rms_norm_backward, (None, dy, h, weight.detach(), 1e-6)),
    }


@pytest.mark.parametrize("name", sorted(_opcheck_cases()))
def test_op_registration_passes_opcheck(name):
    op, args = _opcheck_cases()[name]
    torch.library.opcheck(op, args)


@pytest.mark.parametrize("call,message", [
    (lambda: add_rms_norm(torch.ones(4, 37), torch.ones(4, 36), torch.ones(37)), "residual of x's shape"),
    (lambda: add_rms_norm(torch.ones(4, 37), torch.ones(4, 37), torch.ones(36)), "weights of shape"),
    (lambda: add_rms_norm(torch.ones(4, 37), torch.ones(4, 37), torch.ones(37, dtype=torch.float64)), "dtype"),
    (lambda: add_rms_norm(torch.ones(4, 37), torch.ones(4, 37, dtype=torch.int32), torch.ones(37)),
     "residual of dtype"),
    (lambda: add_rms_norm(torch.ones(4, 37), torch.ones(4, 37), torch.ones(37), out_dtype=torch.int32),
     "out_dtype of dtype torch.float16, torch.bfloat16, torch.float32, torch.float64, got torch.int32"),
])
def test_mismatched_arguments_are_errors_before_any_launch(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def block(x, residual, weight, proj, autocast):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        h, y = add_rms_norm(x, residual, weight)
        return h.square().sum() + (y @ proj).float().tanh().sum()


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "autocast"])
def test_fullgraph_compile_keeps_the_op_and_matches_eager(autocast):
    # Under autocast the traced function reads the autocast dtype: y is bf16 and the product runs in bf16.
    dynamo = pytest.importorskip("torch._dynamo")
    dynamo.reset()
    gen = torch.Generator().manual_seed(37)
    x, residual = (_randn(2, 3, 37, dtype=torch.float32, gen=gen) for _ in range(2))
    weight = _randn(37, dtype=torch.float32, gen=gen, shift=1)
    proj = torch.randn(37, 5, generator=gen)
    explained = dynamo.explain(block)(x, residual, weight, proj, autocast)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    loss = torch.compile(block, fullgraph=True)(x, residual, weight, proj, autocast)
    grads = torch.autograd.grad(loss, [x, residual, weight])
    eager_inputs = [t.detach().clone().requires_grad_() for t in (x, residual, weight)]
    want = block(*eager_inputs, proj, autocast)
    want_grads = torch.autograd.grad(want, eager_inputs)
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-5)
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_inputs_and_kept_layouts_give_the_contiguous_results(device):
    # Contiguous rows launch from the layout kept by their metadata (ops/_layouts.py); strided ones take
    # the general path, which copies them first. Both give the same bits, and so does a second call.
    import importlib
    arn = importlib.import_module("tegula.torch.ops.add_rms_norm")
    from tegula.torch.ops._layouts import metadata
    gen = torch.Generator().manual_seed(21)
    x = _randn(37, 5, 200, dtype=torch.float32, gen=gen, device=device).detach()
    residual = _randn(37, 5, 200, dtype=torch.float32, gen=gen, device=device).detach()
    weight = _randn(200, dtype=torch.float32, gen=gen, device=device, shift=1.0).detach()
    dy = _randn(37, 5, 200, dtype=torch.float32, gen=gen, device=device).detach()
    kept = [arn.add_rms_norm_forward(x, residual, weight, 1e-6, torch.float32) for _ in range(2)]
    key = (metadata(x, residual, weight), (torch.float32, 1e-6, float))
    assert arn._FORWARD_LAYOUTS[key] is not None
    strided = arn.add_rms_norm_forward(x.transpose(0, 1).contiguous().transpose(0, 1), residual, weight, 1e-6,
                                       torch.float32)
    for result in kept:
        for got, want in zip(result, strided):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    h = kept[0][0]
    grads = [arn.add_rms_norm_backward(dy, dy, h, weight, 1e-6) for _ in range(2)]
    strided_grads = arn.add_rms_norm_backward(dy.transpose(0, 1).contiguous().transpose(0, 1), dy, h, weight, 1e-6)
    for result in grads:
        for got, want in zip(result, strided_grads):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
