"""``out = alpha * x + y`` over 1-D arrays: the launch benchmark's kernel.

Its six arguments (three arrays, a float, an int and the block size) are a
typical small kernel's argument list, which is what the host cost of a
launch depends on; the work itself (one block) is negligible.

Run it: `python examples/axpy.py [--sizes 1 1000 98765] [--alpha 3.0]`.
Each case is checked against NumPy; the script prints OK when all agree.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

BLOCK = 1024


@tegula.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, alpha * x + y, mask=in_bounds)


def axpy(x, y, out, alpha: float, block: int = BLOCK, num_warps: int = None):
    """``alpha * x + y`` into ``out`` (1-D arrays of one shape and dtype, NumPy or torch)."""
    n = _host.numel(x)
    axpy_kernel[(tegula.cdiv(n, block),)](x, y, out, alpha, n, BLOCK=block, **_host.launch_options(num_warps))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_cli.integer(0), nargs="+", default=[1, 1000, 98765])
    parser.add_argument("--alpha", type=float, default=3.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for n in args.sizes:
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        out = axpy(x, y, np.empty_like(x), args.alpha)
        tegula.testing.assert_close(out, np.float32(args.alpha) * x + y, atol=1e-6, rtol=1e-6)
        print(f"axpy n={n:<9} alpha={args.alpha:g} matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
