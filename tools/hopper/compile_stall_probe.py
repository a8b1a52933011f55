"""Where a compiled training step of examples/train_gpt.py spends its first minutes.

    python tools/hopper/compile_stall_probe.py [--ops tegula] [--layers 6] [--after 45]

Trains 2 steps of the GPU configuration under torch.compile(fullgraph=True),
dumping every thread's Python stack each `--after` seconds while it runs, and
prints each step's time: a stall shows as the same frames dump after dump.
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
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
    args = parser.parse_args()
    import train_gpt as tg
    config = dataclasses.replace(tg.GPU_CONFIG, layers=args.layers)
    faulthandler.dump_traceback_later(args.after, repeat=True)
    start = time.perf_counter()
    tg.train(config, args.ops, steps=args.steps, compile=True, log_every=1, device="cuda")
    faulthandler.cancel_dump_traceback_later()
    print(f"{args.steps} compiled steps in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
