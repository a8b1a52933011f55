"""The machine a report was measured on: the CPU (model, last-level cache, load,
NumPy's BLAS and thread settings) and the GPU (device, driver, library
versions, the commit measured)."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path
from typing import Optional

import numpy as np

from tegula import __version__ as tegula_version
from tegula._floors import last_level_cache, usable_cpus

# --- the CPU -----------------------------------------------------------------------------


def load_average() -> Optional[list]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_machine() -> dict:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(), "platform": platform.platform(), "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(), "usable_cpus": usable_cpus(), "llc": last_level_cache(),
        "load_average_start": load_average(),
    }


def _openblas_runtime() -> dict:
    """What the OpenBLAS NumPy loaded reports about itself: the kernel it picked
    (OPENBLAS_CORETYPE overrides that choice) and its thread count."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return {}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        info = {"library": path}
        for suffix in ("64_", "_64", ""):
            for prefix in ("scipy_openblas_", "openblas_"):
                corename = getattr(lib, f"{prefix}get_corename{suffix}", None)
                threads = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                config = getattr(lib, f"{prefix}get_config{suffix}", None)
                if corename is None or threads is None:
                    continue
                corename.restype = ctypes.c_char_p
                info["corename"] = corename().decode()
                info["threads"] = int(threads())
                if config is not None:
                    config.restype = ctypes.c_char_p
                    info["config"] = config().decode().strip()
                return info
    return {}


def describe_software() -> dict:
    """NumPy, its BLAS and thread settings: threadpoolctl when installed, else NumPy's
    build configuration plus what OpenBLAS reports at run time."""
    blas: dict = {}
    try:
        from threadpoolctl import threadpool_info
        blas["threadpoolctl"] = threadpool_info()
        first = next((p for p in blas["threadpoolctl"] if p.get("user_api") == "blas"), None)
        if first:
            blas["summary"] = (f"{first.get('internal_api')} {first.get('version')} "
                               f"{first.get('architecture')}, {first.get('num_threads')} threads")
    except ImportError:
        try:
            config = np.show_config(mode="dicts")
            blas["numpy_config"] = config.get("Build Dependencies", {}).get("blas", {})
        except (TypeError, AttributeError):  # NumPy < 1.25 has no mode="dicts"
            pass
        blas["runtime"] = _openblas_runtime()
        if blas["runtime"]:
            rt = blas["runtime"]
            blas["summary"] = f"OpenBLAS {rt.get('corename', '?')} kernels, {rt.get('threads', '?')} threads"
        elif blas.get("numpy_config"):
            blas["summary"] = str(blas["numpy_config"].get("name", "unknown"))
    env_names = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "OMP_NUM_THREADS",
                 "OMP_WAIT_POLICY",
                 "MKL_NUM_THREADS",
                 "TEGULA_NUM_THREADS", "CXX")
    return {"python": platform.python_version(), "numpy": np.__version__, "tegula": tegula_version,
            "blas": blas, "env": {k: os.environ[k] for k in env_names if k in os.environ}}



# --- the GPU ------------------------------------------------------------------------------


def driver_version() -> Optional[str]:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines:
            return lines[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def commit() -> str:
    """GPU_CHECK_COMMIT when set (the GPU machine's copy of the tree has no .git), else git's HEAD."""
    given = os.environ.get("GPU_CHECK_COMMIT", "").strip()
    if given:
        return given
    root = str(Path(__file__).resolve().parents[2])
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD"], capture_output=True,
                               timeout=30).returncode != 0
        return head.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def versions(torch) -> dict:
    import numpy
    try:
        import triton
        triton_version = triton.__version__
    except Exception:  # noqa: BLE001 - a broken Triton is reported as missing, the run goes on
        triton_version = None
    return {"torch": torch.__version__, "triton": triton_version, "tegula": tegula_version,
            "cuda": torch.version.cuda, "python": platform.python_version(), "numpy": numpy.__version__}


def describe_device(torch) -> dict:
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return {"index": index, "name": props.name, "arch": f"sm_{props.major}{props.minor}",
            "multiprocessors": props.multi_processor_count, "memory_bytes": props.total_memory}

