"""Host time of tegula.torch's training ops at the shapes of the GPT step.

    python tools/hopper/op_host_probe.py [--device cuda] [--calls 300]

host_cost_probe.py times the ops on tiny tensors. In the training step the
same host functions took several times as long; this times each at the
GPU_CONFIG shapes of examples/train_gpt.py (batch 32, 512 positions, width
512, 8 heads of 64, bf16) and at tiny ones, called the way a compiled
graph calls it (torch.ops, no gradient), then its host function directly,
then pieces of add_rms_norm's backward one by one; attention and
rotary_attention (rotary_qkv and attention in one op) through torch.ops. Each row is the host
time per call of a loop that never waits for the device, unless the device
is slower (then the row says so: its time with the device's tail).
"""

from __future__ import annotations

import argparse

import torch

from host_cost_probe import per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    device = args.device
    import tegula
    from tegula.torch import compute_dtype
    from tegula.torch.ops import _rows
    arn = __import__("tegula.torch.ops.add_rms_norm", fromlist=["x"])
    glu = __import__("tegula.torch.ops.swiglu", fromlist=["x"])
    rot = __import__("tegula.torch.ops.rotary", fromlist=["x"])
    ops = torch.ops.tegula
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    B, T, C, H, D, F = (32, 512, 512, 8, 64, 1376) if device == "cuda" else (4, 64, 64, 4, 16, 172)

    def make(shape, dt=dtype):
        return torch.randn(shape, device=device, dtype=dt)

    rows = []
    for label, (b, t) in (("gpt", (B, T)), ("tiny", (1, 8))):
        x, r, w = make((b, t, C)), make((b, t, C)), make((C,))
        h, y = ops.add_rms_norm(x, r, w, 1e-6, dtype)
        dy = make((b, t, C))
        xf = make((b, t, 2 * F))
        dsilu = make((b, t, F))
        qkv = make((b, t, 3, H, D))
        cos, sin = make((t, D // 2), torch.float32), make((t, D // 2), torch.float32)
        dq = [make((b, H, t, D)).transpose(1, 2) for _ in range(3)]
        scale = D ** -0.5
        heads = [make((b, t, H, D)).transpose(1, 2) for _ in range(3)]
        out, lse, *rotated = ops.rotary_attention(qkv, cos, sin, True, scale)
        dout = make((b, t, H, D))
        rows += [
            (f"{label} add_rms_norm torch.ops", lambda: ops.add_rms_norm(x, r, w, 1e-6, dtype)),
            (f"{label} add_rms_norm host fn", lambda: arn.add_rms_norm_forward._tegula_fn(x, r, w, 1e-6, dtype)),
            (f"{label} add_rms_norm_backward torch.ops", lambda: ops.add_rms_norm_backward(dy, dy, h, w, 1e-6)),
            (f"{label} add_rms_norm_backward host fn",
             lambda: arn.add_rms_norm_backward._tegula_fn(dy, dy, h, w, 1e-6)),
            (f"{label} silu_and_mul torch.ops", lambda: ops.silu_and_mul(xf)),
            (f"{label} silu_and_mul_backward torch.ops", lambda: ops.silu_and_mul_backward(dsilu, xf)),
            (f"{label} rotary_qkv torch.ops", lambda: ops.rotary_qkv(qkv, cos, sin)),
            (f"{label} rotary_qkv_backward torch.ops", lambda: ops.rotary_qkv_backward(*dq, cos, sin)),
            (f"{label} attention torch.ops", lambda: ops.attention(*heads, True, scale)),
            (f"{label} rotary_attention torch.ops", lambda: ops.rotary_attention(qkv, cos, sin, True, scale)),
            (f"{label} rotary_attention_backward torch.ops",
             lambda: ops.rotary_attention_backward(dout, qkv, *rotated, out, lse, cos, sin, True, scale)),
        ]
        # add_rms_norm_backward's pieces, as its host function runs them
        M, N = _rows.shape_of_rows(h)
        block_n = tegula.next_power_of_2(N)
        step = _rows.rows_per_step(block_n)
        programs, per_program = _rows.row_split(M, h.device, step)
        dx = torch.empty_like(h)
        partial = torch.empty((programs, N), dtype=torch.float32, device=device)
        kernel = arn.add_rms_norm_backward_kernel
        acc = compute_dtype(h)
        warps = _rows.backward_warps(block_n * step)
        rows += [
            (f"{label}   .contiguous() x2", lambda: (h.contiguous(), dy.contiguous())),
            (f"{label}   empty_like + empty", lambda: (torch.empty_like(h, memory_format=torch.contiguous_format),
                                                  torch.empty((programs, N), dtype=torch.float32, device=device))),
            (f"{label}   row_split and friends", lambda: (_rows.row_split(M, h.device, step),
                                                          _rows.rows_per_step(block_n), compute_dtype(h))),
            (f"{label}   backward kernel launch", lambda: kernel[(programs,)](dy, dy, h, w, dx, partial, M, N,
                                                                             1e-6, per_program, BLOCK_N=block_n,
                                                                             ROWS=step, ACC=acc,
                                                                             AHEAD=_rows.load_ahead(h.device),
                                                                             num_warps=warps)),
            (f"{label}   sum_partials", lambda: _rows.sum_partials(partial, w.dtype)),
        ]
    print(f"{'host us':>8} {'+tail us':>9}  what ({device}, {args.calls} calls)")
    for name, fn in rows:
        try:
            issued, total = per_call(fn, args.calls, device)
            print(f"{issued:8.1f} {total:9.1f}  {name}", flush=True)
        except Exception as error:  # a probe: report and go on
            print(f"{'-':>8} {'-':>9}  {name}: {type(error).__name__}: {str(error)[:200]}", flush=True)
    del glu, rot


if __name__ == "__main__":
    main()
