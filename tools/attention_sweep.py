"""Launch configurations of tegula.torch.ops.attention against PyTorch SDPA.

    python tools/attention_sweep.py [--device cuda|cpu] [--quick] [--dims 64 128] [--shape 4x16x4096]
                                    [--dtype bfloat16|float16|float32] [--fwd 128x64w8s3 ...]
                                    [--bwd dkdv=64x128w8s2,dq=128x64w8s2 ...] [--budget SECONDS] [--json PATH]

For each head dim and causal or not (q, k, v of shape [B, H, S, D], bf16
unless ``--dtype`` says otherwise;
on the GPU by default B=4, H=16, S=4096, D 64 and 128), SDPA's forward and
backward are the yardstick, and each candidate configuration a row: forward
candidates (the forward kernel's tiles) timed against SDPA's forward,
backward candidates (the dK/dV and the dQ kernels' tiles, from the
forward's saved output and log-sum-exp) against SDPA's backward, each pair
interleaved in one run (CUDA events with the L2 flushed before each call,
the median). TFLOP/s count ``4 B H S^2 D`` for the forward and 2.5 times
that for the backward, halved when causal. Every result is compared with
SDPA's: the largest difference over the reference's largest magnitude must
stay under 2% (forward) and 3% (gradients; bf16 rounds each output and
the upstream gradient). A configuration that fails (compile error,
shared memory overflow, wrong result) is a row that says why. Prints the
table and, per head dim, the fastest correct candidate of each kind
(geometric mean over causal and not): what the default table of
``tegula.torch.ops.attention_config`` should hold.

``--device cpu`` (or ``--quick``) runs tiny sizes with a short list, on the
host clock: a test that the sweep works, not a measurement. Candidates are
written as in ``TEGULA_ATTENTION_CONFIG`` (``BMxBN[wWARPS][sSTAGES]``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from tegula import testing
from tegula.torch.ops import attention_config as ac

# The module, not the function the package exports under the same name.
attention_op = importlib.import_module("tegula.torch.ops.attention")

# Hopper FlashAttention-2 shapes: 64/128 query rows per forward program, the
# dK/dV kernel's key block large and its query step small, dQ the transpose.
CUDA_FWD = ("128x64w8s3", "128x64w8s2", "128x128w8s2", "128x32w8s3", "64x64w4s3", "64x32w4s2", "128x64w4s3",
            "128x128w8s3")
CUDA_BWD = ("dkdv=32x128w8s2,dq=128x64w8s2", "dkdv=32x128w8s3,dq=128x64w8s3", "dkdv=32x64w4s3,dq=64x32w4s3",
            "dkdv=64x64w4s3,dq=64x64w4s3", "dkdv=32x128w8s2,dq=128x32w8s2", "dkdv=64x64w8s2,dq=128x64w8s2",
            "dkdv=16x128w8s2,dq=128x32w8s2", "dkdv=32x128w4s3,dq=128x32w4s3", "dkdv=64x128w8s2,dq=128x64w8s2")
# float32 (three TF32 products per product): operands twice as wide, so smaller tiles.
CUDA_F32_FWD = ("64x64w4s2", "64x64w4s3", "64x32w4s2", "128x32w8s2", "128x64w8s2", "64x64w8s2", "32x64w4s2")
CUDA_F32_BWD = ("dkdv=32x64w4s2,dq=64x32w4s2", "dkdv=64x64w4s2,dq=64x64w4s2", "dkdv=32x128w8s2,dq=128x32w8s2",
                "dkdv=16x64w4s2,dq=64x16w4s2", "dkdv=32x64w4s3,dq=64x32w4s3", "dkdv=64x64w8s2,dq=64x64w8s2")
CPU_FWD = ("32x32", "16x64", "64x16")
CPU_BWD = ("dkdv=32x32,dq=32x32", "dkdv=16x64,dq=64x16")
FWD_TOLERANCE, BWD_TOLERANCE = 2e-2, 3e-2


def relative_error(got, want) -> float:
    """max |got - want| / max |want|, in float32."""
    got, want = got.float(), want.float()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


def flops(B, H, S, D, causal: bool, backward: bool) -> float:
    forward = 4.0 * B * H * S * S * D / (2 if causal else 1)
    return forward * (2.5 if backward else 1.0)


def _error_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return text[0][:160] if text else type(e).__name__


class Problem:
    """One (head dim, causal) case: inputs, SDPA's results and its two callables. The
    backward candidates start from SDPA's output and a log-sum-exp computed in float32
    here, so they do not depend on any forward candidate."""

    def __init__(self, device, B, H, S, D, causal, dtype="bfloat16"):
        self.D, self.causal, self.shape, self.dtype = D, causal, f"{B}x{H}x{S}x{D}", dtype
        gen = torch.Generator(device=device).manual_seed(D + causal)
        self.q, self.k, self.v, self.do = (
            torch.randn(B, H, S, D, device=device, generator=gen).to(getattr(torch, dtype)) for _ in range(4))
        self.scale = 1.0 / math.sqrt(D)
        self.leaves = [t.detach().clone().requires_grad_() for t in (self.q, self.k, self.v)]
        self.ref_out = F.scaled_dot_product_attention(*self.leaves, is_causal=causal)
        self.ref_grads = torch.autograd.grad(self.ref_out, self.leaves, self.do, retain_graph=True)
        self.out = self.ref_out.detach()
        self.lse = torch.cat([self._lse(b, S) for b in range(B)])
        self.fwd_flops = flops(B, H, S, D, causal, False)
        self.bwd_flops = flops(B, H, S, D, causal, True)

    def _lse(self, b, S):
        # One batch entry at a time: the [H, S, S] float32 scores of one are enough at once.
        scores = self.q[b:b + 1].float() @ self.k[b:b + 1].float().transpose(-1, -2) * self.scale
        if self.causal:
            scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool, device=scores.device).triu(1),
                                        float("-inf"))
        return torch.logsumexp(scores, dim=-1)

    def sdpa_fwd(self):
        return F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=self.causal)

    def sdpa_bwd(self):
        return torch.autograd.grad(self.ref_out, self.leaves, self.do, retain_graph=True)

    def tegula(self, kind: str, config):
        p = self
        if kind == "bwd":
            def run():
                with ac.use(config):
                    return attention_op.attention_backward(p.do, p.q, p.k, p.v, p.out, p.lse, p.causal, p.scale)
        else:
            def run():
                with ac.use(config):
                    return attention_op.attention_forward(p.q, p.k, p.v, p.causal, p.scale)[:1]
        return run


def measure(problem, kind, spec, device, timer, reps, log) -> dict:
    """One candidate on one problem: checked against SDPA, then timed interleaved with it."""
    p, backward = problem, kind == "bwd"
    row = {"D": p.D, "causal": p.causal, "shape": p.shape, "kind": kind, "config": spec, "ms": None,
           "tflops": None, "sdpa_ms": None, "sdpa_tflops": None, "of_sdpa": None, "error": None, "check": None}
    where = f"D={p.D} causal={p.causal} {kind} {spec}"
    try:
        config = ac.parse(spec if backward else f"fwd={spec}", ac.default(device, p.D, p.dtype))
        run = p.tegula(kind, config)
        peer, want, tolerance = ((p.sdpa_bwd, p.ref_grads, BWD_TOLERANCE) if backward else
                                 (p.sdpa_fwd, (p.ref_out,), FWD_TOLERANCE))
        got = run()  # compiles
        if device == "cuda":
            torch.cuda.synchronize()
        errors = [relative_error(g, w) for g, w in zip(got, want)]
        del got
        row["max_rel_error"] = max(errors)
        if not all(math.isfinite(e) and e <= tolerance for e in errors):
            row["check"] = "mismatch"
            row["error"] = "relative errors " + ", ".join(f"{e:.3g}" for e in errors) + f" (tolerance {tolerance:g})"
            log(f"{where}: {row['error']}")
            return row
        row["check"] = "ok"
        mine, theirs = timer.interleaved([run, peer], reps)
        work = p.bwd_flops if backward else p.fwd_flops
        row["ms"], row["sdpa_ms"] = statistics.median(mine), statistics.median(theirs)
        row["tflops"] = work / (row["ms"] / 1e3) / 1e12
        row["sdpa_tflops"] = work / (row["sdpa_ms"] / 1e3) / 1e12
        row["of_sdpa"] = row["sdpa_ms"] / row["ms"]
        log(f"{where}: {row['tflops']:.1f} TFLOP/s, {100 * row['of_sdpa']:.0f}% of SDPA")
    except Exception as e:  # noqa: BLE001 - a failing configuration is a row, not the end
        row["check"], row["error"] = "error", _error_text(e)
        log(f"{where}: {row['error']}")
    return row


def precompile_all(problems, fwd_specs, bwd_specs, device, log) -> None:
    """Compiles every candidate for every problem in parallel threads (the compiler
    releases the GIL), so that the measuring loop finds them in the kernel cache; a
    candidate that fails here fails again, with its message, when it is measured."""
    jobs = []
    for spec in list(fwd_specs) + list(bwd_specs):
        for problem in problems:
            try:
                backward = spec in bwd_specs
                config = ac.parse(spec if backward else f"fwd={spec}", ac.default(device, problem.D, problem.dtype))
                jobs.append((problem, config, ("dkdv", "dq") if backward else ("fwd",)))
            except ValueError:
                continue  # measured as an error row
    started = time.monotonic()

    def compile_one(job):
        problem, config, kernels = job
        try:
            attention_op.precompile(problem.q, problem.causal, config, kernels)
        except Exception:  # noqa: BLE001 - reported when the candidate is measured
            pass

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        list(pool.map(compile_one, jobs))
    log(f"compiled {len(jobs)} configurations in {time.monotonic() - started:.0f} s")


def sweep(problems, fwd_specs, bwd_specs, device, timer, reps, deadline, log) -> list:
    """Every candidate on every problem, candidate by candidate (so a budget that runs
    out cuts the last candidates, not the last head dim); rows in table order."""
    rows = []
    for kind, specs in (("fwd", fwd_specs), ("bwd", bwd_specs)):
        for order, spec in enumerate(specs):
            for problem in problems:
                if time.monotonic() > deadline:
                    row = {"D": problem.D, "causal": problem.causal, "shape": problem.shape, "kind": kind,
                           "config": spec, "ms": None, "tflops": None, "sdpa_ms": None, "sdpa_tflops": None,
                           "of_sdpa": None, "check": "skipped", "error": "out of time (--budget)"}
                else:
                    row = measure(problem, kind, spec, device, timer, reps, log)
                rows.append((problem.D, problem.causal, kind != "fwd", order, row))
    return [row for *_, row in sorted(rows, key=lambda r: r[:4])]


def best(rows) -> dict:
    """Per (D, kind): the candidate with the best geometric mean share of SDPA over the
    causal cases, among those correct in all of them."""
    chosen = {}
    for key in sorted({(r["D"], r["kind"]) for r in rows}):
        shares = {}
        for r in rows:
            if (r["D"], r["kind"]) == key:
                shares.setdefault(r["config"], []).append(r["of_sdpa"])
        complete = {c: s for c, s in shares.items() if all(s)}
        if complete:
            config = max(complete, key=lambda c: statistics.geometric_mean(complete[c]))
            chosen[key] = (config, statistics.geometric_mean(complete[config]))
    return chosen


def format_table(rows) -> str:
    header = ("D", "causal", "kind", "config", "ms", "TFLOP/s", "SDPA ms", "SDPA TFLOP/s", "of SDPA", "check")
    lines = [header]
    for r in rows:
        if r["ms"] is None:
            lines.append((str(r["D"]), str(r["causal"]), r["kind"], r["config"], "", "", "", "", "",
                          f"{r['check']}: {r['error']}"))
            continue
        lines.append((str(r["D"]), str(r["causal"]), r["kind"], r["config"], f"{r['ms']:.3f}", f"{r['tflops']:.3g}",
                      f"{r['sdpa_ms']:.3f}", f"{r['sdpa_tflops']:.3g}", f"{100 * r['of_sdpa']:.0f}%",
                      f"ok ({r['max_rel_error']:.1e})"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    out = []
    for k, line in enumerate(lines):
        out.append("  ".join([c.ljust(w) for c, w in zip(line[:-1], widths)] + [line[-1]]).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths) + "  -----")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, the short list, few repetitions")
    parser.add_argument("--dims", type=int, nargs="+", help="head dims (default 64 128; 32 64 on the CPU)")
    parser.add_argument("--shape", help="BxHxS (default 4x16x4096 on the GPU, 1x2x80 on the CPU or --quick)")
    parser.add_argument("--fwd", action="append", metavar="TILES", help="forward candidates (repeatable)")
    parser.add_argument("--bwd", action="append", metavar="dkdv=TILES,dq=TILES", help="backward candidates")
    parser.add_argument("--dtype", choices=("bfloat16", "float16", "float32"), default="bfloat16",
                        help="q, k, v's dtype (default bfloat16)")
    parser.add_argument("--reps", type=int, help="timed calls per candidate (default 20; 3 with --quick)")
    parser.add_argument("--budget", type=float, default=1e9, metavar="S",
                        help="stop measuring after S seconds: the remaining candidates are rows that say so")
    parser.add_argument("--json", metavar="PATH", help="also write the rows and the choice as JSON")
    parser.add_argument("--no-precompile", action="store_true",
                        help="compile each candidate when it is measured, not all at first in parallel threads")
    args = parser.parse_args(argv)
    small = args.quick or args.device == "cpu"
    B, H, S = (int(x) for x in (args.shape or ("1x2x80" if small else "4x16x4096")).split("x"))
    dims = args.dims or ([32, 64] if small else [64, 128])
    on_gpu = args.device == "cuda"
    wide = args.dtype == "float32"
    fwd = args.fwd or list((CUDA_F32_FWD if wide else CUDA_FWD) if on_gpu and not args.quick else CPU_FWD)
    bwd = args.bwd or list((CUDA_F32_BWD if wide else CUDA_BWD) if on_gpu and not args.quick else CPU_BWD)
    reps = args.reps or (3 if small else 20)
    timer = testing.CudaTimer() if on_gpu else testing.HostTimer()
    deadline = time.monotonic() + args.budget

    def log(message):
        print(f"[sweep] {message}", file=sys.stderr, flush=True)

    where = torch.cuda.get_device_name() if on_gpu else "CPU"
    log(f"{where}: {args.dtype} B={B} H={H} S={S}, D in {dims}; {len(fwd)} forward, {len(bwd)} backward candidates")
    problems = [Problem(args.device, B, H, S, D, causal, args.dtype) for D in dims for causal in (False, True)]
    if not args.no_precompile:
        precompile_all(problems, fwd, bwd, args.device, log)
    rows = sweep(problems, fwd, bwd, args.device, timer, reps, deadline, log)
    print(format_table(rows))
    chosen = best(rows)
    print()
    for (D, kind), (config, share) in chosen.items():
        print(f"fastest {kind} for D={D}: {config} ({100 * share:.0f}% of SDPA, geometric mean over causal and not)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": where, "shape": [B, H, S], "dims": dims, "rows": rows,
                       "best": {f"{kind}/{D}": {"config": c, "of_sdpa": s} for (D, kind), (c, s) in chosen.items()}},
                      f, indent=1)
    # A wrong result is a compiler bug whatever the tiles; a configuration that does not fit is not.
    return 1 if any(r["check"] == "mismatch" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
