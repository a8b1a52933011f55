"""Row softmax with a Tegula kernel, checked against NumPy.

Run it: `python examples/softmax.py [--shapes 4x7 100x1000 ...] [--dtypes float32 float16]`.
Rows of any length work (the tile is the next power of two, the tail masked
with -inf); the script prints each shape it checked and OK when all agree.
"""

import argparse

import numpy as np

from tegula.kernels.softmax import make_inputs, softmax, softmax_reference
from tegula.testing import assert_close

DEFAULT_SHAPES = ["1x1", "4x7", "33x1000", "128x1024", "300x3000"]
TOLERANCES = {"float32": (1e-6, 1e-5), "float16": (1e-3, 1e-2)}


def parse_shape(text: str):
    rows, cols = (int(v) for v in text.lower().split("x"))
    return rows, cols


def check(M: int, N: int, dtype: str = "float32", seed: int = 0) -> None:
    """Raises AssertionError unless the kernel matches NumPy on random rows of shape [M, N]."""
    x = make_inputs(M, N, dtype, seed)
    y = softmax(x)
    atol, rtol = TOLERANCES[dtype]
    assert_close(y, softmax_reference(x), atol=atol, rtol=rtol)
    assert_close(y.astype(np.float32).sum(axis=1), np.ones(M, dtype=np.float32), atol=atol * N, rtol=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxN, e.g. 33x1000")
    parser.add_argument("--dtypes", nargs="+", default=list(TOLERANCES), choices=list(TOLERANCES))
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N = parse_shape(shape)
            check(M, N, dtype)
            print(f"softmax {M}x{N} {dtype:<8} matches NumPy (rows sum to 1)")
    print("OK")


if __name__ == "__main__":
    main()
