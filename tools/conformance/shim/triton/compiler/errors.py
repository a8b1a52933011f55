from tegula import CompilationError  # noqa: F401
