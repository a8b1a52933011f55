"""``tegula profile FILE.py::KERNEL --grid G NAME=VALUE ...``: ``kernel.report``
from the command line (``python -m tegula.profile`` is the same).

Unlike ``tegula compile``, which parses the file and runs no Python, this
imports FILE.py (its top-level code runs, as ``import`` would run it), makes
the arguments, launches the kernel a few times and prints the report
(docs/profiling.md). Arguments are ``NAME=VALUE``, one per kernel parameter
without a default, constexprs included:

    float32[4096]      a random array of that dtype and shape (normal floats,
                       integers in [0, 10), booleans)
    4096, 0.5, True    a number
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np

_ARRAY = re.compile(r"^(\w+)\[([\d, ]+)\]$")

# The signature spellings of `tegula compile` (and Triton's), as NumPy names.
_SHORT_DTYPES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
                 "u16": "uint16", "u32": "uint32", "u64": "uint64", "fp16": "float16", "bf16": "bfloat16",
                 "fp32": "float32", "fp64": "float64"}


def _value(text: str, device: str, rng):
    match = _ARRAY.match(text)
    if match:
        dtype, shape = match.group(1), tuple(int(d) for d in match.group(2).split(",") if d.strip())
        dtype = _SHORT_DTYPES.get(dtype, dtype)
        try:
            np_dtype = np.dtype("bool" if dtype == "bool" else dtype)
        except TypeError:
            np_dtype = None
        if dtype == "bfloat16" or np_dtype is None:
            import ml_dtypes
            if not isinstance(getattr(ml_dtypes, dtype, None), type):
                raise SystemExit(f"tegula profile: cannot read the value '{text}': '{dtype}' is not a dtype "
                                 f"(float32 or fp32, float16 or fp16, bfloat16 or bf16, int32 or i32, ...)")
            np_dtype = np.dtype(getattr(ml_dtypes, dtype))
        if np_dtype.kind == "b":
            array = rng.random(shape) < 0.5
        elif np_dtype.kind in "iu":
            array = rng.integers(0, 10, shape).astype(np_dtype)
        else:
            array = rng.standard_normal(shape, dtype=np.float32).astype(np_dtype)
        if device == "cuda":
            import torch
            if dtype == "bfloat16":
                return torch.from_numpy(array.astype(np.float32)).to("cuda", torch.bfloat16)
            return torch.from_numpy(array).to("cuda")
        return array
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise SystemExit(f"tegula profile: cannot read the value '{text}': expected DTYPE[SHAPE] (float32[4096]), "
                     f"a number or True/False")


def _kernel(target: str):
    path, _, name = target.partition("::")
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"tegula profile: no file '{path}'")
    sys.path.insert(0, str(file.resolve().parent))
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from .jit import JITFunction
    kernels = {k: v for k, v in vars(module).items() if isinstance(v, JITFunction)}
    if not name:
        if len(kernels) != 1:
            raise SystemExit(f"tegula profile: {path} has {len(kernels)} @jit functions "
                             f"({', '.join(sorted(kernels))}): name one, FILE.py::KERNEL")
        name = next(iter(kernels))
    if name not in kernels:
        raise SystemExit(f"tegula profile: no @jit function '{name}' in {path} "
                         f"(it has: {', '.join(sorted(kernels)) or 'none'})")
    return kernels[name]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tegula profile", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="FILE.py[::KERNEL]")
    parser.add_argument("arguments", nargs="*", metavar="NAME=VALUE")
    parser.add_argument("--grid", required=True,
                        help="the grid: up to three comma-separated sizes, which may use the integer arguments "
                             "and cdiv (--grid 'cdiv(n, 1024)')")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the arrays live")
    parser.add_argument("--plot", metavar="PNG", help="also draw the roofline into this file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_intermixed_args(argv)

    import tegula
    kernel = _kernel(args.target)
    rng = np.random.default_rng(args.seed)
    given = {}
    for item in args.arguments:
        name, eq, text = item.partition("=")
        if not eq or not name:
            raise SystemExit(f"tegula profile: expected NAME=VALUE, got '{item}'")
        given[name] = _value(text, args.device, rng)
    unknown = set(given) - set(kernel.arg_names)
    if unknown:
        raise SystemExit(f"tegula profile: {kernel.__name__} has no parameter {', '.join(sorted(unknown))} "
                         f"(its parameters: {', '.join(kernel.arg_names)})")
    namespace = {"cdiv": tegula.cdiv, **{k: v for k, v in given.items() if isinstance(v, int)}}
    try:
        grid = eval(f"({args.grid},)", {"__builtins__": {}}, namespace)  # noqa: S307 - the user's own expression
    except Exception as e:  # noqa: BLE001
        raise SystemExit(f"tegula profile: cannot read --grid '{args.grid}': {e}") from None
    if not all(isinstance(g, int) and not isinstance(g, bool) for g in grid):
        raise SystemExit(f"tegula profile: --grid '{args.grid}' must give integers, got {grid} "
                         f"(use // or cdiv for divisions)")
    try:
        report = kernel.report(grid=grid, plot=args.plot, **given)
    except (TypeError, ValueError) as e:
        if getattr(e, "code", None) is None:  # not one of Tegula's coded launch errors: a bug to see whole
            raise
        raise SystemExit(f"tegula profile: {e}") from None
    print(report)
    if args.plot:
        print(f"roofline: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
