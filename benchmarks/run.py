"""The benchmark command: ``python benchmarks/run.py [--cpu | --gpu] [--quick] [--only NAME] ...``.

Tegula's example kernels against their peers and a floor, on the CPU or on a
CUDA GPU, in one command; ``--help`` lists the options and
``docs/benchmarks.md`` explains the reports. The code is the package
``tegula_bench`` beside this file (its ``__init__`` says which file does what).
"""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from tegula_bench.cli import main  # noqa: E402  (needs the folder above on sys.path)

if __name__ == "__main__":
    sys.exit(main())
