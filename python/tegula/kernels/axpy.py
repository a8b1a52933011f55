"""``out = alpha * x + y`` over 1-D arrays: the launch benchmark's kernel.

Its six arguments (three arrays, a float, an int and the block size) are a
typical small kernel's argument list, which is what the host cost of a
launch depends on; the work itself (one block) is negligible.
"""

import tegula
import tegula.language as tl
from tegula.kernels import _host

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
