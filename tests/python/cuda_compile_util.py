"""Compiling kernels of the op tests for the CUDA backend without a GPU.

`compile_for_cuda` runs the `tegula` CLI on the test file that defines a
@jit kernel, for one signature and architecture, through NVRTC to PTX and
ptxas: the generated CUDA must compile wherever NVRTC loads. Tests skip when
it cannot be loaded.
"""

from __future__ import annotations

import subprocess

import pytest

from tegula import _C
from tegula.cli import executable


def require_nvrtc(arch: int = 90) -> None:
    try:
        _C.cuda_target(arch=arch)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def compile_for_cuda(kernel, signature: str, arch: int, cache_dir, emit: str = "ptx,ptxas",
                     num_warps: int = 4) -> str:
    """The CLI's output for `kernel` (a @tegula.jit function of a test file)
    compiled for sm_`arch`; fails the test with the CLI's stderr otherwise."""
    require_nvrtc(arch)
    path = kernel.fn.__code__.co_filename
    cmd = [str(executable()), "compile", f"{path}::{kernel.fn.__name__}", "--backend", "cuda",
           "--arch", str(arch), "--num-warps", str(num_warps), "--signature", signature,
           "--emit", emit, "--cache-dir", str(cache_dir)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stderr}"
    return result.stdout
