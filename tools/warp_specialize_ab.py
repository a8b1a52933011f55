"""Warp specialization A/B on the GPU: the descriptor matmul with and without a producer warpgroup.

The kernel is examples/matmul_tma.py's, whose tile loop is ``tl.range(..., warp_specialize=WARP_SPECIALIZE)``;
a grid of one program per tile runs it as a plain kernel, one per multiprocessor as a persistent one.
For each block configuration and size, times interleaved (tegula.testing.CudaTimer: L2 flushed, median) cuBLAS,
Tegula with the producer (True), Tegula without it (False) and Triton compiling the same source (the
benchmark's Triton twin) both ways, after checking each against cuBLAS. Prints one table and writes JSON to
$OUT/warp_specialize_ab.json (or --json).

    python3 tools/warp_specialize_ab.py [--sizes 4096 8192] [--dtypes bfloat16 float16] [--reps 30]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys

CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, persistent (one program per multiprocessor)
    (128, 128, 64, 8, 3, False),
    (128, 256, 64, 8, 4, False),
    (128, 256, 64, 8, 3, True),
    (256, 128, 64, 8, 3, True),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16"])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import torch
    import triton

    import tegula
    from tegula.testing import CudaTimer

    root = pathlib.Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root / "examples"), str(root / "benchmarks")]
    import matmul_tma as tg
    from tegula_bench import triton_twin

    tr = triton_twin.load(tg)
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    timer = CudaTimer()
    rows = []
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for n in args.sizes:
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            want = torch.matmul(a, b)
            flops = 2.0 * n ** 3
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            for bm, bn, bk, warps, stages, persistent in CONFIGS:
                tiles = triton.cdiv(n, bm) * triton.cdiv(n, bn)
                grid = (min(tiles, sms) if persistent else tiles,)
                meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8)
                variants = {"cublas": lambda: torch.matmul(a, b)}
                for label, module, ws in (("tegula.ws", tg, True), ("tegula", tg, False), ("triton", tr, False),
                                          ("triton.ws", tr, True)):
                    out = torch.empty(n, n, device="cuda", dtype=dtype)

                    def run(module=module, ws=ws, out=out):
                        module.matmul_tma_kernel[grid](a, b, out, n, n, n, **meta, WARP_SPECIALIZE=ws,
                                                       num_warps=warps, num_stages=stages)
                        return out
                    try:
                        got = run()
                        torch.cuda.synchronize()
                        err = (got.float() - want.float()).abs().max().item()
                        scale = want.float().abs().max().item()
                        if not err <= 2e-2 * scale:
                            print(f"{label} {bm}x{bn}x{bk} w{warps} s{stages} n={n}: wrong, max error {err:g}")
                            continue
                        variants[label] = run
                    except Exception as e:  # noqa: BLE001 - a variant that does not compile is reported, not fatal
                        print(f"{label} {bm}x{bn}x{bk} w{warps} s{stages} n={n}: {type(e).__name__}: "
                              f"{str(e).splitlines()[0][:200] if str(e) else ''}")
                names = list(variants)
                samples = timer.interleaved([variants[k] for k in names], args.reps)
                ms = {k: statistics.median(s) for k, s in zip(names, samples)}
                row = {"dtype": dtype_name, "n": n,
                       "config": f"{bm}x{bn}x{bk} w{warps} s{stages}" + (" persistent" if persistent else ""),
                       "ms": ms, "tflops": {k: flops / v / 1e9 for k, v in ms.items()}}
                rows.append(row)
                cublas = row["tflops"]["cublas"]
                print(f"{dtype_name:8s} {n:5d} {row['config']:22s} " + "  ".join(
                    f"{k} {v:6.1f} ({v / cublas:5.1%})" for k, v in row["tflops"].items()), flush=True)
            del a, b, want
    path = args.json or os.path.join(os.environ.get("OUT", "."), "warp_specialize_ab.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "triton": triton.__version__, "tegula": tegula.__version__,
                   "gpu": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
