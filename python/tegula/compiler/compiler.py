"""``triton.compiler.compiler``' names, where host code imports them from: ASTSource, compile and
CompiledKernel (what a launch and compile return)."""

from . import ASTSource, CompiledKernel, compile  # noqa: A004

__all__ = ["ASTSource", "CompiledKernel", "compile"]
