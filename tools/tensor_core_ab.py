"""Matmul and flash attention, Tegula against Triton on the same source, in one process (GPU machine).

    python tools/tensor_core_ab.py [--sizes 4096 8192] [--tma-stages 3 4] [--no-attention]

For quick A/B comparisons of code generation changes: the benchmark's kernels
(examples/matmul.py at its DEFAULT_BLOCKS with 8 warps; the same written with
tensor descriptors, examples/matmul_tma.py, at each of --tma-stages; attention at
128x64 blocks, 8 warps, 3 stages) and their Triton twins, timed with
tegula.testing.do_bench (CUDA events, L2 flushed, median), with cuBLAS and
SDPA beside them and each result checked against torch. Ratios within one run
are the signal; the machine's clocks move between runs. The benchmark
(`python benchmarks/run.py --gpu`) stays the reference: it interleaves the
variants and runs every workload in one process.
"""

import argparse
import sys
from pathlib import Path

import torch

from tegula.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from tegula_bench import triton_twin  # noqa: E402
from tegula_bench.kernels import attention, matmul, matmul_tma  # noqa: E402


def compare(label: str, flops: float, module, launch, out, want, reference: str, reference_run, once: bool) -> None:
    """Times `launch(m)` for the module and its Triton twin, checks `out`
    against `want` after each, and prints the rates and ratios."""
    t = {}
    for name, m in (("tegula", module), ("triton", triton_twin.load(module))):
        run = lambda m=m: launch(m)  # noqa: E731
        run()
        torch.cuda.synchronize()
        if once:
            continue
        error = (out.float() - want).abs().max().item()
        t[name] = do_bench(run, return_mode="median")
        print(f"{label} {name}: {flops / t[name] / 1e9:.0f} TFLOP/s, max error {error:.4f}")
    if once:
        return
    t[reference] = do_bench(reference_run, return_mode="median")
    print(f"{label}: tegula / triton time {t['tegula'] / t['triton']:.3f}; {reference} "
          f"{flops / t[reference] / 1e9:.0f} TFLOP/s, tegula at {t[reference] / t['tegula']:.3f} of it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--tma-stages", type=int, nargs="*", default=[3, 4],
                        help="num_stages of the descriptor matmul (a TMA ring on Hopper); none to skip it")
    parser.add_argument("--no-attention", action="store_true")
    parser.add_argument("--once", action="store_true", help="launch each kernel once, untimed: for a profiler")
    args = parser.parse_args()
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for size in args.sizes:
        a, b = (torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
        c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        compare(f"matmul {size}^3", 2 * size ** 3, matmul, lambda m: m.matmul(a, b, c, num_warps=8), c,
                (a @ b).float(), "cuBLAS", lambda: torch.matmul(a, b, out=c), args.once)
        for stages in args.tma_stages:
            compare(f"matmul_tma {size}^3 {stages} stages", 2 * size ** 3, matmul_tma,
                    lambda m, s=stages: m.matmul_tma(a, b, c, num_warps=8, num_stages=s), c, (a @ b).float(),
                    "cuBLAS", lambda: torch.matmul(a, b, out=c), args.once)
    if args.no_attention:
        return
    B, H, S, D = 4, 32, 4096, 128
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for causal in (False, True):
        compare(f"attention causal={causal}", 4 * B * H * S * S * D * (0.5 if causal else 1.0), attention,
                lambda m: m.attention(q, k, v, causal=causal, out=out, num_warps=8, num_stages=3, BLOCK_M=128,
                                      BLOCK_N=64),
                out, sdpa(q, k, v, is_causal=causal).float(), "SDPA", lambda: sdpa(q, k, v, is_causal=causal),
                args.once)


if __name__ == "__main__":
    main()
