"""kernel.warmup with torch dtypes in place of arrays (Triton's MockTensor): it compiles the kernel a later
launch on real tensors of those dtypes takes, without allocating anything."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import tegula  # noqa: E402
import tegula.language as tl  # noqa: E402
from tegula.runtime.jit import MockTensor  # noqa: E402


@tegula.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def test_warmup_with_dtypes_compiles_what_the_launch_runs(monkeypatch):
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")
    launcher = add_kernel._launcher
    compiled = add_kernel.warmup(torch.float32, torch.float32, torch.float32, 1000, BLOCK=128, grid=(8,))
    assert compiled.name == "add_kernel"
    assert len(launcher.specializations()) == 1
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(1000, generator=gen), torch.randn(1000, generator=gen)
    out = torch.full((1000,), float("nan"))
    assert add_kernel[(8,)](a, b, out, 1000, BLOCK=128) is compiled  # the warmed-up kernel, not a new one
    assert len(launcher.specializations()) == 1
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    # Another dtype is another kernel; a MockTensor may be passed itself, with a shape.
    add_kernel.warmup(MockTensor(torch.float64, shape=[10, 4]), torch.float64, torch.float64, 1000, BLOCK=128,
                      grid=(8,))
    assert len(launcher.specializations()) == 2


def test_mock_tensor_strides_and_device(monkeypatch):
    monkeypatch.setenv("TEGULA_BACKEND", "cpu")
    mock = MockTensor(torch.bfloat16, shape=[3, 5, 7])
    assert mock.stride() == (35, 7, 1) and mock.data_ptr() == 0 and mock.device == torch.device("cpu")
    assert MockTensor.wrap_dtype(torch.int8).dtype == torch.int8 and MockTensor.wrap_dtype(5) == 5


def test_a_launch_refuses_a_dtype_for_an_array():
    with pytest.raises(TypeError, match="argument 'a_ptr' of kernel 'add_kernel' must be an array or a scalar"):
        add_kernel[(1,)](torch.float32, torch.ones(4), torch.ones(4), 4, BLOCK=4)
