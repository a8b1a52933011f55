"""`compiled.asm["sass"]` (tegula/_sass.py): on the CUDA backend the SASS is
disassembled from the cubin when first read, as Triton's asm["sass"] is; a
machine without a disassembler gets a KeyError that says what to install;
the CPU backend has no SASS."""

import stat

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _sass


@tegula.jit
def add_one(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(X + offs, tl.load(X + offs, mask=mask) + 1, mask=mask)


def test_the_cpu_backend_has_no_sass():
    x = np.arange(10, dtype=np.float32)
    compiled = add_one[(1,)](x, 10, BLOCK=16)
    assert "sass" not in compiled.asm
    with pytest.raises(KeyError):
        compiled.asm["sass"]
    np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32) + 1)


def test_sass_comes_from_the_cubin_once(tmp_path, monkeypatch):
    # A stand-in disassembler: prints what cuobjdump would, and counts its calls.
    tool = tmp_path / "cuobjdump"
    calls = tmp_path / "calls"
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho '        /*0000*/ EXIT ;'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(_sass, "find_disassemblers", lambda: [str(tool)])
    asm = _sass.Asm({"ptx": "...", "cubin": b"\x7fELF"})
    assert "sass" in asm
    assert "EXIT" in asm["sass"] and "EXIT" in asm["sass"]
    assert calls.read_text().count("x") == 1


def test_no_disassembler_is_said_with_what_to_install(monkeypatch):
    monkeypatch.setattr(_sass, "find_disassemblers", lambda: [])
    asm = _sass.Asm({"cubin": b"\x7fELF"})
    with pytest.raises(KeyError, match="needs cuobjdump or nvdisasm.*install the CUDA toolkit"):
        asm["sass"]


def test_sass_of_a_gpu_launch(backend):
    if not backend.is_cuda:
        pytest.skip("SASS is the CUDA backend's")
    if not _sass.find_disassemblers():
        pytest.skip("no cuobjdump or nvdisasm on this machine")
    x = backend.array(np.arange(10, dtype=np.float32))
    compiled = add_one[(1,)](x, 10, BLOCK=16)
    sass = compiled.asm["sass"]
    assert "EXIT" in sass and ("STG" in sass or "ST.E" in sass)
