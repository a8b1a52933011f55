"""The on-disk kernel cache under stress and attack: eight processes compiling
the same kernels at once, truncated and tampered entries, leftovers of killed
processes, and cache directories other users could write to
(docs/runtime.md, "Safety rules").

Every process here is a fresh interpreter working on a fresh cache directory,
so the counters of ``tegula.runtime_stats()`` say exactly what it did:
``builds`` (C++ compiler or NVRTC runs), ``disk_hits`` and ``disk_rejected``
(entries found but refused, then rebuilt).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cache_util import seed_precompiled_prelude

TESTS = pathlib.Path(__file__).resolve().parent
N = 1000  # not a multiple of any block: every kernel has a masked tail


# --- three kernels and their NumPy references ---------------------------------------------

@tegula.jit
def scaled_add(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + y, mask=mask)


@tegula.jit
def row_max(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=-1e30)
    tl.store(out_ptr + row, tl.max(x, axis=0))


@tegula.jit
def clamp_int(x_ptr, out_ptr, lo, hi, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, lo), hi), mask=mask)


KERNEL_NAMES = ("scaled_add", "row_max", "clamp_int")
ENTRY_FILE = re.compile(r"[0-9a-f]{64}\.(so|cubin|meta|stages|lock|build)|prelude-[0-9a-f]+\.h(\.gch)?")


def run_kernels(backend_name: str, seed: int) -> None:
    """Launches the three kernels on random data and checks them against NumPy
    (also what every worker process runs)."""
    from conftest import Backend

    backend = Backend(backend_name)
    rng = np.random.default_rng(seed)

    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out = backend.empty(N, np.float32)
    scaled_add[(N + 127) // 128,](backend.array(x), backend.array(y), out, 1.5, N, BLOCK=128)
    np.testing.assert_allclose(backend.numpy(out), x * np.float32(1.5) + y, rtol=1e-6, atol=1e-6)

    rows, cols = 7, 45
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    maxima = backend.empty(rows, np.float32)
    row_max[(rows,)](backend.array(m), maxima, cols, BLOCK=64)
    np.testing.assert_array_equal(backend.numpy(maxima), m.max(axis=1))

    ints = rng.integers(-1000, 1000, N, dtype=np.int32)
    clamped = backend.empty(N, np.int32)
    clamp_int[(N + 255) // 256,](backend.array(ints), clamped, -100, 250, N, BLOCK=256)
    np.testing.assert_array_equal(backend.numpy(clamped), np.clip(ints, -100, 250))


# A worker: signals it is ready, waits for the go file (so all start
# compiling together), runs the kernels, prints its counters.
WORKER = textwrap.dedent(f"""
    import json, os, sys, time
    sys.path.insert(0, {str(TESTS)!r})
    ready, go, backend, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    import tegula
    import test_cache_safety
    open(ready, "w").close()
    deadline = time.monotonic() + 300  # an interrupted test must not leave workers spinning
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("no start signal within 300 s")
        time.sleep(0.002)
    test_cache_safety.run_kernels(backend, seed)
    print(json.dumps(tegula.runtime_stats()))
""")


def _env(cache: pathlib.Path, backend_name: str) -> dict:
    env = dict(os.environ, TEGULA_CACHE_DIR=str(cache), TEGULA_NUM_THREADS="2")
    env.pop("TEGULA_DUMP_DIR", None)  # stages would be kept: not what this test is about
    return env


def _start(cache: pathlib.Path, backend_name: str, count: int, tmp: pathlib.Path) -> list:
    """`count` workers started together; returns their counters."""
    go = tmp / f"go-{time.monotonic_ns()}"
    workers = []
    for i in range(count):
        # Output to files, not pipes: a worker blocked on a full pipe while
        # holding an entry lock would stall the others.
        ready, out = tmp / f"{go.name}-ready-{i}", tmp / f"{go.name}-out-{i}"
        with open(out, "w") as sink:
            proc = subprocess.Popen([sys.executable, "-c", WORKER, str(ready), str(go), backend_name, str(i)],
                                    env=_env(cache, backend_name), stdout=sink, stderr=subprocess.STDOUT)
        workers.append((proc, ready, out))
    deadline = time.monotonic() + 120
    while not all(ready.exists() or proc.poll() is not None for proc, ready, _ in workers):
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.005)
    go.touch()
    results = []
    for proc, _, out in workers:
        proc.wait(timeout=300)
        assert proc.returncode == 0, out.read_text()
        results.append(json.loads(out.read_text().strip().splitlines()[-1]))
    return results


def _run_one(cache: pathlib.Path, backend_name: str, tmp: pathlib.Path) -> dict:
    return _start(cache, backend_name, 1, tmp)[0]


def _entries(cache: pathlib.Path, backend_name: str) -> dict:
    """{kernel name: (manifest path, artifact path)} of the cache's entries,
    each checked: the manifest is complete, names the backend that built it
    and its artifact's file and hash."""
    entries = {}
    for manifest in sorted(cache.glob("*.meta")):
        text = manifest.read_text()
        assert text.startswith("tegula-kernel-cache ") and text.endswith("\nend\n"), text
        fields = dict(line.split(" ", 1) for line in text.splitlines()[1:-1] if " " in line)
        assert fields["backend"] == backend_name, manifest
        extension, digest = fields["artifact"].split(" ")
        payload = manifest.with_suffix("." + extension)
        assert hashlib.sha256(payload.read_bytes()).hexdigest() == digest, manifest
        assert fields["kernel"] not in entries, f"two entries for {fields['kernel']}"
        entries[fields["kernel"]] = (manifest, payload)
    return entries


def _leftovers(cache: pathlib.Path) -> list:
    """Temporary files of the cache itself (the toolchain's `.tegula-*` may
    belong to a background build of the precompiled prelude)."""
    return sorted(p.name for p in cache.iterdir() if p.name.startswith(".tmp-"))


# --- eight processes at once ---------------------------------------------------------------

@pytest.fixture(scope="module")
def eight_at_once(tmp_path_factory, backend):
    """Eight processes compiling the three kernels into one fresh cache at
    once: (their counters, the cache). The other tests start from copies of
    that cache instead of building the kernels again. Run once per test
    session: pytest-xdist workers share it through a file lock."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # common to all workers
    shared = root / f"cache-safety-eight-{backend.name}"
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counters_file = shared / "counters.json"
        if not counters_file.exists():
            shared.mkdir(exist_ok=True)
            counters_file.write_text(json.dumps(_start(shared / "cache", backend.name, 8, shared)))
        return json.loads(counters_file.read_text()), shared / "cache"


def _copy_of(cache: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    """The entries of `cache` in a fresh directory (modes kept: 0700
    libraries, 0600 manifests) with the toolchain's precompiled prelude if it
    is complete, not the temporary files a background compile of it may
    still be writing."""
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy, ignore=lambda folder, names: [n for n in names if not ENTRY_FILE.fullmatch(n)])
    return copy


def test_eight_processes_compile_the_same_kernels_at_once(eight_at_once, tmp_path, backend):
    counters, cache = eight_at_once
    # The entry lock makes the others wait for the one process building each
    # kernel, then load its entry: three builds in all, everything else hits.
    assert sum(c["builds"] for c in counters) == 3, counters
    for c in counters:
        assert c["builds"] + c["disk_hits"] == 3, counters
        assert c["disk_rejected"] == 0, counters
    assert sorted(_entries(cache, backend.name)) == sorted(KERNEL_NAMES)
    assert _leftovers(cache) == []

    ninth = _run_one(_copy_of(cache, tmp_path), backend.name, tmp_path)
    assert (ninth["builds"], ninth["disk_hits"], ninth["disk_rejected"]) == (0, 3, 0)


# --- damaged entries -----------------------------------------------------------------------

def test_truncated_payload_and_manifest_are_rebuilt(eight_at_once, tmp_path, backend):
    cache = _copy_of(eight_at_once[1], tmp_path)
    entries = _entries(cache, backend.name)

    # A write cut short (disk full, power loss) leaves a file shorter than the
    # manifest says; a cut manifest lacks its `end` line.
    manifest, payload = entries["scaled_add"]
    payload.write_bytes(payload.read_bytes()[: payload.stat().st_size // 2])
    manifest, _ = entries["row_max"]
    manifest.write_text(manifest.read_text()[:-4])
    # A process killed between writing a temporary file and renaming it.
    stale = cache / ".tmp-0123456789abcdef-99999-0000000000000000.so"
    stale.write_bytes(b"\x7fELF half a library")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))

    # The rebuild is silent (results stay right); the counters show it. On
    # the CPU, row_max's library is intact and its build record vouches for
    # it: copied, not built (docs/runtime.md, "Reusing identical builds").
    counters = _run_one(cache, backend.name, tmp_path)
    rebuilt = (1, 1) if backend.name == "cpu" else (2, 0)
    assert (counters["builds"], counters["reused"], counters["disk_hits"], counters["disk_rejected"]) == (
        *rebuilt, 1, 2)
    assert sorted(_entries(cache, backend.name)) == sorted(KERNEL_NAMES)
    assert _leftovers(cache) == []  # the rebuild swept the stale file

    again = _run_one(cache, backend.name, tmp_path)
    assert (again["builds"], again["disk_hits"]) == (0, 3)


MARKER_LIBRARY = r"""
#include <cstdio>
#include <cstdint>
__attribute__((constructor)) static void tampered_library_ran() {
  if (FILE* f = std::fopen("MARKER", "w")) { std::fputs("loaded", f); std::fclose(f); }
}
extern "C" void tegula_kernel(void* const*, const int32_t*, int64_t, int64_t) {}
"""


def test_a_tampered_library_is_refused_and_never_loaded(eight_at_once, tmp_path, backend):
    if backend.is_cuda:
        pytest.skip("a CPU library test; device images: test_cuda_images_are_verified_and_rebuilt")
    compiler = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler to build the impostor library")
    cache = _copy_of(eight_at_once[1], tmp_path)
    entries = _entries(cache, "cpu")

    # An impostor with the kernel's entry point that leaves a marker file as
    # soon as it is loaded (its constructor runs at dlopen).
    marker = tmp_path / "marker"
    source = tmp_path / "impostor.cpp"
    source.write_text(MARKER_LIBRARY.replace("MARKER", str(marker)))
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(tmp_path / "impostor.so"), str(source)], check=True)
    _, payload = entries["scaled_add"]
    shutil.copyfile(tmp_path / "impostor.so", payload)
    # And a genuine library with one flipped byte.
    _, flipped = entries["clamp_int"]
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0x40
    flipped.write_bytes(bytes(data))

    counters = _run_one(cache, "cpu", tmp_path)  # checks the results against NumPy
    assert (counters["builds"], counters["disk_hits"], counters["disk_rejected"]) == (2, 1, 2)
    assert not marker.exists(), "the tampered library was loaded"
    assert sorted(_entries(cache, "cpu")) == sorted(KERNEL_NAMES)

    # Proof the marker works: the same impostor, loaded directly, leaves it.
    import ctypes

    ctypes.CDLL(str(tmp_path / "impostor.so"))
    assert marker.read_text() == "loaded"


MARKER_PRELUDE = r"""
#include <cstdio>
__attribute__((constructor)) static void tampered_prelude_ran() {
  if (FILE* f = std::fopen("MARKER", "a")) { std::fputs("ran", f); std::fclose(f); }
}
"""


def _wait_for(path: pathlib.Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_tampered_prelude_header_is_regenerated_and_never_compiled(eight_at_once, tmp_path, backend):
    """The CPU prelude header (prelude-<hash>.h, included by every kernel
    through its precompiled .gch) is held to the rule of cache entries:
    appended code, a 0666 mode and a deleted .gch (so the next build would
    precompile the tampered text) get it replaced, never compiled."""
    if backend.is_cuda:
        pytest.skip("the prelude header is the CPU toolchain's")
    cache = _copy_of(eight_at_once[1], tmp_path)
    headers = sorted(cache.glob("prelude-*.h"))
    if not headers:
        pytest.skip("this toolchain has no precompiled prelude (clang, or TEGULA_CPU_PCH=0)")
    (header,) = headers
    genuine = header.read_text()
    marker = tmp_path / "marker"
    header.write_text(genuine + MARKER_PRELUDE.replace("MARKER", str(marker)))
    header.chmod(0o666)
    binary = header.with_name(header.name + ".gch")
    binary.unlink(missing_ok=True)
    entries = _entries(cache, "cpu")

    def rebuild_two():
        for name in ("scaled_add", "row_max"):
            for path in entries[name]:
                path.unlink()
        counters = _run_one(cache, "cpu", tmp_path)
        assert (counters["builds"], counters["disk_hits"]) == (2, 1), counters

    rebuild_two()
    assert header.read_text() == genuine, "the tampered prelude header was kept"
    assert header.stat().st_mode & 0o077 == 0
    # The .gch the build started in the background comes from the verified
    # header: kernels built with it run no foreign code either.
    if _wait_for(binary, 180):
        time.sleep(0.5)
        rebuild_two()
    assert not marker.exists(), "code appended to the prelude header ran"

    # A header that only differs in its bytes (private mode) goes as well,
    # together with the .gch that may have been built from it.
    if binary.exists():
        header.write_text(genuine + "// changed\n")
        header.chmod(0o600)
        rebuild_two()
        assert header.read_text() == genuine


def test_kernels_with_non_ascii_names_hit_the_disk_cache(tmp_path):
    """Names are written %-escaped into manifests (identifiers may hold any
    letter): a second process loads the entry instead of rebuilding it."""
    script = textwrap.dedent("""
        import json
        import numpy as np
        import tegula
        import tegula.language as tl

        @tegula.jit
        def dóble(v, ñ):
            return v * ñ

        @tegula.jit
        def kérnel_ñ(x_ptr, out_ptr, ñ, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out_ptr + offs, dóble(tl.load(x_ptr + offs, mask=m), ñ), mask=m)

        x = np.random.default_rng(3).standard_normal(300).astype(np.float32)
        out = np.zeros_like(x)
        kérnel_ñ[(3,)](x, out, 2.5, 300, BLOCK=128)
        np.testing.assert_allclose(out, x * np.float32(2.5), rtol=1e-6)
        print(json.dumps(tegula.runtime_stats()))
    """)
    cache = seed_precompiled_prelude(tmp_path / "cache")
    source = tmp_path / "non_ascii.py"
    source.write_text(script, encoding="utf-8")
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(source)], env=_env(cache, "cpu"), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert (runs[0]["builds"], runs[0]["disk_rejected"]) == (1, 0), runs
    assert (runs[1]["builds"], runs[1]["disk_hits"], runs[1]["disk_rejected"]) == (0, 1, 0), runs
    (manifest,) = cache.glob("*.meta")
    assert "kernel k%c3%a9rnel_%c3%b1\n" in manifest.read_text()


@pytest.mark.parametrize("edit", ["drop the output's effect", "mark the output read-only", "widen a parameter",
                                  "swap two parameters"])
def test_an_edited_manifest_is_rebuilt_and_its_checks_still_hold(tmp_path, edit):
    """A manifest says which pointers a kernel writes (the read-only check
    trusts it) and what its parameters are; an entry whose manifest was
    edited after it was written is a miss and is rebuilt, so a read-only
    output is still refused and a later launch still computes."""
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        import tegula
        import tegula.language as tl

        @tegula.jit
        def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * n, mask=offs < n)

        x = np.arange(1, 9, dtype=np.int32)
        out = np.zeros(8, np.int32)
        if sys.argv[1] == "read-only":
            out.flags.writeable = False
            try:
                scale[(1,)](x, out, 5, 8)
                print("written", out.tolist())
            except ValueError as e:
                print("refused", e.code)
        else:
            scale[(1,)](x, out, 5, 8)
            assert out.tolist() == [v * 5 if i < 5 else 0 for i, v in enumerate(x.tolist())], out
        print(json.dumps(tegula.runtime_stats()))
    """)
    cache = seed_precompiled_prelude(tmp_path / "cache")
    source = tmp_path / "edited.py"
    source.write_text(script)

    def run(mode):
        done = subprocess.run([sys.executable, str(source), mode], env=_env(cache, "cpu"), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.strip().splitlines()
        return lines[:-1], json.loads(lines[-1])

    _, first = run("plain")
    assert first["builds"] == 1, first
    (manifest,) = cache.glob("*.meta")
    text = manifest.read_text()
    params = re.findall(r"^param .*$", text, re.M)
    assert len(params) >= 3 and re.search(r"^effect out_ptr -w-$", text, re.M), text
    changed = {
        "drop the output's effect": text.replace("effect out_ptr -w-\n", ""),
        "mark the output read-only": text.replace("effect out_ptr -w-", "effect out_ptr r--"),
        "widen a parameter": re.sub(r"^param n i32 ", "param n i64 ", text, flags=re.M),
        "swap two parameters": text.replace(params[0] + "\n" + params[1], params[1] + "\n" + params[0]),
    }[edit]
    assert changed != text
    manifest.write_text(changed)
    said, stats = run("read-only")
    assert said == ["refused E0714"], said
    assert (stats["disk_hits"], stats["disk_rejected"], stats["builds"] + stats["reused"]) == (0, 1, 1), stats
    _, again = run("plain")
    assert (again["disk_hits"], again["builds"]) == (1, 0), again


# --- CUDA entries without a GPU --------------------------------------------------------------

def test_cuda_images_are_verified_and_rebuilt(tmp_path):
    """The device-image path (`<key>.cubin`, no dlopen) through the CLI, which
    compiles for an architecture without needing a GPU."""
    from cuda_compile_util import compile_for_cuda, require_nvrtc

    require_nvrtc(90)
    cache = tmp_path / "cache"
    signature = "*fp32, *fp32, *fp32, fp32, i32, 128"
    compile_for_cuda(scaled_add, signature, 90, cache, emit="ptx")
    ((manifest, image),) = _entries(cache, "cuda").values()
    genuine = image.read_bytes()

    for damage in ("flip", "truncate", "manifest"):
        if damage == "flip":
            data = bytearray(genuine)
            data[len(data) // 2] ^= 0x01
            image.write_bytes(bytes(data))
        elif damage == "truncate":
            image.write_bytes(genuine[: len(genuine) // 3])
        else:
            manifest.write_text(manifest.read_text()[:-4])
        before = image.stat().st_ino
        compile_for_cuda(scaled_add, signature, 90, cache, emit="ptx")
        entries = _entries(cache, "cuda")  # consistent again
        assert list(entries) == ["scaled_add"]
        assert image.stat().st_ino != before, f"{damage}: the damaged image was not replaced"

    before = image.stat().st_ino
    compile_for_cuda(scaled_add, signature, 90, cache, emit="ptx")  # a hit: nothing rewritten
    assert image.stat().st_ino == before
    assert _leftovers(cache) == []


# --- unsafe directories --------------------------------------------------------------------

def _launch_in(cache: pathlib.Path):
    """Launches a kernel whose compile resolves `cache` (a fresh jit object,
    so nothing comes from memory); returns the error it raises."""
    fresh = tegula.jit(scaled_add.fn)
    x = np.ones(N, dtype=np.float32)
    old = os.environ.get("TEGULA_CACHE_DIR")
    os.environ["TEGULA_CACHE_DIR"] = str(cache)
    try:
        with pytest.raises(Exception) as info:
            fresh[(8,)](x, x, np.empty_like(x), 1.0, N, BLOCK=128)
    finally:
        os.environ["TEGULA_CACHE_DIR"] = old if old is not None else ""
        if old is None:
            del os.environ["TEGULA_CACHE_DIR"]
    return info.value


def test_a_world_writable_cache_directory_is_refused(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    error = _launch_in(cache)
    assert isinstance(error, ValueError)
    assert str(error) == (
        f"error[E0901]: the cache directory {cache} is writable by group or others; cached kernels are code "
        f"Tegula executes, so it must be private\n"
        f"hint: run `chmod 700 {cache}`, or set TEGULA_CACHE_DIR to a private directory")
    assert list(cache.iterdir()) == []  # nothing was written there

    # A link to such a directory is judged by its target.
    link = tmp_path / "link"
    link.symlink_to(cache)
    assert f"the cache directory {link} (a link to {cache}) is writable by group or others" in str(
        _launch_in(link))


def test_a_cache_directory_inside_a_world_writable_one_is_refused(tmp_path):
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o777)  # no sticky bit: anyone could rename the cache away
    error = _launch_in(public / "cache")
    assert isinstance(error, ValueError)
    assert f"the cache directory {public / 'cache'} is inside {public}, which anyone can write to" in str(error)
    assert f"chmod o-w {public}" in str(error)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_cache_directory_of_another_user_is_refused(tmp_path):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    error = _launch_in(cache)
    assert isinstance(error, ValueError)
    assert str(error) == (
        f"error[E0901]: the cache directory {cache} is owned by another user (uid 65534); cached kernels are code "
        f"Tegula executes, so it must be your own\n"
        f"hint: set TEGULA_CACHE_DIR to a directory you own")
