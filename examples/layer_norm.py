"""Layer norm forward with a Tegula kernel, checked against NumPy.

Run it: `python examples/layer_norm.py [--shapes 4x7 100x1000 ...] [--dtypes float32 float16]`.
Checks y, and the per-row mean and rstd the kernel stores for a backward pass;
prints each shape it checked and OK when all agree.
"""

import argparse

from tegula.kernels.layer_norm import layer_norm, layer_norm_reference, make_inputs
from tegula.testing import assert_close

DEFAULT_SHAPES = ["1x1", "4x7", "33x1000", "128x1024", "300x3000"]
TOLERANCES = {"float32": (1e-5, 1e-4), "float16": (1e-2, 1e-2)}


def parse_shape(text: str):
    rows, cols = (int(v) for v in text.lower().split("x"))
    return rows, cols


def check(M: int, N: int, dtype: str = "float32", seed: int = 0) -> None:
    """Raises AssertionError unless y, mean and rstd match NumPy for random x of shape [M, N]."""
    x, weight, bias = make_inputs(M, N, dtype, seed)
    y, mean, rstd = layer_norm(x, weight, bias)
    want_y, want_mean, want_rstd = layer_norm_reference(x, weight, bias)
    atol, rtol = TOLERANCES[dtype]
    assert_close(y, want_y, atol=atol, rtol=rtol)
    assert_close(mean, want_mean, atol=1e-5, rtol=1e-4)
    # A one-element row has zero variance, so rstd = 1/sqrt(eps) is large: compare relatively.
    assert_close(rstd, want_rstd, atol=1e-5, rtol=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxN, e.g. 33x1000")
    parser.add_argument("--dtypes", nargs="+", default=list(TOLERANCES), choices=list(TOLERANCES))
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N = parse_shape(shape)
            check(M, N, dtype)
            print(f"layer_norm {M}x{N} {dtype:<8} y, mean and rstd match NumPy")
    print("OK")


if __name__ == "__main__":
    main()
