from tegula.compiler.errors import CompilationError, CompileTimeAssertionFailure  # noqa: F401
