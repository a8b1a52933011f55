"""Tiled matmul with tl.dot, checked against NumPy's BLAS.

Run it: `python examples/matmul.py [--shapes 64x64x64 100x70x90 ...] [--dtypes float32 float16]`.
Shapes are MxNxK; sizes that are not multiples of the blocks exercise the
masked K loop and the masked store. Also checks a transposed operand (passed
through its strides, not copied). Prints each case it checked and OK.
"""

import argparse

import numpy as np

from tegula.kernels.matmul import make_inputs, matmul, matmul_reference
from tegula.testing import assert_close

DEFAULT_SHAPES = ["1x1x1", "64x64x64", "100x70x90", "129x65x300", "256x256x256"]


def parse_shape(text: str):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def tolerance(dtype: str, K: int):
    # The kernel and BLAS add the K products in different orders; the error
    # grows like sqrt(K) times the size of one product (unit normals here).
    atol = (1e-5 if dtype == "float32" else 1e-3) * 8 * max(K, 1) ** 0.5
    return atol, (1e-4 if dtype == "float32" else 1e-2)


def check(M: int, N: int, K: int, dtype: str = "float32", transpose_b: bool = False,
          seed: int = 0, **blocks) -> None:
    """Raises AssertionError unless the kernel's A @ B matches NumPy for random A, B."""
    a, b = make_inputs(M, N, K, dtype, seed)
    if transpose_b:
        b = np.ascontiguousarray(b.T).T  # same values, column-major strides
    c = matmul(a, b, out_dtype=np.float32, **blocks)
    atol, rtol = tolerance(dtype, K)
    assert_close(c, matmul_reference(a, b, np.float32), atol=atol, rtol=rtol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, e.g. 100x70x90")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"],
                        choices=["float32", "float16"])
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = parse_shape(shape)
            check(M, N, K, dtype)
            print(f"matmul {M}x{N}x{K} {dtype:<8} matches NumPy (fp32 accumulate)")
        M, N, K = parse_shape(args.shapes[-1])
        check(M, N, K, dtype, transpose_b=True)
        print(f"matmul {M}x{N}x{K} {dtype:<8} with B transposed (strides) matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
