"""TEGULA_OVERRIDE_DIR: a kernel built from a hand-edited generated source
(docs/runtime.md, "Trying an edit of the generated code")."""

import numpy as np
import pytest

import tegula
import tegula.language as tl


def _add(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) + 1.5, mask=offs < n)


def _run(kernel, n=37, block=16):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    y = np.full_like(x, np.nan)
    kernel[(tegula.cdiv(n, block),)](x, y, n, BLOCK=block)
    return x, y


def _edited(source: str) -> str:
    assert "(float)1.5" in source, "the CPU source spells the constant another way: update the edit"
    return source.replace("(float)1.5", "(float)2.5")


@pytest.fixture
def overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("TEGULA_OVERRIDE_DIR", str(tmp_path))
    return tmp_path


def _source_and_key(n=37, block=16):
    x = np.zeros(n, np.float32)
    inspection = tegula.jit(_add).inspect(x, np.empty_like(x), n, BLOCK=block)
    return inspection.source, inspection.key


def test_a_file_named_by_the_key_replaces_that_specialization(overrides, capfd):
    source, key = _source_and_key()
    path = overrides / f"_add-{key[:8]}.source.cpp"
    path.write_text(_edited(source))
    kernel = tegula.jit(_add)
    x, y = _run(kernel)
    np.testing.assert_array_equal(y, x + np.float32(2.5))
    assert f"is built from {path}" in capfd.readouterr().err
    # The build's stages show the source it was built from.
    assert kernel.inspect(x, y, x.size, BLOCK=16).source == path.read_text()
    # Another specialization (BLOCK 32) has another key: untouched.
    x, y = _run(kernel, block=32)
    np.testing.assert_array_equal(y, x + np.float32(1.5))


def test_a_file_named_by_the_kernel_replaces_every_specialization(overrides):
    source, _ = _source_and_key()
    (overrides / "_add.source.cpp").write_text(_edited(source))
    x, y = _run(tegula.jit(_add), n=37)
    np.testing.assert_array_equal(y, x + np.float32(2.5))


def test_the_cache_keeps_the_edited_build_apart(tmp_path, monkeypatch):
    source, key = _source_and_key()
    (tmp_path / f"_add-{key[:8]}.source.cpp").write_text(_edited(source))
    monkeypatch.setenv("TEGULA_OVERRIDE_DIR", str(tmp_path))
    x, y = _run(tegula.jit(_add))
    np.testing.assert_array_equal(y, x + np.float32(2.5))
    monkeypatch.delenv("TEGULA_OVERRIDE_DIR")
    x, y = _run(tegula.jit(_add))  # a new launcher: the compiler's own build, from the cache or built again
    np.testing.assert_array_equal(y, x + np.float32(1.5))
    monkeypatch.setenv("TEGULA_OVERRIDE_DIR", str(tmp_path / "empty"))  # no file for it: the compiler's build
    x, y = _run(tegula.jit(_add))
    np.testing.assert_array_equal(y, x + np.float32(1.5))


def test_an_edit_that_does_not_compile_is_reported(overrides):
    source, key = _source_and_key()
    (overrides / f"_add-{key[:8]}.source.cpp").write_text(source.replace("(float)1.5", "(float)1.5 +* ;"))
    with pytest.raises(tegula.CompilationError) as caught:
        _run(tegula.jit(_add))
    message = str(caught.value)
    assert f"the source override {overrides}" in message and "does not build" in message
    assert "bug in Tegula" not in message and "unset TEGULA_OVERRIDE_DIR" in message
