"""Seeing launches from outside (docs/profiling.md).

- **NVTX ranges**: with ``TEGULA_NVTX=1`` (or ``tegula.profiling.set_nvtx(True)``)
  every launch runs inside an NVTX range named ``KERNEL [KEY]`` (the kernel's
  name and the first 12 characters of its specialization key), so Nsight
  Systems shows Tegula kernels by name; when torch is imported the launch
  is also inside a ``torch.profiler.record_function`` of that name, which is
  what names it in a torch.profiler trace. The NVTX ranges go through
  ``torch.cuda.nvtx`` when torch (with CUDA) is imported, else through
  ``libnvToolsExt`` loaded on first use (``TEGULA_NVTX_LIBRARY`` names
  another library with ``nvtxRangePushA``/``nvtxRangePop``).
- **The per-kernel table**: with ``TEGULA_PROFILE=1`` (or ``set_timing(True)``)
  every launch is timed (on the CPU around the launch, which returns when
  the grid is done; on CUDA with events on the launch's stream) and the table
  of calls, total and mean time and share of floor is printed at exit
  (``table()`` returns it at any time).

Both are off by default; a launch then pays one branch (the C++ launcher
reads one pointer). Either switch, or a launch hook of ``tegula.knobs.runtime``
(``launch_enter_hook``, ``launch_exit_hook``), installs an observer the
launcher calls around each launch (src/bindings/launch_observer.h).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from . import _C, _environment
from . import knobs as _knobs
from ._floors import Floors, floors  # noqa: F401  (the public spelling: tegula.profiling.floors)

_settings = {"nvtx": False, "timing": False}


class _Nvtx:
    """nvtxRangePushA / nvtxRangePop, from torch.cuda.nvtx or libnvToolsExt."""

    LIBRARIES = ("libnvToolsExt.so.1", "libnvToolsExt.so")

    def __init__(self):
        library = os.environ.get("TEGULA_NVTX_LIBRARY")
        torch = sys.modules.get("torch")
        if not library and torch is not None and torch.cuda.is_available():
            self.push, self.pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
            return
        errors = []
        for name in ([library] if library else self.LIBRARIES):
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                errors.append(str(e))
                continue
            lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
            push, pop = lib.nvtxRangePushA, lib.nvtxRangePop
            self.push = lambda message: push(message.encode())
            self.pop = pop
            return
        raise OSError("NVTX ranges need libnvToolsExt (the CUDA toolkit's, or the nvidia-nvtx wheel's) or "
                      "torch with CUDA; set TEGULA_NVTX_LIBRARY to the library's path. Tried: " + "; ".join(errors))


@dataclass
class KernelRecord:
    name: str
    key: str
    kernel: object                      # the CompiledKernel
    calls: int = 0
    total_s: float = 0.0
    shapes: Counter = field(default_factory=Counter)   # (grid, arguments as counted) -> calls
    pending: list = field(default_factory=list)        # CUDA: (start, end) events not yet read


_records: dict = {}


class _ArrayBytes(NamedTuple):
    """An array argument as a count needs it: its size."""
    nbytes: int


def _shape(arguments) -> tuple:
    """What the count of a launch depends on: numbers as they are, arrays by their bytes."""
    from ._report import _nbytes
    return tuple(a if isinstance(a, (int, float, bool)) else _ArrayBytes(_nbytes(a) or 0) for a in arguments)


class LaunchMetadata:
    """What tegula.knobs.runtime's launch hooks get, as Triton's LazyDict: ``get()`` returns the launch's
    dict (``name``, ``function``: the CompiledKernel, ``stream``: the CUDA stream handle or None, and
    what the kernel's ``@jit(launch_metadata=f)`` adds: ``f(grid, kernel.metadata, arguments by name)``),
    worked out on the first call only."""

    def __init__(self, kernel, grid, fn, named):
        self._parts = (kernel, grid, fn, named)
        self._data = None

    def get(self) -> dict:
        if self._data is None:
            kernel, grid, fn, named = self._parts
            stream = None
            if kernel.backend_kind == "device":
                from . import _device
                stream = int(_device.current_stream(_device.current_device()))
            data = {"name": kernel.name, "function": kernel, "stream": stream}
            extra = getattr(fn, "launch_metadata", None)
            if extra is not None:
                data.update(extra(grid, kernel.metadata, dict(named)))
            self._data = data
        return self._data


class _Observer:
    """What the launcher calls around every launch while a switch is on or a launch hook is set."""

    def __init__(self, nvtx: bool, timing: bool, hooks: bool):
        self.nvtx = _Nvtx() if nvtx else None
        self.timing = timing
        self.hooks = hooks  # a launch hook of tegula.knobs.runtime is set

    def enter(self, kernel, grid, arguments, fn=None, named=None):
        metadata = None
        if self.hooks:
            metadata = LaunchMetadata(kernel, grid, fn, named or {})
            enter = _knobs.runtime.launch_enter_hook  # read at each launch: tests swap knobs.runtime
            if enter:
                enter(metadata)
        annotation = None
        if self.nvtx is not None:
            name = f"{kernel.name} [{kernel.key[:12]}]"
            self.nvtx.push(name)
            annotation = _torch_annotation(name)
        start = None
        if self.timing and kernel.backend_kind == "device":
            import torch
            start = torch.cuda.Event(enable_timing=True)
            start.record()
        elif self.timing:
            start = time.perf_counter()
        return kernel, grid, arguments, start, annotation, metadata

    def exit(self, token):
        kernel, grid, arguments, start, annotation, metadata = token
        if start is not None:
            record = _records.get(kernel.key)
            if record is None:
                record = _records[kernel.key] = KernelRecord(kernel.name, kernel.key, kernel)
            record.calls += 1
            record.shapes[(grid, _shape(arguments))] += 1
            if isinstance(start, float):
                record.total_s += time.perf_counter() - start
            else:
                import torch
                end = torch.cuda.Event(enable_timing=True)
                end.record()
                record.pending.append((start, end))
        if annotation is not None:
            annotation.__exit__(None, None, None)
        if self.nvtx is not None:
            self.nvtx.pop()
        if metadata is not None:
            leave = _knobs.runtime.launch_exit_hook
            if leave:
                leave(metadata)


def _torch_annotation(name: str):
    """torch.profiler's range of the same name, entered, when torch is imported:
    the device kernel's own symbol is the ABI's (tegula_kernel), so this is
    what names the launch in a torch.profiler trace."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    annotation = torch.profiler.record_function(name)
    annotation.__enter__()
    return annotation


def _install() -> None:
    runtime = _knobs.runtime
    hooks = bool(runtime.launch_enter_hook) or bool(runtime.launch_exit_hook)
    on = _settings["nvtx"] or _settings["timing"] or hooks
    _C.set_launch_observer(_Observer(_settings["nvtx"], _settings["timing"], hooks) if on else None)


def set_nvtx(on: bool = True) -> None:
    """Every launch inside an NVTX range named after the kernel and its key."""
    _settings["nvtx"] = bool(on)
    _install()


def set_timing(on: bool = True) -> None:
    """Every launch timed for ``table()`` (TEGULA_PROFILE=1 prints it at exit)."""
    _settings["timing"] = bool(on)
    _install()


def records() -> list:
    """The KernelRecords of the launches timed so far (CUDA events read now)."""
    for record in _records.values():
        if record.pending:
            record.pending[-1][1].synchronize()
            record.total_s += sum(s.elapsed_time(e) for s, e in record.pending) / 1e3
            record.pending.clear()
    return list(_records.values())


def reset() -> None:
    _records.clear()


def _floor_s(record: KernelRecord, floors) -> float | None:
    """The seconds the record's launches need at the floors (each launch at its bound)."""
    from ._report import bytes_to_move, launch_values
    total = 0.0
    for (grid, shape), calls in record.shapes.items():
        scalars, sizes = launch_values(record.kernel, shape)
        work = record.kernel.work(grid, scalars)
        if not work["known"]:
            return None
        flops = work["dot_ops"] + work["arithmetic_ops"] + work["transcendental_ops"]
        total += calls * max(bytes_to_move(work, sizes) / floors.bytes_per_s, flops / floors.flops_per_s)
    return total


def table(measure: bool = True) -> str:
    """Calls, total and mean time and share of floor per kernel, most time first. Without `measure`,
    only floors already cached are used (the table printed at exit: the interpreter is shutting down,
    and measuring would take seconds and threads it no longer starts)."""
    from . import _floors
    rows = sorted(records(), key=lambda r: -r.total_s)
    if not rows:
        return "tegula profile: no launches timed"
    lines = [("kernel", "key", "calls", "total ms", "mean ms", "of floor")]
    missing = set()
    for r in rows:
        device = "cuda" if r.kernel.backend_kind == "device" else "cpu"
        known = _floors.floors(device) if measure else _floors.cached_floors(device)
        if known is None:
            missing.add(device)
        floor_s = None if known is None else _floor_s(r, known)
        share = f"{floor_s / r.total_s:.0%}" if floor_s is not None and r.total_s > 0 else "unknown"
        lines.append((r.name, r.key[:12], str(r.calls), f"{r.total_s * 1e3:.3f}",
                      f"{r.total_s * 1e3 / r.calls:.4f}", share))
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
           for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    if missing:
        out.append(f"(of floor unknown: the {' and '.join(sorted(missing))} floors are not measured yet; "
                   f"tegula.profiling.table() before exit, or `python -m tegula.bench`, measures and caches them)")
    return "tegula profile (TEGULA_PROFILE=1):\n" + "\n".join(out)


def _print_table_at_exit() -> None:
    print(table(measure=False), file=sys.stderr)


def _from_environment() -> None:
    _settings["nvtx"] = _environment.flag("TEGULA_NVTX")
    _settings["timing"] = _environment.flag("TEGULA_PROFILE")
    if _settings["nvtx"] or _settings["timing"]:
        _install()
    if _settings["timing"]:
        atexit.register(_print_table_at_exit)


_from_environment()
