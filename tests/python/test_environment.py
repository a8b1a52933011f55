"""TEGULA_* switches read one way (tegula/_environment.py), and a thread count that is none said so."""

import os
import subprocess
import sys
import textwrap

import pytest

from tegula import _environment


@pytest.mark.parametrize("text, on", [("1", True), ("TRUE", True), (" yes ", True), ("on", True), ("", False),
                                      ("0", False), ("false", False), ("No", False), ("off", False)])
def test_switches_read_one_way(monkeypatch, text, on):
    monkeypatch.setenv("TEGULA_TEST_SWITCH", text)
    assert _environment.flag("TEGULA_TEST_SWITCH") is on


def test_a_value_that_is_no_switch_is_off_and_said_once(monkeypatch):
    monkeypatch.setenv("TEGULA_TEST_JUNK", "perhaps")
    _environment._warned.discard("TEGULA_TEST_JUNK")
    with pytest.warns(RuntimeWarning, match="TEGULA_TEST_JUNK='perhaps' is not a switch") as record:
        assert _environment.flag("TEGULA_TEST_JUNK") is False
    assert record[0].filename == __file__  # the first frame outside the package, not _environment.py
    assert _environment.flag("TEGULA_TEST_JUNK") is False  # no second warning (pytest would fail on none)


def test_profile_false_is_off():
    done = subprocess.run([sys.executable, "-c", "import tegula.profiling as p; print(p._settings['timing'])"],
                          env=dict(os.environ, TEGULA_PROFILE="false"), capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done


# A fresh interpreter fills 64 floats with ones, through two specializations of one kernel (two
# compiles on a fresh cache), and prints their sum: 64.0 whatever the environment says.
_FILL = textwrap.dedent("""
    import numpy as np, tegula, tegula.language as tl
    @tegula.jit
    def fill(o, B: tl.constexpr):
        tl.store(o + tl.program_id(0) * B + tl.arange(0, B), 1.0)
    o = np.zeros(64, np.float32)
    fill[(8,)](o, B=8)
    fill[(4,)](o, B=16)
    print(o.sum())
""")


def _fill_with(tmp_path, **environment):
    path = tmp_path / "fill.py"
    path.write_text(_FILL)
    env = dict(os.environ, **environment)
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "64.0", done
    return done


@pytest.mark.parametrize("count", ["abc", "0", "-1", "99999999999"])
def test_a_thread_count_that_is_none_is_said(count, tmp_path):
    done = _fill_with(tmp_path, TEGULA_NUM_THREADS=count)
    assert f"tegula: TEGULA_NUM_THREADS={count} is not a thread count from 1 to 1024; using" in done.stderr


@pytest.mark.parametrize("where", ["a file", "inside a file"])
def test_a_dump_directory_that_cannot_be_written_is_said_once(where, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    dumps = blocker if where == "a file" else blocker / "dumps"
    # Stages are dumped when a kernel is compiled: a fresh cache.
    done = _fill_with(tmp_path, TEGULA_DUMP_DIR=str(dumps), TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    told = [line for line in done.stderr.splitlines() if line.startswith(f"tegula: TEGULA_DUMP_DIR={dumps}: ")]
    assert len(told) == 1, done.stderr  # two kernels compiled, one line
    assert "cannot write" in told[0] and told[0].endswith("stage dumps are not written"), told
