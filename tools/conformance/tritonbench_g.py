"""TritonBench-G (thunlp/TritonBench, data/TritonBench_G_v1: 184 real-world Triton operators collected from
GitHub, each file a kernel, its wrapper and a test function that builds inputs and returns the outputs as
`result_gold`) on Tegula's CPU backend, through the conformance shim's `triton` package. Nothing of
TritonBench is in this repository; point this at a source tree of it (a `git archive` of data/TritonBench_G_v1
will do):

    .venv/bin/python tools/conformance/tritonbench_g.py <TritonBench source or the G_v1 folder>
        [-k SUBSTRING] [--workers N] [--timeout S] [--reference REF.pt] [--json OUT] [--work DIR]
    python3 tools/conformance/tritonbench_g.py <source> --make-reference REF.pt   # on a GPU with real Triton

Each operator file runs unchanged in its own process (the file's own `if __name__ == "__main__"` block and
module-level test calls run), with the shim first on sys.path so that `import triton` is Tegula, and
TEGULA_NUM_THREADS=1. After the file has run, its `result_gold*` globals are the outputs; a file that defines
test_* functions without calling them at module level (context_attn_bloom.py) has them called with no
arguments. Outcomes:

  passed       the file ran; with --reference, its outputs match the reference's (below).
  mismatch     the file ran, but an output differs from the reference's, or the test's own comparison against
               torch failed (an AssertionError raised in the file's test section): a wrong result to diagnose.
  tegula       a Tegula error: tegula.CompilationError or another exception of Tegula's or the shim's
               modules, a TypeError/ValueError carrying an error[E....] code, an exception raised inside
               Tegula's Python package or the shim, a name Tegula lacks (AttributeError / ImportError on
               triton.*), a crash (killed by a signal, or no status written), or a timeout.
  environment  CUDA-only torch code that the stand-ins below do not cover, or a missing package.
  triton-too   fails with the real Triton as well: with --reference, a file that failed on the GPU too (the
               reference's error is appended); without, a file that imports triton.ops (gone since 3.0).
  test         any other exception, raised by the test itself or by torch outside Tegula.

A crash or a mismatch is rerun with TEGULA_DEBUG=1 (Tegula's bounds checks on every load and store); when that
run stops at an access outside the kernel's arrays, the failure is the kernel's or its test's (a GPU lets most
such reads pass, reading whatever lies there) and is counted under `test`, with the bounds report. `--debug`
runs every file so, to list all such accesses. An autotune config that sets an AMD backend option
(waves_per_eu, ...) counts under `environment`, and torch Inductor's imports of the real Triton's internals
too. DIAGNOSED holds the few failures told apart by hand (a spin lock across programs; a 1-tuple pointer that
Triton 3.6 refuses as well), each with its reason.

TritonBench stores no reference outputs (its eval compares a candidate's stdout with the gold file's, on a
GPU). --make-reference runs the files the same way but with the real Triton on a CUDA GPU and saves a digest
of every output (shape, dtype, up to SAMPLE evenly spaced elements, float64 sum and |sum|, NaN and inf
counts) and each file's outcome there; --reference compares against such a file: float outputs within
TOLERANCE[dtype] * max|reference| on the sample and within TOLERANCE * sum|reference| on the sums (the GPU
takes TF32 for float32 dots and approximate exp/log; Tegula's CPU backend does not), integer and bool outputs
exactly, Python numbers within 1e-2 relative. A file that fails on the GPU is reported with that error.

Inputs, so that both runs see the same ones: both runs seed torch, random and numpy with 0 before the file
runs, and a torch function mode (in both) makes every random torch function (torch.rand/randn/randint/
randperm/normal/bernoulli/multinomial/poisson and their _like forms, the in-place Tensor.normal_/uniform_/
random_/exponential_/bernoulli_/geometric_/log_normal_/cauchy_) draw from the CPU generator, into a fresh
contiguous tensor, in float32 where the result is float16 or bfloat16 (torch's CPU draws in those types
differ between machines), then cast and, on the GPU, copied there; torch.empty / empty_like / empty_strided /
Tensor.new_empty return zero-filled tensors (what a kernel leaves unwritten reads the same in both).

Stand-ins in the CPU run, all at torch's level (nothing of Tegula or the shim is stood in):
  - a torch function mode maps device='cuda' / 'cuda:N' / torch.device('cuda') keyword arguments of every
    torch function and method (factories, new_*, *_like, Tensor.to(device=)) to the CPU, the positional
    device of Tensor.to, and Tensor.cuda() returns the tensor (on the CPU).
  - torch.set_default_device('cuda') sets the CPU.
  - Tensor.is_cuda reads True for a CPU tensor when read from the operator file (its wrappers assert it);
    elsewhere it is torch's.
  - torch.cuda.is_available() is True when called from the operator file; elsewhere it is torch's.
  - torch.cuda.synchronize, empty_cache, set_device, manual_seed, manual_seed_all, reset_peak_memory_stats:
    do nothing; current_device() is 0; device_count() is 1; torch.cuda.device(...) and
    torch.cuda._DeviceGuard(...) are empty context managers; torch.cuda.stream(...) too, and
    torch.cuda.Stream / current_stream() / default_stream() give an object whose synchronize / wait_stream /
    wait_event do nothing; torch.cuda.Event(enable_timing=...) records time.perf_counter().
  - torch.cuda.get_device_name() is "NVIDIA H100 80GB HBM3"; get_device_capability() is (9, 0);
    get_device_properties() has name, major 9, minor 0, multi_processor_count 132, total_memory 80 GiB,
    L2_cache_size 50 MiB, warp_size 32, max_threads_per_multi_processor 2048, regs_per_multiprocessor 65536.
  - torch.cuda.default_generators[0] is a stand-in whose get_state() holds CUDA's Philox seed and offset
    after torch.manual_seed(0) (0, 0) as two int64, as CUDA's generator state does; passed as a generator it
    is the CPU's. max_memory_allocated, memory_allocated
    and mem_get_info give numbers (0; 80 GiB free).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"
TEGULA_PY = HERE.parent.parent / "python" / "tegula"
SAMPLE = 2048
TOLERANCE = {"torch.float64": 1e-6, "torch.float32": 1e-2, "torch.float16": 2e-2, "torch.bfloat16": 3e-2}
LOW_TOLERANCE = 6e-2  # float8 and other narrow types
NARROW_FLOATS = ()  # float16 and bfloat16, set once torch is imported
RANDOM_FUNCTIONS = {"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "poisson",
                    "rand_like", "randn_like", "randint_like"}
RANDOM_METHODS = {"normal_", "uniform_", "random_", "exponential_", "bernoulli_", "geometric_", "log_normal_",
                  "cauchy_"}
FLOAT_RANDOM = {"rand", "randn", "normal", "rand_like", "randn_like"}
FLOAT_METHODS = {"normal_", "uniform_", "exponential_", "log_normal_", "cauchy_"}
EMPTY_FUNCTIONS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
# Failures diagnosed by hand that no rule above can tell apart: (operator, what its detail starts with) ->
# (outcome, why).
DIAGNOSED = {
    ("spinning_lock_reduction", "timeout"): (
        "test", "its programs spin on tl.atomic_cas for a lock that a later program of the same launch sets: "
                "it needs every program resident at once, as on a GPU; a CPU backend runs the programs in "
                "chunks on a thread pool (Triton-CPU's too), so the waiting program never yields"),
    ("sgmv_expand_slice", "CompilationError"): (
        "triton-too", "a trailing comma makes `a_ptr` a 1-tuple; Triton 3.6 refuses the tl.load too "
                      "('tuple_type' object has no attribute 'is_ptr')"),
}
SEPARATOR = re.compile(r"^#{40,}\s*$", re.M)


# ----------------------------------------------------------------------------------------------- the child

def is_cuda_device(device) -> bool:
    import torch

    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return False


def install_cpu_standins(op_file: str) -> None:
    import contextlib
    import types

    import torch
    from torch.overrides import TorchFunctionMode

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0]
            if "device" in kwargs and is_cuda_device(kwargs["device"]):
                kwargs = {**kwargs, "device": "cpu"}
            if name == "to" and len(args) > 1 and is_cuda_device(args[1]):
                args = (args[0], "cpu", *args[2:])
            return same_draws(func, name, args, kwargs, gpu=False)

    CudaOnCpu().__enter__()

    set_default_device = torch.set_default_device
    torch.set_default_device = lambda device: set_default_device("cpu" if is_cuda_device(device) else device)

    real_is_cuda = torch._C.TensorBase.is_cuda

    def is_cuda(self):
        if sys._getframe(1).f_code.co_filename == op_file and self.device.type == "cpu":
            return True
        return real_is_cuda.__get__(self)

    torch.Tensor.is_cuda = property(is_cuda)

    real_is_available = torch.cuda.is_available

    def is_available():
        return True if sys._getframe(1).f_code.co_filename == op_file else real_is_available()

    cuda = torch.cuda
    cuda.is_available = is_available
    for name in ("synchronize", "empty_cache", "set_device", "manual_seed", "manual_seed_all",
                 "reset_peak_memory_stats", "reset_max_memory_allocated", "ipc_collect"):
        setattr(cuda, name, lambda *a, **k: None)
    cuda.current_device = lambda: 0
    cuda.device_count = lambda: 1
    cuda.device = lambda *a, **k: contextlib.nullcontext()
    cuda._DeviceGuard = lambda *a, **k: contextlib.nullcontext()
    cuda.stream = lambda *a, **k: contextlib.nullcontext()

    class Stream:
        def __init__(self, *a, **k):
            pass

        def synchronize(self):
            pass

        def wait_stream(self, other):
            pass

        def wait_event(self, event):
            pass

        def record_event(self, event=None):
            return event or Event()

        cuda_stream = 0

    class Event:
        def __init__(self, enable_timing=False, *a, **k):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def wait(self, stream=None):
            pass

        def query(self):
            return True

        def elapsed_time(self, end):
            return (end.t - self.t) * 1000.0

    cuda.Stream, cuda.Event = Stream, Event
    cuda.current_stream = cuda.default_stream = lambda *a, **k: Stream()
    cuda.get_device_name = lambda *a, **k: "NVIDIA H100 80GB HBM3"
    cuda.get_device_capability = lambda *a, **k: (9, 0)
    properties = types.SimpleNamespace(
        name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132, total_memory=80 << 30,
        L2_cache_size=50 << 20, warp_size=32, max_threads_per_multi_processor=2048,
        regs_per_multiprocessor=65536, is_integrated=False, is_multi_gpu_board=False)
    cuda.get_device_properties = lambda *a, **k: properties
    class CudaGenerator:
        """What CUDA's default generator reads after torch.manual_seed(0): Philox seed 0, offset 0, as two
        int64 in its state (uniform_sampling.py reads them); as a `generator=` argument it is the CPU's."""
        device = torch.device("cuda")

        def __init__(self):
            self.state = torch.tensor([0, 0], dtype=torch.int64).view(torch.uint8)

        def get_state(self):
            return self.state.clone()

        def set_state(self, state):
            self.state = state.clone()

        def manual_seed(self, seed):
            self.state = torch.tensor([seed, 0], dtype=torch.int64).view(torch.uint8)
            return self

        def initial_seed(self):
            return int(self.state.view(torch.int64)[0])

        seed = initial_seed

    cuda.default_generators = (CudaGenerator(),)
    cuda.max_memory_allocated = cuda.memory_allocated = cuda.max_memory_reserved = lambda *a, **k: 0
    cuda.mem_get_info = lambda *a, **k: (80 << 30, 80 << 30)


def same_draws(func, name, args, kwargs, gpu: bool):
    """Calls func so that both runs see the same inputs (see the docstring): random draws on the CPU generator,
    in float32 for float16 / bfloat16 results, moved to the GPU on it; torch.empty and its kin zero-filled."""
    import torch

    def to_cpu(value):
        if isinstance(value, torch.Tensor):
            return value.detach().cpu()
        if isinstance(value, (list, tuple)):
            return type(value)(to_cpu(v) for v in value)
        return value

    def widen(value):
        if isinstance(value, torch.Tensor) and value.dtype in NARROW_FLOATS:
            return value.float()
        return value

    kwargs = dict(kwargs)
    gen = kwargs.get("generator")
    if gen is not None and getattr(gen, "device", torch.device("cpu")).type == "cuda":
        kwargs["generator"] = torch.default_generator
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if name in RANDOM_METHODS and tensors and args[0] is tensors[0]:
        target = args[0]
        dtype = torch.float32 if target.dtype in NARROW_FLOATS and name in FLOAT_METHODS else target.dtype
        scratch = torch.empty(target.shape, dtype=dtype)
        getattr(scratch, name)(*to_cpu(args[1:]), **{k: to_cpu(v) for k, v in kwargs.items()})
        with torch.no_grad():
            target.copy_(scratch)
        return target
    if name in RANDOM_FUNCTIONS:
        device = kwargs.get("device")
        if device is None:
            device = tensors[0].device if tensors else torch.get_default_device()
        device = torch.device(device)
        requires_grad = kwargs.pop("requires_grad", False)
        dtype = kwargs.get("dtype")
        if dtype is None and name in FLOAT_RANDOM:
            dtype = tensors[0].dtype if tensors else torch.get_default_dtype()
        args = to_cpu(args)
        kwargs = {k: to_cpu(v) for k, v in kwargs.items()}
        if "device" in kwargs or not tensors:
            kwargs["device"] = "cpu"
        if name in FLOAT_RANDOM and dtype in NARROW_FLOATS:
            kwargs["dtype"] = torch.float32
            out = func(*(widen(a) for a in args), **{k: widen(v) for k, v in kwargs.items()}).to(dtype)
        else:
            out = func(*args, **kwargs)
        if device.type != "cpu":
            out = out.to(device)
        return out.requires_grad_() if requires_grad else out
    out = func(*args, **kwargs)
    if name in EMPTY_FUNCTIONS and isinstance(out, torch.Tensor):
        with torch.no_grad():
            out.zero_()
    return out


def install_reference_random() -> None:
    """On the GPU: the same draws as the CPU run's (see the docstring)."""
    from torch.overrides import TorchFunctionMode

    class SameDraws(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            return same_draws(func, getattr(func, "__name__", ""), args, kwargs or {}, gpu=True)

    SameDraws().__enter__()


def digest(value, depth=0):
    import torch

    if depth > 6:
        return f"<{type(value).__name__}>"
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.is_complex():
            t = torch.view_as_real(t)
        t = t.cpu().contiguous()
        flat = t.reshape(-1)
        n = flat.numel()
        if n > SAMPLE:
            sample = flat[torch.linspace(0, n - 1, SAMPLE, dtype=torch.float64).long()].clone()
        else:
            sample = flat.clone()
        out = {"__tensor__": True, "shape": list(t.shape), "dtype": str(value.dtype), "n": n, "sample": sample}
        if n:
            try:
                f = flat.double()
                finite = torch.isfinite(f)
                out.update(sum=f[finite].sum().item(), abs_sum=f[finite].abs().sum().item(),
                           nan=int(torch.isnan(f).sum()), inf=int(torch.isinf(f).sum()))
            except (RuntimeError, TypeError):
                pass
        return out
    if isinstance(value, dict):
        return {str(k): digest(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [digest(v, depth + 1) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return value.item()
        except Exception:
            pass
    return f"<{type(value).__name__}>"


def describe_error(e: BaseException) -> dict:
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(e.__traceback__)]
    return {"type": type(e).__name__, "module": type(e).__module__, "message": str(e)[:4000],
            "compilation_error": type(e).__name__ in ("CompilationError",) or any(
                c.__name__ == "CompilationError" for c in type(e).__mro__),
            "frames": frames[-12:], "traceback": "".join(traceback.format_exception(e))[-6000:]}


def child(op_file: str, mode: str, status_path: str, save_path: str) -> int:
    op_file = str(Path(op_file).resolve())
    status = {"file": op_file}
    try:
        if mode == "cpu":
            sys.path.insert(0, str(SHIM))
        import torch

        global NARROW_FLOATS
        NARROW_FLOATS = (torch.float16, torch.bfloat16)
        torch.set_num_threads(1)
        if mode == "cpu":
            install_cpu_standins(op_file)
            import triton

            assert Path(triton.__file__).resolve().is_relative_to(SHIM), \
                f"the real Triton was imported: {triton.__file__}"
        else:
            install_reference_random()
        import random

        random.seed(0)
        try:
            import numpy

            numpy.random.seed(0)
        except ImportError:
            pass
        torch.manual_seed(0)
        import runpy

        sys.argv = [op_file]
        sys.path.insert(1, str(Path(op_file).parent))
        namespace = runpy.run_path(op_file, run_name="__main__")
        results = {k: v for k, v in namespace.items() if k.startswith("result_gold")}
        if not results:
            import inspect

            for k, v in namespace.items():
                if k.startswith("test") and inspect.isfunction(v) and v.__code__.co_filename == op_file and \
                        all(p.default is not p.empty for p in inspect.signature(v).parameters.values()):
                    results[k] = v()
            status["called"] = sorted(results)
        if mode != "cpu":
            torch.cuda.synchronize()
        torch.save(digest(results), save_path)
        status["ok"] = True
    except BaseException as e:  # noqa: B036 - SystemExit from a file's own main counts too
        if isinstance(e, SystemExit) and not e.code:
            status["ok"] = True
            status["note"] = "SystemExit(0) before results"
        else:
            status["ok"] = False
            status["error"] = describe_error(e)
    with open(status_path, "w") as f:
        json.dump(status, f)
    return 0


# ----------------------------------------------------------------------------------------------- the parent

def first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def classify(op_file: Path, status: dict | None, rc, timed_out: bool, stderr: str, seconds: float):
    """(outcome, detail)."""
    if timed_out:
        return "tegula", f"timeout after {seconds:.0f} s"
    if status is None:
        sig = -rc if isinstance(rc, int) and rc < 0 else None
        why = f"killed by signal {signal.Signals(sig).name}" if sig else f"exit code {rc}, no status"
        glibc = [l for l in stderr.splitlines() if re.search(r"malloc|free\(\)|corrupted|double free|munmap", l)]
        return "tegula", f"crash: {why}" + (f": {glibc[-1].strip()[:200]}" if glibc else "")
    if status.get("ok"):
        return "passed", ""
    e = status["error"]
    msg = e["message"]
    text = f"{e['type']}: {first_line(msg)}"
    frames = e["frames"]
    files = [f for f, _, _ in frames]
    inner = files[-1] if files else ""
    in_tegula = any(str(SHIM) in f or "/tegula/" in f for f in files[-3:])
    amd = re.search(r"sets '(waves_per_eu|matrix_instr_nonkdim|kpack)', which is not one of its parameters", msg)
    if amd:
        return "environment", (text[:120] + f"... ({amd.group(1)} is an AMD backend option: the file takes these "
                               "configs where the backend is not 'cuda'; Triton's CPU and CUDA backends refuse "
                               "the keyword too)")
    if e["compilation_error"] or e["module"].split(".")[0] in ("tegula", "triton") or \
            re.search(r"error\[E\d{4}\]", msg):
        return "tegula", text
    if e["type"] == "ModuleNotFoundError" and "'triton.ops'" in msg:
        return "triton-too", text + " (triton.ops left Triton in 3.0: Triton 3 lacks it too)"
    torch_frames = [f for f in files if "/site-packages/torch/" in f]
    if e["type"] in ("ModuleNotFoundError", "ImportError", "AttributeError") and "triton" in msg and \
            torch_frames and "/site-packages/torch/" in inner:
        return "environment", text + " (torch's Inductor reads the real Triton's compiler internals)"
    if e["type"] == "ModuleNotFoundError":
        name = re.search(r"No module named '([^']+)'", msg)
        if name and name.group(1).split(".")[0] not in ("triton", "tegula"):
            return "environment", text
        return "tegula", text + " (a module Tegula's shim lacks)"
    if e["type"] in ("AttributeError", "ImportError") and re.search(r"triton|tegula", msg):
        return "tegula", text + " (a name Tegula lacks)"
    if re.search(r"CUDA|cuda|NVIDIA|nvidia|Torch not compiled", msg):
        return "environment", text
    if in_tegula or "/tegula/" in inner:
        return "tegula", text
    source = op_file.read_text(errors="replace")
    sep = SEPARATOR.search(source)
    test_start = source[:sep.start()].count("\n") + 1 if sep else None
    op_frames = [(f, line) for f, line, _ in frames if f == str(op_file)]
    if e["type"] == "AssertionError" and op_frames and test_start and op_frames[-1][1] > test_start:
        return "mismatch", text + " (the test's own comparison)"
    return "test", text


def compare(got, want, path="", out=None, worst=None):
    """Appends the differences to out; worst[0]: the largest relative difference seen."""
    if out is None:
        out = []
    if isinstance(want, dict) and want.get("__tensor__"):
        if not (isinstance(got, dict) and got.get("__tensor__")):
            out.append(f"{path}: a {type(got).__name__}, reference a tensor")
            return out
        if got["shape"] != want["shape"] or got["dtype"] != want["dtype"]:
            out.append(f"{path}: {got['dtype']}{got['shape']}, reference {want['dtype']}{want['shape']}")
            return out
        import torch

        g, w = got["sample"], want["sample"]
        if not w.numel():
            return out
        if w.dtype.is_floating_point:
            tol = TOLERANCE.get(want["dtype"], LOW_TOLERANCE)
            g, w = g.double(), w.double()
            nan_g, nan_w = torch.isnan(g), torch.isnan(w)
            if not torch.equal(nan_g, nan_w):
                out.append(f"{path}: NaN at {int((nan_g != nan_w).sum())} of {w.numel()} sampled elements "
                           f"(got {int(nan_g.sum())}, reference {int(nan_w.sum())})")
                return out
            inf_g, inf_w = torch.isinf(g), torch.isinf(w)
            if not torch.equal(inf_g, inf_w) or not torch.equal(g[inf_g], w[inf_w]):
                out.append(f"{path}: inf at different places")
                return out
            fin = torch.isfinite(w)
            if fin.any():
                err = (g[fin] - w[fin]).abs().max().item()
                scale = w[fin].abs().max().item() or 1.0
                if worst is not None:
                    worst[0] = max(worst[0], err / scale)
                if err > tol * scale:
                    bad = int(((g[fin] - w[fin]).abs() > tol * scale).sum())
                    out.append(f"{path}: max |diff| {err:.3g} > {tol:g} * max|ref| {scale:.3g} "
                               f"({bad} of {int(fin.sum())} sampled elements)")
                    return out
            if want["n"] > SAMPLE and "sum" in want and "sum" in got:
                if abs(got["sum"] - want["sum"]) > tol * max(want["abs_sum"], 1e-30) * 2:
                    out.append(f"{path}: sum {got['sum']:.6g}, reference {want['sum']:.6g} "
                               f"(|sum| {want['abs_sum']:.6g})")
        else:
            if not torch.equal(g, w):
                bad = int((g != w).sum())
                out.append(f"{path}: {bad} of {w.numel()} sampled elements differ (exact)")
            elif want["n"] > SAMPLE and got.get("sum") != want.get("sum"):
                out.append(f"{path}: sum {got.get('sum')}, reference {want.get('sum')}")
        return out
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            out.append(f"{path}: keys {sorted(got) if isinstance(got, dict) else type(got).__name__}, "
                       f"reference {sorted(want)}")
            return out
        for k in want:
            compare(got[k], want[k], f"{path}.{k}" if path else k, out, worst)
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            out.append(f"{path}: {type(got).__name__} of {len(got) if isinstance(got, list) else '?'}, "
                       f"reference list of {len(want)}")
            return out
        for i, (a, b) in enumerate(zip(got, want)):
            compare(a, b, f"{path}[{i}]", out, worst)
        return out
    if isinstance(want, float) and isinstance(got, (int, float)):
        if not (math.isclose(got, want, rel_tol=1e-2, abs_tol=1e-6) or (math.isnan(got) and math.isnan(want))):
            out.append(f"{path}: {got!r}, reference {want!r}")
        return out
    if got != want:
        out.append(f"{path}: {got!r:.80}, reference {want!r:.80}")
    return out


def operator_files(source: Path) -> list[Path]:
    for folder in (source / "data" / "TritonBench_G_v1", source):
        files = sorted(f.resolve() for f in folder.glob("*.py"))
        if files:
            return files
    raise SystemExit(f"no TritonBench-G python files under {source}")


def run_one(op_file: Path, mode: str, work: Path, timeout: float, python: str, debug: bool = False,
            reference: dict | None = None) -> dict:
    record = run_once(op_file, mode, work / op_file.stem, timeout * (3 if debug else 1), python, debug)
    if reference is not None and record["outcome"] == "passed":
        compare_with_reference(record, reference)
    crashed = record["outcome"] == "tegula" and record["detail"].startswith("crash")
    if mode == "cpu" and not debug and (crashed or record["outcome"] == "mismatch"):
        # A crash of a compiled CPU kernel, or an output unlike the GPU's, is often an access outside the
        # kernel's arrays that a GPU lets pass (reads past an allocation land in the caching allocator's pool
        # there, and read whatever is there). Rerun with Tegula's bounds checks (TEGULA_DEBUG=1) to tell.
        again = run_once(op_file, mode, work / (op_file.stem + ".debug"), timeout * 3, python, True)
        e = ((again["status"] or {}).get("error") or {})
        if e.get("type") == "DeviceError" and re.search(r"out of bounds", e.get("message", "")):
            record["outcome"] = "test"
            record["detail"] = (f"{record['detail']}; with TEGULA_DEBUG=1: "
                                f"{first_line(e['message']).replace(str(op_file.parent) + '/', '')}")
        else:
            record["detail"] += f"; with TEGULA_DEBUG=1: {again['outcome']} {again['detail'][:200]}"
    for (name, start), (outcome, why) in DIAGNOSED.items():
        if record["name"] == name and record["detail"].startswith(start):
            record["outcome"], record["detail"] = outcome, f"{record['detail']} ({why})"
    if reference is not None and record["outcome"] not in ("passed", "mismatch", "triton-too"):
        ref_status = reference["status"].get(record["name"])
        if ref_status and ref_status.get("outcome") != "passed":
            record["outcome"] = "triton-too"
            record["detail"] += f" [with Triton on the GPU: {ref_status.get('detail', '')[:200]}]"
    return record


def compare_with_reference(record: dict, reference: dict) -> None:
    import torch

    ref = reference["digests"].get(record["name"])
    if ref is None:
        e = (reference["status"].get(record["name"], {}).get("error") or {})
        record["reference"] = f"fails on the GPU: {e.get('type')}: {first_line(e.get('message', ''))}"
        return
    got = torch.load(record["results"], weights_only=False)
    worst = [0.0]
    diffs = compare(got, ref, "", None, worst)
    record["worst"] = worst[0]
    if diffs:
        record["outcome"] = "mismatch"
        record["detail"] = "; ".join(diffs[:3]) + (f"; (+{len(diffs) - 3} more)" if len(diffs) > 3 else "")
    else:
        record["detail"] = f"matches the GPU reference (worst {worst[0]:.2g} of max|ref|)"


def run_once(op_file: Path, mode: str, folder: Path, timeout: float, python: str, debug: bool) -> dict:
    name = op_file.stem
    folder.mkdir(parents=True, exist_ok=True)
    status_path, save_path = folder / "status.json", folder / "results.pt"
    for p in (status_path, save_path):
        p.unlink(missing_ok=True)
    env = dict(os.environ, TEGULA_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    if debug:
        env["TEGULA_DEBUG"] = "1"
    if mode == "cpu":
        env["PYTHONPATH"] = os.pathsep.join([str(SHIM), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["CUDA_VISIBLE_DEVICES"] = ""
    start = time.time()
    timed_out = False
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        proc = subprocess.Popen([python, str(Path(__file__).resolve()), "--child", str(op_file), "--mode", mode,
                                 "--status", str(status_path), "--save", str(save_path)],
                                cwd=folder, env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
    seconds = time.time() - start
    stderr = (folder / "stderr.txt").read_text(errors="replace")
    status = json.loads(status_path.read_text()) if status_path.exists() else None
    outcome, detail = classify(op_file, status, rc, timed_out, stderr, seconds)
    return {"name": name, "outcome": outcome, "detail": detail, "seconds": round(seconds, 1), "status": status,
            "results": str(save_path) if save_path.exists() else None, "stderr_tail": stderr[-3000:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?")
    parser.add_argument("-k", dest="substring", action="append", default=[],
                        help="only operators whose file name contains SUBSTRING (repeatable)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--reference", help="a digest file of --make-reference to compare the outputs with")
    parser.add_argument("--make-reference", metavar="OUT", help="run with the real Triton on a GPU; save digests")
    parser.add_argument("--debug", action="store_true",
                        help="every run with TEGULA_DEBUG=1 (bounds checks): lists the kernels' out-of-bounds accesses")
    parser.add_argument("--json", help="write every operator's outcome here")
    parser.add_argument("--work", help="folder for the per-operator logs (default: a temporary one)")
    parser.add_argument("--python", default=sys.executable, help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="cpu", help=argparse.SUPPRESS)
    parser.add_argument("--status", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.mode, args.status, args.save)
    if not args.source:
        parser.error("the TritonBench source folder is needed")

    mode = "reference" if args.make_reference else "cpu"
    files = [f for f in operator_files(Path(args.source))
             if not args.substring or any(s in f.name for s in args.substring)]
    work = Path(args.work or tempfile.mkdtemp(prefix="tritonbench-g-"))
    reference = None
    if args.reference:
        import torch

        reference = torch.load(args.reference, weights_only=False)
    print(f"TritonBench-G: {len(files)} operators, {'real Triton on the GPU' if mode != 'cpu' else 'Tegula CPU'}"
          f"; logs in {work}; timeout {args.timeout:g} s; {args.workers} worker(s)"
          f"{'; reference ' + args.reference if reference else ''}", flush=True)
    if mode == "cpu":
        print("stand-ins: see this file's docstring (device='cuda' -> CPU, torch.cuda.* stand-ins, "
              "random draws from the CPU generator)", flush=True)

    records = []

    def finish(record):
        line = f"{record['name']:<44} {record['outcome']:<12} {record['seconds']:>6.1f}s  {record['detail']}"
        if record.get("reference") and record["outcome"] == "passed":
            line += f" [reference: {record['reference']}]"
        print(line, flush=True)
        records.append(record)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        futures = [pool.submit(run_one, f, mode, work, args.timeout, args.python, args.debug, reference)
                   for f in files]
        for future in concurrent.futures.as_completed(futures):
            finish(future.result())

    counts = collections.Counter(r["outcome"] for r in records)
    print("\nsummary: " + ", ".join(f"{k} {counts[k]}" for k in ("passed", "mismatch", "tegula", "environment", "test", "triton-too")
                                    if counts[k]) + f" (of {len(records)})", flush=True)
    groups = collections.defaultdict(list)
    for r in records:
        if r["outcome"] != "passed":
            key = re.sub(r"\d+(\.\d+)?", "N", r["detail"])[:160]
            groups[(r["outcome"], key)].append(r["name"])
    for (outcome, key), names in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        print(f"  [{outcome}] {len(names)}x {key}: {', '.join(sorted(names))}")

    if args.make_reference:
        import torch

        digests, statuses = {}, {}
        for r in records:
            statuses[r["name"]] = {"outcome": r["outcome"], "detail": r["detail"],
                                   "error": (r["status"] or {}).get("error")}
            if r["outcome"] == "passed" and r["results"]:
                digests[r["name"]] = torch.load(r["results"], weights_only=False)
        torch.save({"digests": digests, "status": statuses}, args.make_reference)
        print(f"reference digests of {len(digests)} operators -> {args.make_reference}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(sorted(records, key=lambda r: r["name"]), f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
