"""What ``triton.testing`` says of an NVIDIA GPU's peak rates, for host code that sizes or prunes its
configurations by them (a matmul's performance model): ``nvsmi``, ``get_dram_gbps``,
``get_max_tensorcore_tflops`` and ``get_max_simd_tflops``, re-exported by ``tegula.testing``.

The rates are Triton's formulas, not measurements: per multiprocessor four sub-cores, each doing a fixed number of
operations per clock by dtype (the Ampere figures, which Triton applies to Hopper as well), times the clock the
caller gives in kHz. A model that compares configurations by them ranks them as it does under Triton. For the
rates the machine reaches, measure: ``python -m tegula.bench`` reports its floors (docs/profiling.md).
"""

from __future__ import annotations

import shutil
import subprocess

# Operations per clock of one sub-core (a quarter of a multiprocessor), by dtype name: tensor-core products
# (a multiply-add counts two) and plain vector arithmetic, before and from compute capability 8.
_TENSOR_CORE = {"float32": 256, "int32": 256, "float16": 512, "bfloat16": 512, "int8": 1024,
                "float8_e4m3fn": 1024, "float8_e5m2": 1024}
_TENSOR_CORE_BEFORE_8 = {"float16": 256}
_SIMD = {"float32": 32, "float16": 64, "bfloat16": 64}
_SIMD_BEFORE_8 = {"float32": 32, "float16": 64}


def nvsmi(attrs) -> list:
    """The values of ``nvidia-smi --query-gpu`` attributes (``["clocks.max.sm", "clocks.max.mem"]``) of GPU 0,
    as Triton's ``nvsmi`` returns them: numbers (ints where they are whole), in the order asked."""
    if isinstance(attrs, str) or not all(isinstance(a, str) for a in attrs) or not attrs:
        raise TypeError(f"nvsmi takes a list of nvidia-smi --query-gpu attribute names, got {attrs!r}")
    tool = shutil.which("nvidia-smi")
    if tool is None:
        raise RuntimeError("nvsmi needs the nvidia-smi tool of an NVIDIA driver on PATH; none is here")
    command = [tool, "-i", "0", "--query-gpu=" + ",".join(attrs), "--format=csv,noheader,nounits"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"nvsmi: `{' '.join(command)}` failed: {(done.stderr or done.stdout).strip()}")
    fields = [field.strip() for field in done.stdout.strip().splitlines()[0].split(",")]
    return [_number(attr, field) for attr, field in zip(attrs, fields)]


def _number(attr: str, text: str):
    try:
        value = float(text)
    except ValueError:
        raise RuntimeError(f"nvsmi: nvidia-smi gives '{text}' for {attr}, not a number") from None
    return int(value) if value.is_integer() else value


def _properties(device, what: str) -> dict:
    from .runtime import driver

    active = driver.active
    if active.backend != "cuda":
        raise RuntimeError(f"{what} describes an NVIDIA GPU, and none is usable here (the CPU backend is active); "
                           "for this machine's own rates, `python -m tegula.bench` measures its floors")
    return active.utils.get_device_properties(active.get_current_device() if device is None else int(device))


def _capability(device) -> tuple:
    from .runtime import driver

    return driver.active.get_device_capability(device)


def get_dram_gbps(device=None) -> float:
    """The memory's peak bandwidth in GB/s from its clock and bus width (two transfers a clock)."""
    props = _properties(device, "get_dram_gbps")
    return props["mem_clock_rate"] * 1e3 * props["mem_bus_width"] * 2 / 8 / 1e9


def _per_sub_core(table_from_8: dict, table_before_8: dict, dtype, device, what: str) -> int:
    name = _dtype_name(dtype)
    table = table_from_8 if _capability(device)[0] >= 8 else table_before_8
    if name not in table:
        raise ValueError(f"{what} knows the dtypes {', '.join(table)} on this GPU, got {dtype}")
    return table[name]


def get_max_tensorcore_tflops(dtype, clock_rate, device=None) -> float:
    """Tensor-core TFLOP/s of products of `dtype` (a torch or tegula dtype) at `clock_rate` kHz."""
    subcores = _properties(device, "get_max_tensorcore_tflops")["multiprocessor_count"] * 4
    ops = _per_sub_core(_TENSOR_CORE, _TENSOR_CORE_BEFORE_8, dtype, device, "get_max_tensorcore_tflops")
    return subcores * clock_rate * ops * 1e-9


def get_max_simd_tflops(dtype, clock_rate, device=None) -> float:
    """Vector-unit TFLOP/s of `dtype` arithmetic at `clock_rate` kHz."""
    subcores = _properties(device, "get_max_simd_tflops")["multiprocessor_count"] * 4
    ops = _per_sub_core(_SIMD, _SIMD_BEFORE_8, dtype, device, "get_max_simd_tflops")
    return subcores * clock_rate * ops * 1e-9


def _dtype_name(dtype) -> str:
    """'float16' for torch.float16, tl.float16, 'float16' or 'fp16'."""
    text = str(dtype).removeprefix("torch.")
    return {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "i32": "int32", "i8": "int8",
            "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}.get(text, text)
