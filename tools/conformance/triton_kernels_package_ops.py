"""Triton's own `triton_kernels` package (python/triton_kernels in Triton's repository: matmul / matmul_ogs, swiglu,
topk, reduce, compaction, mxfp numerics, specialize, ragged tensors and routing metadata), its test suite
(tests/test_*.py and tests/test_*_details/test_*.py, each comparing against the package's torch references) run
unchanged on Tegula's CPU backend through the conformance shim's `triton` package. Nothing of Triton is in this
repository: the package and the few plain-Python files of Triton it imports are read from the path given:

    .venv/bin/python tools/conformance/triton_kernels_package_ops.py <triton checkout or python/triton_kernels>
        [test_matmul.py ...] [--sample N | --all] [--seed S] [-k EXPR] [-n WORKERS] [--capability 9.0]
        [--no-placeholders] [--triton PATH] [--test-timeout S] [--file-timeout S] [--json OUT] [--work DIR]

The source is a Triton work tree, a bare Triton git directory (its HEAD is read), or a tree holding the package
(`git archive HEAD python/triton_kernels`, or the package folder itself). Each test file runs in its own pytest
process, unchanged, with the package's conftest (its `device` fixture, given `--device cpu`), pytest-xdist (-n 2
by default) and this module as a pytest plugin (`-p triton_kernels_package_ops`), which puts the stand-ins below
in place before the package is imported, chooses the subset that runs and records every outcome. test_matmul's
grid is 14786 cases and test_reduce's 561 (seconds each): by default seeded samples of 60 and 100 run (SAMPLE,
shared evenly by the file's test functions), the other files whole; `--sample N` sets one sample for every file,
`--all` runs everything; -k is pytest's, applied first. The default run takes about 7 minutes on two cores.

Output, per file: the passed / failed / skipped / errored / timed-out / crashed / not-run counts and what ran,
then the failures of the whole run grouped by their first error line (paths and numbers normalized), most common
first, each with its tests and where they failed (the innermost frame outside torch, the standard library and
this harness, and the test file's line), as triton_kernels_ops.py prints them (its plugin machinery is reused).

Triton's files read besides the package (from the source when it is a Triton checkout, else from --triton,
default the triton-cpu snapshot): python/triton/_internal_testing.py (is_cuda, is_hopper and the conftest's
knob fixtures) and python/triton/tools/ragged_tma.py (plain @triton.jit helpers over tensor descriptors that
tensor.py and _p_matmul.py import), laid out in a copy of the shim's `triton` package.

Stand-ins (the package's files are not edited; Tegula and the shim's language stand in for nothing):

  - torch: a torch function mode turns `device='cuda'` (a keyword of any torch function, the device argument of
    Tensor.to) and Tensor.cuda() into the CPU: several tests allocate on "cuda" by name, not by the fixture.
  - torch: torch.cuda.get_device_capability() is --capability (9.0 by default: an H100, so that the tests that
    need float8 run); torch.cuda.get_device_properties() an H100's multi_processor_count (132) and
    shared_memory_per_block_optin (232448), which opt_flags sizes split-K and pipelining stages by;
    torch.cuda.current_device() 0 and torch.cuda.device_count() 1 (the conftest divides by it under xdist).
    torch.cuda.is_available() stays false: the tests that need a real GPU (CUDA graphs, NCCL, Proton) skip.
  - triton.runtime.driver.active: Tegula's CPU driver, but get_current_target() answers GPUTarget("cuda",
    capability, 32). The package chooses its matmul heuristics by that backend (opt_flags.make_opt_flags ends in
    `assert False` for a backend neither "cuda" nor "hip"). Kernels still compile for and run on the CPU backend,
    where the arrays live; a kernel's own tl.target_info questions answer for that backend.
  - placeholders (--no-placeholders leaves them out): `triton.profiler` (Proton, Triton's profiler: test_topk
    imports it while collected) and `triton._C.libtriton` (Triton's C++ extension: roofline.py imports its
    cuBLAS / hipBLAS bindings) are modules whose every attribute raises when used, so that the rest of the
    file runs; the output names them.

Deselected: nothing. Tests that need a CUDA device by the package's own
markers (test_distributed: NCCL over several GPUs; test_matmul_metadata: Proton; the Hopper tests of
test_opt_flags_nvidia) skip by themselves.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"
DEFAULT_TRITON = Path("/work/.mirror/triton-lang+triton-cpu/repo")
PACKAGE = "python/triton_kernels"
TRITON_FILES = {"python/triton/_internal_testing.py": "triton/_internal_testing.py",
                "python/triton/tools/ragged_tma.py": "triton/tools/ragged_tma.py"}
from attorch_ops import normalized, print_summary, run_pytest  # noqa: E402
from triton_kernels_ops import RecordingHooks, timeout_where  # noqa: E402

TEST_TIMEOUT = 240
# Default sample per file (others: every case): test_reduce has 561 cases of ~3 s, test_matmul 14786.
SAMPLE = {"test_matmul.py": 60, "test_reduce.py": 100}
# An H100's properties (torch.cuda.get_device_properties) by major capability; others: the H100's.
PROPERTIES = {9: dict(name="NVIDIA H100 80GB HBM3 (stand-in)", multi_processor_count=132,
                      shared_memory_per_block_optin=232448, total_memory=80 << 30),
              10: dict(name="NVIDIA B200 (stand-in)", multi_processor_count=148,
                       shared_memory_per_block_optin=232448, total_memory=180 << 30)}
PLACEHOLDER_MODULES = ("triton.profiler", "triton._C", "triton._C.libtriton")
PTXAS_VERSION = "12.8"

# --- the pytest plugin: in every pytest process of a file (controller and xdist workers) ----------------


def pytest_addoption(parser):
    group = parser.getgroup("triton_kernels_package_ops")
    group.addoption("--tkp-progress", help="append one JSON line per test event here")
    group.addoption("--tkp-test-timeout", type=float, default=0.0)
    group.addoption("--tkp-sample", type=int, default=0, help="tests drawn per file (0: all)")
    group.addoption("--tkp-seed", type=int, default=0)
    group.addoption("--tkp-capability", default="9.0")
    group.addoption("--tkp-no-placeholders", action="store_true")


class _Placeholder(types.ModuleType):
    """A module Tegula's stand-in `triton` lacks (Triton's profiler, its C++ extension): importing it and reading
    its names works, using any of them raises."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _PlaceholderName(f"{self.__name__}.{name}")


class _PlaceholderName:
    def __init__(self, name):
        self.name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _PlaceholderName(f"{self.name}.{name}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{self.name}: Triton internals the stand-in triton package lacks (placeholder)")


def install_standins(capability: tuple, placeholders: bool) -> list[str]:
    import torch
    from torch.overrides import TorchFunctionMode

    from standins import is_cuda

    done = []

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0].cpu()  # the mode is off inside its own handler
            if "device" in kwargs and is_cuda(kwargs["device"]):
                kwargs = {**kwargs, "device": "cpu"}
            if name == "to" and len(args) > 1 and is_cuda(args[1]):
                args = (args[0], "cpu", *args[2:])
            return func(*args, **kwargs)

    CudaOnCpu().__enter__()  # on for the rest of the process
    done.append("torch: a torch function mode maps device='cuda' (keyword, Tensor.to) and Tensor.cuda() to the CPU")
    properties = types.SimpleNamespace(major=capability[0], minor=capability[1],
                                       **PROPERTIES.get(capability[0], PROPERTIES[9]))
    torch.cuda.get_device_capability = lambda device=None: capability
    torch.cuda.get_device_properties = lambda device=None: properties
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1
    done.append(f"torch: torch.cuda.get_device_capability() {capability}, get_device_properties() "
                f"{properties.multi_processor_count} SMs and {properties.shared_memory_per_block_optin} bytes of "
                f"shared memory, current_device() 0, device_count() 1")

    if placeholders:
        for name in PLACEHOLDER_MODULES:
            sys.modules.setdefault(name, _Placeholder(name))
        done.append("placeholders (raise when used): " + ", ".join(PLACEHOLDER_MODULES[::2]))
    import triton
    import triton.runtime
    from tegula.runtime.driver import GPUTarget, _CpuDriver

    assert "/shim/triton/" in triton.__file__ or "/tkp-shim/" in triton.__file__, \
        f"the real Triton was imported: {triton.__file__}"
    if placeholders:
        triton.profiler = sys.modules["triton.profiler"]
        triton._C = sys.modules["triton._C"]
        triton._C.libtriton = sys.modules["triton._C.libtriton"]

    class CudaTargetCpuDriver(_CpuDriver):
        def get_current_target(self):
            return GPUTarget("cuda", capability[0] * 10 + capability[1], 32)

        def get_device_capability(self, device=None):
            return capability

    triton.runtime.driver.set_active(CudaTargetCpuDriver())
    # Triton's _internal_testing.supports_tma() reads ptxas's version once the target is CUDA; Tegula's
    # knobs.nvidia is inert (no CUDA toolchain settings) and answers None.
    object.__setattr__(triton.knobs.nvidia, "ptxas", types.SimpleNamespace(version=PTXAS_VERSION, path=None))
    done.append(f"triton.runtime.driver.active: the CPU driver, but get_current_target() is "
                f"GPUTarget('cuda', {capability[0] * 10 + capability[1]}, 32); triton.knobs.nvidia.ptxas.version "
                f"{PTXAS_VERSION}")
    return done


class Plugin(RecordingHooks):
    def __init__(self, config):
        opt = config.getoption
        self.xdist_controller = (getattr(config, "workerinput", None) is None
                                 and getattr(config.option, "numprocesses", None))
        self.out = open(opt("--tkp-progress"), "a", buffering=1) if opt("--tkp-progress") else None
        self.timeout = opt("--tkp-test-timeout")
        self.errors = {}
        capability = tuple(int(x) for x in opt("--tkp-capability").split("."))
        # The controller collects too (the conftest divides by device_count() there as well).
        self.stand_ins = install_standins(capability, not opt("--tkp-no-placeholders"))
        self.watchdog = None
        if self.out and self.timeout and not self.xdist_controller:
            self.watchdog = open(Path(opt("--tkp-progress")).with_suffix(f".{os.getpid()}.timeout"), "w")

    def write(self, **record):
        if self.out is not None and not self.xdist_controller:
            self.out.write(json.dumps({**record, "pid": os.getpid()}) + "\n")

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected theirs
    def pytest_collection_modifyitems(self, session, config, items):
        opt = config.getoption
        collected = len(items)
        kept = list(items)
        eligible = len(kept)
        if opt("--tkp-sample") and len(kept) > opt("--tkp-sample"):
            by_function = collections.defaultdict(list)
            for item in kept:
                by_function[item.originalname].append(item.nodeid)
            # Shared evenly by the test functions; the same draw in every process (xdist's workers must agree).
            rng, quota, left = random.Random(opt("--tkp-seed")), {}, opt("--tkp-sample")
            for k, function in enumerate(sorted(by_function, key=lambda f: len(by_function[f]))):
                quota[function] = min(len(by_function[function]), left // (len(by_function) - k))
                left -= quota[function]
            drawn = set()
            for function in sorted(by_function):
                drawn.update(rng.sample(sorted(by_function[function]), quota[function]))
            kept = [item for item in kept if item.nodeid in drawn]
        chosen = set(kept)
        deselected = [item for item in items if item not in chosen]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = kept
        self.write(event="selection", collected=collected, left_out={}, eligible=eligible,
                   ran=len(kept), stand_ins=self.stand_ins,
                   functions=dict(collections.Counter(i.originalname for i in kept)))


@pytest.hookimpl(tryfirst=True)  # before the package's conftest, which asks torch.cuda.device_count()
def pytest_configure(config):
    config.pluginmanager.register(Plugin(config), "triton_kernels_package_ops_plugin")


# --- the driver: every file, in a pytest process each ----------------------------------------------------


def is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def read_from_triton(root: Path, path: str) -> str:
    if (root / path).exists():
        return (root / path).read_text()
    if not is_git_dir(root):
        raise FileNotFoundError(f"{root} holds no {path}")
    return subprocess.run(["git", "--git-dir", str(root), "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout


def find_package(source: Path, scratch: Path) -> tuple[Path, Path | None]:
    """(the package folder holding triton_kernels/ and tests/, the Triton checkout it came from, if any)."""
    if is_git_dir(source):
        subprocess.run(f"git --git-dir {source} archive HEAD {PACKAGE} | tar -x -C {scratch}", shell=True, check=True)
        return scratch / PACKAGE, source
    if (source / PACKAGE).is_dir():
        return source / PACKAGE, source if (source / "python" / "triton").is_dir() else None
    if (source / "triton_kernels").is_dir() and (source / "tests").is_dir():
        return source, None
    sys.exit(f"{source} is neither a Triton checkout nor a triton_kernels tree (triton_kernels/ and tests/)")


def lay_out_shim(scratch: Path, triton_root: Path) -> Path:
    """A copy of the shim with Triton's plain-Python helpers the package and its tests import."""
    shim = scratch / "tkp-shim"
    shutil.copytree(SHIM / "triton", shim / "triton", dirs_exist_ok=True)
    for source, target in TRITON_FILES.items():
        (shim / target).parent.mkdir(parents=True, exist_ok=True)
        (shim / target).write_text(read_from_triton(triton_root, source))
    return shim


def run_file(package: Path, shim: Path, name: str, args, scratch: Path):
    key = name.replace("/", "__")
    progress = scratch / (key + ".jsonl")
    progress.write_text("")
    for old in scratch.glob(key.replace(".py", "") + ".*.timeout"):
        old.unlink()
    sample = 0 if args.all else args.sample if args.sample is not None else SAMPLE.get(Path(name).name, 0)
    env = dict(os.environ, TEGULA_CONFORMANCE_DEVICE="cpu",
               PYTHONPATH=os.pathsep.join([str(shim), str(HERE), str(package)] +
                                          ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    command = [sys.executable, "-m", "pytest", str(package / "tests" / name), "-p", "triton_kernels_package_ops",
               "-p", "no:cacheprovider", "-q", "-rN", "--rootdir", str(package), "-c", os.devnull,
               "--device", "cpu",
               "--tkp-progress", str(progress), "--tkp-test-timeout", str(args.test_timeout),
               "--tkp-sample", str(sample), "--tkp-seed", str(args.seed), "--tkp-capability", args.capability,
               *(["--tkp-no-placeholders"] if args.no_placeholders else []),
               *(["-k", args.k] if args.k else []),
               *(["-n", str(args.workers), "--max-worker-restart", "100000"] if args.workers > 0 else [])]
    return run_pytest(command, package, env, scratch, key, progress, args.test_timeout, args.file_timeout,
                      timeout_where)


COLUMNS = ("passed", "failed", "skipped", "errored", "timeout", "crashed", "not run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a Triton checkout (work tree or bare git directory), or a tree "
                                                  "holding python/triton_kernels, or the package folder")
    parser.add_argument("files", nargs="*", help="test files under tests/ (default: every test_*.py, and those "
                                                 "of its test_*_details folders)")
    parser.add_argument("--sample", type=int, help="a seeded sample of this many tests per file, shared by its "
                                                   f"test functions (default: {SAMPLE}, the other files whole)")
    parser.add_argument("--all", action="store_true", help="every test, no sample")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("-k", help="pytest's -k expression, applied before the sample")
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers (0: no xdist)")
    parser.add_argument("--capability", default="9.0", help="the GPU the host code is told of (default 9.0)")
    parser.add_argument("--no-placeholders", action="store_true",
                        help="no placeholder modules for triton.profiler and triton._C.libtriton")
    parser.add_argument("--triton", type=Path, default=DEFAULT_TRITON,
                        help="where Triton's _internal_testing.py and tools/ragged_tma.py are read when the source "
                             "is not a Triton checkout (a work tree or a bare git directory)")
    parser.add_argument("--test-timeout", type=float, default=TEST_TIMEOUT, help="seconds one test may take")
    parser.add_argument("--file-timeout", type=float, default=900, help="seconds one file may take")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    parser.add_argument("--work", type=Path, help="keep each file's log and progress here (default: a "
                                                  "temporary folder)")
    args = parser.parse_args()

    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
    everything, groups = {}, collections.defaultdict(list)
    totals = collections.Counter()
    stand_ins = []
    with (tempfile.TemporaryDirectory(prefix="triton-kernels-package-") if args.work is None
          else contextlib.nullcontext(str(args.work.resolve()))) as scratch:
        scratch = Path(scratch)
        package, checkout = find_package(args.source.resolve(), scratch)
        shim = lay_out_shim(scratch, checkout or args.triton)
        tests = package / "tests"
        files = args.files or sorted(str(p.relative_to(tests)) for p in tests.glob("test_*.py")) + sorted(
            str(p.relative_to(tests)) for p in tests.glob("test_*_details/test_*.py"))
        what = (f"a sample of {args.sample} a file (seed {args.seed})" if args.sample and not args.all else
                "every case" if args.all or args.sample == 0 else
                f"every case but samples of {', '.join(f'{n} {f}' for f, n in SAMPLE.items())} (seed {args.seed})")
        print(f"triton_kernels {package}; per file: {what}{f', -k {args.k!r}' if args.k else ''}; "
              f"xdist -n {args.workers}; test timeout {args.test_timeout:.0f}s; capability {args.capability}; "
              f"TEGULA_NUM_THREADS={os.environ.get('TEGULA_NUM_THREADS', 'unset')}", flush=True)
        width = max(26, *(len(f) for f in files))
        print(f"{'file':{width}s} " + " ".join(f"{c:>7s}" for c in COLUMNS) + "   time  selection", flush=True)
        for name in files:
            outcomes, selection, notes, elapsed = run_file(package, shim, name, args, scratch)
            stand_ins = selection.get("stand_ins", stand_ins)
            counts = collections.Counter(o["outcome"] for o in outcomes.values())
            counts["not run"] += selection["not_started"]
            totals.update(counts)
            functions = ", ".join(f"{f} {n}" for f, n in selection.get("functions", {}).items())
            print(f"{name:{width}s} " + " ".join(f"{counts[c]:7d}" for c in COLUMNS) + f" {elapsed:5.0f}s  "
                  f"ran {selection.get('ran', 0)} of {selection.get('collected', 0)} collected ({functions})",
                  flush=True)
            for note in notes:
                print("    " + note)
            for test, o in outcomes.items():
                everything[f"{name}::{test}" if test.startswith("<") else test] = o
                if o["outcome"] not in ("passed", "skipped", "not run"):
                    groups[normalized(o.get("error", "?"))].append(f"{name}::{test}" if test.startswith("<")
                                                                   else test)
            skips = collections.Counter(normalized(o.get("error", "")) for o in outcomes.values()
                                        if o["outcome"] == "skipped")
            for why, n in skips.most_common():
                print(f"    skipped {n}: {why}")
    print_summary(totals, groups, everything, stand_ins, COLUMNS, args.json)


if __name__ == "__main__":
    main()
