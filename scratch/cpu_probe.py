import sys, time, statistics
sys.path.insert(0, "/tmp/tvenv/lib/python3.11/site-packages")
import torch, tegula
import tegula._C as C
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
compiled = axpy[grid](x, y, out, 2.0, 16, BLOCK=16)
raw_args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), 2.0, 16]
def burst(fn, n=200, rounds=300):
    s = []
    for _ in range(rounds):
        a = time.perf_counter_ns()
        for _ in range(n): fn()
        s.append((time.perf_counter_ns() - a) / n)
    return statistics.median(s)
mode = sys.argv[1] if len(sys.argv) > 1 else "both"
for rep in range(2):
    C._launch_phases()
    full = burst(lambda: axpy[grid](x, y, out, 2.0, 16, BLOCK=16))
    ph = C._launch_phases()
    raw = burst(lambda: compiled.launch((1, 1, 1), raw_args))
    n = ph[-1]
    print(f"full {full:.0f} ns  raw {raw:.0f} ns")
    print([(i, round(v / n)) for i, v in enumerate(ph[:32]) if v])
