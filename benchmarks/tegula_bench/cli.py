"""``python benchmarks/run.py``: Tegula's example kernels against their peers and a floor.

On a machine with a CUDA GPU (PyTorch sees one and Tegula's CUDA runtime
loads), or with ``--gpu``, the kernels run on the GPU beside Triton (the same
kernel source), PyTorch eager, torch.compile and cuBLAS (``gpu_run``);
``--cpu`` forces the CPU run beside NumPy and PyTorch (``cpu_run``).
``--render`` writes the Markdown of a saved GPU report again. The table goes
to stdout, progress to stderr; ``docs/benchmarks.md`` explains the reports.
"""

from __future__ import annotations

import argparse

from . import gpu_workloads, log, render
from .torch_workloads import TORCH_WORKLOADS
from .kernels import _host

import _cli  # noqa: E402  (examples/_cli.py, on sys.path through .kernels)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python benchmarks/run.py", description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gpu", action="store_true",
                       help="run on the CUDA GPU beside Triton, torch, torch.compile and cuBLAS (the "
                            "default when a GPU is usable)")
    where.add_argument("--cpu", action="store_true", help="run on the CPU beside NumPy (and torch)")
    parser.add_argument("--json", metavar="PATH", type=_cli.output_file(makes_parents=True),
                        help="write every result to PATH (on the GPU also the markdown table to PATH "
                             "with .md)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repetitions (for tests; the numbers mean little)")
    parser.add_argument("--only", metavar="NAME", action="append",
                        choices=gpu_workloads.WORKLOADS + TORCH_WORKLOADS,
                        help="run only this workload (repeatable): " + ", ".join(gpu_workloads.WORKLOADS)
                             + " (launch: the host cost of one launch; compile: cold and warm first calls); "
                             "and, only when named here, the tegula.torch groups: " + ", ".join(TORCH_WORKLOADS)
                             + " (the training ops, attention against SDPA, a train_gpt.py step)")
    parser.add_argument("--plot", metavar="DIR", type=_cli.output_dir,
                        help="also write one PNG per workload into DIR: time and share of floor against size, "
                             "each variant a line (needs matplotlib)")
    parser.add_argument("--budget", type=_cli.number(0), metavar="S",
                        help="seconds of timing per case (default 4 on the CPU, 1.5 on the GPU; 0.2 "
                             "and 0.1 with --quick)")
    gpu = parser.add_argument_group("GPU runs")
    gpu.add_argument("--variant", metavar="NAME", action="append", choices=gpu_workloads.VARIANTS,
                     help="run only this variant (repeatable): " + ", ".join(gpu_workloads.VARIANTS))
    gpu.add_argument("--num-warps", metavar="WORKLOAD=N", action="append",
                     help="warps per program for Tegula and Triton in one workload (repeatable); "
                          "defaults: " + ", ".join(f"{k}={v or 'by head dim'}" for k, v in gpu_workloads.NUM_WARPS.items()))
    gpu.add_argument("--no-md", action="store_true", help="with --json, do not write the .md beside it")
    gpu.add_argument("--render", metavar="JSON", type=_cli.json_file,
                     help="print the table of a saved GPU report and write it beside it as .md; "
                          "measures nothing")
    args = parser.parse_args(argv)
    try:
        gpu_workloads.parse_num_warps(args.num_warps)
    except ValueError as e:
        parser.error(str(e))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.plot:
        from .plots import require_matplotlib
        try:
            require_matplotlib()
        except ImportError as e:
            log(f"--plot: {e}")
            return 2
    if args.render:
        return render.render(args.render)
    if not args.cpu:
        usable, why = _host.cuda_usable()  # a GPU both torch and Tegula's runtime can use
        if args.gpu and not usable:
            log(f"--gpu: no usable CUDA GPU: {why}")
            return 2
        if usable:
            from . import gpu_run
            return gpu_run.main(args)
        log(f"running on the CPU: no usable CUDA GPU ({why})")
    from . import cpu_run
    return cpu_run.main(args)
