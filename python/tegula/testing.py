"""Checking and timing kernels: ``assert_close``, ``do_bench`` and ``perf_report`` sweeps."""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["assert_close", "do_bench", "perf_report", "Benchmark", "Mark", "nvsmi", "get_dram_gbps",
           "get_max_tensorcore_tflops", "get_max_simd_tflops"]

# Default (atol, rtol) per floating dtype: what one rounding step of that
# format allows, as torch.testing uses them. Integers and bools compare exactly.
_TOLERANCES = {
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "float32": (1e-5, 1.3e-6),
    "float64": (1e-7, 1e-7),
    "complex64": (1e-5, 1.3e-6),
    "complex128": (1e-7, 1e-7),
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
    two); integers and bools must match exactly, and so must infinities (an
    infinite expected value allows no tolerance). Complex values compare as
    complex numbers. The message gives the number of mismatches and the worst
    absolute and relative errors with their index.
    """
    a, a_name = _as_numpy(actual)
    e, e_name = _as_numpy(expected)
    for array, name in ((a, "actual"), (e, "expected")):
        if array.dtype.kind not in "biufc" and array.dtype.name != "bfloat16":
            raise TypeError(f"assert_close compares numbers; the {name} value has dtype {array.dtype}")
    if a.shape != e.shape and e.shape != () and a.shape != ():
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    a, e = np.broadcast_arrays(a, e)
    atol, rtol = _tolerances((a_name, e_name), atol, rtol)

    if _is_exact(a) and _is_exact(e):
        ok = a == e
        a64 = a.astype(np.float64)
        e64 = e.astype(np.float64)
    else:
        wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64
        a64 = a.astype(wide)
        e64 = e.astype(wide)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (a64 == e64) | (np.isfinite(e64) & (np.abs(a64 - e64) <= atol + rtol * np.abs(e64)))
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
    if ok.all():
        return

    bad = ~ok
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_err = np.where(bad, np.abs(a64 - e64), 0.0)
        rel_err = np.where(bad, abs_err / np.abs(e64), 0.0)
    abs_err = np.nan_to_num(abs_err, nan=np.inf, posinf=np.inf)
    rel_err = np.nan_to_num(rel_err, nan=np.inf, posinf=np.inf)
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

    def interleaved(self, fns, reps: int, setup=None) -> list:
        """Runs the callables round-robin (A, B, A, B, ...) `reps` times; returns each
        one's milliseconds per call, a list of `reps` samples per callable.
        ``setup()``, when given, runs before each call's flush, untimed."""
        cuda = self._torch.cuda
        pairs = [[] for _ in fns]
        for _ in range(reps):
            for i, fn in enumerate(fns):
                if setup is not None:
                    setup()
                self._flush.zero_()
                start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                pairs[i].append((start, end))
        cuda.synchronize()
        return [[start.elapsed_time(end) for start, end in calls] for calls in pairs]


class HostTimer:
    """CudaTimer's interface on the host clock (``perf_counter``), for callables
    that finish before they return (the CPU backend, torch on the CPU)."""

    def interleaved(self, fns, reps: int, setup=None) -> list:
        samples = [[] for _ in fns]
        for _ in range(reps):
            for i, fn in enumerate(fns):
                if setup is not None:
                    setup()
                start = time.perf_counter()
                fn()
                samples[i].append((time.perf_counter() - start) * 1e3)
        return samples


def _bench_device(device) -> str:
    """The backend whose kernels `fn` runs (a backend's name, as torch names
    devices): the given one, else the CUDA backend once this process has used
    CUDA through torch, else the host backend."""
    from . import _C

    names = _C.backends()
    if device is not None:
        if device not in names:
            raise ValueError(f"device must be {', '.join(map(repr, names))} or None, got {device!r}")
        return device
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return "cuda"  # torch names CUDA devices as the registry names the CUDA backend
    return names[0]


_RETURN_MODES = ("min", "max", "mean", "median", "all")


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean",
             device=None, measure_time_with_hooks=None):
    """Time ``fn()`` in milliseconds, as ``triton.testing.do_bench`` does.

    ``warmup`` and ``rep`` are time budgets in ms: a first estimate of one
    call sets how many calls fill each. On the GPU (``device="cuda"``) every
    repetition is timed with CUDA events on torch's current stream after a
    256 MB buffer is zeroed, so it starts with a cold L2; on the CPU
    (``"cpu"``) with the host's ``perf_counter``. The default picks ``"cuda"``
    when this process has already used CUDA through torch. ``grad_to_none``:
    tensors whose ``.grad`` is reset before each call (untimed).
    ``measure_time_with_hooks`` (Triton-CPU's switch to host timing) is
    accepted and changes nothing: CPU runs are always timed on the host.

    Returns the ``return_mode`` statistic of the samples ("min", "max",
    "mean", "median", or "all" for the list of samples), or, when
    ``quantiles`` is given, the list of those quantiles (a single float for
    a single quantile).
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    if quantiles is not None:
        quantiles = [float(q) for q in np.atleast_1d(quantiles)]
        if not quantiles or any(not 0.0 <= q <= 1.0 for q in quantiles):
            raise ValueError(f"quantiles must lie in [0, 1], got {quantiles!r}")

    if grad_to_none is not None:
        grad_to_none = list(grad_to_none) if isinstance(grad_to_none, (list, tuple)) else None
        if grad_to_none is None or not all(hasattr(t, "grad") for t in grad_to_none):
            raise TypeError("grad_to_none must be a list of tensors whose .grad is reset before each call")

    def reset_grads():
        for tensor in grad_to_none:
            tensor.grad = None

    setup = reset_grads if grad_to_none is not None else None
    times = np.asarray(bench_samples(fn, warmup, rep, device=device, setup=setup))
    return summarize(times, quantiles, return_mode)


def summarize(times, quantiles=None, return_mode="mean"):
    """The statistic do_bench returns for a list of samples (see do_bench)."""
    times = np.asarray(times, dtype=np.float64)
    if quantiles is not None:
        values = np.atleast_1d(np.quantile(times, quantiles)).tolist()
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times.tolist()
    return float(getattr(np, return_mode)(times))


def bench_samples(fn, warmup=25, rep=100, device=None, setup=None) -> list:
    """The per-call times (ms) do_bench summarizes. ``setup()``, when given,
    runs before every call and is never timed (the autotuner restores the
    arguments a kernel updates in place with it), but counts against the
    ``warmup`` and ``rep`` budgets, as Triton's estimate counts it: a 1 us
    kernel restoring a 512 MB argument runs a few times, not 10^5."""
    if not callable(fn):
        raise TypeError(f"the function to time must be callable, got {type(fn).__name__}")
    for name, budget in (("warmup", warmup), ("rep", rep)):
        if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget < float("inf"):
            raise ValueError(f"{name} must be a time budget in ms >= 0, got {budget!r}")
    from . import _C

    # Device kernels are queued: only the device's own events time them.
    if _C.backend_kind(_bench_device(device)) == "device":
        return _cuda_samples(fn, warmup, rep, setup)
    return _host_samples(fn, warmup, rep, setup)


def _host_samples(fn, warmup, rep, setup) -> list:
    def timed() -> float:
        if setup is not None:
            setup()
        begin = time.perf_counter()
        fn()
        return (time.perf_counter() - begin) * 1e3

    timed()  # the first call may compile
    # Five calls estimate a call's time, as Triton's do_bench does, unless the calls so far have spent
    # the whole budget: a kernel of seconds (a CPU run of a GPU-sized autotuning problem) then needs no
    # more estimate and no warm-up beyond the calls already made, only its timed call.
    started, estimate_calls, spent_ms, budget_spent = time.perf_counter(), 0, 0.0, False
    while estimate_calls < 5 and not budget_spent:
        timed()
        estimate_calls += 1
        spent_ms = (time.perf_counter() - started) * 1e3  # setup included
        budget_spent = warmup + rep > 0 and spent_ms >= warmup + rep
    call_ms = max(spent_ms / estimate_calls, 1e-6)
    for _ in range(0 if budget_spent else max(1, int(warmup / call_ms))):
        timed()
    return [timed() for _ in range(max(1, int(rep / call_ms)))]


def _cuda_samples(fn, warmup, rep, setup) -> list:
    import torch

    timer = CudaTimer()
    if setup is not None:
        setup()
    fn()  # the first call may compile
    torch.cuda.synchronize()
    started = time.perf_counter()
    estimate_ms = max(sum(timer.interleaved([fn], 5, setup)[0]) / 5, 1e-6)
    if setup is not None:  # the budgets count the setup too
        estimate_ms = max(estimate_ms, (time.perf_counter() - started) * 1e3 / 5)
    for _ in range(max(1, int(warmup / estimate_ms))):
        if setup is not None:
            setup()
        fn()
    return timer.interleaved([fn], max(1, int(rep / estimate_ms)), setup)[0]


from ._gpu_rates import get_dram_gbps, get_max_simd_tflops, get_max_tensorcore_tflops, nvsmi  # noqa: E402, F401
from ._perf_report import Benchmark, Mark, perf_report  # noqa: E402  (re-exported, as in Triton)
