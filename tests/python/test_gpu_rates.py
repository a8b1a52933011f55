"""tegula.testing's descriptions of an NVIDIA GPU's peak rates (Triton's nvsmi, get_dram_gbps,
get_max_tensorcore_tflops, get_max_simd_tflops): Triton's formulas over the driver's properties, checked on a
stand-in driver with an H100's figures; clear errors where no GPU is; nvsmi through a stand-in nvidia-smi."""

from __future__ import annotations

import math
import os
import stat

import pytest

import tegula.language as tl
from tegula import testing
from tegula.runtime import driver


class _Utils:
    def get_device_properties(self, device=0):
        assert device == 0
        return {"multiprocessor_count": 132, "mem_clock_rate": 2619000, "mem_bus_width": 5120}


class _Driver:
    backend = "cuda"

    def __init__(self, capability):
        self.utils, self.capability = _Utils(), capability

    def get_current_device(self):
        return 0

    def get_device_capability(self, device=None):
        return self.capability


@pytest.fixture
def gpu(monkeypatch):
    def use(capability=(9, 0)):
        monkeypatch.setattr(driver, "_active", _Driver(capability))
    return use


def test_rates_follow_the_properties(gpu):
    gpu()
    assert math.isclose(testing.get_dram_gbps(), 2619000e3 * 5120 * 2 / 8 / 1e9)  # 3352 GB/s
    subcores_times_clock = 132 * 4 * 1980000 * 1e-9
    assert math.isclose(testing.get_max_tensorcore_tflops("float16", 1980000), subcores_times_clock * 512)
    assert math.isclose(testing.get_max_tensorcore_tflops(tl.bfloat16, 1980000), subcores_times_clock * 512)
    assert math.isclose(testing.get_max_tensorcore_tflops(tl.float32, 1980000), subcores_times_clock * 256)
    assert math.isclose(testing.get_max_tensorcore_tflops(tl.int8, 1980000), subcores_times_clock * 1024)
    assert math.isclose(testing.get_max_simd_tflops(tl.float32, 1980000), subcores_times_clock * 32)
    assert math.isclose(testing.get_max_simd_tflops("bf16", 1500000), 132 * 4 * 1500000 * 1e-9 * 64)


def test_torch_dtypes_are_taken(gpu):
    torch = pytest.importorskip("torch")
    gpu()
    assert testing.get_max_tensorcore_tflops(torch.float16, 1e6) == testing.get_max_tensorcore_tflops(tl.float16, 1e6)


def test_dtypes_a_gpu_has_no_rate_for_are_refused(gpu):
    gpu((7, 0))
    with pytest.raises(ValueError, match="knows the dtypes float16 on this GPU, got bf16"):
        testing.get_max_tensorcore_tflops(tl.bfloat16, 1e6)
    gpu()
    with pytest.raises(ValueError, match="get_max_simd_tflops knows the dtypes float32, float16, bfloat16"):
        testing.get_max_simd_tflops(tl.int8, 1e6)


def test_without_a_gpu_the_rates_say_so(monkeypatch):
    monkeypatch.setattr(driver, "_active", None)
    if driver.active.backend == "cuda":
        pytest.skip("a GPU is usable here")
    for call in (lambda: testing.get_dram_gbps(), lambda: testing.get_max_tensorcore_tflops(tl.float16, 1e6),
                 lambda: testing.get_max_simd_tflops(tl.float32, 1e6)):
        with pytest.raises(RuntimeError, match="describes an NVIDIA GPU, and none is usable here"):
            call()


def _fake_nvidia_smi(tmp_path, monkeypatch, body: str):
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")


def test_nvsmi_reads_the_attributes_asked(tmp_path, monkeypatch):
    # The stand-in prints what the real tool prints for --format=csv,noheader,nounits, and records its arguments.
    _fake_nvidia_smi(tmp_path, monkeypatch, f'echo "$@" > {tmp_path}/args\necho "1980, 2619, 250.5"\n')
    assert testing.nvsmi(["clocks.max.sm", "clocks.max.mem", "power.draw"]) == [1980, 2619, 250.5]
    assert (tmp_path / "args").read_text().split() == [
        "-i", "0", "--query-gpu=clocks.max.sm,clocks.max.mem,power.draw", "--format=csv,noheader,nounits"]


def test_nvsmi_errors_are_said(tmp_path, monkeypatch):
    with pytest.raises(TypeError, match="takes a list of nvidia-smi --query-gpu attribute names"):
        testing.nvsmi("clocks.max.sm")
    _fake_nvidia_smi(tmp_path, monkeypatch, 'echo "Field \\"clocks.bogus\\" is not a valid field" >&2\nexit 2\n')
    with pytest.raises(RuntimeError, match="failed: Field \"clocks.bogus\" is not a valid field"):
        testing.nvsmi(["clocks.bogus"])
    _fake_nvidia_smi(tmp_path, monkeypatch, 'echo "[N/A]"\n')
    with pytest.raises(RuntimeError, match=r"gives '\[N/A\]' for clocks.max.sm, not a number"):
        testing.nvsmi(["clocks.max.sm"])
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(RuntimeError, match="needs the nvidia-smi tool"):
        testing.nvsmi(["clocks.max.sm"])
