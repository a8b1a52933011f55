"""NumPy's side of harness.cpp: ``OPENBLAS_NUM_THREADS=1 python numpy_time.py N DTYPE``,
the median thread CPU time of 7 calls of what the benchmark's NumPy baseline does
(float32 BLAS; halves widened to float32 first and the result narrowed)."""
import sys
import time

import ml_dtypes
import numpy as np

n, name = int(sys.argv[1]), sys.argv[2]
dtype = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
b = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
times = []
for _ in range(7):
    start = time.thread_time()
    (a.astype(np.float32, copy=False) @ b.astype(np.float32, copy=False)).astype(dtype, copy=False)
    times.append(time.thread_time() - start)
median = sorted(times)[3]
print(f"numpy {name} n={n} {median * 1e3:.2f} ms {2 * n ** 3 / median / 1e9:.1f} GFLOP/s")
