"""``python -m tegula.bench --gpu``: the reference kernels on one CUDA GPU, beside their peers.

Each workload runs as several *variants* on the same CUDA tensors, in one run:

- ``tegula``: the kernel module's host wrapper (the launch runs on the GPU
  because its arguments are CUDA tensors);
- ``triton``: the same wrapper of the module's Triton twin (``_triton_twin``):
  the same kernel source compiled by Triton, with the same ``num_warps``;
- ``torch``: PyTorch eager, op by op (the reference the others are checked
  against); ``torch.compile``: the same function through ``torch.compile``;
- ``cublas``: ``torch.matmul``, for matmul (its reference and its floor).

``matmul_autotune`` (issue 7) is the matmul kernel under ``@tegula.autotune``
over ``_bench_autotune.CONFIGS``, tuned while it is prepared; beside it, row
``matmul_autotune_best`` holds every one of those configs timed by hand in
the same run, the fastest one timed again with the others (both rows'
``note`` names the config).

Two workloads measure the host rather than the GPU: ``launch`` (the host time
of one launch of a 6-argument kernel, in microseconds) and ``compile`` (rows
``compile_cold`` and ``compile_warm``: the vector-add kernel's first call to
its result in a fresh process, with an empty and with a warm cache, in
seconds; ``compile_cold_cpu`` and ``compile_warm_cpu``: Tegula's CPU backend
the same way; see ``_compile_probe``).

One timing method for all: CUDA events on torch's current stream, a 256 MiB
write before each call to flush the L2, variants interleaved round-robin, the
median after warm-up (compilation happens during warm-up). The floor of a
memory-bound workload is its minimal byte count over the device-to-device
copy bandwidth measured in the same run (``y.copy_(x)`` of 1 GiB, bytes read
plus written); a matmul's floor is cuBLAS's rate in the same run. A variant
that fails to build, compile, run or match the reference is a row that says
so; it never stops the run. ``docs/benchmarks.md`` describes the report.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from . import __version__ as tegula_version
from . import _bench_autotune, _compile_probe, _triton_twin, testing
from .kernels import attention, axpy, fused_chain, layer_norm, matmul, matmul_epilogue, matmul_persistent, softmax, vector_add
from .testing import L2_FLUSH_BYTES, CudaTimer

SCHEMA = "tegula-bench-gpu/1"
# In the order they run: the memory-bound targets first, then the compute-bound ones.
WORKLOADS = ("vector_add", "fused_chain", "softmax", "layer_norm", "launch", "compile", "matmul",
             "matmul_autotune", "matmul_epilogue", "matmul_persistent", "attention", "attention_causal")
VARIANTS = ("tegula", "triton", "torch", "torch.compile", "cublas", "sdpa")
# Warps per program, the same for Tegula and Triton in each workload: one row
# of 4-8K elements per program wants 8 warps, a 1024-element block 4, a
# 128x128 matmul tile (kernels/matmul.py DEFAULT_BLOCKS) two warpgroups: 8.
NUM_WARPS = {"vector_add": 4, "fused_chain": 4, "softmax": 8, "layer_norm": 8, "matmul": 8, "launch": 4,
             "attention": 8, "attention_causal": 8, "matmul_epilogue": 8, "matmul_persistent": 8}
COPY_BYTES = 1 << 30
# Where the inputs live. Only a dry run of this module's logic on a machine
# without a GPU (torch's CUDA calls stubbed) sets it to "cpu".
DEVICE = "cuda"
LAUNCHES = 10_000
# Launches per timed burst: well under the driver's queue of pending launches.
LAUNCH_BURST = 200
LAUNCH_US_TARGET = 5.0
# Memory-bound targets of the performance contract (issue 4, "Done when").
FLOOR_TARGET = 0.90
CHAIN_EAGER_SPEEDUP_TARGET = 5.0
# Flash attention (issue 5): 128 query rows by 64 keys per step, 8 warps (two
# warpgroups of 64 rows), 3 stages, for Tegula and Triton alike; at least
# this share of PyTorch SDPA's rate.
ATTENTION_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 64}
ATTENTION_STAGES = 3
ATTENTION_SDPA_TARGET = 0.85
MATMUL_CUBLAS_TARGET = 0.95  # issue 5: bf16 matmul at 4096^3 and 8192^3, share of cuBLAS in the same run
# The fused-epilogue and persistent matmuls: the plain matmul's pipeline depth
# (kernels/matmul.py DEFAULT_BLOCKS are tuned for 3 stages).
MATMUL_STAGES = 3


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --- cases -------------------------------------------------------------------------------


@dataclass
class Case:
    """One workload at one size: how to build each variant, the work it must do,
    and how its output is checked.

    ``variants`` maps a variant name to a factory that allocates what the
    variant needs and returns a zero-argument callable running it once (and
    returning its output); factories run inside the error handling, so a
    missing package or a failed compile becomes an error row.
    """

    workload: str
    shape: str
    dtype: str
    bytes: int
    flops: int
    num_warps: int
    variants: dict
    reference: str = "torch"
    compute_bound: bool = False
    tolerance: tuple = (0.0, 0.0)  # (atol, rtol) against the reference's output
    # Variants whose rows go under another (workload, variant) than (the
    # case's workload, the variant's name): the variant names of the report
    # are fixed, so a second Tegula variant becomes a row of its own workload.
    rows: dict = field(default_factory=dict)
    # The variant whose rate is a compute-bound case's floor when it is not
    # the reference (a fused matmul's floor is cuBLAS's plain matmul), and
    # variants that compute something else than the reference (that plain
    # matmul): timed, never compared.
    floor: Optional[str] = None
    unchecked: tuple = ()

    def row_of(self, variant: str) -> tuple:
        return self.rows.get(variant, (self.workload, variant))


def _generator(torch, seed: int):
    return torch.Generator(device=DEVICE).manual_seed(seed)


def _kernel_variants(module, run) -> dict:
    """The tegula and triton variants of one host wrapper: `run(m)` allocates the
    outputs and returns the callable that calls module m's wrapper."""
    return {"tegula": lambda: run(module), "triton": lambda: run(_triton_twin.load(module))}


def _eager_variants(torch, eager: Callable, *args) -> dict:
    """PyTorch eager and torch.compile of the same function on the same inputs."""
    return {"torch": lambda: functools.partial(eager, *args),
            "torch.compile": lambda: functools.partial(torch.compile(eager), *args)}


def vector_add_case(torch, quick: bool, num_warps: int) -> Case:
    n = (1 << 20) + 3 if quick else 1 << 28
    g = _generator(torch, 0)
    x = torch.randn(n, device=DEVICE, generator=g)
    y = torch.randn(n, device=DEVICE, generator=g)

    def run(m):
        out = torch.empty_like(x)
        return lambda: m.vector_add(x, y, out, num_warps=num_warps)

    def eager(x, y):
        return x + y

    return Case("vector_add", f"n={n}", "float32", vector_add.bytes_moved(n, 4), vector_add.flops(n),
                num_warps, {**_kernel_variants(vector_add, run), **_eager_variants(torch, eager, x, y)},
                tolerance=(1e-6, 1e-6))


def fused_chain_case(torch, quick: bool, num_warps: int) -> Case:
    """The case study: x and residual bf16, keep bool, bias and weight fp32, y bf16."""
    M, N = (512, 4096) if quick else (16384, 4096)
    g = _generator(torch, 1)
    x = torch.randn(M, N, device=DEVICE, generator=g).to(torch.bfloat16)
    residual = torch.randn(M, N, device=DEVICE, generator=g).to(torch.bfloat16)
    keep = torch.rand(M, N, device=DEVICE, generator=g) >= fused_chain.P_DROP
    bias = torch.randn(N, device=DEVICE, generator=g)
    weight = torch.randn(N, device=DEVICE, generator=g)

    def run(m):
        out = torch.empty_like(x)
        return lambda: m.fused_chain(x, residual, keep, bias, weight, out=out, num_warps=num_warps)

    return Case("fused_chain", f"{M}x{N}", "bfloat16", fused_chain.bytes_moved(M, N, 2), 20 * M * N,
                num_warps, {**_kernel_variants(fused_chain, run),
                            **_eager_variants(torch, fused_chain.eager_chain_torch,
                                              x, residual, keep, bias, weight)},
                tolerance=(1e-2, 1.6e-2))


def softmax_case(torch, quick: bool, num_warps: int) -> Case:
    M, N = (512, 8192) if quick else (16384, 8192)
    x = torch.randn(M, N, device=DEVICE, generator=_generator(torch, 2)) * 4

    def run(m):
        out = torch.empty_like(x)
        return lambda: m.softmax(x, out, num_warps=num_warps)

    def eager(x):
        return torch.softmax(x, dim=1)

    return Case("softmax", f"{M}x{N}", "float32", softmax.bytes_moved(M, N, 4), softmax.flops(M, N),
                num_warps, {**_kernel_variants(softmax, run), **_eager_variants(torch, eager, x)},
                tolerance=(1e-6, 1e-5))


def layer_norm_case(torch, quick: bool, num_warps: int) -> Case:
    M, N = (512, 8192) if quick else (16384, 8192)
    g = _generator(torch, 3)
    x = (torch.randn(M, N, device=DEVICE, generator=g) * 2 + 1).to(torch.bfloat16)
    weight = torch.randn(N, device=DEVICE, generator=g).to(torch.bfloat16)
    bias = torch.randn(N, device=DEVICE, generator=g).to(torch.bfloat16)

    def run(m):
        out = torch.empty_like(x)
        return lambda: m.layer_norm(x, weight, bias, out=out, num_warps=num_warps)

    def eager(x, weight, bias):
        return torch.nn.functional.layer_norm(x, (x.shape[1],), weight, bias, layer_norm.EPS)

    return Case("layer_norm", f"{M}x{N}", "bfloat16", layer_norm.bytes_moved(M, N, 2),
                layer_norm.flops(M, N), num_warps,
                {**_kernel_variants(layer_norm, run), **_eager_variants(torch, eager, x, weight, bias)},
                tolerance=(1e-2, 1.6e-2))


def matmul_cases(torch, quick: bool, num_warps: int) -> list:
    """fp16 and bf16 at 4096^3, and bf16 at 8192^3 (workload ``matmul_bf16_8192``):
    issue 5 asks for 95% of cuBLAS at both sizes."""
    size, large = (320, 448) if quick else (4096, 8192)
    cases = []
    for dtype, short, rtol, n, suffix in ((torch.float16, "fp16", 4e-3, size, ""),
                                          (torch.bfloat16, "bf16", 1.6e-2, size, ""),
                                          (torch.bfloat16, "bf16", 1.6e-2, large, "_8192")):
        g = _generator(torch, 4)
        a = torch.randn(n, n, device=DEVICE, generator=g).to(dtype)
        b = torch.randn(n, n, device=DEVICE, generator=g).to(dtype)

        def run(m, a=a, b=b, n=n):
            out = torch.empty(n, n, device=DEVICE, dtype=a.dtype)
            return lambda: m.matmul(a, b, out, num_warps=num_warps)

        # Entries of C have a standard deviation of sqrt(K); cuBLAS may reduce
        # partial sums at reduced precision, so the absolute slack grows with it.
        atol = n ** 0.5 / (64 if short == "bf16" else 256)
        cases.append(Case(
            f"matmul_{short}{suffix}", f"{n}x{n}x{n}", str(dtype).removeprefix("torch."),
            matmul.bytes_moved(n, n, n, 2), matmul.flops(n, n, n), num_warps,
            {**_kernel_variants(matmul, run), "cublas": lambda a=a, b=b: functools.partial(torch.matmul, a, b)},
            reference="cublas", compute_bound=True, tolerance=(atol, rtol)))
    return cases


def matmul_autotune_case(torch, quick: bool, num_warps=None) -> Case:
    """bf16 C = A @ B: the autotuned kernel (variant ``tegula``), the fastest of
    the same configs timed by hand (``tegula.best``, rows of workload
    ``matmul_autotune_best``) and cuBLAS. Warps and stages come from each config."""
    size = 320 if quick else 4096
    g = _generator(torch, 6)
    a = torch.randn(size, size, device=DEVICE, generator=g).to(torch.bfloat16)
    b = torch.randn(size, size, device=DEVICE, generator=g).to(torch.bfloat16)
    warmup, rep = (5, 20) if quick else (25, 100)  # ms per config, the autotuner's defaults in full runs

    def out():
        return torch.empty(size, size, device=DEVICE, dtype=torch.bfloat16)

    def by_hand(fn):
        return testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median", device=DEVICE)

    variants = {
        "tegula": lambda: _bench_autotune.tuned_variant(a, b, out(), warmup=warmup, rep=rep),
        "tegula.best": lambda: _bench_autotune.best_by_hand(a, b, out(), by_hand),
        "cublas": lambda: functools.partial(torch.matmul, a, b)}
    return Case(_bench_autotune.WORKLOAD, f"{size}x{size}x{size}", "bfloat16",
                matmul.bytes_moved(size, size, size, 2), matmul.flops(size, size, size), None, variants,
                reference="cublas", compute_bound=True, tolerance=(size ** 0.5 / 64, 1.6e-2),
                rows={"tegula.best": (_bench_autotune.BEST_WORKLOAD, "tegula")})


def matmul_epilogue_case(torch, quick: bool, num_warps: int) -> Case:
    """bf16 C = gelu_tanh(A @ B + bias) + residual (issue 5, fused epilogue). Checked
    against PyTorch eager (torch.matmul, then the epilogue op by op); the floor is
    cuBLAS's plain A @ B in the same run (variant cublas, not compared)."""
    size = 320 if quick else 4096
    g = _generator(torch, 7)
    a, b, residual = (torch.randn(size, size, device=DEVICE, generator=g).to(torch.bfloat16) for _ in range(3))
    bias = torch.randn(size, device=DEVICE, generator=g).to(torch.bfloat16)

    def run(m):
        out = torch.empty(size, size, device=DEVICE, dtype=torch.bfloat16)
        return lambda: m.matmul_epilogue(a, b, bias, residual, "gelu_tanh", out=out, num_warps=num_warps,
                                         num_stages=MATMUL_STAGES)

    def eager(a, b, bias, residual):
        return torch.nn.functional.gelu(torch.matmul(a, b) + bias, approximate="tanh") + residual

    # Eager rounds C (entries of size sqrt(K)) to bf16 after each of its ops;
    # the kernel rounds once.
    return Case("matmul_epilogue", f"{size}x{size}x{size}", "bfloat16",
                matmul_epilogue.bytes_moved(size, size, size, 2), matmul_epilogue.flops(size, size, size),
                num_warps, {**_kernel_variants(matmul_epilogue, run),
                            **_eager_variants(torch, eager, a, b, bias, residual),
                            "cublas": lambda: functools.partial(torch.matmul, a, b)},
                compute_bound=True, tolerance=(size ** 0.5 / 32, 1.6e-2), floor="cublas", unchecked=("cublas",))


def matmul_persistent_case(torch, quick: bool, num_warps: int) -> Case:
    """bf16 C = A @ B by the persistent kernel (one program per SM); the floor is cuBLAS."""
    size = 320 if quick else 4096
    g = _generator(torch, 8)
    a = torch.randn(size, size, device=DEVICE, generator=g).to(torch.bfloat16)
    b = torch.randn(size, size, device=DEVICE, generator=g).to(torch.bfloat16)

    def run(m):
        out = torch.empty(size, size, device=DEVICE, dtype=torch.bfloat16)
        return lambda: m.matmul_persistent(a, b, out, num_warps=num_warps, num_stages=MATMUL_STAGES)

    return Case("matmul_persistent", f"{size}x{size}x{size}", "bfloat16",
                matmul_persistent.bytes_moved(size, size, size, 2), matmul_persistent.flops(size, size, size),
                num_warps, {**_kernel_variants(matmul_persistent, run),
                            "cublas": lambda: functools.partial(torch.matmul, a, b)},
                reference="cublas", compute_bound=True, tolerance=(size ** 0.5 / 64, 1.6e-2))


# The SDPA backends tried in order, with the names rows give them.
SDPA_BACKENDS = (("CUDNN_ATTENTION", "cuDNN"), ("FLASH_ATTENTION", "flash"), ("EFFICIENT_ATTENTION", "efficient"))


def sdpa_variant(torch, q, k, v, causal: bool):
    """PyTorch SDPA on the first backend that runs these inputs, cuDNN first (the
    issue's yardstick); the callable's ``note`` names the backend, and why the
    ones before it were passed over."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # an older torch: its own choice
        run = functools.partial(sdpa, q, k, v, is_causal=causal)
        run.note = "default backend"
        return run
    skipped = []
    for name, label in SDPA_BACKENDS:
        backend = getattr(SDPBackend, name, None)
        if backend is None:
            skipped.append(f"{label}: not in this torch")
            continue

        def run(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, k, v, is_causal=causal)

        try:
            run()
            torch.cuda.synchronize()
        except RuntimeError as e:
            skipped.append(f"{label}: {str(e).strip().splitlines()[0][:60] if str(e).strip() else 'refused'}")
            continue
        run.note = label + (f" ({'; '.join(skipped)})" if skipped else "")
        return run
    run = functools.partial(sdpa, q, k, v, is_causal=causal)
    run.note = f"default backend ({'; '.join(skipped)})"
    return run


def attention_case(torch, quick: bool, num_warps: int, causal: bool) -> Case:
    """Flash attention forward, bf16 [B, H, S, D]; its floor is SDPA's rate in the same run."""
    B, H, S, D = (1, 4, 320, 128) if quick else (4, 32, 4096, 128)
    g = _generator(torch, 5)
    q, k, v = (torch.randn(B, H, S, D, device=DEVICE, generator=g).to(torch.bfloat16) for _ in range(3))

    def run(m):
        out = torch.empty_like(q)
        return lambda: m.attention(q, k, v, causal=causal, out=out, num_warps=num_warps,
                                   num_stages=ATTENTION_STAGES, **ATTENTION_BLOCKS)

    workload = "attention_causal" if causal else "attention"
    # Outputs are averages of values over many keys; both sides round the
    # probabilities to bf16 before the second product.
    return Case(workload, f"{B}x{H}x{S}x{D}", "bfloat16", attention.bytes_moved(B, H, S, D, 2),
                attention.flops(B, H, S, D, causal), num_warps,
                {**_kernel_variants(attention, run), "sdpa": lambda: sdpa_variant(torch, q, k, v, causal)},
                reference="sdpa", compute_bound=True, tolerance=(1e-2, 1.6e-2))


BUILDERS = {"vector_add": vector_add_case, "fused_chain": fused_chain_case, "softmax": softmax_case,
            "layer_norm": layer_norm_case, "matmul_autotune": matmul_autotune_case,
            "matmul_epilogue": matmul_epilogue_case, "matmul_persistent": matmul_persistent_case,
            "attention": functools.partial(attention_case, causal=False),
            "attention_causal": functools.partial(attention_case, causal=True)}


# --- measuring ---------------------------------------------------------------------------


@dataclass
class Outcome:
    variant: str
    samples: list = field(default_factory=list)  # ms per call
    check: str = "unchecked"  # reference | ok | mismatch | unchecked | error
    error: Optional[str] = None
    note: Optional[str] = None  # what ran, when the variant's name does not say it (SDPA's backend)
    num_warps: Optional[int] = None  # the variant's own, when it chose them (an autotuned config)

    @property
    def median_ms(self) -> Optional[float]:
        return statistics.median(self.samples) if self.samples else None


def _describe_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip()


def _first(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def compare(torch, got, want, atol: float, rtol: float) -> Optional[str]:
    """None when |got - want| <= atol + rtol * |want| everywhere (NaN matching NaN),
    else what differs. Runs on the device: outputs here are too big to copy back."""
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    g, w = got.float().flatten(), want.float().flatten()
    diff = (g - w).abs()
    bad = ~((diff <= atol + rtol * w.abs()) | (torch.isnan(g) & torch.isnan(w)))
    count = int(bad.sum())
    if count == 0:
        return None
    worst = int(torch.argmax(torch.where(bad, torch.nan_to_num(diff, nan=float("inf")), -1.0)))
    return (f"{count} of {g.numel()} elements differ beyond atol={atol:g}, rtol={rtol:g}; worst at "
            f"flat index {worst}: got {float(g[worst]):g}, expected {float(w[worst]):g}")


def measure_case(torch, timer: CudaTimer, case: Case, variants, budget_s: float, min_reps: int,
                 max_reps: int) -> list:
    """Builds, warms up and checks every selected variant, then times them interleaved."""
    names = [v for v in case.variants if case.row_of(v)[1] in variants]
    names.sort(key=lambda v: v != case.reference)  # the reference first: the others are checked against it
    outcomes, runners, reference_out = [], [], None
    for name in names:
        outcome = Outcome(name)
        outcomes.append(outcome)
        try:
            log(f"{case.workload} {case.shape}: preparing {name}"
                + (" (compiles)" if name.startswith(("tegula", "triton", "torch.compile")) else ""))
            fn = case.variants[name]()
            outcome.note = getattr(fn, "note", None)
            outcome.num_warps = getattr(fn, "num_warps", None)
            fn()  # compiles on first use
            out = _first(fn())
            torch.cuda.synchronize()
            if name == case.reference:
                reference_out, outcome.check = out, "reference"
            elif name in case.unchecked:
                outcome.check = "unchecked"
            elif reference_out is not None:
                outcome.error = compare(torch, out, reference_out, *case.tolerance)
                outcome.check = "mismatch" if outcome.error else "ok"
            del out
        except Exception as e:  # noqa: BLE001 - one variant's failure is a row, not the end of the run
            outcome.check, outcome.error = "error", _describe_error(e)
            log(f"{case.workload}: {name} failed: {outcome.error.splitlines()[0][:200]}")
            continue
        if outcome.check == "mismatch":
            log(f"{case.workload}: {name} does not match {case.reference}: {outcome.error}")
        runners.append((outcome, fn))
    reference_out = None
    if not runners:
        return outcomes
    fns = [fn for _, fn in runners]
    try:
        first = timer.interleaved(fns, 1)
        round_ms = sum(samples[0] for samples in first) + 0.1 * len(fns)  # + the L2 flushes
        reps = int(min(max_reps, max(min_reps, budget_s * 1e3 / max(round_ms, 1e-3))))
        log(f"{case.workload} {case.shape}: timing {len(fns)} variants x {reps} rounds, interleaved")
        for (outcome, _), samples in zip(runners, timer.interleaved(fns, reps)):
            outcome.samples = samples
    except Exception as e:  # noqa: BLE001
        for outcome, _ in runners:
            outcome.check, outcome.error = "error", f"while timing: {_describe_error(e)}"
        log(f"{case.workload}: timing failed: {_describe_error(e)}")
    return outcomes


def measure_copy(torch, timer: CudaTimer, nbytes: int, reps: int, when: str) -> dict:
    """Device-to-device copy rate, bytes read + written per second, of y.copy_(x)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=DEVICE).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    samples = timer.interleaved([lambda: dst.copy_(src)], reps)[0]
    median = statistics.median(samples)
    return {"when": when, "bytes_per_copy": 2 * nbytes, "reps": reps, "median_ms": median,
            "min_ms": min(samples), "bytes_per_s": 2 * nbytes / (median / 1e3),
            "best_bytes_per_s": 2 * nbytes / (min(samples) / 1e3)}


def measure_launch(torch, variants, launches: int, rounds: int, num_warps: int) -> list:
    """Host cost of one launch of a one-element axpy, a kernel with 6 arguments.

    Timed in bursts of LAUNCH_BURST launches that start with the GPU idle
    (synchronized before the clock starts) and stop the clock before
    synchronizing: a burst is shorter than the driver's launch queue, so the
    host never waits for the GPU and the time is the host's alone. (A long
    back-to-back loop measures the slower of the host and the GPU: on some of
    these machines the GPU retires one tiny kernel per 7 us, more than the
    host needs to queue one.) `launches` per round in bursts, rounds
    alternating between the variants; a variant's samples are its bursts'
    per-launch times."""
    x = torch.ones(1, device=DEVICE)
    y = torch.full((1,), 2.0, device=DEVICE)
    kernels, outcomes = [], []
    for name in ("tegula", "triton", "torch"):
        if name not in variants:
            continue
        outcome = Outcome(name)
        outcomes.append(outcome)
        try:
            out = torch.zeros(1, device=DEVICE)
            if name == "torch":  # torch's own launch path, for scale: out = 3 * x + y in one op
                def launch(out=out):
                    torch.add(y, x, alpha=3.0, out=out)
            else:
                module = axpy if name == "tegula" else _triton_twin.load(axpy)

                def launch(kernel=module.axpy_kernel, out=out):
                    kernel[(1,)](x, y, out, 3.0, 1, BLOCK=axpy.BLOCK, num_warps=num_warps)

            for _ in range(100):
                launch()
            torch.cuda.synchronize()
            if float(out[0]) != 5.0:
                raise AssertionError(f"the launch wrote {float(out[0])}, expected 5.0")
            outcome.check = "ok"
            kernels.append((outcome, launch))
        except Exception as e:  # noqa: BLE001
            outcome.check, outcome.error = "error", _describe_error(e)
            log(f"launch: {name} failed: {outcome.error.splitlines()[0][:200]}")
    bursts = max(1, launches // LAUNCH_BURST)
    log(f"launch: {len(kernels)} variants x {rounds} rounds of {bursts} bursts of {LAUNCH_BURST} launches")
    for _ in range(rounds):
        for outcome, launch in kernels:
            if outcome.check == "error":
                continue
            try:
                for _ in range(bursts):
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    for _ in range(LAUNCH_BURST):
                        launch()
                    outcome.samples.append((time.perf_counter() - start) / LAUNCH_BURST * 1e3)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                outcome.check, outcome.error = "error", f"while timing: {_describe_error(e)}"
                outcome.samples = []
    return outcomes


def measure_compile(variants, quick: bool) -> dict:
    """compile_cold and compile_warm outcomes (ms per first call) of tegula and
    triton: fresh processes on an empty, then a warm cache (_compile_probe).
    Tegula's CPU backend is measured too (compile_cold_cpu, compile_warm_cpu):
    issue 7 asks for its cold first call against Triton's in the same run."""
    measured = {"compile_cold": [], "compile_warm": [], "compile_cold_cpu": [], "compile_warm_cpu": []}
    probes = [(name, "cuda", "") for name in ("tegula", "triton") if name in variants]
    if "tegula" in variants:
        probes.append(("tegula", "cpu", "_cpu"))
    for name, device, suffix in probes:
        log(f"compile: {name} ({device}), first calls in fresh processes")
        result = _compile_probe.measure(name, device, rounds=1 if quick else 3)
        for which in ("cold", "warm"):
            samples = [s * 1e3 for s in result[which]]
            check = "error" if result["error"] else "ok"
            measured[f"compile_{which}{suffix}"].append(Outcome(name, samples, check, result["error"]))
        if result["error"]:
            log(f"compile: {name} ({device}) failed: {result['error'].splitlines()[0][:200]}")
    return {workload: outcomes for workload, outcomes in measured.items() if outcomes}


# --- the report ------------------------------------------------------------------------------


def case_rows(case: Case, outcomes, copy_bytes_per_s: Optional[float]) -> list:
    """Rows in the report's schema; a compute-bound workload's floor is its reference's
    rate in the same run (matmul: cuBLAS, attention: SDPA)."""
    peak = None
    if case.compute_bound:
        floor = case.floor or case.reference
        peer = next((o for o in outcomes if o.variant == floor and o.median_ms), None)
        peak = case.flops / (peer.median_ms / 1e3) if peer else None
    rows = []
    for o in outcomes:
        ms = o.median_ms
        workload, variant = case.row_of(o.variant)
        row = {"workload": workload, "variant": variant, "ms": ms, "rate": None,
               "unit": "TFLOP/s" if case.compute_bound else "GB/s", "floor_frac": None,
               "shape": case.shape, "dtype": case.dtype, "bytes": case.bytes, "flops": case.flops,
               "num_warps": (o.num_warps or case.num_warps) if variant in ("tegula", "triton") else None,
               "samples": len(o.samples), "min_ms": min(o.samples) if o.samples else None,
               "max_ms": max(o.samples) if o.samples else None, "check": o.check, "error": o.error,
               "note": o.note}
        if ms:
            per_s = (case.flops if case.compute_bound else case.bytes) / (ms / 1e3)
            row["rate"] = per_s / (1e12 if case.compute_bound else 1e9)
            limit = peak if case.compute_bound else copy_bytes_per_s
            row["floor_frac"] = per_s / limit if limit else None
        rows.append(row)
    return rows


def launch_rows(outcomes, launches: int, num_warps: int) -> list:
    rows = []
    for o in outcomes:
        ms = o.median_ms
        rows.append({"workload": "launch", "variant": o.variant, "ms": ms,
                     "rate": ms * 1e3 if ms is not None else None, "unit": "us", "floor_frac": None,
                     "shape": f"axpy (6 arguments), 1 element, host time in bursts of {LAUNCH_BURST} launches",
                     "dtype": "float32",
                     "bytes": None, "flops": None, "num_warps": num_warps, "samples": len(o.samples),
                     "min_ms": min(o.samples) if o.samples else None,
                     "max_ms": max(o.samples) if o.samples else None, "check": o.check, "error": o.error})
    return rows


def compile_rows(measured: dict) -> list:
    """Rows in seconds (unit ``s``): the median first call to result."""
    rows = []
    for workload, outcomes in measured.items():
        cache = "an empty cache" if workload.startswith("compile_cold") else "a warm cache"
        backend = ", CPU backend" if workload.endswith("_cpu") else ""
        for o in outcomes:
            ms = o.median_ms
            rows.append({"workload": workload, "variant": o.variant, "ms": ms,
                         "rate": ms / 1e3 if ms is not None else None, "unit": "s", "floor_frac": None,
                         "shape": f"vector add, first call in a fresh process, {cache}{backend}", "dtype": "float32",
                         "bytes": None, "flops": None, "num_warps": None, "samples": len(o.samples),
                         "min_ms": min(o.samples) if o.samples else None,
                         "max_ms": max(o.samples) if o.samples else None, "check": o.check, "error": o.error})
    return rows


def error_rows(workload: str, variants, error: str) -> list:
    """Rows for a workload whose inputs could not even be made."""
    return [{"workload": workload, "variant": v, "ms": None, "rate": None, "unit": None, "floor_frac": None,
             "shape": None, "dtype": None, "bytes": None, "flops": None, "num_warps": None, "samples": 0,
             "min_ms": None, "max_ms": None, "check": "error", "error": error} for v in variants]


def _criterion(what: str, value: Optional[float], op: str, target: float, rows=()) -> dict:
    """One target: `value op target`, decided (pass True/False) when the value was
    measured, None otherwise. A row that computed a wrong result fails it."""
    passed = None
    if value is not None:
        passed = {">=": value >= target, "<=": value <= target, "<": value < target}[op]
        if any(row["check"] == "mismatch" for row in rows):
            passed = False  # fast but wrong does not count
    return {"what": what, "value": value, "target": f"{op} {target:g}", "pass": passed}


def criteria(rows: list) -> list:
    """The issue's "Done when" targets that one run can decide, from its rows."""
    timed = {(r["workload"], r["variant"]): r for r in rows if r["ms"]}

    def time_ratio(what, workload, numerator, denominator, op, target):
        a, b = timed.get((workload, numerator)), timed.get((workload, denominator))
        value = a["ms"] / b["ms"] if a and b else None
        return _criterion(what, value, op, target, [r for r in (a, b) if r])

    out = []
    for workload in ("vector_add", "fused_chain", "softmax", "layer_norm"):
        mine = timed.get((workload, "tegula"))
        out.append(_criterion(f"{workload}: tegula's share of copy bandwidth",
                              mine["floor_frac"] if mine else None, ">=", FLOOR_TARGET,
                              [mine] if mine else []))
        out.append(time_ratio(f"{workload}: tegula time / triton time", workload, "tegula", "triton",
                              "<=", 1.0))
    out.append(time_ratio("fused_chain: torch eager time / tegula time", "fused_chain", "torch", "tegula",
                          ">=", CHAIN_EAGER_SPEEDUP_TARGET))
    out.append(time_ratio("fused_chain: tegula time / torch.compile time", "fused_chain", "tegula",
                          "torch.compile", "<=", 1.0))
    out.append(time_ratio("launch: tegula host time per launch / triton's", "launch", "tegula", "triton",
                          "<", 1.0))
    # Issue 7: at most half of Triton's host time and under 5 us; faster first calls than Triton's.
    out.append(time_ratio("launch: tegula host time per launch / triton's (issue 7)", "launch", "tegula",
                          "triton", "<=", 0.5))
    mine = timed.get(("launch", "tegula"))
    out.append(_criterion("launch: tegula host time per launch in us", mine["rate"] if mine else None, "<",
                          LAUNCH_US_TARGET, [mine] if mine else []))
    for workload in ("compile_cold", "compile_warm"):
        out.append(time_ratio(f"{workload}: tegula first call / triton's", workload, "tegula", "triton",
                              "<", 1.0))
    # Issue 7 asks the same of the CPU backend: against Triton's (GPU) cold first call.
    mine, theirs = timed.get(("compile_cold_cpu", "tegula")), timed.get(("compile_cold", "triton"))
    out.append(_criterion("compile_cold_cpu: tegula first call on the CPU backend / triton's",
                          mine["ms"] / theirs["ms"] if mine and theirs else None, "<", 1.0,
                          [r for r in (mine, theirs) if r]))
    # Issue 7: the autotuner's choice within 5% of the best config timed by hand in the same run.
    tuned, best = timed.get((_bench_autotune.WORKLOAD, "tegula")), timed.get((_bench_autotune.BEST_WORKLOAD, "tegula"))
    out.append(_criterion("matmul_autotune: autotuned time / best config's time by hand",
                          tuned["ms"] / best["ms"] if tuned and best else None, "<=", _bench_autotune.TARGET,
                          [r for r in (tuned, best) if r]))
    # Issue 5: bf16 matmul at 4096^3 and 8192^3 at least 95% of cuBLAS's rate
    # (floor_frac) and no slower than Triton on the same source.
    for workload in ("matmul_bf16", "matmul_bf16_8192"):
        mine = timed.get((workload, "tegula"))
        out.append(_criterion(f"{workload}: tegula's share of cuBLAS's TFLOP/s", mine["floor_frac"] if mine else None,
                              ">=", MATMUL_CUBLAS_TARGET, [mine] if mine else []))
        out.append(time_ratio(f"{workload}: tegula time / triton time", workload, "tegula", "triton", "<=", 1.0))
    # Issue 5: flash attention no slower than Triton on the same source, and at
    # least 85% of SDPA's rate (floor_frac: rate / SDPA's).
    for workload in ("attention", "attention_causal"):
        out.append(time_ratio(f"{workload}: tegula time / triton time", workload, "tegula", "triton", "<=", 1.0))
        mine = timed.get((workload, "tegula"))
        out.append(_criterion(f"{workload}: tegula's share of SDPA's TFLOP/s", mine["floor_frac"] if mine else None,
                              ">=", ATTENTION_SDPA_TARGET, [mine] if mine else []))
    return out


def _cell(value, spec: str = "", missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def _markdown_table(header, lines) -> list:
    widths = [max(len(str(line[i])) for line in [header] + lines) for i in range(len(header))]
    fmt = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return [fmt(header), "| " + " | ".join("-" * w for w in widths) + " |"] + [fmt(line) for line in lines]


def _rate(row: dict) -> str:
    if row["rate"] is None:
        return "-"
    return f"{row['rate']:.0f} GB/s" if row["unit"] == "GB/s" else f"{row['rate']:.2f} {row['unit']}"


def format_markdown(report: dict) -> str:
    """The report as markdown: what ran where, the table, the targets."""
    versions, copy = report["versions"], report["floors"]["copy"]
    out = [f"# Tegula GPU benchmarks: {report['gpu']}", "",
           f"{report['date']}; driver {report['driver'] or 'unknown'}, CUDA {versions.get('cuda')}; "
           f"torch {versions.get('torch')}, triton {versions.get('triton') or 'not installed'}, "
           f"tegula {versions.get('tegula')}; commit {report['commit']}"
           + (" (quick run)" if report["quick"] else "")
           + (" (PARTIAL: the run stopped before its end)" if report.get("partial") else ""),
           "",
           f"Copy bandwidth {_cell(copy.get('bytes_per_s') and copy['bytes_per_s'] / 1e9, '.0f')} GB/s "
           f"(y.copy_(x), {copy.get('bytes_per_copy', 0) // 2 >> 20} MiB, read + write, median). "
           "Times: CUDA events, L2 flushed before each call, median after warm-up, variants interleaved. "
           "`of floor`: rate / copy bandwidth (matmul: / cuBLAS, attention: / SDPA); "
           "`/ tegula`: time / tegula's time.", ""]
    tegula_ms = {r["workload"]: r["ms"] for r in report["rows"] if r["variant"] == "tegula" and r["ms"]}
    lines = []
    for r in report["rows"]:
        check = r["check"] if not r["error"] else f"{r['check']}: {r['error'].splitlines()[0][:90]}"
        if r.get("note"):
            check += f" ({r['note'][:90]})"
        if r["check"] == "mismatch":
            check = "MISMATCH" + check[len("mismatch"):]
        mine = tegula_ms.get(r["workload"])
        lines.append([r["workload"], r["shape"] or "-", r["dtype"] or "-", r["variant"],
                      _cell(r["ms"], ".4f"),
                      _rate(r),
                      _cell(r["floor_frac"] and 100 * r["floor_frac"], ".0f") + ("%" if r["floor_frac"] else ""),
                      f"{r['ms'] / mine:.2f}" if r["ms"] and mine else "-",
                      check.replace("|", "/")])
    out += _markdown_table(["workload", "shape", "dtype", "variant", "ms", "rate", "of floor", "/ tegula",
                            "check"], lines)
    out += ["", "Targets (issues 4, 5 and 7, \"Done when\"):", ""]
    for c in report["criteria"]:
        verdict = {True: "PASS", False: "FAIL", None: "n/a "}[c["pass"]]
        out.append(f"- {verdict} {c['what']}: {_cell(c['value'], '.3f', 'not measured')} (target {c['target']})")
    return "\n".join(out) + "\n"


# --- the machine ------------------------------------------------------------------------


def driver_version() -> Optional[str]:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines:
            return lines[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def commit() -> str:
    """GPU_CHECK_COMMIT when set (the GPU machine's copy of the tree has no .git), else git's HEAD."""
    given = os.environ.get("GPU_CHECK_COMMIT", "").strip()
    if given:
        return given
    root = str(Path(__file__).resolve().parents[2])
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD"], capture_output=True,
                               timeout=30).returncode != 0
        return head.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def versions(torch) -> dict:
    import numpy
    try:
        import triton
        triton_version = triton.__version__
    except Exception:  # noqa: BLE001 - a broken Triton is reported as missing, the run goes on
        triton_version = None
    return {"torch": torch.__version__, "triton": triton_version, "tegula": tegula_version,
            "cuda": torch.version.cuda, "python": platform.python_version(), "numpy": numpy.__version__}


def describe_device(torch) -> dict:
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return {"index": index, "name": props.name, "arch": f"sm_{props.major}{props.minor}",
            "multiprocessors": props.multi_processor_count, "memory_bytes": props.total_memory}


# --- the run -----------------------------------------------------------------------------


def run(names, variants, quick: bool, budget_s: float, num_warps: dict,
        on_progress: Optional[Callable[[dict], None]] = None) -> dict:
    """Measures the workloads in `names` (in that order) with the selected variants.
    After each workload, `on_progress` gets the report so far (``"partial": true``),
    so that a run stopped by a time limit still leaves what it measured."""
    import torch

    device = describe_device(torch)
    report = {"schema": SCHEMA, "gpu": device["name"], "driver": driver_version(), "versions": versions(torch),
              "commit": commit(), "quick": quick,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device, "host": {"hostname": platform.node(), "platform": platform.platform()}}
    log(f"{device['name']} ({device['arch']}, {device['multiprocessors']} SMs), driver {report['driver']}; "
        f"torch {report['versions']['torch']}, triton {report['versions']['triton']}")
    min_reps, max_reps = (3, 10) if quick else (10, 100)
    launches = 1000 if quick else LAUNCHES
    report["method"] = {"timing": "CUDA events on torch's current stream", "l2_flush_bytes": L2_FLUSH_BYTES,
                        "statistic": "median", "interleaved": True, "min_reps": min_reps, "max_reps": max_reps,
                        "budget_s_per_case": budget_s, "num_warps": num_warps,
                        "launch": f"host wall time of {launches} launches per round in bursts of {LAUNCH_BURST} "
                                  f"(GPU idle at each burst's start), median of bursts"}
    timer = CudaTimer(device=DEVICE)
    copy_bytes, copy_reps = ((64 << 20), 5) if quick else (COPY_BYTES, 25)
    copy_runs = [measure_copy(torch, timer, copy_bytes, copy_reps, "before")]
    log(f"copy bandwidth: {copy_runs[0]['bytes_per_s'] / 1e9:.0f} GB/s")

    measured = []  # (Case or workload name, outcomes or rows); inputs are dropped once measured
    for name in names:
        if name == "launch":
            measured.append(("launch", measure_launch(torch, variants, launches, 2 if quick else 5,
                                                      num_warps["launch"])))
        elif name == "compile":
            measured.append(("compile", measure_compile(variants, quick)))
        else:
            try:
                warps = num_warps.get(name)  # None where the workload's configs choose them
                cases = matmul_cases(torch, quick, warps) if name == "matmul" else \
                    [BUILDERS[name](torch, quick, warps)]
            except Exception as e:  # noqa: BLE001
                log(f"{name}: could not make the inputs: {_describe_error(e)}")
                cases = []
                measured.append((name, error_rows(name, variants, _describe_error(e))))
            for case in cases:
                outcomes = measure_case(torch, timer, case, variants, budget_s, min_reps, max_reps)
                case.variants = {}
                measured.append((case, outcomes))
            del cases
            torch.cuda.empty_cache()
        if on_progress is not None:
            on_progress(_assemble(report, measured, copy_runs, launches, num_warps["launch"], final=False))
    copy_runs.append(measure_copy(torch, timer, copy_bytes, copy_reps, "after"))
    return _assemble(report, measured, copy_runs, launches, num_warps["launch"], final=True)


def _assemble(report: dict, measured: list, copy_runs: list, launches: int, launch_warps: int,
              final: bool) -> dict:
    """Fills the report's floors, rows and targets from what has been measured."""
    # The faster copy: noise only slows a copy down, and the floor should be
    # what this GPU can do.
    best = max(copy_runs, key=lambda r: r["bytes_per_s"])
    report["floors"] = {"copy": {"bytes_per_s": best["bytes_per_s"], "bytes_per_copy": best["bytes_per_copy"],
                                 "runs": copy_runs}, "cublas_flops_per_s": {}, "sdpa_flops_per_s": {}}
    rows = []
    for case, outcomes in measured:
        if case == "launch":
            rows += launch_rows(outcomes, launches, launch_warps)
        elif case == "compile":
            rows += compile_rows(outcomes)
        elif isinstance(case, str):
            rows += outcomes  # error rows of a workload without inputs
        else:
            rows += case_rows(case, outcomes, best["bytes_per_s"])
            if case.compute_bound:
                floor = case.floor or case.reference
                peer = next((o for o in outcomes if o.variant == floor and o.median_ms), None)
                report["floors"].setdefault(f"{floor}_flops_per_s", {})[case.workload] = \
                    case.flops / (peer.median_ms / 1e3) if peer else None
    report["partial"] = not final
    report["rows"] = rows
    report["criteria"] = criteria(rows)
    return report


def parse_num_warps(items) -> dict:
    """``["softmax=16", ...]`` -> ``{"softmax": 16}``; ValueError on anything else."""
    out = {}
    for item in items or ():
        name, _, value = item.partition("=")
        if name not in NUM_WARPS or not value.isdigit() or int(value) < 1:
            raise ValueError(f"--num-warps takes WORKLOAD=N with WORKLOAD one of {', '.join(NUM_WARPS)}, "
                             f"got {item!r}")
        out[name] = int(value)
    return out


def markdown_path(json_path: str) -> str:
    """bench.json -> bench.md (a name without .json gets .md added)."""
    path = Path(json_path)
    return str(path.with_suffix(".md") if path.suffix == ".json" else path.with_name(path.name + ".md"))


def write_report(report: dict, json_path: Optional[str], write_md: bool, quiet: bool = False) -> None:
    if not json_path:
        return
    Path(json_path).parent.mkdir(parents=True, exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    if not quiet:
        log(f"wrote {json_path}")
    if write_md:
        with open(markdown_path(json_path), "w") as f:
            f.write(format_markdown(report))
        log(f"wrote {markdown_path(json_path)}")


def render(json_path: str) -> int:
    """Prints the markdown of a saved GPU report and writes it beside the JSON."""
    try:
        with open(json_path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {json_path}: {e}", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        schema = report.get("schema") if isinstance(report, dict) else None
        print(f"{json_path} is not a GPU report (schema {schema!r}, expected {SCHEMA!r})", file=sys.stderr)
        return 2
    text = format_markdown(report)
    print(text, end="")
    with open(markdown_path(json_path), "w") as f:
        f.write(text)
    return 0


def exit_status(rows: list) -> int:
    """1 when a variant computed a wrong result or a Tegula variant failed; a peer
    that is missing or fails (no Triton, a torch.compile error) is only reported."""
    bad = [r for r in rows if r["check"] == "mismatch" or (r["variant"] == "tegula" and r["check"] == "error")]
    return 1 if bad else 0


def main(args) -> int:
    names = tuple(args.only) if args.only else WORKLOADS
    variants = tuple(args.variant) if args.variant else VARIANTS
    num_warps = {**NUM_WARPS, **parse_num_warps(args.num_warps)}
    budget = args.budget if args.budget is not None else (0.1 if args.quick else 1.5)
    progress = None
    if args.json:
        progress = functools.partial(write_report, json_path=args.json, write_md=False, quiet=True)
    report = run(names, variants, args.quick, budget, num_warps, progress)
    print(format_markdown(report), end="")
    write_report(report, args.json, not args.no_md)
    return exit_status(report["rows"])
