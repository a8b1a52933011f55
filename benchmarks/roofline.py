"""``python benchmarks/roofline.py [--device cuda] [--quick] --out DIR``:
``kernel.report`` of the benchmark's four memory- and compute-bound
workloads (vector add, softmax, the fused chain, matmul) at the benchmark's
sizes, printed and drawn on one roofline (``DIR/roofline-DEVICE.png``, the
text in ``DIR/roofline-DEVICE.txt``), with the machine's floors measured in
the same run (``--cached-floors``: those kernel.report cached). docs/profiling.md explains the figures;
benchmarks/results/ keeps the committed ones."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tegula  # noqa: E402
from tegula import _floors  # noqa: E402
from tegula._report import plot_roofline  # noqa: E402
from tegula_bench.cpu_workloads import build_cases  # noqa: E402
from tegula_bench.kernels import _host, fused_chain, matmul, softmax, vector_add  # noqa: E402
from tegula_bench.machine import last_level_cache  # noqa: E402

import _cli  # noqa: E402  (examples/_cli.py, on sys.path through tegula_bench.kernels)

# The GPU benchmark's sizes (gpu_workloads.py): (full, --quick).
GPU_SIZES = {"vector_add": (1 << 28, (1 << 20) + 3), "softmax": ((16384, 8192), (512, 8192)),
             "fused_chain": ((16384, 4096), (512, 4096)), "matmul": (4096, 320)}


def _cpu_inputs(quick: bool) -> dict:
    """The CPU benchmark's inputs, by workload (its first case of each)."""
    cases = build_cases(("vector_add", "softmax", "fused_chain", "matmul"), quick, last_level_cache()["bytes"])
    first = {}
    for case in cases:
        first.setdefault(case.workload, case.inputs)
    return first


def _gpu_inputs(quick: bool) -> dict:
    import torch
    pick = 1 if quick else 0
    g = torch.Generator(device="cuda").manual_seed(0)
    n = GPU_SIZES["vector_add"][pick]
    M, N = GPU_SIZES["softmax"][pick]
    CM, CN = GPU_SIZES["fused_chain"][pick]
    S = GPU_SIZES["matmul"][pick]
    randn = lambda *shape, dtype=torch.float32: torch.randn(*shape, device="cuda", generator=g, dtype=dtype)  # noqa: E731
    return {
        "vector_add": {"x": randn(n), "y": randn(n)},
        "softmax": {"x": randn(M, N)},
        "fused_chain": {"x": randn(CM, CN, dtype=torch.bfloat16), "residual": randn(CM, CN, dtype=torch.bfloat16),
                        "keep": torch.rand(CM, CN, device="cuda", generator=g) >= fused_chain.P_DROP,
                        "bias": randn(CN), "weight": randn(CN)},
        "matmul": {"a": randn(S, S, dtype=torch.bfloat16), "b": randn(S, S, dtype=torch.bfloat16)},
    }


def reports(device: str, quick: bool) -> list:
    inputs = _cpu_inputs(quick) if device == "cpu" else _gpu_inputs(quick)
    out = []
    x, y = inputs["vector_add"]["x"], inputs["vector_add"]["y"]
    n = _host.numel(x)
    out.append(vector_add.add_kernel.report(x, y, _host.empty_like(x), n, grid=(tegula.cdiv(n, vector_add.BLOCK),),
                                            BLOCK=vector_add.BLOCK))
    x = inputs["softmax"]["x"]
    M, N = x.shape
    y = _host.empty_like(x)
    out.append(softmax.softmax_kernel.report(x, y, N, _host.strides(x)[0], _host.strides(y)[0], grid=(M,),
                                             BLOCK_N=tegula.next_power_of_2(N)))
    c = inputs["fused_chain"]
    M, N = c["x"].shape
    y = _host.empty_like(c["x"])
    out.append(fused_chain.fused_chain_kernel.report(
        c["x"], c["residual"], c["keep"], c["bias"], c["weight"], y, N, _host.strides(c["x"])[0], fused_chain.ALPHA,
        fused_chain.EPS, 1.0 / (1.0 - fused_chain.P_DROP), grid=(M,), BLOCK_N=tegula.next_power_of_2(N)))
    a, b = inputs["matmul"]["a"], inputs["matmul"]["b"]
    S = a.shape[0]
    meta = dict(matmul.DEFAULT_BLOCKS)
    if device == "cuda":
        meta["num_warps"] = 8
    c = _host.empty((S, S), a.dtype, like=a)
    sa, sb, sc = _host.strides(a), _host.strides(b), _host.strides(c)
    grid = (tegula.cdiv(S, meta["BLOCK_M"]) * tegula.cdiv(S, meta["BLOCK_N"]),)
    out.append(matmul.matmul_kernel.report(a, b, c, S, S, S, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1], grid=grid,
                                           **meta))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="the benchmark's --quick sizes")
    parser.add_argument("--out", required=True, metavar="DIR", type=_cli.output_dir)
    parser.add_argument("--cached-floors", action="store_true",
                        help="use the floors kernel.report cached earlier instead of measuring them in this run")
    args = parser.parse_args(argv)
    if not args.cached_floors:
        # Measured in this run, as the benchmark does: a share of floor then
        # compares two measurements taken under the same load.
        _floors.floors(args.device, remeasure=True)
    done = reports(args.device, args.quick)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = f"# {when}, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n\n"
    text += "\n\n".join(str(r) for r in done)
    print(text)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"roofline-{args.device}.txt").write_text(text + "\n")
    plot_roofline(done, folder / f"roofline-{args.device}.png")
    print(f"\nwrote {folder / f'roofline-{args.device}.png'} and .txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
