"""Reference kernels shipped with Tegula: the case-study chain, softmax, layer
norm, matmul (plain, with a fused epilogue, persistent), flash attention and
vector add. The demo, the benchmark command and the
examples/ scripts use them; each module holds the tile kernel, a host wrapper
that takes NumPy arrays or torch tensors (CUDA tensors run on the GPU), and
the eager reference it is checked against (NumPy or torch, following the
inputs). The modules are also valid Triton source: ``tegula._triton_twin``
runs them under Triton for the benchmark's comparison."""
