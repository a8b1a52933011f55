"""The host cost of one launch (the ``launch`` rows), on the GPU and on the CPU.

The kernel is axpy (examples/axpy.py) on one element: three arrays, a float,
an int and a constexpr, a typical small kernel's argument list, which is what
the host cost of a launch depends on. Variants:

- ``tegula``: ``kernel[grid](...)``, the whole launch path (binding,
  specialization, the cache lookup, the launch);
- ``raw``: the bare launch of the compiled kernel that launch returns
  (``CompiledKernel.launch``, on the GPU with torch's current stream) with its arguments
  already converted: no binding, the floor under the ``tegula`` row (as
  tools/launch_overhead.py's "tegula raw");
- on the GPU also ``triton`` (the Triton twin's ``kernel[grid](...)``) and
  ``torch`` (``torch.add``: torch's own launch path, for scale).

Timed in bursts of LAUNCH_BURST launches that start with the device idle
(synchronized before the clock starts) and stop the clock before
synchronizing: a burst is shorter than the driver's launch queue, so the host
never waits for the GPU and the time is the host's alone. (A long
back-to-back loop measures the slower of the host and the GPU: on some of
these machines the GPU retires one tiny kernel per 7 us, more than the host
needs to queue one.) `launches` per round in bursts, rounds alternating
between the variants; a variant's samples are its bursts' per-launch times.
On the CPU a launch returns when its grid is done, so nothing is synchronized.
"""

from __future__ import annotations

import time
from typing import Callable

from . import gpu_workloads, log, triton_twin
from .kernels import axpy
from .outcome import Outcome, describe_error

LAUNCHES = 10_000
# Launches per timed burst: well under the driver's queue of pending launches.
LAUNCH_BURST = 200


def measure_launch(torch, variants, launches: int, rounds: int, num_warps: int) -> list:
    """Outcomes (ms per launch) of the selected GPU variants: tegula, raw, triton, torch."""
    device = gpu_workloads.DEVICE
    x = torch.ones(1, device=device)
    y = torch.full((1,), 2.0, device=device)

    def tegula_launch(out, kernel=axpy.axpy_kernel):
        return lambda: kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=num_warps)

    def raw_launch(out):
        # The kernel the tegula variant launches, with the same options; the
        # stream is torch's current one, where a kernel[grid] launch queues it.
        kernel = tegula_launch(out)()
        args = _runtime_args(kernel, x_ptr=x.data_ptr(), y_ptr=y.data_ptr(), out_ptr=out.data_ptr(), alpha=3.0, n=1)
        stream, index = torch.cuda.current_stream().cuda_stream, x.get_device()
        return lambda: kernel.launch((1, 1, 1), args, stream, index)

    def triton_launch(out):
        return tegula_launch(out, triton_twin.load(axpy).axpy_kernel)

    def torch_launch(out):  # out = 3 * x + y in one op
        return lambda: torch.add(y, x, alpha=3.0, out=out)

    builders = {"tegula": tegula_launch, "raw": raw_launch, "triton": triton_launch, "torch": torch_launch}
    return _measure({name: build for name, build in builders.items() if name in variants},
                    lambda: torch.zeros(1, device=device), torch.cuda.synchronize, launches, rounds)


def measure_cpu_launch(launches: int, rounds: int) -> list:
    """Outcomes (ms per launch) of the tegula and raw variants on the CPU backend (NumPy arrays)."""
    import numpy as np

    x = np.ones(1, np.float32)
    y = np.full(1, 2.0, np.float32)

    def tegula_launch(out, kernel=axpy.axpy_kernel):
        return lambda: kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK)

    def raw_launch(out):
        kernel = tegula_launch(out)()
        args = _runtime_args(kernel, x_ptr=x.ctypes.data, y_ptr=y.ctypes.data, out_ptr=out.ctypes.data, alpha=3.0, n=1)
        return lambda: kernel.launch((1, 1, 1), args)

    return _measure({"tegula": tegula_launch, "raw": raw_launch}, lambda: np.zeros(1, np.float32),
                    lambda: None, launches, rounds)


def _runtime_args(kernel, **values) -> list:
    """The compiled kernel's runtime arguments, converted (addresses for arrays), in
    the order of its parameters: a bare launch binds nothing by name."""
    return [values[name] for name, _, _ in kernel.params]


def _measure(launchers: dict, zeros: Callable, synchronize: Callable, launches: int, rounds: int) -> list:
    """Builds each variant's launch on a zeroed output of its own (``launchers``:
    name -> build(out) -> launch), checks what 100 launches wrote, then times the
    variants in interleaved rounds of bursts."""
    kernels, outcomes = [], []
    for name, build in launchers.items():
        outcome = Outcome(name)
        outcomes.append(outcome)
        try:
            out = zeros()
            launch = build(out)
            for _ in range(100):
                launch()
            synchronize()
            if float(out[0]) != 5.0:  # 3 * 1 + 2
                raise AssertionError(f"the launch wrote {float(out[0])}, expected 5.0")
            outcome.check = "ok"
            kernels.append((outcome, launch))
        except Exception as e:  # noqa: BLE001
            outcome.check, outcome.error = "error", describe_error(e)
            log(f"launch: {name} failed: {outcome.error.splitlines()[0][:200]}")
    bursts = max(1, launches // LAUNCH_BURST)
    log(f"launch: {len(kernels)} variants x {rounds} rounds of {bursts} bursts of {LAUNCH_BURST} launches")
    for _ in range(rounds):
        for outcome, launch in kernels:
            if outcome.check == "error":
                continue
            try:
                for _ in range(bursts):
                    synchronize()
                    start = time.perf_counter()
                    for _ in range(LAUNCH_BURST):
                        launch()
                    outcome.samples.append((time.perf_counter() - start) / LAUNCH_BURST * 1e3)
                synchronize()
            except Exception as e:  # noqa: BLE001
                outcome.check, outcome.error = "error", f"while timing: {describe_error(e)}"
                outcome.samples = []
    return outcomes
