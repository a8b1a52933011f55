"""Timing on the CPU: every peer warmed up and checked against the baseline, then
timed interleaved (A, B, A, B, ...) so that a noisy neighbour or a frequency
change hits all of them alike; and the floors measured in the same run.

Times are medians after warm-up; compilation happens during warm-up and is
not timed. The floors are the speed limits of this machine:

- memory-bound kernels: the bytes the kernel must move over the copy
  bandwidth of a large ``np.copyto`` (read + write bytes per second);
- matmul: the flops over NumPy's BLAS matmul rate, the CPU's practical peak.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tegula.testing import assert_close

from . import log
from .cpu_workloads import BASELINE, Case
from .kernels import matmul
from .machine import usable_cpus


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

