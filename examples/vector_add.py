"""Vector addition ``out = x + y``: the smallest complete Tegula program.

Each program handles one block of ``BLOCK`` consecutive elements; the last
block is masked so that sizes need not be multiples of ``BLOCK``. The kernel
reads two arrays and writes one, so its floor is ``3 * n * itemsize`` bytes
over the machine's copy bandwidth (the benchmark's vector_add row).

Run it: `python examples/vector_add.py [--sizes 1000 98765] [--dtypes float32 int32]`.
Each case is checked against NumPy; the script prints OK when all agree.
"""

import argparse

import numpy as np

import tegula
import tegula.language as tl
from tegula._errors import coded

import _cli  # the scripts' flag checks
import _host  # array helpers shared by the examples (NumPy or torch)

BLOCK = 1024


@tegula.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y, out=None, block: int = BLOCK, num_warps: int = None):
    """``x + y`` by the kernel; x, y (and out) are contiguous 1-D arrays of one dtype,
    NumPy arrays or torch tensors (CUDA tensors run on the GPU)."""
    if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype or x.ndim != 1:
        raise coded(ValueError, "E0713", f"add takes two 1-D arrays of one shape and dtype, got "
                                         f"{tuple(x.shape)} {x.dtype} and {tuple(y.shape)} {y.dtype}")
    if out is None:
        out = _host.empty_like(x)
    n = _host.numel(x)
    add_kernel[(tegula.cdiv(n, block),)](x, y, out, n, BLOCK=block, **_host.launch_options(num_warps))
    return out


def add_reference(x, y, out=None):
    """Eager: one ``np.add`` for NumPy arrays, one ``torch.add`` for torch tensors."""
    if _host.is_torch(x):
        import torch
        return torch.add(x, y, out=out)
    return np.add(x, y, out=out)


def make_inputs(n: int, dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n, dtype=np.float32).astype(dtype),
            rng.standard_normal(n, dtype=np.float32).astype(dtype))


def bytes_moved(n: int, itemsize: int) -> int:
    """Two reads and one write per element."""
    return 3 * n * itemsize


def eager_bytes_moved(n: int, itemsize: int) -> int:
    """NumPy's np.add moves exactly what the kernel moves."""
    return bytes_moved(n, itemsize)


def flops(n: int) -> int:
    return n


def random_array(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-1000, 1000, size=n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_cli.integer(0), nargs="+", default=[1, 1000, 98765, 1 << 20])
    # bool is left out: NumPy's x + y of bools is a logical or.
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16", "int32"],
                        choices=["float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                 "uint8", "uint16", "uint32", "uint64"])
    # tl.arange needs a power of two, at most TRITON_MAX_TENSOR_NUMEL long.
    parser.add_argument("--block", type=_cli.integer(1, power_of_two=True, maximum=tl.TRITON_MAX_TENSOR_NUMEL),
                        default=BLOCK)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    for dtype in args.dtypes:
        for n in args.sizes:
            x, y = random_array(rng, n, dtype), random_array(rng, n, dtype)
            tegula.testing.assert_close(add(x, y, block=args.block), x + y)
            print(f"add n={n:<9} {dtype:<8} matches NumPy")
    print("OK")


if __name__ == "__main__":
    main()
