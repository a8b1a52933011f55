"""One descriptor attention backward (dK/dV, dQ kernels) and SDPA's backward (cuDNN) under Nsight Compute's
profiler range, for ``ncu --profile-from-start off``: ``python tools/hopper/attention_bwd_ncu.py
[--shape 4x16x4096] [--dims 64 128] [--causal] [--fused]`` (``--fused``: the one-kernel backward,
``attention_tma.FUSED`` set to FUSED_CONFIGS below, instead of the two kernels). Everything compiles and runs once before the range opens,
so the profile holds only the timed launches (tools/hopper/round.sh, step ``ncu``).
"""

import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from tegula.torch.ops import attention_tma as at


# The one-kernel backward's configuration profiled with --fused, by head dim (attention_tma.FUSED's fields).
FUSED_CONFIGS = {64: (128, 128, 8, 2, False, True), 128: (64, 128, 8, 3, False, True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4x16x4096", help="BxHxS")
    parser.add_argument("--dims", nargs="+", type=int, default=[64, 128])
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--fused", action="store_true", help="the one-kernel backward (FUSED_CONFIGS)")
    args = parser.parse_args()
    B, H, S = (int(n) for n in args.shape.split("x"))
    runs = []
    for D in args.dims:
        if args.fused:
            at.FUSED[D] = FUSED_CONFIGS[D]
        g = torch.Generator(device="cuda").manual_seed(D)
        q, k, v, do = (torch.randn(B, H, S, D, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(4))
        scale = D ** -0.5
        out, lse = torch.ops.tegula.attention(q, k, v, args.causal, scale)
        grads = [torch.empty_like(q) for _ in range(3)]
        qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            o = F.scaled_dot_product_attention(qr, kr, vr, is_causal=args.causal)
        runs.append(lambda q=q, k=k, v=v, do=do, out=out, lse=lse, grads=grads, scale=scale:
                    at.backward(do, q, k, v, out, lse, args.causal, scale, *grads))
        runs.append(lambda o=o, qr=qr, kr=kr, vr=vr, do=do:
                    torch.autograd.grad(o, (qr, kr, vr), do, retain_graph=True))
    for run in runs:
        run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for run in runs:
        run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
