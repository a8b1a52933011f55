"""The autotuned matmul of the GPU benchmark (issue 7): what ``@tegula.autotune``
chooses, against the best config found by hand in the same run.

Both sides tune ``matmul_kernel`` of examples/matmul.py over the same
``CONFIGS`` on the same inputs:

- ``tuned_variant``: the kernel under ``@tegula.autotune`` (nothing read from
  or written to the tuning cache, so the tuning happens in this run); its
  first launch compiles and times every config and keeps the fastest;
- ``best_by_hand``: every config launched directly and timed by the caller's
  ``bench`` (``do_bench``-style: L2 flushed, CUDA events, the median); the
  fastest one is the launcher returned.

Each returns a zero-argument launcher whose ``note`` names the config it
launches; the benchmark times the two interleaved, so "autotuned time / best
time by hand" measures the autotuner's choice, not the noise between runs.
Nothing here needs torch or a GPU: on NumPy arrays both run on the CPU
backend (the tests do that with small tiles).
"""

from __future__ import annotations

import time
from typing import Callable

from tegula import Config, autotune

from .kernels import _host, matmul

# Tiles for a 4096^3 bf16 matmul on an H200 (227 KB of shared memory per
# block, 64K registers per multiprocessor): big tiles with two warpgroups,
# mid-size ones with one and a deeper pipeline, and two small ones that win
# when big tiles leave multiprocessors idle. Every one fits in shared memory
# with its stages (tests/python/test_bench_autotune.py compiles them for sm_90).
CONFIGS = [
    Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
    Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=3),
    Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=3),
]

# The target: the autotuned kernel within 5% of the best config's time.
TARGET = 1.05
WORKLOAD = "matmul_autotune"
BEST_WORKLOAD = "matmul_autotune_best"


def autotuner(configs=None, cache_results: bool = False, **options):
    """``matmul_kernel`` under ``@tegula.autotune`` over ``configs`` (default
    ``CONFIGS``), keyed on the problem shape. ``options`` go to autotune
    (warmup, rep, do_bench)."""
    return autotune(configs=list(configs or CONFIGS), key=["M", "N", "K"],
                    cache_results=cache_results, **options)(matmul.matmul_kernel)


def launcher(kernel, a, b, out, **launch_kwargs) -> Callable:
    """A callable running ``kernel[grid](...)`` for ``out = a @ b`` (returning
    ``out``); ``kernel`` is ``matmul_kernel`` or an autotuner of it,
    ``launch_kwargs`` (kept as its ``kwargs``) the config's meta-parameters
    and launch options."""
    M, K = a.shape
    N = b.shape[1]
    sa, sb, sc = _host.strides(a), _host.strides(b), _host.strides(out)

    def grid(meta):
        return (_cdiv(M, meta["BLOCK_M"]) * _cdiv(N, meta["BLOCK_N"]),)

    def launch():
        kernel[grid](a, b, out, M, N, K, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1], **launch_kwargs)
        return out

    launch.kwargs = launch_kwargs
    return launch


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def short(config: Config) -> str:
    """``128x128x64 G8 w8 s3``: tile, GROUP_M, warps and stages, short enough for a table cell."""
    kw = config.kwargs
    text = f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} G{kw['GROUP_M']}"
    return text + "".join(f" {letter}{value}" for letter, value in (("w", config.num_warps),
                                                                     ("s", config.num_stages)) if value)


def tuned_variant(a, b, out, configs=None, **options) -> Callable:
    """The autotuned launcher, tuned now (its first launch compiles and times
    every config). Attributes: ``tuner``, ``config`` (the choice), ``note``,
    ``num_warps`` (the chosen config's)."""
    tuner = autotuner(configs, **options)
    run = launcher(tuner, a, b, out)
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    timings = tuner.configs_timings or {}
    tried = sum(1 for t in timings.values() if t is not None)
    run.tuner, run.config, run.num_warps = tuner, tuner.best_config, tuner.best_config.num_warps
    run.note = f"chose {short(tuner.best_config)} ({tried} configs timed, tuned in {seconds:.1f} s)"
    return run


def best_by_hand(a, b, out, bench: Callable, configs=None) -> Callable:
    """The launcher of the fastest config, each timed by ``bench(launch) -> ms``.
    A config that fails (compile or run) is skipped and counted in the note;
    RuntimeError when all fail. Attributes: ``config``, ``timings`` ({config:
    ms or the error}), ``note``, ``num_warps``."""
    configs = list(configs or CONFIGS)
    timings, best = {}, None
    for config in configs:
        run = launcher(matmul.matmul_kernel, a, b, out, **config.all_kwargs())
        try:
            ms = float(bench(run))
        except Exception as e:  # noqa: BLE001 - the tuner skips such a config too
            timings[config] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            continue
        timings[config] = ms
        if best is None or ms < best[0]:
            best = (ms, config, run)
    if best is None:
        raise RuntimeError("every matmul config failed when launched by hand: "
                           + "; ".join(f"{c}: {why}" for c, why in timings.items()))
    ms, config, run = best
    failed = sum(1 for v in timings.values() if isinstance(v, str))
    run.config, run.timings, run.num_warps = config, timings, config.num_warps
    run.note = (f"{short(config)} (fastest of {len(configs) - failed} by hand, {ms:.3f} ms"
                + (f"; {failed} failed)" if failed else ")"))
    return run
