"""Reference kernels shipped with Tegula: the case-study chain, softmax, layer
norm, matmul and vector add. The demo, the benchmark command and the
examples/ scripts use them; each module holds the tile kernel, a host wrapper
and the NumPy (eager) reference it is checked against."""
