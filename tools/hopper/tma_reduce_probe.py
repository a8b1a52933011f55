"""Which TMA copies, stores and reductions of descriptor blocks stop with "illegal instruction" on the H200.

A kernel that faults leaves its CUDA context unusable, so every case runs in a process of its own:

    python3 tools/hopper/tma_reduce_probe.py            # every case, one line each
    python3 tools/hopper/tma_reduce_probe.py CASE       # one case in this process

A case is MODE,M,N,BM,BN,SHIFT_M,SHIFT_N,STEP_M,STEP_N: program (i, j) works on the [BM, BN] block of out
[M, N] (float32) at (i * STEP_M - SHIFT_M, j * STEP_N - SHIFT_N), the grid covering out. MODE add:
desc.atomic_add of its block of x (tests/python/test_tma_reduce.py's overlap_add_kernel); store: desc.store
of it (steps no smaller than the block: no overlap); load: desc.load of out's block into y. Each case
prints whether the TMA or the pointer form ran (`inspect`'s layouts text) and whether the result is right.

Findings (H200, 2026-12-04, with the plan's rules bypassed by the cases' alignment): every reduction and store
whose box started at a negative coordinate (a row of -3, a column of -4 floats) or at a column offset of 3
floats stopped with "illegal instruction"; loads at negative coordinates ran, and so did every box that
started inside the tensor at a multiple of 16 bytes (80 and 144 bytes included). Tegula now keeps the pointer
form for such offsets, or checks them at run time (backends/cuda/tma_plan.h), so every case runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import tegula  # noqa: E402
import tegula.language as tl  # noqa: E402

CASES = [
    # reductions: columns at multiples of 128 bytes; of 16 (80) bytes; negative multiples of 16 and of 128;
    # negative rows only; 64-byte rows (no swizzle) at 48-byte and negative 16-byte columns
    "add,64,64,16,32,0,0,16,32", "add,64,64,16,32,0,0,16,20", "add,64,64,16,32,0,4,16,32",
    "add,64,64,16,32,0,32,16,32", "add,64,64,16,32,3,0,9,32", "add,64,64,16,16,0,0,16,12",
    "add,64,64,16,16,0,4,16,16", "add,45,80,16,32,3,4,9,20",
    # the same questions for stores and loads
    "store,64,64,16,32,0,0,16,32", "store,64,80,16,32,0,0,16,36", "store,64,64,16,32,0,4,16,32",
    "store,64,64,16,32,3,0,16,32",
    "load,64,64,16,32,0,0,16,32", "load,64,80,16,32,0,0,16,36", "load,64,64,16,32,0,4,16,32",
    "load,64,64,16,32,3,0,16,32", "load,64,64,16,16,0,4,16,16",
]


@tegula.jit
def store_kernel(x_ptr, out_ptr, M, N, STEP_M: tl.constexpr, STEP_N: tl.constexpr, SHIFT_M: tl.constexpr,
                 SHIFT_N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    out.store([tl.program_id(0) * STEP_M - SHIFT_M, tl.program_id(1) * STEP_N - SHIFT_N],
              tl.load(x_ptr + pid * BM * BN + rows * BN + cols))


@tegula.jit
def load_kernel(out_ptr, y_ptr, M, N, STEP_M: tl.constexpr, STEP_N: tl.constexpr, SHIFT_M: tl.constexpr,
                SHIFT_N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    block = out.load([tl.program_id(0) * STEP_M - SHIFT_M, tl.program_id(1) * STEP_N - SHIFT_N])
    tl.store(y_ptr + pid * BM * BN + rows * BN + cols, block)


def blocks(grid, steps, shifts):
    for p in range(grid[0] * grid[1]):
        yield p, (p // grid[1]) * steps[0] - shifts[0], (p % grid[1]) * steps[1] - shifts[1]


def run_case(case: str) -> None:
    import torch
    from test_tma_reduce import overlap_add_kernel, overlap_reference

    mode, *numbers = case.split(",")
    M, N, BM, BN, shift_m, shift_n, step_m, step_n = (int(v) for v in numbers)
    steps, shifts = (step_m, step_n), (shift_m, shift_n)
    grid = (-(-(M + shift_m) // step_m), -(-(N + shift_n) // step_n))
    rng = np.random.default_rng(M + N)
    x = rng.standard_normal((grid[0] * grid[1], BM, BN)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    consts = dict(STEP_M=step_m, STEP_N=step_n, SHIFT_M=shift_m, SHIFT_N=shift_n, BM=BM, BN=BN)
    x_t, out_t = torch.from_numpy(x).cuda(), torch.from_numpy(out).cuda()
    if mode == "add":
        kernel, args, want = overlap_add_kernel, (x_t, out_t, M, N), overlap_reference(out, x, (*steps, grid[1]), shifts)
    elif mode == "store":
        kernel, args, want = store_kernel, (x_t, out_t, M, N), out.copy()
        for p, r0, c0 in blocks(grid, steps, shifts):
            for i in range(BM):
                for j in range(BN):
                    if 0 <= r0 + i < M and 0 <= c0 + j < N:
                        want[r0 + i, c0 + j] = x[p, i, j]
    else:
        y_t = torch.zeros_like(x_t)
        kernel, args, want = load_kernel, (out_t, y_t, M, N), np.zeros_like(x)
        for p, r0, c0 in blocks(grid, steps, shifts):
            for i in range(BM):
                for j in range(BN):
                    if 0 <= r0 + i < M and 0 <= c0 + j < N:
                        want[p, i, j] = out[r0 + i, c0 + j]
    layouts = kernel.inspect(*args, **consts).layouts
    path = "pointer form" if "pointer form" in layouts else "TMA" if "TMA through" in layouts else "?"
    print(path, flush=True)
    kernel[grid](*args, **consts)
    torch.cuda.synchronize()
    got = (y_t if mode == "load" else out_t).cpu().numpy()
    err = float(np.abs(got - want).max())
    print(f"{path}: ok, max error {err:.2e}" if err < 1e-4 else f"{path}: WRONG, max error {err:.2e}")


def main() -> int:
    if sys.argv[1:]:
        run_case(sys.argv[1])
        return 0
    for case in CASES:
        proc = subprocess.run([sys.executable, __file__, case], capture_output=True, text=True, timeout=120)
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        path = lines[0] if lines else ""
        tail = lines[-1] if lines else "(no output)"
        if "illegal instruction" in proc.stdout + proc.stderr:
            tail = f"{path}: ILLEGAL INSTRUCTION"
        print(f"{case:30s} rc {proc.returncode:3d}  {tail[:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
