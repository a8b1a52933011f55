"""The Hopper code is what it should be, read from the SASS (issue 5: "the disassembly
shows HGMMA").

The kernels are compiled for sm_90a by NVRTC exactly as a launch on an H200
compiles them (no GPU is needed for that), and the cubin in the kernel cache
is disassembled (sass_util: cuobjdump or nvdisasm from the CUDA toolkit, pip's
NVIDIA wheels or Triton's copy). On the GPU machine this always runs; where
NVRTC or every disassembler is missing, the tests skip and say which.
"""

from __future__ import annotations

import os
import re
import stat

import pytest

import sass_util
import flash_attention as attention
import matmul

_STRIDES = "i32:16, i32:16, i32:16, i32:1"


def hgmma_shapes(sass: str) -> set:
    """The HGMMA instruction shapes in `sass`, e.g. {'64x128x16.F32.BF16'}."""
    return set(re.findall(r"\bHGMMA\.(\d+x\d+x\d+\.F32\.BF16)\b", sass))


def test_hopper_matmul_runs_on_hgmma(tmp_path):
    # The benchmark's bf16 matmul at 4096^3 with 128x128x64 tiles and 4 warps
    # (one warpgroup, two 64-row slabs): wgmma m64n128k16 becomes HGMMA, its
    # operands brought in by cp.async (LDGSTS).
    signature = ("*bf16:16, *bf16:16, *bf16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, "
                 "i32:1, 128, 128, 64, 8")
    sass = sass_util.sass_of(matmul.matmul_kernel, signature, 90, tmp_path, num_warps=4)
    assert "64x128x16.F32.BF16" in hgmma_shapes(sass), "no bf16 HGMMA in the Hopper matmul's SASS"
    assert "HMMA" not in re.sub(r"HGMMA", "", sass), "part of the matmul fell back to mma.sync (HMMA)"
    assert "LDGSTS" in sass, "operands are not loaded with cp.async"


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_hopper_attention_runs_on_hgmma(causal, tmp_path):
    # The attention benchmark's configuration: q @ k^T as 64x64 tiles per
    # warpgroup, p @ v as 64x128.
    signature = (f"*bf16:16, *bf16:16, *bf16:16, *bf16:16, *fp32:16, {', '.join([_STRIDES] * 4)}, i32:16, "
                 f"i32:16, fp32, 128, 128, 64, {causal}")
    sass = sass_util.sass_of(attention.attention_fwd_kernel, signature, 90, tmp_path, num_warps=8)
    assert {"64x64x16.F32.BF16", "64x128x16.F32.BF16"} <= hgmma_shapes(sass), sorted(hgmma_shapes(sass))
    assert "LDGSTS" in sass, "K and V are not loaded with cp.async"


def test_disassemblers_are_found_on_path(tmp_path, monkeypatch):
    # The search itself, with fake tools: PATH first, no duplicates.
    for tool in ("cuobjdump", "nvdisasm"):
        fake = tmp_path / tool
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path.parent))  # no bin/ there: nothing added
    found = sass_util.find_disassemblers()
    assert found[:2] == [str(tmp_path / "cuobjdump"), str(tmp_path / "nvdisasm")]
    assert len(found) == len({os.path.realpath(p) for p in found})
