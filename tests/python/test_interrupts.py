"""The user's Ctrl-C during native work (docs/security.md, "Hangs and
interrupts"): a long CPU launch and a first compile stop with
KeyboardInterrupt, leave no cache debris, and the process goes on working.

Each case runs in a fresh interpreter in its own session. A compile is
interrupted the way a terminal does it, by signalling the whole process
group (the C++ compiler included); a launch by signalling the interpreter."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

SPIN = textwrap.dedent("""
    import sys, time
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def spin(x_ptr, n, BLOCK: tl.constexpr):
        acc = tl.zeros((BLOCK,), tl.float32)
        for i in range(n):
            acc = acc * 0.5 + 1.0
        tl.store(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)

    x = np.zeros(4096 * 16, np.float32)
    spin[(1,)](x, 1, BLOCK=16)  # compiled before the clock starts
    print("ready", flush=True)
    start = time.monotonic()
    try:
        spin[(4096,)](x, 16_000_000, BLOCK=16)  # half a minute or more on two threads
        print("finished", time.monotonic() - start, flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic() - start, flush=True)
    x[:] = 0
    spin[(8,)](x, 10, BLOCK=16)
    expected = np.float32(0)
    for _ in range(10):
        expected = expected * np.float32(0.5) + np.float32(1)
    print("usable", bool((x[:128] == expected).all() and not x[128:].any()), flush=True)
""")

FIRST_COMPILE = textwrap.dedent("""
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def scale(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha, mask=m)

    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    try:
        scale[(1,)](x, out, 2.0, 100, BLOCK=128)
        print("compiled", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    scale[(1,)](x, out, 2.0, 100, BLOCK=128)
    print("usable", bool(np.array_equal(out, x * np.float32(2))), flush=True)
""")


def _start(script: str, tmp_path: pathlib.Path, threads: str = "2") -> subprocess.Popen:
    source = tmp_path / "script.py"
    source.write_text(script)
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"), TEGULA_NUM_THREADS=threads)
    return subprocess.Popen([sys.executable, str(source)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(proc: subprocess.Popen, seconds: float) -> tuple:
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"still running after {seconds} s:\n{out}\n{err}")
    return out.splitlines(), err


def test_ctrl_c_stops_a_long_cpu_launch_and_the_next_launch_works(tmp_path):
    for threads in ("2", "1"):  # on the pool, and inline on the caller
        proc = _start(SPIN, tmp_path, threads)
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGINT)
        lines, err = _finish(proc, 30)
        assert proc.returncode == 0, err
        word, seconds = lines[0].split()
        assert word == "interrupted", (lines, err)
        assert float(seconds) < 5.0, f"Ctrl-C took {seconds} s to stop the launch ({threads} threads)"
        assert lines[1] == "usable True", (lines, err)


def test_ctrl_c_during_a_first_compile_is_a_keyboard_interrupt_without_debris(tmp_path):
    proc = _start(FIRST_COMPILE, tmp_path)
    cache = tmp_path / "cache"
    deadline = time.monotonic() + 120
    # The C++ compiler is running once its source file is in the cache.
    while not (cache.is_dir() and any(p.name.endswith(".cpp") for p in cache.iterdir())):
        assert time.monotonic() < deadline and proc.poll() is None, "the compile did not start"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    lines, err = _finish(proc, 120)
    assert proc.returncode == 0, err
    assert lines == ["interrupted", "usable True"], (lines, err)
    assert "internal compiler error" not in err and "E0999" not in err, err
    # One complete entry (from the second launch) and no temporary file.
    names = sorted(p.name for p in cache.iterdir())
    assert not [n for n in names if n.startswith(".tmp-") or n.endswith((".cpp", ".part"))], names
    assert len([n for n in names if n.endswith(".meta")]) == 1, names
