"""Which desc.atomic_add launches stop with "illegal instruction" on the H200, and which run.

A kernel that faults leaves its CUDA context unusable, so every case runs in a process of its own:

    python3 tools/hopper/tma_reduce_probe.py            # every case, one line each
    python3 tools/hopper/tma_reduce_probe.py CASE       # one case in this process
    python3 tools/hopper/tma_reduce_probe.py --source CASE  # its generated CUDA, then run it

Finding (2026-12-04, H200): every case whose column offset was not a multiple of 16 bytes stopped with
"illegal instruction", every other ran; Tegula now keeps the pointer form for such offsets
(backends/cuda/tma_plan.h, tma_offset_refusal), so every case runs.

A case is M,N,BM,BN,SHIFT,STEP_M,STEP_N,GRID_DIMS: blocks of x [BM, BN] reduced into out [M, N] at
(i * STEP_M - SHIFT, j * STEP_N - SHIFT) (tests/python/test_tma_reduce.py's overlap_add_kernel), on a
2-D grid or, GRID_DIMS 1, a 1-D grid of the same programs.
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
    # blocks entirely inside out, no overlap, swizzled 128-byte rows
    "64,64,16,32,0,16,32,2", "64,64,16,32,0,16,32,1",
    # hanging over the far edges only
    "45,80,16,32,0,16,32,2",
    # negative coordinates (the test's case), no overlap
    "48,64,16,32,3,16,32,2",
    # the xfailed test's cases
    "45,80,16,32,3,9,20,2", "130,96,32,64,3,17,36,2",
    # 64-byte rows: no swizzle
    "64,64,16,16,0,16,16,2", "45,80,16,16,3,9,12,2",
    # one block, one program
    "16,32,16,32,0,16,32,2",
]


@tegula.jit
def overlap_add_1d_kernel(x_ptr, out_ptr, M, N, GN, STEP_M: tl.constexpr, STEP_N: tl.constexpr,
                          SHIFT_M: tl.constexpr, SHIFT_N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    i = pid // GN
    j = pid % GN
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + pid * BM * BN + rows * BN + cols)
    out = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    out.atomic_add([i * STEP_M - SHIFT_M, j * STEP_N - SHIFT_N], x)


def run_case(case: str, show_source: bool) -> None:
    import torch
    from test_tma_reduce import overlap_add_kernel, overlap_reference

    M, N, BM, BN, shift, step_m, step_n, dims = (int(v) for v in case.split(","))
    grid = (-(-(M + shift) // step_m), -(-(N + shift) // step_n))
    rng = np.random.default_rng(M + N)
    x = rng.standard_normal((grid[0] * grid[1], BM, BN)).astype(np.float32)
    out = rng.standard_normal((M, N)).astype(np.float32)
    want = overlap_reference(out, x, (step_m, step_n, grid[1]), (shift, shift))
    x_t, out_t = torch.from_numpy(x).cuda(), torch.from_numpy(out).cuda()
    consts = dict(STEP_M=step_m, STEP_N=step_n, SHIFT_M=shift, SHIFT_N=shift, BM=BM, BN=BN)
    if dims == 2:
        kernel, launch_grid, args = overlap_add_kernel, grid, (x_t, out_t, M, N)
    else:
        kernel, launch_grid, args = overlap_add_1d_kernel, (grid[0] * grid[1],), (x_t, out_t, M, N, grid[1])
    if show_source:
        from cuda_emulator import compile_cuda
        host = (x, out, M, N) if dims == 2 else (x, out, M, N, grid[1])
        print(compile_cuda(kernel, host, consts, 4, 90, None)[0].source)
    kernel[launch_grid](*args, **consts)
    torch.cuda.synchronize()
    got = out_t.cpu().numpy()
    err = float(np.abs(got - want).max())
    print(f"ok max error {err:.2e}" if err < 1e-4 else f"WRONG max error {err:.2e}")


def main() -> int:
    argv = sys.argv[1:]
    show = "--source" in argv
    argv = [a for a in argv if a != "--source"]
    if argv:
        run_case(argv[0], show)
        return 0
    for case in CASES:
        proc = subprocess.run([sys.executable, __file__, case], capture_output=True, text=True, timeout=120)
        text = (proc.stdout + proc.stderr).strip().splitlines()
        tail = [line for line in text if line.strip()][-1:] or ["(no output)"]
        print(f"{case:28s} rc {proc.returncode:3d}  {tail[0][:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
