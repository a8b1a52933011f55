"""Vector addition: the smallest complete Tegula program.

Run it: `python examples/vector_add.py [--sizes 1000 98765] [--dtypes float32 int32]`.
Each case is checked against NumPy; the script prints OK when all agree.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl


@tegula.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x: np.ndarray, y: np.ndarray, block: int = 1024) -> np.ndarray:
    """x + y computed by the kernel (1-D arrays of the same shape and dtype)."""
    out = np.empty_like(x)
    n = x.size
    add_kernel[(tegula.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


def random_array(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-1000, 1000, size=n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 1000, 98765, 1 << 20])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16", "int32"])
    parser.add_argument("--block", type=int, default=1024)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    for dtype in args.dtypes:
        for n in args.sizes:
            x, y = random_array(rng, n, dtype), random_array(rng, n, dtype)
            tegula.testing.assert_close(add(x, y, args.block), x + y)
            print(f"add n={n:<9} {dtype:<8} matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
