"""The machine's floors: copy bandwidth and matrix rate, measured once per
device and kept on disk next to the kernel cache (``<cache>/floors/``).

The measurements are the benchmark's (``python -m tegula.bench`` imports them
from here): on the CPU the copy rate of a large ``np.copyto`` (one thread and
one thread per usable CPU, the faster; read + written bytes per second) and
NumPy's float32 BLAS matmul rate; on a CUDA device the rate of a
device-to-device ``copy_`` and of a bf16 ``torch.matmul``. Each is the
fastest of several runs: noise only ever slows a run down, and a floor is
what the machine can do. docs/profiling.md says how to measure them again.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

from . import _C

# The sizes the cached floors are measured at: a copy well beyond the
# last-level caches of current CPUs and GPUs (on the CPU, cpu_copy_bytes()),
# and a matmul large enough to reach the BLAS's (or cuBLAS's) peak.
CPU_COPY_MIN_BYTES = 256 << 20
CPU_MATMUL_SIZE = 2048
GPU_COPY_BYTES = 1 << 30
GPU_MATMUL_SIZE = 8192


@dataclass
class Floors:
    device: str             # "cpu: <model>, N CPUs" or "cuda: <name>"
    bytes_per_s: float      # copy bandwidth, read + written bytes per second
    flops_per_s: float      # matrix rate
    copy: str               # how each was measured, for the report
    matrix: str
    cache_bytes: int = 0    # the last-level cache: data smaller than it need not reach DRAM


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _parse_size(text: str) -> Optional[int]:
    text = text.strip().upper().replace("IB", "").replace("B", "")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        if text and text[-1] in scale:
            return int(float(text[:-1]) * scale[text[-1]])
        return int(text)
    except ValueError:
        return None


def last_level_cache() -> dict:
    """The largest-level data/unified cache of CPU 0: sysfs, else lscpu, else a stated guess."""
    best = None
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(root)):
            if not entry.startswith("index"):
                continue

            def read(name, entry=entry):
                with open(os.path.join(root, entry, name)) as f:
                    return f.read().strip()

            if read("type") == "Instruction":
                continue
            level, size = int(read("level")), _parse_size(read("size"))
            if size and (best is None or level > best["level"]):
                best = {"level": level, "bytes": size, "source": f"{root}/{entry}"}
    except (OSError, ValueError):
        best = None
    if best:
        return best
    try:
        import subprocess
        text = subprocess.run(["lscpu", "--caches=NAME,LEVEL,ONE-SIZE", "--bytes"],
                              capture_output=True, text=True, timeout=10).stdout
        for line in text.splitlines()[1:]:
            name, level, size = line.split()[:3]
            if "i" not in name[1:] and (best is None or int(level) > best["level"]):
                best = {"level": int(level), "bytes": int(size), "source": "lscpu"}
    except (OSError, ValueError, IndexError):
        best = None
    return best or {"level": 3, "bytes": 32 << 20, "source": "unknown; assumed 32 MiB"}


def _time_once_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def cpu_copy_bytes() -> int:
    """The size of the CPU copy floor: twice the last-level cache, at least
    CPU_COPY_MIN_BYTES. A copy that fits the cache measures the cache, and
    on some machines one of about the cache's size runs at half the rate a
    larger one reaches on every core. kernel.report and the benchmark both
    measure at this size, so their floors agree."""
    return max(2 * last_level_cache()["bytes"], CPU_COPY_MIN_BYTES)


def measure_copy_bandwidth(nbytes: int, reps: int) -> dict:
    """Copy rate of a large np.copyto, in bytes (read + written) per second.

    NumPy copies on one thread while the kernels use every core, so the copy
    also runs split over one thread per usable CPU (NumPy releases the GIL
    while copying); the faster of the two is the floor's bandwidth.
    """
    from concurrent.futures import ThreadPoolExecutor

    n = max(1, nbytes // 4)
    src = np.random.default_rng(0).random(n, dtype=np.float32)
    dst = np.empty_like(src)
    threads = usable_cpus()
    bounds = np.linspace(0, n, threads + 1).astype(int)
    chunks = [(dst[lo:hi], src[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]

    with ThreadPoolExecutor(threads) as pool:
        def parallel_copy():
            list(pool.map(lambda pair: np.copyto(*pair), chunks))

        def single_copy():
            np.copyto(dst, src)

        single, parallel = [], []
        single_copy(), parallel_copy()
        for _ in range(reps):  # interleaved like the workloads
            single.append(_time_once_ms(single_copy))
            parallel.append(_time_once_ms(parallel_copy))
    moved = 2 * src.nbytes
    single_bw = moved / (min(single) / 1e3)
    parallel_bw = moved / (min(parallel) / 1e3)
    return {"bytes_per_copy": moved, "threads": threads,
            "single_thread_bytes_per_s": single_bw, "all_threads_bytes_per_s": parallel_bw,
            "bytes_per_s": max(single_bw, parallel_bw)}


def measure_peak_flops(size: int, reps: int) -> dict:
    """NumPy's float32 BLAS matmul rate at size^3 (fastest run): the practical peak of this CPU."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    out = np.empty((size, size), dtype=np.float32)
    np.matmul(a, b, out=out)
    samples = [_time_once_ms(lambda: np.matmul(a, b, out=out)) for _ in range(reps)]
    return {"shape": f"{size}x{size}x{size}", "dtype": "float32",
            "flops_per_s": 2 * size ** 3 / (min(samples) / 1e3)}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            match = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.MULTILINE)
            if match:
                return match.group(1).strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str) -> str:
    if device == "cuda":
        import torch
        return f"cuda: {torch.cuda.get_device_name(torch.cuda.current_device())}"
    return f"cpu: {_cpu_name()}, {usable_cpus()} CPUs"


def _measure_cpu() -> Floors:
    nbytes = cpu_copy_bytes()
    copy = measure_copy_bandwidth(nbytes, 7)
    peak = measure_peak_flops(CPU_MATMUL_SIZE, 5)
    return Floors(device_name("cpu"), copy["bytes_per_s"], peak["flops_per_s"],
                  f"np.copyto of {nbytes >> 20} MiB on {copy['threads']} threads",
                  f"NumPy BLAS float32 matmul {peak['shape']}", last_level_cache()["bytes"])


def _measure_cuda() -> Floors:
    import torch

    from .testing import do_bench

    src = torch.empty(GPU_COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = do_bench(lambda: dst.copy_(src), return_mode="min", device="cuda")
    del src, dst
    a = torch.randn(GPU_MATMUL_SIZE, GPU_MATMUL_SIZE, dtype=torch.bfloat16, device="cuda")
    b = torch.randn_like(a)
    matmul_ms = do_bench(lambda: torch.matmul(a, b), return_mode="min", device="cuda")
    size = GPU_MATMUL_SIZE
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
    return Floors(device_name("cuda"), 2 * GPU_COPY_BYTES / (copy_ms / 1e3), 2 * size ** 3 / (matmul_ms / 1e3),
                  f"torch copy_ of {GPU_COPY_BYTES >> 20} MiB", f"torch.matmul bf16 {size}x{size}x{size}", l2)


def _path(device: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", device_name(device))
    return os.path.join(_C.cache_directory(_C.CompileOptions()), "floors", name + ".json")


def cached_floors(device: str = "cpu") -> Floors | None:
    """The floors of `device` as the cache holds them, or None (never measured, or a file that does not
    parse: a miss, measured again by ``floors``)."""
    try:
        with open(_path(device)) as f:
            return Floors(**json.load(f))
    except (OSError, ValueError, TypeError, RecursionError):
        return None


def floors(device: str = "cpu", remeasure: bool = False) -> Floors:
    """The floors of `device` ("cpu" or "cuda"): read from the cache, else
    measured (some seconds) and written there."""
    path = _path(device)
    if not remeasure:
        cached = cached_floors(device)
        if cached is not None:
            return cached
    print(f"tegula: measuring the floors of {device_name(device)} (copy bandwidth, matrix rate), once: "
          f"cached in {path}", file=sys.stderr)
    measured = _measure_cuda() if device == "cuda" else _measure_cpu()
    return _publish(path, measured, replace=remeasure)


def _publish(path: str, measured: Floors, replace: bool = False) -> Floors:
    """Writes `measured` to `path` and returns the floors every process will read
    from there. Without `replace` the first writer wins: processes that measured at
    the same time (pytest workers on a fresh cache) all return what the first one
    wrote, so no two of them compare against different floors."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False) as f:
            json.dump(asdict(measured), f, indent=1)
        try:
            if replace:
                os.replace(f.name, path)
                return measured
            os.link(f.name, path)  # fails if another process published first
        except FileExistsError:
            with open(path) as published:
                return Floors(**json.load(published))
        except OSError:  # no hard links on this file system: the last writer wins
            os.replace(f.name, path)
        finally:
            if os.path.exists(f.name):
                os.unlink(f.name)
    except (OSError, ValueError, TypeError):
        pass  # a read-only cache, or an unreadable rival: measured again next time
    return measured
