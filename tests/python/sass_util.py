"""Reading the SASS of a kernel the CUDA backend compiled, without a GPU.

`sass_of(kernel, signature, arch, cache_dir)` compiles a @jit kernel of a
Python file through the `tegula` CLI (NVRTC: source -> PTX -> cubin, the very
image a launch loads), takes the cubin from the kernel cache entry the CLI
wrote, and disassembles it with the first disassembler that reads it. Tests
skip, saying why, when NVRTC cannot be loaded or no disassembler is found.

The disassemblers are those `compiled.asm["sass"]` uses (tegula/_sass.py).
"""

from __future__ import annotations

import pathlib

import pytest

from cuda_compile_util import compile_for_cuda
from tegula import _sass


def find_disassemblers() -> list[str]:
    return _sass.find_disassemblers()


def disassemble(cubin: pathlib.Path) -> str:
    """The SASS of `cubin` (tegula._sass); skips, saying why, when no
    disassembler is found or none can read it."""
    try:
        return _sass.disassemble(pathlib.Path(cubin).read_bytes())
    except _sass.SassUnavailable as e:
        pytest.skip(str(e))


def sass_of(kernel, signature: str, arch: int, cache_dir: pathlib.Path, num_warps: int = 4) -> str:
    """The SASS of `kernel` specialized by `signature` (the CLI's syntax) for sm_`arch`
    (sm_90a from 90 on), as NVRTC compiled it into the kernel cache."""
    cache_dir = pathlib.Path(cache_dir)
    compile_for_cuda(kernel, signature, arch, cache_dir, emit="ptx", num_warps=num_warps)
    cubins = sorted(cache_dir.glob("*.cubin"))
    assert len(cubins) == 1, f"expected one cubin in a fresh cache, found {[c.name for c in cubins]}"
    return disassemble(cubins[0])
