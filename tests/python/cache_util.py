"""Private kernel caches for tests of the cache, seeded with the session's
precompiled prelude.

Tests of the cache itself (a second process, entry locks, Ctrl-C, ...) give
their processes a kernel cache of their own. An empty cache has no
precompiled prelude (docs/backend-cpu.md): its first compile starts building
one, a second of CPU time in the background, and every compile parses the
whole prelude until it is there. `seed_precompiled_prelude(folder)` links
the prelude headers of the session's cache ($TEGULA_CACHE_DIR) into the
folder first, so that such a test compiles as a warm cache does and builds
no prelude of its own. The headers are found, verified and used by Tegula
exactly as in the cache that built them (same names, same bytes, private
files of this user). Tests whose subject is the prelude's own build, or
whose compiles must be slow, start from an empty folder instead.
"""

import functools
import os
import pathlib
import shutil
import time

import numpy as np

WAIT_SECONDS = 120


@functools.cache
def shared_prelude_headers() -> tuple:
    """The (header, precompiled header) pairs of the session's cache; builds
    them first when that cache has none (a compile there starts the build).
    Empty when this toolchain has no precompiled prelude (clang,
    TEGULA_CPU_PCH=0) or its build failed. Once per process."""
    shared = pathlib.Path(os.environ["TEGULA_CACHE_DIR"])
    if not list(shared.glob("prelude-*.h.gch")):
        _compile_something_new(shared)
        deadline = time.monotonic() + WAIT_SECONDS
        # The header is written before its build starts; the build writes a
        # .tegula-*.gch temporary, renamed into place when done.
        while (not list(shared.glob("prelude-*.h.gch")) and list(shared.glob("prelude-*.h"))
               and list(shared.glob(".tegula-*.gch")) and time.monotonic() < deadline):
            time.sleep(0.05)
    return tuple((binary.with_suffix(""), binary) for binary in sorted(shared.glob("prelude-*.h.gch"))
                 if binary.with_suffix("").is_file())


def _compile_something_new(cache: pathlib.Path) -> None:
    # A kernel this cache cannot hold yet (its constant is new): its build
    # finds no precompiled prelude and starts building one.
    import tegula
    import tegula.language as tl
    from tegula import _C

    @tegula.jit
    def prelude_probe(x_ptr, STAMP: tl.constexpr):
        tl.store(x_ptr, STAMP)

    x = np.zeros(1, np.int64)
    request, _ = prelude_probe._request_for(x, STAMP=time.time_ns() + os.getpid())
    _C.compile(request, _C.CompileOptions(backend="cpu", cache_dir=str(cache)))


def seed_precompiled_prelude(folder) -> pathlib.Path:
    """Creates the kernel cache `folder` (private, as Tegula makes it) with
    the session cache's prelude headers in it; returns the folder."""
    folder = pathlib.Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for pair in shared_prelude_headers():
        for source in pair:
            target = folder / source.name
            if target.exists():
                continue
            try:
                os.link(source, target)  # Tegula never writes a prelude header in place
            except OSError:
                shutil.copy2(source, target)
    return folder
