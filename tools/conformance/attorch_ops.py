"""attorch's own test suite (BobMcDear/attorch, tests/test_*.py: PyTorch layers written in Triton, forward and
backward, each compared against torch) on Tegula's CPU backend, through the conformance shim's `triton`
package. attorch is not part of Tegula; point this at a checkout (a work tree with attorch/ and tests/; it
needs torch, pytest and pytest-xdist):

    .venv/bin/python tools/conformance/attorch_ops.py <attorch checkout> [test_act_layers.py ...]
        [--sample N | --all] [--seed S] [--max-numel N] [-k EXPR] [-n WORKERS] [--no-autocast]
        [--test-timeout S] [--file-timeout S] [--json OUT] [--work DIR]

Each test file runs in its own pytest process, unchanged, with pytest-xdist (`-n 2` by default) and this
module as a pytest plugin (`-p attorch_ops`), which puts the stand-ins below in place before attorch is
imported, chooses the subset that runs and records every test's outcome. The full grid is far too large for
a CPU (test_conv_layer.py alone has over 300000 cases, most on inputs of millions of elements), so by
default each file runs a seeded sample, shared evenly by its test functions, of the cases whose `shape`
has at most --max-numel elements (a test whose every shape is larger keeps its smallest). The defaults are
20 tests and 262144 elements a file; FILE_DEFAULTS lowers the sample (and raises the timeout) for the
convolution and pooling files, whose cases cost minutes each, and raises the cap for attention's, whose
shapes are all larger. `--all` runs every case under the cap; -k is pytest's, applied first. Left out
before sampling, and counted as such in the output:

  - input_dtype=float16 with amp=False, and the EARLY_RETURNS cases (batch 1 in test_batch_norm_layer,
    heads that do not divide the width in test_multi_head_attention_layer, tuple kernels on 1-D
    convolutions): attorch's tests return at once for them.
  - with --no-autocast only, input_dtype=float32 with amp=True: they repeat the amp=False case.

A test that passes without calling torch at all returned before testing anything: it is counted as
`vacuous`, not passed.

A test past --test-timeout (its compiles and autotuning included) is ended by faulthandler's watchdog, which
dumps the stacks and exits the worker; xdist starts a new worker and goes on. It is counted as a timeout,
with the frame the test was in; a worker that dies otherwise inside a test is counted as a crash. A file
past --file-timeout is stopped where it is (the output says so) and its tests not yet run are counted as
not run. TEGULA_NUM_THREADS is left as it is (unset: Tegula's default). Tegula's kernel and tuning caches
are on disk, so a second run compiles and tunes less than the first.

Prints, per file, the passed / failed / skipped / errored / timed-out / crashed / vacuous counts, the time
and what ran, then the failures grouped by their first error line (paths, hashes and numbers normalized),
most common first, each with its tests and where they failed: the innermost frame outside torch and the
standard library, and the line of the test file (which of the test's checks).

attorch's tests put their tensors and torch's reference layers on 'cuda' and run under autocast('cuda'),
and attorch reads the GPU's compute capability. Stand-ins, all at torch's level (attorch's files are not
edited; Tegula and the shim stand in for nothing: a name they lack fails the tests that reach it):

  - attorch's GPU assumptions: a torch function mode turns `device='cuda'` (any index; a keyword argument
    of any torch function, and the device argument of Tensor.to) into the CPU. It covers the tests'
    create_input, torch.randint, torch.tensor and nn.Linear/Conv/LayerNorm/... (device='cuda'), and the
    layers' own `device='cuda'` defaults and scratch tensors (batch_norm_layer.py, pooling_layer.py).
  - attorch's GPU assumptions: torch.cuda.get_device_capability() is (8, 0). attorch reads it while
    conv_kernels.py is imported (num_stages of its configs), to ask for TF32 dots in the conv and linear
    kernels, and in multi_head_attention_kernels.py, which refuses anything below 8 (MMA_V3 is then off).
    torch raises without an NVIDIA driver.
  - torch without CUDA: torch turns autocast('cuda') off (with a warning), which leaves the amp=True cases
    with float16 inputs failing inside torch's own references (float16 inputs, float32 weights). So
    torch.autocast('cuda'), torch.is_autocast_enabled('cuda' or no argument) and
    torch.get_autocast_dtype('cuda') (and torch.amp's custom_fwd/custom_bwd, which read them) are CPU
    autocast in float16, CUDA autocast's default. --no-autocast leaves all this out.
  - torch's CPU autocast: its op lists are not CUDA's. Under the stand-in above, the torch function mode
    casts float16 tensors to float32 for softmax, log_softmax, softmin, layer_norm, group_norm, rms_norm and
    softplus, which have a CUDA autocast kernel and no CPU one (CUDA computes them in float32; on CPU they
    would stay float16).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"
CAPABILITY = (8, 0)
SAMPLE, MAX_NUMEL, TEST_TIMEOUT = 20, 1 << 18, 120
# Files whose cases cost far more on a CPU, or whose shapes are all large.
FILE_DEFAULTS = {
    # (1, 3, 224, 224) images into up to 1024 channels, with 16 configs to tune
    "test_conv_layer.py": {"sample": 4, "test_timeout": 240},
    "test_pooling_layer.py": {"sample": 8},
    "test_multi_head_attention_layer.py": {"max_numel": 1 << 23},  # its 3-D shapes start at 1.5M elements
}

# attorch's tests that return at once for some parameters: (why, a test of the parameters).
EARLY_RETURNS = {
    "test_batch_norm_layer": ("batch of 1", lambda p: p["shape"][0] == 1),
    "test_multi_head_attention_layer": ("heads that do not divide the width",
                                        lambda p: p["shape"][-1] % p["num_heads"] != 0),
    "test_conv2d_layer": ("tuple kernel on a 1-D convolution",
                          lambda p: len(p["shape"]) == 3 and isinstance(p["kernel_size"], tuple)),
}

# --- the pytest plugin: in every pytest process of a file (controller and xdist workers) ----------------


def pytest_addoption(parser):
    group = parser.getgroup("attorch_ops")
    group.addoption("--ao-progress", help="append one JSON line per test event here")
    group.addoption("--ao-test-timeout", type=float, default=0.0)
    group.addoption("--ao-sample", type=int, default=0, help="tests drawn per file (0: all)")
    group.addoption("--ao-seed", type=int, default=0)
    group.addoption("--ao-max-numel", type=int, default=0)
    group.addoption("--ao-no-autocast", action="store_true")


def is_cuda(device) -> bool:
    import torch

    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return isinstance(device, torch.device) and device.type == "cuda"


def install_standins(autocast: bool) -> tuple[list[str], object]:
    import torch
    from torch.overrides import TorchFunctionMode

    done = []

    F = torch.nn.functional
    # Ops that CUDA's autocast runs in float32 and CPU autocast's lists leave in float16.
    cuda_fp32_ops = {F.softmax, F.log_softmax, F.softmin, F.layer_norm, F.group_norm, F.rms_norm, F.softplus,
                     torch.Tensor.softmax, torch.Tensor.log_softmax}

    def to_fp32(value):
        return value.float() if isinstance(value, torch.Tensor) and value.dtype == torch.float16 else value

    class CudaOnCpu(TorchFunctionMode):
        """device='cuda' -> the CPU; with the autocast stand-in, CUDA autocast's float32 ops; counts the torch
        calls (a test that makes none returned before testing anything)."""
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            CudaOnCpu.calls += 1
            kwargs = kwargs or {}
            if "device" in kwargs and is_cuda(kwargs["device"]):
                kwargs = {**kwargs, "device": "cpu"}
            if getattr(func, "__name__", "") == "to" and len(args) > 1 and is_cuda(args[1]):
                args = (args[0], "cpu", *args[2:])
            if (autocast and func in cuda_fp32_ops and kwargs.get("dtype") is None
                    and torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.float16):
                args, kwargs = [to_fp32(a) for a in args], {k: to_fp32(v) for k, v in kwargs.items()}
            return func(*args, **kwargs)

    mode = CudaOnCpu()
    mode.__enter__()  # on for the rest of the process
    done.append("torch: a torch function mode maps device='cuda' (keyword, Tensor.to) to the CPU")

    torch.cuda.get_device_capability = lambda device=None: CAPABILITY
    done.append(f"torch: torch.cuda.get_device_capability() is {CAPABILITY}")

    if autocast:
        import torch.amp.autocast_mode as autocast_mode

        class CudaAutocastOnCpu(autocast_mode.autocast):
            def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
                if device_type == "cuda":
                    device_type, dtype = "cpu", dtype or torch.float16
                super().__init__(device_type, dtype, enabled, cache_enabled)

        def cpu_for_cuda(device_type):
            return "cpu" if device_type == "cuda" else device_type

        is_enabled, get_dtype = torch.is_autocast_enabled, torch.get_autocast_dtype
        torch.autocast = torch.amp.autocast = autocast_mode.autocast = CudaAutocastOnCpu
        # No argument means CUDA (torch's deprecated form, which attorch's get_output_dtype uses).
        torch.is_autocast_enabled = lambda device_type="cuda": is_enabled(cpu_for_cuda(device_type))
        torch.get_autocast_dtype = lambda device_type: (
            torch.float16 if device_type == "cuda" and not is_enabled("cpu") else get_dtype(cpu_for_cuda(device_type)))
        done.append("torch: autocast('cuda') is CPU autocast in float16 (is_autocast_enabled, get_autocast_dtype "
                    "and custom_fwd/custom_bwd read it)")
        done.append("torch: under it, softmax, log_softmax, softmin, layer_norm, group_norm, rms_norm and softplus "
                    "take float16 inputs in float32, as CUDA's autocast does")

    import triton

    assert Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"
    return done, mode


def first_error_line(excinfo) -> str:
    text = str(excinfo.value).strip()
    line = text.splitlines()[0] if text else ""
    return f"{excinfo.typename}: {line}"[:300]


def where(excinfo) -> str:
    """The innermost frame outside the standard library and torch (where it failed), and the innermost frame
    of the test file (which check of the test it was), when they differ."""
    frames = [entry for entry in excinfo.traceback
              if "/torch/" not in str(entry.path) and "/lib/python3" not in str(entry.path)
              and Path(str(entry.path)).resolve() != Path(__file__).resolve()]
    entry = frames[-1] if frames else excinfo.traceback[-1]
    test = next((e for e in reversed(excinfo.traceback) if Path(str(e.path)).name.startswith("test_")), None)
    at = f"{entry.path}:{entry.lineno + 1}"
    return at if test is None or test is entry else f"{at} (from {Path(str(test.path)).name}:{test.lineno + 1})"


def numel(shape) -> int:
    return math.prod(shape) if isinstance(shape, tuple) else 0


class Plugin:
    def __init__(self, config):
        self.config = config
        opt = config.getoption
        self.worker = getattr(config, "workerinput", {}).get("workerid")
        self.xdist_controller = self.worker is None and getattr(config.option, "numprocesses", None)
        self.out = open(opt("--ao-progress"), "a", buffering=1) if opt("--ao-progress") else None
        self.timeout = opt("--ao-test-timeout")
        self.errors = {}
        # xdist's controller runs no test and imports no attorch.
        self.stand_ins, self.mode = ([], None) if self.xdist_controller else install_standins(
            not opt("--ao-no-autocast"))
        self.calls_before = 0
        self.torch_calls = {}
        self.watchdog = None
        if self.out and self.timeout and not self.xdist_controller:
            path = Path(opt("--ao-progress")).with_suffix(f".{os.getpid()}.timeout")
            self.watchdog = open(path, "w")

    def write(self, **record):
        if self.out is not None and not self.xdist_controller:  # the process that runs the tests records them
            self.out.write(json.dumps({**record, "pid": os.getpid()}) + "\n")

    # what runs
    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected theirs
    def pytest_collection_modifyitems(self, session, config, items):
        opt = config.getoption
        cap = opt("--ao-max-numel")
        candidates, left_out = collections.defaultdict(list), collections.Counter()
        for item in items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            dtype, amp = str(params.get("input_dtype", "")), params.get("amp")
            early = EARLY_RETURNS.get(item.originalname)
            if dtype == "torch.float16" and amp is False:
                left_out["float16 without amp (the test returns at once)"] += 1
            elif early and early[1](params):
                left_out[f"{early[0]} (the test returns at once)"] += 1
            elif dtype == "torch.float32" and amp is True and opt("--ao-no-autocast"):
                left_out["float32 with amp (autocast('cuda') is off: repeats amp=False)"] += 1
            else:
                candidates[item.originalname].append(item)
        eligible = {}
        for function, cases in candidates.items():
            sizes = [numel(getattr(getattr(i, "callspec", None), "params", {}).get("shape")) for i in cases]
            # A test whose every shape is over the cap keeps its smallest one.
            limit = max(cap, min(sizes)) if cap else math.inf
            eligible[function] = [i for i, n in zip(cases, sizes) if n <= limit]
            if len(eligible[function]) < len(cases):
                left_out[f"shape over {limit} elements"] += len(cases) - len(eligible[function])
        kept = [i for cases in eligible.values() for i in cases]
        n_eligible = len(kept)
        if opt("--ao-sample") and len(kept) > opt("--ao-sample"):
            # Shared evenly by the file's test functions; the same draw in every process (xdist's workers must
            # collect the same tests).
            rng, quota, left = random.Random(opt("--ao-seed")), {}, opt("--ao-sample")
            for k, function in enumerate(sorted(eligible, key=lambda f: len(eligible[f]))):
                quota[function] = min(len(eligible[function]), left // (len(eligible) - k))
                left -= quota[function]
            drawn = set()
            for function in sorted(eligible):
                drawn.update(rng.sample(sorted(i.nodeid for i in eligible[function]), quota[function]))
            kept = [item for item in kept if item.nodeid in drawn]
        chosen = set(kept)
        deselected = [item for item in items if item not in chosen]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = kept
        self.write(event="selection", collected=len(items) + len(deselected), left_out=dict(left_out), cap=cap,
                   eligible=n_eligible, ran=len(kept), stand_ins=self.stand_ins)

    # recording
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        self.calls_before = type(self.mode).calls

    def pytest_runtest_makereport(self, item, call):
        if call.when == "call":
            self.torch_calls[item.nodeid] = type(self.mode).calls - self.calls_before
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
            elif self.torch_calls.get(report.nodeid) == 0:
                record["outcome"] = "vacuous"
            self.write(**record)

    def pytest_collectreport(self, report):
        if report.failed:
            self.write(**collection_error(report))


def pytest_configure(config):
    config.pluginmanager.register(Plugin(config), "attorch_ops_plugin")


# --- the driver: every file, in a pytest process each ----------------------------------------------------


def read_progress(path: Path) -> tuple[dict, dict, dict]:
    """(test -> its done record, test -> its start record without a done one, the selection record)."""
    done, started, selection = {}, {}, {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record["event"] == "start":
                started[record["test"]] = record
            elif record["event"] == "selection":
                selection = selection or record
            else:
                done.setdefault(record["test"], record)
    return done, {t: r for t, r in started.items() if t not in done}, selection


def timeout_where(dump: str) -> str:
    """From faulthandler's dump: the test thread's frames outside torch and the standard library, innermost
    first, up to the test file ("jit.py:433 run < autotune.py:693 _time < ... < test_conv_layer.py:68")."""
    dump = dump[dump.rindex("Timeout ("):]
    for block in dump.split("\nThread ")[1:]:
        if "_pytest" not in block:
            continue
        frames = []
        for line in block.splitlines()[1:]:
            m = re.match(r'\s*File "([^"]+)", line (\d+) in (\S+)', line)
            if (m and "/torch/" not in m[1] and "/lib/python3" not in m[1] and not m[1].startswith("<")
                    and Path(m[1]).name != Path(__file__).name):
                frames.append(f"{Path(m[1]).name}:{m[2]} {m[3]}")
                if Path(m[1]).name.startswith("test_"):
                    break
        return " < ".join(frames)
    return ""


def run_pytest(command: list, checkout: Path, env: dict, scratch: Path, name: str, progress: Path,
               test_timeout: float, file_timeout: float, where_stopped=None) -> tuple[dict, dict, list[str], float]:
    """Runs one test file's pytest `command` (which records each test in `progress` and leaves a
    faulthandler dump per timed-out worker in `scratch`) and reads back (outcomes by test, what was
    selected, notes, seconds). Shared with triton_kernels_ops.py; `where_stopped` reads a dump (default:
    timeout_where)."""
    where_stopped = where_stopped or timeout_where
    notes = []
    started = time.time()
    with open(scratch / (name + ".log"), "w") as out:
        process = subprocess.Popen(command, cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            process.wait(timeout=file_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            notes.append(f"file timeout after {file_timeout:.0f}s: the tests not run by then are not run")
    elapsed = time.time() - started
    done, unfinished, selection = read_progress(progress)
    timed_out = {}  # pid -> where its test was when the watchdog fired
    for path in scratch.glob(name.replace(".py", "") + ".*.timeout"):
        text = path.read_text(errors="replace")
        if "Timeout (" in text:
            timed_out[int(path.suffixes[-2][1:])] = where_stopped(text)
    for test, record in unfinished.items():
        if notes:
            done[test] = {"test": test, "outcome": "not run", "error": "file timeout", "where": ""}
        elif record["pid"] in timed_out:
            done[test] = {"test": test, "outcome": "timeout", "error": f"timeout: no result in {test_timeout:.0f}s",
                          "where": timed_out[record["pid"]]}
        else:
            done[test] = {"test": test, "outcome": "crashed", "error": "crash: the worker died inside the test",
                          "where": ""}
    if not selection and not done:  # nothing ran: pytest or an import failed before collection
        lines = (scratch / (name + ".log")).read_text().splitlines()
        error = next((line[1:].strip() for line in reversed(lines) if line.startswith("E ")),
                     lines[-1] if lines else "?")
        done["<import>"] = {"test": "<import>", "outcome": "errored", "error": "import: " + error[:300], "where": ""}
    selection["not_started"] = max(0, selection.get("ran", 0) - len(done))
    if notes:
        notes[-1] += f" ({selection['not_started']} never started)"
    selection["test_timeout"] = test_timeout
    return done, selection, notes, elapsed


def run_file(checkout: Path, name: str, args, scratch: Path) -> tuple[dict, dict, list[str], float]:
    progress = scratch / (name + ".jsonl")
    progress.write_text("")
    defaults = FILE_DEFAULTS.get(name, {})
    sample = args.sample if args.sample is not None else defaults.get("sample", SAMPLE)
    max_numel = args.max_numel if args.max_numel is not None else defaults.get("max_numel", MAX_NUMEL)
    test_timeout = args.test_timeout if args.test_timeout is not None else defaults.get("test_timeout", TEST_TIMEOUT)
    for old in scratch.glob(name.replace(".py", "") + ".*.timeout"):
        old.unlink()
    env = dict(os.environ, TEGULA_CONFORMANCE_DEVICE="cpu",
               PYTHONPATH=os.pathsep.join([str(SHIM), str(HERE), str(checkout)] +
                                          ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    command = [sys.executable, "-m", "pytest", str(checkout / "tests" / name), "-p", "attorch_ops",
               "-p", "no:cacheprovider", "-q", "-rN", "--rootdir", str(checkout), "-c", os.devnull,
               "--ao-progress", str(progress), "--ao-test-timeout", str(test_timeout),
               "--ao-sample", str(0 if args.all else sample), "--ao-seed", str(args.seed),
               "--ao-max-numel", str(max_numel), *(["--ao-no-autocast"] if args.no_autocast else []),
               *(["-k", args.k] if args.k else []),
               *(["-n", str(args.workers), "--max-worker-restart", "100000"] if args.workers > 0 else [])]
    return run_pytest(command, checkout, env, scratch, name, progress, test_timeout, args.file_timeout)


def collection_error(report) -> dict:
    """The outcome record of a test file that did not collect: its last `E ` line, and the report's end."""
    text = str(report.longrepr).strip().splitlines()
    error = next((line for line in reversed(text) if line.startswith("E ")), text[-1] if text else "?")
    return dict(event="done", test=report.nodeid or "<collection>", outcome="errored",
                error="collection: " + error[1:].strip()[:300], where="", detail=str(report.longrepr)[-4000:])


def print_summary(totals, groups, everything, stand_ins, columns, json_path) -> None:
    """The end of a run: the stand-ins, the overall counts (columns[0] "passed"), the failures grouped by cause,
    most common first, each with its tests and where they failed; every outcome written to json_path if given."""
    if stand_ins:
        print("stand-ins: " + "; ".join(stand_ins))
    ran = sum(totals[c] for c in ("passed", "failed", "errored", "timeout", "crashed"))
    print(f"overall: {totals['passed']} passed of {ran} that ran ({totals['passed'] / max(ran, 1):.1%}); "
          + ", ".join(f"{totals[c]} {c}" for c in columns[1:]))
    for cause, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(tests):6d}  {cause}")
        # Which test, and where: the innermost frame outside torch, and the test's line (which of its checks).
        wheres = collections.Counter((t.split("::")[-1].split("[")[0],
                                      re.sub(r"(?<![\w.])/[^\s:'\"]*/", "", everything[t].get("where", "")))
                                     for t in tests)
        for (test, at), n in sorted(wheres.items(), key=lambda kv: -kv[1]):
            print(f"        {n:4d} {test}" + (f" at {at}" if at else ""))
    if json_path:
        json_path.write_text(json.dumps(everything, indent=1))


def normalized(error: str) -> str:
    line = re.sub(r"(?<![\w.])/[^\s:'\"]*/", "", error)  # paths: their file names
    line = re.sub(r"0x[0-9a-f]+", "0x…", line)
    line = re.sub(r"\btl\.[a-z]+\d+\b", "tl.<dtype>", line)
    line = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?!\w|\.\d)", "N", line)
    line = re.sub(r"\b[0-9a-f]{16,}\b", "…", line)  # hashes
    return line[:200]


COLUMNS = ("passed", "failed", "skipped", "errored", "timeout", "crashed", "vacuous", "not run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", help="an attorch work tree (attorch/ and tests/)")
    parser.add_argument("files", nargs="*", help="test files under tests/ (default: every test_*.py)")
    parser.add_argument("--sample", type=int, help=f"tests drawn per file (default {SAMPLE}; fewer for "
                                                   f"{', '.join(n for n in FILE_DEFAULTS if 'sample' in FILE_DEFAULTS[n])})")
    parser.add_argument("--all", action="store_true", help="every test under --max-numel, no sample")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--max-numel", type=int,
                        help=f"leave out cases whose input shape has more elements (default {MAX_NUMEL}; more for "
                             f"{', '.join(n for n in FILE_DEFAULTS if 'max_numel' in FILE_DEFAULTS[n])}; 0: no cap)")
    parser.add_argument("-k", help="pytest's -k expression, applied before the sample")
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers (0: no xdist)")
    parser.add_argument("--no-autocast", action="store_true",
                        help="no autocast stand-in: autocast('cuda') stays off (see the docstring)")
    parser.add_argument("--test-timeout", type=float, help=f"seconds one test may take (default {TEST_TIMEOUT}; more "
                                                           f"for test_conv_layer.py)")
    parser.add_argument("--file-timeout", type=float, default=600, help="seconds one file may take")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    parser.add_argument("--work", type=Path, help="keep each file's log and progress here (default: a "
                                                  "temporary folder)")
    args = parser.parse_args()

    checkout = Path(args.checkout).resolve()
    if not (checkout / "tests").is_dir() or not (checkout / "attorch").is_dir():
        sys.exit(f"{checkout} is not an attorch work tree (no attorch/ and tests/)")
    files = args.files or sorted(p.name for p in (checkout / "tests").glob("test_*.py"))
    everything, groups = {}, collections.defaultdict(list)
    totals = collections.Counter()
    stand_ins = []
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
    print(f"attorch {checkout}; per file: {'every one' if args.all else 'a sample (seed %d)' % args.seed} of the cases "
          f"with input shapes under a size cap{f', -k {args.k!r}' if args.k else ''}; xdist -n {args.workers}; "
          f"TEGULA_NUM_THREADS={os.environ.get('TEGULA_NUM_THREADS', 'unset')}"
          f"{'; no autocast stand-in' if args.no_autocast else ''}", flush=True)
    print(f"{'file':36s} " + " ".join(f"{c:>7s}" for c in COLUMNS) + "   time  selection", flush=True)
    with (tempfile.TemporaryDirectory(prefix="attorch-") if args.work is None
          else contextlib.nullcontext(str(args.work.resolve()))) as scratch:
        for name in files:
            outcomes, selection, notes, elapsed = run_file(checkout, name, args, Path(scratch))
            stand_ins = selection.get("stand_ins", stand_ins)
            counts = collections.Counter(o["outcome"] for o in outcomes.values())
            counts["not run"] += selection["not_started"]
            totals.update(counts)
            left = ", ".join(f"{n} {why}" for why, n in selection.get("left_out", {}).items())
            print(f"{name:36s} " + " ".join(f"{counts[c]:7d}" for c in COLUMNS) + f" {elapsed:5.0f}s  "
                  f"ran {selection.get('ran', 0)} of {selection.get('eligible', 0)} eligible of "
                  f"{selection.get('collected', 0)} collected; timeout {selection['test_timeout']:.0f}s"
                  + (f" (left out: {left})" if left else ""), flush=True)
            for note in notes:
                print("    " + note)
            for test, o in outcomes.items():
                everything[test] = o
                if o["outcome"] not in ("passed", "skipped", "vacuous", "not run"):
                    groups[normalized(o.get("error", "?"))].append(test)
    print_summary(totals, groups, everything, stand_ins, COLUMNS, args.json)


if __name__ == "__main__":
    main()
