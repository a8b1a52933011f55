"""tegula.torch.ops._empty: the ops' allocations are what torch.empty makes (shape, strides, dtype,
device), for tuples and torch.Size, empty and 0-d shapes, on the current device and on another one."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

from tegula.torch.ops import _empty  # noqa: E402

SHAPES = [(7,), (3, 5), (2, 3, 0, 4), (), (1, 1, 9), torch.Size([4, 6, 2])]
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.uint8, torch.bool]


def _devices():
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices += [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return devices


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("device", _devices(), ids=str)
def test_empty_is_torch_empty(device, fast, monkeypatch):
    monkeypatch.setattr(_empty, "FAST", fast)
    for shape in SHAPES:
        for dtype in DTYPES:
            made = _empty.empty(shape, dtype, device)
            expected = torch.empty(shape, dtype=dtype, device=device)
            assert (made.shape, made.stride(), made.dtype, made.device) == \
                (expected.shape, expected.stride(), expected.dtype, expected.device), (shape, dtype)
            assert made.is_contiguous() and made.storage_offset() == 0
            # Writable and as large as its shape says.
            made.copy_(torch.arange(made.numel(), device=device).reshape(made.shape).to(dtype))
            assert torch.equal(made.flatten().cpu(), torch.arange(made.numel()).to(dtype))


def test_sizes_and_strides_are_plain_tuples_and_bounded():
    sizes, strides = _empty.sizes_and_strides(torch.Size([2, 3, 4]))
    assert type(sizes) is tuple and type(strides) is tuple and strides == (12, 4, 1)
    for n in range(_empty._LIMIT + 10):
        _empty.sizes_and_strides((n + 1, 2))
    assert len(_empty._SIZES_STRIDES) <= _empty._LIMIT


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_empty_on_a_device_other_than_the_current_one():
    # The fast allocator allocates on the current device: a tensor of another device's index must land
    # on that device all the same.
    count = torch.cuda.device_count()
    target = torch.device("cuda", count - 1)
    with torch.cuda.device(0):
        made = _empty.empty((5, 3), torch.float32, target)
    assert made.device == target
