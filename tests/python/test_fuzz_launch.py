"""The host-side launch fuzzer (tests/fuzz/fuzz_launch.py), short: a few
hundred seeded random launches, each a coded Tegula error or a result
NumPy agrees with, never a crash, an uncoded exception, or a write to a
read-only buffer or outside an array's buffer. The fuzzer runs in a child
process, so a crash is a failure that names the seed.

TEGULA_FUZZ_LAUNCH_SECONDS=600 runs it for that long instead (with the seed
from TEGULA_FUZZ_LAUNCH_SEED, default: a new one, printed)."""

from __future__ import annotations

import ast
import os
import pathlib
import random
import subprocess
import sys

FUZZER = pathlib.Path(__file__).resolve().parents[1] / "fuzz" / "fuzz_launch.py"


def _fuzz(seed: int, *limit: str, timeout: float) -> dict:
    done = subprocess.run([sys.executable, str(FUZZER), "--seed", str(seed), *limit], capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"seed {seed}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_random_launches_fail_cleanly_or_match_numpy():
    seconds = os.environ.get("TEGULA_FUZZ_LAUNCH_SECONDS")
    if seconds:
        seed = int(os.environ.get("TEGULA_FUZZ_LAUNCH_SEED", random.randrange(2**31)))
        print(f"launch fuzzer: seed {seed} for {seconds} s")
        outcomes = _fuzz(seed, "--seconds", seconds, timeout=float(seconds) + 600)
    else:
        outcomes = _fuzz(19, "--launches", "200", timeout=1200)
        assert outcomes["launches"] == 200
    # Both kinds of outcome happen: the run is not all errors.
    assert outcomes["checked"] > 20, outcomes
    assert outcomes["errors"], outcomes
