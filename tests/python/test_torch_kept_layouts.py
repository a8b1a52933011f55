"""The ops' kept layouts (tegula.torch.ops._layouts.Layouts: sizes, grids, trailing scalars and constexprs kept
by the arguments' metadata and the key's other values) under the calls a hostile or unlucky user makes:
inputs of one shape but other strides, dtypes or alignment, and other eps / out_dtype / ignore_index /
causal / scale, interleaved so that the few layouts asked first (Layouts.RECENT) keep changing; a tensor passed
twice in one call (which torch's guards refuse); inputs changed in place between calls; requires_grad
flipping; empty inputs and size-1 dimensions of any stride; more shapes than Layouts.LIMIT; module tables
that are part of the key changed between calls; inputs kept alive by the caches; several threads at once.

Every result is checked against the op's general path: for add_rms_norm, rms_norm and
linear_cross_entropy the same op on copies of the inputs that are not contiguous (their layouts are None for
those, so the op copies them and launches what the kept path launches: equal bit for bit), for
rotary_attention the op with ``FAST = False`` (its descriptor path forced on the CPU backend by making
``attention_tma.applies`` true for bfloat16 at head dim 64, as test_torch_rotary_attention.py does). Where
a result has no general path to compare with (empty inputs) it is checked against what it must be; the
first pass over each set of inputs is also checked against float64 torch, at rtol / atol 1e-4 / 1e-5 for
float32 and 3e-2 / 3e-2 for bfloat16 (its inputs' rounded values taken exactly).

Shapes are small, not powers of two (masked tails), seeds fixed; every test starts from empty layout caches of
its own (fixture below), so layouts built under a forced setting never reach another test."""

import contextlib
import gc
import importlib
import math
import threading
import weakref

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

from tegula.torch import ops  # noqa: E402

# The modules (tegula.torch.ops re-exports functions of the same names as some of them).
_layouts = importlib.import_module("tegula.torch.ops._layouts")
_rows = importlib.import_module("tegula.torch.ops._rows")
arn = importlib.import_module("tegula.torch.ops.add_rms_norm")
sw = importlib.import_module("tegula.torch.ops.swiglu")
rn = importlib.import_module("tegula.torch.ops.rms_norm")
lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
ra = importlib.import_module("tegula.torch.ops.rotary_attention")
at = importlib.import_module("tegula.torch.ops.attention_tma")

F32, BF16 = torch.float32, torch.bfloat16
EXACT = dict(rtol=0, atol=0)
TOLERANCE = {F32: dict(rtol=1e-4, atol=1e-5), BF16: dict(rtol=3e-2, atol=3e-2)}
MODULES = (arn, rn, lce, ra, sw)


@pytest.fixture(autouse=True)
def fresh_layouts(monkeypatch):
    for module in MODULES:
        monkeypatch.setattr(module, "_FORWARD_LAYOUTS", _layouts.Layouts())
        monkeypatch.setattr(module, "_BACKWARD_LAYOUTS", _layouts.Layouts())


@pytest.fixture
def forced(monkeypatch):
    """rotary_attention's descriptor path (its kept layouts) on the CPU backend, for bfloat16 at head dim 64.
    Returns a list of ("forward" or "backward", whether the call took a kept layout), one per call."""
    monkeypatch.setattr(at, "applies", lambda q: q.dtype == torch.bfloat16 and q.shape[-1] in at.DKDV)
    taken = []
    for direction in ("forward", "backward"):
        fast = getattr(ra, f"_fast_{direction}")

        def recorded(*args, fast=fast, direction=direction):
            result = fast(*args)
            taken.append((direction, result is not None))
            return result
        monkeypatch.setattr(ra, f"_fast_{direction}", recorded)
    return taken


def _guarded() -> bool:
    return _layouts._guards_tell_strides_apart()


def _kept(layouts) -> int:
    """How many of the layouts are kept ones (not None: the general path)."""
    return sum(layout is not None for layout in layouts.values())


# --- inputs --------------------------------------------------------------------------------------------


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(shape, dtype, seed, offset=0, scale=1.0, shift=0.0):
    """Random values in a new contiguous tensor of `shape` that starts `offset` elements into its storage (offset
    1: an address that is not a multiple of 16)."""
    n = math.prod(shape)
    values = (torch.randn(n, generator=_gen(seed), dtype=torch.float64) * scale + shift).to(dtype)
    storage = torch.zeros(n + offset, dtype=dtype)
    storage[offset:] = values
    view = storage[offset:].view(shape)
    assert view.is_contiguous() and (view.data_ptr() % 16 != 0) == (offset * view.element_size() % 16 != 0)
    return view


def _targets(M, V, seed, offset=0, ignored=False, ignore_index=-100):
    """int64 targets in [0, V) (with ignored, every third one ignore_index) in a tensor that starts `offset`
    elements into its storage."""
    t = torch.randint(0, V, (M,), generator=_gen(seed))
    if ignored:
        t[::3] = ignore_index
    storage = torch.zeros(M + offset, dtype=torch.int64)
    storage[offset:] = t
    return storage[offset:]


def _transposed(t):
    """t's values in a view of t's shape whose first two dimensions lie transposed in memory (a transposed view
    made contiguous, transposed back): other strides, not contiguous."""
    view = t.transpose(0, 1).contiguous().transpose(0, 1)
    assert view.shape == t.shape and not view.is_contiguous()
    return view


def _nc(t):
    """t's values in a tensor whose last dimension has stride 2: not contiguous (unless it holds one element),
    so the ops' layouts are None and they take their general path (contiguous copies, the same launches). The
    callers pass at least one tensor of more elements (a weight) this way in each call."""
    if t is None:
        return None
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
    view = wide[..., ::2]
    view.copy_(t)
    assert not view.is_contiguous() or t.numel() <= 1
    return view


def _odd_stride(t, dim, stride):
    """t's values in a contiguous tensor whose size-1 dimension `dim` has stride `stride` (torch allows any)."""
    assert t.shape[dim] == 1
    strides = list(torch.empty(t.shape).stride())
    strides[dim] = stride
    storage = torch.zeros(t.numel(), dtype=t.dtype)
    view = storage.as_strided(t.shape, strides)
    view.copy_(t)
    assert view.is_contiguous()
    return view


def _exact(got, want):
    if isinstance(got, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _exact(g, w)
        return
    torch.testing.assert_close(got, want, **EXACT)


def _near(got, want, dtype):
    """got against a float64 reference, within dtype's tolerance."""
    torch.testing.assert_close(got.double(), want.double(), **TOLERANCE[dtype])


# --- float64 references ----------------------------------------------------------------------------------


def _norm64(h, w, eps):
    h, w = h.double(), w.double()
    return h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps) * w


def _add_rms_norm64(x, residual, weight, eps):
    h = (x.double() + residual.double()).to(x.dtype)  # h as the op stores it; y the norm of that h
    return h, _norm64(h, weight, eps)


def _norm_backward64(dh, dy, h, weight, eps):
    """(dh + d(norm(h) * w)/dh . dy, sum of dy * hhat over rows) in float64."""
    h64 = h.double().requires_grad_()
    w64 = weight.double().requires_grad_()
    dx, dw = torch.autograd.grad(_norm64(h64, w64, eps), (h64, w64), dy.double())
    return (dx if dh is None else dx + dh.double()), dw


def _lce64(x, weight, targets, ignore_index, dloss):
    """(losses, lse, dx, dweight) of linear cross-entropy in float64, dloss the losses' gradient. The logits are
    rounded to x's dtype, as the op's (and F.linear's) product gives them; the gradient passes the rounding."""
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    exact = x64 @ w64.T
    logits = exact + (exact.to(x.dtype).double() - exact).detach()
    lse = logits.logsumexp(-1)
    keep = targets != ignore_index
    picked = logits.gather(1, torch.where(keep, targets, 0)[:, None])[:, 0]
    losses = torch.where(keep, lse - picked, 0.0)
    dx, dw = torch.autograd.grad(losses, (x64, w64), dloss.double())
    return losses.detach(), lse.detach(), dx, dw


def _rotary_attention64(qkv, cos, sin, causal, scale):
    def rotate(t):
        half = t.shape[-1] // 2
        t1, t2 = t[..., :half], t[..., half:]
        c, s = cos.double()[:, None, :], sin.double()[:, None, :]
        return torch.cat([t1 * c - t2 * s, t2 * c + t1 * s], -1)
    q, k, v = qkv.double().unbind(2)
    out = torch.nn.functional.scaled_dot_product_attention(rotate(q).transpose(1, 2), rotate(k).transpose(1, 2),
                                                           v.transpose(1, 2), is_causal=causal, scale=scale)
    return out.transpose(1, 2)


# --- each op, as called and by its general path ---------------------------------------------------------


def _add_rms_norm_checked(x, residual, weight, eps, out_dtype, reference=False):
    h, y = arn.add_rms_norm_forward(x, residual, weight, eps, out_dtype)
    assert h.shape == x.shape and h.dtype == x.dtype and y.dtype == out_dtype and h.is_contiguous()
    _exact((h, y), arn.add_rms_norm_forward(_nc(x), _nc(residual), _nc(weight), eps, out_dtype))
    if reference:
        h64, y64 = _add_rms_norm64(x, residual, weight, eps)
        _exact(h, h64.to(x.dtype))
        _near(y, y64, BF16 if BF16 in (x.dtype, out_dtype) else F32)
    return h, y


def _add_rms_norm_backward_checked(dh, dy, h, weight, eps, reference=False):
    dx, dw = arn.add_rms_norm_backward(dh, dy, h, weight, eps)
    assert dx.shape == h.shape and dx.dtype == h.dtype and dw.shape == weight.shape and dw.dtype == weight.dtype
    _exact((dx, dw), arn.add_rms_norm_backward(_nc(dh), _nc(dy), _nc(h), _nc(weight), eps))
    if reference:
        dx64, dw64 = _norm_backward64(dh, dy, h, weight, eps)
        _near(dx, dx64, h.dtype)
        _near(dw, dw64, h.dtype)
    return dx, dw


def _rms_norm_checked(x, weight, eps, reference=False):
    y, rstd = rn.rms_norm_forward(x, weight, eps)
    assert y.shape == x.shape and y.dtype == x.dtype and rstd.shape == x.shape[:-1]
    _exact((y, rstd), rn.rms_norm_forward(_nc(x), _nc(weight), eps))
    if reference:
        _near(y, _norm64(x, weight, eps), x.dtype)
        _near(rstd, torch.rsqrt(x.double().square().mean(-1) + eps), F32)
    return y, rstd


def _rms_norm_backward_checked(dy, x, weight, rstd, eps, reference=False):
    dx, dw = rn.rms_norm_backward(dy, x, weight, rstd)
    assert dx.shape == x.shape and dx.dtype == x.dtype and dw.shape == weight.shape
    _exact((dx, dw), rn.rms_norm_backward(_nc(dy), _nc(x), _nc(weight), _nc(rstd)))
    if reference:
        dx64, dw64 = _norm_backward64(None, dy, x, weight, eps)
        _near(dx, dx64, x.dtype)
        _near(dw, dw64, x.dtype)
    return dx, dw


def _lce_checked(x, weight, targets, ignore_index, dloss, reference=False):
    """Forward and backward of linear_cross_entropy (the backward from the forward's lse), each against the
    general path and, with reference, float64."""
    losses, lse = lce.linear_cross_entropy_forward(x, weight, targets, ignore_index)
    assert losses.shape == lse.shape == targets.shape and losses.dtype == lse.dtype == _rows.accumulator(x)
    _exact((losses, lse), lce.linear_cross_entropy_forward(_nc(x), _nc(weight), _nc(targets), ignore_index))
    dx, dw = lce.linear_cross_entropy_backward(dloss, x, weight, targets, lse, ignore_index)
    assert dx.shape == x.shape and dx.dtype == x.dtype and dw.shape == weight.shape and dw.dtype == weight.dtype
    _exact((dx, dw), lce.linear_cross_entropy_backward(_nc(dloss), _nc(x), _nc(weight), _nc(targets), _nc(lse),
                                                       ignore_index))
    # The mean loss with its gradients (the training path): against its general path, and float64 for a
    # per-row gradient of 1 / the rows not ignored.
    loss, mean_dx, mean_dw = lce.linear_cross_entropy_with_grads(x, weight, targets, ignore_index, True, True)
    assert loss.shape == () and loss.dtype == losses.dtype and mean_dx.dtype == x.dtype and mean_dw.dtype == weight.dtype
    _exact((loss, mean_dx, mean_dw), lce.linear_cross_entropy_with_grads(_nc(x), _nc(weight), _nc(targets),
                                                                          ignore_index, True, True))
    # Either gradient alone: the same values, the other empty.
    _exact((loss, mean_dx), lce.linear_cross_entropy_with_grads(x, weight, targets, ignore_index, True, False)[:2])
    _exact((loss, mean_dw), lce.linear_cross_entropy_with_grads(_nc(x), _nc(weight), _nc(targets), ignore_index,
                                                                False, True)[::2])
    if reference:
        losses64, lse64, dx64, dw64 = _lce64(x, weight, targets, ignore_index, dloss)
        _near(losses, losses64, F32)
        _near(lse, lse64, F32)
        _near(dx, dx64, x.dtype)
        _near(dw, dw64, x.dtype)
        count = (targets != ignore_index).sum()
        _, _, mean_dx64, mean_dw64 = _lce64(x, weight, targets, ignore_index, torch.ones_like(dloss) / count)
        _near(loss, losses64.sum() / count, F32)
        _near(mean_dx, mean_dx64, x.dtype)
        _near(mean_dw, mean_dw64, x.dtype)
    return losses, lse, dx, dw


@contextlib.contextmanager
def _general_rotary():
    saved = ra.FAST
    ra.FAST = False
    try:
        yield
    finally:
        ra.FAST = saved


def _rotary_checked(qkv, cos, sin, causal, scale, dout, reference=False, saved=None, exact_backward=True):
    """rotary_attention's forward and backward as called, each equal bit for bit to the general path's (the
    backward of both from the forward outputs `saved`, default the forward's; without exact_backward within
    bfloat16's tolerance); returns (out, lse, q, k, dqkv)."""
    forward = ra.rotary_attention_forward(qkv, cos, sin, causal, scale)
    with _general_rotary():
        general = ra.rotary_attention_forward(qkv, cos, sin, causal, scale)
    _exact(forward, general)
    out, lse, q, k = forward if saved is None else saved
    dqkv = ra.rotary_attention_backward(dout, qkv, q, k, out, lse, cos, sin, causal, scale)
    assert dqkv.shape == qkv.shape and dqkv.dtype == qkv.dtype
    with _general_rotary():
        general = ra.rotary_attention_backward(dout, qkv, q, k, out, lse, cos, sin, causal, scale)
    if exact_backward:
        _exact(dqkv, general)
    else:
        torch.testing.assert_close(dqkv, general, **TOLERANCE[BF16])
    if reference:
        _near(forward[0], _rotary_attention64(qkv, cos, sin, causal, scale), qkv.dtype)
    return (*forward, dqkv)


def _rotary_kept(forced, *args, **kwargs):
    """_rotary_checked, asserting that the calls as called took kept layouts (forced: the fixture's record)."""
    forced.clear()
    result = _rotary_checked(*args, **kwargs)
    assert [taken for _, taken in forced] == [True, False, True, False]  # as called, then the general path
    return result


def _qkv(seed, B=1, T=33, H=2, D=64, dtype=BF16, offset=0, heads_room=0):
    """qkv [B, T, 3, H, D]; with heads_room, a view of one with room for more heads (other strides)."""
    full = _randn((B, T, 3, H + heads_room, D), dtype, seed, offset)
    return full[:, :, :, :H] if heads_room else full


# --- 1. one shape, other strides, dtypes, alignment and key values, interleaved ---------------------------


def _interleaved(variants, check, rounds=3):
    """check(*variant, reference) for each variant, `rounds` times in orders that differ (so the few recent
    layouts keep being displaced), the float64 reference on the first pass."""
    assert len(variants) > _layouts.Layouts.RECENT
    for r in range(rounds):
        for i in torch.randperm(len(variants), generator=_gen(100 + r)).tolist():
            check(*variants[i], reference=r == 0)


def test_add_rms_norm_forward_interleaved():
    M, N = 13, 40
    x, res, w = _randn((M, N), F32, 1), _randn((M, N), F32, 2), _randn((N,), F32, 3, shift=1.0)
    xb, resb, wb = x.to(BF16), res.to(BF16), w.to(BF16)
    variants = [
        (x, res, w, 1e-6, F32),
        (_transposed(x), res, w, 1e-6, F32),  # other strides: the general path inside the op
        (x, _transposed(res), w, 1e-6, F32),
        (x, resb, w, 1e-6, F32),  # a narrower residual
        (x, res, w, 1e-6, BF16),  # another out_dtype
        (xb, resb, wb, 1e-6, BF16),  # another dtype
        (xb, resb, wb, 1e-6, F32),
        (_randn((M, N), F32, 1, offset=1), res, w, 1e-6, F32),  # x's address not a multiple of 16
        (x, res, _randn((N,), F32, 3, offset=1, shift=1.0), 1e-6, F32),
        (x, res, w, 1e-2, F32),  # another eps
        (x, res, w, 0.5, F32),
        (x.view(1, M, N), res.view(1, M, N), w, 1e-6, F32),
    ]
    _interleaved(variants, _add_rms_norm_checked)
    assert _kept(arn._FORWARD_LAYOUTS) >= 8
    if _guarded():
        assert len(arn._FORWARD_LAYOUTS._recent) == _layouts.Layouts.RECENT


def test_add_rms_norm_backward_interleaved():
    M, N = 21, 40
    h, w = _randn((M, N), F32, 4), _randn((N,), F32, 5, shift=1.0)
    dy, dh = _randn((M, N), F32, 6), _randn((M, N), F32, 7)
    hb, wb, dyb, dhb = h.to(BF16), w.to(BF16), dy.to(BF16), dh.to(BF16)
    variants = [
        (None, dy, h, w, 1e-6),
        (dh, dy, h, w, 1e-6),  # h's gradient present: another kernel, another key
        (None, dy, h, w, 1e-2),
        (dh, dy, h, w, 0.25),
        (None, _transposed(dy), h, w, 1e-6),
        (_transposed(dh), dy, h, w, 1e-6),
        (None, dyb, hb, wb, 1e-6),
        (dhb, dyb, hb, wb, 1e-6),
        (None, dyb, h, w, 1e-6),  # a bf16 y's gradient for a float32 stream
        (None, _randn((M, N), F32, 6, offset=1), h, w, 1e-6),
        (_randn((M, N), F32, 7, offset=3), dy, h, w, 1e-6),
        (None, dy, _randn((M, N), F32, 4, offset=1), w, 1e-6),
    ]
    _interleaved(variants, _add_rms_norm_backward_checked)
    assert _kept(arn._BACKWARD_LAYOUTS) >= 8


def test_rms_norm_interleaved():
    M, N = 19, 48

    def check(x, w, eps, dy, reference):
        _, rstd = _rms_norm_checked(x, w, eps, reference)
        _rms_norm_backward_checked(dy, x, w, rstd, eps, reference)

    x, w, dy = _randn((M, N), F32, 8), _randn((N,), F32, 9, shift=1.0), _randn((M, N), F32, 10)
    variants = [
        (x, w, 1e-6, dy),
        (x, w, 1e-3, dy),
        (_transposed(x), w, 1e-6, dy),
        (x, w, 1e-6, _transposed(dy)),
        (x.to(BF16), w.to(BF16), 1e-6, dy.to(BF16)),
        (_randn((M, N), F32, 8, offset=1), w, 1e-6, dy),
        (x, _randn((N,), F32, 9, offset=1, shift=1.0), 1e-6, dy),
        (x, w, 1e-6, _randn((M, N), F32, 10, offset=2)),
        (x.view(M, 1, N), w, 1e-6, dy.view(M, 1, N)),
        (_odd_stride(x.view(M, 1, N), 1, 7), w, 1e-6, dy.view(M, 1, N)),
    ]
    _interleaved(variants, check)
    assert _kept(rn._FORWARD_LAYOUTS) >= 6 and _kept(rn._BACKWARD_LAYOUTS) >= 6


def test_linear_cross_entropy_interleaved():
    M, C, V = 37, 24, 50
    x, w = _randn((M, C), F32, 11), _randn((V, C), F32, 12, scale=0.5)
    dloss = _randn((M,), F32, 13)

    def targets(ignore_index, offset=0):
        return _targets(M, V, 14, offset, ignored=True, ignore_index=ignore_index)

    variants = [
        (x, w, targets(-100), -100, dloss),
        (x, w, targets(3), 3, dloss),  # another ignore_index, one of the classes
        (x, w, targets(0), 0, dloss),
        (_transposed(x), w, targets(-100), -100, dloss),  # other strides
        (x, _transposed(w), targets(-100), -100, dloss),
        (x, w, _nc(targets(-100)), -100, dloss),
        (x.to(BF16), w.to(BF16), targets(-100), -100, dloss),
        (_randn((M, C), F32, 11, offset=1), w, targets(-100), -100, dloss),  # misaligned x
        (x, _randn((V, C), F32, 12, offset=3, scale=0.5), targets(-100), -100, dloss),
        (x, w, targets(-100, offset=1), -100, dloss),  # misaligned targets
        (x, w, targets(-100), -100, _randn((M,), F32, 13, offset=1)),  # misaligned dloss
    ]
    # Targets that hold -100 where ignore_index is 3 are out of bounds: every call raises, whatever the caches
    # hold (the targets' values are checked at every call).
    bad = (x, w, targets(-100), 3)

    def check(x, w, t, ignore_index, dloss, reference):
        _lce_checked(x, w, t, ignore_index, dloss, reference)
        with pytest.raises(ValueError, match="out of bounds"):
            lce.linear_cross_entropy_forward(*bad)

    _interleaved(variants, check)
    assert _kept(lce._FORWARD_LAYOUTS) >= 6 and _kept(lce._BACKWARD_LAYOUTS) >= 6
    assert _kept(lce._WITH_GRADS_LAYOUTS) >= 6


def test_rotary_attention_interleaved(forced):
    T = 33  # not a multiple of any tile
    cos, sin = ops.rotary_tables(T, 64)
    qkv = _qkv(15, T=T)
    dout = _randn((1, T, 2, 64), BF16, 16)
    dout_t = _randn((1, 2, T, 64), BF16, 16).transpose(1, 2)  # other strides, still a kept layout
    variants = [
        (qkv, cos, sin, False, 0.125, dout),
        (qkv, cos, sin, True, 0.125, dout),  # causal
        (qkv, cos, sin, False, 0.1, dout),  # another scale
        (qkv, cos, sin, True, 0.2, dout_t),
        (_qkv(15, T=T, offset=8), cos, sin, False, 0.125, dout),  # another address, aligned alike
        (_qkv(15, T=T, offset=1), cos, sin, False, 0.125, dout),  # misaligned: the general path inside the op
        (_qkv(15, T=T, heads_room=1), cos, sin, True, 0.125, dout),  # other strides
        (qkv, cos, sin, False, 0.125, _randn((1, T, 2, 64), BF16, 16, offset=1)),  # misaligned dout
        (qkv.float(), cos, sin, False, 0.125, dout.float()),  # float32: not the descriptor path
    ]

    def check(qkv, cos, sin, causal, scale, dout, reference):
        forced.clear()
        _rotary_checked(qkv, cos, sin, causal, scale, dout, reference)
        # Kept layouts only where descriptors may describe the tensors: 16-byte aligned addresses (on a GPU a
        # layout of an aligned call taken for a misaligned one would make descriptors the TMA refuses; on the
        # CPU the values would not tell). The general path's calls (FAST False) take none.
        forward = qkv.dtype == BF16 and qkv.data_ptr() % 16 == 0
        backward = forward and dout.data_ptr() % 16 == 0
        assert forced == [("forward", forward), ("forward", False), ("backward", backward), ("backward", False)]

    _interleaved(variants, check, rounds=2)
    assert _kept(ra._FORWARD_LAYOUTS) >= 4 and _kept(ra._BACKWARD_LAYOUTS) >= 4


# --- 2. a tensor passed twice in one call ------------------------------------------------------------------


def test_silu_and_mul_interleaved():
    # Contiguous x (kept layouts) against strided copies of the same values (the general path), across dtypes,
    # alignments and shapes, interleaved; a dy passed as x's own storage too.
    variants = []
    for i, (shape, dtype) in enumerate([((7, 2 * 45), F32), ((7, 2 * 45), BF16), ((3, 5, 2 * 33), F32),
                                        ((7, 2 * 45), F32), ((1, 2 * 300), BF16), ((9, 2 * 17), F32)]):
        x = _randn(shape, dtype, 300 + i, offset=i % 2)
        dy = _randn((*shape[:-1], shape[-1] // 2), dtype, 310 + i)
        variants.append((x, dy))
    order = [0, 1, 2, 3, 4, 5, 3, 0, 5, 1, 4, 2, 0, 0]
    for k in order:
        x, dy = variants[k]
        y = sw.silu_and_mul_forward(x)
        _exact(y, sw.silu_and_mul_forward(_nc(x)))
        dx = sw.silu_and_mul_backward(dy, x)
        _exact(dx, sw.silu_and_mul_backward(_nc(dy), _nc(x)))
        if k == 0:
            a, b = x.double().chunk(2, dim=-1)
            torch.testing.assert_close(y.double(), torch.nn.functional.silu(a) * b, **TOLERANCE[x.dtype])
    assert _kept(sw._FORWARD_LAYOUTS) and _kept(sw._BACKWARD_LAYOUTS)


def test_tensor_passed_twice():
    M, N = 17, 40
    x, other, w = _randn((M, N), F32, 20), _randn((M, N), F32, 21), _randn((N,), F32, 22, shift=1.0)
    h, y = arn.add_rms_norm_forward(x, other, w, 1e-6, F32)
    for _ in range(3):  # alternately with distinct tensors of the same metadata (a guarded layout) and the same one
        _add_rms_norm_checked(x, other, w, 1e-6, F32)
        h2, _ = _add_rms_norm_checked(x, x, w, 1e-6, F32, reference=True)  # residual is x
        _exact(h2, 2 * x)
        _add_rms_norm_backward_checked(other, y, h, w, 1e-6)
        _add_rms_norm_backward_checked(y, y, h, w, 1e-6, reference=True)  # dh is dy
        _add_rms_norm_backward_checked(None, h, h, w, 1e-6, reference=True)  # dy is h
        _, rstd = _rms_norm_checked(x, w, 1e-6)
        _rms_norm_backward_checked(other, x, w, rstd, 1e-6)
        _rms_norm_backward_checked(x, x, w, rstd, 1e-6, reference=True)  # dy is x
    V = M
    targets = _targets(M, V, 23)
    for _ in range(3):
        _lce_checked(x, other, targets, -100, _randn((M,), F32, 24))
        losses, lse, _, _ = _lce_checked(x, x, targets, -100, _randn((M,), F32, 24), reference=True)  # weight is x
        # dloss is lse, and weight is x
        dx, dw = lce.linear_cross_entropy_backward(lse, x, x, targets, lse, -100)
        _exact((dx, dw), lce.linear_cross_entropy_backward(_nc(lse), _nc(x), _nc(x), _nc(targets), _nc(lse), -100))
        _, _, dx64, dw64 = _lce64(x, x.detach().clone(), targets, -100, lse)
        _near(dx, dx64, F32)
        _near(dw, dw64, F32)


def test_rotary_attention_tensor_passed_twice(forced):
    T = 33
    cos, sin = ops.rotary_tables(T, 64)
    qkv, dout = _qkv(25, T=T), _randn((1, T, 2, 64), BF16, 26)
    out, lse, q, k, _ = _rotary_checked(qkv, cos, sin, True, 0.125, dout)
    for _ in range(3):
        _rotary_checked(qkv, cos, sin, True, 0.125, dout, saved=(out, lse, q, k))
        _rotary_checked(qkv, cos, sin, True, 0.125, out, saved=(out, lse, q, k))  # dout is out
        _rotary_checked(qkv, cos, sin, True, 0.125, dout, saved=(out, lse, q, q))  # k is q
    # Every call as called took a kept layout (found by its key where the guards refuse the tensors), every
    # general one none.
    assert [taken for _, taken in forced] == [True, False] * 20


# --- 3. inputs changed in place between calls -----------------------------------------------------------


def _changes(before, after):
    assert not torch.equal(before, after), "the in-place change should have changed the result"


def test_inputs_changed_in_place():
    M, N = 23, 40
    x, res, w = _randn((M, N), F32, 30), _randn((M, N), F32, 31), _randn((N,), F32, 32, shift=1.0)
    dy = _randn((M, N), F32, 33)
    first = _add_rms_norm_checked(x, res, w, 1e-6, F32)
    x.mul_(3.0).add_(0.5)
    res[5:9] = 0.0
    w.neg_()
    h, y = _add_rms_norm_checked(x, res, w, 1e-6, F32, reference=True)
    _changes(first[1], y)
    grads = _add_rms_norm_backward_checked(None, dy, h, w, 1e-6)
    dy.mul_(-2.0)
    h.add_(1.0)
    _changes(grads[1], _add_rms_norm_backward_checked(None, dy, h, w, 1e-6, reference=True)[1])

    y0, rstd = _rms_norm_checked(x, w, 1e-6)
    x[3].mul_(100.0)
    y1, rstd = _rms_norm_checked(x, w, 1e-6, reference=True)
    _changes(y0, y1)
    dx0, _ = _rms_norm_backward_checked(dy, x, w, rstd, 1e-6)
    dy.add_(1.0)
    _changes(dx0, _rms_norm_backward_checked(dy, x, w, rstd, 1e-6, reference=True)[0])

    C, V = 24, 50
    x, weight, dloss = _randn((M, C), F32, 34), _randn((V, C), F32, 35, scale=0.5), _randn((M,), F32, 36)
    targets = _targets(M, V, 37)
    losses0, *_ = _lce_checked(x, weight, targets, -100, dloss)
    targets[::4] = -100  # ignored rows: no loss, no gradient
    losses1, _, dx1, _ = _lce_checked(x, weight, targets, -100, dloss, reference=True)
    _changes(losses0, losses1)
    assert not losses1[::4].any() and not dx1[::4].any()
    weight.mul_(2.0)
    dloss.neg_()
    _changes(dx1, _lce_checked(x, weight, targets, -100, dloss, reference=True)[2])
    targets[1] = V  # out of bounds: the kept path checks the values at every call
    for _ in range(2):
        with pytest.raises(ValueError, match="out of bounds"):
            lce.linear_cross_entropy_forward(x, weight, targets, -100)
    targets[1] = V - 1
    _lce_checked(x, weight, targets, -100, dloss, reference=True)


def test_rotary_attention_inputs_changed_in_place(forced):
    T = 33
    cos, sin = ops.rotary_tables(T, 64)
    qkv, dout = _qkv(38, T=T), _randn((1, T, 2, 64), BF16, 39)
    first = _rotary_checked(qkv, cos, sin, False, 0.125, dout)
    qkv[:, 5:20].mul_(-2.0)
    second = _rotary_checked(qkv, cos, sin, False, 0.125, dout, reference=True)
    _changes(first[0], second[0])
    dout.mul_(3.0)
    _changes(second[4], _rotary_checked(qkv, cos, sin, False, 0.125, dout)[4])
    assert [taken for _, taken in forced] == [True, False] * 6  # kept layouts as called, the general path not


# --- 4. requires_grad flipping between calls ------------------------------------------------------------


def _flip(t, requires_grad):
    return t.detach().clone().requires_grad_(requires_grad)


def test_requires_grad_flipping():
    M, N, C, V = 15, 40, 24, 50
    x, res, w = _randn((M, N), F32, 40), _randn((M, N), F32, 41), _randn((N,), F32, 42, shift=1.0)
    upstream = _randn((M, N), F32, 43)
    xl, wl = _randn((M, C), F32, 44), _randn((V, C), F32, 45, scale=0.5)
    targets, dloss = _targets(M, V, 46, ignored=True), _randn((M,), F32, 47)
    general_norm = arn.add_rms_norm_forward(_nc(x), _nc(res), _nc(w), 1e-6, F32)
    general_rms = rn.rms_norm_forward(_nc(x), _nc(w), 1e-6)
    general_lce = lce.linear_cross_entropy_forward(_nc(xl), _nc(wl), _nc(targets), -100)
    # The gradients, by the general path (inputs that are not contiguous, with requires_grad) through autograd.
    nx, nres, nw = (_nc(t).requires_grad_() for t in (x, res, w))
    h, y = torch.ops.tegula.add_rms_norm.default(nx, nres, nw, 1e-6, F32)
    want_norm = torch.autograd.grad((h * upstream).sum() + (y * upstream).sum(), (nx, nres, nw))
    nx, nw = _nc(x).requires_grad_(), _nc(w).requires_grad_()
    want_rms = torch.autograd.grad((torch.ops.tegula.rms_norm.default(nx, nw, 1e-6)[0] * upstream).sum(), (nx, nw))
    nxl, nwl = _nc(xl).requires_grad_(), _nc(wl).requires_grad_()
    want_lce = torch.autograd.grad(
        (torch.ops.tegula.linear_cross_entropy.default(nxl, nwl, targets, -100)[0] * dloss).sum(), (nxl, nwl))
    for i in range(6):
        flags = [(i + j) % 2 == 0 for j in range(3)]  # which inputs require grad, changing at every call
        a, b, c = (_flip(t, f) for t, f in zip((x, res, w), flags))
        outputs = torch.ops.tegula.add_rms_norm.default(a, b, c, 1e-6, F32)
        _exact(outputs, general_norm)
        if any(flags):
            got = torch.autograd.grad((outputs[0] * upstream).sum() + (outputs[1] * upstream).sum(),
                                      [t for t in (a, b, c) if t.requires_grad])
            _exact(got, [g for g, f in zip(want_norm, flags) if f])
        a, c = _flip(x, flags[0]), _flip(w, flags[1])
        outputs = torch.ops.tegula.rms_norm.default(a, c, 1e-6)
        _exact(outputs, general_rms)
        if any(flags[:2]):
            got = torch.autograd.grad((outputs[0] * upstream).sum(), [t for t in (a, c) if t.requires_grad])
            _exact(got, [g for g, f in zip(want_rms, flags[:2]) if f])
        a, c = _flip(xl, flags[0]), _flip(wl, flags[1])
        outputs = torch.ops.tegula.linear_cross_entropy.default(a, c, targets, -100)
        _exact(outputs, general_lce)
        if any(flags[:2]):
            got = torch.autograd.grad((outputs[0] * dloss).sum(), [t for t in (a, c) if t.requires_grad])
            _exact(got, [g for g, f in zip(want_lce, flags[:2]) if f])
        # The backward ops called directly, on inputs that require grad or not.
        dx_dw = torch.ops.tegula.add_rms_norm_backward.default(None, _flip(upstream, flags[2]), _flip(x, flags[0]),
                                                               _flip(w, flags[1]), 1e-6)
        _exact(dx_dw, arn.add_rms_norm_backward(None, _nc(upstream), _nc(x), _nc(w), 1e-6))


def test_rotary_attention_requires_grad_flipping(forced):
    T = 33
    cos, sin = ops.rotary_tables(T, 64)
    qkv, upstream = _qkv(48, T=T), _randn((1, T, 2, 64), BF16, 49)
    with _general_rotary():
        general = ra.rotary_attention_forward(qkv, cos, sin, True, 0.125)
        twin = _flip(qkv, True)
        want = torch.autograd.grad((ops.rotary_attention(twin, cos, sin, True, 0.125) * upstream).sum(), twin)
    forced.clear()
    for i in range(4):
        leaf = _flip(qkv, i % 2 == 0)
        outputs = torch.ops.tegula.rotary_attention.default(leaf, cos, sin, True, 0.125)
        _exact(outputs, general)
        if leaf.requires_grad:
            _exact(torch.autograd.grad((outputs[0] * upstream).sum(), leaf), want)
    assert forced == [("forward", True), ("backward", True), ("forward", True)] * 2  # kept layouts, every call


# --- 5. empty inputs, size-1 dimensions of any stride ------------------------------------------------------


def test_empty_inputs_after_kept_layouts():
    N, C, V = 40, 24, 50
    w, wl = _randn((N,), F32, 50, shift=1.0), _randn((V, C), F32, 51)
    for shape in [(9, N), (0, N), (3, 0, N), (9, N), (0, 1, N)]:
        x, res, dy = _randn(shape, F32, 52), _randn(shape, F32, 53), _randn(shape, F32, 54)
        if not x.numel():
            h, y = arn.add_rms_norm_forward(x, res, w, 1e-6, BF16)
            assert h.shape == y.shape == shape and h.dtype == F32 and y.dtype == BF16
            for dh in (None, dy):
                dx, dw = arn.add_rms_norm_backward(dh, dy, h, w, 1e-6)
                assert dx.shape == shape and dw.shape == (N,)
                _exact(dw, torch.zeros(N))
            y, rstd = rn.rms_norm_forward(x, w, 1e-6)
            assert y.shape == shape and rstd.shape == shape[:-1]
            dx, dw = rn.rms_norm_backward(dy, x, w, rstd)
            assert dx.shape == shape
            _exact(dw, torch.zeros(N))
            continue
        h, _ = _add_rms_norm_checked(x, res, w, 1e-6, BF16, reference=True)
        _add_rms_norm_backward_checked(dy, dy, h, w, 1e-6)
        _, rstd = _rms_norm_checked(x, w, 1e-6)
        _rms_norm_backward_checked(dy, x, w, rstd, 1e-6)
    for M in (11, 0, 11, 0):
        xl, targets, dloss = _randn((M, C), F32, 55), _targets(M, V, 56), _randn((M,), F32, 57)
        if M:
            _lce_checked(xl, wl, targets, -100, dloss, reference=True)
            continue
        losses, lse = lce.linear_cross_entropy_forward(xl, wl, targets, -100)
        assert losses.shape == lse.shape == (0,)
        dx, dw = lce.linear_cross_entropy_backward(dloss, xl, wl, targets, lse, -100)
        assert dx.shape == (0, C)
        _exact(dw, torch.zeros(V, C))


def test_rows_of_no_elements_give_a_defined_rstd():
    # A [M, 0] input runs no program; rstd (an output of the op) is NaN, the mean of no squares (0 / 0, as torch's
    # mean gives), never whatever the allocation held: after kept calls and without.
    for x in (torch.ones(5, 40), torch.empty(5, 0), torch.ones(5, 40), torch.empty(5, 0), torch.empty(2, 3, 0)):
        w = torch.ones(x.shape[-1])
        y, rstd = rn.rms_norm_forward(x, w, 1e-6)
        assert y.shape == x.shape and rstd.shape == x.shape[:-1]
        if not x.shape[-1]:
            assert torch.isnan(rstd).all()
            assert torch.isnan(x.square().mean(-1)).all()  # what torch says of such rows


def test_size_one_dimensions_of_any_stride():
    N, C, V = 40, 24, 50
    w = _randn((N,), F32, 60, shift=1.0)
    x, res, dy = _randn((7, 1, N), F32, 61), _randn((7, 1, N), F32, 62), _randn((7, 1, N), F32, 63)
    for stride in (1, 7, 4096, 0):
        xs, ress, dys = _odd_stride(x, 1, stride), _odd_stride(res, 1, stride + 3), _odd_stride(dy, 1, stride)
        for a, b, c in ((x, res, dy), (xs, ress, dys), (xs, res, dy), (x, ress, dys)):
            h, _ = _add_rms_norm_checked(a, b, w, 1e-6, F32, reference=True)
            _add_rms_norm_backward_checked(None, c, h, w, 1e-6, reference=True)
            _add_rms_norm_backward_checked(c, c, _odd_stride(h, 1, stride + 5), w, 1e-6)
            _, rstd = _rms_norm_checked(a, w, 1e-6, reference=True)
            _rms_norm_backward_checked(c, a, w, rstd, 1e-6, reference=True)
    one = _randn((1, N), F32, 64)  # one row: its row stride is free
    for stride in (N, 1, 12345, 3):
        row = _odd_stride(one, 0, stride)
        h, _ = _add_rms_norm_checked(row, row, w, 1e-6, F32, reference=True)
        _, rstd = _rms_norm_checked(row, w, 1e-6, reference=True)
        _rms_norm_backward_checked(row, row, w, _odd_stride(rstd, 0, stride), 1e-6)
    xl, wl, targets = _randn((1, C), F32, 65), _randn((V, C), F32, 66), _targets(1, V, 67)
    for stride in (C, 5, 999):
        xs = _odd_stride(xl, 0, stride)
        _lce_checked(xs, wl, targets, -100, _randn((1,), F32, 68), reference=True)
        _lce_checked(xl, _odd_stride(wl[:1], 0, stride), targets.clamp(max=0), -100, _randn((1,), F32, 68))


def test_rotary_attention_size_one_dimensions_of_any_stride(forced):
    T, D = 33, 64
    cos, sin = ops.rotary_tables(T, D)
    dout = _randn((1, T, 2, D), BF16, 70)
    qkv = _qkv(71, T=T)
    for stride in (qkv.stride(0), 8, 123456, 0):  # B = 1: its stride is free
        _rotary_kept(forced, _odd_stride(qkv, 0, stride), cos, sin, True, 0.125, dout, reference=True)
        _rotary_kept(forced, qkv, cos, sin, True, 0.125, _odd_stride(dout, 0, stride))
    qkv1, dout1 = _qkv(72, T=T, H=1), _randn((1, T, 1, D), BF16, 73)
    for stride in (D, 8, 999):  # H = 1
        _rotary_kept(forced, _odd_stride(qkv1, 3, stride), cos, sin, False, 0.125, dout1, reference=True)
    empty = _qkv(74, B=0, T=T)
    for _ in range(2):  # no rows, after kept layouts and before them again: the general path, empty outputs
        forced.clear()
        out, lse, q, k = ra.rotary_attention_forward(empty, cos, sin, False, 0.125)
        assert out.shape == q.shape == k.shape == (0, T, 2, D) and lse.shape == (0, 2, T)
        dqkv = ra.rotary_attention_backward(out, empty, q, k, out, lse, cos, sin, False, 0.125)
        assert dqkv.shape == empty.shape
        assert forced == [("forward", False), ("backward", False)]
        _rotary_kept(forced, qkv, cos, sin, False, 0.125, dout)


# --- 6. more shapes than Layouts.LIMIT ---------------------------------------------------------------------


def test_more_shapes_than_the_limit():
    N = 12
    limit = _layouts.Layouts.LIMIT
    w = _randn((N,), F32, 80, shift=1.0)
    x_all, dy_all = _randn((limit + 8, N), F32, 81), _randn((limit + 8, N), F32, 82)
    for M in list(range(1, limit + 9)) + [1, 2, limit + 8]:
        x, dy = x_all[:M], dy_all[:M]
        _, rstd = _rms_norm_checked(x, w, 1e-6, reference=M in (1, limit + 8))
        _rms_norm_backward_checked(dy, x, w, rstd, 1e-6)
        assert len(rn._FORWARD_LAYOUTS) <= limit and len(rn._BACKWARD_LAYOUTS) <= limit
    x, res = x_all[:5], dy_all[:5]
    for i in range(limit + 20):  # as many eps values
        _add_rms_norm_checked(x, res, w, 1e-6 * (i + 1), F32, reference=i in (0, limit + 19))
        assert len(arn._FORWARD_LAYOUTS) <= limit
    _add_rms_norm_checked(x, res, w, 1e-6, F32, reference=True)


# --- 7. tables in the key changed between calls -------------------------------------------------------------


def _norm_backwards(seed):
    M, N = 150, 40  # enough rows for MAX_PROGRAMS to split them otherwise
    h, w, dy = _randn((M, N), F32, seed), _randn((N,), F32, seed + 1, shift=1.0), _randn((M, N), F32, seed + 2)
    _, rstd = rn.rms_norm_forward(h, w, 1e-6)

    def run():
        """add_rms_norm's and rms_norm's backward as called (kept), each checked against the general path."""
        return (*_add_rms_norm_backward_checked(None, dy, h, w, 1e-6),
                *_rms_norm_backward_checked(dy, h, w, rstd, 1e-6))
    return run


@pytest.mark.parametrize("change", ["load_ahead_dict", "load_ahead_entry", "max_programs", "programs_per_sm",
                                    "tile_elements"])
def test_rows_tables_changed_between_calls(change):
    run = _norm_backwards(90)
    M, C, V = 70, 24, 100
    x, w, targets, dloss = (_randn((M, C), F32, 93), _randn((V, C), F32, 94, scale=0.5), _targets(M, V, 95),
                            _randn((M,), F32, 96))
    before = run(), _lce_checked(x, w, targets, -100, dloss)
    kept = _kept(arn._BACKWARD_LAYOUTS), _kept(rn._BACKWARD_LAYOUTS), _kept(lce._BACKWARD_LAYOUTS)
    with pytest.MonkeyPatch.context() as mp:  # its own: undoing the fixtures' would restore the modules' caches
        if change == "load_ahead_dict":
            mp.setattr(_rows, "LOAD_AHEAD", {"cuda": True, "cpu": True})  # replaced
        elif change == "load_ahead_entry":
            mp.setitem(_rows.LOAD_AHEAD, "cpu", True)  # changed in place
        elif change == "max_programs":
            mp.setattr(_rows, "MAX_PROGRAMS", 3)
        elif change == "programs_per_sm":
            mp.setattr(_rows, "PROGRAMS_PER_SM", 5)  # a GPU's: the CPU's split stays, the key changes
        else:
            mp.setattr(_rows, "TILE_ELEMENTS", 64)  # one row a step
        for _ in range(2):  # kept layouts of the new setting, each equal to the general path under it
            after = run(), _lce_checked(x, w, targets, -100, dloss, reference=True)
        # A new key each for the row ops: none of the layouts kept before was taken. linear_cross_entropy's
        # layouts do not read the tables (its chunks do), so its key stays.
        assert (_kept(arn._BACKWARD_LAYOUTS), _kept(rn._BACKWARD_LAYOUTS), _kept(lce._BACKWARD_LAYOUTS)) == \
            (kept[0] + 1, kept[1] + 1, kept[2])
    if change == "max_programs":  # fewer programs: the partial gradients are summed in another order
        assert not torch.equal(before[0][1], after[0][1]) or not torch.equal(before[0][3], after[0][3])
    _exact(run(), before[0])  # back to the first setting: its layouts again
    _exact(_lce_checked(x, w, targets, -100, dloss), before[1])


def test_linear_cross_entropy_chunk_size_changed_between_calls():
    M, C, V = 70, 40, 100
    x, w, targets, dloss = (_randn((M, C), F32, 97), _randn((V, C), F32, 98, scale=0.5),
                            _targets(M, V, 99, ignored=True), _randn((M,), F32, 100))
    before = _lce_checked(x, w, targets, -100, dloss, reference=True)
    with pytest.MonkeyPatch.context() as mp:
        # Chunks of 16 columns instead of one of 100: a new key, and dx summed over seven chunks.
        mp.setattr(lce, "MIN_CHUNK_COLUMNS", 16)
        mp.setattr(lce, "LOGITS_CHUNK_BYTES", 1)
        after = _lce_checked(x, w, targets, -100, dloss, reference=True)
        assert len(lce._chunks(x, w)[0]) == 7
        assert not all(torch.equal(a, b) for a, b in zip(before, after))  # other chunks: other sums
    _exact(_lce_checked(x, w, targets, -100, dloss), before)


def _recording(mp):
    """Records the constexprs of each launch of the descriptor attention (forward, dQ, dK/dV), in order."""
    launches = []
    run_forward, run_backward = at.run_forward, at.run_backward

    def forward(launch, *args):
        launches.append(("fwd", launch[2]))
        return run_forward(launch, *args)

    def backward(launch_pair, *args, **kwargs):
        launches.extend((("dq", launch_pair[0][2]), ("dkdv", launch_pair[1][2])))
        return run_backward(launch_pair, *args, **kwargs)

    mp.setattr(at, "run_forward", forward)
    mp.setattr(at, "run_backward", backward)
    return launches


def _tiles(constexprs):
    return constexprs["BLOCK_M"], constexprs["BLOCK_N"]


@pytest.mark.parametrize("change", ["dq", "dkdv", "fwd_short", "fused"])
def test_attention_tables_changed_between_calls(change, forced):
    T = 33
    cos, sin = ops.rotary_tables(T, 64)
    qkv, dout = _qkv(101, T=T), _randn((1, T, 2, 64), BF16, 102)
    before = _rotary_checked(qkv, cos, sin, True, 0.125, dout)
    with pytest.MonkeyPatch.context() as mp:
        if change == "dq":
            mp.setitem(at.DQ, 64, (64, 32, 4, 2))
        elif change == "dkdv":
            mp.setitem(at.DKDV, 64, (32, 64, 4, 2))  # and no AHEAD
        elif change == "fwd_short":
            mp.setitem(at.FWD_SHORT, 64, {False: (64, 32, 4, 2), True: (32, 32, 4, 2)})
        else:  # the one-kernel backward (dQ by atomics: compared within bf16's rounding), the general path
            mp.setitem(at.FUSED, 64, (64, 64, 4, 2, False))
        launches = _recording(mp)
        want = {"fwd": at.forward_tiles(T, 64, True)[:2], "dq": at.tiles_for(at.DQ[64], True)[:2],
                "dkdv": at.tiles_for(at.DKDV[64], True)[:2]}
        for _ in range(2):
            launches.clear()
            _rotary_checked(qkv, cos, sin, True, 0.125, dout, reference=True, exact_backward=change != "fused")
            # The kept path's forward, then the general path's, then each one's dQ and dK/dV launches.
            if change == "fused":  # no two-kernel backward, kept or not
                assert [name for name, _ in launches] == ["fwd", "fwd"]
            else:
                assert [name for name, _ in launches] == ["fwd", "fwd", "dq", "dkdv", "dq", "dkdv"]
                assert launches[4:] == launches[2:4]
                assert launches[3][1]["AHEAD"] == (*at.tiles_for(at.DKDV[64], True), False)[4]
            assert launches[0] == launches[1]
            assert all(_tiles(constexprs) == want[name] for name, constexprs in launches)
    if change == "fused":
        assert len(ra._BACKWARD_LAYOUTS) == 1  # the one built before, not asked since
    else:
        assert len(ra._FORWARD_LAYOUTS) + len(ra._BACKWARD_LAYOUTS) == 3
    _exact(_rotary_checked(qkv, cos, sin, True, 0.125, dout), before)


# --- others ---------------------------------------------------------------------------------------------------


def test_eps_checked_whatever_the_cache_holds():
    # True == 1 and hash(True) == hash(1): a key of eps=1 must not let eps=True (which the ops refuse) through.
    x, res, w = _randn((5, 24), F32, 110), _randn((5, 24), F32, 111), _randn((24,), F32, 112)
    for _ in range(2):
        _add_rms_norm_checked(x, res, w, 1, F32)
        _rms_norm_checked(x, w, 1)
        with pytest.raises(ValueError, match="eps"):
            arn.add_rms_norm_forward(x, res, w, True, F32)
        with pytest.raises(ValueError, match="eps"):
            rn.rms_norm_forward(x, w, True)


def test_linear_cross_entropy_backward_of_inputs_that_are_not_contiguous():
    # The backward's layout must be refused (the general path) for x, weight or targets that are not contiguous,
    # as the forward's is: the kernels read them as contiguous rows. Through autograd too, where the forward saved
    # a transposed x and the losses' gradient is contiguous (weighted rows).
    M, C, V = 37, 24, 50
    x, w, targets = _randn((M, C), F32, 113), _randn((V, C), F32, 114, scale=0.5), _targets(M, V, 115)
    dloss = _randn((M,), F32, 116)
    for xs, ws, ts in ((_transposed(x), w, targets), (x, _transposed(w), targets), (x, w, _nc(targets)),
                       (x[:, :C - 3], w[:, :C - 3], targets)):
        for _ in range(2):
            lse = lce.linear_cross_entropy_forward(xs, ws, ts, -100)[1]
            dx, dw = lce.linear_cross_entropy_backward(dloss, xs, ws, ts, lse, -100)
            _, _, dx64, dw64 = _lce64(xs, ws, ts, -100, dloss)
            _near(dx, dx64, F32)
            _near(dw, dw64, F32)
            _exact((dx, dw), lce.linear_cross_entropy_backward(dloss, xs.contiguous(), ws.contiguous(),
                                                               ts.contiguous(), lse, -100))
    leaf = x.t().contiguous().requires_grad_()  # [C, M]: its transpose is the [M, C] x, not contiguous
    per_row = lce.linear_cross_entropy_forward(leaf.t(), w, targets, -100)[0]
    (grad,) = torch.autograd.grad((per_row * dloss).sum(), leaf)
    _, _, dx64, _ = _lce64(x, w, targets, -100, dloss)
    _near(grad.t(), dx64, F32)


def test_caches_keep_no_input_alive():
    M, N = 9, 40
    refs = []
    for seed in range(3):
        x, res, w = _randn((M, N), F32, 120 + seed), _randn((M, N), F32, 121), _randn((N,), F32, 122)
        h, y = arn.add_rms_norm_forward(x, res, w, 1e-6, F32)
        arn.add_rms_norm_backward(None, y, h, w, 1e-6)
        _, rstd = rn.rms_norm_forward(x, w, 1e-6)
        rn.rms_norm_backward(y, x, w, rstd)
        refs += [weakref.ref(t) for t in (x, res, w, h, y, rstd)]
        del x, res, w, h, y, rstd
    gc.collect()
    assert _kept(arn._FORWARD_LAYOUTS) and _kept(rn._BACKWARD_LAYOUTS)
    assert all(ref() is None for ref in refs)


def test_threads_share_the_caches():
    # Threads calling one op with other shapes and dtypes at once: the recent list and the dict change under
    # each other; every result must still be its own inputs'.
    N = 40
    cases = []
    for i, (M, dtype) in enumerate([(5, F32), (6, F32), (5, BF16), (7, F32), (9, BF16), (5, F32)]):
        x = _randn((M, N), dtype, 130 + i, offset=i % 2)
        w = _randn((N,), dtype, 140 + i, shift=1.0)
        eps = 1e-6 if i != 5 else 1e-2
        cases.append((x, w, eps, rn.rms_norm_forward(_nc(x), _nc(w), eps)))
    failures = []

    def work(case):
        x, w, eps, want = case
        try:
            for _ in range(40):
                _exact(rn.rms_norm_forward(x, w, eps), want)
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=work, args=(case,)) for case in cases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]
