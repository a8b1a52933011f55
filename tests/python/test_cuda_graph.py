"""Tegula launches inside CUDA graph capture (torch.cuda.graph): a captured
launch is one kernel node whose parameters were fixed at capture, so replays
read whatever the arrays hold then. GPU only: skipped without torch and a
CUDA device."""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _device

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not _device.is_available():
    pytest.skip("needs a CUDA GPU and torch", allow_module_level=True)


@tegula.jit
def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@tegula.jit
def row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def _chain(x, y, t1, t2, out, n, block):
    """Three launches: t1 = 2x + y, t2 = -t1 + x, out = 0.5 t2 + t1."""
    grid = (tegula.cdiv(n, block),)
    axpy[grid](x, y, t1, 2.0, n, BLOCK=block)
    axpy[grid](t1, x, t2, -1.0, n, BLOCK=block)
    axpy[grid](t2, t1, out, 0.5, n, BLOCK=block)


def _expected(x, y):
    t1 = 2.0 * x + y
    t2 = -t1 + x
    return 0.5 * t2 + t1


def _warm_up(fn):
    """torch's recipe: run once on a side stream before capturing."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)


@pytest.mark.parametrize("n", [1000, 4096 + 17])
def test_three_captured_launches_replay_with_new_data(n):
    block = 256
    x = torch.empty(n, device="cuda")
    y = torch.empty(n, device="cuda")
    t1, t2, out = (torch.empty(n, device="cuda") for _ in range(3))
    _warm_up(lambda: _chain(x, y, t1, t2, out, n, block))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _chain(x, y, t1, t2, out, n, block)
    generator = torch.Generator(device="cuda").manual_seed(n)
    for _ in range(5):
        x.copy_(torch.randn(n, device="cuda", generator=generator))
        y.copy_(torch.randn(n, device="cuda", generator=generator))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, _expected(x, y), rtol=1e-6, atol=1e-6)


def test_first_launch_of_a_kernel_inside_the_capture():
    """A specialization never launched before compiles and loads mid-capture
    (its module loads in relaxed capture mode)."""
    rows, cols = 37, 200
    x = torch.empty(rows, cols, device="cuda")
    out = torch.empty(rows, device="cuda")
    kernel = tegula.jit(row_sum.fn)  # a fresh kernel: nothing compiled or loaded yet
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel[(rows,)](x, out, cols, BLOCK=256)
    for seed in range(5):
        x.copy_(torch.randn(rows, cols, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)


def test_capture_records_the_launch_without_running_it():
    n = 512
    x = torch.ones(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    _warm_up(lambda: axpy[(2,)](x, x, out, 1.0, n, BLOCK=256))
    out.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        axpy[(2,)](x, x, out, 3.0, n, BLOCK=256)
    torch.cuda.synchronize()
    assert float(out.abs().sum()) == 0.0  # captured, not run
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full((n,), 4.0, device="cuda"))


def test_debug_mode_inside_capture_is_a_clear_error():
    n = 256
    x = torch.ones(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    kernel = tegula.jit(axpy.fn, debug=True)
    _warm_up(lambda: kernel[(1,)](x, x, out, 1.0, n, BLOCK=256))
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ValueError, match=re.escape(
            "kernel 'axpy' is compiled in debug mode, which cannot run inside CUDA graph capture")):
        with torch.cuda.graph(graph):
            kernel[(1,)](x, x, out, 1.0, n, BLOCK=256)
    torch.cuda.synchronize()
    # The stream is usable afterwards and the kernel still runs, in debug mode, outside the capture.
    kernel[(1,)](x, x, out, 2.0, n, BLOCK=256)
    torch.cuda.synchronize()
    assert np.all(out.cpu().numpy() == 3.0)
