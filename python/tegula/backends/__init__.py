"""``triton.backends``, as host code reads it: ``backends.compiler.GPUTarget`` (what a kernel is compiled
for) and ``backends.backends``, Triton's table of installed compiler plugins. Tegula's backends are
not such plugins (``tegula._C.backends()`` lists them), so the table is empty."""

from . import compiler

backends: dict = {}

__all__ = ["backends", "compiler"]
