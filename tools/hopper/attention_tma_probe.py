"""Configurations of examples/flash_attention_tma.py against SDPA (cuDNN) on the GPU.

    python tools/hopper/attention_tma_probe.py [--dims 128 64] [--configs 64s3 128s2 64s3ws ...]
                                               [--shape 4x32x4096] [--reps 20] [--json PATH]

A configuration is ``[BLOCK_Mx]BLOCK_N`` ``s`` stages, with ``ws`` (warp_specialize=True) or
``nows`` (False) appended, or neither (the compiler's choice): ``64s3``, ``256x64s3ws``. BLOCK_M is
128 unless given; the warps are BLOCK_M / 16 (a warpgroup per 64 rows). For each head
dim, causal and not, SDPA forced to cuDNN and every configuration run interleaved, timed as the
benchmark times them (tegula.testing.CudaTimer: CUDA events, the L2 flushed before each call),
medians. Each output is compared with SDPA's (largest difference over SDPA's largest magnitude
under 2%). The benchmark's rows stay the measure of record; this is for choosing defaults.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))


def parse_config(text: str) -> dict:
    m = re.fullmatch(r"(?:(\d+)x)?(\d+)s(\d+)(ws|nows)?", text)
    if not m:
        raise SystemExit(f"--configs takes [BLOCK_Mx]BLOCK_N s STAGES [ws|nows], like 64s3ws; got {text!r}")
    ws = {"ws": True, "nows": False, None: None}[m.group(4)]
    block_m = int(m.group(1) or 128)
    return {"BLOCK_M": block_m, "BLOCK_N": int(m.group(2)), "num_stages": int(m.group(3)), "warp_specialize": ws,
            "num_warps": block_m // 16}


def ptxas_summary(fa, q, D: int, causal: bool, c: dict) -> str:
    """ptxas's registers and spills for the configuration, and whether the key loop has a producer and issues
    its last dot late (the layouts text)."""
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    import numpy as np
    from cuda_emulator import compile_cuda

    x = np.zeros((1, 1, 256, D), np.float16)
    lse = np.zeros((1, 1, 256), np.float32)
    compiled, _ = compile_cuda(fa.attention_tma_kernel, (x, x, x, x, lse, 1, 1, 256, 0.1),
                               {"HEAD_DIM": D, "BLOCK_M": c["BLOCK_M"], "BLOCK_N": c["BLOCK_N"], "CAUSAL": causal,
                                "TAIL": False, "WARP_SPECIALIZE": c["warp_specialize"]},
                               num_warps=c["num_warps"], num_stages=c["num_stages"])
    used = re.findall(r"Used \d+ registers|\d+ bytes spill stores", compiled.asm["ptxas"])
    return (", ".join(used) + ("; producer" if "fed by a producer" in compiled.layouts else "; no producer") +
            ("; late" if "one iteration late" in compiled.layouts else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="+", type=int, default=[128, 64])
    parser.add_argument("--configs", nargs="+", default=["64s3", "128s2"])
    parser.add_argument("--shape", default="4x32x4096")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import flash_attention_tma as fa
    from tegula.testing import CudaTimer

    B, H, S = (int(x) for x in args.shape.split("x"))
    timer = CudaTimer()
    rows = []
    for D in args.dims:
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(13)
            q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
            flops = 4 * B * H * S * S * D / (2 if causal else 1)

            def sdpa():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

            want = sdpa().float()
            fns, names = [sdpa], ["sdpa"]
            for text in args.configs:
                c = parse_config(text)
                out = torch.empty_like(q)

                def run(c=c, out=out):
                    return fa.attention(q, k, v, causal=causal, out=out, num_warps=c["num_warps"],
                                        num_stages=c["num_stages"], warp_specialize=c["warp_specialize"],
                                        BLOCK_M=c["BLOCK_M"], BLOCK_N=c["BLOCK_N"])[0]

                try:
                    got = run().float()
                    torch.cuda.synchronize()
                    error = ((got - want).abs().max() / want.abs().max()).item()
                except Exception as e:  # noqa: BLE001 - a configuration that fails is a row
                    rows.append({"D": D, "causal": causal, "config": text, "error": str(e).splitlines()[0][:160]})
                    print(f"D {D} {'causal' if causal else 'full  '} {text:>8}: {rows[-1]['error']}", flush=True)
                    continue
                if error > 0.02:
                    rows.append({"D": D, "causal": causal, "config": text, "error": f"max error {error:.3g}"})
                    print(f"D {D} {'causal' if causal else 'full  '} {text:>8}: wrong, {rows[-1]['error']}",
                          flush=True)
                    continue
                fns.append(run)
                names.append(text)
                print(f"D {D} {'causal' if causal else 'full  '} {text:>8}: {ptxas_summary(fa, q, D, causal, c)}",
                      flush=True)
            timer.interleaved(fns, 2)
            samples = timer.interleaved(fns, args.reps)
            ms = {name: statistics.median(s) for name, s in zip(names, samples)}
            for name in names:
                tf = flops / ms[name] / 1e9
                row = {"D": D, "causal": causal, "config": name, "ms": ms[name], "tflops": tf,
                       "of_sdpa": ms["sdpa"] / ms[name]}
                rows.append(row)
                print(f"D {D} {'causal' if causal else 'full  '} {name:>8}: {ms[name]:.3f} ms {tf:6.1f} TFLOP/s "
                      f"{row['of_sdpa']:.3f} of SDPA", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"shape": args.shape, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
