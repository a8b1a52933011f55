"""The launch configuration of the attention kernels: tile sizes, warps and
pipeline stages of the forward, the dK/dV and the dQ kernels, chosen per
backend, head dim and input dtype, with an override for sweeps.

The CPU backend keeps the 32 x 32 tiles the kernels were written with. On
CUDA the dK/dV kernel keeps its key block and two accumulators in
registers, so its key block is the large one and its query step small, and
the dQ kernel is the transpose of that. ``tools/attention_sweep.py`` times
a list of configurations against SDPA on the GPU; the table below holds
its choice.

Override, without editing code (each part optional, the others keep their
defaults): the environment variable ``TEGULA_ATTENTION_CONFIG``, read at
every launch, e.g. ``fwd=128x64w8s3,dkdv=64x128w8s2,dq=128x64w8s2`` (``BMxBN``
then optionally ``w`` warps and ``s`` stages), or ``use(config)``, a context
manager that wins over the variable in its thread (a ``contextvars``
variable, so threads and tasks do not see each other's).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import os
import re
from typing import Iterator, Optional

ENV = "TEGULA_ATTENTION_CONFIG"
KERNELS = ("fwd", "dkdv", "dq")


@dataclasses.dataclass(frozen=True)
class Tiles:
    """One kernel's launch: BLOCK_M query rows by BLOCK_N keys per step; warps and
    stages None where the backend's default applies (the CPU ignores both)."""

    block_m: int
    block_n: int
    num_warps: Optional[int] = None
    num_stages: Optional[int] = None

    def options(self) -> dict:
        """The launch options to pass besides the constexprs."""
        out = {}
        if self.num_warps is not None:
            out["num_warps"] = self.num_warps
        if self.num_stages is not None:
            out["num_stages"] = self.num_stages
        return out

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}" + (f"w{self.num_warps}" if self.num_warps else "")
                + (f"s{self.num_stages}" if self.num_stages else ""))


@dataclasses.dataclass(frozen=True)
class AttentionConfig:
    fwd: Tiles
    dkdv: Tiles
    dq: Tiles

    def __str__(self) -> str:
        return ",".join(f"{name}={getattr(self, name)}" for name in KERNELS)


_CPU = AttentionConfig(Tiles(32, 32), Tiles(32, 32), Tiles(32, 32))

# CUDA, by head dim (the smallest entry at or above D; the last for larger D):
# the fastest correct candidates of tools/attention_sweep.py on the H200
# (bf16, B=4 H=16 S=4096, geometric mean over causal and not;
# benchmarks/results/2026-12-02-h200-attention-sweep.json). At head dim 64
# one warpgroup per backward program beats two; at 128 a forward tile of
# 128 x 128 spills. Half-precision inputs use this table.
_CUDA = {
    64: AttentionConfig(fwd=Tiles(128, 128, 8, 3), dkdv=Tiles(32, 128, 4, 3), dq=Tiles(128, 32, 4, 3)),
    128: AttentionConfig(fwd=Tiles(64, 64, 4, 3), dkdv=Tiles(32, 128, 8, 3), dq=Tiles(128, 64, 8, 3)),
}

# float32 inputs on CUDA: operands twice as wide in shared memory, and each
# product three TF32 products over split operands (tegula.torch.dot_precision),
# so narrow tiles. Head dim 64: the sweep's choice at train_gpt's shape
# (tools/attention_sweep.py --dtype float32 --shape 32x8x512 --dims 64 on the
# H200; benchmarks/results/2026-12-02-h200-attention-sweep-f32.json): the
# forward 114% of SDPA's rate, the backward 77%. 128 takes the same tiles,
# unswept.
_CUDA_F32 = {
    64: AttentionConfig(fwd=Tiles(64, 32, 4, 2), dkdv=Tiles(16, 64, 4, 2), dq=Tiles(64, 16, 4, 2)),
    128: AttentionConfig(fwd=Tiles(64, 32, 4, 2), dkdv=Tiles(16, 64, 4, 2), dq=Tiles(64, 16, 4, 2)),
}


_override: contextvars.ContextVar[Optional[AttentionConfig]] = contextvars.ContextVar(
    "tegula_attention_config", default=None)

_SPEC = re.compile(r"^(\d+)x(\d+)(?:w(\d+))?(?:s(\d+))?$")


def _power_of_two(value: int, what: str, spec: str) -> int:
    if value < 16 or value & (value - 1):
        raise ValueError(f"{ENV}: {what} must be a power of two >= 16, got {value} in {spec!r}")
    return value


def parse_tiles(spec: str) -> Tiles:
    """``"128x64w8s3"`` -> Tiles(128, 64, 8, 3); warps and stages optional."""
    match = _SPEC.match(spec.strip())
    if not match:
        raise ValueError(f"{ENV}: a kernel's tiles are BMxBN[wWARPS][sSTAGES] (e.g. 128x64w8s3), got {spec!r}")
    bm, bn, warps, stages = match.groups()
    return Tiles(_power_of_two(int(bm), "BLOCK_M", spec), _power_of_two(int(bn), "BLOCK_N", spec),
                 int(warps) if warps else None, int(stages) if stages else None)


@functools.lru_cache(maxsize=64)
def parse(spec: str, base: AttentionConfig) -> AttentionConfig:
    """``base`` with the kernels named in ``spec`` ("fwd=...,dkdv=...,dq=...") replaced."""
    changes = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, eq, tiles = part.partition("=")
        if not eq or name.strip() not in KERNELS:
            raise ValueError(f"{ENV}: expected parts KERNEL=BMxBN[wW][sS] with KERNEL one of "
                             f"{', '.join(KERNELS)}, got {part!r}")
        changes[name.strip()] = parse_tiles(tiles)
    return dataclasses.replace(base, **changes)


def default(device_type: str, head_dim: int, dtype: str = "bfloat16") -> AttentionConfig:
    """The built-in configuration for a backend ("cpu", "cuda"), head dim and
    input dtype (its name: "bfloat16", "float16", "float32", ...)."""
    if device_type != "cuda":
        return _CPU
    table = _CUDA_F32 if dtype in ("float32", "float64") else _CUDA
    for dim in sorted(table):
        if head_dim <= dim:
            return table[dim]
    return table[max(table)]


def choose(device_type: str, head_dim: int, dtype: str = "bfloat16") -> AttentionConfig:
    """What a launch uses: ``use``'s configuration, else the default with the
    environment variable's parts applied."""
    chosen = _override.get()
    if chosen is not None:
        return chosen
    base = default(device_type, head_dim, dtype)
    spec = os.environ.get(ENV, "").strip()
    return parse(spec, base) if spec else base


def in_use() -> bool:
    """Whether ``use`` chose the configuration in this context (the environment variable not consulted)."""
    return _override.get() is not None


def overridden() -> bool:
    """Whether ``use`` or the environment variable chose the configuration (a sweep): then the
    kernels whose tiles it names run, not the descriptor backward on Hopper (attention_tma.py)."""
    return _override.get() is not None or bool(os.environ.get(ENV, "").strip())


@contextlib.contextmanager
def use(config: AttentionConfig) -> Iterator[AttentionConfig]:
    """Launches inside the block (in this thread or task) use ``config``."""
    token = _override.set(config)
    try:
        yield config
    finally:
        _override.reset(token)
