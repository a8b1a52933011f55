from tegula import CompilationError, CompileTimeAssertionFailure  # noqa: F401
