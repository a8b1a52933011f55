import time, statistics, os, sys
import torch, tegula
import tegula._C as C
import triton.language as tl

@tegula.jit
def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)

x, y = torch.randn(16, device="cuda"), torch.randn(16, device="cuda")
out = torch.empty(16, device="cuda")
grid = (1,)
compiled = axpy[grid](x, y, out, 2.0, 16, BLOCK=16)
torch.cuda.synchronize()
# rdtsc frequency
import ctypes
t0 = time.perf_counter_ns(); C._launch_phases()
def burst(fn, n=200, rounds=100):
    s = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        a = time.perf_counter_ns()
        for _ in range(n): fn()
        s.append((time.perf_counter_ns() - a) / n)
    torch.cuda.synchronize()
    return statistics.median(s)
stream = torch.cuda.current_stream().cuda_stream
raw_args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), 2.0, 16]
for rep in range(3):
    C._launch_phases()
    a = time.perf_counter_ns()
    full = burst(lambda: axpy[grid](x, y, out, 2.0, 16, BLOCK=16))
    el = time.perf_counter_ns() - a
    ph = C._launch_phases()
    raw = burst(lambda: compiled.launch((1, 1, 1), raw_args, stream, 0))
    getitem = burst(lambda: axpy[grid], n=200)
    f = axpy[grid]
    call_only = burst(lambda: f(x, y, out, 2.0, 16, BLOCK=16))
    n = ph[-1]
    tot_cycles = sum(ph[:16])
    print(f"full {full:.0f} ns  raw {raw:.0f} ns  ratio {full/raw:.3f}  getitem {getitem:.0f}  call_only {call_only:.0f}")
    # cycles per ns: calibrate with a sleep
    print("launches", n, "cycles/launch per phase:", [(i, round(v / n)) for i, v in enumerate(ph[:32]) if v])
# calibrate
import subprocess
c0 = C._launch_phases()
a=time.perf_counter_ns()
# estimate TSC Hz from /proc/cpuinfo
try:
    for line in open('/proc/cpuinfo'):
        if 'model name' in line: print(line.strip()); break
except Exception: pass
print("env vars:", len(os.environ))
a = time.perf_counter_ns(); r0 = C._rdtsc(); time.sleep(0.5); r1 = C._rdtsc(); b = time.perf_counter_ns()
print("tsc GHz", (r1 - r0) / (b - a))
