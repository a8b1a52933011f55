"""Host time per call of tegula.torch's ops, against torch ops of the same kind.

    python tools/hopper/host_cost_probe.py [--device cuda] [--calls 2000] [--steps 10] [--compile]
                                           [--ops tegula torch] [--sample]

Tiny tensors, so the device finishes each kernel before the host issues the
next and the per-call time is the host's: the launch alone, the host
function, the op in eager mode (with and without autograd), the route
through torch's dispatcher that compiled graphs take, and a forward plus
backward. Then cProfile of the bf16 training step of examples/train_gpt.py
(GPU configuration, tegula ops): the Python functions that take its host time;
with --compile, of the model under torch.compile(fullgraph=True). --calls 0 or
--steps 0 leaves that part out. --ops also times the torch variant's step, for
the issue rates side by side.

cProfile charges every Python call a fixed cost, so it inflates code made of
many small calls (torch's dispatch layers) against code that spends its time
in C. --sample replaces it with a sampler: a thread that reads the main
thread's stack every 100 microseconds, uninstrumented otherwise, and reports
the share of samples in which each function is the innermost Python frame
(self) or anywhere on the stack (inclusive).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import pstats
import collections
import sys
import threading
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))


def per_call(fn, calls: int, device: str) -> tuple[float, float]:
    """Microseconds per call of `fn` in a loop of `calls`: issued (the host's time) and with the
    device's tail (more than the host's only when the device is the slower)."""
    for _ in range(50):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    issued = time.perf_counter() - start
    if device == "cuda":
        torch.cuda.synchronize()
    return issued / calls * 1e6, (time.perf_counter() - start) / calls * 1e6


def op_rows(device: str, calls: int) -> None:
    import tegula
    import tegula.language as tl
    rms = importlib.import_module("tegula.torch.ops.rms_norm")
    rot = importlib.import_module("tegula.torch.ops.rotary")
    glu = importlib.import_module("tegula.torch.ops.swiglu")
    from tegula.torch import ops
    x = torch.randn(8, 64, device=device)
    w = torch.randn(64, device=device)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    y, rstd = torch.empty_like(x), torch.empty(8, device=device)
    q = torch.randn(1, 4, 2, 8, device=device)
    cos, sin = torch.randn(4, 4, device=device), torch.randn(4, 4, device=device)
    qg = q.clone().requires_grad_()
    qkvg = torch.randn(1, 4, 3, 2, 8, device=device).requires_grad_()
    a, b = torch.randn(8, 64, device=device), torch.randn(8, 64, device=device)
    ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
    att = [torch.randn(1, 2, 64, 64, device=device, dtype=torch.bfloat16) for _ in range(3)]
    attg = [t.clone().requires_grad_() for t in att]
    dy_att = torch.randn(1, 2, 64, 64, device=device, dtype=torch.bfloat16)
    kernel = rms.rms_norm_forward_kernel

    def fwd_bwd(f, *args):
        def run():
            out = f(*args)
            out = out[0] if isinstance(out, tuple) else out
            out.backward(torch.ones_like(out))
        return run

    rows = [
        ("torch x + 1", lambda: x + 1),
        ("torch silu(a) * b", lambda: F.silu(a) * b),
        ("torch sdpa fwd", lambda: F.scaled_dot_product_attention(*att, is_causal=True)),
        ("torch sdpa fwd+bwd", fwd_bwd(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True), *attg)),
        ("launch rms_norm_forward_kernel", lambda: kernel[(8,)](x, w, y, rstd, 64, 1e-6, BLOCK_N=64,
                                                                ACC=tl.float32)),
        ("rms_norm host fn", lambda: rms.rms_norm_forward._tegula_fn(x, w, 1e-6)),
        ("rms_norm eager", lambda: ops.rms_norm(x, w)),
        ("rms_norm eager, grad", lambda: ops.rms_norm(xg, wg)),
        ("rms_norm torch.ops", lambda: torch.ops.tegula.rms_norm(x, w, 1e-6)),
        ("rms_norm fwd+bwd", fwd_bwd(ops.rms_norm, xg, wg)),
        ("add_rms_norm eager, grad", lambda: ops.add_rms_norm(xg, xg, wg)),
        ("add_rms_norm fwd+bwd", fwd_bwd(lambda x, r, w: ops.add_rms_norm(x, r, w)[1], xg, ag, wg)),
        ("rotary_qkv eager, grad", lambda: ops.rotary_qkv(qkvg, cos, sin)),
        ("rotary_qkv fwd+bwd", fwd_bwd(lambda t: torch.stack(ops.rotary_qkv(t, cos, sin)), qkvg)),
        ("silu_and_mul fwd+bwd", fwd_bwd(ops.silu_and_mul, ag)),
        ("rotary eager", lambda: ops.rotary_embedding(q, cos, sin)),
        ("rotary eager, grad", lambda: ops.rotary_embedding(qg, cos, sin)),
        ("rotary torch.ops", lambda: torch.ops.tegula.rotary_embedding(q, cos, sin, 1.0)),
        ("swiglu eager", lambda: ops.swiglu(a, b)),
        ("swiglu fwd+bwd", fwd_bwd(ops.swiglu, ag, bg)),
        ("attention eager", lambda: ops.attention(*att, causal=True)),
        ("attention fwd+bwd", fwd_bwd(lambda *t: ops.attention(*t, causal=True), *attg)),
    ]
    print(f"{'us/call':>8}  what ({device}, {calls} calls)")
    for name, fn in rows:
        try:
            print(f"{per_call(fn, calls, device)[0]:8.1f}  {name}", flush=True)
        except Exception as error:  # a probe: report and go on
            print(f"{'-':>8}  {name}: {type(error).__name__}: {str(error)[:200]}", flush=True)
    del glu, rot


class StackSampler:
    """Samples the Python stacks of the other threads (the main thread, and the
    autograd engine's device thread that runs a CUDA backward): counts, per
    function, the samples with it innermost (self) and anywhere on the stack
    (inclusive). The sampler needs the GIL to read the stack, so the switch
    interval is shortened while it runs; time in C code that holds the GIL is
    charged to the Python frame that called it."""

    def __init__(self, period: float = 1e-4):
        self.period = period
        self.self_counts: collections.Counter = collections.Counter()
        self.inclusive: collections.Counter = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(self.period)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._interval)

    # A thread whose innermost frame is one of these is waiting for another
    # (the main thread while the autograd engine's device thread runs the
    # backward), or is one of Inductor's compile-worker threads, idle after
    # compiling: its sample is not counted.
    WAITING = ("_engine_run_backward", "_wait_for_tstate_lock", "wait")
    IDLE_FILES = ("compile_worker",)

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.period):
            for ident, frame in sys._current_frames().items():
                if (ident == me or frame.f_code.co_name in self.WAITING
                        or any(part in frame.f_code.co_filename for part in self.IDLE_FILES)):
                    continue
                self.samples += 1
                self.self_counts[self._name(frame)] += 1
                seen = set()
                while frame is not None:
                    name = self._name(frame)
                    if name not in seen:
                        seen.add(name)
                        self.inclusive[name] += 1
                    frame = frame.f_back

    @staticmethod
    def _name(frame) -> str:
        code = frame.f_code
        path = code.co_filename
        for marker in ("site-packages/", "python/tegula/", "/tools/", "/examples/"):
            if marker in path:
                path = path.split(marker, 1)[1]
                break
        return f"{path}:{code.co_firstlineno}({code.co_name})"

    def report(self, rows: int) -> str:
        lines = [f"{self.samples} samples"]
        for title, counts in (("self", self.self_counts), ("inclusive", self.inclusive)):
            lines.append(f"-- {title}")
            for name, count in counts.most_common(rows):
                lines.append(f"{100 * count / max(self.samples, 1):6.1f}%  {name}")
        return "\n".join(lines)


def step_profile(device: str, steps: int, rows: int, compile: bool = False, ops: str = "tegula",
                 sample: bool = False) -> None:
    import dataclasses
    from profile_train_step import load_example
    example = load_example()
    config = dataclasses.replace(example.default_config(device), precision="bfloat16")
    autocast = example.forward_precision(config, device)
    model = example.make_model(config, ops).to(device)
    optimizer = example.make_optimizer(model, config)
    forward = torch.compile(model, fullgraph=True) if compile else model
    data = example.batches(example.markov_corpus(config.vocab, 50_000), config, config.seed)
    batches = [tuple(t.to(device) for t in next(data)) for _ in range(steps + 3)]

    phases = collections.Counter()

    def step(tokens, targets):
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = forward(tokens, targets)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        optimizer.step()
        phases["forward"] += t1 - t0
        phases["backward"] += t2 - t1
        phases["optimizer"] += time.perf_counter() - t2

    for tokens, targets in batches[:3]:
        step(tokens, targets)
    if device == "cuda":
        torch.cuda.synchronize()
    phases.clear()
    start = time.perf_counter()
    for tokens, targets in batches[3:]:
        step(tokens, targets)
    host = time.perf_counter() - start
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"\n== {ops} step{' (compiled)' if compile else ''}, bf16: host {host * 1e3 / steps:.2f} ms per step issued, "
          f"{(time.perf_counter() - start) * 1e3 / steps:.2f} ms with the device's tail; issued in "
          + ", ".join(f"{name} {spent * 1e3 / steps:.2f}" for name, spent in phases.items()) + " ms", flush=True)
    if not rows:
        return
    if sample:
        with StackSampler() as sampler:
            for tokens, targets in batches[3:]:
                step(tokens, targets)
        if device == "cuda":
            torch.cuda.synchronize()
        print(f"\n-- sampled, {steps} steps: {sampler.report(rows)}")
        return
    profiler = cProfile.Profile()
    profiler.enable()
    for tokens, targets in batches[3:]:
        step(tokens, targets)
    profiler.disable()
    if device == "cuda":
        torch.cuda.synchronize()
    for order in ("tottime", "cumtime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(rows)
        print(f"\n-- cProfile by {order}, {steps} steps")
        print("\n".join(line for line in text.getvalue().splitlines()[6:] if line.strip()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rows", type=int, default=35)
    parser.add_argument("--compile", action="store_true", help="profile the step of the compiled model")
    parser.add_argument("--ops", nargs="+", choices=("tegula", "torch"), default=["tegula"],
                        help="the variants whose step to time; each but the first is timed only (--rows 0)")
    parser.add_argument("--sample", action="store_true", help="a stack sampler instead of cProfile")
    args = parser.parse_args()
    if args.calls:
        op_rows(args.device, args.calls)
    if args.steps:
        for i, ops in enumerate(args.ops):
            step_profile(args.device, args.steps, args.rows if i == 0 else 0, args.compile, ops, args.sample)


if __name__ == "__main__":
    main()
