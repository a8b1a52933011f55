"""Autotuned matmul: the tiled kernel of examples/matmul.py, tuned over block
shapes, GROUP_M and num_warps for each problem shape.

Run it: `python examples/matmul_autotune.py [--shapes 96x80x72 200x130x150] [--dtype float32]`
on the CPU, or add `--device cuda` (needs torch) for the GPU. With
TEGULA_PRINT_AUTOTUNING=1 every config's time and the choice are printed.
The chosen config is kept on disk next to the kernel cache: a second run
re-tunes nothing.

The decorator form of the same thing, on a kernel of your own::

    @tegula.autotune(configs=CONFIGS, key=["M", "N", "K"],
                     prune_configs_by={"early_config_prune": drop_oversized_blocks})
    @tegula.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, ..., BLOCK_M: tl.constexpr, ...):
        ...
"""

import argparse

import numpy as np

import tegula
from tegula.testing import assert_close

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)
from matmul import make_inputs, matmul_kernel, matmul_reference  # examples/matmul.py

# Large tiles with more warps for big GPU problems, small ones for small or CPU problems.
CONFIGS = [
    tegula.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=8),
    tegula.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4),
    tegula.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4),
    tegula.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4}, num_warps=4),
    tegula.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4),
    tegula.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=2),
    tegula.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1}, num_warps=2),
    tegula.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 1}, num_warps=1),
]


def drop_oversized_blocks(configs, args, **kwargs):
    """Tiles more than twice the problem waste most of their work: skip them
    (and so never compile them) unless nothing else is left."""
    fits = [c for c in configs
            if c.kwargs["BLOCK_M"] <= 2 * args["M"] and c.kwargs["BLOCK_N"] <= 2 * args["N"]
            and c.kwargs["BLOCK_K"] <= 2 * args["K"]]
    return fits or configs[-1:]


matmul_tuned = tegula.autotune(configs=CONFIGS, key=["M", "N", "K"],
                               prune_configs_by={"early_config_prune": drop_oversized_blocks})(matmul_kernel)


def matmul(a, b, out_dtype=None):
    """``a @ b`` (fp32 accumulation) with the config tuned for this M, N, K."""
    M, K = a.shape
    N = b.shape[1]
    out = _host.empty((M, N), out_dtype or a.dtype, like=a)
    sa, sb, sc = _host.strides(a), _host.strides(b), _host.strides(out)

    def grid(meta):
        return (tegula.cdiv(M, meta["BLOCK_M"]) * tegula.cdiv(N, meta["BLOCK_N"]),)

    matmul_tuned[grid](a, b, out, M, N, K, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1])
    return out


def check(M: int, N: int, K: int, dtype: str = "float32", device: str = "cpu", seed: int = 0):
    """Raises AssertionError unless the tuned kernel's A @ B matches the reference;
    returns the config it chose."""
    a, b = make_inputs(M, N, K, dtype, seed)
    if device == "cuda":
        import torch

        a, b = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    c = matmul(a, b, out_dtype=np.float32)
    want = matmul_reference(a, b, np.float32)
    # float32 dot on the GPU rounds its inputs to tf32 (10-bit mantissa) by
    # default, as Triton's does: then it is as precise as half-precision inputs.
    exact = dtype == "float32" and device == "cpu"
    atol = (1e-5 if exact else 1e-3) * 8 * max(K, 1) ** 0.5
    assert_close(c, want, atol=atol, rtol=1e-4 if exact else 1e-2)
    return matmul_tuned.best_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=None, help="MxNxK (default: by device)",
                        type=_cli.shape("MxNxK", minimum=0))
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    if args.device == "cuda":
        _cli.require_cuda(parser)
    shapes = args.shapes or (["96x80x72", "200x130x150"] if args.device == "cpu"
                             else ["512x512x512", "2048x2048x2048"])
    for shape in shapes:
        M, N, K = (int(v) for v in shape.lower().split("x"))
        config = check(M, N, K, args.dtype, args.device)
        a, b = make_inputs(M, N, K, args.dtype)
        if args.device == "cuda":
            import torch

            a, b = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        ms = tegula.testing.do_bench(lambda: matmul(a, b), warmup=5, rep=25,
                                     device=args.device)
        tflops = 2 * M * N * K / (ms * 1e-3) / 1e12
        print(f"matmul {M}x{N}x{K} {args.dtype}: {config} -> {ms:.3f} ms ({tflops:.3f} TFLOP/s)")
    print("OK")


if __name__ == "__main__":
    main()
