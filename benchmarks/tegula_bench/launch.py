"""The host cost of one launch (the ``launch`` rows)."""

from __future__ import annotations

import time

from . import gpu_workloads, log, triton_twin
from .kernels import axpy
from .outcome import Outcome, describe_error

LAUNCHES = 10_000
# Launches per timed burst: well under the driver's queue of pending launches.
LAUNCH_BURST = 200


def measure_launch(torch, variants, launches: int, rounds: int, num_warps: int) -> list:
    """Host cost of one launch of a one-element axpy, a kernel with 6 arguments.

    Timed in bursts of LAUNCH_BURST launches that start with the GPU idle
    (synchronized before the clock starts) and stop the clock before
    synchronizing: a burst is shorter than the driver's launch queue, so the
    host never waits for the GPU and the time is the host's alone. (A long
    back-to-back loop measures the slower of the host and the GPU: on some of
    these machines the GPU retires one tiny kernel per 7 us, more than the
    host needs to queue one.) `launches` per round in bursts, rounds
    alternating between the variants; a variant's samples are its bursts'
    per-launch times."""
    x = torch.ones(1, device=gpu_workloads.DEVICE)
    y = torch.full((1,), 2.0, device=gpu_workloads.DEVICE)
    kernels, outcomes = [], []
    for name in ("tegula", "triton", "torch"):
        if name not in variants:
            continue
        outcome = Outcome(name)
        outcomes.append(outcome)
        try:
            out = torch.zeros(1, device=gpu_workloads.DEVICE)
            if name == "torch":  # torch's own launch path, for scale: out = 3 * x + y in one op
                def launch(out=out):
                    torch.add(y, x, alpha=3.0, out=out)
            else:
                module = axpy if name == "tegula" else triton_twin.load(axpy)

                def launch(kernel=module.axpy_kernel, out=out):
                    kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=num_warps)

            for _ in range(100):
                launch()
            torch.cuda.synchronize()
            if float(out[0]) != 5.0:
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
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    for _ in range(LAUNCH_BURST):
                        launch()
                    outcome.samples.append((time.perf_counter() - start) / LAUNCH_BURST * 1e3)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                outcome.check, outcome.error = "error", f"while timing: {describe_error(e)}"
                outcome.samples = []
    return outcomes

