from tegula.compiler import ASTSource  # noqa: F401

from .errors import CompilationError  # noqa: F401
