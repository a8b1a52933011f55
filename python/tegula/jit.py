"""``@tegula.jit`` and the launch path.

``kernel[grid](*args, **kwargs)`` is one call into C++ (``_C.Launcher``,
src/bindings/launcher.h), the one definition of a launch: it binds the
arguments like a Python call, specializes the kernel on them (Triton's
rules: ints on being 1 and divisible by 16, pointers on dtype and 16-byte
alignment, constexprs on their value), resolves the grid, picks the backend
and device where the arrays live, finds the compiled kernel in its cache and
launches it. ``inspect``, ``warmup`` and the autotuner take the same path.

Python is asked only for what it alone knows: the kernel's signature (once)
and, on a cache miss, the sources and globals of the kernel and of the @jit
functions it calls (``_compile``, which then compiles the request).
"""

from __future__ import annotations

import functools
import inspect as _inspect
import os
import sys
import time
import types

from . import _C
from ._globals import collect_sources
from ._launch_support import support
from ._errors import coded

_MISSING = object()


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _without_outer_decorators(lines: list, first_line: int):
    """The kernel's source from its innermost decorator (the ``@jit`` line) on.

    Decorators stacked above ``@jit`` (``@tegula.autotune(configs=[Config({...})])``,
    ``@tegula.heuristics({...: lambda args: ...})``) are host code that wraps
    the JITFunction; their dicts and lambdas are not kernel syntax, so the
    compiler never sees them. Line numbers are kept: ``first_line`` moves down.
    """
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return lines, first_line
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(fn.decorator_list) < 2:
        return lines, first_line
    # A decorator's lineno is its expression's line; the '@' is on the line before
    # any continuation, which is the same line for every decorator Python accepts.
    keep_from = fn.decorator_list[-1].lineno - 1
    return lines[keep_from:], first_line + keep_from


class _Signature:
    """The kernel's parameters as the compiler parsed them, and their defaults:
    what the launcher binds against and the autotuner names arguments by."""

    def __init__(self, jit_fn: "JITFunction"):
        fn_source = _C.FunctionSource(name=jit_fn.__name__, filename=jit_fn.filename,
                                      source=jit_fn.src, first_line=jit_fn.first_line)
        params = _C.parse_signature(fn_source)
        self.names = tuple(p[0] for p in params)
        self.is_constexpr = tuple(p[1] for p in params)
        python_params = _inspect.signature(jit_fn.fn).parameters
        self.defaults = tuple(
            python_params[name].default
            if name in python_params and python_params[name].default is not _inspect.Parameter.empty
            else _MISSING
            for name in self.names)


class KernelInspection:
    """Every stage of one specialization of a kernel (``kernel.inspect(...)``).

    CUDA kernels also carry the layout of every tile value, the PTX, ptxas's
    report and what the kernel uses on its device (``resources``: registers and
    local bytes per thread, static and dynamic shared memory per block).
    """

    def __init__(self, kernel, device=None):
        self.name = kernel.name
        self.key = kernel.key
        self.backend = kernel.backend
        self.params = kernel.params
        self.effects = kernel.effects  # pointer parameter -> what the kernel may do to its memory
        self.stages = kernel.stages  # stage name -> IR text, in pipeline order
        self.source = kernel.source
        self.ir = list(self.stages.values())[-1] if self.stages else ""
        self.layouts = kernel.layouts
        self.ptx = kernel.ptx
        self.compile_log = kernel.compile_log
        self.resources = kernel.resources(device) if device is not None else {}

    def __str__(self) -> str:
        parts = [f"=== kernel {self.name} (key {self.key}, backend {self.backend}) ===", "--- params ---"]
        parts += [f"{name}: {type_} div({div})" for name, type_, div in self.params]
        for stage, text in self.stages.items():
            parts += [f"--- IR after {stage} ---", text.rstrip("\n")]
        if self.layouts:
            parts += ["--- layouts ---", self.layouts.rstrip("\n")]
        parts += ["--- generated source ---", self.source.rstrip("\n")]
        if self.ptx:
            parts += ["--- PTX ---", self.ptx.rstrip("\n")]
        if self.compile_log:
            parts += ["--- NVRTC log ---", self.compile_log.rstrip("\n")]
        if self.resources:
            parts += ["--- resources ---"]
            parts += [f"{what}: {value}" for what, value in self.resources.items()]
        return "\n".join(parts) + "\n"

    def __repr__(self) -> str:
        return f"<KernelInspection of '{self.name}' {self.key[:12]}>"


class JITFunction:
    """A kernel (or a device function other kernels call), compiled on first launch.

    Launch with ``kernel[grid](*args, **kwargs)``; see ``docs/python-api.md``.
    """

    def __init__(self, fn, *, do_not_specialize=(), debug=False, noinline=False):
        if not isinstance(fn, types.FunctionType):
            raise coded(TypeError, "E0708", f"@tegula.jit decorates a Python function, got {type(fn).__name__}")
        self.fn = fn
        functools.update_wrapper(self, fn)
        try:
            lines, first_line = _inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise OSError(f"cannot read the source of kernel '{fn.__name__}' ({e}); define "
                          f"kernels in a file, not in an interactive session or exec()") from None
        lines, first_line = _without_outer_decorators(lines, first_line)
        self.src = "".join(lines)
        self.first_line = first_line
        self.filename = _inspect.getsourcefile(fn) or fn.__code__.co_filename
        if isinstance(do_not_specialize, (str, int)):
            do_not_specialize = (do_not_specialize,)
        self.do_not_specialize = tuple(do_not_specialize)
        self.noinline = noinline  # accepted for Triton compatibility; callees are always inlined
        self._signature = None
        self._launcher = _C.Launcher(self, support())
        self._launch = self._launcher.launch  # _launch(grid, *args, **kwargs), for the autotuner
        self._with_grid = self._launcher.with_grid
        self.debug = bool(debug) or _env_flag("TEGULA_DEBUG")

    @property
    def debug(self) -> bool:
        """Debug mode: bounds-checked accesses and device asserts (docs/debug-mode.md)."""
        return self._debug

    @debug.setter
    def debug(self, value) -> None:
        self._debug = bool(value)
        self._launcher.set_debug(self._debug)  # part of the launch key

    # --- launching ----------------------------------------------------------

    def __getitem__(self, grid):
        return self._with_grid(grid)

    def __call__(self, /, *args, **kwargs):
        name = self.__name__
        raise coded(TypeError, "E0707", f"kernel '{name}' cannot be called like a Python function; launch it "
                                        f"with a grid: {name}[grid](...)")

    def warmup(self, /, *args, grid=None, **kwargs):
        """Compiles (or loads) the kernel for these arguments without launching it;
        returns the CompiledKernel (``.asm``, ``.metadata``), as Triton's does."""
        return self._launcher.warmup(grid, *args, **kwargs)

    def run(self, /, *args, grid, warmup=False, **kwargs):
        """Triton's ``kernel.run(*args, grid=grid, warmup=False, **kwargs)``:
        ``kernel[grid](*args, **kwargs)``, or ``warmup`` when it is true."""
        if warmup:
            return self._launcher.warmup(grid, *args, **kwargs)
        return self._launch(grid, *args, **kwargs)

    def inspect(self, /, *args, **kwargs) -> KernelInspection:
        """The IR after every stage and the generated source, for these arguments."""
        kernel, device = self._launcher.inspect(*args, **kwargs)
        return KernelInspection(kernel, device)

    def _request_for(self, /, *args, **kwargs):
        """(KernelRequest, CompileOptions) that a launch with these arguments
        compiles, sources included: for tools and tests that compile it
        themselves (another backend, another architecture)."""
        request, options = self._launcher.request(*args, **kwargs)
        request.functions = collect_sources(self)
        return request, options

    # --- what the launcher asks -----------------------------------------------------

    @property
    def arg_names(self) -> tuple:
        return self.signature.names

    @property
    def signature(self) -> _Signature:
        if self._signature is None:
            self._signature = _Signature(self)
        return self._signature

    def _launch_plan(self) -> tuple:
        """The signature as the launcher binds against it: (names,
        is_constexpr, defaults, do_not_specialize, the no-default sentinel)."""
        sig = self.signature
        return sig.names, sig.is_constexpr, sig.defaults, self.do_not_specialize, _MISSING

    def _compile(self, request, options):
        """A launch's cache miss: `request` holds the argument specs and
        `options` the backend and launch options the launcher worked out;
        this adds the sources and globals of the kernel and of every @jit
        function it calls, and compiles (the disk cache first)."""
        started = time.perf_counter()
        request.functions = collect_sources(self)
        if _env_flag("TEGULA_PROFILE_COMPILE"):
            python_s = time.perf_counter() - started
            kernel, phases = _C.compile_with_profile(request, options)
            _print_compile_profile(self.__name__, options.backend, [("python", python_s)] + phases)
            return kernel
        return _C.compile(request, options)

    def __repr__(self) -> str:
        return f"<tegula.JITFunction {self.__module__}.{self.__qualname__}>"


def _print_compile_profile(kernel: str, backend: str, phases: list) -> None:
    """TEGULA_PROFILE_COMPILE=1: one line per compile on stderr, e.g.
    ``tegula: compiled 'add' (cpu) in 0.412 s: python 1.1 ms, setup 0.2 ms, ...``
    (the phases: src/support/compile_profile.h; "python" is the request's
    sources and argument specs)."""

    def duration(seconds: float) -> str:
        return f"{seconds:.3f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"

    total = sum(seconds for _, seconds in phases)
    parts = ", ".join(f"{name} {duration(seconds)}" for name, seconds in phases)
    print(f"tegula: compiled '{kernel}' ({backend}) in {duration(total)}: {parts}", file=sys.stderr, flush=True)


def jit(fn=None, *, do_not_specialize=(), debug=False, noinline=False):
    """Marks a function as a Tegula kernel (or a device function kernels call).

    ``do_not_specialize`` lists parameters (names or indices) whose int values
    should not specialize the kernel; ``debug`` (or ``TEGULA_DEBUG=1``) turns on
    bounds checks and device asserts.
    """

    def decorate(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline)

    return decorate if fn is None else decorate(fn)
