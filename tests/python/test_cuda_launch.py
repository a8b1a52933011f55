"""The CUDA side of launching: which backend and device the launcher picks
from a launch's arguments (exact error texts, no GPU needed), the array helper of the
`backend` fixture, and, on a GPU, kernels on torch CUDA tensors: results
against torch, the caller's stream, num_warps, inspect() and driver errors."""

import re

import numpy as np
import pytest

import tegula
import tegula._device as device
import tegula.language as tl
from vector_add import add_kernel


class FakeDevice:
    def __init__(self, index):
        self.type = "cuda"
        self.index = index

    def __str__(self):
        return f"cuda:{self.index}"


class FakeCudaTensor:
    """Looks like a torch.Tensor on a GPU; never reaches a launcher."""

    dtype = "torch.float32"

    def __init__(self, index=0):
        self.device = FakeDevice(index)

    def data_ptr(self):
        return 1 << 20


class FakeCupyArray:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


# --- choosing the backend (no GPU needed) -----------------------------------------------------


@tegula.jit
def scalars_only(value, n):
    # No array arguments: TEGULA_BACKEND alone picks the backend.
    tl.static_assert(True)


def _placed(kernel, *args, **kwargs):
    """(backend, device) a launch with these arguments would run on."""
    _, options = kernel._launcher.request(*args, **kwargs)
    return options.backend, options.device


def test_host_arrays_choose_the_cpu(monkeypatch):
    monkeypatch.delenv("TEGULA_BACKEND", raising=False)
    x = np.zeros(100, dtype=np.float32)
    assert _placed(add_kernel, x, x, x, 100, BLOCK=128) == ("cpu", 0)
    assert _placed(scalars_only, 1.0, 3) == ("cpu", 0)
    cuda = [FakeCudaTensor(1) for _ in range(3)]
    assert _placed(add_kernel, *cuda, 100, BLOCK=128) == ("cuda", 1)


def test_mixed_devices_name_every_argument(monkeypatch):
    monkeypatch.delenv("TEGULA_BACKEND", raising=False)
    x = np.zeros(100, dtype=np.float32)
    with pytest.raises(ValueError, match=re.escape(
            "kernel 'add_kernel' got arguments on different devices ('x_ptr', 'out_ptr' on the CPU; "
            "'y_ptr' on cuda:0): move them to one device")):
        add_kernel[(1,)](x, FakeCudaTensor(), x, 100, BLOCK=128)
    with pytest.raises(ValueError, match=re.escape(
            "kernel 'add_kernel' got arguments on different devices ('x_ptr', 'y_ptr' on cuda:0; "
            "'out_ptr' on cuda:1): move them to one device")):
        add_kernel[(1,)](FakeCudaTensor(0), FakeCudaTensor(0), FakeCudaTensor(1), 100, BLOCK=128)


def test_forced_backend_conflicts_are_errors(monkeypatch):
    x = np.zeros(100, dtype=np.float32)
    monkeypatch.setenv("TEGULA_BACKEND", "cuda")
    with pytest.raises(ValueError, match=re.escape(
            "TEGULA_BACKEND=cuda, but argument 'x_ptr' of kernel 'add_kernel' is in host memory; pass "
            "CUDA tensors (torch, CuPy) or unset TEGULA_BACKEND")):
        add_kernel[(1,)](x, x, x, 100, BLOCK=128)
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")
    with pytest.raises(ValueError, match=re.escape(
            "TEGULA_BACKEND=cpu, but argument 'x_ptr' of kernel 'add_kernel' is on cuda:0")):
        _placed(add_kernel, FakeCudaTensor(), FakeCudaTensor(), FakeCudaTensor(), 100, BLOCK=128)
    monkeypatch.setenv("TEGULA_BACKEND", "tpu")
    with pytest.raises(ValueError, match=re.escape("TEGULA_BACKEND must be 'cpu' or 'cuda', got 'tpu'")):
        _placed(scalars_only, 1.0, 3)


def test_malformed_cuda_array_interface_is_a_type_error(monkeypatch):
    monkeypatch.delenv("TEGULA_BACKEND", raising=False)
    x = np.zeros(100, dtype=np.float32)
    with pytest.raises(TypeError, match=re.escape(
            "argument 'y_ptr' of kernel 'add_kernel' has a malformed __cuda_array_interface__ ('data')")):
        add_kernel[(1,)](x, FakeCupyArray({"typestr": "<f4", "shape": (100,)}), x, 100, BLOCK=128)


def test_nvrtc_search_path_lists_wheel_folders():
    import os
    import sys

    folders = os.environ.get("TEGULA_NVRTC_SEARCH", "").split(os.pathsep)
    expected = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))]
    assert all(p in folders for p in expected)


# --- the `backend` fixture's arrays -------------------------------------------------------------


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "int32", "uint64", "float16", "bfloat16",
                                  "float32", "float64"])
def test_backend_arrays_round_trip_every_dtype(backend, name):
    from ops_util import np_dtype, random, rng_for

    data = random(rng_for(name), (3, 5), name)
    on_device = backend.array(data)
    back = backend.numpy(on_device)
    assert back.dtype == np_dtype(name) and back.shape == (3, 5)
    np.testing.assert_array_equal(back.view(np.uint8), data.view(np.uint8))


# --- on a GPU -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    available, why = device.cuda_status()
    if not available:
        pytest.skip(f"no CUDA GPU: {why}")
    return torch


def _compile_or_skip(torch):
    """Skips while the CUDA code generator is not part of the build."""
    x = torch.zeros(16, device="cuda")
    try:
        add_kernel.warmup(x, x, x, 16, BLOCK=128, grid=(1,))
    except ValueError as e:
        if "no CUDA code generator" in str(e):
            pytest.skip("the CUDA code generator is not built")
        raise


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_vector_add_on_torch_tensors(torch, n):
    _compile_or_skip(torch)
    gen = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.randn(n, device="cuda", generator=gen)
    out = torch.full((n + 16,), -1.0, device="cuda")
    add_kernel[(tegula.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    torch.testing.assert_close(out[:n], x + y, rtol=0, atol=0)
    assert bool((out[n:] == -1).all()), "the masked tail was written"


def test_launch_uses_the_current_stream(torch):
    _compile_or_skip(torch)
    n = 1 << 20
    x = torch.ones(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2  # queued on `side`: our kernel must run after it to see it
        add_kernel[(tegula.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    side.synchronize()
    assert bool((out == 3).all())


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_num_warps_changes_the_block_not_the_result(torch, num_warps):
    _compile_or_skip(torch)
    n = 3000
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    out = torch.empty(n, device="cuda")
    kernel = add_kernel[(tegula.cdiv(n, 512),)](x, x, out, n, BLOCK=512, num_warps=num_warps)
    assert kernel.num_threads == 32 * num_warps
    torch.testing.assert_close(out, 2 * x, rtol=0, atol=0)


def test_inspect_shows_layouts_ptx_and_resources(torch):
    _compile_or_skip(torch)
    x = torch.zeros(64, device="cuda")
    info = add_kernel.inspect(x, x, x, 64, BLOCK=256)
    assert info.backend == "cuda"
    assert "tegula_kernel" in info.source
    assert ".entry tegula_kernel" in info.ptx
    assert info.layouts
    assert info.resources["registers"] > 0
    assert info.resources["threads"] == 128
    text = str(info)
    assert "--- PTX ---" in text and "--- layouts ---" in text and "registers: " in text


def test_cuda_tensor_mixed_with_numpy_names_the_arguments(torch):
    x = torch.zeros(8, device="cuda")
    host = np.zeros(8, dtype=np.float32)
    with pytest.raises(ValueError, match=re.escape(
            "kernel 'add_kernel' got arguments on different devices ('x_ptr', 'y_ptr' on cuda:0; "
            "'out_ptr' on the CPU)")):
        add_kernel[(1,)](x, x, host, 8, BLOCK=128)


def test_host_address_is_not_device_memory(torch):
    with pytest.raises(ValueError, match="is not CUDA device memory"):
        tegula._C.cuda_pointer_device(np.zeros(4).ctypes.data)


@tegula.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int8", "uint8", "int64", "bool"])
def test_torch_views_keep_their_offsets_and_dtypes(torch, dtype):
    # Plain tensors are read through torch's DLPack exchange table where torch
    # has one (2.10+), Parameters too, other subclasses through the getters:
    # every route must give the view's own first element and element type.
    _compile_or_skip(torch)
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(3)
    base = (torch.randn(1000, device="cuda", generator=gen) * 50).to(dt)
    Sub = type("Sub", (torch.Tensor,), {})
    for view in (base[7:], base[7:].as_subclass(Sub), torch.nn.Parameter(base[7:], requires_grad=False)):
        out = torch.zeros(993, device="cuda", dtype=dt)
        _copy_kernel[(tegula.cdiv(993, 256),)](view, out, 993, BLOCK=256)
        assert bool((out == base[7:]).all()), type(view).__name__
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the exchange's stream query is the caller's stream
        src = base.clone()
        out = torch.zeros_like(base)
        _copy_kernel[(tegula.cdiv(1000, 256),)](src, out, 1000, BLOCK=256)
    side.synchronize()
    assert bool((out == base).all())
