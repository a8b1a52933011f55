"""tegula.torch ops on the GPU: a launch inside a custom op goes on the
current stream of the tensors' device, so it is ordered after the work
queued before it on a non-default stream and on a device other than the
current one, forward and backward replay correctly from a CUDA graph, and a
launch from a thread with no current CUDA context works.
GPU only: skipped without a CUDA device (make gpu-check runs it)."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

from tegula import _device  # noqa: E402

if not torch.cuda.is_available() or not _device.is_available():
    pytest.skip("needs a CUDA GPU and torch", allow_module_level=True)

from tegula.torch import ops  # noqa: E402


def rms_norm_reference(x, w, eps=1e-6):
    x32 = x.float()
    return x32 * torch.rsqrt(x32.square().mean(-1, keepdim=True) + eps) * w.float()


def test_launch_on_a_side_stream_is_ordered_after_that_streams_work():
    x = torch.randn(512, 1000, device="cuda")
    w = torch.randn(1000, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # keeps the side stream busy for tens of milliseconds
        doubled = x * 2  # queued behind the sleep; an op on another stream would read it unwritten
        y = ops.rms_norm(doubled, w)
    side.synchronize()
    torch.testing.assert_close(y, rms_norm_reference(x * 2, w), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_launch_on_another_device_uses_that_devices_current_stream():
    x = torch.randn(64, 300, device="cuda:1")
    w = torch.randn(300, device="cuda:1")
    torch.cuda.synchronize(1)
    side = torch.cuda.Stream(device="cuda:1")
    with torch.cuda.stream(side):  # side becomes cuda:1's current stream
        torch.cuda._sleep(50_000_000)
        doubled = x * 2
        with torch.cuda.device(0):  # the current device is another one at the launch
            y = ops.rms_norm(doubled, w)
    side.synchronize()
    assert y.device == torch.device("cuda:1")
    torch.testing.assert_close(y, rms_norm_reference(x * 2, w), rtol=1e-5, atol=1e-5)


def test_forward_and_backward_replay_from_a_cuda_graph():
    x = torch.randn(96, 200, device="cuda", requires_grad=True)
    w = torch.randn(200, device="cuda", requires_grad=True)
    dy = torch.randn(96, 200, device="cuda")

    def step():
        y = ops.rms_norm(x, w)
        return (y, *torch.autograd.grad(y, (x, w), dy))

    side = torch.cuda.Stream()  # torch's recipe: warm up on a side stream before capturing
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = step()
    for seed in range(2):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        with torch.no_grad():
            x.copy_(torch.randn(x.shape, device="cuda", generator=gen))
            w.copy_(torch.randn(w.shape, device="cuda", generator=gen))
        graph.replay()
        torch.cuda.synchronize()
        xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        yr = rms_norm_reference(xr, wr)
        want = (yr, *torch.autograd.grad(yr, (xr, wr), dy))
        for got, expected in zip(outputs, want):
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_launches_from_a_thread_without_a_current_context():
    # A thread the driver never made a context current in (autograd runs a backward on such a
    # thread): a kernel with TMA tensor maps (the Hopper attention) encodes them under the device's
    # context, and every launch gives the results of the main thread's.
    import threading
    q, k, v = (torch.randn(2, 4, 300, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    want = ops.attention(q, k, v, causal=True)
    x, w = torch.randn(96, 200, device="cuda"), torch.randn(200, device="cuda")
    want_norm = ops.rms_norm(x, w)
    torch.cuda.synchronize()
    got, errors = {}, []

    def run():
        try:
            got["attention"] = ops.attention(q, k, v, causal=True)
            got["rms_norm"] = ops.rms_norm(x, w)
            torch.cuda.synchronize()
        except Exception as e:  # reported by the main thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not errors, errors[0]
    torch.testing.assert_close(got["attention"], want, rtol=0, atol=0)
    torch.testing.assert_close(got["rms_norm"], want_norm, rtol=0, atol=0)
