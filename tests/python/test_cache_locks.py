"""Waiting on another process's cache entry lock (runtime/lock_wait.h,
docs/security.md "Hangs and interrupts"): a builder that was stopped mid-way
(SIGSTOP, Ctrl-Z) or that is gone no longer blocks the others, a waiter says
whom it waits for, and no wait lasts longer than TEGULA_CACHE_LOCK_TIMEOUT."""

from __future__ import annotations

import fcntl
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cache_util import seed_precompiled_prelude

KERNEL = textwrap.dedent("""
    import numpy as np
    import tegula
    import tegula.language as tl

    @tegula.jit
    def triple(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)

    x = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    out = np.zeros_like(x)
    triple[(3,)](x, out, 300, BLOCK=128)
    np.testing.assert_array_equal(out, x * np.float32(3))
    print("ok", flush=True)
""")

HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\\n".encode())
    if sys.argv[2] == "fork" and os.fork() != 0:
        os._exit(0)  # the forked child keeps the lock; the recorded pid is gone
    print("locked", flush=True)
    time.sleep(120)
""")


def _env(cache: pathlib.Path, **extra) -> dict:
    return dict(os.environ, TEGULA_CACHE_DIR=str(cache), TEGULA_NUM_THREADS="2", **extra)


def _script(tmp_path: pathlib.Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture
def lock_of_a_missing_entry(tmp_path):
    """A cache where the kernel's entry is gone but its lock file stays:
    (cache, lock path). The next process must build the kernel."""
    cache = seed_precompiled_prelude(tmp_path / "cache")
    subprocess.run([sys.executable, _script(tmp_path, "kernel.py", KERNEL)], env=_env(cache), check=True,
                   timeout=300, capture_output=True)
    # The entry's lock, not that of its build's inputs (docs/runtime.md, "Reusing identical builds").
    (lock,) = [lock for lock in cache.glob("*.lock") if lock.with_suffix(".meta").exists()]
    for path in cache.glob(lock.stem + ".*"):
        if path != lock:
            path.unlink()
    return cache, lock


def _holder(tmp_path: pathlib.Path, lock: pathlib.Path, mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, _script(tmp_path, "holder.py", HOLDER), str(lock), mode],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def _build(tmp_path: pathlib.Path, cache: pathlib.Path, seconds: float, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, _script(tmp_path, "kernel.py", KERNEL)], env=_env(cache, **extra),
                          capture_output=True, text=True, timeout=seconds)


def test_a_stopped_builder_does_not_block_the_others(tmp_path):
    """The issue's case: a process stopped in the middle of its first compile
    holds the entry's lock; a second process says so and builds the kernel
    itself instead of waiting forever."""
    cache = seed_precompiled_prelude(tmp_path / "cache")
    first = subprocess.Popen([sys.executable, _script(tmp_path, "kernel.py", KERNEL)], env=_env(cache),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (cache.is_dir() and any(p.name.endswith(".cpp") for p in cache.iterdir())):
            assert time.monotonic() < deadline and first.poll() is None, "the first compile did not start"
            time.sleep(0.005)
        os.kill(first.pid, signal.SIGSTOP)
        started = time.monotonic()
        second = _build(tmp_path, cache, 120)
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "ok"
        assert f"is being built by process {first.pid}, which is stopped" in second.stderr, second.stderr
        assert time.monotonic() - started < 60
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


def test_a_holder_that_is_gone_does_not_block_the_others(tmp_path, lock_of_a_missing_entry):
    cache, lock = lock_of_a_missing_entry
    holder = _holder(tmp_path, lock, "fork")
    try:
        holder.wait(timeout=30)
        done = _build(tmp_path, cache, 120)
        assert done.returncode == 0, done.stderr
        assert f"process {holder.pid}, which has exited" in done.stderr, done.stderr
    finally:
        os.killpg(holder.pid, signal.SIGKILL)


def test_waiting_on_a_working_builder_says_so_and_times_out(tmp_path, lock_of_a_missing_entry):
    cache, lock = lock_of_a_missing_entry
    holder = _holder(tmp_path, lock, "hold")
    try:
        started = time.monotonic()
        done = _build(tmp_path, cache, 120, TEGULA_CACHE_LOCK_TIMEOUT="4")
        elapsed = time.monotonic() - started
        assert done.returncode != 0
        assert "error[E0908]: waited 4 s for process %d to finish building a kernel (cache lock %s)" % (
            holder.pid, lock) in done.stderr, done.stderr
        assert "TEGULA_CACHE_LOCK_TIMEOUT" in done.stderr
        # The notice comes once, before the error.
        assert done.stderr.count(f"tegula: waiting for process {holder.pid} to finish building") == 1, done.stderr
        assert elapsed < 60
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    # With the holder gone the lock is free: the next process builds at once.
    done = _build(tmp_path, cache, 120, TEGULA_CACHE_LOCK_TIMEOUT="4")
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr


# One line in place of KERNEL's first (empty) one, and written to the same file, so the kernel keeps its cache key:
# it takes the entry's lock as another thread of this process building the same entry would.
SELF_HOLDER = ('import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); '
               'fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); os.write(fd, f"{os.getpid()}\\n".encode())'
               + KERNEL)


def test_waiting_on_a_thread_of_the_same_process_says_so(tmp_path, lock_of_a_missing_entry):
    # flock serializes open files, so a second thread's build of the same entry waits on the first's;
    # the notice named the waiting process itself as the one to wait for.
    cache, lock = lock_of_a_missing_entry
    done = subprocess.run([sys.executable, _script(tmp_path, "kernel.py", SELF_HOLDER), str(lock)],
                          env=_env(cache, TEGULA_CACHE_LOCK_TIMEOUT="3"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "tegula: waiting for another thread of this process to finish building" in done.stderr, done.stderr
    assert "error[E0908]: waited 3 s for another thread of this process to finish building a kernel" in done.stderr
