"""triton-lang/kernels' own test suite (test/test_*.py: blocksparse matmul and softmax, cross entropy, flash
attention, the matmul with a perf model, and Inductor-generated kernels, each compared against torch) on
Tegula's CPU backend, through the conformance shim's `triton` package. The library is not part of Tegula;
point this at a checkout (a work tree with kernels/ and test/; it needs torch, pytest and pytest-xdist):

    .venv/bin/python tools/conformance/triton_kernels_ops.py <kernels checkout> [test_matmul.py ...]
        [--sample N | --all] [--seed S] [-k EXPR] [-n WORKERS] [--capability 9.0] [--no-placeholders]
        [--single-config-unpruned] [--test-timeout S] [--file-timeout S] [--json OUT] [--work DIR]

Each test file runs in its own pytest process, unchanged, with pytest-xdist (`-n 2` by default) and this
module as a pytest plugin (`-p triton_kernels_ops`), which puts the stand-ins below in place before the
library is imported, chooses the subset that runs and records every test's outcome. The grid is 957 cases
and most take about a second, so by default every case runs but LEAVE_OUT's (4 of test_softmax's 8, each
minutes of torch's own CPU work), counted as left out; `--all` runs those too. `--sample N` runs a seeded
sample of N a file, shared evenly by its test functions; -k is pytest's, applied first. test_inductor.py
holds Inductor's generated kernels, launched with @triton.jit directly (no torch.compile), so it runs too.
The Llama model (models/llama) has no test. The default run takes about 6 minutes on two cores with an empty
Tegula cache.

A test past --test-timeout (compiles included) is ended by faulthandler's watchdog, which dumps the stacks
and exits the worker; xdist starts a new one. It is counted as a timeout, with the frame the test was in; a
worker that dies otherwise inside a test is counted as a crash. A file past --file-timeout is stopped and its
unstarted tests are counted as not run. Tegula's kernel cache is on disk: a second run compiles less.

Prints, per file, the passed / failed / skipped / errored / timed-out / crashed / not-run counts and what
ran, then the failures grouped by their first error line (paths and numbers normalized), most common first,
each with its tests and where they failed (the innermost frame outside torch, the standard library and this
harness, and the test file's line). An error raised while evaluating a test's `except` clause (test_matmul's
`except triton.OutOfResources`) is grouped under the error it was handling, with the second one appended.

The library's tests were written for Triton's former `triton.ops` and Triton's own conftest (a `device`
fixture); they put tensors on 'cuda' and read the GPU's compute capability. What this module puts in place
(the library's files are not edited; Tegula and the shim stand in for nothing):

  - the library under the name its tests import: `import triton.ops` loads the checkout's `kernels` package
    (this repository is Triton's former triton.ops, moved out of Triton).
  - Triton's conftest: a `device` fixture, 'cpu'.
  - the library's GPU assumptions: a torch function mode turns `device='cuda'` (a keyword argument of any
    torch function, and the device argument of Tensor.to) and Tensor.cuda() into the CPU.
  - the library's GPU assumptions: torch.cuda.get_device_capability() is --capability (9.0 by default: the
    tests skip float8e4nv below 9, and flash attention refuses anything below 8; at 9 its backward takes the
    MMA_V3 form of dq). torch.cuda.current_device() is 0 (matmul_perf_model reads it). torch raises for
    both without an NVIDIA driver.
  - placeholders: kernels/matmul_perf_model.py imports nvsmi, get_dram_gbps, get_max_tensorcore_tflops and
    get_max_simd_tflops from triton.testing (Triton's NVIDIA clock and bandwidth tables) while the package
    loads. tegula.testing has all four now; where a shim's triton.testing lacks one, a placeholder is set on
    it that raises AttributeError when called, so that the rest of the library loads; the output names
    them. --no-placeholders leaves them out.
  - --single-config-unpruned (off by default): the matmul autotuner's early_config_prune and perf_model are
    passed over while it holds a single config, as Triton's Autotuner.run does (it prunes only with more
    than one config). test_matmul sets one config per test, so without this the library's NVIDIA perf model
    runs under Tegula. This changes the library's autotuner object, not Tegula; use it to see the kernel's
    own results past that difference.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import importlib.abc
import importlib.util
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"
from attorch_ops import collection_error, is_cuda, normalized, print_summary, run_pytest

TEST_TIMEOUT = 180
# Cases left out unless --all: (why, a test of the parameters).
LEAVE_OUT = {
    # sparsify_tensor copies ~500-1300 blocks into one tensor in place; torch's CPU backward through those copies
    # takes over 100 s a case by itself (the kernels take under a second).
    "test_softmax": ("WIDTH over 1024 (torch's CPU backward through the test's block copies: minutes)",
                     lambda p: p["WIDTH"] > 1024),
}
# Names the library imports from triton.testing while it loads.
TESTING_NAMES = ("nvsmi", "get_dram_gbps", "get_max_tensorcore_tflops", "get_max_simd_tflops")

# --- the pytest plugin: in every pytest process of a file (controller and xdist workers) ----------------


def pytest_addoption(parser):
    group = parser.getgroup("triton_kernels_ops")
    group.addoption("--tk-progress", help="append one JSON line per test event here")
    group.addoption("--tk-test-timeout", type=float, default=0.0)
    group.addoption("--tk-sample", type=int, default=0, help="tests drawn per file (0: all)")
    group.addoption("--tk-all", action="store_true", help="no LEAVE_OUT")
    group.addoption("--tk-seed", type=int, default=0)
    group.addoption("--tk-capability", default="9.0")
    group.addoption("--tk-no-placeholders", action="store_true")
    group.addoption("--tk-single-config-unpruned", action="store_true")


@pytest.fixture
def device():
    """Triton's conftest fixture, which the library's tests take."""
    return "cpu"


class _KernelsAsTritonOps(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import triton.ops` -> the checkout's `kernels` package (its errors, if any, are the import's)."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "triton.ops" else None

    def create_module(self, spec):
        return importlib.import_module("kernels")

    def exec_module(self, module):
        pass


def _placeholder(name):
    def missing(*args, **kwargs):
        raise AttributeError(f"module 'triton.testing' has no attribute '{name}' (placeholder)")
    missing.__name__ = name
    return missing


def install_standins(capability: tuple, placeholders: bool, single_config_unpruned: bool) -> list[str]:
    import torch
    from torch.overrides import TorchFunctionMode

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
    torch.cuda.get_device_capability = lambda device=None: capability
    torch.cuda.current_device = lambda: 0
    done.append(f"torch: torch.cuda.get_device_capability() is {capability}, torch.cuda.current_device() is 0")

    import triton
    import triton.testing

    assert Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"
    if placeholders:
        missing = [name for name in TESTING_NAMES if not hasattr(triton.testing, name)]
        for name in missing:
            setattr(triton.testing, name, _placeholder(name))
        if missing:
            done.append("placeholders (raise when called): triton.testing." + ", triton.testing.".join(missing))
    sys.meta_path.insert(0, _KernelsAsTritonOps())
    done.append("library: `import triton.ops` loads the checkout's kernels package")
    if single_config_unpruned:
        with contextlib.suppress(ImportError):  # without its placeholders the library does not load
            tuner = importlib.import_module("kernels.matmul")._kernel
            prune, model = tuner.early_config_prune, tuner.perf_model
            tuner.early_config_prune = lambda configs, *a, **k: configs if len(tuner.configs) == 1 else prune(
                configs, *a, **k)
            tuner.perf_model = lambda **k: 0.0 if len(tuner.configs) == 1 else model(**k)
            done.append("library: the matmul autotuner's early_config_prune and perf_model are passed over while "
                        "it holds one config (Triton's Autotuner.run does not prune then)")
    return done


def harness_frame(path) -> bool:
    path = str(path)
    return "/torch/" in path or "/lib/python3" in path or Path(path).resolve().parent == HERE


def first_error_line(excinfo) -> str:
    def line(exc):
        text = str(exc).strip()
        return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"

    handled = handled_first(excinfo)
    if handled is not excinfo:
        return f"{line(handled.value)} (then in the test's except: {line(excinfo.value)})"[:400]
    return line(excinfo.value)[:300]


def handled_first(excinfo):
    """An error raised by the test's own except clause (a name it catches is missing) stands for the error it
    was handling: that one's info."""
    exc = excinfo.value
    if (exc.__context__ is not None and exc.__cause__ is None
            and Path(str(excinfo.traceback[-1].path)).name.startswith("test_")):
        return pytest.ExceptionInfo.from_exception(exc.__context__)
    return excinfo


def where(excinfo) -> str:
    excinfo = handled_first(excinfo)
    frames = [entry for entry in excinfo.traceback if not harness_frame(entry.path)]
    entry = frames[-1] if frames else excinfo.traceback[-1]
    test = next((e for e in reversed(excinfo.traceback) if Path(str(e.path)).name.startswith("test_")), None)
    at = f"{entry.path}:{entry.lineno + 1}"
    return at if test is None or test is entry else f"{at} (from {Path(str(test.path)).name}:{test.lineno + 1})"



class RecordingHooks:
    """The pytest hooks that record each test's start, outcome and first error line through `self.write`,
    and arm the per-test watchdog (`self.watchdog`, `self.timeout`); `self.errors` maps a test to its error.
    The harnesses that run a package's own test suite (this one, triton_kernels_package_ops.py) share them."""

    def pytest_runtest_logstart(self, nodeid, location):
        self.write(event="start", test=nodeid, time=time.time())
        if self.watchdog is not None:
            import faulthandler

            self.watchdog.write(f"--- {nodeid}\n")
            self.watchdog.flush()
            faulthandler.dump_traceback_later(self.timeout, exit=True, file=self.watchdog)

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.watchdog is not None:
            import faulthandler

            faulthandler.cancel_dump_traceback_later()

    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is not None:
            self.errors.setdefault(item.nodeid, (first_error_line(call.excinfo), where(call.excinfo),
                                                 call.excinfo.exconly()[:4000]))

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = "errored" if report.when == "setup" and report.failed else report.outcome
            record = {"event": "done", "test": report.nodeid, "outcome": outcome, "seconds": report.duration}
            if report.skipped:
                record["error"] = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else "")[:300]
            elif report.failed:
                record["error"], record["where"], record["detail"] = self.errors.get(report.nodeid, ("?", "", ""))
            self.write(**record)

    def pytest_collectreport(self, report):
        if report.failed:
            self.write(**collection_error(report))

class Plugin(RecordingHooks):
    def __init__(self, config):
        opt = config.getoption
        self.xdist_controller = (getattr(config, "workerinput", None) is None
                                 and getattr(config.option, "numprocesses", None))
        self.out = open(opt("--tk-progress"), "a", buffering=1) if opt("--tk-progress") else None
        self.timeout = opt("--tk-test-timeout")
        self.errors = {}
        capability = tuple(int(x) for x in opt("--tk-capability").split("."))
        # xdist's controller runs no test and imports nothing of the library.
        self.stand_ins = [] if self.xdist_controller else install_standins(
            capability, not opt("--tk-no-placeholders"), opt("--tk-single-config-unpruned"))
        self.watchdog = None
        if self.out and self.timeout and not self.xdist_controller:
            self.watchdog = open(Path(opt("--tk-progress")).with_suffix(f".{os.getpid()}.timeout"), "w")

    def write(self, **record):
        if self.out is not None and not self.xdist_controller:
            self.out.write(json.dumps({**record, "pid": os.getpid()}) + "\n")

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected theirs
    def pytest_collection_modifyitems(self, session, config, items):
        opt = config.getoption
        collected = len(items)
        kept, left_out = [], collections.Counter()
        for item in items:
            leave = LEAVE_OUT.get(item.originalname)
            if leave and not opt("--tk-all") and leave[1](getattr(getattr(item, "callspec", None), "params", {})):
                left_out[leave[0]] += 1
            else:
                kept.append(item)
        eligible = len(kept)
        if opt("--tk-sample") and len(kept) > opt("--tk-sample"):
            by_function = collections.defaultdict(list)
            for item in kept:
                by_function[item.originalname].append(item.nodeid)
            # Shared evenly by the test functions; the same draw in every process (xdist's workers must agree).
            rng, quota, left = random.Random(opt("--tk-seed")), {}, opt("--tk-sample")
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
        self.write(event="selection", collected=collected, left_out=dict(left_out), eligible=eligible,
                   ran=len(kept), stand_ins=self.stand_ins,
                   functions=dict(collections.Counter(i.originalname for i in kept)))


def pytest_configure(config):
    config.pluginmanager.register(Plugin(config), "triton_kernels_ops_plugin")


# --- the driver: every file, in a pytest process each ----------------------------------------------------


def timeout_where(dump: str) -> str:
    """The test thread's frames outside torch, the standard library and this harness, innermost first, up to
    the test file, from faulthandler's dump."""
    dump = dump[dump.rindex("Timeout ("):]
    for block in dump.split("\nThread ")[1:]:
        if "_pytest" not in block:
            continue
        frames = []
        for line in block.splitlines()[1:]:
            m = re.match(r'\s*File "([^"]+)", line (\d+) in (\S+)', line)
            if m and not m[1].startswith("<") and not harness_frame(m[1]):
                frames.append(f"{Path(m[1]).name}:{m[2]} {m[3]}")
                if Path(m[1]).name.startswith("test_"):
                    break
        return " < ".join(frames)
    return ""


def run_file(checkout: Path, name: str, args, scratch: Path) -> tuple[dict, dict, list[str], float]:
    progress = scratch / (name + ".jsonl")
    progress.write_text("")
    test_timeout = args.test_timeout
    for old in scratch.glob(name.replace(".py", "") + ".*.timeout"):
        old.unlink()
    env = dict(os.environ, TEGULA_CONFORMANCE_DEVICE="cpu",
               PYTHONPATH=os.pathsep.join([str(SHIM), str(HERE), str(checkout)] +
                                          ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    command = [sys.executable, "-m", "pytest", str(checkout / "test" / name), "-p", "triton_kernels_ops",
               "-p", "no:cacheprovider", "-q", "-rN", "--rootdir", str(checkout), "-c", os.devnull,
               "--tk-progress", str(progress), "--tk-test-timeout", str(test_timeout),
               "--tk-sample", str(args.sample), "--tk-seed", str(args.seed), *(["--tk-all"] if args.all else []),
               "--tk-capability", args.capability,
               *(["--tk-no-placeholders"] if args.no_placeholders else []),
               *(["--tk-single-config-unpruned"] if args.single_config_unpruned else []),
               *(["-k", args.k] if args.k else []),
               *(["-n", str(args.workers), "--max-worker-restart", "100000"] if args.workers > 0 else [])]
    return run_pytest(command, checkout, env, scratch, name, progress, test_timeout, args.file_timeout, timeout_where)


COLUMNS = ("passed", "failed", "skipped", "errored", "timeout", "crashed", "not run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", help="a triton-lang/kernels work tree (kernels/ and test/)")
    parser.add_argument("files", nargs="*", help="test files under test/ (default: every test_*.py)")
    parser.add_argument("--sample", type=int, default=0, help="a seeded sample of this many tests per file, "
                                                              "shared by its test functions (default 0: all)")
    parser.add_argument("--all", action="store_true", help="the LEAVE_OUT cases too (large test_softmax widths)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("-k", help="pytest's -k expression, applied before the sample")
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers (0: no xdist)")
    parser.add_argument("--capability", default="9.0", help="torch.cuda.get_device_capability() (default 9.0)")
    parser.add_argument("--no-placeholders", action="store_true",
                        help="no placeholders for the triton.testing names the library imports")
    parser.add_argument("--single-config-unpruned", action="store_true",
                        help="pass over the matmul autotuner's pruning while it holds one config, as Triton does")
    parser.add_argument("--test-timeout", type=float, default=TEST_TIMEOUT, help="seconds one test may take")
    parser.add_argument("--file-timeout", type=float, default=600, help="seconds one file may take")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    parser.add_argument("--work", type=Path, help="keep each file's log and progress here (default: a "
                                                  "temporary folder)")
    args = parser.parse_args()

    checkout = Path(args.checkout).resolve()
    if not (checkout / "test").is_dir() or not (checkout / "kernels").is_dir():
        sys.exit(f"{checkout} is not a triton-lang/kernels work tree (no kernels/ and test/)")
    files = args.files or sorted(p.name for p in (checkout / "test").glob("test_*.py"))
    everything, groups = {}, collections.defaultdict(list)
    totals = collections.Counter()
    stand_ins = []
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
    what = f"a sample of {args.sample} (seed {args.seed})" if args.sample else "every case"
    print(f"triton-lang/kernels {checkout}; per file: {what}{'' if args.all else ' but LEAVE_OUT'}"
          f"{f', -k {args.k!r}' if args.k else ''}; xdist -n {args.workers}; test timeout {args.test_timeout:.0f}s; "
          f"capability {args.capability}; "
          f"TEGULA_NUM_THREADS={os.environ.get('TEGULA_NUM_THREADS', 'unset')}", flush=True)
    print(f"{'file':26s} " + " ".join(f"{c:>7s}" for c in COLUMNS) + "   time  selection", flush=True)
    with (tempfile.TemporaryDirectory(prefix="triton-kernels-") if args.work is None
          else contextlib.nullcontext(str(args.work.resolve()))) as scratch:
        for name in files:
            outcomes, selection, notes, elapsed = run_file(checkout, name, args, Path(scratch))
            stand_ins = selection.get("stand_ins", stand_ins)
            counts = collections.Counter(o["outcome"] for o in outcomes.values())
            counts["not run"] += selection["not_started"]
            totals.update(counts)
            functions = ", ".join(f"{f} {n}" for f, n in selection.get("functions", {}).items())
            left = ", ".join(f"{n} {why}" for why, n in selection.get("left_out", {}).items())
            print(f"{name:26s} " + " ".join(f"{counts[c]:7d}" for c in COLUMNS) + f" {elapsed:5.0f}s  "
                  f"ran {selection.get('ran', 0)} of {selection.get('eligible', 0)} eligible of "
                  f"{selection.get('collected', 0)} collected ({functions})" + (f"; left out: {left}" if left else ""),
                  flush=True)
            for note in notes:
                print("    " + note)
            for test, o in outcomes.items():
                everything[test] = o
                if o["outcome"] not in ("passed", "skipped", "not run"):
                    groups[normalized(o.get("error", "?"))].append(test)
            skips = collections.Counter(normalized(o.get("error", "")) for o in outcomes.values()
                                        if o["outcome"] == "skipped")
            for why, n in skips.most_common():
                print(f"    skipped {n}: {why}")
    print_summary(totals, groups, everything, stand_ins, COLUMNS, args.json)


if __name__ == "__main__":
    main()
