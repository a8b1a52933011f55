"""tegula.torch.ops.rotary_attention (rotary embedding of q and k and
attention, over one projection's [B, T, 3, H, D] output) against the two ops
it fuses, rotary_qkv and attention, whose kernels it runs: the same values
and qkv gradients bit for bit (v read in place from qkv instead of a copy
changes nothing), causal and not, with sequence lengths that are not
multiples of the tiles; against eager torch (rotate-half rotary and
scaled_dot_product_attention) within the tolerances of test_torch_ops.py;
float64 gradients against finite differences; the log-sum-exp and rotated
q and k outputs (for torch.ops callers) without gradients; opcheck; errors; and
torch.compile(fullgraph=True) keeping the op."""

import importlib
import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

from tegula import _device  # noqa: E402
from tegula.torch import ops  # noqa: E402

module = importlib.import_module("tegula.torch.ops.rotary_attention")  # ops.rotary_attention is the function

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and _device.is_available() else [])


def _inputs(B, T, H, D, dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    qkv = torch.randn(B, T, 3, H, D, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype)
    cos, sin = ops.rotary_tables(T, D, device=device)
    return qkv.requires_grad_(), cos, sin


def _composed(qkv, cos, sin, causal, scale=None):
    q, k, v = ops.rotary_qkv(qkv, cos, sin)
    return ops.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal,
                         scale=scale).transpose(1, 2)


def _torch_reference(qkv, cos, sin, causal):
    def rotate(x):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        c, s = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    q, k, v = qkv.unbind(2)
    out = torch.nn.functional.scaled_dot_product_attention(rotate(q).transpose(1, 2), rotate(k).transpose(1, 2),
                                                           v.transpose(1, 2), is_causal=causal)
    return out.transpose(1, 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_equals_rotary_qkv_then_attention(device, dtype, causal):
    qkv, cos, sin = _inputs(2, 45, 3, 16 if device == "cpu" else 64, dtype, device, seed=45 + causal)
    out = ops.rotary_attention(qkv, cos, sin, causal=causal)
    assert out.shape == (2, 45, 3, qkv.shape[-1]) and out.is_contiguous() and out.dtype == dtype
    twin = qkv.detach().clone().requires_grad_()
    want = _composed(twin, cos, sin, causal)
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(7)).to(out)
    (got,), (expected,) = torch.autograd.grad(out, qkv, upstream), torch.autograd.grad(want, twin, upstream)
    assert got.shape == qkv.shape and got.dtype == dtype
    at = importlib.import_module("tegula.torch.ops.attention_tma")
    if not at.applies(qkv):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        return
    # The descriptor backward stores dq and dk rotated back before rounding them to bf16 (once); the composed
    # ops round them, then rotate and round again. Within bf16's rounding of the composed, and no farther from
    # the float64 gradient.
    _assert_as_close_to_float64(got, expected, qkv, cos, sin, causal, upstream)


def _assert_as_close_to_float64(got, other, qkv, cos, sin, causal, upstream):
    """got (qkv's gradient) is within bf16 rounding of `other` and at most as far as `other` from the float64
    gradient (plus one part in a thousand of its largest magnitude)."""
    twin = qkv.detach().double().cpu().requires_grad_()
    out = _torch_reference(twin, cos.double().cpu(), sin.double().cpu(), causal)
    (want,) = torch.autograd.grad(out, twin, upstream.double().cpu())
    scale = want.abs().max()
    got_error = (got.double().cpu() - want).abs().max() / scale
    other_error = (other.double().cpu() - want).abs().max() / scale
    assert got_error <= other_error + 1e-3, f"{got_error:.3g} of the largest magnitude, against {other_error:.3g}"
    torch.testing.assert_close(got, other, rtol=2e-2, atol=2e-2 * scale.item())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_matches_eager_torch(device, causal):
    qkv, cos, sin = _inputs(2, 33, 2, 32, torch.float32, device, seed=3 + causal)
    out = ops.rotary_attention(qkv, cos, sin, causal=causal)
    twin = qkv.detach().clone().requires_grad_()
    want = _torch_reference(twin, cos, sin, causal)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(8)).to(out)
    (got,), (expected,) = torch.autograd.grad(out, qkv, upstream), torch.autograd.grad(want, twin, upstream)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_float64_gradients_match_finite_differences():
    qkv, cos, sin = _inputs(1, 9, 2, 16, torch.float64, "cpu", seed=11)
    cos, sin = cos.double(), sin.double()
    assert torch.autograd.gradcheck(lambda t: ops.rotary_attention(t, cos, sin, causal=True), (qkv,))


def test_lse_and_the_rotated_q_and_k_carry_no_gradient():
    # torch.ops callers see lse, q and k, kept for the backward: they do not require grad (as
    # scaled_dot_product_attention's log-sum-exp), so no gradient can be lost through them.
    qkv, cos, sin = _inputs(2, 12, 2, 16, torch.float64, "cpu", seed=12)
    cos, sin = cos.double(), sin.double()
    out, lse, q, k = torch.ops.tegula.rotary_attention(qkv, cos, sin, True, 0.25)
    assert out.requires_grad and not (lse.requires_grad or q.requires_grad or k.requires_grad)
    want_q, want_k, _ = ops.rotary_qkv(qkv.detach(), cos, sin)
    torch.testing.assert_close(q, want_q, rtol=0, atol=0)
    torch.testing.assert_close(k, want_k, rtol=0, atol=0)
    (got,) = torch.autograd.grad((out * out).sum(), qkv)
    twin = qkv.detach().clone().requires_grad_()
    (want,) = torch.autograd.grad((_composed(twin, cos, sin, True, scale=0.25) ** 2).sum(), twin)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_non_contiguous_qkv_and_empty_batches():
    qkv, cos, sin = _inputs(2, 10, 2, 16, torch.float32, "cpu", seed=13)
    strided = qkv.detach().transpose(0, 1).contiguous().transpose(0, 1).requires_grad_()  # batch stride < T's
    torch.testing.assert_close(ops.rotary_attention(strided, cos, sin), _composed(qkv, cos, sin, False),
                               rtol=0, atol=0)
    empty = torch.zeros(0, 10, 3, 2, 16, requires_grad=True)
    out = ops.rotary_attention(empty, cos, sin)
    assert out.shape == (0, 10, 2, 16)
    out.sum().backward()
    assert empty.grad.shape == empty.shape


def test_registration_passes_opcheck():
    qkv, cos, sin = _inputs(1, 8, 2, 16, torch.float32, "cpu", seed=14)
    torch.library.opcheck(module.rotary_attention_forward, (qkv, cos, sin, True, 0.25))


@pytest.mark.parametrize("shape,message", [
    ((2, 8, 2, 16), r"qkv of shape \[B, T, 3, H, D\]"),
    ((2, 8, 4, 2, 16), r"qkv of shape \[B, T, 3, H, D\]"),
    ((2, 8, 3, 2, 24), "power of two >= 16"),
])
def test_bad_shapes_are_errors(shape, message):
    cos, sin = ops.rotary_tables(8, shape[-1])
    with pytest.raises(ValueError, match=message):
        ops.rotary_attention(torch.randn(shape), cos, sin)


def test_tables_of_the_wrong_shape_are_errors():
    cos, sin = ops.rotary_tables(9, 16)
    with pytest.raises(ValueError, match="cos and sin of shape"):
        ops.rotary_attention(torch.randn(1, 8, 3, 2, 16), cos, sin)


def test_fullgraph_compile_keeps_the_op_and_matches_eager():
    qkv, cos, sin = _inputs(2, 16, 2, 16, torch.float32, "cpu", seed=15)

    def step(t):
        return (ops.rotary_attention(t, cos, sin, causal=True) * 2).sum()

    compiled = torch.compile(step, fullgraph=True)
    twin = qkv.detach().clone().requires_grad_()
    loss, want = compiled(qkv), step(twin)
    loss.backward()
    want.backward()
    torch.testing.assert_close(loss, want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(qkv.grad, twin.grad, rtol=1e-6, atol=1e-6)
    assert math.isfinite(loss.item())


def test_layouts_are_kept_by_metadata_and_bounded():
    from tegula.torch.ops._layouts import Layouts
    layouts = Layouts()
    built = []

    def build(value):
        built.append(value)
        return None if value == "general" else value * 2
    assert layouts.find(("a",), build, 3) == 6 and layouts.find(("a",), build, 3) == 6
    assert layouts.find(("b",), build, "general") is None and layouts.find(("b",), build, "general") is None
    assert built == [3, "general"]  # each key built once, a None (general path) remembered too
    for i in range(Layouts.LIMIT + 1):
        layouts.find(("many", i), build, i)
    assert len(layouts) <= Layouts.LIMIT


def test_layouts_are_found_again_through_guards_and_only_for_the_same_metadata():
    # lookup asks its latest layouts through torch's tensor guards and the addresses modulo 16, then the key:
    # a tensor of other strides, dtype or alignment, or other extra values, never gets another's layout.
    from tegula.torch.ops import _layouts
    layouts = _layouts.Layouts()
    built = []

    def build(a, b, extra):
        built.append((tuple(a.stride()), a.dtype, a.data_ptr() % 16, extra))
        return len(built)
    base = torch.randn(40, 33)
    a, b = base[:, :32], torch.randn(8)
    for _ in range(3):
        assert layouts.lookup((a, b), 1.5, build, a, b, 1.5) == 1
    assert len(built) == 1
    assert layouts.lookup((a, b), 2.5, build, a, b, 2.5) == 2                      # other extra values
    contiguous = a.contiguous()
    assert layouts.lookup((contiguous, b), 1.5, build, contiguous, b, 1.5) == 3    # other strides
    half = a.to(torch.float16)
    assert layouts.lookup((half, b), 1.5, build, half, b, 1.5) == 4                # other dtype
    shifted = base[:, 1:33]                                                        # 4 bytes further
    assert layouts.lookup((shifted, b), 1.5, build, shifted, b, 1.5) == 5
    assert layouts.lookup((a, b), 1.5, build, a, b, 1.5) == 1                      # the first again, not rebuilt
    assert len(built) == 5
    if _layouts.TensorGuards is not None:
        assert layouts._recent, "the guards of torch's dynamo found no use"
        assert len(layouts._recent) <= layouts.RECENT


@pytest.mark.skipif("cuda" not in DEVICES, reason="the descriptor path runs on an sm_90 GPU")
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_kept_layouts_launch_what_the_general_path_launches(D, causal, monkeypatch):
    # On Hopper the op keeps what the metadata decides and launches from it; every output and gradient
    # equals the general path's bit for bit, on the first call (layout built) and the next (layout kept),
    # with out's gradient in a layout of its own (heads first, then transposed back).
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the descriptor path is sm_90's")
    qkv, cos, sin = _inputs(2, 77, 3, D, torch.bfloat16, "cuda", seed=D + causal)
    qkv = qkv.detach()
    out, lse, q, k = module.rotary_attention_forward(qkv, cos, sin, causal, 0.125)
    dout = torch.randn(2, 3, 77, D, generator=torch.Generator().manual_seed(5)).to(qkv).transpose(1, 2)
    fast = [module.rotary_attention_forward(qkv, cos, sin, causal, 0.125) for _ in range(2)]
    fast_grads = [module.rotary_attention_backward(dout, qkv, q, k, out, lse, cos, sin, causal, 0.125)
                  for _ in range(2)]
    assert any(layout is not None for layout in module._FORWARD_LAYOUTS.values())
    assert any(layout is not None for layout in module._BACKWARD_LAYOUTS.values())
    monkeypatch.setattr(module, "FAST", False)
    general = module.rotary_attention_forward(qkv, cos, sin, causal, 0.125)
    general_grad = module.rotary_attention_backward(dout, qkv, q, k, out, lse, cos, sin, causal, 0.125)
    for result in fast:
        for got, want in zip(result, general):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    for got in fast_grads:
        torch.testing.assert_close(got, general_grad, rtol=0, atol=0)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_kept_layouts_on_the_cpu_backend(causal, monkeypatch):
    # The descriptor kernels also run on the CPU backend (descriptors lowered to pointers): with
    # attention_tma.applies made true there, the kept-layout path runs in CI and must launch exactly what
    # the general path launches, bit for bit, on a sequence that is not a multiple of the tiles.
    at = importlib.import_module("tegula.torch.ops.attention_tma")
    monkeypatch.setattr(at, "applies", lambda q: q.dtype == torch.bfloat16 and q.shape[-1] in at.DKDV)
    monkeypatch.setattr(module, "_FORWARD_LAYOUTS", type(module._FORWARD_LAYOUTS)())
    monkeypatch.setattr(module, "_BACKWARD_LAYOUTS", type(module._BACKWARD_LAYOUTS)())
    qkv, cos, sin = _inputs(1, 70, 2, 64, torch.bfloat16, "cpu", seed=70 + causal)
    qkv = qkv.detach()
    dout = torch.randn(1, 2, 70, 64, generator=torch.Generator().manual_seed(9)).to(qkv).transpose(1, 2)
    fast = module.rotary_attention_forward(qkv, cos, sin, causal, 0.125)
    assert any(layout is not None for layout in module._FORWARD_LAYOUTS.values())
    fast_grad = module.rotary_attention_backward(dout, qkv, *fast[2:], fast[0], fast[1], cos, sin, causal, 0.125)
    assert any(layout is not None for layout in module._BACKWARD_LAYOUTS.values())
    monkeypatch.setattr(module, "FAST", False)
    general = module.rotary_attention_forward(qkv, cos, sin, causal, 0.125)
    general_grad = module.rotary_attention_backward(dout, qkv, *general[2:], general[0], general[1], cos, sin,
                                                    causal, 0.125)
    for got, want in zip(fast, general):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(fast_grad, general_grad, rtol=0, atol=0)
    # Both store dq and dk rotated back in the descriptor kernels; the pointer kernels with a rotary launch after
    # them (the path without descriptors) round once more.
    monkeypatch.setattr(at, "applies", lambda q: False)
    unfused = module.rotary_attention_backward(dout, qkv, *general[2:], general[0], general[1], cos, sin, causal,
                                               0.125)
    _assert_as_close_to_float64(fast_grad, unfused, qkv, cos, sin, causal, dout)
