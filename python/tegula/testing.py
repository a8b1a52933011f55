"""Checking and timing kernels: ``assert_close`` and ``do_bench``."""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["assert_close", "do_bench"]

# Default (atol, rtol) per floating dtype: what one rounding step of that
# format allows, as torch.testing uses them. Integers and bools compare exactly.
_TOLERANCES = {
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "float32": (1e-5, 1.3e-6),
    "float64": (1e-7, 1e-7),
}


def _as_numpy(x):
    """(array, dtype name) of an ndarray, a torch tensor, a DLPack producer or a scalar."""
    if isinstance(x, np.ndarray):
        return x, x.dtype.name
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):  # torch.Tensor
        t = x.detach().cpu()
        name = str(t.dtype).replace("torch.", "")
        if name == "bfloat16":  # NumPy has no bf16 of its own; fp32 holds it exactly
            t = t.float()
        return t.numpy(), name
    if hasattr(x, "__dlpack__") and not isinstance(x, np.generic):
        array = np.from_dlpack(x)
        return array, array.dtype.name
    array = np.asarray(x)
    return array, array.dtype.name


def _tolerances(names, atol, rtol):
    # The least precise operand sets the defaults.
    loosest = max((_TOLERANCES[n] for n in names if n in _TOLERANCES),
                  key=lambda tol: tol[1], default=(0.0, 0.0))
    return (loosest[0] if atol is None else atol), (loosest[1] if rtol is None else rtol)


def _is_exact(array: np.ndarray) -> bool:
    return array.dtype.kind in "biu"


def assert_close(actual, expected, atol=None, rtol=None, equal_nan=True):
    """Asserts ``|actual - expected| <= atol + rtol * |expected|`` elementwise.

    Accepts NumPy arrays (bf16 through ml_dtypes), torch tensors, DLPack
    producers and scalars. Tolerances default by dtype (the less precise of the
    two); integers and bools must match exactly. The message gives the number
    of mismatches and the worst absolute and relative errors with their index.
    """
    a, a_name = _as_numpy(actual)
    e, e_name = _as_numpy(expected)
    if a.shape != e.shape and e.shape != () and a.shape != ():
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    a, e = np.broadcast_arrays(a, e)
    atol, rtol = _tolerances((a_name, e_name), atol, rtol)

    if _is_exact(a) and _is_exact(e):
        ok = a == e
        a64 = a.astype(np.float64)
        e64 = e.astype(np.float64)
    else:
        a64 = a.astype(np.float64)
        e64 = e.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (a64 == e64) | (np.abs(a64 - e64) <= atol + rtol * np.abs(e64))
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
    if ok.all():
        return

    bad = ~ok
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_err = np.where(bad, np.abs(a64 - e64), 0.0)
        rel_err = np.where(bad, abs_err / np.abs(e64), 0.0)
    abs_err = np.nan_to_num(abs_err, nan=np.inf)
    rel_err = np.nan_to_num(rel_err, nan=np.inf)
    worst_abs = np.unravel_index(np.argmax(abs_err), abs_err.shape)
    worst_rel = np.unravel_index(np.argmax(rel_err), rel_err.shape)

    def at(index):
        index = tuple(int(i) for i in index)
        return f"index {index} (actual {a[index]!r}, expected {e[index]!r})"

    tolerance = "exact match" if _is_exact(a) and _is_exact(e) else f"atol={atol:g}, rtol={rtol:g}"
    raise AssertionError(
        f"arrays are not close ({a_name} vs {e_name}, {tolerance}): "
        f"{int(bad.sum())} of {bad.size} elements differ\n"
        f"  greatest absolute difference: {abs_err[worst_abs]:g} at {at(worst_abs)}\n"
        f"  greatest relative difference: {rel_err[worst_rel]:g} at {at(worst_rel)}")


# Bytes written before each timed GPU call so that it starts with a cold L2
# (50 MB on an H100/H200): a kernel timed with its inputs still in L2 would
# measure the cache, not device memory.
L2_FLUSH_BYTES = 256 << 20


class CudaTimer:
    """Times callables on the GPU with CUDA events on torch's current stream,
    writing an L2-sized buffer before each call (the flush is queued before the
    start event, so it is not timed, and it keeps the GPU busy while the host
    queues the timed call)."""

    def __init__(self, flush_bytes: int = L2_FLUSH_BYTES, device="cuda"):
        import torch

        self._torch = torch
        self._flush = torch.empty(max(1, flush_bytes // 4), dtype=torch.int32, device=device)

    def interleaved(self, fns, reps: int) -> list:
        """Runs the callables round-robin (A, B, A, B, ...) `reps` times; returns each
        one's milliseconds per call, a list of `reps` samples per callable."""
        cuda = self._torch.cuda
        pairs = [[] for _ in fns]
        for _ in range(reps):
            for i, fn in enumerate(fns):
                self._flush.zero_()
                start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                pairs[i].append((start, end))
        cuda.synchronize()
        return [[start.elapsed_time(end) for start, end in calls] for calls in pairs]


def _bench_device(device) -> str:
    if device is not None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu', 'cuda' or None, got {device!r}")
        return device
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return "cuda"
    return "cpu"


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="median",
             device=None):
    """Time ``fn()`` in milliseconds.

    ``device="cuda"`` times on the GPU with CUDA events, the L2 cache flushed
    before each call (see CudaTimer); ``"cpu"`` uses the host clock. The default
    picks ``"cuda"`` when this process has already used CUDA through torch.
    ``warmup`` and ``rep`` are time budgets in ms (as in Triton): the number of
    calls is derived from a first estimate. Returns the ``return_mode`` statistic
    ("min", "max", "mean", "median", or "all" for every sample), or the values at
    ``quantiles`` when given (a single float for a single quantile).
    """
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, got {return_mode!r}")

    def run():
        if grad_to_none is not None:
            for tensor in grad_to_none:
                tensor.grad = None
        fn()

    if _bench_device(device) == "cuda":
        samples = _cuda_samples(run, warmup, rep)
    else:
        samples = _host_samples(run, warmup, rep)
    times = np.asarray(samples)
    if quantiles is not None:
        values = np.atleast_1d(np.quantile(times, quantiles)).tolist()
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times.tolist()
    return float(getattr(np, return_mode)(times))


def _host_samples(run, warmup, rep) -> list:
    run()  # the first call may compile
    estimate_calls = 5
    start = time.perf_counter()
    for _ in range(estimate_calls):
        run()
    estimate_ms = max((time.perf_counter() - start) * 1e3 / estimate_calls, 1e-6)
    for _ in range(max(1, int(warmup / estimate_ms))):
        run()
    samples = []
    for _ in range(max(1, int(rep / estimate_ms))):
        begin = time.perf_counter()
        run()
        samples.append((time.perf_counter() - begin) * 1e3)
    return samples


def _cuda_samples(run, warmup, rep) -> list:
    import torch

    timer = CudaTimer()
    run()  # the first call may compile
    torch.cuda.synchronize()
    estimate_ms = max(sum(timer.interleaved([run], 5)[0]) / 5, 1e-6)
    for _ in range(max(1, int(warmup / estimate_ms))):
        run()
    return timer.interleaved([run], max(1, int(rep / estimate_ms)))[0]
