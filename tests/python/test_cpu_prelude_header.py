"""A precompiled prelude that GCC cannot read (truncated on disk) is removed and built again: a
compile that meets it still succeeds (it compiles the prelude's text), and the next compiles do not
keep paying for the failed attempt (backends/cpu/toolchain.cpp)."""

import os
import shutil
import time

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C

from cache_util import WAIT_SECONDS, shared_prelude_headers


@tegula.jit
def stamp_kernel(x_ptr, STAMP: tl.constexpr):
    tl.store(x_ptr, STAMP)


def test_an_unreadable_precompiled_prelude_is_built_again(backend, tmp_path):
    if backend.name != "cpu":
        pytest.skip("the CPU backend's precompiled prelude")
    headers = shared_prelude_headers()
    if not headers:
        pytest.skip("this toolchain has no precompiled prelude")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for header, binary in headers:
        shutil.copy2(header, cache / header.name)
        (cache / binary.name).write_bytes(binary.read_bytes()[:1000])  # a copy: the session's stays whole
        os.chmod(cache / binary.name, 0o600)
    x = np.zeros(1, np.int64)
    request, _ = stamp_kernel._request_for(x, STAMP=time.time_ns())
    _C.compile(request, _C.CompileOptions(backend="cpu", cache_dir=str(cache)))  # through the prelude's text

    def whole():
        return [p for p in cache.glob("prelude-*.h.gch") if p.stat().st_size > 1000]
    deadline = time.monotonic() + WAIT_SECONDS
    while not whole() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert whole(), sorted((p.name, p.stat().st_size) for p in cache.iterdir())
