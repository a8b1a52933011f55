"""Where a compiled training step of examples/train_gpt.py spends its first minutes.

    python tools/hopper/compile_stall_probe.py [--ops tegula] [--layers 6] [--after 45] [--device cpu
                                               --batch 1 --context 128]

Trains one eager step, then 2 steps under torch.compile(fullgraph=True), of the GPU configuration,
dumping every thread's Python stack each `--after` seconds while it runs, and
prints each step's time: a stall shows as the same frames dump after dump.
Each Tegula kernel compiled on the way prints its phases
(TEGULA_PROFILE_COMPILE=1), so a run that compiles kernels the eager
model's disk cache did not hold says which and how long.
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="tegula")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--after", type=float, default=45.0)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, help="default: the GPU configuration's")
    parser.add_argument("--context", type=int, help="default: the GPU configuration's")
    args = parser.parse_args()
    os.environ.setdefault("TEGULA_PROFILE_COMPILE", "1")
    import train_gpt as tg
    config = dataclasses.replace(tg.GPU_CONFIG, layers=args.layers, batch=args.batch or tg.GPU_CONFIG.batch,
                                 context=args.context or tg.GPU_CONFIG.context)
    # One eager step first: the kernels it compiles are the eager model's; any compile printed after
    # "== compiled" is a specialization only the compiled graph asks for.
    faulthandler.dump_traceback_later(args.after, repeat=True)
    for compiled in (False, True):
        print(f"== {'compiled' if compiled else 'eager'}", flush=True)
        start = time.perf_counter()
        steps = args.steps if compiled else 1
        tg.train(config, args.ops, steps=steps, compile=compiled, log_every=1, device=args.device)
        print(f"{steps} {'compiled' if compiled else 'eager'} step(s) in {time.perf_counter() - start:.1f} s",
              flush=True)
    faulthandler.cancel_dump_traceback_later()


if __name__ == "__main__":
    main()
