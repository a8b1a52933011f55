"""The GPU workloads: each example kernel at its benchmark size, on CUDA tensors,
with the variants it is measured as (``peers``) and how their outputs are checked.

``matmul_autotune`` (issue 7) is the matmul kernel under ``@tegula.autotune``
over ``autotuned_matmul.CONFIGS``, tuned while it is prepared; beside it, row
``matmul_autotune_best`` holds every one of those configs timed by hand in
the same run, the fastest one timed again with the others (both rows'
``note`` names the config). ``launch`` and ``compile`` measure the host, not
the GPU: ``launch`` and ``compile_probe``.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional

from tegula import testing

from . import autotuned_matmul
from .kernels import (attention, attention_tma, fused_chain, layer_norm, matmul, matmul_epilogue, matmul_fp8, matmul_persistent,
                      matmul_tma, softmax, vector_add)
from .peers import eager_variants, kernel_variants, sdpa_variant

# In the order they run: the memory-bound targets first, then the compute-bound ones.
WORKLOADS = ("vector_add", "fused_chain", "softmax", "layer_norm", "launch", "compile", "matmul", "matmul_tma",
             "matmul_fp8", "matmul_autotune", "matmul_epilogue", "matmul_persistent", "attention", "attention_causal", "attention_tma")
# "raw" is the launch workload's alone: the compiled kernel's bare launch (launch.py).
VARIANTS = ("tegula", "tegula.compile", "raw", "triton", "torch", "torch.compile", "cublas", "sdpa")
# Warps per program, the same for Tegula and Triton in each workload: one row
# of 4-8K elements per program wants 8 warps, a 1024-element block 4, a
# 128x128 matmul tile (examples/matmul.py DEFAULT_BLOCKS) two warpgroups: 8.
NUM_WARPS = {"vector_add": 4, "fused_chain": 4, "softmax": 8, "layer_norm": 8, "matmul": 8, "launch": 4,
             "attention": 8, "attention_causal": 8, "matmul_epilogue": 8, "matmul_persistent": 8, "matmul_tma": 8, "matmul_fp8": 8,
             "attention_tma": None}  # None: the example's warps for each head dim
# Where the inputs live. Only a dry run of this module's logic on a machine
# without a GPU (torch's CUDA calls stubbed) sets it to "cpu".
DEVICE = "cuda"
# Flash attention (issue 5): 128 query rows by 64 keys per step, 8 warps (two
# warpgroups of 64 rows), 3 stages, for Tegula and Triton alike.
ATTENTION_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 64}
ATTENTION_STAGES = 3
# The fused-epilogue and persistent matmuls: the plain matmul's pipeline depth
# (examples/matmul.py DEFAULT_BLOCKS are tuned for 3 stages).
MATMUL_STAGES = 3


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
    atol_per_rms: bool = False  # atol in units of each output's rms (gpu_measure.compare)
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
    # Outputs that are tuples (an op's gradients) compared element by element;
    # otherwise only the first element is.
    compare_all: bool = False
    # A training step: rows in tokens/s (this many tokens per call), their
    # share of the reference's rate in ``floor_frac``.
    tokens: Optional[int] = None
    # A factory like the variants' whose output, not the reference's, the
    # variants are checked against (the reference itself is then only timed):
    # bf16 ops against torch computing in float32 from the same inputs, where
    # eager bf16 rounds every intermediate and is the least exact of the row.
    check_with: Optional[Callable] = None

    def row_of(self, variant: str) -> tuple:
        return self.rows.get(variant, (self.workload, variant))


def _generator(torch, seed: int):
    return torch.Generator(device=DEVICE).manual_seed(seed)


def vector_add_case(torch, quick: bool, num_warps: int) -> Case:
    n = (1 << 20) + 3 if quick else 1 << 28
    g = _generator(torch, 0)
    x = torch.randn(n, device=DEVICE, generator=g)
    y = torch.randn(n, device=DEVICE, generator=g)

    def run(m):
        out = torch.empty_like(x)
        return lambda: m.add(x, y, out, num_warps=num_warps)

    def eager(x, y):
        return x + y

    return Case("vector_add", f"n={n}", "float32", vector_add.bytes_moved(n, 4), vector_add.flops(n),
                num_warps, {**kernel_variants(vector_add, run), **eager_variants(torch, eager, x, y)},
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
                num_warps, {**kernel_variants(fused_chain, run),
                            **eager_variants(torch, fused_chain.eager_chain_torch,
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
                num_warps, {**kernel_variants(softmax, run), **eager_variants(torch, eager, x)},
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
                {**kernel_variants(layer_norm, run), **eager_variants(torch, eager, x, weight, bias)},
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
            {**kernel_variants(matmul, run), "cublas": lambda a=a, b=b: functools.partial(torch.matmul, a, b)},
            reference="cublas", compute_bound=True, tolerance=(atol, rtol)))
    return cases


def matmul_tma_cases(torch, quick: bool, num_warps: int) -> list:
    """bf16 and fp16 at 4096^3 and 8192^3 written with tensor descriptors (examples/matmul_tma.py;
    workloads ``matmul_tma_bf16``, ``matmul_tma_bf16_8192``, ``matmul_tma_fp16`` and
    ``matmul_tma_fp16_8192``): on Hopper both Tegula and Triton compiling the same source copy
    the blocks with the TMA (issue 18)."""
    size, large = (320, 448) if quick else (4096, 8192)
    cases = []
    for (n, suffix), (short, dtype) in itertools.product(((size, ""), (large, "_8192")),
                                                         (("bf16", torch.bfloat16), ("fp16", torch.float16))):
        g = _generator(torch, 7)
        a = torch.randn(n, n, device=DEVICE, generator=g).to(dtype)
        b = torch.randn(n, n, device=DEVICE, generator=g).to(dtype)

        def run(m, a=a, b=b, n=n):
            out = torch.empty(n, n, device=DEVICE, dtype=a.dtype)
            return lambda: m.matmul_tma(a, b, out, num_warps=num_warps, num_stages=matmul_tma.DEFAULT_STAGES)

        cases.append(Case(
            f"matmul_tma_{short}{suffix}", f"{n}x{n}x{n}", str(dtype).removeprefix("torch."),
            matmul_tma.bytes_moved(n, n, n, 2),
            matmul_tma.flops(n, n, n), num_warps,
            {**kernel_variants(matmul_tma, run), "cublas": lambda a=a, b=b: functools.partial(torch.matmul, a, b)},
            reference="cublas", compute_bound=True, tolerance=(n ** 0.5 / 64, 1.6e-2)))
    return cases


def matmul_fp8_cases(torch, quick: bool, num_warps: int) -> list:
    """e4m3 at 4096^3 and 8192^3 with per-tensor scales, bf16 out (examples/matmul_fp8.py;
    workloads ``matmul_fp8`` and ``matmul_fp8_8192``), against ``torch._scaled_mm``
    (cuBLASLt's fp8 matmul, the ``cublas`` row) and Triton compiling the same source
    (issue 18)."""
    size, large = (320, 448) if quick else (4096, 8192)
    cases = []
    for n, suffix in ((size, ""), (large, "_8192")):
        g = _generator(torch, 11)
        a = torch.randn(n, n, device=DEVICE, generator=g).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=DEVICE, generator=g).to(torch.float8_e4m3fn)  # [N, K]
        scale_a = torch.tensor([0.5], device=DEVICE)
        scale_b = torch.tensor([0.25], device=DEVICE)

        def run(m, a=a, b=b, n=n, scale_a=scale_a, scale_b=scale_b):
            out = torch.empty(n, n, device=DEVICE, dtype=torch.bfloat16)
            return lambda: m.matmul_fp8(a, b, scale_a, scale_b, out, num_warps=num_warps)

        def scaled_mm(a=a, b=b, scale_a=scale_a, scale_b=scale_b):
            return functools.partial(torch._scaled_mm, a, b.t(), scale_a=scale_a.reshape(()),
                                     scale_b=scale_b.reshape(()), out_dtype=torch.bfloat16)

        cases.append(Case(
            f"matmul_fp8{suffix}", f"{n}x{n}x{n}", "float8_e4m3fn", 2 * n * n + 2 * n * n,
            matmul_fp8.flops(n, n, n), num_warps, {**kernel_variants(matmul_fp8, run), "cublas": scaled_mm},
            reference="cublas", compute_bound=True, tolerance=(n ** 0.5 / 64 * 0.125 * 4, 1.6e-2)))
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
        "tegula": lambda: autotuned_matmul.tuned_variant(a, b, out(), warmup=warmup, rep=rep),
        "tegula.best": lambda: autotuned_matmul.best_by_hand(a, b, out(), by_hand),
        "cublas": lambda: functools.partial(torch.matmul, a, b)}
    return Case(autotuned_matmul.WORKLOAD, f"{size}x{size}x{size}", "bfloat16",
                matmul.bytes_moved(size, size, size, 2), matmul.flops(size, size, size), None, variants,
                reference="cublas", compute_bound=True, tolerance=(size ** 0.5 / 64, 1.6e-2),
                rows={"tegula.best": (autotuned_matmul.BEST_WORKLOAD, "tegula")})


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
                num_warps, {**kernel_variants(matmul_epilogue, run),
                            **eager_variants(torch, eager, a, b, bias, residual),
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
                num_warps, {**kernel_variants(matmul_persistent, run),
                            "cublas": lambda: functools.partial(torch.matmul, a, b)},
                reference="cublas", compute_bound=True, tolerance=(size ** 0.5 / 64, 1.6e-2))



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
                {**kernel_variants(attention, run), "sdpa": lambda: sdpa_variant(torch, q, k, v, causal)},
                reference="sdpa", compute_bound=True, tolerance=(1e-2, 1.6e-2))


def attention_tma_cases(torch, quick: bool, num_warps: int) -> list:
    """Flash attention forward written with tensor descriptors (examples/flash_attention_tma.py), bf16
    B 4, H 32, S 4096, D 128 and D 64, causal and not (workloads ``attention_tma``,
    ``attention_tma_causal``, ``attention_tma_d64``, ``attention_tma_d64_causal``): on Hopper Tegula and
    Triton compiling the same source copy K and V with the TMA (issue 18); the floor is SDPA's rate. Blocks,
    stages and warps are the example's defaults for each head dim (``default_config``), for both compilers."""
    cases = []
    for D, causal in itertools.product((128, 64), (False, True)):
        B, H, S = (1, 4, 320) if quick else (4, 32, 4096)
        g = _generator(torch, 13)
        q, k, v = (torch.randn(B, H, S, D, device=DEVICE, generator=g).to(torch.bfloat16) for _ in range(3))

        def run(m, q=q, k=k, v=v, causal=causal):
            out = torch.empty_like(q)
            return lambda: m.attention(q, k, v, causal=causal, out=out, num_warps=num_warps)

        name = "attention_tma" + ("" if D == 128 else f"_d{D}") + ("_causal" if causal else "")
        cases.append(Case(name, f"{B}x{H}x{S}x{D}", "bfloat16", attention_tma.bytes_moved(B, H, S, D, 2),
                          attention_tma.flops(B, H, S, D, causal),
                          num_warps or attention_tma.default_warps(attention_tma.default_config(D)[0]["BLOCK_M"]),
                          {**kernel_variants(attention_tma, run),
                           "sdpa": lambda q=q, k=k, v=v, causal=causal: sdpa_variant(torch, q, k, v, causal)},
                          reference="sdpa", compute_bound=True, tolerance=(1e-2, 1.6e-2)))
    return cases


# Workloads measured as several cases (sizes, dtypes), each a row of its own.
CASE_LISTS = {"matmul": matmul_cases, "matmul_tma": matmul_tma_cases, "matmul_fp8": matmul_fp8_cases,
              "attention_tma": attention_tma_cases}


BUILDERS = {"vector_add": vector_add_case, "fused_chain": fused_chain_case, "softmax": softmax_case,
            "layer_norm": layer_norm_case, "matmul_autotune": matmul_autotune_case,
            "matmul_epilogue": matmul_epilogue_case, "matmul_persistent": matmul_persistent_case,
            "attention": functools.partial(attention_case, causal=False),
            "attention_causal": functools.partial(attention_case, causal=True)}


def parse_num_warps(items) -> dict:
    """``["softmax=16", ...]`` -> ``{"softmax": 16}``; ValueError on anything else."""
    out = {}
    for item in items or ():
        name, _, value = item.partition("=")
        # N as the compiler takes num_warps: a power of two up to 32.
        if name not in NUM_WARPS or not value.isdigit() or int(value) not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"--num-warps takes WORKLOAD=N with WORKLOAD one of {', '.join(NUM_WARPS)}, "
                             f"got {item!r} (N: a power of two from 1 to 32)")
        out[name] = int(value)
    return out

