"""Shared setup for the Python tests.

Kernels compiled by one test run are reused by the next through a repo-local
disk cache (unless TEGULA_CACHE_DIR says otherwise), and the examples are
importable so tests exercise the very kernels the examples show.
"""

import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

os.environ.setdefault("TEGULA_CACHE_DIR", str(REPO / ".cache" / "tegula"))
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
