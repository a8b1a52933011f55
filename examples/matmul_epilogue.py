"""Matmul with a fused epilogue, act(A @ B + bias) + residual, checked against float64.

Run it: `python examples/matmul_epilogue.py [--shapes 64x64x64 100x77x50 ...] [--dtypes float32 float16 bfloat16]
[--activations none relu gelu_tanh silu]`. Shapes are MxNxK; sizes that are not
multiples of the blocks exercise the masked K loop and the masked epilogue.
Each case runs with the bias and the residual, and once without either.
Prints each case it checked and OK.
"""

import argparse

import numpy as np

from tegula.kernels.matmul_epilogue import ACTIVATIONS, make_inputs, matmul_epilogue, matmul_epilogue_reference

DEFAULT_SHAPES = ["1x1x1", "64x64x64", "100x77x50", "130x129x70"]
# (atol, rtol) for C of unit-size entries: fp32 sums, then one rounding to the output type.
TOLERANCES = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2.0 ** -10), "bfloat16": (1.6e-2, 2.0 ** -7)}


def parse_shape(text: str):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def check(M: int, N: int, K: int, dtype: str = "float32", activation: str = "gelu_tanh", fused: bool = True,
          seed: int = 0, **blocks) -> None:
    """Raises AssertionError unless the kernel matches the float64 reference; `fused`
    passes the bias and the residual, else neither."""
    a, b, bias, residual = make_inputs(M, N, K, numpy_dtype(dtype), seed)
    if not fused:
        bias = residual = None
    c = matmul_epilogue(a, b, bias, residual, activation, **blocks)
    wide = [None if x is None else x.astype(np.float64) for x in (a, b, bias, residual)]
    want = matmul_epilogue_reference(*wide, activation=activation)
    atol, rtol = TOLERANCES[dtype]
    np.testing.assert_allclose(c.astype(np.float64), want, atol=atol, rtol=rtol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxNxK, e.g. 100x77x50")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=list(TOLERANCES))
    parser.add_argument("--activations", nargs="+", default=list(ACTIVATIONS), choices=list(ACTIVATIONS))
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            M, N, K = parse_shape(shape)
            for activation in args.activations:
                for fused in (True, False):
                    check(M, N, K, dtype, activation, fused)
                    extras = "+ bias + residual" if fused else "alone"
                    print(f"matmul_epilogue {M}x{N}x{K} {dtype:<8} {activation:<9} {extras} "
                          "matches the float64 reference")
    print("OK")


if __name__ == "__main__":
    main()
