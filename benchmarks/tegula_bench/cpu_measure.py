"""Timing on the CPU: every peer warmed up and checked against the baseline, then
timed interleaved (A, B, A, B, ...) so that a noisy neighbour or a frequency
change hits all of them alike; and the floors measured in the same run.

Times are medians after warm-up; compilation happens during warm-up and is
not timed. The floors are the speed limits of this machine:

- memory-bound kernels: the bytes the kernel must move over the copy
  bandwidth of a large ``np.copyto`` (read + write bytes per second);
- matmul: the flops over NumPy's BLAS matmul rate, the CPU's practical peak.

Both measurements are the package's (``tegula._floors``), which
``kernel.report`` caches per device.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tegula._floors import cpu_copy_bytes, measure_copy_bandwidth, measure_peak_flops
from tegula.testing import assert_close

from . import log
from .cpu_workloads import BASELINE, Case


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
        if hasattr(item, "detach"):  # a torch tensor; numpy() has no bfloat16: compared in float32
            item = item.detach().cpu()
            item = (item.float() if str(item.dtype) == "torch.bfloat16" else item).numpy()
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


def measure_floors(cases, quick: bool, when: str) -> dict:
    copy_bytes = (8 << 20) if quick else cpu_copy_bytes()
    log(f"measuring copy bandwidth (np.copyto of {copy_bytes / 2**20:.0f} MiB), {when} the workloads")
    floors = {"when": when, "copy": measure_copy_bandwidth(copy_bytes, 3 if quick else 15),
              "peak": {"flops_per_s": None}}
    if any(c.compute_bound for c in cases):
        log(f"measuring NumPy's BLAS matmul rate (the peak), {when} the workloads")
        floors["peak"] = measure_peak_flops(256 if quick else 2048, 5 if quick else 10)
    return floors
