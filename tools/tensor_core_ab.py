"""Matmul and flash attention, Tegula against Triton on the same source, in one process (GPU machine).

    python tools/tensor_core_ab.py [--sizes 4096 8192] [--no-attention]

For quick A/B comparisons of code generation changes: the benchmark's kernels
(tegula.kernels.matmul at its DEFAULT_BLOCKS with 8 warps; attention at
128x64 blocks, 8 warps, 3 stages) and their Triton twins, timed with
tegula.testing.do_bench (CUDA events, L2 flushed, median), with cuBLAS and
SDPA beside them and each result checked against torch. Ratios within one run
are the signal; the machine's clocks move between runs. The benchmark
(`python -m tegula.bench --gpu`) stays the reference: it interleaves the
variants and runs every workload in one process.
"""

import argparse

import torch

from tegula import _triton_twin
from tegula.kernels import attention, matmul
from tegula.testing import do_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--no-attention", action="store_true")
    parser.add_argument("--once", action="store_true", help="launch each kernel once, untimed: for a profiler")
    args = parser.parse_args()
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for size in args.sizes:
        a, b = (torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
        c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        want = (a @ b).float()
        t = {}
        for name, module in (("tegula", matmul), ("triton", _triton_twin.load(matmul))):
            run = lambda module=module: module.matmul(a, b, c, num_warps=8)  # noqa: E731
            run()
            torch.cuda.synchronize()
            if args.once:
                continue
            error = (c.float() - want).abs().max().item()
            t[name] = do_bench(run, return_mode="median")
            print(f"matmul {size}^3 {name}: {2 * size ** 3 / t[name] / 1e9:.0f} TFLOP/s, max error {error:.3f}")
        if args.once:
            continue
        t["cublas"] = do_bench(lambda: torch.matmul(a, b, out=c), return_mode="median")
        print(f"matmul {size}^3: tegula / triton time {t['tegula'] / t['triton']:.3f}; cuBLAS "
              f"{2 * size ** 3 / t['cublas'] / 1e9:.0f} TFLOP/s, tegula at {t['cublas'] / t['tegula']:.3f} of it")
    if args.no_attention:
        return
    B, H, S, D = 4, 32, 4096, 128
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for causal in (False, True):
        want = sdpa(q, k, v, is_causal=causal).float()
        flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
        t = {}
        for name, module in (("tegula", attention), ("triton", _triton_twin.load(attention))):
            run = lambda module=module: module.attention(q, k, v, causal=causal, out=out, num_warps=8,  # noqa: E731
                                                         num_stages=3, BLOCK_M=128, BLOCK_N=64)
            run()
            torch.cuda.synchronize()
            if args.once:
                continue
            error = (out.float() - want).abs().max().item()
            t[name] = do_bench(run, return_mode="median")
            print(f"attention causal={causal} {name}: {flops / t[name] / 1e9:.0f} TFLOP/s, max error {error:.4f}")
        if args.once:
            continue
        t["sdpa"] = do_bench(lambda: sdpa(q, k, v, is_causal=causal), return_mode="median")
        print(f"attention causal={causal}: tegula / triton time {t['tegula'] / t['triton']:.3f}; SDPA "
              f"{flops / t['sdpa'] / 1e9:.0f} TFLOP/s, tegula at {t['sdpa'] / t['tegula']:.3f} of it")


if __name__ == "__main__":
    main()
