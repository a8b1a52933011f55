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


@pytest.mark.parametrize("stage", ["ttir", "ttgir", "llir"])
def test_a_triton_stage_name_is_a_key_error_that_names_tegulas_stages(stage, backend):
    # Triton's tests and notebooks read asm["ttir"]: still a KeyError (code that catches one keeps working), but it
    # says the stage is Triton's and lists the kernel's own, so a reader knows where to look.
    n = 37
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    xs = backend.array(x.copy())
    compiled = add_one[(1,)](xs, n, BLOCK=64)
    np.testing.assert_allclose(backend.numpy(xs), x + 1, rtol=1e-6)
    assert stage not in compiled.asm
    with pytest.raises(KeyError) as e:
        compiled.asm[stage]
    text = str(e.value)
    assert text.startswith(f"'{stage}' names a stage of Triton's compiler") and "'lowered'" in text
    assert all(repr(k) in text for k in compiled.asm)
    with pytest.raises(KeyError, match="^'no_such_stage'$"):  # any other name: the plain KeyError
        compiled.asm["no_such_stage"]


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
