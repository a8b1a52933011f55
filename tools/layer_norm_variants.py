"""Layer norm forward, source variants x num_warps, Tegula and Triton side by side (GPU machine).

An experiment, not a benchmark row: which way of writing (and compiling) the
kernel moves it from the bandwidth limit's 95%? Each variant is Triton source;
the Triton twin compiles the same text. Timing as the benchmark does it
(tegula.testing.do_bench: CUDA events, L2 flushed, median).

    python tools/layer_norm_variants.py [--rows 16384] [--cols 8192] [--warps 4 8 16]
"""

import argparse
import os
import sys

import torch

import tegula
from tegula.testing import do_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from tegula_bench import triton_twin  # noqa: E402


VARIANTS = ("ln_base", "ln_early_wb", "ln_evict", "ln_sumsq", "ln_ieee")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--warps", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--once", action="store_true",
                        help="launch each (variant, warps, compiler) once, untimed: for a profiler")
    args = parser.parse_args()
    M, N = args.rows, args.cols
    torch.manual_seed(0)
    x = (torch.randn(M, N, device="cuda") * 2 + 1).to(torch.bfloat16)
    w = torch.randn(N, device="cuda").to(torch.bfloat16)
    b = torch.randn(N, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    mean = torch.empty(M, device="cuda")
    rstd = torch.empty(M, device="cuda")
    want = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5).to(torch.bfloat16)
    copy_src = torch.empty(1 << 28, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    copy_ms = do_bench(lambda: copy_dst.copy_(copy_src), return_mode="median")
    copy_gbs = 2 * copy_src.numel() * 4 / copy_ms / 1e6
    moved = 2 * M * N * 2 + 2 * N * 2 + 2 * M * 4
    print(f"copy {copy_gbs:.0f} GB/s; layer norm {M}x{N} bf16, {moved / 1e6:.1f} MB per call")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import layer_norm_variant_kernels as kernels

    from tegula_bench.kernels import layer_norm as base

    # (module, kernel name) per variant; the Triton twin of each module compiles the same text.
    sources = {name: (kernels, name) for name in VARIANTS if name != "ln_base"}
    sources["ln_base"] = (base, "layer_norm_kernel")
    block = tegula.next_power_of_2(N)
    for name in args.variants:
        for warps in args.warps:
            line = f"{name:<12} w{warps:<3}"
            times = {}
            module, kernel_name = sources[name]
            for compiler, source in (("tegula", module), ("triton", triton_twin.load(module))):
                kernel = getattr(source, kernel_name)

                def run(kernel=kernel):
                    kernel[(M,)](x, y, w, b, mean, rstd, N, x.stride(0), y.stride(0), 1e-5,
                                 BLOCK_N=block, num_warps=warps)

                try:
                    run()
                    torch.cuda.synchronize()
                    if args.once:
                        continue
                    err = (y.float() - want.float()).abs().max().item()
                    ms = do_bench(run, return_mode="median")
                    times[compiler] = ms
                    line += f"  {compiler} {ms * 1e3:7.1f} us {moved / ms / 1e6 / copy_gbs * 100:5.1f}% err {err:.3f}"
                except Exception as e:  # noqa: BLE001 - report and go on to the next variant
                    line += f"  {compiler} failed: {str(e).splitlines()[0][:120]}"
            if len(times) == 2:
                line += f"  tegula/triton {times['tegula'] / times['triton']:.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
