from tegula.compiler.compiler import ASTSource, CompiledKernel, compile  # noqa: F401,A004
