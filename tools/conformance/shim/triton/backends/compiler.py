from tegula.backends.compiler import GPUTarget  # noqa: F401
