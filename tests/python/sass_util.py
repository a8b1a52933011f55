"""Reading the SASS of a kernel the CUDA backend compiled, without a GPU.

`sass_of(kernel, signature, arch, cache_dir)` compiles a @jit kernel of a
Python file through the `tegula` CLI (NVRTC: source -> PTX -> cubin, the very
image a launch loads), takes the cubin from the kernel cache entry the CLI
wrote, and disassembles it with the first disassembler that reads it. Tests
skip, saying why, when NVRTC cannot be loaded or no disassembler is found.

Disassemblers are looked for, in this order: `cuobjdump` and `nvdisasm` on
PATH; in `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin` and
`/usr/local/cuda-*/bin` (newest first); in pip's NVIDIA wheels on sys.path
(`nvidia/cu13/bin`, `nvidia/cuda_cuobjdump/bin`, `nvidia/cuda_nvdisasm/bin`);
and in the copies Triton ships (`triton/backends/nvidia/bin`).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from cuda_compile_util import compile_for_cuda

TOOLS = ("cuobjdump", "nvdisasm")
_WHEEL_BINS = ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cuda_nvdisasm/bin")


def _toolkit_bins() -> list[str]:
    bins = [os.path.join(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    bins.append("/usr/local/cuda/bin")
    versioned = glob.glob("/usr/local/cuda-*/bin")
    versioned.sort(key=lambda p: [int(x) for x in p.split("cuda-")[1].split("/")[0].split(".") if x.isdigit()],
                   reverse=True)
    return bins + versioned


def _package_bins() -> list[str]:
    bins = [os.path.join(entry, sub) for entry in sys.path if entry for sub in _WHEEL_BINS]
    # Located without importing Triton (slow, and not needed to run its tools).
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        bins += [os.path.join(loc, "backends", "nvidia", "bin") for loc in spec.submodule_search_locations]
    return bins


def find_disassemblers() -> list[str]:
    """Every cuobjdump / nvdisasm found, best first, without duplicates."""
    found = []
    for tool in TOOLS:
        on_path = shutil.which(tool)
        if on_path:
            found.append(on_path)
    for folder in _toolkit_bins() + _package_bins():
        for tool in TOOLS:
            candidate = os.path.join(folder, tool)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found.append(candidate)
    unique, seen = [], set()
    for path in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append(path)
    return unique


def disassemble(cubin: pathlib.Path) -> str:
    """The SASS of `cubin` from the first disassembler that reads it; skips when
    none is found or none can read it (a toolkit older than the cubin's arch)."""
    tools = find_disassemblers()
    if not tools:
        pytest.skip("no cuobjdump or nvdisasm found (PATH, CUDA_HOME, /usr/local/cuda*, pip NVIDIA wheels, "
                    "Triton's bundled tools)")
    failures = []
    for tool in tools:
        args = [tool, "-sass", str(cubin)] if os.path.basename(tool) == "cuobjdump" else [tool, str(cubin)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout
        failures.append(f"{tool}: exit {done.returncode}: {done.stderr.strip()[:200]}")
    pytest.skip("no disassembler could read the cubin: " + "; ".join(failures))


def sass_of(kernel, signature: str, arch: int, cache_dir: pathlib.Path, num_warps: int = 4) -> str:
    """The SASS of `kernel` specialized by `signature` (the CLI's syntax) for sm_`arch`
    (sm_90a from 90 on), as NVRTC compiled it into the kernel cache."""
    cache_dir = pathlib.Path(cache_dir)
    compile_for_cuda(kernel, signature, arch, cache_dir, emit="ptx", num_warps=num_warps)
    cubins = sorted(cache_dir.glob("*.cubin"))
    assert len(cubins) == 1, f"expected one cubin in a fresh cache, found {[c.name for c in cubins]}"
    return disassemble(cubins[0])
