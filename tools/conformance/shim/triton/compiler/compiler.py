"""Triton's triton.compiler.compiler, where host code imports ASTSource, compile and CompiledKernel
from."""

from tegula.compiler import ASTSource, CompiledKernel, compile  # noqa: F401,A004
