"""A masked 2-D kernel: out[i, j] = x[i, j] * scale[j] + bias[i].

Shows 2-D tiles built with `[:, None]` / `[None, :]` broadcasting, row and
column masks for extents that are not multiples of the block, and explicit
strides (so non-contiguous views work too).
Run it: `python examples/broadcast_2d.py`; it prints OK when it matches NumPy.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl


@tegula.jit
def scale_bias_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, M, N,
                      stride_xm, stride_xn, stride_om, stride_on,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < M
    col_mask = cols < N
    mask = row_mask[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    scale = tl.load(scale_ptr + cols, mask=col_mask, other=0.0)
    bias = tl.load(bias_ptr + rows, mask=row_mask, other=0.0)
    y = x * scale[None, :] + bias[:, None]
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on, y, mask=mask)


def scale_bias(x: np.ndarray, scale: np.ndarray, bias: np.ndarray,
               block_m: int = 16, block_n: int = 32) -> np.ndarray:
    M, N = x.shape
    out = np.empty((M, N), dtype=x.dtype)
    item = x.itemsize  # NumPy strides are in bytes; kernels index in elements
    grid = lambda meta: (tegula.cdiv(M, meta["BLOCK_M"]), tegula.cdiv(N, meta["BLOCK_N"]))
    scale_bias_kernel[grid](x, scale, bias, out, M, N,
                            x.strides[0] // item, x.strides[1] // item,
                            out.strides[0] // item, out.strides[1] // item,
                            BLOCK_M=block_m, BLOCK_N=block_n)
    return out


def main() -> None:
    # No options: a stray one is a usage error rather than silently ignored.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    rng = np.random.default_rng(0)
    for M, N in [(37, 101), (1, 1), (64, 64), (100, 3)]:
        x = rng.standard_normal((M, N)).astype(np.float32)
        scale = rng.standard_normal(N).astype(np.float32)
        bias = rng.standard_normal(M).astype(np.float32)
        tegula.testing.assert_close(scale_bias(x, scale, bias), x * scale[None, :] + bias[:, None])
        print(f"scale_bias {M}x{N} matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
