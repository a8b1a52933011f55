"""Where the descriptor attention backward's time goes, against SDPA's backward (cuDNN): each part alone
and the whole op, interleaved in one process (tegula.testing.CudaTimer, L2 flushed, medians):

    python tools/hopper/attention_bwd_parts.py [--shape 4x16x4096] [--dims 64 128] [--reps 30]

Parts: the dQ kernel (which also stores delta = rowsum(dO * O)), the dK/dV kernel (reading that delta), the two
one after the other (attention_tma.backward), delta's kernel alone (what the one-kernel backward launches first),
and attention.attention_backward (allocations and kernels: what the benchmark's row times). Each line gives
milliseconds, the share of SDPA's time, and for the delta kernel its bandwidth.
"""

import argparse
import importlib
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import tegula
from tegula.testing import CudaTimer
from tegula.torch.ops import attention_tma as at

attention = importlib.import_module("tegula.torch.ops.attention")  # the module, not the function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4x16x4096", help="BxHxS")
    parser.add_argument("--dims", nargs="+", type=int, default=[64, 128])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    B, H, S = (int(n) for n in args.shape.split("x"))
    timer = CudaTimer()
    for D in args.dims:
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(D)
            q, k, v, do = (torch.randn(B, H, S, D, device="cuda", generator=g, dtype=torch.bfloat16)
                           for _ in range(4))
            scale = D ** -0.5
            out, lse = attention.attention_forward(q, k, v, causal, scale)
            delta = torch.empty_like(lse)
            dq, dk, dv = (torch.empty_like(q) for _ in range(3))
            qr, kr, vr = (t.detach().clone().requires_grad_() for t in (q, k, v))
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                o = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
            views = tuple(at.rows_view(t.shape, t.stride(), t.element_size(), t.data_ptr()) for t in (q, k, v, do))

            def sdpa():
                torch.autograd.grad(o, (qr, kr, vr), do, retain_graph=True)

            def delta_kernel():
                at.attention_delta_tma_kernel[(tegula.cdiv(S, at.DELTA_ROWS), B * H)](
                    do, out, delta, *views[3][2:], H, S, *out.stride()[:3], HEAD_DIM=D, BLOCK_M=at.DELTA_ROWS)

            grads = (dq.stride()[:3], dk.stride()[:3], 0, 0)
            dq_launch, dkdv_launch = at.backward_launches(views, (B, H, S, D), out.stride()[:3], grads, causal, scale,
                                                          (at.DQ[D], at.DKDV[D]))

            def dq_kernel():
                grid, scalars, constexprs = dq_launch
                at.attention_dq_tma_kernel[grid](q, k, v, do, out, lse, dq, delta, *scalars, None, None, **constexprs)

            def dkdv_kernel():
                grid, scalars, constexprs = dkdv_launch
                at.attention_dkdv_tma_kernel[grid](q, k, v, do, lse, delta, dk, dv, *scalars, None, None, **constexprs)

            def both():
                at.backward(do, q, k, v, out, lse, causal, scale, dq, dk, dv)

            def whole():
                attention.attention_backward(do, q, k, v, out, lse, causal, scale)

            named = [("sdpa backward", sdpa), ("dQ kernel (and delta)", dq_kernel), ("dK/dV kernel", dkdv_kernel),
                     ("both (attention_tma.backward)", both), ("delta kernel alone", delta_kernel),
                     ("attention_backward (the row)", whole)]
            for _, fn in named:
                fn()
            torch.cuda.synchronize()
            samples = timer.interleaved([fn for _, fn in named], args.reps)
            ms = [statistics.median(s) for s in samples]
            flops = 2.5 * 4 * B * H * S * S * D / (2 if causal else 1)
            print(f"D {D} {'causal' if causal else 'full'}: SDPA {flops / ms[0] / 1e9:.1f} TFLOP/s", flush=True)
            for (name, _), t in zip(named, ms):
                extra = f", {2 * q.numel() * 2 / t / 1e6:.0f} GB/s" if name == "delta kernel alone" else ""
                print(f"  {name:30s} {t:8.4f} ms  {t / ms[0]:.3f} of SDPA's time{extra}", flush=True)


if __name__ == "__main__":
    main()
