"""Configurations of the descriptor attention backward (tegula/torch/ops/attention_tma.py) against SDPA's
backward (cuDNN) on the GPU: ``python tools/hopper/attention_bwd_probe.py [--shape 4x16x4096] [--dims 64 128]
[--short | --edits | --dq-tiles | --fused | --regs | --dp-first |
--d64-full] [--reps N]``.

Each candidate sets the (BLOCK_M, BLOCK_N, warps, stages) of the dK/dV and the dQ kernel (or the one-kernel
backward's, with how it adds dQ); every candidate and SDPA's backward (autograd.grad of its output) run
interleaved (tegula.testing.CudaTimer: CUDA events, L2 flushed), medians, bf16 (B 4, H 16, S 4096 unless
--shape says otherwise; --short: the candidates for short sequences, train_gpt's 32x8x512). TFLOP/s count
2.5 times the forward's 4 B H S^2 D, halved when causal. For choosing attention_tma.DKDV / DQ / FUSED; the
benchmark's rows stay the measure of record.
"""

import argparse
import os
import pathlib
import statistics
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import tegula
from tegula.testing import CudaTimer
from tegula.torch.ops import attention_tma as at

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "overrides"))
import a_in_registers  # noqa: E402
import early_dots  # noqa: E402

# ("two", dK/dV config, dQ config): the two kernels; ("fused", config): the one-kernel backward, config as
# attention_tma.FUSED's (a sixth field True: dQ reduced by the TMA, DQ_TMA). At D 64, 64 x 128 blocks form their
# TMA ring with 4 warps only (8 would split dQ^T's 64 rows over two warpgroups).
CANDIDATES = {
    64: [("two", (64, 128, 8, 3, True), (128, 64, 8, 3)), ("fused", (128, 128, 8, 2, False, True)),
         ("fused", (64, 128, 8, 2, False, True))],
    128: [("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("fused", (64, 128, 8, 2, False, True)),
          ("fused", (64, 128, 8, 3, False, True))],
}
# ("edit", dK/dV config, dQ config, {kernel: (EARLY, LATE)}): the two kernels with their generated CUDA edited
# by overrides/early_dots.py (a dot issued early, waits where results are read) through TEGULA_OVERRIDE_DIR.
# Each edit: ("early", EARLY, LATE) (early_dots.edit) or ("merge", FIRST, SECOND) (early_dots.merge_wait).
MERGE = {"attention_dkdv_tma_kernel": ("merge", ":145", ":146")}
EDITED = {
    64: [("two", (64, 128, 8, 3, True), (128, 64, 8, 3)), ("edit", (64, 128, 8, 3, True), (128, 64, 8, 3), MERGE),
         ("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("edit", (64, 128, 8, 3), (128, 64, 8, 3), MERGE)],
    128: [("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("edit", (64, 128, 8, 3), (128, 64, 8, 3), MERGE),
          ("two", (32, 128, 8, 3), (128, 64, 8, 3)), ("edit", (32, 128, 8, 3), (128, 64, 8, 3), MERGE)],
}
# The loop-invariant operand a of the score products (K, V in dK/dV; Q, dO in dQ) read into registers once
# (overrides/a_in_registers.py), in both kernels or one. At D 128 the dK/dV kernel spills with them (ptxas).
REGS_DKDV = {"attention_dkdv_tma_kernel": ("regs",)}
REGS_DQ = {"attention_dq_tma_kernel": ("regs",)}
REGS = {
    64: [("two", (64, 128, 8, 3, True), (128, 64, 8, 3)), ("edit", (64, 128, 8, 3, True), (128, 64, 8, 3),
                                                            {**REGS_DKDV, **REGS_DQ}),
         ("edit", (64, 128, 8, 3, True), (128, 64, 8, 3), REGS_DKDV),
         ("edit", (64, 128, 8, 3, True), (128, 64, 8, 3), REGS_DQ)],
    128: [("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("edit", (64, 128, 8, 3), (128, 64, 8, 3), REGS_DQ)],
}
# The second score product (dO V^T, V dO^T) issued right after the first, before the exponentials
# (DP_FIRST, a last field of DQ / DKDV), in the dQ kernel, the dK/dV kernel or both.
DP_FIRST = {
    D: [("two", dkdv, dq), ("two", dkdv, (*dq, True)), ("two", (*dkdv, True), dq), ("two", (*dkdv, True), (*dq, True))]
    for D, dkdv, dq in ((64, (64, 128, 8, 3, True), (128, 64, 8, 3)), (128, (64, 128, 8, 3, False), (128, 64, 8, 3)))
}
# D 64 without causality, the one row below 0.85 after DP_FIRST: the dQ kernel's key block and order, the
# dK/dV kernel's stages.
D64_FULL = {
    64: [("two", (64, 128, 8, 3, True), (128, 64, 8, 3)), ("two", (64, 128, 8, 3, True), (128, 128, 8, 3)),
         ("two", (64, 128, 8, 3, True), (128, 128, 8, 3, True)), ("two", (64, 128, 8, 4, True), (128, 64, 8, 3)),
         ("two", (64, 128, 8, 2, True), (128, 64, 8, 3)), ("two", (64, 128, 8, 4, True), (128, 64, 8, 4))],
}
# The dQ kernel with 128 keys a step (wgmma n128 for its two score products) against 64.
DQ_TILES = {
    64: [("two", (64, 128, 8, 3, True), (128, 64, 8, 3)), ("two", (64, 128, 8, 3, True), (128, 128, 8, 3)),
         ("two", (64, 128, 8, 3, True), (128, 128, 8, 2))],
    128: [("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("two", (64, 128, 8, 3), (128, 128, 8, 2))],
}
# The one-kernel backward at two and three stages against the two kernels.
FUSED_STAGES = {
    64: [("two", (64, 128, 8, 3, True), (128, 64, 8, 3)), ("fused", (128, 128, 8, 2, False, True)),
         ("fused", (128, 128, 8, 3, False, True))],
    128: [("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("fused", (64, 128, 8, 2, False, True)),
          ("fused", (64, 128, 8, 3, False, True))],
}
# Smaller tiles for short sequences: more programs to fill the GPU, less causal imbalance per program.
SHORT = {
    64: [("two", (64, 128, 8, 3), (128, 64, 8, 3)), ("two", (64, 64, 4, 3), (64, 64, 4, 3)),
         ("two", (64, 64, 4, 3), (128, 64, 8, 3)), ("two", (64, 128, 8, 3), (64, 64, 4, 3)),
         ("fused", (64, 64, 4, 3, False)), ("fused", (64, 64, 4, 3, False, True))],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4x16x4096", help="BxHxS")
    parser.add_argument("--dims", nargs="+", type=int, default=None)
    parser.add_argument("--short", action="store_true", help="the candidates for short sequences")
    parser.add_argument("--edits", action="store_true", help="the two kernels with hand-edited CUDA (EDITED)")
    parser.add_argument("--dq-tiles", action="store_true", help="the dQ kernel's key block (DQ_TILES)")
    parser.add_argument("--fused", action="store_true", help="the one-kernel backward's stages (FUSED_STAGES)")
    parser.add_argument("--regs", action="store_true", help="invariant operands a in registers (REGS)")
    parser.add_argument("--dp-first", action="store_true", help="the second score product first (DP_FIRST)")
    parser.add_argument("--d64-full", action="store_true", help="tiles for D 64 without causality (D64_FULL)")
    parser.add_argument("--reps", type=int, default=12, help="interleaved rounds")
    args = parser.parse_args()
    B, H, S = (int(n) for n in args.shape.split("x"))
    table = (SHORT if args.short else EDITED if args.edits else REGS if args.regs else DP_FIRST if args.dp_first
             else D64_FULL if args.d64_full
             else DQ_TILES if args.dq_tiles else FUSED_STAGES if args.fused else CANDIDATES)
    timer = CudaTimer()
    for D, candidates in table.items():
        if args.dims and D not in args.dims:
            continue
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(D)
            q, k, v, do = (torch.randn(B, H, S, D, device="cuda", generator=g, dtype=torch.bfloat16)
                           for _ in range(4))
            scale = D ** -0.5
            out, lse = torch.ops.tegula.attention(q, k, v, causal, scale)
            grads = [torch.empty_like(q) for _ in range(3)]
            qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                o = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)

            def sdpa():
                torch.autograd.grad(o, (qr, kr, vr), do, retain_graph=True)

            def run(c):
                swap = {}

                def go():
                    at.FUSED.pop(D, None)
                    if c[0] == "fused":
                        at.FUSED[D] = c[1]
                    else:
                        at.DKDV[D], at.DQ[D] = c[1], c[2]
                    if c[0] == "edit" and not swap:
                        swap.update(edited(c[3], lambda: at.backward(do, q, k, v, out, lse, causal, scale, *grads)))
                    saved = {name: getattr(at, name) for name in swap}
                    for name, kernel in swap.items():
                        setattr(at, name, kernel)
                    try:
                        at.backward(do, q, k, v, out, lse, causal, scale, *grads)
                    finally:
                        for name, kernel in saved.items():
                            setattr(at, name, kernel)
                return go

            want = torch.autograd.grad(o, (qr, kr, vr), do, retain_graph=True)
            for c in candidates:
                for g in grads:  # so a candidate that writes nothing cannot pass on the last one's results
                    g.fill_(float("nan"))
                run(c)()
                errors = [float((g.float() - w.float()).abs().max() / w.float().abs().max()) for g, w in zip(grads, want)]
                print(f"D {D} {'causal' if causal else 'full'} {c}: dq dk dv differ from SDPA's by "
                      + " ".join(f"{e:.2e}" for e in errors) + " of their largest magnitude", flush=True)
            fns = [sdpa] + [run(c) for c in candidates]
            for f in fns:
                f()
            torch.cuda.synchronize()
            samples = timer.interleaved(fns, args.reps)
            flops = 2.5 * 4 * B * H * S * S * D / (2 if causal else 1)
            ms = [statistics.median(s) for s in samples]
            for name, t in zip(["sdpa"] + [str(c) for c in candidates], ms):
                print(f"D {D} {'causal' if causal else 'full'} {name}: {flops / t / 1e9:.1f} TFLOP/s "
                      f"{ms[0] / t:.3f} of SDPA", flush=True)


class _Capture:
    """Stands for a kernel of attention_tma: records the arguments of its launches."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.calls.append((args, kwargs))
            return self.kernel[grid](*args, **kwargs)
        return launch


_EDITED = {}  # (kernel name, its cache key, edit) -> the JITFunction built from the edited source
_OVERRIDES = pathlib.Path(tempfile.mkdtemp(prefix="tegula-overrides-"))


def edited(edits, launch) -> dict:
    """{kernel name: JITFunction} for attention_tma's kernels named in `edits`: each built from the generated
    CUDA of the launch `launch` makes, edited by early_dots (through TEGULA_OVERRIDE_DIR, keyed by the unedited
    kernel's cache key)."""
    # The unedited kernels' launches and sources are those of the compiler: no override while they compile.
    os.environ.pop("TEGULA_OVERRIDE_DIR", None)
    captures = {name: _Capture(getattr(at, name)) for name in edits}
    saved = {name: getattr(at, name) for name in edits}
    for name, capture in captures.items():
        setattr(at, name, capture)
    try:
        launch()
    finally:
        for name, kernel in saved.items():
            setattr(at, name, kernel)
    out = {}
    for name, capture in captures.items():
        args, kwargs = capture.calls[-1]
        inspection = saved[name].inspect(*args, **kwargs)
        key = (name, inspection.key, edits[name])
        if key not in _EDITED:
            how, *dots = edits[name]
            if how == "regs":
                text = a_in_registers.edit(inspection.source)
            else:
                text = (early_dots.merge_wait if how == "merge" else early_dots.edit)(inspection.source, *dots)
            (_OVERRIDES / f"{name}-{inspection.key[:8]}.source.cu").write_text(text)
            _EDITED[key] = tegula.jit(saved[name].fn)
        out[name] = _EDITED[key]
    os.environ["TEGULA_OVERRIDE_DIR"] = str(_OVERRIDES)  # for the edited kernels' first launches
    return out


if __name__ == "__main__":
    main()
