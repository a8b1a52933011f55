"""Hand-written C++ references (``benchmarks/reference/``), built at bench time.

Each file is compiled with the CPU backend's own compiler and flags
(``tegula._C.cpu_toolchain()``: ``-O3 -march=native -ffp-contract=off``...,
plus SLEEF's vector math when the backend uses it), so a row of Tegula beside
its reference compares code generation, not compilers. The shared objects go
to a temporary folder removed at exit; a reference that does not build makes
its peer unavailable (the reason is logged).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from . import log

SOURCES = Path(__file__).resolve().parents[1] / "reference"


def _build_flags(flags: str) -> list[str]:
    """The backend's flags for a shared object; its link flags (SLEEF) after the source."""
    words = shlex.split(flags)
    return [w for w in words if not w.startswith("-l")], [w for w in words if w.startswith("-l")]


@functools.lru_cache(maxsize=None)
def load(name: str) -> Optional[ctypes.CDLL]:
    """The reference ``benchmarks/reference/NAME.cpp`` built and loaded, or None."""
    try:
        from tegula import _C
        compiler, _identity, flags = _C.cpu_toolchain()
    except Exception as e:  # noqa: BLE001 - no compiler: no reference row
        log(f"reference {name}: no CPU toolchain ({e})")
        return None
    folder = tempfile.mkdtemp(prefix="tegula-bench-ref-")
    atexit.register(shutil.rmtree, folder, True)
    output = os.path.join(folder, f"{name}.so")
    compile_flags, libraries = _build_flags(flags)
    command = [compiler, *compile_flags, str(SOURCES / f"{name}.cpp"), "-o", output, *libraries, "-lpthread"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        log(f"reference {name}: {shlex.join(command)} failed:\n{done.stderr.strip()}")
        return None
    return ctypes.CDLL(output)


def thread_count() -> int:
    """The threads Tegula's CPU pool runs on ($TEGULA_NUM_THREADS, else one per CPU)."""
    text = os.environ.get("TEGULA_NUM_THREADS", "")
    if text.isdigit() and int(text) > 0:
        return min(int(text), 1024)
    return os.cpu_count() or 1
