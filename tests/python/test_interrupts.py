"""The user's Ctrl-C during native work (docs/security.md, "Hangs and
interrupts"): a long CPU launch, a CPU program that never ends and a first
compile stop with KeyboardInterrupt, leave no cache debris, and the process
goes on working.

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

from cache_util import seed_precompiled_prelude

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

# A program that never ends: its loop waits for a flag nobody sets. The
# process reports when the interrupt arrived, checks that the pool kept its
# threads, and that the next launch computes what NumPy does.
NEVER_ENDS = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def wait_then_scale(flag_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        spins = 0
        while tl.load(flag_ptr) == 0:
            spins += 1
        tl.store(out_ptr + offs, x * 3.0 + spins, mask=m)

    def threads():
        return len(os.listdir("/proc/self/task"))

    programs = int(sys.argv[1])
    rng = np.random.default_rng(programs)
    x = rng.standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    go = np.ones(1, np.int32)
    wait_then_scale[(8,)](go, x, out, 1000, BLOCK=128)  # compiled, the pool started
    before = threads()
    print("ready", flush=True)
    try:
        wait_then_scale[(programs,)](np.zeros(1, np.int32), x, out, 1000, BLOCK=128)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    for trial in range(3):
        x = rng.standard_normal(1000).astype(np.float32)
        out[:] = 0
        wait_then_scale[(8,)](go, x, out, 1000, BLOCK=128)
        assert np.array_equal(out, x * np.float32(3)), trial
    print("usable", threads() == before, flush=True)
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


def _start(script: str, tmp_path: pathlib.Path, threads: str = "2", *argv: str, seeded: bool = True
           ) -> subprocess.Popen:
    """Runs `script` with a kernel cache of its own, `tmp_path`/cache: seeded with
    the session's precompiled prelude (cache_util) unless `seeded` is false."""
    source = tmp_path / "script.py"
    # Python leaves SIGINT ignored when it starts with it ignored (as a
    # shell's background job does), and so would every process it runs:
    # the test's Ctrl-C then does nothing. A terminal's Python gets it.
    source.write_text("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n" + script)
    cache = seed_precompiled_prelude(tmp_path / "cache") if seeded else tmp_path / "cache"
    env = dict(os.environ, TEGULA_CACHE_DIR=str(cache), TEGULA_NUM_THREADS=threads)
    return subprocess.Popen([sys.executable, str(source), *argv], env=env, stdout=subprocess.PIPE,
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


def test_ctrl_c_stops_a_program_that_never_ends(tmp_path):
    # One program runs on the calling thread; 64 on the pool (the caller runs
    # some of them), or all on the caller with one thread.
    for programs, threads in ((1, "2"), (64, "2"), (64, "1")):
        proc = _start(NEVER_ENDS, tmp_path, threads, str(programs))
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(1.0)
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        lines, err = _finish(proc, 30)
        assert proc.returncode == 0, err
        assert lines[0].split()[0] == "interrupted", (lines, err)
        delay = float(lines[0].split()[1]) - sent
        assert delay < 1.0, f"Ctrl-C took {delay:.2f} s to stop {programs} program(s) on {threads} thread(s)"
        assert lines[1:] == ["usable True"], (lines, err)
        assert err == "", err


def test_ctrl_c_during_a_first_compile_is_a_keyboard_interrupt_without_debris(tmp_path):
    proc = _start(FIRST_COMPILE, tmp_path, seeded=False)  # a first compile as slow as a fresh cache's
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


# An unrolling the front end spends seconds on (a million iterations, under
# the kernel's budget): Ctrl-C stops it, and a small kernel compiles after.
LONG_UNROLL = textwrap.dedent("""
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def folded(o_ptr, OUTER: tl.constexpr):
        acc = 0
        for i in tl.static_range(OUTER):
            for j in tl.static_range(1000):
                acc = (acc * 3 + (i ^ j)) % 1000003
        tl.store(o_ptr, acc)

    o = np.zeros(1, np.int32)
    print("ready", flush=True)
    try:
        folded[(1,)](o, 1000)
        print("compiled", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    folded[(1,)](o, 2)
    acc = 0
    for i in range(2):
        for j in range(1000):
            acc = (acc * 3 + (i ^ j)) % 1000003
    print("usable", int(o[0]) == acc, flush=True)
""")


def test_ctrl_c_stops_a_long_unrolling_in_the_front_end(tmp_path):
    proc = _start(LONG_UNROLL, tmp_path)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    lines, err = _finish(proc, 120)
    assert proc.returncode == 0, err
    assert lines == ["interrupted", "usable True"], (lines, err)
