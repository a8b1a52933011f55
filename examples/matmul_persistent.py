"""Persistent matmul (a fixed grid of programs looping over tiles), checked against float64.

Run it: `python examples/matmul_persistent.py [--shapes 64x64x64 100x77x50 ...]
[--dtypes float32 float16 bfloat16] [--programs 1 4 ...]`. Shapes are MxNxK;
each shape runs with every program count (on the CPU; a GPU defaults to one
program per SM), so programs run one tile, several, or an uneven share.
Prints each case it checked and OK.
"""

import argparse

import numpy as np

from tegula.kernels.matmul_persistent import make_inputs, matmul_persistent

DEFAULT_SHAPES = ["1x1x1", "64x64x64", "100x77x50", "300x260x70"]
TOLERANCES = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2.0 ** -10), "bfloat16": (1.6e-2, 2.0 ** -7)}


def parse_shape(text: str):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def check(M: int, N: int, K: int, dtype: str = "float32", num_programs: int = None, seed: int = 0,
          **blocks) -> None:
    """Raises AssertionError unless the kernel's A @ B matches float64 for random A, B
    (B scaled by 1/sqrt(K), so C has unit-size entries)."""
    a, b = make_inputs(M, N, K, numpy_dtype(dtype), seed)
    b = (b.astype(np.float32) / np.float32(max(K, 1) ** 0.5)).astype(a.dtype)
    c = matmul_persistent(a, b, num_programs=num_programs, **blocks)
    atol, rtol = TOLERANCES[dtype]
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                               atol=atol, rtol=rtol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, e.g. 100x77x50")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=list(TOLERANCES))
    parser.add_argument("--programs", nargs="+", type=int, default=[1, 3], help="programs in the grid")
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = parse_shape(shape)
            for programs in args.programs:
                check(M, N, K, dtype, programs, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)
                print(f"matmul_persistent {M}x{N}x{K} {dtype:<8} {programs} programs "
                      "matches the float64 reference")
    print("OK")


if __name__ == "__main__":
    main()
