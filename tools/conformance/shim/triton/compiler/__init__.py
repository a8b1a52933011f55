from .errors import CompilationError  # noqa: F401
