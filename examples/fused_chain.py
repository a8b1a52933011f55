"""The case-study chain, fused into one Tegula kernel and checked against NumPy eager.

Run it: `python examples/fused_chain.py [--shapes 4x7 64x1000 ...]`.
Eager NumPy runs the chain op by op (scale, bias, gelu, dropout mask,
rescale, residual, RMS norm, weight), each op a pass over memory; the kernel
does it in one pass per row. The script checks both agree, prints each shape
and how many bytes the fused kernel moves, then OK.
"""

import argparse

from tegula.kernels.fused_chain import bytes_moved, eager_chain, fused_chain, make_inputs
from tegula.testing import assert_close

DEFAULT_SHAPES = ["1x1", "4x7", "33x1000", "128x1024", "300x3000"]


def parse_shape(text: str):
    rows, cols = (int(v) for v in text.lower().split("x"))
    return rows, cols


def check(M: int, N: int, seed: int = 0) -> None:
    """Raises AssertionError unless the fused kernel matches the eager chain (float32 I/O)."""
    inputs = make_inputs(M, N, seed=seed)
    assert_close(fused_chain(*inputs), eager_chain(*inputs), atol=1e-4, rtol=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="MxN, e.g. 33x1000")
    args = parser.parse_args()
    for shape in args.shapes:
        M, N = parse_shape(shape)
        check(M, N)
        print(f"fused_chain {M}x{N} float32 matches NumPy eager "
              f"(fused kernel moves {bytes_moved(M, N, 4):,} bytes)")
    print("OK")


if __name__ == "__main__":
    main()
