"""tegula.torch.ops against torch's own implementations: forward values and
gradients on random data, hidden sizes that are not powers of two (masked
tails), float64 gradients against finite differences (gradcheck), and
torch.library.opcheck of each op's registration (schema, fake
implementation, autograd). CPU tensors run the kernels on the CPU backend;
where a CUDA GPU is there (make gpu-check), the comparisons with torch run on
it too.

Tolerances per dtype: float64 is checked by gradcheck (its own finite-
difference tolerances) and against torch at 1e-10; float32 at rtol 1e-5 /
atol 1e-5 for values and 1e-4 / 1e-5 for gradients (sums over rows and
reductions in another order than torch's); bfloat16 against the float32
reference of the same (rounded) inputs at 2e-2 / 2e-2 for values and
3e-2 / 3e-2 for gradients (one bfloat16 rounding of each output, about 4e-3
relative, plus the rounding of the upstream gradient)."""

import importlib
import re

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")
F = torch.nn.functional

from tegula import _device  # noqa: E402
from tegula.torch import ops  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and _device.is_available() else [])

TOLERANCES = {torch.float64: dict(value=(1e-10, 1e-10), grad=(1e-10, 1e-10)),
              torch.float32: dict(value=(1e-5, 1e-5), grad=(1e-4, 1e-5)),
              torch.bfloat16: dict(value=(2e-2, 2e-2), grad=(3e-2, 3e-2))}


def _randn(*shape, dtype, gen, scale=1.0, shift=0.0, device="cpu"):
    values = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + shift
    return values.to(device=device, dtype=dtype).requires_grad_()


def _check_against(reference, op, inputs, dtype, gen, tolerances=None):
    """op(*inputs) and its gradients for a random upstream gradient equal
    reference's, computed in float32 for bfloat16 inputs (from the same
    rounded values) and in the inputs' dtype otherwise."""
    reference_dtype = torch.float32 if dtype == torch.bfloat16 else dtype

    def leaves(tensors, to):
        return [t.detach().to(to).requires_grad_(t.requires_grad) for t in tensors]

    got_inputs, want_inputs = leaves(inputs, dtype), leaves(inputs, reference_dtype)
    got, want = op(*got_inputs), reference(*want_inputs)
    tolerances = tolerances or TOLERANCES[dtype]
    rtol, atol = tolerances["value"]
    torch.testing.assert_close(got.to(reference_dtype), want, rtol=rtol, atol=atol)
    upstream = torch.randn(got.shape, generator=gen, dtype=torch.float64).to(device=got.device, dtype=dtype)
    got_grads = torch.autograd.grad(got, [t for t in got_inputs if t.requires_grad], upstream)
    want_grads = torch.autograd.grad(want, [t for t in want_inputs if t.requires_grad], upstream.to(reference_dtype))
    rtol, atol = tolerances["grad"]
    for g, w in zip(got_grads, want_grads):
        assert g.dtype == dtype
        torch.testing.assert_close(g.to(reference_dtype), w, rtol=rtol, atol=atol)


# --- references, eager torch ----------------------------------------------------------------------


def rms_norm_reference(x, w, eps=1e-6):
    return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * w


def layer_norm_reference(x, w, b, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], w, b, eps)


def swiglu_reference(a, b):
    return F.silu(a) * b


def rotary_reference(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


# --- float32 and float64 against the references -----------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.bfloat16]
DTYPE_IDS = ["float32", "float64", "bfloat16"]
HIDDEN = [37, 200]  # not powers of two: the last tile of each row is masked


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", HIDDEN)
def test_rms_norm_matches_torch(device, dtype, n):
    gen = torch.Generator().manual_seed(n)
    # 69 rows: each of the backward's programs gets 2 (the last one 1).
    x = _randn(3, 23, n, dtype=dtype, gen=gen, scale=2, shift=0.5, device=device)
    w = _randn(n, dtype=dtype, gen=gen, shift=1, device=device)
    _check_against(rms_norm_reference, ops.rms_norm, (x, w), dtype, gen)


@pytest.mark.parametrize("ahead", [False, True], ids=["in_step", "ahead"])
@pytest.mark.parametrize("norm", ["rms_norm", "layer_norm"])
def test_norm_backward_steps_with_partial_last_step(monkeypatch, ahead, norm):
    # 1001 rows of 200: 63 programs of 16 rows in steps of 8, the last program 9 rows (its second
    # step one row). "ahead": the loop that loads each step's tiles during the step before, the
    # GPU's (_rows.LOAD_AHEAD), run on the CPU backend.
    from tegula.torch.ops import _rows
    monkeypatch.setattr(_rows, "LOAD_AHEAD", {"cuda": True, "cpu": ahead})
    gen = torch.Generator().manual_seed(1001)
    inputs = (_randn(7, 143, 200, dtype=torch.float32, gen=gen, scale=2, shift=0.5),
              _randn(200, dtype=torch.float32, gen=gen, shift=1))
    if norm == "rms_norm":
        _check_against(rms_norm_reference, ops.rms_norm, inputs, torch.float32, gen)
    else:
        inputs += (_randn(200, dtype=torch.float32, gen=gen),)
        _check_against(layer_norm_reference, ops.layer_norm, inputs, torch.float32, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", HIDDEN)
def test_layer_norm_matches_torch(device, dtype, n):
    gen = torch.Generator().manual_seed(n + 1)
    x = _randn(69, n, dtype=dtype, gen=gen, scale=2, shift=1, device=device)
    w = _randn(n, dtype=dtype, gen=gen, shift=1, device=device)
    b = _randn(n, dtype=dtype, gen=gen, device=device)
    _check_against(layer_norm_reference, ops.layer_norm, (x, w, b), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(5, 37), (11, 1000)])  # masked tails of the 8 x 256 tiles in both dims
def test_swiglu_matches_torch(device, dtype, shape):
    gen = torch.Generator().manual_seed(sum(shape))
    a = _randn(*shape, dtype=dtype, gen=gen, scale=3, device=device)
    b = _randn(*shape, dtype=dtype, gen=gen, device=device)
    _check_against(swiglu_reference, ops.swiglu, (a, b), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_swiglu_reads_the_halves_of_one_projection_in_place(device, dtype):
    # gate and up as the two halves of one [B, T, 2N] output (row stride 2N), and a transposed layout
    # whose rows do not form one matrix (a copy).
    gen = torch.Generator().manual_seed(62)
    projection = _randn(4, 7, 2 * 300, dtype=dtype, gen=gen, scale=2, device=device)
    _check_against(lambda p: swiglu_reference(*p.chunk(2, dim=-1)), lambda p: ops.swiglu(*p.chunk(2, dim=-1)),
                   (projection,), dtype, gen)
    a, b = (_randn(9, 5, 33, dtype=dtype, gen=gen, device=device) for _ in range(2))
    _check_against(lambda a, b: swiglu_reference(a.transpose(0, 1), b.transpose(0, 1)),
                   lambda a, b: ops.swiglu(a.transpose(0, 1), b.transpose(0, 1)), (a, b), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [(5, 74), (3, 4, 600)])  # N 37 and 300: masked tails of the 8 x 256 tiles
def test_silu_and_mul_matches_torch_on_the_halves(device, dtype, shape):
    gen = torch.Generator().manual_seed(sum(shape) + 3)
    x = _randn(*shape, dtype=dtype, gen=gen, scale=2, device=device)
    _check_against(lambda t: swiglu_reference(*t.chunk(2, dim=-1)), ops.silu_and_mul, (x,), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
def test_silu_and_mul_reads_a_strided_projection_and_returns_one_gradient(device):
    # rows of a [T, B, 2N] tensor seen as [B, T, 2N]: the leading dims do not merge, a copy is read.
    gen = torch.Generator().manual_seed(63)
    x = _randn(7, 3, 2 * 45, dtype=torch.float32, gen=gen, scale=2, device=device)
    _check_against(lambda t: swiglu_reference(*t.transpose(0, 1).chunk(2, dim=-1)),
                   lambda t: ops.silu_and_mul(t.transpose(0, 1)), (x,), torch.float32, gen)
    y = ops.silu_and_mul(x)
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert grad.shape == x.shape and grad.is_contiguous()


@pytest.mark.parametrize("device", DEVICES)
def test_silu_and_mul_backward_reads_a_strided_upstream_gradient(device):
    # x contiguous (its halves passed as offsets) with dy a row-strided view: both routes of the backward.
    gen = torch.Generator().manual_seed(64)
    x = _randn(6, 2 * 37, dtype=torch.float32, gen=gen, scale=2, device=device).requires_grad_()
    wide = _randn(6, 50, dtype=torch.float32, gen=gen, device=device)
    dy = wide[:, 3:40]
    assert not dy.is_contiguous()
    want = torch.autograd.grad(swiglu_reference(*x.chunk(2, dim=-1)), x, dy)[0]
    for upstream in (dy, dy.contiguous()):
        got = torch.ops.tegula.silu_and_mul_backward(upstream, x.detach())
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_silu_and_mul_takes_padded_rows_as_inductor_passes_them(device):
    # Tagged needs_fixed_stride_order, the ops get Inductor's padded buffers (row stride past the row)
    # as they are: x and dy with padded rows give the values of their contiguous copies.
    for op in (torch.ops.tegula.silu_and_mul.default, torch.ops.tegula.silu_and_mul_backward.default):
        assert torch.Tag.needs_fixed_stride_order in op.tags
    gen = torch.Generator().manual_seed(65)
    x = _randn(3, 5, 2 * 37 + 10, dtype=torch.float32, gen=gen, scale=2, device=device)[..., :2 * 37]
    dy = _randn(3, 5, 37 + 27, dtype=torch.float32, gen=gen, device=device)[..., :37]
    assert not x.is_contiguous() and not dy.is_contiguous()
    torch.testing.assert_close(torch.ops.tegula.silu_and_mul(x), swiglu_reference(*x.chunk(2, dim=-1)),
                               rtol=1e-5, atol=1e-5)
    xg = x.detach().requires_grad_()
    want = torch.autograd.grad(swiglu_reference(*xg.chunk(2, dim=-1)), xg, dy)[0]
    torch.testing.assert_close(torch.ops.tegula.silu_and_mul_backward(dy, x), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("B,T,H,D", [(2, 7, 3, 12), (1, 9, 2, 64)])  # half 6 is masked; 17 rows ends mid-block
def test_rotary_embedding_matches_torch(device, dtype, B, T, H, D):
    gen = torch.Generator().manual_seed(T * D)
    x = _randn(B, T, H, D, dtype=dtype, gen=gen, device=device)
    cos, sin = ops.rotary_tables(T, D, dtype=dtype, device=device)
    _check_against(rotary_reference, ops.rotary_embedding, (x, cos, sin), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_rotary_embedding_reads_strided_views_in_place(device, dtype):
    # q of a [B, T, 3, H, D] projection (strides over B, T and H all differ from a contiguous tensor's),
    # and a layout whose leading dims do not merge ([T, B, H, D] transposed to [B, T, H, D]).
    gen = torch.Generator().manual_seed(61)
    B, T, H, D = 3, 11, 5, 20
    cos, sin = ops.rotary_tables(T, D, dtype=dtype, device=device)
    qkv = _randn(B, T, 3, H, D, dtype=dtype, gen=gen, device=device)
    _check_against(lambda t: rotary_reference(t.unbind(2)[0], cos, sin),
                   lambda t: ops.rotary_embedding(t.unbind(2)[0], cos, sin), (qkv,), dtype, gen)
    x = _randn(T, 2, B, H, D, dtype=dtype, gen=gen, device=device)
    _check_against(lambda t: rotary_reference(t.flatten(1, 2).transpose(0, 1), cos, sin),
                   lambda t: ops.rotary_embedding(t.flatten(1, 2).transpose(0, 1), cos, sin), (x,), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("V", [37, 2500])  # one masked chunk; three chunks of 1024, the last masked
def test_cross_entropy_matches_torch(device, dtype, V):
    gen = torch.Generator().manual_seed(V)
    logits = _randn(13, V, dtype=dtype, gen=gen, scale=4, device=device)
    targets = torch.randint(0, V, (13,), generator=gen)
    targets[[2, 7]] = -100  # ignored rows: no loss, no gradient
    targets = targets.to(device)
    got = ops.cross_entropy(logits, targets)
    got.backward()
    reference_dtype = torch.float32 if dtype == torch.bfloat16 else dtype
    ref_logits = logits.detach().to(reference_dtype).requires_grad_()
    want = F.cross_entropy(ref_logits, targets)
    want.backward()
    rtol, atol = TOLERANCES[dtype]["value"]
    torch.testing.assert_close(got, want.to(got.dtype), rtol=rtol, atol=atol)
    rtol, atol = TOLERANCES[dtype]["grad"]
    assert logits.grad.dtype == dtype
    torch.testing.assert_close(logits.grad.to(reference_dtype), ref_logits.grad, rtol=rtol, atol=atol)
    assert not logits.grad[[2, 7]].any()
    losses = ops.cross_entropy_losses(logits.detach(), targets)
    want_losses = F.cross_entropy(ref_logits.detach(), targets, reduction="none")
    torch.testing.assert_close(losses, want_losses.to(losses.dtype), rtol=rtol, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rows", [5, 21, 103])
def test_linear_cross_entropy_matches_torch(device, dtype, rows):
    # C = 40 and V = 70 (one chunk of logits; test_linear_cross_entropy_chunks_cover_the_vocabulary
    # takes several): the row kernels' blocks of 128 end in a masked tail.
    gen = torch.Generator().manual_seed(70)
    x = _randn(rows, 40, dtype=dtype, gen=gen, device=device)
    w = _randn(70, 40, dtype=dtype, gen=gen, scale=0.5, device=device)
    targets = torch.randint(0, 70, (rows,), generator=gen)
    targets[[3, rows - 1]] = -100
    targets = targets.to(device)
    _check_against(lambda x, w: F.cross_entropy(x @ w.T, targets),
                   lambda x, w: ops.linear_cross_entropy(x, w, targets).to(x.dtype), (x, w), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_cross_entropy_under_autocast_casts_as_linear_does(device):
    # float32 x and weight under torch.autocast(bfloat16): the op sees them in bf16, as F.linear would,
    # returns a float32 loss and float32 gradients for the float32 leaves.
    gen = torch.Generator().manual_seed(72)
    x = _randn(45, 40, dtype=torch.float32, gen=gen, device=device)
    w = _randn(70, 40, dtype=torch.float32, gen=gen, scale=0.5, device=device)
    targets = torch.randint(0, 70, (45,), generator=gen).to(device)
    with torch.autocast(device, dtype=torch.bfloat16):
        got = ops.linear_cross_entropy(x, w, targets)
        want = F.cross_entropy(F.linear(x, w).float(), targets)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ops.linear_cross_entropy(x.bfloat16(), w.bfloat16(), targets), rtol=0, atol=0)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    got_grads = torch.autograd.grad(got, [x, w])
    want_grads = torch.autograd.grad(want, [x, w])
    for g, wg in zip(got_grads, want_grads):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g, wg, rtol=3e-2, atol=3e-2)


def _nan_filled(device):
    """An allocator (ops/_empty.py's) whose every new tensor holds NaN."""
    return lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype, device=device).fill_(
        float("nan"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("rows", [5, 103])
def test_linear_cross_entropy_chunks_cover_the_vocabulary(monkeypatch, dtype, rows):
    # Chunks of 16 columns: V = 70 makes five, the last 6 wide, and every target and ignored row lands in
    # some chunk. With NaN in every new buffer (the chunks' logits buffer, the parts, dx and dweight), an
    # element no pass wrote would show in the losses or the gradients.
    lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
    monkeypatch.setattr(lce, "allocator", _nan_filled)
    monkeypatch.setattr(lce, "MIN_CHUNK_COLUMNS", 16)
    monkeypatch.setattr(lce, "LOGITS_CHUNK_BYTES", rows * dtype.itemsize * 16)
    gen = torch.Generator().manual_seed(73)
    x = _randn(rows, 40, dtype=dtype, gen=gen)
    w = _randn(70, 40, dtype=dtype, gen=gen, scale=0.5)
    assert [width for _, width in lce._chunks(x, w)[0]] == [16, 16, 16, 16, 6]
    targets = torch.randint(0, 70, (rows,), generator=gen)
    targets[[0, rows - 1]] = torch.tensor([69, -100])  # a target in the short last chunk; an ignored row
    with torch.no_grad():  # no gradient asked for: the per-row op over chunks of columns
        torch.testing.assert_close(ops.linear_cross_entropy(x, w, targets), F.cross_entropy(x @ w.T, targets))
    # Gradients asked for: linear_cross_entropy_with_grads over chunks of whole rows, as many rows as the 16
    # columns' bytes hold (1 of 5 rows, 23 of 103), the last chunk short.
    chunks = lce._with_grads_layout(x, w, targets, -100, True, True)[0]
    assert [n for _, n in chunks] == ([1] * 5 if rows == 5 else [23, 23, 23, 23, 11])
    _check_against(lambda x, w: F.cross_entropy(x @ w.T, targets),
                   lambda x, w: ops.linear_cross_entropy(x, w, targets).to(x.dtype), (x, w), dtype, gen)


def test_linear_cross_entropy_chunks_of_rows_hold_at_most_their_bytes():
    lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
    # 128 MiB of bf16 logits of a vocabulary of 32768 hold 2048 rows; from 128 rows on, multiples of 128.
    assert lce.chunk_rows(4096, 32768, 2) == 2048 and lce.chunk_rows(100, 32768, 2) == 100
    assert lce.chunk_rows(10**6, 300000, 2) == 128 and lce.chunk_rows(10**6, 10**9, 4) == 1
    assert 3000 * 4 * lce.chunk_rows(10**6, 3000, 4) <= lce.LOGITS_CHUNK_BYTES


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_linear_cross_entropy_with_grads_agrees_with_the_per_row_op(device, dtype):
    # The mean loss and its gradients two ways: the op that computes them in its forward, and the per-row
    # op's mean through its recomputing backward. The same kernels' arithmetic: equal to rounding.
    gen = torch.Generator().manual_seed(74)
    x = _randn(61, 24, dtype=dtype, gen=gen, device=device).requires_grad_()
    w = _randn(90, 24, dtype=dtype, gen=gen, scale=0.5, device=device).requires_grad_()
    targets = torch.randint(0, 90, (61,), generator=gen)
    targets[[0, 17, 60]] = -100
    targets = targets.to(device)
    upstream = torch.tensor(-2.75, dtype=torch.float64 if dtype == torch.float64 else torch.float32, device=device)
    loss = ops.linear_cross_entropy(x, w, targets)
    assert loss.grad_fn is not None and "with_grads" in type(loss.grad_fn).__name__
    got = torch.autograd.grad(loss, (x, w), upstream)
    losses = torch.ops.tegula.linear_cross_entropy(x, w, targets, -100)[0]
    per_row = losses.sum() / (targets != -100).sum()
    want = torch.autograd.grad(per_row, (x, w), upstream)
    rtol, atol = TOLERANCES[dtype]["value"]
    torch.testing.assert_close(loss, per_row, rtol=rtol, atol=atol)
    rtol, atol = TOLERANCES[dtype]["grad"]
    for g, wg in zip(got, want):
        assert g.dtype == dtype
        torch.testing.assert_close(g, wg, rtol=rtol, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("frozen", ["weight", "x"])
def test_linear_cross_entropy_makes_only_the_gradient_asked_for(device, frozen):
    # A frozen output projection (fine-tuning with adapters) or a frozen input: the other gradient alone,
    # against torch's; the op's output for the frozen one is empty (its product is not made).
    lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
    gen = torch.Generator().manual_seed(76)
    x = _randn(45, 24, dtype=torch.float64, gen=gen, device=device)
    w = _randn(70, 24, dtype=torch.float64, gen=gen, scale=0.5, device=device)
    targets = torch.randint(0, 70, (45,), generator=gen)
    targets[[2, 44]] = -100
    targets = targets.to(device)
    trained = x if frozen == "weight" else w
    trained.requires_grad_()
    (ops.linear_cross_entropy(x, w, targets) * 1.75).backward()
    got = trained.grad
    trained.grad = None
    (F.cross_entropy(x @ w.T, targets) * 1.75).backward()
    torch.testing.assert_close(got, trained.grad, rtol=1e-10, atol=1e-12)
    need_dx = frozen == "weight"
    _, dx, dw = lce.linear_cross_entropy_with_grads(x.detach(), w.detach(), targets, -100, need_dx, not need_dx)
    assert (dx.numel(), dw.numel()) == ((45 * 24, 0) if need_dx else (0, 70 * 24))


def test_linear_cross_entropy_with_grads_when_every_row_is_ignored():
    # torch's mean over no rows is NaN; the gradients are 0, never 0 * inf.
    x = torch.randn(4, 6, requires_grad=True)
    w = torch.randn(5, 6, requires_grad=True)
    targets = torch.full((4,), -100)
    loss = ops.linear_cross_entropy(x, w, targets)
    assert torch.isnan(loss) and torch.isnan(F.cross_entropy(x.detach() @ w.detach().T, targets))
    loss.backward()
    assert torch.equal(x.grad, torch.zeros_like(x)) and torch.equal(w.grad, torch.zeros_like(w))


@pytest.mark.parametrize("device", DEVICES)
def test_linear_cross_entropy_scales_bf16_gradients_once(device):
    # The backward multiplies the forward's gradients by the upstream gradient in float32 and rounds once:
    # an upstream of 1/3 (not a bf16 number) must not be rounded to bf16 first.
    lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
    gen = torch.Generator().manual_seed(75)
    dx = torch.randn(37, 19, generator=gen).to(device=device, dtype=torch.bfloat16)
    dw = torch.randn(3001, generator=gen).to(device=device, dtype=torch.bfloat16)
    dloss = torch.tensor(1 / 3, device=device)
    got_dx, got_dw = lce.linear_cross_entropy_scale_grads(dloss, dx, dw)
    assert torch.equal(got_dx, (dx.float() * dloss).bfloat16()) and torch.equal(got_dw, (dw.float() * dloss).bfloat16())
    assert not torch.equal(got_dx, dx * dloss.bfloat16())  # what rounding the factor first would give


def test_linear_cross_entropy_chunks_hold_at_most_their_bytes():
    lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
    # 4096 rows of bf16: 128 MiB hold 16384 columns; a vocabulary of 32768 takes two chunks, 100 one.
    assert lce.chunk_columns(4096, 32768, 2) == 16384 and lce.chunk_columns(4096, 100, 2) == 100
    # Many rows: never fewer than MIN_CHUNK_COLUMNS, always a multiple of them.
    assert lce.chunk_columns(10**7, 50000, 4) == lce.MIN_CHUNK_COLUMNS
    assert lce.chunk_columns(3000, 10**6, 4) % lce.MIN_CHUNK_COLUMNS == 0
    assert 3000 * lce.chunk_columns(3000, 10**6, 4) * 4 <= lce.LOGITS_CHUNK_BYTES


def fused_chain_reference(x, residual, keep, bias, weight, alpha=0.5, p=0.1, eps=1e-6):
    h = F.gelu(x * alpha + bias, approximate="tanh") * keep.to(x.dtype) / (1 - p) + residual
    return rms_norm_reference(h, weight, eps)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_fused_chain_matches_torch(device, dtype):
    gen = torch.Generator().manual_seed(37)
    x, residual = (_randn(3, 23, 37, dtype=dtype, gen=gen, scale=2, device=device) for _ in range(2))
    keep = (torch.rand(3, 23, 37, generator=gen) > 0.1).to(device=device, dtype=torch.int8)
    bias, weight = (_randn(37, dtype=dtype, gen=gen, device=device) for _ in range(2))
    # In float64 the kernel's constants (sqrt(2/pi), 1/(1-p)) are float32: 1e-6 instead of 1e-10.
    tolerances = dict(value=(1e-6, 1e-6), grad=(1e-6, 1e-6)) if dtype == torch.float64 else None
    _check_against(lambda x, r, b, w: fused_chain_reference(x, r, keep, b, w),
                   lambda x, r, b, w: ops.fused_chain(x, r, keep, b, w), (x, residual, bias, weight), dtype, gen,
                   tolerances)


def attention_reference(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


# Sequences that are not multiples of the 32-row tiles (masked tails); head dims 16 and 64, whose
# default scales 1/4 and 1/8 are exact, so float64 matches torch to rounding.
ATTENTION_CASES = [(torch.float32, 2, 45, 16), (torch.float32, 1, 70, 64), (torch.float64, 2, 45, 16),
                   (torch.bfloat16, 2, 45, 16),
                   # On an sm_90 GPU the backward of these runs through descriptors (attention_tma.py).
                   (torch.bfloat16, 2, 200, 64), (torch.bfloat16, 1, 130, 128)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype,H,S,D", ATTENTION_CASES, ids=lambda v: str(v).replace("torch.", ""))
def test_attention_matches_sdpa(device, causal, dtype, H, S, D):
    gen = torch.Generator().manual_seed(S * D + causal)
    q, k, v = (_randn(2, H, S, D, dtype=dtype, gen=gen, device=device) for _ in range(3))
    _check_against(lambda q, k, v: attention_reference(q, k, v, causal),
                   lambda q, k, v: ops.attention(q, k, v, causal=causal), (q, k, v), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_attention_reads_strided_views_in_place(device, dtype):
    # q, k, v split from one [B, S, 3, H, D] projection and seen as [B, H, S, D] (every stride differs
    # from a contiguous tensor's), and the upstream gradient a transposed view too: the kernels read them
    # through their strides. S = 45 ends in masked tails of every tile.
    gen = torch.Generator().manual_seed(451)
    B, S, H, D = 2, 45, 3, 16
    qkv = _randn(B, S, 3, H, D, dtype=dtype, gen=gen, device=device)

    def split(qkv):
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
        return q, k, v

    def run(attention, qkv):
        out = attention(*split(qkv))
        return out.transpose(1, 2)  # [B, S, H, D]: its gradient reaches the op as a transposed view

    assert not split(qkv)[0].is_contiguous()
    _check_against(lambda t: run(lambda q, k, v: attention_reference(q, k, v, True), t),
                   lambda t: run(lambda q, k, v: ops.attention(q, k, v, causal=True), t), (qkv,), dtype, gen)


def rotary_qkv_reference(qkv, cos, sin):
    q, k, v = qkv.unbind(-3)
    return rotary_reference(q, cos, sin), rotary_reference(k, cos, sin), v


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("B,T,H,D", [(2, 7, 3, 12), (1, 9, 2, 64)])
def test_rotary_qkv_matches_torch(device, dtype, B, T, H, D):
    gen = torch.Generator().manual_seed(T * D + 1)
    qkv = _randn(B, T, 3, H, D, dtype=dtype, gen=gen, device=device)
    cos, sin = ops.rotary_tables(T, D, dtype=dtype, device=device)
    # The three outputs as one tensor, so _check_against compares values and all gradients at once.
    _check_against(lambda t: torch.stack(rotary_qkv_reference(t, cos, sin)),
                   lambda t: torch.stack(ops.rotary_qkv(t, cos, sin)), (qkv,), dtype, gen)


@pytest.mark.parametrize("device", DEVICES)
def test_rotary_qkv_takes_gradients_in_any_layout_and_missing_ones(device):
    # dq, dk and dv come back from attention as [B, H, T, D] tensors transposed to [B, T, H, D]; v may
    # be unused (no gradient reaches it).
    gen = torch.Generator().manual_seed(64)
    B, T, H, D = 2, 5, 3, 16
    qkv = _randn(B, T, 3, H, D, dtype=torch.float32, gen=gen, device=device)
    cos, sin = ops.rotary_tables(T, D, device=device)
    up = [torch.randn(B, H, T, D, generator=gen).to(device).transpose(1, 2) for _ in range(3)]
    got = torch.autograd.grad(sum((o * u).sum() for o, u in zip(ops.rotary_qkv(qkv, cos, sin), up)), qkv)[0]
    want = torch.autograd.grad(sum((o * u).sum() for o, u in zip(rotary_qkv_reference(qkv, cos, sin), up)), qkv)[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    q, k, _ = ops.rotary_qkv(qkv, cos, sin)
    got = torch.autograd.grad((q * up[0]).sum() + (k * up[1]).sum(), qkv)[0]
    q, k, _ = rotary_qkv_reference(qkv, cos, sin)
    want = torch.autograd.grad((q * up[0]).sum() + (k * up[1]).sum(), qkv)[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["no_batch", "two_batch_dims", "slice_of_wider_rows", "head_dim_strided"])
def test_rotary_qkv_in_any_rank_and_layout(device, layout):
    # [B, T, 3, H, D] with the head dim contiguous reads its slots in place (one tensor, slot offsets);
    # every other rank or layout goes through views or copies of the three slots. Same values either way.
    gen = torch.Generator().manual_seed(91)
    T, H, D = 6, 2, 8
    if layout == "no_batch":
        qkv = _randn(T, 3, H, D, dtype=torch.float64, gen=gen, device=device)
    elif layout == "two_batch_dims":
        qkv = _randn(2, 3, T, 3, H, D, dtype=torch.float64, gen=gen, device=device)
    elif layout == "slice_of_wider_rows":  # q, k, v as the first columns of a wider projection's rows
        wide = _randn(2, T, 3 * H * D + 5, dtype=torch.float64, gen=gen, device=device)
        qkv = wide[..., :3 * H * D].unflatten(-1, (3, H, D))
    else:
        qkv = _randn(2, T, 3, H, 2 * D, dtype=torch.float64, gen=gen, device=device)[..., ::2]
    qkv = qkv.detach().requires_grad_()
    cos, sin = ops.rotary_tables(T, D, dtype=torch.float64, device=device)
    got = ops.rotary_qkv(qkv, cos, sin)
    want = rotary_qkv_reference(qkv, cos, sin)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)
    up = [torch.randn(w.shape, generator=gen, dtype=torch.float64).to(device) for w in want]
    grad = torch.autograd.grad(sum((o * u).sum() for o, u in zip(got, up)), qkv)[0]
    want_grad = torch.autograd.grad(sum((o * u).sum() for o, u in zip(want, up)), qkv)[0]
    torch.testing.assert_close(grad, want_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(2, 5, 3, 2, 0), (0, 5, 3, 2, 8), (2, 0, 3, 2, 8)],
                         ids=["no_head_dim", "no_batch", "no_positions"])
def test_rotary_qkv_of_empty_tensors_gives_empty_results_and_gradients(shape):
    qkv = torch.randn(shape, requires_grad=True)
    T, D = shape[1], shape[-1]
    cos, sin = torch.randn(T, D // 2), torch.randn(T, D // 2)
    q, k, v = ops.rotary_qkv(qkv, cos, sin)
    assert q.shape == k.shape == v.shape == (shape[0], T, shape[3], D)
    (q.sum() + k.sum() + v.sum()).backward()
    assert qkv.grad.shape == qkv.shape


# --- float64 against finite differences, and the registrations --------------------------------------


def _gradcheck_cases():
    gen = torch.Generator().manual_seed(7)
    f64 = dict(dtype=torch.float64, gen=gen)
    cos, sin = ops.rotary_tables(5, 12, dtype=torch.float64)
    targets = torch.tensor([3, -100, 36, 0])
    chain_keep = (torch.rand(6, 37, generator=gen) > 0.1).to(torch.int8)
    return {
        "rms_norm": (lambda x, w: ops.rms_norm(x, w), (_randn(2, 3, 37, **f64), _randn(37, **f64, shift=1))),
        "layer_norm": (lambda x, w, b: ops.layer_norm(x, w, b),
                       (_randn(5, 37, **f64, shift=1), _randn(37, **f64, shift=1), _randn(37, **f64))),
        "swiglu": (ops.swiglu, (_randn(4, 33, **f64, scale=2), _randn(4, 33, **f64))),
        "rotary_embedding": (lambda x: ops.rotary_embedding(x, cos, sin), (_randn(2, 5, 3, 12, **f64),)),
        "rotary_qkv": (lambda x: ops.rotary_qkv(x, cos, sin), (_randn(2, 5, 3, 2, 12, **f64),)),
        "silu_and_mul": (ops.silu_and_mul, (_randn(4, 66, **f64, scale=2),)),
        "cross_entropy": (lambda logits: ops.cross_entropy(logits, targets), (_randn(4, 37, **f64, scale=3),)),
        "linear_cross_entropy": (lambda x, w: ops.linear_cross_entropy(x, w, torch.tensor([3, -100, 36, 0, 5])),
                                 (_randn(5, 20, **f64), _randn(37, 20, **f64))),
        "fused_chain": (lambda x, r, b, w: ops.fused_chain(x, r, chain_keep, b, w),
                        (_randn(6, 37, **f64), _randn(6, 37, **f64), _randn(37, **f64), _randn(37, **f64))),
        "attention": (lambda q, k, v: ops.attention(q, k, v, causal=True),
                      tuple(_randn(1, 2, 45, 16, **f64) for _ in range(3))),
    }


@pytest.mark.parametrize("name", sorted(_gradcheck_cases()))
def test_float64_gradients_match_finite_differences(name):
    fn, inputs = _gradcheck_cases()[name]
    assert torch.autograd.gradcheck(fn, inputs)


def _opcheck_cases():
    gen = torch.Generator().manual_seed(11)
    f64 = dict(dtype=torch.float64, gen=gen)
    cos, sin = ops.rotary_tables(5, 12, dtype=torch.float64)
    return {
        "rms_norm": (torch.ops.tegula.rms_norm, (_randn(6, 37, **f64), _randn(37, **f64), 1e-6)),
        "layer_norm": (torch.ops.tegula.layer_norm, (_randn(6, 37, **f64), _randn(37, **f64), _randn(37, **f64),
                                                     1e-5)),
        "swiglu": (torch.ops.tegula.swiglu, (_randn(4, 33, **f64), _randn(4, 33, **f64))),
        "rotary_embedding": (torch.ops.tegula.rotary_embedding, (_randn(2, 5, 3, 12, **f64), cos, sin, 1.0)),
        "rotary_qkv": (torch.ops.tegula.rotary_qkv, (_randn(2, 5, 3, 2, 12, **f64), cos, sin)),
        "silu_and_mul": (torch.ops.tegula.silu_and_mul, (_randn(4, 66, **f64),)),
        "cross_entropy": (torch.ops.tegula.cross_entropy, (_randn(4, 37, **f64), torch.tensor([3, -100, 36, 0]),
                                                           -100)),
        "linear_cross_entropy": (torch.ops.tegula.linear_cross_entropy,
                                 (_randn(5, 20, **f64), _randn(37, 20, **f64), torch.tensor([3, -100, 36, 0, 5]),
                                  -100)),
        "fused_chain": (torch.ops.tegula.fused_chain, (_randn(6, 37, **f64), _randn(6, 37, **f64),
                                                       (torch.rand(6, 37, generator=gen) > 0.1).to(torch.int8),
                                                       _randn(37, **f64), _randn(37, **f64), 0.5, 0.1, 1e-6)),
        "attention": (torch.ops.tegula.attention, (*(_randn(1, 2, 45, 16, **f64) for _ in range(3)), True, 0.25)),
        # Permuted inputs (as a model's head split makes them): the fakes must give the real outputs' strides.
        "attention_permuted": (torch.ops.tegula.attention,
                               (*(_randn(1, 45, 2, 16, **f64).transpose(1, 2) for _ in range(3)), False, 0.25)),
        "rms_norm_permuted": (torch.ops.tegula.rms_norm, (_randn(37, 6, **f64).t(), _randn(37, **f64), 1e-6)),
    }


@pytest.mark.parametrize("name", sorted(_opcheck_cases()))
def test_op_registration_passes_opcheck(name):
    op, args = _opcheck_cases()[name]
    torch.library.opcheck(op, args)


@pytest.mark.parametrize("call,message", [
    (lambda: ops.rms_norm(torch.ones(4, 37), torch.ones(6)), "weights of shape"),
    (lambda: ops.layer_norm(torch.ones(4, 37), torch.ones(37), torch.ones(37, dtype=torch.float64)), "dtype"),
    (lambda: ops.swiglu(torch.ones(4, 8), torch.ones(4, 9)), "one shape"),
    (lambda: ops.rotary_embedding(torch.ones(2, 5, 3, 12), *ops.rotary_tables(4, 12)), "cos and sin of shape"),
    (lambda: ops.rotary_qkv(torch.ones(2, 5, 2, 3, 12), *ops.rotary_tables(5, 12)), r"\[\.\.\., T, 3, H, D\]"),
    (lambda: ops.rotary_qkv(torch.ones(2, 5, 3, 3, 12), *ops.rotary_tables(4, 12)), "cos and sin of shape"),
    (lambda: ops.silu_and_mul(torch.ones(4, 9)), r"\[\.\.\., 2N\]"),
    (lambda: ops.cross_entropy(torch.ones(4, 9), torch.zeros(4, dtype=torch.int32)), "int64 targets"),
    (lambda: ops.attention(*(torch.ones(1, 2, 8, 24) for _ in range(3))), "power of two"),
    (lambda: ops.linear_cross_entropy(torch.ones(4, 8), torch.ones(9, 7), torch.zeros(4, dtype=torch.int64)),
     r"weight \[V, C\]"),
])
def test_mismatched_arguments_are_errors_before_any_launch(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_torch_export_carries_the_ops_as_graph_nodes():
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.Parameter(torch.randn(37))
            self.out = torch.nn.Linear(37, 16, bias=False)

        def forward(self, x, targets):
            return ops.linear_cross_entropy(ops.rms_norm(x, self.norm), self.out.weight, targets)

    gen = torch.Generator().manual_seed(5)
    model, x, targets = Head(), torch.randn(5, 37, generator=gen), torch.randint(0, 16, (5,), generator=gen)
    # The parameters ask for gradients: the loss comes with them (linear_cross_entropy_with_grads); without
    # gradients it is the per-row op and a mean.
    for grad, loss_op in ((True, "tegula.linear_cross_entropy_with_grads.default"),
                          (False, "tegula.linear_cross_entropy.default")):
        with torch.set_grad_enabled(grad):
            exported = torch.export.export(model, (x, targets))
            targets_in_graph = {str(node.target) for node in exported.graph.nodes}
            assert {"tegula.rms_norm.default", loss_op} <= targets_in_graph
            torch.testing.assert_close(exported.module()(x, targets), model(x, targets), rtol=0, atol=0)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_row_runs_cover_every_item_once(monkeypatch, device):
    # The partitions of the backward passes, for a CPU and for a
    # (pretended) 132-multiprocessor GPU: every item in exactly one run, runs of whole blocks.
    from tegula.torch.ops import _rows
    monkeypatch.setattr(_rows, "_multiprocessors", lambda index: 132)
    where = torch.device(device, 0) if device == "cuda" else torch.device("cpu")
    for items in (1, 5, 16, 17, 100, 4096, 16384, 32768, 100003):
        for step in (1, 4, 16):
            programs, per_program = _rows.row_split(items, where, step)
            assert (programs - 1) * per_program < items <= programs * per_program and per_program % step == 0
            assert programs <= (264 if device == "cuda" else _rows.MAX_PROGRAMS)
    assert _rows.backward_warps(16) == 4 and _rows.backward_warps(4096) == 16 and _rows.backward_warps(1024) == 4
    assert _rows.rows_per_step(512) == 4 and _rows.rows_per_step(64) == 16 and _rows.rows_per_step(4096) == 1


# --- arguments in any layout, and arguments the ops refuse -----------------------------------------

WEIGHT_VIEWS = {"every other": lambda w: w[::2], "expanded": lambda w: w[:1].expand(w.shape[0] // 2)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", WEIGHT_VIEWS, ids=list(WEIGHT_VIEWS))
def test_norm_weights_in_any_layout_match_torch(device, view):
    """A weight (or bias) that is a strided or expanded view: the kernels take only its address, so the
    ops read it contiguous (they read every other element, or past the end, before)."""
    gen = torch.Generator().manual_seed(11)
    make = WEIGHT_VIEWS[view]
    x, residual = (_randn(4, 37, dtype=torch.float32, gen=gen, device=device) for _ in range(2))
    w, b = (_randn(74, dtype=torch.float32, gen=gen, device=device) for _ in range(2))
    _check_against(lambda x, w: rms_norm_reference(x, make(w)), lambda x, w: ops.rms_norm(x, make(w)),
                   (x, w), torch.float32, gen)
    _check_against(lambda x, w, b: layer_norm_reference(x, make(w), make(b)),
                   lambda x, w, b: ops.layer_norm(x, make(w), make(b)), (x, w, b), torch.float32, gen)
    _check_against(lambda x, r, w: rms_norm_reference(x + r, make(w)),
                   lambda x, r, w: ops.add_rms_norm(x, r, make(w))[1], (x, residual, w), torch.float32, gen)
    keep = (torch.rand(4, 37, generator=gen) > 0.1).to(device=device, dtype=torch.int8)
    _check_against(lambda x, r, b, w: fused_chain_reference(x, r, keep, make(b), make(w)),
                   lambda x, r, b, w: ops.fused_chain(x, r, keep, make(b), make(w)), (x, residual, b, w),
                   torch.float32, gen)


def test_targets_out_of_range_are_refused_or_nan():
    """Out-of-range targets: a ValueError naming the row, as torch's IndexError does, for targets in
    host memory; the kernels never read outside the logits for one (on a GPU the row's loss is NaN)."""
    logits, x, weight = torch.randn(3, 5), torch.randn(3, 4), torch.randn(5, 4)
    for targets in ([0, 1, 10**12], [0, 7, 2], [0, -3, 2]):
        with pytest.raises(ValueError, match=r"cross_entropy: target -?\d+ of row \d is out of bounds for 5 "
                                             r"classes \(and is not ignore_index -100\)"):
            ops.cross_entropy(logits, torch.tensor(targets))
        with pytest.raises(ValueError, match=r"linear_cross_entropy: target -?\d+ of row \d is out of bounds"):
            ops.linear_cross_entropy(x, weight, torch.tensor(targets))
    with pytest.raises(ValueError, match="cross_entropy takes logits of at least one class, got V = 0"):
        ops.cross_entropy(torch.randn(3, 0), torch.zeros(3, dtype=torch.long))
    # The kernels' own guard, as a GPU sees it (no host check): the row's loss is NaN, the others exact.
    ce = importlib.import_module("tegula.torch.ops.cross_entropy")
    lce = importlib.import_module("tegula.torch.ops.linear_cross_entropy")
    targets = torch.tensor([0, 4, 10**12])
    want = F.cross_entropy(logits, targets.clamp(max=4), reduction="none")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ce, "check_targets", lambda *args: None)
        patch.setattr(lce, "check_targets", lambda *args: None)
        losses = ce.cross_entropy_losses(logits, targets)
        torch.testing.assert_close(losses[:2], want[:2])
        assert torch.isnan(losses[2])
        losses = lce.linear_cross_entropy_forward(x, weight, targets, -100)[0]
        torch.testing.assert_close(losses[:2], F.cross_entropy(x @ weight.T, targets.clamp(max=4),
                                                               reduction="none")[:2], rtol=1e-5, atol=1e-5)
        assert torch.isnan(losses[2])


@pytest.mark.parametrize("call, message", [
    (lambda: ops.rms_norm(torch.ones(2, 8, dtype=torch.int32), torch.ones(8, dtype=torch.int32)),
     "rms_norm takes x of a floating dtype (float16, bfloat16, float32, float64), got torch.int32"),
    (lambda: ops.layer_norm(torch.ones(2, 8), torch.ones(8), None),
     "layer_norm takes weights of shape (8,) and dtype torch.float32, got NoneType"),
    (lambda: ops.rms_norm(torch.ones(2, 8), torch.ones(8), torch.tensor(1e-6)),
     "rms_norm takes eps as a Python float, got Tensor"),
    (lambda: ops.rms_norm(torch.tensor(1.0), torch.ones(())),
     "rms_norm takes x as a tensor of at least one dimension (rows of its last), got ()"),
    (lambda: ops.fused_chain(*(torch.ones(2, 8),) * 3, torch.ones(8), torch.ones(8), p=1.0),
     "fused_chain takes a dropout probability p in [0, 1), got 1.0"),
    (lambda: ops.linear_cross_entropy(torch.ones(3, 4, dtype=torch.int64), torch.ones(5, 4, dtype=torch.int64),
                                      torch.zeros(3, dtype=torch.int64)),
     "linear_cross_entropy takes x and weight of a floating dtype, got torch.int64"),
    (lambda: ops.attention(*[torch.ones(1, 1, 4, 0)] * 3),
     "attention needs a head dim that is a power of two >= 16 (a tile size), got 0"),
    (lambda: ops.attention(*[torch.ones(1, 1, 4, 16, dtype=torch.int32)] * 3),
     "attention takes q, k, v of a floating dtype (float16, bfloat16, float32, float64), got torch.int32"),
    (lambda: ops.swiglu(torch.ones(2, 4, dtype=torch.int32), torch.ones(2, 4, dtype=torch.int32)),
     "swiglu takes a and b of a floating dtype (float16, bfloat16, float32, float64), got torch.int32"),
    (lambda: ops.silu_and_mul(torch.ones(2, 4, dtype=torch.bool)),
     "silu_and_mul takes x of a floating dtype (float16, bfloat16, float32, float64), got torch.bool"),
    (lambda: ops.rotary_embedding(torch.ones(1, 3, 2, 4, dtype=torch.int64), torch.ones(3, 2), torch.ones(3, 2)),
     "rotary_embedding takes x of a floating dtype (float16, bfloat16, float32, float64), got torch.int64"),
])
def test_arguments_the_ops_refuse_are_said_at_the_call(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()
