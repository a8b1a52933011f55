"""FlagGems's operator tests (FlagOpen/FlagGems, tests/test_*_ops.py) on Tegula's CPU backend, through the
conformance shim's `triton` package. FlagGems is not part of Tegula; point this at a checkout (a work tree;
it needs torch, numpy, pytest, PyYAML and scipy for a few files):

    .venv/bin/python tools/conformance/flaggems_ops.py <FlagGems checkout> [test_unary_pointwise_ops.py ...]
        [--full] [--no-block-pointers] [--test-timeout S] [--file-timeout S] [--json OUT] [--work DIR]

Each test file runs in its own process, under FlagGems's pytest options `--ref cpu --mode quick` (the
reduced shapes; `--full` drops `--mode quick`), one test at a time, with TEGULA_NUM_THREADS=1 unless it is
set. A test that runs past --test-timeout (compiles included) is killed with its process and counted as a
hang, a test whose process dies is counted as a crash; the file then goes on from the next test. A file
past --file-timeout stops where it is (the output says so). Prints, per file,
the passed / failed / skipped / errored / hung counts, then the failures grouped by their first error line,
most common first.

FlagGems picks its vendor from GEMS_VENDOR, among the vendors its `vendors` enum lists; its CPU vendor
`_arm` (device "cpu") is not in that enum at every revision, and FlagGems's CPU path reads a few torch.cpu
functions that torch lacks. To get to the kernels, this puts some stand-ins in place; each one says where
the gap is, and is printed with the results. Tegula and the shim stand in for nothing: a name they lack
fails the tests that reach it.

  FlagGems / torch:
    - `arm` is added to FlagGems's vendor enum (commom_utils.vendors) and GEMS_VENDOR=arm is set.
    - torch.cpu.device(...) is a null context (FlagGems enters `torch_device_fn.device(t.device)` around
      its launches); torch.cpu.get_device_properties gives multi_processor_count = the CPU count;
      torch.cpu.get_device_capability gives (0, 0); torch.cpu.current_device() gives 0, not "cpu" (LibEntry
      indexes its per-device kernel caches by it); torch.cpu.default_generators[any device] is one
      object with a CUDA generator's Philox state (two int64: seed, offset), which FlagGems's random ops
      and attention read and advance (the CPU generator's state is Mersenne Twister's).
    - with --no-block-pointers only: FlagGems's codegen setting prefer_block_pointer is False for the
      vendor (its generated pointwise kernels index plain pointers), to see past the block-pointer failures.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"


# --- the worker: one test file, in this process -------------------------------------------------------------


def install_standins(checkout: Path, no_block_pointers: bool) -> list[str]:
    """Puts the stand-ins of the docstring in place before FlagGems is imported; returns what it did."""
    import contextlib
    import dataclasses
    import enum
    import importlib.abc
    import importlib.util
    import types

    done = []
    sys.path.insert(0, str(SHIM))
    sys.path.insert(0, str(checkout / "src"))
    os.environ["GEMS_VENDOR"] = "arm"

    # FlagGems's vendor enum, loaded on its own (importing it as flag_gems.runtime.commom_utils would import
    # all of flag_gems first) with `arm` added when it lacks it.
    name = "flag_gems.runtime.commom_utils"
    spec = importlib.util.spec_from_file_location(name, checkout / "src/flag_gems/runtime/commom_utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if "ARM" not in module.vendors.__members__:
        old = module.vendors
        new = enum.Enum("vendors", [(v.name, v.value) for v in old] + [("ARM", max(v.value for v in old) + 1)])
        new.get_all_vendors = classmethod(lambda cls: {v.name.lower(): v for v in cls})
        module.vendors = new
        done.append("FlagGems: vendor 'arm' added to commom_utils.vendors")
    sys.modules[name] = module

    if no_block_pointers:
        # FlagGems's codegen settings are read while flag_gems is imported: patch the module as it loads.
        class AfterCodegenConfig(importlib.abc.MetaPathFinder):
            def find_spec(self, fullname, path, target=None):
                if fullname != "flag_gems.utils.codegen_config_utils":
                    return None
                sys.meta_path.remove(self)
                spec = importlib.util.find_spec(fullname)
                exec_module = spec.loader.exec_module

                def patched(module):
                    exec_module(module)
                    config = module.get_codegen_config()
                    module.CODEGEN_COFIGS[module.device.vendor] = dataclasses.replace(
                        config, prefer_block_pointer=False)

                spec.loader.exec_module = patched
                return spec

        sys.meta_path.insert(0, AfterCodegenConfig())
        done.append("FlagGems: pointwise_dynamic's codegen config prefer_block_pointer=False (--no-block-pointers)")

    import torch

    if not hasattr(torch.cpu, "device"):
        torch.cpu.device = lambda *a, **k: contextlib.nullcontext()
        done.append("torch: torch.cpu.device is a null context")
    if not hasattr(torch.cpu, "get_device_properties"):
        torch.cpu.get_device_properties = lambda *a, **k: types.SimpleNamespace(
            multi_processor_count=os.cpu_count() or 1, name="cpu", L2_cache_size=1 << 20)
        done.append("torch: torch.cpu.get_device_properties")
    if not hasattr(torch.cpu, "default_generators"):
        class PhiloxState:
            """What FlagGems reads of a CUDA generator: a state of two int64, (seed, offset)."""

            def __init__(self):
                self.state = torch.tensor([torch.initial_seed() & (2**63 - 1), 0], dtype=torch.int64)

            def get_state(self):
                return self.state.clone().view(torch.uint8)

            def set_state(self, state):
                self.state = state.view(torch.int64).clone()

        generator = PhiloxState()
        torch.cpu.default_generators = collections.defaultdict(lambda: generator)
        done.append("torch: torch.cpu.default_generators[...] is one Philox-style (seed, offset) state")
    if not isinstance(torch.cpu.current_device(), int):
        torch.cpu.current_device = lambda: 0
        done.append("torch: torch.cpu.current_device() is 0 (FlagGems indexes per-device tuples by it)")
    if not hasattr(torch.cpu, "get_device_capability"):
        torch.cpu.get_device_capability = lambda *a, **k: (0, 0)
        done.append("torch: torch.cpu.get_device_capability is (0, 0)")

    import triton

    assert Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"
    return done


def first_error_line(excinfo) -> str:
    text = str(excinfo.value).strip()
    line = text.splitlines()[0] if text else ""
    return f"{excinfo.typename}: {line}"[:300]


def where(excinfo) -> str:
    """The innermost frame of the traceback outside the standard library and torch: where it failed."""
    frames = [entry for entry in excinfo.traceback
              if "/torch/" not in str(entry.path) and "/lib/python3" not in str(entry.path)]
    entry = frames[-1] if frames else excinfo.traceback[-1]
    return f"{entry.path}:{entry.lineno + 1}"


class Recorder:
    """A pytest plugin: one JSON line per test to `progress` (a "start" line before it runs)."""

    def __init__(self, progress: Path):
        self.out = open(progress, "a", buffering=1)
        self.errors = {}

    def write(self, **record):
        self.out.write(json.dumps(record) + "\n")

    def pytest_runtest_logstart(self, nodeid, location):
        self.write(event="start", test=nodeid, time=time.time())

    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is not None:
            self.errors.setdefault(item.nodeid, (first_error_line(call.excinfo), where(call.excinfo)))

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = "errored" if report.when == "setup" and report.failed else report.outcome
            record = {"event": "done", "test": report.nodeid, "outcome": outcome}
            if report.skipped:
                record["error"] = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else "")[:300]
            elif report.failed:
                record["error"], record["where"] = self.errors.get(report.nodeid, ("?", ""))
            self.write(**record)

    def pytest_collectreport(self, report):
        if report.failed:
            text = str(report.longrepr).strip().splitlines()
            error = next((line for line in reversed(text) if line.startswith("E ")), text[-1] if text else "?")
            self.write(event="done", test=report.nodeid or "<collection>", outcome="errored",
                       error="collection: " + error[1:].strip()[:300], where="")


def worker(args) -> None:
    checkout = Path(args.checkout).resolve()
    for line in install_standins(checkout, args.no_block_pointers):
        print("stand-in:", line, flush=True)
    import pytest

    deselect = []
    for test in Path(args.skip_list).read_text().split("\n") if args.skip_list else []:
        if test:
            deselect += ["--deselect", test]
    options = ["--ref", "cpu", "-p", "no:cacheprovider", "-q", "-rN", "--rootdir", str(checkout),
               "-c", str(checkout / "pytest.ini"), *([] if args.full else ["--mode", "quick"])]
    sys.exit(pytest.main([*options, *deselect, str(checkout / "tests" / args.files[0])],
                         plugins=[Recorder(Path(args.progress))]))


# --- the driver: every file, in a process each -----------------------------------------------------------


def read_progress(path: Path) -> tuple[dict, str | None, float]:
    """(test -> its record, the test started and not done, when it started)."""
    done, started, since = {}, None, 0.0
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record["event"] == "start":
                started, since = record["test"], record["time"]
            else:
                done[record["test"]] = record
                if record["test"] == started:
                    started = None
    return done, started, since


def run_file(checkout: Path, name: str, args, scratch: Path) -> tuple[dict, list[str]]:
    progress = scratch / (name + ".jsonl")
    skip_list = scratch / (name + ".skip")
    progress.write_text("")
    skip_list.write_text("")
    env = dict(os.environ, TEGULA_CONFORMANCE_DEVICE="cpu")
    env.setdefault("FLAGGEMS_CACHE_DIR", str(scratch / "flaggems-cache"))  # FlagGems's generated kernels
    env.setdefault("TEGULA_NUM_THREADS", "1")
    log = []
    started_file = time.time()

    def record(test, outcome, error):  # a test the worker could not report on, as if it had
        with open(progress, "a") as out:
            out.write(json.dumps({"event": "done", "test": test, "outcome": outcome, "error": error,
                                  "where": ""}) + "\n")

    while True:
        command = [sys.executable, str(Path(__file__).resolve()), str(checkout), name, "--worker",
                   "--progress", str(progress), "--skip-list", str(skip_list), *(["--full"] if args.full else []),
                   *(["--no-block-pointers"] if args.no_block_pointers else [])]
        with open(scratch / (name + ".log"), "a") as out:
            process = subprocess.Popen(command, cwd=scratch, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            hung = out_of_time = None
            while process.poll() is None:
                time.sleep(1)
                done, started, since = read_progress(progress)
                if started and time.time() - since > args.test_timeout:
                    hung = started
                elif time.time() - started_file > args.file_timeout:
                    out_of_time = started or "its start"
                if hung or out_of_time:
                    os.killpg(process.pid, 9)
                    process.wait()
                    break
        done, started, _ = read_progress(progress)
        if out_of_time:
            log.append(f"file timeout after {args.file_timeout:.0f}s: tests from {out_of_time} on not run")
            break
        if hung:
            record(hung, "hung", f"hang: no result in {args.test_timeout:.0f}s")
        elif started is not None:  # the worker died inside a test: a crash
            record(started, "crashed", f"crash: the process exited with {process.returncode} inside the test")
        else:
            break
        # Go on from the next test: deselect every test that has a result.
        done, _, _ = read_progress(progress)
        skip_list.write_text("\n".join(sorted(done)) + "\n")
    if not done and process.returncode not in (0, 5):  # nothing ran: the conftest or an import failed
        lines = (scratch / (name + ".log")).read_text().splitlines()
        error = next((line[1:].strip() for line in reversed(lines) if line.startswith("E ")),
                     lines[-1] if lines else "?")
        done["<import>"] = {"test": "<import>", "outcome": "errored", "error": "import: " + error[:300], "where": ""}
    stand_ins = [line[len("stand-in: "):] for line in (scratch / (name + ".log")).read_text().splitlines()
                 if line.startswith("stand-in: ")]
    return done, sorted(set(stand_ins)) + log


def normalized(error: str) -> str:
    line = re.sub(r"(?<![\w.])/[^\s:'\"]*/", "", error)  # paths: their file names
    line = re.sub(r"pointwise_dynamic_[0-9a-f]{16,}_\w+?\.py", "pointwise_dynamic_<op>.py", line)  # generated
    line = re.sub(r"[0-9a-f]{16,}", "…", line)  # other hashes
    line = re.sub(r"0x[0-9a-f]+", "0x…", line)
    line = re.sub(r"\btl\.[a-z]+\d+\b", "tl.<dtype>", line)
    line = re.sub(r"(?<![\w.])\d+(\.\d+)?(e[-+]?\d+)?(?!\w)", "N", line)
    return line[:200]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", help="a FlagGems work tree")
    parser.add_argument("files", nargs="*", help="test files under tests/ (default: every test_*_ops.py)")
    parser.add_argument("--full", action="store_true", help="FlagGems's full shapes (not --mode quick)")
    parser.add_argument("--no-block-pointers", action="store_true",
                        help="FlagGems's generated pointwise kernels without block pointers (its codegen option)")
    parser.add_argument("--test-timeout", type=float, default=300, help="seconds one test may take")
    parser.add_argument("--file-timeout", type=float, default=3600, help="seconds one file may take")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    parser.add_argument("--work", type=Path, help="keep each file's log and progress here (default: a "
                                                  "temporary folder)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    parser.add_argument("--skip-list", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    checkout = Path(args.checkout).resolve()
    if not (checkout / "tests").is_dir():
        sys.exit(f"{checkout} is not a FlagGems work tree (no tests/)")
    files = args.files or sorted(p.name for p in (checkout / "tests").glob("test_*_ops.py"))
    everything, groups = {}, collections.defaultdict(list)
    totals = collections.Counter()
    stand_ins = set()
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
    with (tempfile.TemporaryDirectory(prefix="flaggems-") if args.work is None
          else contextlib.nullcontext(str(args.work.resolve()))) as scratch:
        for name in files:
            started = time.time()
            outcomes, notes = run_file(checkout, name, args, Path(scratch))
            stand_ins.update(n for n in notes if n.startswith(("FlagGems:", "torch:", "shim:", "Tegula:")))
            counts = collections.Counter(o["outcome"] for o in outcomes.values())
            totals.update(counts)
            print(f"{name:40s} {counts['passed']:5d} passed {counts['failed']:5d} failed {counts['skipped']:5d} "
                  f"skipped {counts['errored']:4d} errored {counts['hung'] + counts['crashed']:3d} hung/crashed "
                  f"({time.time() - started:.0f}s)", flush=True)
            for note in notes:
                if not note.startswith(("FlagGems:", "torch:", "shim:", "Tegula:")):
                    print("    " + note)
            for test, o in outcomes.items():
                everything[test] = o
                if o["outcome"] not in ("passed", "skipped"):
                    groups[normalized(o.get("error", "?"))].append(test)
        if stand_ins:
            print("stand-ins: " + "; ".join(sorted(stand_ins)))
    ran = totals["passed"] + totals["failed"] + totals["errored"] + totals["hung"] + totals["crashed"]
    print(f"overall: {totals['passed']} passed of {ran} that ran ({totals['passed'] / max(ran, 1):.1%}); "
          f"{totals['failed']} failed, {totals['errored']} errored, {totals['hung']} hung, "
          f"{totals['crashed']} crashed, {totals['skipped']} skipped")
    for cause, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        names = sorted({t.split("::")[-1].split("[")[0] for t in tests})
        print(f"{len(tests):6d}  {cause}\n        ({', '.join(names[:6])}{', ...' if len(names) > 6 else ''})")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
