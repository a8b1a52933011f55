"""What only the GPU shows of profiling (docs/profiling.md): a torch.profiler
trace of a Tegula launch names the kernel, the NVTX ranges go through
torch.cuda.nvtx, and TEGULA_PROFILE times launches with CUDA events. Skipped
without a usable CUDA GPU; tests/python/test_profiling.py has the rest and
test_report.py runs kernel.report on the GPU under `--backend cuda`."""

import json

import pytest

from tegula import profiling
from tegula_bench.kernels import _host, vector_add

usable, why = _host.cuda_usable()
pytestmark = pytest.mark.skipif(not usable, reason=f"needs a CUDA GPU: {why}")


@pytest.fixture
def clean_profiling(monkeypatch):
    monkeypatch.delenv("TEGULA_NVTX_LIBRARY", raising=False)
    yield
    profiling.set_nvtx(False)
    profiling.set_timing(False)
    profiling.reset()


def _cuda_add(n=1 << 20):
    import torch
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = vector_add.add(x, y)
    torch.testing.assert_close(out, x + y)
    return vector_add.add_kernel.warmup(x, y, out, n, grid=(1,), BLOCK=vector_add.BLOCK)


def test_a_torch_profiler_trace_names_the_kernel(tmp_path, clean_profiling):
    import torch
    kernel = _cuda_add()  # compiled before the trace
    profiling.set_nvtx(True)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        _cuda_add()
        torch.cuda.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    names = {event.get("name", "") for event in json.loads(path.read_text())["traceEvents"]}
    assert f"add_kernel [{kernel.key[:12]}]" in names
    assert "tegula_kernel" in names  # the device kernel itself, under the ABI's symbol


def test_nvtx_ranges_go_through_torch_cuda_nvtx(monkeypatch, clean_profiling):
    import torch
    calls = []
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: calls.append(("push", name)))
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: calls.append(("pop",)))
    profiling.set_nvtx(True)
    kernel = _cuda_add()
    assert calls == [("push", f"add_kernel [{kernel.key[:12]}]"), ("pop",)]


def test_timing_on_the_gpu_uses_events(clean_profiling):
    _cuda_add()
    profiling.set_timing(True)
    for _ in range(5):
        _cuda_add()
    (record,) = [r for r in profiling.records() if r.name == "add_kernel"]
    assert record.calls == 5 and record.total_s > 0 and not record.pending
    row = next(line for line in profiling.table().splitlines() if line.startswith("add_kernel"))
    share = row.split()[-1]
    assert share.endswith("%") and 0 < float(share[:-1]) < 200
