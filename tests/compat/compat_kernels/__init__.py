"""Kernels written in Triton's style, for the compatibility suite.

Every module here starts with the same few lines: it imports ``triton`` and
``triton.language as tl`` when ``TEGULA_COMPAT_RUNTIME=triton`` and Tegula
under those names otherwise, so the kernel source below them is the very text
both compilers read. Nothing else in a module may depend on the runtime.
"""
