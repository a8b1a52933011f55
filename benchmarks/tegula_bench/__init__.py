"""Tegula's benchmark application: the example kernels against their peers and a floor.

Run it as one command, ``python benchmarks/run.py`` (``--help`` lists the
options; ``docs/benchmarks.md`` explains the reports). The files, by concept:

- ``cli``: the command's options; chooses the GPU run, the CPU run or ``--render``.
- ``kernels``: the kernels timed, which are the example scripts of examples/.
- ``cpu_workloads``, ``gpu_workloads``: what each workload computes, at which
  sizes, on which inputs, and how its output is checked.
- ``peers``: what each workload is measured against (NumPy, PyTorch eager,
  torch.compile, Triton through ``triton_twin``, cuBLAS, SDPA).
- ``cpu_measure``, ``gpu_measure``, ``launch``: timing (host clock or CUDA
  events) and the floors; ``launch`` times the host cost of one launch (the
  whole path and the compiled kernel's bare launch), ``compile_probe`` first
  calls in fresh processes, ``autotuned_matmul`` the autotuner against the
  best config by hand.
- ``outcome``: what one variant measured.
- ``cpu_run``, ``gpu_run``: one run from the machine's description to the report.
- ``cpu_report``, ``gpu_report``, ``targets``, ``render``: rows of the JSON
  reports, the issues' targets decided from them, the text and Markdown tables.
- ``machine``: the CPU, its cache and BLAS; the GPU, its driver and versions.
- ``torch_workloads``, ``torch_run``: the tegula.torch groups (``--only torch_ops``,
  ``torch_attention``, ``train_gpt``): cases for either device, and their CPU run.
"""

import os
import sys

# OpenBLAS's worker threads spin for a while after each call (2^28 cycles
# by default) before they sleep. Timed in alternation, that spinning takes a
# core from the variant timed next: on 2 cores Tegula's 1024^3 matmul ran at
# half its speed right after NumPy's. With 2^4 cycles they sleep at once, as
# Tegula's workers do, so each library pays its own wake-up (NumPy's 512^3
# matmul is slower for it, its larger ones are not: docs/benchmarks.md).
# Set before NumPy loads OpenBLAS (run.py imports this package first); a
# value the user set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# The same for torch's OpenMP threads, which spin after each parallel region
# by default: on 2 cores Tegula's 1024^3 float32 matmul measured 0.66x NumPy's
# rate in alternation with torch and 0.77x with them passive. Read when
# torch loads its OpenMP runtime, so set here, before it is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def log(message: str) -> None:
    """Progress, on stderr: stdout carries the table."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)
