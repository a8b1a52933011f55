"""What the row-wise ops share: viewing a tensor as rows of its last
dimension, splitting rows among the programs of a backward pass, and the
kernel that sums those programs' partial weight gradients.

A weight gradient is a sum over every row. Each backward program
accumulates the rows it owns into one partial row of a ``[programs, N]``
buffer, and ``sum_partials`` adds those partial rows up with a second
kernel, so no atomics are needed and the result does not depend on timing.
"""

from __future__ import annotations

import functools

import torch

import tegula
import tegula.language as tl
from tegula.torch import compute_dtype

from ._empty import empty, sizes_and_strides

# How many programs share the rows of a backward pass on the CPU backend:
# enough to keep its workers busy, few enough that the partial weight
# gradients stay small. On a GPU it is PROGRAMS_PER_SM per multiprocessor.
MAX_PROGRAMS = 64
PROGRAMS_PER_SM = 2
# A backward program holds about eight row-long tiles at once (x, dy, w, the
# two partial sums and temporaries): with more than this many elements of a
# row per thread they spill to local memory, so wide rows get more warps.
ELEMENTS_PER_THREAD = 8
# A backward program's step: rows of a narrow matrix (N below TILE_ELEMENTS)
# are taken several at a time, up to MAX_ROWS_PER_STEP.
TILE_ELEMENTS = 2048
MAX_ROWS_PER_STEP = 16
# Whether a backward program loads each step's tiles during the step before, by device type: on a
# GPU a program's steps are otherwise serial (load, row sums, store), each waiting for memory; on
# the CPU backend the tiles carried from step to step are copies, and the cores prefetch anyway.
LOAD_AHEAD = {"cuda": True}


FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# A row is one tile of the row kernels: at most 2^20 elements.
MAX_ROW = 1 << 20


def check_rows(op: str, x: torch.Tensor) -> None:
    """Raises ValueError unless x is a floating tensor of at least one dimension whose rows (its last
    dimension) fit one tile."""
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        raise ValueError(f"{op} takes x as a tensor of at least one dimension (rows of its last), got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    if x.dtype not in FLOATING:
        raise ValueError(f"{op} takes x of a floating dtype (float16, bfloat16, float32, float64), got {x.dtype}")
    if x.shape[-1] > MAX_ROW:
        raise ValueError(f"{op} takes rows of at most {MAX_ROW} elements, got {x.shape[-1]}")


def check_weights(op: str, x: torch.Tensor, *weights: torch.Tensor) -> None:
    """Raises ValueError unless x holds floating rows (check_rows) and each weight is a tensor of shape
    [N] for x's last dimension N and x's dtype."""
    check_rows(op, x)
    for w in weights:
        if not isinstance(w, torch.Tensor):
            raise ValueError(f"{op} takes weights of shape ({x.shape[-1]},) and dtype {x.dtype}, got "
                             f"{type(w).__name__}")
        if tuple(w.shape) != tuple(x.shape[-1:]) or w.dtype != x.dtype:
            raise ValueError(f"{op} takes weights of shape ({x.shape[-1]},) and dtype {x.dtype} for x of shape "
                             f"{tuple(x.shape)}, got {tuple(w.shape)} {w.dtype}")


def check_eps(op: str, eps) -> None:
    """Raises ValueError unless eps is a real number (a kernel argument, not a tensor)."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise ValueError(f"{op} takes eps as a Python float, got {type(eps).__name__}")


def rows_of(x: torch.Tensor) -> torch.Tensor:
    """x as a contiguous [M, N] matrix whose rows are its last dimension."""
    return x.contiguous().view(-1, x.shape[-1])


def shape_of_rows(x: torch.Tensor) -> tuple:
    """(M, N): how many rows of its last dimension N a tensor holds."""
    N = x.shape[-1]
    return (x.numel() // N if N else 0), N


def strided_rows(x: torch.Tensor) -> torch.Tensor:
    """x as an [M, N] matrix of rows of its last dimension, a view of x (any row
    stride, the last dimension contiguous) when its strides allow one, else a
    contiguous copy."""
    N = x.shape[-1]
    if x.stride(-1) == 1 or N == 1:
        try:
            return x.view(-1, N)
        except RuntimeError:  # leading dims that do not merge into one row index
            pass
    return x.contiguous().view(-1, N)


def program_target(device: torch.device = None) -> int:
    """How many programs a pass that splits its rows should launch on `device`."""
    if device is not None and device.type == "cuda":
        return PROGRAMS_PER_SM * _multiprocessors(device.index if device.index is not None else
                                                  torch.cuda.current_device())
    return MAX_PROGRAMS


def row_split(rows: int, device: torch.device = None, step: int = 1) -> tuple:
    """(programs, rows per program) for a backward pass over `rows` rows on `device`
    whose programs walk their rows `step` at a time (rows per program a multiple of it)."""
    if rows <= 0:
        return 1, 0  # one program writes the zero partial gradients
    per_program = tegula.cdiv(tegula.cdiv(rows, min(rows, program_target(device))), step) * step
    return tegula.cdiv(rows, per_program), per_program  # no program without rows


def rows_per_step(block_n: int) -> int:
    """How many rows of `block_n` elements a backward program takes per step: a tile
    of about TILE_ELEMENTS, so that narrow rows still keep enough loads in flight."""
    return max(1, min(MAX_ROWS_PER_STEP, TILE_ELEMENTS // block_n))


def load_ahead(device: torch.device) -> bool:
    """Whether a backward program on `device` loads a step's tiles during the step before (LOAD_AHEAD)."""
    return LOAD_AHEAD.get(device.type, False)


def backward_warps(block_n: int) -> int:
    """Warps of a backward program over rows of `block_n` elements (a power of two): 4 to 16."""
    return max(4, min(16, block_n // (32 * ELEMENTS_PER_THREAD)))


@tegula.jit
def load_step(ptr, r0, row_end, N, cols, mask, ROWS: tl.constexpr):
    # Rows r0 .. r0 + ROWS - 1 (those below row_end) of a row-major [M, N] matrix as a [ROWS, BLOCK_N]
    # tile in ptr's dtype, zeros elsewhere: one step of a backward program.
    rows = r0 + tl.arange(0, ROWS)
    tile = rows.to(tl.int64)[:, None] * N + cols[None, :]
    return tl.load(ptr + tile, mask=(rows < row_end)[:, None] & mask[None, :], other=0.0)


@functools.lru_cache(maxsize=None)
def _multiprocessors(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


@tegula.jit
def sum_partials_kernel(partial_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_cols = cols < N
    acc = tl.zeros([BLOCK_N], dtype=partial_ptr.dtype.element_ty)
    for p0 in range(0, P, BLOCK_P):
        ps = p0 + tl.arange(0, BLOCK_P)
        mask = (ps < P)[:, None] & in_cols[None, :]
        acc += tl.sum(tl.load(partial_ptr + ps[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=in_cols)


def sum_partials(partial: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The column sums of a [P, N] partial-gradient buffer, as a new [N] tensor of `dtype`."""
    P, N = partial.shape
    out = empty((N,), dtype, partial.device)
    grid, scalars, constexprs = partials_launch(P, N)
    sum_partials_kernel[grid](partial, out, *scalars, **constexprs)
    return out


def partials_launch(P: int, N: int) -> tuple:
    """(grid, the arguments after the tensors partial and out, the constexprs) of sum_partials's launch over a
    [P, N] buffer: what an op keeps in its layout to launch again."""
    # A weight's few columns in slices of 32 (a 128-byte line of float32 per row), 64 partial rows
    # per step: a [264, 512] buffer (2 programs per SM of an H200) takes 16 programs of 5 steps,
    # where 256-column slices of 16 rows took 2 programs of 17 dependent steps, all latency. Wide
    # buffers (linear_cross_entropy's) keep 256 columns a program, so programs stay few on a CPU.
    # One partial row (a single run: the kernel only casts) takes tiles of one row.
    block_n = min(tegula.next_power_of_2(N), 32 if N <= 4096 else 256)
    return (tegula.cdiv(N, block_n),), (P, N), dict(BLOCK_P=64 if P > 1 else 1, BLOCK_N=block_n)


def backward_split(x: torch.Tensor) -> tuple:
    """How a backward pass over x's contiguous rows splits them: (M, N, programs, rows per program, the
    constexprs of its kernel (BLOCK_N, ROWS, ACC, AHEAD, num_warps), the partial gradient buffer's (sizes,
    strides, dtype), the partial sums' launch), for an op's layout to keep."""
    M, N = shape_of_rows(x)
    block_n = tegula.next_power_of_2(N)
    step = rows_per_step(block_n)
    programs, rows_per_program = row_split(M, x.device, step)
    constexprs = dict(BLOCK_N=block_n, ROWS=step, ACC=compute_dtype(x), AHEAD=load_ahead(x.device),
                      num_warps=backward_warps(block_n * step))
    return (M, N, programs, rows_per_program, constexprs, (*sizes_and_strides((programs, N)), accumulator(x)),
            partials_launch(programs, N))


def summed(partial: torch.Tensor, launch, weight: torch.Tensor, alloc) -> torch.Tensor:
    """The weight gradient from backward_split's partial buffer: a new [N] tensor of weight's dtype, by the
    partial sums' launch as backward_split describes it."""
    grid, scalars, constexprs = launch
    out = alloc((weight.shape[0],), (1,), weight.dtype)
    sum_partials_kernel[grid](partial, out, *scalars, **constexprs)
    return out


def tables() -> tuple:
    """The values of this module's tables that a backward's split of its rows depends on: part of the key of
    a layout that keeps such a split, since tools change them at run time."""
    return MAX_PROGRAMS, PROGRAMS_PER_SM, TILE_ELEMENTS, MAX_ROWS_PER_STEP, ELEMENTS_PER_THREAD, \
        tuple(LOAD_AHEAD.items())


def accumulator(x: torch.Tensor) -> torch.dtype:
    """The torch dtype statistics and partial gradients are kept in for x."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32
