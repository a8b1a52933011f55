"""SASS, the GPU's own instructions, of a kernel the CUDA backend compiled:
``compiled.asm["sass"]``, disassembled from its cubin on first use, as
Triton's ``CompiledKernel.asm["sass"]`` is.

Disassemblers are looked for, in this order: ``cuobjdump`` and ``nvdisasm``
on PATH; in ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, ``/usr/local/cuda/bin``
and ``/usr/local/cuda-*/bin`` (newest first); in pip's NVIDIA wheels on
sys.path (``nvidia/cu13/bin``, ``nvidia/cuda_cuobjdump/bin``,
``nvidia/cuda_nvdisasm/bin``); and in the copies Triton ships
(``triton/backends/nvidia/bin``). With none found, or none that reads the
cubin, reading ``asm["sass"]`` raises a KeyError that says so and what to
install.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

TOOLS = ("cuobjdump", "nvdisasm")
_WHEEL_BINS = ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cuda_nvdisasm/bin")


# Triton's names for its compilation stages, which Tegula's kernels do not have.
_TRITON_STAGES = {"ttir": "Triton IR", "ttgir": "TritonGPU IR", "llir": "LLVM IR", "amdgcn": "AMD GCN assembly",
                  "hsaco": "AMD code object", "ttcir": "TritonCPU IR", "tttcir": "TritonCPU IR",
                  "asm": "CPU assembly"}


class _ExplainedKeyError(KeyError):
    def __str__(self) -> str:  # KeyError's own str() quotes the message
        return str(self.args[0]) if self.args else ""


class StageUnavailable(_ExplainedKeyError):
    """``asm[name]`` for one of Triton's stage names; the message gives Tegula's."""


class SassUnavailable(_ExplainedKeyError):
    """``asm["sass"]`` could not be made; the message says why."""


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
    found = [path for path in (shutil.which(tool) for tool in TOOLS) if path]
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


def disassemble(cubin: bytes) -> str:
    """The SASS of `cubin` from the first disassembler that reads it; raises
    SassUnavailable, naming what was tried, when none can."""
    tools = find_disassemblers()
    if not tools:
        raise SassUnavailable(
            "asm['sass'] needs cuobjdump or nvdisasm, and none was found (PATH, CUDA_HOME, /usr/local/cuda*, "
            "pip's NVIDIA wheels, Triton's bundled tools): install the CUDA toolkit, or "
            "`pip install nvidia-cuda-cuobjdump-cu12`")
    failures = []
    with tempfile.TemporaryDirectory(prefix="tegula-sass-") as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        for tool in tools:
            args = [tool, "-sass", path] if os.path.basename(tool) == "cuobjdump" else [tool, path]
            try:
                done = subprocess.run(args, capture_output=True, text=True, timeout=300)
            except (OSError, subprocess.TimeoutExpired) as e:
                failures.append(f"{tool}: {e}")
                continue
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout
            failures.append(f"{tool}: exit {done.returncode}: {done.stderr.strip()[:200]}")
    raise SassUnavailable("asm['sass']: no disassembler could read the cubin (one older than the GPU's "
                          "architecture?): " + "; ".join(failures))


class Asm(dict):
    """A kernel's artefacts by name (``CompiledKernel.asm``); on the CUDA
    backend ``"sass"`` is disassembled from ``"cubin"`` when first read."""

    def __missing__(self, key):
        if key == "sass" and "cubin" in self:
            sass = disassemble(bytes(self["cubin"]))
            self["sass"] = sass
            return sass
        triton_stage = _TRITON_STAGES.get(key) if isinstance(key, str) else None
        if triton_stage is not None:
            # A KeyError still (Triton's own asm answers so for a stage it lacks), but one that says where to look.
            raise StageUnavailable(f"{key!r} names a stage of Triton's compiler ({triton_stage}) that Tegula's lacks; "
                                   f"this kernel's are {', '.join(repr(k) for k in self)} ('lowered' is the "
                                   f"kernel as written, the stages after it follow each pass; docs/python-api.md)")
        raise KeyError(key)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or (key == "sass" and dict.__contains__(self, "cubin"))
