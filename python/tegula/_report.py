"""``kernel.report(...)``: one launch set against the machine's floors.

The compiler counts the launch's bytes and operations (``CompiledKernel.work``,
passes/work_count.h), ``do_bench`` times it, ``_floors`` gives the copy
bandwidth and matrix rate of the device, and the report says the share of
each floor the launch reaches, which one bounds it, and what limits it.
docs/profiling.md states the counting rule and the sentence's rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from . import _floors
from ._errors import coded

_INTEGER_TYPES = ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


@dataclass
class Report:
    kernel: str
    key: str
    backend: str
    grid: tuple
    loaded_bytes: int        # what the loads and stores move, as counted
    stored_bytes: int
    bytes: int               # what must cross memory: each array at most once per direction
    dot_ops: int
    arithmetic_ops: int
    transcendental_ops: int
    known: bool              # False: a loop's trip count was not known; the counts are partial
    notes: list
    time_ms: float
    floors: _floors.Floors
    resources: dict = field(default_factory=dict)
    occupancy: Optional[float] = None  # resident warps / the multiprocessor's maximum (GPU)

    @property
    def flops(self) -> int:
        return self.dot_ops + self.arithmetic_ops + self.transcendental_ops

    @property
    def memory_floor_ms(self) -> float:
        return self.bytes / self.floors.bytes_per_s * 1e3

    @property
    def compute_floor_ms(self) -> float:
        return self.flops / self.floors.flops_per_s * 1e3

    @property
    def memory_share(self) -> float:
        return self.memory_floor_ms / self.time_ms

    @property
    def compute_share(self) -> float:
        return self.compute_floor_ms / self.time_ms

    @property
    def bound(self) -> str:
        """The floor that is the larger: what the launch could at best be limited by."""
        return "compute" if self.compute_floor_ms > self.memory_floor_ms else "memory"

    @property
    def intensity(self) -> float:
        """Operations per byte that must move."""
        return self.flops / self.bytes if self.bytes else math.inf

    def limit(self) -> str:
        """One sentence saying what limits the launch."""
        if not self.known:
            return ("A loop's trip count is not known from the launch's arguments, so the counts are partial "
                    "and the shares of floor are lower bounds.")
        share = self.compute_share if self.bound == "compute" else self.memory_share
        what = "matrix rate" if self.bound == "compute" else "copy bandwidth"
        if self.bound == "memory" and self.bytes < self.floors.cache_bytes:
            return (f"Its {self.bytes / 2**20:.1f} MiB fit in the {self.floors.cache_bytes / 2**20:.0f} MiB "
                    f"last-level cache, so the copy floor (measured beyond the caches) does not bound it: "
                    f"{share:.0%} of it says how fast the cache is, not how close to DRAM's limit.")
        if share > 1.05:
            return (f"It passes the {what} ({share:.0%}): the floor was measured on a busier machine (measure "
                    f"it again: tegula.profiling.floors(device, remeasure=True)), its data was already in cache, "
                    f"or the count includes the masked lanes of partial tiles (a dot computes its whole tiles).")
        if share >= 0.8:
            return f"It is {self.bound}-bound and runs at {share:.0%} of the {what}: little is left to gain."
        if self.time_ms < 0.02 and self.floors.device.startswith("cuda"):
            return (f"It takes {self.time_ms * 1e3:.1f} us, close to a launch's own cost: too little work per "
                    f"launch to reach the {what} (fuse it with its neighbours or launch more at once).")
        programs = self.grid[0] * self.grid[1] * self.grid[2]
        if self.occupancy is not None and self.occupancy < 0.25:
            return (f"It is {self.bound}-bound but reaches {share:.0%} of the {what}: occupancy is "
                    f"{self.occupancy:.0%}, too few warps to hide memory latency (fewer registers or smaller "
                    f"tiles would help).")
        if programs < 4 * _floors.usable_cpus() and not self.floors.device.startswith("cuda"):
            return (f"It is {self.bound}-bound but reaches {share:.0%} of the {what}: {programs} programs "
                    f"leave cores idle (smaller blocks give more programs).")
        return (f"It is {self.bound}-bound but reaches only {share:.0%} of the {what}: the time goes to "
                f"latency or instruction overhead, not to the {what} (compare the generated code with "
                f"kernel.inspect).")

    def __str__(self) -> str:
        f = self.floors
        lines = [
            f"kernel {self.kernel} (key {self.key[:12]}, backend {self.backend}), grid {self.grid}",
            f"  bytes        {self.bytes:,} must move ({self.loaded_bytes:,} loaded, {self.stored_bytes:,} stored "
            f"as counted)",
            f"  operations   {self.flops:,} ({self.dot_ops:,} in dots, {self.arithmetic_ops:,} arithmetic, "
            f"{self.transcendental_ops:,} transcendental){'' if self.known else ' -- unknown: partial count'}",
            f"  floors       copy {f.bytes_per_s / 1e9:.1f} GB/s ({f.copy}), matrix "
            f"{f.flops_per_s / 1e9:.1f} GFLOP/s ({f.matrix}) on {f.device}",
            f"  time         {self.time_ms:.4f} ms (do_bench median)",
            f"  memory floor {self.memory_floor_ms:.4f} ms: {self.memory_share:.0%} of the copy bandwidth "
            f"({self.bytes / self.time_ms / 1e6:.1f} GB/s)",
            f"  matrix floor {self.compute_floor_ms:.4f} ms: {self.compute_share:.0%} of the matrix rate "
            f"({self.flops / self.time_ms / 1e6:.1f} GFLOP/s)",
            f"  bound        {self.bound} ({self.intensity:.2f} operations per byte)",
        ]
        if self.resources:
            used = ", ".join(f"{k} {v}" for k, v in self.resources.items())
            lines.append(f"  resources    {used}")
        if self.occupancy is not None:
            lines.append(f"  occupancy    {self.occupancy:.0%} of the multiprocessor's warps")
        lines += [f"  note         {n}" for n in self.notes]
        lines.append(f"  {self.limit()}")
        return "\n".join(lines)


def _nbytes(value) -> Optional[int]:
    if hasattr(value, "nbytes"):
        return int(value.nbytes)
    if hasattr(value, "element_size") and hasattr(value, "numel"):  # older torch
        return int(value.element_size() * value.numel())
    return None


def _bound_arguments(jit_fn, args, kwargs) -> dict:
    """{parameter name: value} as a launch binds them (defaults included)."""
    from .jit import _MISSING

    sig = jit_fn.signature
    bound = dict(zip(sig.names, args))
    bound.update({k: v for k, v in kwargs.items() if k in sig.names})
    for name, default in zip(sig.names, sig.defaults):
        if name not in bound and default is not _MISSING:
            bound[name] = default
    return bound


def _grid3(grid, bound: dict) -> tuple:
    g = grid(bound) if callable(grid) else grid
    g = tuple(int(x) for x in (g if isinstance(g, (tuple, list)) else (g,)))
    return (g + (1, 1, 1))[:3]


def _occupancy(resources: dict, device: int) -> Optional[float]:
    """Resident warps over the multiprocessor's maximum: the blocks that fit by
    registers and threads (backends/cuda/occupancy.h), and by shared memory
    per multiprocessor as torch reports it for the device."""
    from . import _C
    try:
        import torch
        props = torch.cuda.get_device_properties(device)
    except Exception:  # noqa: BLE001 - no torch, no occupancy
        return None
    threads = resources.get("threads", 0)
    max_threads = getattr(props, "max_threads_per_multi_processor", 0)
    if threads <= 0 or max_threads <= 0:
        return None
    blocks = _C.cuda_resident_blocks(_C.cuda_device_arch(device), threads, resources.get("registers", 0))
    shared = getattr(props, "shared_memory_per_multiprocessor", 0)
    used_shared = resources.get("static_shared_bytes", 0) + resources.get("dynamic_shared_bytes", 0)
    if used_shared and shared:
        blocks = min(blocks, shared // used_shared)
    return blocks * -(-threads // 32) * 32 / max_threads


def bytes_to_move(work: dict, sizes: dict) -> int:
    """The bytes that must cross memory from a ``CompiledKernel.work`` count:
    an array read (or written) by several programs crosses memory once and
    hits in cache after, so each array counts at most its size per
    direction; `sizes` maps pointer parameters to their arrays' bytes (None:
    not known). Accesses through pointers of no single parameter count as
    they are."""
    attributed_loaded = attributed_stored = must_move = 0
    for name, (loaded, stored) in work["params"].items():
        attributed_loaded += loaded
        attributed_stored += stored
        cap = sizes.get(name)
        must_move += min(loaded, cap) + min(stored, cap) if cap is not None else loaded + stored
    return must_move + work["loaded_bytes"] - attributed_loaded + work["stored_bytes"] - attributed_stored


def launch_values(kernel, values) -> tuple:
    """(scalars for CompiledKernel.work, {pointer parameter: array bytes})
    from one value per runtime parameter (arrays, numbers)."""
    scalars, sizes = [], {}
    for (name, type_, _), value in zip(kernel.params, values):
        scalars.append(int(value) if type_ in _INTEGER_TYPES and isinstance(value, (int, bool)) else None)
        if type_.startswith("ptr<"):
            sizes[name] = _nbytes(value)
    return scalars, sizes


def report(jit_fn, args, kwargs, grid, plot=None) -> Report:
    """Counts, times and sets against the floors one launch of `jit_fn`."""
    from .testing import do_bench

    if grid is None:
        raise coded(TypeError, "E0708", f"{jit_fn.__name__}.report(...) needs grid=..., as a launch does")
    kernel = jit_fn.warmup(*args, grid=grid, **kwargs)
    bound = _bound_arguments(jit_fn, args, kwargs)
    grid3 = _grid3(grid, bound)
    scalars, sizes = launch_values(kernel, [bound.get(name) for name, _, _ in kernel.params])
    work = kernel.work(grid3, scalars)
    must_move = bytes_to_move(work, sizes)

    device = "cuda" if kernel.backend_kind == "device" else "cpu"
    launch = jit_fn[grid]
    time_ms = do_bench(lambda: launch(*args, **kwargs), device=device, return_mode="median")
    resources, occupancy = {}, None
    if device == "cuda":
        import torch
        resources = dict(kernel.resources(torch.cuda.current_device()))
        occupancy = _occupancy(resources, torch.cuda.current_device())
    result = Report(kernel.name, kernel.key, kernel.backend, grid3, work["loaded_bytes"], work["stored_bytes"],
                    must_move, work["dot_ops"], work["arithmetic_ops"], work["transcendental_ops"], work["known"],
                    list(work["notes"]), time_ms, _floors.floors(device), resources, occupancy)
    if plot is not None:
        plot_roofline([result], plot)
    return result


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("drawing a roofline needs matplotlib, which is not installed "
                          "(pip install matplotlib; `make` installs it for the tests)") from None
    return plt


def plot_roofline(reports, path):
    """Draws the roofline of the reports' device (copy bandwidth and matrix
    rate) with one point per report, labelled by kernel, into `path` (PNG);
    returns the matplotlib Figure."""
    plt = _pyplot()
    reports = list(reports)
    floors = reports[0].floors
    fig, ax = plt.subplots(figsize=(7, 5))
    intensities = [r.intensity for r in reports if math.isfinite(r.intensity) and r.intensity > 0]
    ridge = floors.flops_per_s / floors.bytes_per_s
    lo = min(intensities + [ridge]) / 10
    hi = max(intensities + [ridge]) * 10
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(floors.flops_per_s, floors.bytes_per_s * x) / 1e9 for x in xs], color="black",
            label=f"roofline: copy {floors.bytes_per_s / 1e9:.1f} GB/s, matrix {floors.flops_per_s / 1e9:.1f} GFLOP/s")
    for r in reports:
        achieved = r.flops / (r.time_ms / 1e3) / 1e9
        ax.scatter([r.intensity], [achieved], zorder=3, label=f"{r.kernel}: {max(r.memory_share, r.compute_share):.0%} "
                                                            f"of its floor")
        ax.annotate(r.kernel, (r.intensity, achieved), textcoords="offset points", xytext=(5, 5))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (operations per byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title(f"roofline on {floors.device}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig
