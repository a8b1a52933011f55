import sys
sys.path.insert(0, "/tmp/tvenv/lib/python3.11/site-packages")
import torch, tegula
import tegula.language as tl
@tegula.jit
def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)
x, y = torch.randn(16), torch.randn(16)
out = torch.empty(16)
grid = (1,)
axpy[grid](x, y, out, 2.0, 16, BLOCK=16)
for _ in range(20_000_000):
    axpy[grid](x, y, out, 2.0, 16, BLOCK=16)
