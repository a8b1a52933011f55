"""The compiled GPT training step (examples/train_gpt.py, GPU_CONFIG, bf16) in variants that differ in
one choice, against torch.compile of the torch model, interleaved in one process:

    python tools/hopper/step_ab.py [--rounds 15] [--steps 5] [--device cuda] [--only NAME ...]

(``--device cpu``: the CPU configuration in float32, a dry run of the script.)

Host time on the GPU machine moves by up to 40% between calls, so two builds compared across calls say
little; here every variant runs in the same process, round after round. Variants:

- ``torch.compile``: the torch model;
- ``tegula.compile``: the tegula model as it is (``rotary_attention``);
- ``tegula.compile separate``: the same with ``rotary_qkv`` then ``attention`` (two ops each way);
- ``... no asserts``: compiled without Inductor's checks of sizes and strides;
- ``tegula.compile dispatcher``: the graphs call the ops through torch's dispatcher instead of their
  host functions directly (``dispatcher_calls``);
- ``tegula.compile size asserts``: the graphs check the ops' outputs' sizes and strides;
- ``tegula.compile torch.empty``: the ops allocate with torch.empty.

Before the rounds, each variant's host time for a step issued behind a long sleeping kernel says whether
anything in the step waits for the device (then it takes the sleep's time too).

Each sample is ``--steps`` steps timed with CUDA events (the host issues them back to back, as training
does), reported as tokens/s (medians) and as ratios to torch.compile, beside the host's time to issue the
first step of a sample after a synchronize: a step whose host time nears its device time is host-bound.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import dataclasses
import pathlib
import statistics
import sys
import time
import types

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import train_gpt  # noqa: E402


def separate_ops():
    """tegula.torch.ops with rotary_attention made of rotary_qkv and attention."""
    from tegula.torch import ops
    namespace = types.SimpleNamespace(**{name: getattr(ops, name) for name in ops.__all__})

    def rotary_attention(qkv, cos, sin, causal):
        q, k, v = ops.rotary_qkv(qkv, cos, sin)
        return ops.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal).transpose(1, 2)
    namespace.rotary_attention = rotary_attention
    return namespace


@contextlib.contextmanager
def dispatcher_calls():
    """While Inductor compiles in this context, its graphs call the Tegula ops through torch's dispatcher
    (``torch.ops.tegula.<op>.default``) instead of their host functions directly."""
    from tegula.torch import _inductor_fallback
    _inductor_fallback.CALL_DIRECTLY = False
    try:
        yield
    finally:
        _inductor_fallback.CALL_DIRECTLY = True


@contextlib.contextmanager
def size_asserts():
    """While Inductor compiles in this context, its graphs check the Tegula ops' outputs' sizes and strides."""
    from tegula.torch import _inductor_fallback
    _inductor_fallback.SKIP_SIZE_ASSERTS = False
    try:
        yield
    finally:
        _inductor_fallback.SKIP_SIZE_ASSERTS = True


@contextlib.contextmanager
def torch_empty():
    """While in this context, the Tegula ops allocate with torch.empty."""
    from tegula.torch.ops import _empty
    _empty.FAST = False
    try:
        yield
    finally:
        _empty.FAST = True


@contextlib.contextmanager
def timed_ops(host_times: collections.Counter, calls: collections.Counter):
    """While in this context, the Tegula ops a compiled graph calls directly and every Tegula kernel launch
    add their host seconds to ``host_times`` (by op, and by kernel as "launch <name>")."""
    from torch._library.custom_ops import OPDEFS
    jit = importlib.import_module("tegula.jit")  # the module; tegula.jit is the decorator

    def timed(name, fn):
        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                host_times[name] += time.perf_counter() - start
                calls[name] += 1
        return call

    from tegula.torch._inductor_fallback import DIRECT
    overloads = {opdef._opoverload: getattr(opdef._opoverload, DIRECT) for name, opdef in OPDEFS.items()
                 if name.startswith("tegula::") and hasattr(opdef._opoverload, DIRECT)}
    for overload, direct in overloads.items():
        setattr(overload, DIRECT, timed(overload._overloadpacket.__name__, direct))
    original = jit.JITFunction.__getitem__
    jit.JITFunction.__getitem__ = lambda self, grid: timed("launch " + self.__name__, original(self, grid))
    try:
        yield
    finally:
        jit.JITFunction.__getitem__ = original
        for overload, direct in overloads.items():
            setattr(overload, DIRECT, direct)


def print_op_times(run, samples: int, steps: int, device: str) -> None:
    """Host microseconds per call of each Tegula op and kernel launch inside the compiled step, and their
    share of the step's host time."""
    host_times, calls = collections.Counter(), collections.Counter()
    total = 0.0
    with timed_ops(host_times, calls):
        for _ in range(samples):
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            run()
            total += time.perf_counter() - start
    n = samples * steps
    ops_total = sum(t for name, t in host_times.items() if not name.startswith("launch "))
    print(f"\nhost time of the compiled step ({n} steps): {total * 1e3 / n:.2f} ms a step, "
          f"{ops_total * 1e3 / n:.2f} ms of it in the Tegula ops' host functions (timed)")
    print(f"{'calls/step':>10} {'us/call':>8} {'ms/step':>8}  op or launch")
    for name, seconds in sorted(host_times.items(), key=lambda item: -item[1]):
        print(f"{calls[name] / n:10.1f} {seconds / calls[name] * 1e6:8.1f} {seconds * 1e3 / n:8.3f}  {name}")


def profile_host(run, samples: int, rows: int) -> None:
    """cProfile's view of the compiled step's host time. Its own overhead per Python call inflates code
    that makes many small calls; read the rows as where the calls are, not as times to add up."""
    import cProfile
    import io
    import pstats
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(samples):
        run()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(rows)
    stats.sort_stats("cumulative").print_stats("tegula", rows)
    print(out.getvalue())


def in_context(context, run):
    """run, called inside context() each time."""
    def call():
        with context():
            return run()
    return call


SLEEP_MS = 200


def host_only_ms(run, device: str) -> float:
    """The host's ms for issuing one step while the device is busy with a long kernel queued before it: the
    pure host time when nothing in the step waits for the device, at least SLEEP_MS when something does."""
    if device != "cuda":
        return run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1_000_000)
    end.record()
    torch.cuda.synchronize()
    cycles = int(1_000_000 * SLEEP_MS / start.elapsed_time(end))
    torch.cuda._sleep(cycles)
    host = run()
    torch.cuda.synchronize()
    return host


def timed_ms(run, device: str) -> tuple:
    """(ms of all the steps on the device's clock, ms the host took to issue the first step). Nothing in
    a step synchronizes, so when a step's host time is close to its device time, the step is host-bound."""
    if device != "cuda":
        start = time.perf_counter()
        host = run()
        return (time.perf_counter() - start) * 1e3, host
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    host = run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end), host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--only", nargs="*", help="the variants to run (names as printed); all by default")
    parser.add_argument("--op-times", action="store_true",
                        help="then the host time of each op and launch inside the direct variant's step")
    parser.add_argument("--profile-host", type=int, default=0, metavar="ROWS",
                        help="then cProfile the direct variant's step and print the ROWS functions of most own "
                             "time, and the Tegula functions of most time with what they call")
    args = parser.parse_args()
    device = args.device
    config = train_gpt.default_config(device)
    if device == "cuda":
        config = dataclasses.replace(config, precision="bfloat16")
    corpus = train_gpt.markov_corpus(config.vocab, 4 * config.batch * (config.context + 1) + 100)
    tokens, targets = (t.to(device) for t in next(train_gpt.batches(corpus, config, config.seed)))

    def variant(ops, options=None):
        torch.manual_seed(config.seed)
        model = train_gpt.GPT(config, ops).to(device)
        optimizer = train_gpt.make_optimizer(model, config)
        forward = torch.compile(model, fullgraph=True, options=options)
        autocast = train_gpt.forward_precision(config, device)

        def steps():
            """Runs the steps; returns the host's ms for issuing the first (the later ones may wait for
            room in the launch queue)."""
            first = None
            start = time.perf_counter()
            for _ in range(args.steps):
                optimizer.zero_grad(set_to_none=True)
                with autocast:
                    loss = forward(tokens, targets)
                loss.backward()
                optimizer.step()
                first = first if first is not None else (time.perf_counter() - start) * 1e3
            return first
        return steps

    from tegula.torch import ops
    # The variants compile the same graphs differently: no cached graph may stand in for another's.
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    variants = {"torch.compile": variant(train_gpt.TorchOps), "tegula.compile": variant(ops),
                "tegula.compile separate": variant(separate_ops()),
                "torch.compile no asserts": variant(train_gpt.TorchOps, {"size_asserts": False}),
                "tegula.compile no asserts": variant(ops, {"size_asserts": False}),
                "tegula.compile dispatcher": variant(ops),
                "tegula.compile size asserts": variant(ops), "tegula.compile torch.empty": variant(ops)}
    if args.only:
        variants = {name: run for name, run in variants.items() if name in args.only or name == "torch.compile"}
    if "tegula.compile torch.empty" in variants:
        variants["tegula.compile torch.empty"] = in_context(torch_empty, variants["tegula.compile torch.empty"])
    compiling = {"tegula.compile dispatcher": dispatcher_calls, "tegula.compile size asserts": size_asserts}
    for name, run in variants.items():  # compiles, then warms up
        with compiling.get(name, contextlib.nullcontext)():
            run()
        for _ in range(2):
            run()
        print(f"{name}: compiled; host {host_only_ms(run, device):.2f} ms for a step issued behind a sleeping "
              f"kernel (a synchronizing step takes the sleep's {SLEEP_MS} ms too)", flush=True)
    samples = {name: [] for name in variants}
    issue = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, run in variants.items():
            device_ms, host_ms = timed_ms(run, device)
            samples[name].append(device_ms)
            issue[name].append(host_ms)
    tokens_per_step = config.batch * config.context
    rate = {name: tokens_per_step * args.steps / (statistics.median(ms) / 1e3) for name, ms in samples.items()}
    for name, r in rate.items():
        step_ms = statistics.median(samples[name]) / args.steps
        host_ms = statistics.median(issue[name])
        print(f"{name:>24}: {r:12,.0f} tokens/s  {r / rate['torch.compile']:.3f} of torch.compile  "
              f"{step_ms:6.2f} ms a step, host issues it in {host_ms:6.2f}", flush=True)
    if args.op_times and "tegula.compile" in variants:
        print_op_times(variants["tegula.compile"], args.rounds, args.steps, device)
    if args.profile_host and "tegula.compile" in variants:
        profile_host(variants["tegula.compile"], args.rounds, args.profile_host)


if __name__ == "__main__":
    main()
