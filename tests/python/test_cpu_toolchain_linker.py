"""The CPU backend links kernels with GNU gold when `ld.gold` is on PATH
(toolchain.cpp). A gold that does not suit the compiler must cost one failed
link, never a failed kernel: the compile is retried with the default linker,
and the rest of the process keeps to it."""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

KERNELS = textwrap.dedent("""
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def scaled(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * FACTOR, mask=m)

    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    for factor in (2, 3, 5):
        out = np.zeros_like(x)
        scaled[(8,)](x, out, 1000, FACTOR=factor, BLOCK=128)  # 1000 of 1024: a masked tail
        np.testing.assert_array_equal(out, x * np.float32(factor))
    print("ok")
""")


def _run(tmp_path: pathlib.Path, path_prefix: str, cxx=None) -> subprocess.CompletedProcess:
    script = tmp_path / "kernels.py"
    script.write_text(KERNELS)
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"), PATH=path_prefix + os.pathsep + os.environ["PATH"])
    env.pop("CXX", None)  # the detection under test: c++ on PATH, no linker named ...
    if cxx:
        env["CXX"] = cxx  # ... or the one $CXX names
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)


def _failing_gold(tmp_path: pathlib.Path) -> tuple:
    """A folder with an ld.gold that fails as a gold unsuited to the compiler does, and the file it logs to."""
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "gold-calls"
    gold = fake / "ld.gold"
    gold.write_text(f"#!/bin/sh\necho call >> '{calls}'\necho 'ld.gold: error: cannot open libstdc++.so' >&2\nexit 1\n")
    gold.chmod(0o755)
    return fake, calls


def _gcc() -> bool:
    return bool(shutil.which("c++")) and "clang" not in subprocess.run(["c++", "--version"], capture_output=True,
                                                                         text=True).stdout


def test_a_gold_that_fails_costs_one_link_and_the_kernels_still_build(tmp_path):
    if not _gcc():
        pytest.skip("GCC's driver is what finds ld.gold on PATH here")
    fake, calls = _failing_gold(tmp_path)
    done = _run(tmp_path, str(fake))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    # Three kernels, one link tried with gold: the first compile's, before the retry taught the process.
    assert calls.read_text().split() == ["call"]


def test_a_linker_named_in_cxx_wins(tmp_path):
    if not _gcc():
        pytest.skip("GCC's driver is what finds ld.gold on PATH here")
    fake, calls = _failing_gold(tmp_path)
    done = _run(tmp_path, str(fake), cxx="c++ -fuse-ld=bfd")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert not calls.exists(), "gold was tried although $CXX names the linker"
