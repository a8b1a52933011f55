"""``python -m tegula.bench``: Tegula's reference kernels against eager baselines and a floor.

On a machine with a CUDA GPU (PyTorch sees one and Tegula's CUDA runtime
loads), or with ``--gpu``, the kernels run on the GPU beside Triton (the same
kernel source), PyTorch eager, torch.compile and cuBLAS: see ``_bench_gpu``.
``--cpu`` forces the CPU run described here.

Every workload runs each available *peer* (Tegula, NumPy eager, and PyTorch
eager / torch.compile when installed) on the same inputs, checks the outputs
against the baseline, then times the peers interleaved (A, B, A, B, ...) so
that a noisy neighbour or a frequency change hits all of them alike. Times are
medians after warm-up; compilation happens during warm-up and is not timed.

Each row is also compared with a *floor*, the time the work needs at the
speed limits measured in the same run:

- memory-bound kernels: the bytes the kernel must move over the copy
  bandwidth of a large ``np.copyto`` (read + write bytes per second);
- matmul: the flops over NumPy's BLAS matmul rate, the CPU's practical peak.

Memory-bound sizes are chosen so the bytes moved exceed the last-level cache
(read from sysfs), otherwise the floor would measure the cache, not DRAM.

Full runs (and ``--only compile``) add the rows ``compile_cold`` and
``compile_warm``: the vector-add kernel's first call to its result in a fresh
process, with an empty and with a warm kernel cache, in seconds
(``_compile_probe``).
``docs/benchmarks.md`` explains the columns and records measured results.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from . import __version__ as tegula_version
from .kernels import fused_chain, layer_norm, matmul, softmax, vector_add
from .testing import assert_close

WORKLOADS = ("vector_add", "fused_chain", "softmax", "layer_norm", "matmul")
BASELINE = "numpy"  # the eager baseline on a CPU; on a GPU it would be torch eager


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --- peers -----------------------------------------------------------------------
# A peer turns a workload's inputs into a zero-argument callable that runs the
# workload and returns its outputs (arrays or tensors; tuples for several). It
# has one method per workload it implements, named after the workload; a
# missing method means "this peer does not run that workload". Adding a peer
# (Triton on a GPU machine, say) is one more subclass in PEERS.


class Peer:
    name = ""

    def available(self) -> bool:
        return True

    def prepare(self, workload: str, inputs: dict) -> Optional[Callable[[], Any]]:
        build = getattr(self, workload, None)
        return build(**inputs) if build is not None else None


class TegulaPeer(Peer):
    name = "tegula"

    def vector_add(self, x, y):
        out = np.empty_like(x)
        return lambda: vector_add.vector_add(x, y, out)

    def fused_chain(self, x, residual, keep, bias, weight):
        out = np.empty_like(x)
        return lambda: fused_chain.fused_chain(x, residual, keep, bias, weight, out=out)

    def softmax(self, x):
        out = np.empty_like(x)
        return lambda: softmax.softmax(x, out)

    def layer_norm(self, x, weight, bias):
        out = np.empty_like(x)
        return lambda: layer_norm.layer_norm(x, weight, bias, out=out)

    def matmul(self, a, b):
        out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        return lambda: matmul.matmul(a, b, out)


class NumPyPeer(Peer):
    """Eager NumPy, one array operation at a time: what the kernels replace."""

    name = "numpy"

    def vector_add(self, x, y):
        out = np.empty_like(x)
        return lambda: vector_add.vector_add_reference(x, y, out)

    def fused_chain(self, x, residual, keep, bias, weight):
        return lambda: fused_chain.eager_chain(x, residual, keep, bias, weight)

    def softmax(self, x):
        return lambda: softmax.softmax_reference(x)

    def layer_norm(self, x, weight, bias):
        return lambda: layer_norm.layer_norm_reference(x, weight, bias)

    def matmul(self, a, b):
        return lambda: matmul.matmul_reference(a, b)


class TorchPeer(Peer):
    """PyTorch eager on the CPU tensors sharing the NumPy inputs' memory."""

    name = "torch"

    def available(self) -> bool:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False
        return True

    def wrap(self, fn):
        return fn

    def _run(self, fn, *arrays):
        import torch
        tensors = [torch.from_numpy(a) for a in arrays]
        fn = self.wrap(fn)
        return lambda: fn(*tensors)

    def vector_add(self, x, y):
        import torch
        return self._run(torch.add, x, y)

    def fused_chain(self, x, residual, keep, bias, weight):
        return self._run(fused_chain.eager_chain_torch, x, residual, keep, bias, weight)

    def softmax(self, x):
        import torch
        return self._run(lambda t: torch.softmax(t, dim=1), x)

    def layer_norm(self, x, weight, bias):
        import torch.nn.functional as F
        return self._run(lambda t, w, b: F.layer_norm(t, (t.shape[1],), w, b, layer_norm.EPS),
                         x, weight, bias)

    def matmul(self, a, b):
        import torch
        return self._run(torch.matmul, a, b)


class TorchCompilePeer(TorchPeer):
    name = "torch.compile"

    def wrap(self, fn):
        import torch
        return torch.compile(fn)


PEERS = (TegulaPeer(), NumPyPeer(), TorchPeer(), TorchCompilePeer())


# --- workloads -----------------------------------------------------------------------


@dataclass
class Case:
    """One workload at one size: its inputs, the work it must do, and how to check it."""

    workload: str
    shape: str
    dtype: str
    inputs: dict
    bytes: int
    flops: int
    compute_bound: bool = False
    tolerance: tuple = (None, None)  # (atol, rtol) for checking peers against the baseline
    check_rows: Optional[int] = None  # compare only the first/last rows of big outputs
    note: str = ""
    # What NumPy's op-by-op execution moves: eager_bytes / bytes is the speedup
    # fusion should reach on a memory-bound machine (the performance contract).
    eager_bytes: Optional[int] = None


def _rows_beyond(llc: int, bytes_moved: Callable[[int], int], minimum: int,
                 multiple: int = 1024) -> int:
    """The smallest multiple of `multiple` rows (>= minimum) whose bytes moved
    exceed 1.5x the last-level cache, so the data streams from DRAM."""
    row_bytes = bytes_moved(2) - bytes_moved(1)
    rows = -(-int(1.5 * llc) // row_bytes)
    return max(minimum, -(-rows // multiple) * multiple)


def _eager_chain_bytes(M: int, N: int) -> int:
    """fused_chain.eager_bytes at M rows, extrapolated from runs on one and two
    rows (the count is linear in M) instead of running the chain at full size."""
    one, two = (fused_chain.eager_bytes(*fused_chain.make_inputs(m, N)) for m in (1, 2))
    return one + (M - 1) * (two - one)


def build_cases(names, quick: bool, llc: int) -> list[Case]:
    cases = []
    f32 = np.float32
    if "vector_add" in names:
        n = 65_539 if quick else _rows_beyond(llc, lambda n: vector_add.bytes_moved(n, 4), 1 << 24,
                                              multiple=1 << 20)
        cases.append(Case("vector_add", f"n={n}", "float32", dict(zip("xy", vector_add.make_inputs(n))),
                          vector_add.bytes_moved(n, 4), vector_add.flops(n), check_rows=1 << 16,
                          eager_bytes=vector_add.eager_bytes_moved(n, 4)))
    if "fused_chain" in names:
        shapes = [(96, 300)] if quick else [(4096, 4096)]
        if not quick and fused_chain.bytes_moved(4096, 4096, 4) < llc:
            shapes.append((_rows_beyond(llc, lambda m: fused_chain.bytes_moved(m, 4096, 4), 4096), 4096))
        for M, N in shapes:
            x, residual, keep, bias, weight = fused_chain.make_inputs(M, N)
            cases.append(Case("fused_chain", f"{M}x{N}", "float32",
                              dict(x=x, residual=residual, keep=keep, bias=bias, weight=weight),
                              fused_chain.bytes_moved(M, N, 4), 20 * M * N,
                              tolerance=(1e-4, 1e-4), check_rows=256,
                              eager_bytes=_eager_chain_bytes(M, N)))
    if "softmax" in names:
        M, N = (96, 300) if quick else (_rows_beyond(llc, lambda m: softmax.bytes_moved(m, 4096, 4), 4096), 4096)
        cases.append(Case("softmax", f"{M}x{N}", "float32", {"x": softmax.make_inputs(M, N)},
                          softmax.bytes_moved(M, N, 4), softmax.flops(M, N),
                          tolerance=(1e-7, 1e-4), check_rows=256,
                          eager_bytes=softmax.eager_bytes_moved(M, N, 4)))
    if "layer_norm" in names:
        M, N = (96, 300) if quick else (_rows_beyond(llc, lambda m: layer_norm.bytes_moved(m, 4096, 4), 4096), 4096)
        x, weight, bias = layer_norm.make_inputs(M, N)
        cases.append(Case("layer_norm", f"{M}x{N}", "float32", dict(x=x, weight=weight, bias=bias),
                          layer_norm.bytes_moved(M, N, 4), layer_norm.flops(M, N),
                          tolerance=(1e-4, 1e-4), check_rows=256,
                          eager_bytes=layer_norm.eager_bytes_moved(M, N, 4)))
    if "matmul" in names:
        sizes = [(67, np.float32), (67, np.float16)] if quick else \
                [(512, f32), (1024, f32), (1024, np.float16)]
        for size, dtype in sizes:
            a, b = matmul.make_inputs(size, size, size, dtype)
            itemsize = np.dtype(dtype).itemsize
            # Sums of `size` products of unit normals grow like sqrt(size).
            atol = (2e-5 if dtype == f32 else 2e-3) * size ** 0.5 * 8
            cases.append(Case("matmul", f"{size}x{size}x{size}", np.dtype(dtype).name,
                              dict(a=a, b=b), matmul.bytes_moved(size, size, size, itemsize),
                              matmul.flops(size, size, size), compute_bound=True,
                              tolerance=(atol, 1e-3 if dtype == f32 else 1e-2),
                              note="" if dtype == f32 else "fp16 in/out, fp32 accumulate; "
                              "the NumPy baseline widens to fp32 and uses BLAS"))
    return cases


# --- the machine -------------------------------------------------------------------------


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average() -> Optional[list]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


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
    env_names = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "TEGULA_NUM_THREADS", "CXX")
    return {"python": platform.python_version(), "numpy": np.__version__, "tegula": tegula_version,
            "blas": blas, "env": {k: os.environ[k] for k in env_names if k in os.environ}}


# --- measuring -------------------------------------------------------------------------


@dataclass
class Result:
    case: Case
    variant: str
    samples: list = field(default_factory=list)
    check: str = "baseline"
    error: str = ""

    @property
    def median_ms(self) -> Optional[float]:
        return statistics.median(self.samples) if self.samples else None


def _arrays(outputs) -> list:
    items = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    arrays = []
    for item in items:
        if hasattr(item, "detach"):  # a torch tensor
            item = item.detach().cpu().numpy()
        arrays.append(np.asarray(item))
    return arrays


def _check(case: Case, got, want) -> None:
    """Raises AssertionError unless every output matches the baseline's (on sampled rows)."""
    atol, rtol = case.tolerance
    for g, w in zip(_arrays(got), _arrays(want)):
        if case.check_rows and g.ndim >= 1 and g.shape[0] > 2 * case.check_rows:
            g = np.concatenate([g[:case.check_rows], g[-case.check_rows:]])
            w = np.concatenate([w[:case.check_rows], w[-case.check_rows:]])
        assert_close(g, w, atol=atol, rtol=rtol)


def _time_once(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def measure(case: Case, peers, budget_s: float, min_reps: int, max_reps: int) -> list[Result]:
    """Warms up and checks every peer, then times them round-robin; returns one Result each."""
    results, runners = [], []
    baseline_out = None
    # The baseline warms up first so that every other peer can be checked against it.
    for peer in sorted(peers, key=lambda p: p.name != BASELINE):
        result = Result(case, peer.name)
        results.append(result)
        try:
            fn = peer.prepare(case.workload, case.inputs)
            if fn is None:
                results.pop()
                continue
            log(f"{case.workload} {case.shape}: warming up {peer.name}"
                + (" (compiles or loads the kernel)" if peer.name == "tegula" else ""))
            out = fn()  # compiles, on first use
            fn()
            if peer.name == BASELINE:
                baseline_out = out
            elif baseline_out is not None:
                _check(case, out, baseline_out)
                result.check = "ok"
            else:
                result.check = "unchecked"
            del out
        except Exception as e:  # noqa: BLE001 - a failing peer is reported, not fatal
            result.error = f"{type(e).__name__}: {e}".strip()
            result.check = "failed" if isinstance(e, AssertionError) else "error"
            log(f"{case.workload} {case.shape}: {peer.name} failed: {result.error.splitlines()[0]}")
            continue
        runners.append((result, fn))
    baseline_out = None
    if not runners:
        return results
    order = {peer.name: i for i, peer in enumerate(peers)}
    runners.sort(key=lambda runner: order[runner[0].variant])
    results.sort(key=lambda result: order[result.variant])

    # One timed round estimates how many rounds fit the budget.
    first_round = [_time_once(fn) for _, fn in runners]
    reps = int(min(max_reps, max(min_reps, budget_s * 1e3 / max(sum(first_round), 1e-3))))
    log(f"{case.workload} {case.shape}: timing {len(runners)} variants x {reps} rounds, interleaved")
    for _ in range(reps):
        for result, fn in runners:
            result.samples.append(_time_once(fn))
    return results


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
            single.append(_time_once(single_copy))
            parallel.append(_time_once(parallel_copy))
    # The fastest copy, not the median: the floor should be what the machine
    # can do, and noise only ever slows a copy down.
    moved = 2 * src.nbytes
    single_bw = moved / (min(single) / 1e3)
    parallel_bw = moved / (min(parallel) / 1e3)
    return {"bytes_per_copy": moved, "threads": threads,
            "single_thread_bytes_per_s": single_bw, "all_threads_bytes_per_s": parallel_bw,
            "bytes_per_s": max(single_bw, parallel_bw)}


def measure_floors(cases, quick: bool, llc: int, when: str) -> dict:
    copy_bytes = (8 << 20) if quick else max(2 * llc, 256 << 20)
    log(f"measuring copy bandwidth (np.copyto of {copy_bytes / 2**20:.0f} MiB), {when} the workloads")
    floors = {"when": when, "copy": measure_copy_bandwidth(copy_bytes, 3 if quick else 15),
              "peak": {"flops_per_s": None}}
    if any(c.compute_bound for c in cases):
        log(f"measuring NumPy's BLAS matmul rate (the peak), {when} the workloads")
        floors["peak"] = measure_peak_flops(256 if quick else 2048, 5 if quick else 10)
    return floors


def measure_peak_flops(size: int, reps: int) -> dict:
    """NumPy's float32 BLAS matmul rate at size^3 (fastest run): the practical peak of this CPU."""
    a, b = matmul.make_inputs(size, size, size)
    out = np.empty((size, size), dtype=np.float32)
    np.matmul(a, b, out=out)
    samples = [_time_once(lambda: np.matmul(a, b, out=out)) for _ in range(reps)]
    return {"shape": f"{size}x{size}x{size}", "dtype": "float32",
            "flops_per_s": matmul.flops(size, size, size) / (min(samples) / 1e3)}


# --- reporting ---------------------------------------------------------------------------


def make_rows(results: list[Result], floors: dict, llc: int) -> list[dict]:
    rows = []
    baseline = {}
    for r in results:
        if r.variant == BASELINE and r.samples:
            baseline[id(r.case)] = r.median_ms
    for r in results:
        c = r.case
        median = r.median_ms
        rate = floors["peak"]["flops_per_s"] if c.compute_bound else floors["copy"]["bytes_per_s"]
        floor_ms = ((c.flops if c.compute_bound else c.bytes) / rate * 1e3) if rate else None
        base = baseline.get(id(c))
        row = {
            "workload": c.workload, "shape": c.shape, "dtype": c.dtype, "variant": r.variant,
            "baseline": r.variant == BASELINE, "bytes": c.bytes, "flops": c.flops,
            "bound": "compute" if c.compute_bound else "memory", "exceeds_llc": c.bytes > llc,
            "eager_bytes": c.eager_bytes,
            "median_ms": median, "min_ms": min(r.samples) if r.samples else None,
            "max_ms": max(r.samples) if r.samples else None, "samples": len(r.samples),
            "samples_ms": [round(t, 4) for t in r.samples],
            "rate": None, "rate_unit": "GFLOP/s" if c.compute_bound else "GB/s",
            "speedup": None, "floor_ms": floor_ms, "floor_share": None,
            "check": r.check, "error": r.error or None, "note": c.note or None,
        }
        if median:
            row["rate"] = (c.flops if c.compute_bound else c.bytes) / (median / 1e3) / 1e9
            row["floor_share"] = floor_ms / median if floor_ms else None
            if base:
                row["speedup"] = base / median
        rows.append(row)
    return rows


def compile_rows(quick: bool) -> list[dict]:
    """The compile_cold and compile_warm rows (seconds, in ``rate``; the same keys as every row)."""
    from . import _compile_probe

    log("compile: first calls of vector add in fresh processes")
    result = _compile_probe.measure("tegula", "cpu", rounds=1 if quick else 3)
    rows = []
    for which in ("cold", "warm"):
        samples_ms = [s * 1e3 for s in result[which]]
        median = statistics.median(samples_ms) if samples_ms else None
        rows.append({
            "workload": f"compile_{which}", "shape": "vector add, first call", "dtype": "float32",
            "variant": "tegula", "baseline": False, "bytes": None, "flops": None, "bound": None,
            "exceeds_llc": None, "eager_bytes": None, "median_ms": median,
            "min_ms": min(samples_ms) if samples_ms else None, "max_ms": max(samples_ms) if samples_ms else None,
            "samples": len(samples_ms), "samples_ms": [round(t, 1) for t in samples_ms],
            "rate": median / 1e3 if median is not None else None, "rate_unit": "s", "speedup": None,
            "floor_ms": None, "floor_share": None, "check": "error" if result["error"] else "ok",
            "error": result["error"],
            "note": "fresh process, " + ("empty cache" if which == "cold" else "cache warm"),
        })
    return rows


def format_table(rows: list[dict]) -> str:
    header = ("workload", "variant", "time (ms)", "GB/s | GFLOP/s", "speedup", "of floor")
    lines = [header]
    for row in rows:
        name = f"{row['workload']} {row['shape']} {row['dtype']}"
        if row["median_ms"] is None:
            lines.append((name, row["variant"], f"{row['check']}: {(row['error'] or '').splitlines()[0][:60]}",
                          "", "", ""))
            continue
        lines.append((name, row["variant"], f"{row['median_ms']:.3f}",
                      f"{row['rate']:.3f} s" if row["rate_unit"] == "s" else f"{row['rate']:.1f} {row['rate_unit']}",
                      "baseline" if row["baseline"] else
                      (f"{row['speedup']:.2f}x" if row["speedup"] else "-"),
                      f"{100 * row['floor_share']:.0f}%" if row["floor_share"] else "-"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for k, line in enumerate(lines):
        out.append("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(line, widths))).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def parse_args(argv=None):
    from . import _bench_gpu

    parser = argparse.ArgumentParser(prog="python -m tegula.bench", description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gpu", action="store_true",
                       help="run on the CUDA GPU beside Triton, torch, torch.compile and cuBLAS (the "
                            "default when a GPU is usable)")
    where.add_argument("--cpu", action="store_true", help="run on the CPU beside NumPy (and torch)")
    parser.add_argument("--json", metavar="PATH",
                        help="write every result to PATH (on the GPU also the markdown table to PATH "
                             "with .md)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repetitions (for tests; the numbers mean little)")
    parser.add_argument("--only", metavar="NAME", action="append", choices=_bench_gpu.WORKLOADS,
                        help="run only this workload (repeatable): " + ", ".join(_bench_gpu.WORKLOADS)
                             + " (launch: GPU only; compile: cold and warm first calls)")
    parser.add_argument("--budget", type=float, metavar="S",
                        help="seconds of timing per case (default 4 on the CPU, 1.5 on the GPU; 0.2 "
                             "and 0.1 with --quick)")
    gpu = parser.add_argument_group("GPU runs")
    gpu.add_argument("--variant", metavar="NAME", action="append", choices=_bench_gpu.VARIANTS,
                     help="run only this variant (repeatable): " + ", ".join(_bench_gpu.VARIANTS))
    gpu.add_argument("--num-warps", metavar="WORKLOAD=N", action="append",
                     help="warps per program for Tegula and Triton in one workload (repeatable); "
                          "defaults: " + ", ".join(f"{k}={v}" for k, v in _bench_gpu.NUM_WARPS.items()))
    gpu.add_argument("--no-md", action="store_true", help="with --json, do not write the .md beside it")
    gpu.add_argument("--render", metavar="JSON",
                     help="print the table of a saved GPU report and write it beside it as .md; "
                          "measures nothing")
    args = parser.parse_args(argv)
    try:
        _bench_gpu.parse_num_warps(args.num_warps)
    except ValueError as e:
        parser.error(str(e))
    return args


def gpu_usable() -> tuple[bool, str]:
    """(usable, why not): a CUDA GPU that both torch and Tegula's runtime can use."""
    try:
        import torch
    except ImportError:
        return False, "PyTorch is not installed (the GPU run allocates and times through it)"
    if not torch.cuda.is_available():
        return False, "torch.cuda.is_available() is False"
    from . import _device
    available, why = _device.cuda_status()
    return (True, "") if available else (False, f"Tegula's CUDA runtime is not usable: {why}")


def run(names, quick: bool, budget: float, compile_times: bool = False) -> dict:
    """Measures the floors and every workload in `names`; returns the whole report."""
    min_reps, max_reps = (3, 5) if quick else (7, 50)
    machine = describe_machine()
    llc = machine["llc"]["bytes"]
    log(f"{machine['cpu_model']}, {machine['usable_cpus']} usable CPUs, last-level cache "
        f"L{machine['llc']['level']} {llc / 2**20:.0f} MiB ({machine['llc']['source']})")
    software = describe_software()
    log(f"NumPy {software['numpy']}; BLAS: {software['blas'].get('summary', 'unknown')}")
    if software["env"].get("OPENBLAS_CORETYPE"):
        log(f"note: OPENBLAS_CORETYPE={software['env']['OPENBLAS_CORETYPE']} forces OpenBLAS's "
            f"kernel choice; NumPy's matmul (the peak) may be slower than this CPU allows")
    peers = [p for p in PEERS if p.available()]
    log("peers: " + ", ".join(p.name for p in peers))
    cases = build_cases(names, quick, llc)

    # The floors are measured before and after the workloads and the better
    # of the two kept: on a shared machine one of them may catch a busy moment.
    floor_runs = [measure_floors(cases, quick, llc, "before")]
    results = []
    for case in cases:
        results += measure(case, peers, budget, min_reps, max_reps)
        case.inputs = {}  # free the big arrays before the next case
    floor_runs.append(measure_floors(cases, quick, llc, "after"))
    floors = {
        "copy": max((run["copy"] for run in floor_runs), key=lambda copy: copy["bytes_per_s"]),
        "peak": max((run["peak"] for run in floor_runs), key=lambda peak: peak["flops_per_s"] or 0.0),
        "runs": floor_runs,
    }
    rows = make_rows(results, floors, llc)
    if compile_times:
        rows += compile_rows(quick)
    machine["load_average_end"] = load_average()
    return {"schema": "tegula-bench/1", "quick": quick, "machine": machine, "software": software,
            "floors": floors, "rows": rows}


def print_report(report: dict) -> None:
    machine, software, floors = report["machine"], report["software"], report["floors"]
    llc = machine["llc"]
    print(f"Tegula benchmarks, {machine['date']}: {machine['cpu_model']}, "
          f"{machine['usable_cpus']} CPUs, L{llc['level']} {llc['bytes'] / 2**20:.0f} MiB, "
          f"NumPy {software['numpy']} ({software['blas'].get('summary', 'BLAS unknown')})")
    peak = floors["peak"]
    print(f"floor: copy {floors['copy']['bytes_per_s'] / 1e9:.1f} GB/s (np.copyto, read+write), "
          + (f"matmul peak {peak['flops_per_s'] / 1e9:.1f} GFLOP/s (NumPy BLAS {peak['shape']})"
             if peak["flops_per_s"] else "no matmul"))
    print(f"load average: {machine['load_average_start']} at start, "
          f"{machine['load_average_end']} at end")
    print()
    print(format_table(report["rows"]))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.render:
        from . import _bench_gpu
        return _bench_gpu.render(args.render)
    if not args.cpu:
        usable, why = gpu_usable()
        if args.gpu and not usable:
            log(f"--gpu: no usable CUDA GPU: {why}")
            return 2
        if usable:
            from . import _bench_gpu
            return _bench_gpu.main(args)
        log(f"running on the CPU: no usable CUDA GPU ({why})")
    budget = args.budget if args.budget is not None else (0.2 if args.quick else 4.0)
    names = tuple(n for n in (args.only or WORKLOADS) if n in WORKLOADS)
    if args.only and "launch" in args.only:
        log("launch overhead is measured on the GPU only; skipped")
    if args.only and "matmul_autotune" in args.only:
        log("matmul_autotune (autotuned against the best config by hand) is measured on the GPU only; skipped")
    compile_times = "compile" in args.only if args.only else not args.quick
    report = run(names, args.quick, budget, compile_times)
    print_report(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=_json_default)
            f.write("\n")
        log(f"wrote {args.json}")
    return 1 if any(row["check"] in ("failed", "error") for row in report["rows"]) else 0


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


if __name__ == "__main__":
    sys.exit(main())
