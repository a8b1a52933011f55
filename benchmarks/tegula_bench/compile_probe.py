"""Compile time as a user meets it: the first call of the vector-add kernel in a
fresh process, to its result, for the benchmark's ``compile_cold`` and
``compile_warm`` rows.

    measure("tegula", "cuda", rounds=3) -> {"cold": [s, ...], "warm": [s, ...], "import": [...], "error": None}

Each round makes an empty cache folder and runs two fresh Python processes
against it (``python -m tegula_bench.compile_probe --child ...``): the first call in
the first one compiles everything from nothing (cold: the kernel, and whatever
the compiler builds once per cache, such as Triton's launcher or Tegula's
precompiled prelude), the second finds it all cached (warm). A child imports
its libraries first (reported apart, as ``import``), then times
``vector_add(x, y, out)`` up to the result being ready (a device
synchronize on the GPU) and checks it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 1 << 20
# The folder holding this package: the child imports it as `tegula_bench`.
BENCHMARKS = Path(__file__).resolve().parents[1]


def _child(variant: str, device: str) -> dict:
    started = time.perf_counter()
    import numpy as np

    if device == "cuda":
        import torch
    from .kernels import vector_add

    module = vector_add
    if variant == "triton":
        from . import triton_twin

        module = triton_twin.load(vector_add)
    if device == "cuda":
        x = torch.randn(N, device="cuda")
        y = torch.randn(N, device="cuda")
        out = torch.empty_like(x)
        synchronize = torch.cuda.synchronize
    else:
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
        out = np.empty_like(x)
        synchronize = lambda: None  # noqa: E731 - a CPU launch returns with its result
    synchronize()
    imported = time.perf_counter()
    module.add(x, y, out)
    synchronize()
    first_call = time.perf_counter() - imported
    if device == "cuda":
        correct = bool(torch.equal(out, x + y))
    else:
        correct = bool(np.array_equal(out, x + y))
    return {"first_call_s": first_call, "import_s": imported - started, "correct": correct}


def _run_child(variant: str, device: str, cache: str, timeout_s: float) -> dict:
    # A cold run finds no precompiled prelude (it lives in the cache), and a warm
    # one compiles nothing, so neither uses it: building it after each cold run
    # would only take CPU from the next round.
    env = {**os.environ, "TEGULA_CACHE_DIR": cache, "TRITON_CACHE_DIR": os.path.join(cache, "triton"),
           "TEGULA_CPU_PCH": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(BENCHMARKS), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-m", "tegula_bench.compile_probe", "--child", "--variant", variant,
                           "--device", device], capture_output=True, text=True, timeout=timeout_s, env=env)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"the {variant} probe exited with status {done.returncode}: " + " / ".join(tail))
    result = json.loads(lines[-1])
    if not result["correct"]:
        raise AssertionError(f"the {variant} probe's vector add computed a wrong result")
    return result


def measure(variant: str, device: str, rounds: int = 3, timeout_s: float = 300.0) -> dict:
    """Cold and warm first-call times (seconds) of `variant` ("tegula" or
    "triton") on `device` ("cuda" or "cpu"), one of each per round; `error`
    says why there are none."""
    out = {"cold": [], "warm": [], "import": [], "error": None}
    try:
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(prefix="tegula-compile-probe-") as cache:
                for which in ("cold", "warm"):
                    result = _run_child(variant, device, cache, timeout_s)
                    out[which].append(result["first_call_s"])
                    out["import"].append(result["import_s"])
    except Exception as e:  # noqa: BLE001 - a variant that cannot run is a row saying why
        out["error"] = f"{type(e).__name__}: {e}".strip()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help="time one first call in this process")
    parser.add_argument("--variant", choices=("tegula", "triton"), default="tegula")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.variant, args.device)))
    else:
        print(json.dumps(measure(args.variant, args.device, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
