"""Tegula: tile-based kernels in Python syntax, compiled by a C++ compiler.

    import tegula
    import tegula.language as tl

    @tegula.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    add[(tegula.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
"""

try:
    from . import _C
except ImportError as e:  # pragma: no cover - only without a built extension
    raise ImportError(
        "tegula's compiled extension (tegula._C) is missing or failed to load; "
        "build it with `make build` (or `pip install --no-build-isolation -e .`)"
    ) from e

from . import knobs, language, profiling, testing
from ._debug import DeviceError  # a debug-mode kernel left its arrays or failed an assert
from .jit import JITFunction, KernelInspection, KernelInterface, jit
from .autotune import AutotuneError, Autotuner, AutotuneWarning, Config, Heuristics, autotune, heuristics
from .utils import cdiv, next_power_of_2
from .constexpr_function import ConstexprFunction, constexpr_function, must_use_result
from .aggregate import aggregate  # a class kernels build, pass and call methods of
from .tensor_descriptor import TensorDescriptor  # a tensor seen as blocks, passed to kernels
from ._reinterpret import reinterpret  # an array's memory as another dtype (fp8 from uint8 arrays)
from ._mock_tensor import MockTensor  # an array of a dtype without memory, for kernel.warmup
from ._allocation import set_allocator  # Triton's hook for launch-time memory (never called here)
from ._errors import ArgumentOverflowError  # an int argument past 64 bits: OverflowError and ValueError
from ._errors import CompileWarning  # what the compiler warns of in a kernel that compiles
from ._recompiles import RecompileWarning  # one kernel compiled for many specializations
from . import runtime  # Triton's triton.runtime as host code reads it: driver.active, the device's properties
from .runtime import OutOfResources  # Triton's triton.OutOfResources, for `except` clauses of host code
from . import compiler  # Triton's triton.compiler.ASTSource, compiled by tegula.compile without arguments
from .compiler import compile  # noqa: A001 (Triton's triton.compile)

#: A kernel failed to compile; ``str(e)`` is the rendered diagnostic
#: (file:line:col, the source line with a caret, and a hint).
CompilationError = _C.CompilationError
#: Triton's base of the errors it raises for kernels: CompilationError, OutOfResources, AutotuneError and
#: DeviceError derive from it, so ``except tegula.TritonError`` catches them.
TritonError = _C.TritonError
CompileTimeAssertionFailure = _C.CompileTimeAssertionFailure
#: The CompilationError for Python syntax that kernels do not take (E0110).
UnsupportedLanguageConstruct = _C.UnsupportedLanguageConstruct

__version__ = _C.__version__

__all__ = [
    "jit", "JITFunction", "KernelInterface", "KernelInspection", "CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct", "CompileWarning", "RecompileWarning", "DeviceError", "cdiv", "next_power_of_2",
    "language", "profiling", "testing", "runtime_stats", "__version__",
    "autotune", "heuristics", "Config", "Autotuner", "Heuristics", "AutotuneError", "AutotuneWarning",
    "TensorDescriptor", "reinterpret", "MockTensor", "cmake_dir", "ArgumentOverflowError",
    "set_allocator", "constexpr_function", "ConstexprFunction", "must_use_result", "aggregate", "runtime", "OutOfResources",
    "compiler", "compile", "knobs", "TritonError",
]


def cmake_dir() -> str:
    """The folder ``find_package(Tegula)`` wants (``-DTegula_DIR=...``): the
    C++ API's CMake configuration, next to its header and ``libtegula.so``
    (docs/cpp-api.md)."""
    from pathlib import Path

    # Compiled files sit next to the extension (in editable installs, not next to the sources).
    return str(Path(_C.__file__).resolve().parent / "lib" / "cmake" / "Tegula")


def runtime_stats() -> dict:
    """The compiler's process-wide counters: ``builds`` (C++ compiler runs),
    ``reused`` (misses whose generated source had been built before under
    another cache key: the artifact was copied, nothing was built),
    ``disk_hits`` (kernels loaded from the disk cache), ``disk_rejected``
    (cache entries found but refused, e.g. truncated or altered files: each is
    rebuilt) and ``frontend_runs``."""
    return _C.stats()
