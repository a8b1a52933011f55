// error: CompilationError: triton_style_kernels.py:29:53: error[E0304]: the dtype of .to() must be a dtype such as tl.float32, but it is the host object Triton's dtype fp8e4b15, which Tegula does not support
 29 |     tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(WIDE_DTYPE))
    |                                                     ^~~~~~~~~~
note: in `fp8_kernel` at 3:52:

