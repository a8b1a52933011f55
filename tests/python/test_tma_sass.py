"""The TMA path in the machine code: descriptor kernels compiled for sm_90a by NVRTC (as a launch on an H200
compiles them) copy with UTMALDG / UTMASTG, and the descriptor matmul multiplies with HGMMA.

Needs NVRTC and a disassembler (sass_util: cuobjdump or nvdisasm); skips, saying which is missing, without them.
On the GPU machine it always runs. test_tensor_descriptor.py runs the same kernels there against NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import sass_util
from cuda_emulator import compile_cuda
from test_tma_codegen import desc_matmul_kernel, scale_kernel
from tegula import _C


@pytest.fixture(autouse=True)
def _nvrtc():
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def sass_of(kernel, args, constexprs, tmp_path, num_warps=4):
    compiled, _ = compile_cuda(kernel, args, constexprs, num_warps=num_warps, arch=90)
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    return compiled, sass_util.disassemble(cubin)


def test_descriptor_copy_uses_tma(tmp_path):
    x = np.zeros((256, 256), np.float16)
    compiled, sass = sass_of(scale_kernel, (x, x, 256, 256), {"BM": 64, "BN": 64}, tmp_path)
    assert len(compiled.tensor_maps) == 2
    assert "UTMALDG" in sass, "the descriptor load is not a TMA copy"
    assert "UTMASTG" in sass, "the descriptor store is not a TMA store"
    assert "SYNCS" in sass, "no mbarrier operations (SYNCS.*) in the TMA load"


def test_descriptor_matmul_uses_tma_and_hgmma(tmp_path):
    a = np.zeros((1024, 1024), np.float16)
    compiled, sass = sass_of(desc_matmul_kernel, (a, a, np.zeros((1024, 1024), np.float32), 1024, 1024, 1024),
                             {"BM": 128, "BN": 128, "BK": 64}, tmp_path)
    assert len(compiled.tensor_maps) == 3
    assert "UTMALDG" in sass, "the matmul's operands are not loaded by TMA"
    assert "HGMMA" in sass, "the matmul does not run on wgmma (HGMMA)"
