"""The Triton twin of an example kernel module: the same source, compiled by Triton.

Tegula kernels are Triton source. To compare the two compilers (and not two
different kernels), the benchmark runs each kernel module twice: as written,
and as a *twin* whose three import lines bind the names to Triton instead::

    import tegula                                -> import triton as tegula
    import tegula.language as tl                 -> import triton.language as tl
    from tegula.language.extra import libdevice  -> from triton.language.extra import libdevice

Nothing else changes, line numbers included, so the twin's host wrappers
(``twin.softmax(x)``) launch Triton kernels built from the very text Tegula
compiles. Triton reads a kernel's source through ``inspect``, which needs a
real file: the rewritten text is written to a private temporary folder and
imported from there, under a private module name. Other imports (NumPy, the
examples' array helpers ``_host``, ``tegula.testing``) are left alone: they
are host code.
"""

from __future__ import annotations

import atexit
import importlib.util
import re
import shutil
import sys
import tempfile
import threading
import types

# (pattern of a whole import line, its Triton spelling). Anchored on both ends
# and matched per line, so a comment or a longer import is never rewritten.
_REWRITES = (
    (re.compile(r"^(\s*)import tegula(\s*(#.*)?)$"), r"\1import triton as tegula\2"),
    (re.compile(r"^(\s*)import tegula\.language as tl(\s*(#.*)?)$"), r"\1import triton.language as tl\2"),
    (re.compile(r"^(\s*)from tegula\.language\.extra import libdevice(\s*(#.*)?)$"),
     r"\1from triton.language.extra import libdevice\2"),
)
# Imports of Tegula's compiler or language that have no rewrite: a twin with
# one of these would still compile part of itself with Tegula.
_UNREWRITTEN = re.compile(r"^\s*(import\s+tegula(\.language)?\b|from\s+tegula(\.language\S*)?\s+import\b)")

_lock = threading.Lock()
_twins: dict[str, types.ModuleType] = {}
_folder: str | None = None


def rewrite_imports(source: str, filename: str = "<source>") -> str:
    """`source` with its Tegula imports replaced by Triton's, line for line.

    Raises ValueError naming the line when a line imports Tegula's compiler or
    language in a form that has no Triton spelling here (``from tegula import
    jit``, say): the twin would not be the same kernel compiled by Triton.
    """
    lines = source.splitlines(keepends=True)
    out = []
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        for pattern, replacement in _REWRITES:
            if pattern.match(body):
                body = pattern.sub(replacement, body)
                break
        else:
            if _UNREWRITTEN.match(body):
                raise ValueError(f"{filename}:{number}: cannot make a Triton twin of this import: "
                                 f"{body.strip()!r}; write 'import tegula', 'import tegula.language "
                                 f"as tl' or 'from tegula.language.extra import libdevice'")
        out.append(body + ending)
    return "".join(out)


def twin_name(module: types.ModuleType) -> str:
    """The private sys.modules name of `module`'s twin."""
    return "_tegula_triton_twin_" + module.__name__.replace(".", "_")


def _temporary_folder() -> str:
    global _folder
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="tegula-triton-twin-")
        # Triton may read the file again (error messages), so it lives as long as the process.
        atexit.register(shutil.rmtree, _folder, ignore_errors=True)
    return _folder


def load(module: types.ModuleType) -> types.ModuleType:
    """The Triton twin of a kernel module (e.g. examples/softmax.py), made once
    per process. Raises ImportError when Triton is not installed, ValueError when the
    module's imports cannot be rewritten, and whatever executing the twin raises."""
    name = twin_name(module)
    with _lock:
        twin = _twins.get(name)
        if twin is not None:
            return twin
        import triton  # noqa: F401  (fail here, clearly, when Triton is missing)

        path = getattr(module, "__file__", None)
        if not path:
            raise ValueError(f"module {module.__name__} has no source file to make a Triton twin of")
        with open(path, encoding="utf-8") as f:
            source = rewrite_imports(f.read(), path)
        twin_path = f"{_temporary_folder()}/{name}.py"
        with open(twin_path, "w", encoding="utf-8") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(name, twin_path)
        twin = importlib.util.module_from_spec(spec)
        sys.modules[name] = twin  # Triton (and inspect) look the module up by name
        try:
            spec.loader.exec_module(twin)
        except BaseException:
            del sys.modules[name]
            raise
        _twins[name] = twin
        return twin
