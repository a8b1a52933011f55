"""Triton's host-side runtime as its tutorials use it, with `import tegula as triton`:
`triton.runtime.driver.active` (device, target, properties, stream) and the runner of a kernel
that warmup compiled (`compiled[grid](*every_argument)`, `compiled._init_handles()`). Results
against NumPy on random data with masked tails, on the backend under test."""

import sys

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C


@tegula.jit
def softmax_rows(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                 BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # The tutorial's persistent softmax: programs step over the rows; `num_stages` is a parameter here.
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=mask, other=-float("inf"))
        numerator = tl.exp(row - tl.max(row, axis=0))
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, numerator / tl.sum(numerator, axis=0),
                 mask=mask)


def reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_active_driver_describes_the_backend(backend):
    active = tegula.runtime.driver.active
    target = active.get_current_target()
    props = active.utils.get_device_properties(active.get_current_device())
    if backend.is_cuda:
        assert (target.backend, target.arch, target.warp_size) == ("cuda", _C.cuda_device_arch(0), 32)
        assert active.get_device_capability() == divmod(_C.cuda_device_arch(0), 10)
        assert props["warpSize"] == 32 and props["multiprocessor_count"] > 0
        assert props["max_shared_mem"] >= 48 * 1024 and props["max_num_regs"] >= 32 * 1024
        assert {"sm_clock_rate", "mem_clock_rate", "mem_bus_width"} <= set(props)
    else:
        assert (target.backend, target.warp_size) == ("cpu", 1)
        assert set(props) == {"max_shared_mem", "multiprocessor_count", "warpSize"} and props["warpSize"] == 1
        assert props["multiprocessor_count"] == _C.cpu_thread_count() and props["max_shared_mem"] >= 64 * 1024
        assert props["multiprocessor_count"] >= 1 and active.get_current_stream(0) == 0


def test_active_torch_device_is_where_launches_run(backend):
    torch = pytest.importorskip("torch")
    device = tegula.runtime.driver.active.get_active_torch_device()
    assert device.type == ("cuda" if backend.is_cuda else "cpu")


def test_warmup_then_the_runner_launches_the_compiled_kernel(backend):
    # As the softmax tutorial does: warmup for the launch's occupancy, then compiled[grid](every argument).
    rng = np.random.default_rng(5)
    x = rng.standard_normal((203, 781)).astype(np.float32)  # 781: a masked tail in every row
    xd, yd = backend.array(x), backend.array(np.zeros_like(x))
    block = tegula.next_power_of_2(x.shape[1])
    compiled = softmax_rows.warmup(yd, xd, x.shape[1], x.shape[1], *x.shape, BLOCK_SIZE=block, num_stages=2,
                                   num_warps=8, grid=(1,))
    compiled._init_handles()
    assert compiled.metadata.num_warps == 8
    runs = tegula.runtime_stats()["frontend_runs"]
    returned = compiled[(7, 1, 1)](yd, xd, x.shape[1], x.shape[1], *x.shape, block, 2)
    backend.synchronize()
    np.testing.assert_allclose(backend.numpy(yd), reference(x), rtol=1e-5, atol=1e-7)
    # The same specialization, num_warps=8 included: nothing compiled again.
    assert returned.key == compiled.key and tegula.runtime_stats()["frontend_runs"] == runs


def test_runner_of_a_kernel_not_from_warmup_says_how_to_launch(backend):
    jit_module = sys.modules["tegula.jit"]  # the module (tegula.jit is the decorator)
    x = backend.array(np.ones((2, 8), np.float32))
    launched = softmax_rows[(2,)](x, x, 8, 8, 2, 8, BLOCK_SIZE=8, num_stages=1)
    jit_module._OWNERS.pop(launched, None)  # as a kernel that no warmup returned
    with pytest.raises(TypeError, match=r"E0708.*launch this one through its kernel"):
        launched[(1,)](x, x, 8, 8, 2, 8, 8, 1)


def test_cpu_driver_refuses_other_devices():
    from tegula.runtime.driver import _CpuDriver

    with pytest.raises(ValueError, match="one device, 0"):
        _CpuDriver().set_current_device(1)


def test_triton_cpu_switches_choose_what_active_describes(backend):
    # Triton-CPU's tutorials: set_active_to_cpu() before their CPU runs, get_active_gpus() to ask for a GPU.
    driver = tegula.runtime.driver
    try:
        driver.set_active_to_cpu()
        assert driver.active.get_current_target().backend == "cpu"
        gpus = driver.get_active_gpus()
        assert len(gpus) == (1 if backend.is_cuda else 0)
        if backend.is_cuda:
            driver.set_active_to_gpu()
            assert driver.active.get_current_target().backend == "cuda"
        else:
            with pytest.raises(RuntimeError, match="no usable CUDA GPU"):
                driver.set_active_to_gpu()
    finally:
        driver.reset_active()


def test_driver_classes_say_whether_they_are_active(backend):
    # Triton's DriverBase.is_active(), a question to the class: host code (Inductor's set_driver_to_gpu) picks
    # the first driver class that is active, makes one and sets it active, then sizes its launches from it.
    from tegula.runtime.driver import _CpuDriver, _CudaDriver

    assert _CpuDriver.is_active() is True
    assert _CudaDriver.is_active() is (len(tegula.runtime.driver.get_active_gpus()) == 1)
    driver = tegula.runtime.driver
    try:
        chosen = next(cls for cls in (_CudaDriver, _CpuDriver) if cls.is_active())
        driver.set_active(chosen())
        assert driver.active.get_current_target().backend == ("cuda" if _CudaDriver.is_active() else "cpu")
        programs = driver.active.utils.get_device_properties(0)["multiprocessor_count"]
        rng = np.random.default_rng(5)
        x = rng.standard_normal((37, 19)).astype(np.float32)
        xd, yd = backend.array(x), backend.array(np.zeros_like(x))
        softmax_rows[(min(programs, 37),)](yd, xd, 19, 19, 37, 19, BLOCK_SIZE=32, num_stages=1)
        backend.synchronize()
        np.testing.assert_allclose(backend.numpy(yd), reference(x), rtol=1e-5, atol=1e-6)
    finally:
        driver.reset_active()
