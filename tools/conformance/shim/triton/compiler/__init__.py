from tegula.compiler import ASTSource, CompiledKernel, compile  # noqa: F401,A004

from . import compiler  # noqa: F401
from .errors import CompilationError  # noqa: F401
