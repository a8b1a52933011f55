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
import hashlib
import inspect as _inspect
import os
import sys
import threading
import time
import types
import warnings
import weakref

from . import _C, _torch_compile
from . import _environment, _recompiles, knobs
from ._globals import collect_sources, parse_dedented
from ._mock_tensor import MockTensor
from ._launch_support import support
from ._param_types import annotation_text, annotation_type_text, declared_scalar
from ._errors import CompileWarning, coded

_MISSING = object()


def _env_flag(name: str) -> bool:
    return _environment.flag(name)


def _without_outer_decorators(lines: list, first_line: int):
    """The kernel's source from its ``@jit`` decorator on, with the decorators
    below it blanked.

    Decorators stacked above ``@jit`` (``@tegula.autotune(configs=[Config({...})])``,
    ``@tegula.heuristics({...: lambda args: ...})``) are host code that wraps
    the JITFunction, and those between ``@jit`` and ``def`` are host code that
    ran on the Python function before ``@jit`` saw it (one that sets
    ``__annotations__``, say); neither is kernel syntax (dicts, lambdas,
    f-strings), so the compiler never sees them. The ``@jit`` line is the
    innermost decorator that names ``jit``, else the innermost. Line numbers
    are kept: ``first_line`` moves down, blanked lines stay as empty lines.
    """
    import ast

    try:
        tree = parse_dedented("".join(lines))
    except SyntaxError:
        return lines, first_line
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.decorator_list:
        return lines, first_line

    def names_jit(decorator) -> bool:
        return any((isinstance(n, ast.Name) and n.id == "jit") or (isinstance(n, ast.Attribute) and n.attr == "jit")
                   for n in ast.walk(decorator))

    decorators = fn.decorator_list
    jit_at = max((i for i, d in enumerate(decorators) if names_jit(d)), default=len(decorators) - 1)
    lines = list(lines)
    for inner in decorators[jit_at + 1:]:
        # The '@' is on the line of the expression's start (Python accepts no other form).
        for row in range(inner.lineno - 1, inner.end_lineno):
            lines[row] = "\n" if lines[row].endswith("\n") else ""
    # A decorator's lineno is its expression's line; the '@' is on the line before
    # any continuation, which is the same line for every decorator Python accepts.
    keep_from = decorators[jit_at].lineno - 1
    return lines[keep_from:], first_line + keep_from


def _identifiers_as_python_reads_them(source: str) -> str:
    """`source` with every identifier in NFKC form, as Python's parser reads names (``ﬁrst`` is the
    parameter ``first``, ``µ`` is ``μ``): the compiler's lexer compares names as written. Columns move
    only on lines with such a name, and only by what its normal form adds."""
    if source.isascii():
        return source
    import io
    import tokenize
    import unicodedata

    changes = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME and not token.string.isascii():
                normal = unicodedata.normalize("NFKC", token.string)
                if normal != token.string:
                    changes.append((token.start, token.end, normal))
    except (tokenize.TokenError, SyntaxError):
        return source  # the compiler reports what is wrong with it
    if not changes:
        return source
    lines = io.StringIO(source).readlines()  # the lines tokenize numbered (split at newlines alone)
    for (row, start), (_, end), normal in reversed(changes):  # right to left: earlier columns stay valid
        line = lines[row - 1]
        lines[row - 1] = line[:start] + normal + line[end:]
    return "".join(lines)


def _without_host_functions_in_jit_options(lines: list) -> list:
    """The source with the arguments of its first decorator (the ``@jit`` line)
    blanked out when they hold a ``lambda`` (``@jit(repr=lambda spec: ...)``):
    they are host code the compiler never reads, in a form its parser does not
    take. Only the characters between the parentheses become spaces, so every
    line and column stays where it was."""
    import ast
    import textwrap

    text = "".join(lines)
    try:
        tree = parse_dedented(text)
    except SyntaxError:
        return lines
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.decorator_list:
        return lines
    decorator = fn.decorator_list[0]
    if not isinstance(decorator, ast.Call) or not any(isinstance(n, ast.Lambda) for n in ast.walk(decorator)):
        return lines
    margin = len(lines[0]) - len(textwrap.dedent(text).splitlines(keepends=True)[0])
    rows = [bytearray(line.encode()) for line in lines]  # ast's columns count UTF-8 bytes
    # From just after the `(` that follows `@jit` to just before the closing `)`.
    first, start = decorator.func.end_lineno - 1, decorator.func.end_col_offset + margin + 1
    last, end = decorator.end_lineno - 1, decorator.end_col_offset + margin - 1
    for row in range(first, last + 1):
        lo = start if row == first else 0
        hi = end if row == last else len(rows[row].rstrip(b"\r\n"))
        rows[row][lo:hi] = b" " * (hi - lo)
    return [row.decode() for row in rows]


class _Signature:
    """The kernel's parameters as the compiler parsed them, and their defaults:
    what the launcher binds against and the autotuner names arguments by."""

    def __init__(self, jit_fn: "JITFunction"):
        fn_source = _C.FunctionSource(name=jit_fn.__name__, filename=jit_fn.filename_text,
                                      source=jit_fn._source, first_line=jit_fn.first_line)
        params = _C.parse_signature(fn_source)
        self.names = tuple(p[0] for p in params)
        self.is_constexpr = tuple(p[1] for p in params)
        python_params = _inspect.signature(jit_fn.fn).parameters
        #: the Python function's parameters (an inspect.Signature's ``parameters``), as Triton's signature has
        self.parameters = python_params
        self.defaults = tuple(
            python_params[name].default
            if name in python_params and python_params[name].default is not _inspect.Parameter.empty
            else _MISSING
            for name in self.names)
        #: per parameter, the scalar type its annotation declares (an IR name, "i64") or None
        #: (_param_types.py); constexprs declare none
        self.declared = tuple(
            None if is_constexpr or name not in python_params
            else declared_scalar(_annotation(python_params[name]))
            for name, is_constexpr in zip(self.names, self.is_constexpr))


def _annotation(param: _inspect.Parameter):
    """The annotation of `param`, None for none."""
    return None if param.annotation is _inspect.Parameter.empty else param.annotation


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


def _leading_space(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _dedented(text: str, indent: str) -> str:
    """`text` with `indent` taken off every line that starts with it (blank lines kept)."""
    if not indent:
        return text
    return "".join(line[len(indent):] if line.startswith(indent) else line for line in text.splitlines(True))


def _indented(text: str, indent: str) -> str:
    """A replacement source back at the original indentation, so the file's columns still hold, when its first
    line is unindented (it came from `src`); otherwise as given: the lexer takes any uniform indentation."""
    lines = text.splitlines(True)
    first = next((line for line in lines if line.strip()), "")
    if not indent or _leading_space(first):
        return text
    return "".join(indent + line if line.strip() else line for line in lines)


# The JITFunction (and launch options) behind each CompiledKernel that warmup returned, so that
# `compiled[grid](*args)` can launch it as Triton's runner does. Keyed by the compiled kernel itself,
# weakly: a compiled kernel dropped from every cache takes its entry with it.
_OWNERS = weakref.WeakKeyDictionary()


def _remember_owner(compiled, jit_fn, args: tuple, kwargs: dict) -> None:
    if compiled in _OWNERS:  # a specialization: the same kernel, constexprs and options every time
        return
    sig = jit_fn.signature
    params = set(sig.names)
    options = {name: value for name, value in kwargs.items() if name not in params}  # num_warps=...
    named = dict(zip(sig.names, args))
    named.update((name, value) for name, value in kwargs.items() if name in params)
    # The constexprs it was compiled for: a runner given the runtime arguments only puts them back.
    constexprs = {}
    for name, is_constexpr, default in zip(sig.names, sig.is_constexpr, sig.defaults):
        if is_constexpr and (name in named or default is not _MISSING):
            constexprs[name] = named.get(name, default)
    try:
        _OWNERS[compiled] = (weakref.ref(jit_fn), options, constexprs)
    except TypeError:  # a compiled kernel that takes no weak reference: no runner
        pass


# The globals each kernel _compile just made was compiled with, by id(kernel), until its launcher takes them.
_GLOBAL_WATCHES: dict = {}
_WATCHES_LOCK = threading.Lock()


# Every kernel alive, so that tegula.knobs.runtime.debug reaches kernels decorated before it was set.
_LIVE = weakref.WeakSet()
# Set while JITFunction.warmup runs on this thread: what jit hooks are told as is_manual_warmup.
_WARMING = threading.local()


def _debug_setting_changed() -> None:
    for fn in list(_LIVE):
        fn._apply_debug()


def _compiled_runner(compiled, grid):
    """Triton's ``CompiledKernel[grid]``: a function of every argument of the kernel, in its order
    (constexprs included, at the values it was compiled for), or of its runtime arguments only (as
    Triton 3.6's takes them: the constexprs are the compiled ones), and ``stream`` (None: the current
    one), that launches this compiled kernel."""
    entry = _OWNERS.get(compiled)
    jit_fn = entry[0]() if entry else None
    if jit_fn is None:
        raise coded(TypeError, "E0708", f"CompiledKernel '{compiled.name}'[grid] launches kernels that warmup "
                                        "or run returned; launch this one through its kernel: kernel[grid](*args)")
    options, constexprs = entry[1], entry[2]
    sig = jit_fn.signature
    runtime_count = len(sig.names) - sum(sig.is_constexpr)
    types = _compiled_types(compiled, sig)

    def all_arguments(args: tuple) -> tuple:
        if not constexprs or len(args) != runtime_count or len(args) == len(sig.names):
            return args
        given = iter(args)
        return tuple(constexprs[name] if is_constexpr else next(given)
                     for name, is_constexpr in zip(sig.names, sig.is_constexpr))

    def runner(*args, stream=None):
        if stream is not None and compiled.backend_kind == "device":
            from . import _device
            current = _device.current_stream(_device.current_device())
            if int(stream) != int(current):
                raise coded(ValueError, "E0705", f"CompiledKernel '{compiled.name}'[grid](..., stream=...) launches "
                                                 "on the current stream only; make that stream current "
                                                 "(torch.cuda.stream(s)) and leave stream out")
        return jit_fn._launch_as_compiled(types)(grid, *all_arguments(args), **options)

    return runner


def _compiled_types(compiled, sig: _Signature) -> tuple:
    """Per parameter, the scalar type `compiled` takes it as (an IR name, "i64") when it is one of its
    runtime scalar parameters, else None: what `compiled[grid]` converts those arguments to, as the
    compiled code takes them, whatever their values (Triton's runner launches that code)."""
    scalars = {name: type_ for name, type_, _ in compiled.params if "<" not in type_}
    return tuple(None if is_constexpr else scalars.get(name)
                 for name, is_constexpr in zip(sig.names, sig.is_constexpr))


def _init_handles(compiled) -> None:
    """Triton loads a compiled kernel's module lazily; Tegula's is loaded when it is returned."""


_C.CompiledKernel.__getitem__ = _compiled_runner
_C.CompiledKernel._init_handles = _init_handles


class KernelInterface:
    """Triton's base of launchable kernels: ``obj[grid](*args, **kwargs)`` is
    ``obj.run(*args, grid=grid, warmup=False, **kwargs)``. Libraries subclass
    it to wrap kernels with their own ``run``; JITFunction, Autotuner and
    Heuristics are ones."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


class KernelParam:
    """One parameter of a kernel as Triton's ``JITFunction.params`` lists it. ``annotation`` is the
    annotation in Triton's spelling ("i64", "*fp16", "constexpr", "" for none; _param_types.py)."""

    __slots__ = ("num", "name", "is_constexpr", "do_not_specialize", "do_not_specialize_on_alignment", "default",
                 "annotation")

    def __init__(self, num, name, is_constexpr, do_not_specialize, do_not_specialize_on_alignment, default,
                 annotation=""):
        self.num, self.name, self.is_constexpr = num, name, is_constexpr
        self.do_not_specialize, self.do_not_specialize_on_alignment = do_not_specialize, do_not_specialize_on_alignment
        self.default = default  # inspect.Parameter.empty when there is none
        self.annotation = annotation

    @property
    def has_default(self) -> bool:
        return self.default is not _inspect.Parameter.empty

    @property
    def annotation_type(self) -> str:
        """The annotation when it names a scalar type or a pointer to one ("i64", "*fp16"), else ""."""
        return annotation_type_text(self.annotation)

    @property
    def is_const(self) -> bool:
        """Whether the annotation declares a const pointer ("const *fp16", ``tl.const``)."""
        return not self.is_constexpr and ("const" in self.annotation or self.annotation.startswith("*k"))

    def __repr__(self) -> str:
        return f"KernelParam({self.num}, {self.name!r}, constexpr={self.is_constexpr})"


class JITFunction(KernelInterface):
    """A kernel (or a device function other kernels call), compiled on first launch.

    Launch with ``kernel[grid](*args, **kwargs)``; see ``docs/python-api.md``.
    """

    def __init__(self, fn, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
                 do_not_specialize_on_alignment=(), debug=False, noinline=False):
        if not isinstance(fn, types.FunctionType):
            raise coded(TypeError, "E0708", f"@tegula.jit decorates a Python function, got {type(fn).__name__}")
        if fn.__name__ == "<lambda>":
            raise coded(TypeError, "E0708", "a lambda cannot be a kernel: tegula.jit compiles a function's source, "
                                            "and a kernel is a `def` at module level (def k(o): ...)")
        self.fn = fn
        functools.update_wrapper(self, fn)
        try:
            lines, first_line = _inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise coded(OSError, "E0708", f"cannot read the source of kernel '{fn.__name__}' ({e}); define "
                                          f"kernels in a file, not in an interactive session or exec()") from None
        # Triton's JITFunction attributes of the source as the file has it (triton_kernels's specialize() reads
        # them off a kernel and sets them on the kernel it derives): the lines with their decorators, the first
        # line's number, the file, and the `def`'s line and column (1-based). Information only: diagnostics come
        # from `_source` and `first_line`.
        self.raw_src, self.starting_line_number = list(lines), first_line
        self.file_name = fn.__code__.co_filename
        self.def_file_line_number = first_line + next(
            (i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
        self.def_file_col_number = 1 + len(next((_leading_space(line) for line in lines
                                                 if line.lstrip().startswith("def ")), ""))
        lines, first_line = _without_outer_decorators(lines, first_line)
        lines = _without_host_functions_in_jit_options(lines)
        # What the front end compiles: the lines as the file has them, so diagnostics give the file's columns
        # (the lexer takes the first line's indentation as its base). `src` is that text dedented, as Triton's.
        self._source = _identifiers_as_python_reads_them("".join(lines))
        # Lines before the `def` (its @jit decorator): `src` starts at the `def`, as Triton's does.
        self._head = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
        self._indent = _leading_space(lines[self._head]) if lines else ""
        self._src_replaced = False  # _unsafe_update_src: the code object no longer describes `src`
        self.first_line = first_line
        self.filename = _inspect.getsourcefile(fn) or fn.__code__.co_filename
        # The compiler takes text: a path's bytes that are no UTF-8 (Python holds them as lone surrogates)
        # are shown as \xNN escapes in messages and generated code.
        self.filename_text = os.fsencode(self.filename).decode("utf-8", "backslashreplace")
        self.do_not_specialize = _parameter_list(do_not_specialize)
        self.do_not_specialize_on_alignment = _parameter_list(do_not_specialize_on_alignment)
        if repr is not None and not callable(repr):
            raise coded(TypeError, "E0708", f"@jit(repr=...) of '{fn.__name__}' takes a function of the "
                                            f"specialization, got {type(repr).__name__}")
        self._repr = repr
        # Accepted as Triton takes them; docs/triton-compat.md says why they change nothing here:
        # callees are always inlined, and Triton itself ignores `version`.
        self.noinline = bool(noinline)
        if launch_metadata is not None and not callable(launch_metadata):
            raise coded(TypeError, "E0708", f"@jit(launch_metadata=...) of '{fn.__name__}' takes a function "
                                            f"f(grid, metadata, args) -> dict, got {type(launch_metadata).__name__}")
        self.launch_metadata = launch_metadata  # what tegula.knobs.runtime's launch hooks add to a launch
        self.version = version
        self._signature = None
        self._cache_key = None
        self.pre_run_hooks = []  # Triton's: called as hook(*args, **kwargs) before every launch
        self._new_launcher()
        self._own_debug = bool(debug)
        self._apply_debug()
        _LIVE.add(self)
        _torch_compile.mark_launches(JITFunction)

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replaces the kernel's source text (Triton's method of the same
        name; Triton's tests patch kernels with it). The function's globals,
        file and first line stay; every specialization of the old source is
        forgotten (the cache keys of the new one hash the new text)."""
        if not isinstance(new_src, str):
            raise coded(TypeError, "E0708", f"_unsafe_update_src of '{self.__name__}' takes the new source as a str, "
                                            f"got {type(new_src).__name__}")
        self._source = _indented(new_src, self._indent)
        if self._source.lstrip().startswith("def "):  # from `src`: blank lines for the head keep the line numbers
            self._source = "\n" * self._head + self._source
        self._src_replaced = True
        self._signature = None
        self._cache_key = None
        self._new_launcher()
        self._launcher.set_debug(self._debug)

    @property
    def src(self) -> str:
        """The kernel's source text without decorators, dedented (a nested kernel's `def` at column 0), as
        Triton's JITFunction.src: what a test patches and hands to `_unsafe_update_src`."""
        return _dedented("".join(self._source.splitlines(True)[self._head:]), self._indent)

    def _new_launcher(self) -> None:
        """A launcher that knows no specialization yet."""
        self._specializations = _recompiles.SpecializationLog(self.__name__)
        self._launcher = _C.Launcher(self, support())
        self._compiled_launchers = {}  # see _launch_as_compiled
        self._launch = self._launcher.launch  # _launch(grid, *args, **kwargs), for the autotuner
        self._with_grid = self._launcher.with_grid
        if self.pre_run_hooks:  # only a kernel with hooks leaves the launcher's own fast path
            self._launch, self._with_grid = self._hooked_launch, self._hooked_with_grid

    def _launch_as_compiled(self, types: tuple):
        """The launch function (as ``_launch``) of a launcher that declares each runtime scalar parameter
        of the type `types` gives (an IR name; None: its annotation decides), the types a compiled kernel
        has: ``compiled[grid]`` launches through it. The kernel's own launcher where the annotations
        declare the same; one launcher per set of types otherwise."""
        sig = self.signature
        if all(t is None or t == declared for t, declared in zip(types, sig.declared)):
            return self._launch
        launcher = self._compiled_launchers.get(types)
        if launcher is None:
            launcher = _C.Launcher(self, support(), types)
            launcher.set_debug(self._debug)
            self._compiled_launchers[types] = launcher
        launch = launcher.launch
        if not self.pre_run_hooks:
            return launch

        def hooked(grid, /, *args, **kwargs):
            self._run_pre_run_hooks(args, kwargs)
            return launch(grid, *args, **kwargs)
        return hooked

    def add_pre_run_hook(self, hook) -> None:
        """Triton's: ``hook(*args, **kwargs)`` runs before every launch (and
        warmup) of this kernel, with the arguments as the launch was given
        them and ``debug`` among the keywords, e.g. to zero a split-K
        output that the kernel accumulates into."""
        if not callable(hook):
            raise coded(TypeError, "E0708", f"add_pre_run_hook of kernel '{self.__name__}' takes a callable, "
                                            f"got {type(hook).__name__}")
        self.pre_run_hooks.append(hook)
        self._launch, self._with_grid = self._hooked_launch, self._hooked_with_grid

    def _run_pre_run_hooks(self, args: tuple, kwargs: dict) -> None:
        hook_kwargs = {**kwargs, "debug": kwargs.get("debug", self._debug)}
        for hook in self.pre_run_hooks:
            hook(*args, **hook_kwargs)

    def _hooked_launch(self, grid, /, *args, **kwargs):
        self._run_pre_run_hooks(args, kwargs)
        return self._launcher.launch(grid, *args, **kwargs)

    def _hooked_with_grid(self, grid):
        launch = self._launcher.with_grid(grid)

        def hooked(*args, **kwargs):
            self._run_pre_run_hooks(args, kwargs)
            return launch(*args, **kwargs)
        return hooked

    @property
    def debug(self) -> bool:
        """Debug mode: bounds-checked accesses and device asserts (docs/debug-mode.md). On for every
        kernel while tegula.knobs.runtime.debug (TEGULA_DEBUG) is."""
        return self._debug

    @debug.setter
    def debug(self, value) -> None:
        self._own_debug = bool(value)
        self._apply_debug()

    def _apply_debug(self) -> None:
        self._debug = self._own_debug or knobs.runtime.debug
        self._launcher.set_debug(self._debug)  # part of the launch key
        for launcher in self._compiled_launchers.values():
            launcher.set_debug(self._debug)

    # --- launching ----------------------------------------------------------

    def __getitem__(self, grid):
        return self._with_grid(grid)

    def __call__(self, /, *args, **kwargs):
        name = self.__name__
        raise coded(TypeError, "E0707", f"kernel '{name}' cannot be called like a Python function; launch it "
                                        f"with a grid: {name}[grid](...)")

    def warmup(self, /, *args, grid=None, **kwargs):
        """Compiles (or loads) the kernel for these arguments without launching it;
        returns the CompiledKernel (``.asm``, ``.metadata``), as Triton's does.
        ``compiled[grid](*args)`` then launches it (Triton's runner). A torch
        dtype among the positional arguments stands for an array of it
        (``MockTensor``, as in Triton): nothing is allocated."""
        args = tuple(MockTensor.wrap_dtype(a) for a in args)
        if self.pre_run_hooks:
            self._run_pre_run_hooks(args, kwargs)
        outer = getattr(_WARMING, "on", False)
        _WARMING.on = True
        try:
            compiled = self._launcher.warmup(grid, *args, **kwargs)
        finally:
            _WARMING.on = outer
        if compiled is not None:  # None: a jit_cache_hook declined the compile
            _remember_owner(compiled, self, args, kwargs)
        return compiled

    def run(self, /, *args, grid, warmup=False, **kwargs):
        """Triton's ``kernel.run(*args, grid=grid, warmup=False, **kwargs)``:
        ``kernel[grid](*args, **kwargs)``, or ``warmup`` when it is true."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        compiled = self._launch(grid, *args, **kwargs)
        if compiled is not None:  # the kernel a library launches again later, as compiled[grid](*args)
            _remember_owner(compiled, self, args, kwargs)
        return compiled

    def inspect(self, /, *args, **kwargs) -> KernelInspection:
        """The IR after every stage and the generated source, for these arguments."""
        kernel, device = self._launcher.inspect(*args, **kwargs)
        if kernel is None:
            raise coded(RuntimeError, "E0708", f"kernel '{self.__name__}' was not compiled: "
                                               "tegula.knobs.runtime.jit_cache_hook declined it")
        return KernelInspection(kernel, device)

    def report(self, /, *args, grid=None, plot=None, **kwargs):
        """Launches with these arguments a few times (``do_bench``) and sets
        the launch against the machine's floors: bytes and operations as the
        compiler counts them, time, the share of the copy bandwidth and of
        the matrix rate reached, the bound, what limits it (``print`` it).
        ``plot="roofline.png"`` also draws the roofline. docs/profiling.md."""
        from ._report import report
        return report(self, args, kwargs, grid, plot)

    def _request_for(self, /, *args, **kwargs):
        """(KernelRequest, CompileOptions) that a launch with these arguments
        compiles, sources included: for tools and tests that compile it
        themselves (another backend, another architecture)."""
        request, options = self._launcher.request(*args, **kwargs)
        specs = request.args  # a copy: collect_sources resolves the @jit functions passed as constexprs
        request.functions = collect_sources(self, specs)
        request.args = specs
        self._name_request(request)
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

    @property
    def params(self) -> list:
        """Triton's ``JITFunction.params``: a KernelParam per parameter, in order."""
        sig = self.signature

        def listed(which, num, name):
            return num in which or name in which

        def annotation(name):
            param = sig.parameters.get(name)
            try:
                return annotation_text(None if param is None else _annotation(param))
            except Exception:  # an annotation object that cannot say what it is: Triton would show its str
                return ""

        return [KernelParam(num, name, is_constexpr, listed(self.do_not_specialize, num, name),
                            listed(self.do_not_specialize_on_alignment, num, name),
                            _inspect.Parameter.empty if default is _MISSING else default, annotation(name))
                for num, (name, is_constexpr, default) in enumerate(zip(sig.names, sig.is_constexpr, sig.defaults))]

    @property
    def cache_key(self) -> str:
        """Triton's ``JITFunction.cache_key``: a hex digest of the kernel's source and of every @jit
        function it calls, which libraries name their tuning records by. It changes when any of them
        does (``_unsafe_update_src`` included)."""
        if self._cache_key is None:
            digest = hashlib.sha256()
            for source in collect_sources(self):
                digest.update(f"{source.name}\0{len(source.source)}\0{source.source}\0".encode())
            self._cache_key = digest.hexdigest()
        return self._cache_key

    @property
    def __globals__(self) -> dict:
        """The kernel function's module globals, as Python functions (and Triton's JITFunction) have them."""
        return self.fn.__globals__

    def get_capture_scope(self) -> dict:
        """The names the kernel's body can see (Triton's JITFunction.get_capture_scope): its globals, and the
        values of the variables it closes over where it is defined inside a function."""
        fn = self.fn
        if fn.__closure__ is None:
            return self.__globals__
        return self.__globals__ | {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars,
                                                                                  fn.__closure__)}

    def _launch_plan(self) -> tuple:
        """The signature as the launcher binds against it: (names,
        is_constexpr, defaults, do_not_specialize, the no-default sentinel,
        do_not_specialize_on_alignment, the scalar type each annotation
        declares or None)."""
        sig = self.signature
        return (sig.names, sig.is_constexpr, sig.defaults, self.do_not_specialize, _MISSING,
                self.do_not_specialize_on_alignment, sig.declared)

    def repr(self, specialization) -> str:
        """The compiled kernel's name for `specialization`: what `@jit(repr=...)`
        returns for it, else the function's name (Triton's JITFunction.repr)."""
        return self.__name__ if self._repr is None else self._repr(specialization)

    def _name_request(self, request) -> None:
        """Gives the compiled kernel the name `@jit(repr=...)` makes for this
        specialization; without `repr` the request keeps the function's name."""
        if self._repr is None:
            return
        name = self.repr(Specialization(self, request))
        if not isinstance(name, str) or not (name.isascii() and name.isidentifier()):  # a C symbol
            raise coded(ValueError, "E0708", f"@jit(repr=...) of '{self.__name__}' must return an identifier "
                                             f"(the compiled kernel's name), got {name!r}")
        request.name = name

    def _compile(self, request, options):
        """A launch's cache miss: `request` holds the argument specs and
        `options` the backend and launch options the launcher worked out;
        this adds the sources and globals of the kernel and of every @jit
        function it calls, and compiles (the disk cache first). None when
        tegula.knobs.runtime.jit_cache_hook declines the compile."""
        started = time.perf_counter()
        specs = request.args  # a copy: collect_sources resolves the @jit functions passed as constexprs
        watches = []
        request.functions = collect_sources(self, specs, watches)
        request.args = specs
        self._name_request(request)
        runtime = knobs.runtime
        hook_arguments = None
        if runtime.jit_cache_hook is not None or runtime.jit_post_compile_hook is not None:
            hook_arguments = self._jit_hook_arguments(request, options)
            if runtime.jit_cache_hook is not None and runtime.jit_cache_hook(**hook_arguments):
                return None
        options.always_compile = knobs.compilation.always_compile
        if _env_flag("TEGULA_PROFILE_COMPILE"):
            python_s = time.perf_counter() - started
            kernel, phases = _C.compile_with_profile(request, options)
            _print_compile_profile(request.name or self.__name__, options.backend, [("python", python_s)] + phases)
        else:
            kernel = _C.compile(request, options)
        show_compile_warnings(kernel, stacklevel=2)
        sig = self.signature
        self._specializations.record(sig.names, sig.is_constexpr, request, options)
        with _WATCHES_LOCK:
            _GLOBAL_WATCHES[id(kernel)] = tuple(watches)
        # Tegula loads a kernel as it compiles it: both load hooks are told once it is loaded.
        if runtime.kernel_load_start_hook or runtime.kernel_load_end_hook:
            for hook in (runtime.kernel_load_start_hook, runtime.kernel_load_end_hook):
                if hook:
                    hook(None, None, kernel.name, {}, kernel.key)
        if hook_arguments is not None and runtime.jit_post_compile_hook is not None:
            runtime.jit_post_compile_hook(**hook_arguments)
        return kernel

    def _jit_hook_arguments(self, request, options) -> dict:
        """What Triton gives jit_cache_hook and jit_post_compile_hook, as keywords."""
        spec = Specialization(self, request)
        warmup = bool(getattr(_WARMING, "on", False))
        key = (tuple(spec.signature.items()), tuple(sorted(spec.constants.items(), key=lambda item: item[0])),
               options.num_warps, options.num_stages, options.fp_fusion, options.debug, options.backend)
        settings = {"num_warps": options.num_warps, "num_ctas": 1, "num_stages": options.num_stages,
                    "enable_fp_fusion": options.fp_fusion, "launch_cooperative_grid": False}
        arguments = ", ".join(f"{name}: {kind}" for name, kind in spec.signature.items())
        listed = ", ".join(f"{name}={value}" for name, value in settings.items())
        compile_info = {"key": key, "signature": spec.signature, "device": options.device,
                        "constants": spec.constants, **settings, "extern_libs": (), "configs": [{}],
                        "specialization_data": None, "is_warmup": warmup, "debug": options.debug,
                        "backend": options.backend}
        return {"key": key, "repr": f"{self.__qualname__}[{listed}]({arguments})",
                "fn": knobs.JitFunctionInfo(self.__module__, self.__qualname__, self),
                "compile": compile_info, "is_manual_warmup": warmup, "already_compiled": False}

    @staticmethod
    def _take_global_watches(kernel) -> tuple:
        """The globals `kernel` was compiled with, as (module globals, name, value): the launcher keeps
        them, and compiles again when one is rebound (Triton raises instead)."""
        with _WATCHES_LOCK:
            return _GLOBAL_WATCHES.pop(id(kernel), ())

    def __repr__(self) -> str:
        return f"<tegula.JITFunction {self.__module__}.{self.__qualname__}>"


def show_compile_warnings(compiled, stacklevel: int) -> None:
    """Issues what the compiler warned of while building `compiled` as
    tegula.CompileWarning, attributed to the frame `stacklevel` above the
    caller's (1: the caller; the launch or the tegula.compile call). Only a build warns: a kernel loaded from the
    disk cache carries no warnings, as in Triton."""
    for text in compiled.warnings:
        warnings.warn(CompileWarning(text.rstrip("\n")), stacklevel=stacklevel + 1)


def _parameter_list(which) -> tuple:
    """do_not_specialize and its kin: parameter names or indices; one or None
    (Triton's default) are accepted too."""
    if which is None:
        return ()
    if isinstance(which, (str, int)):
        return (which,)
    return tuple(which)


# Tegula's IR scalar names where Triton's signatures spell them otherwise ("i32" is both).
_TRITON_TYPE_NAMES = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "f8e4m3": "fp8e4nv", "f8e5m2": "fp8e5",
                     "f8e4b15": "fp8e4b15", "f8e4b8": "fp8e4b8", "f8e5b16": "fp8e5b16"}


class Specialization:
    """What `@jit(repr=...)` is given, as Triton gives it: ``signature`` (each
    runtime parameter's type: ``"i32"``, ``"*fp32"``, ``"constexpr"``...),
    ``constants`` (constexpr parameters and the ints specialized as 1, by
    name) and ``fn``, the kernel."""

    def __init__(self, fn: JITFunction, request):
        kinds = _C.ArgSpec.Kind
        self.fn = fn
        self.signature = {}
        self.constants = {}
        for name, spec in zip(fn.signature.names, request.args):
            if spec.kind == kinds.Tuple:
                self.signature[name] = _tuple_signature(spec)
            elif spec.kind == kinds.Constexpr:
                self.signature[name] = "constexpr"
                self.constants[name] = _constant_of(spec.value)
            elif spec.kind == kinds.Int and spec.is_one and not spec.typed_one:
                self.signature[name] = "constexpr"
                self.constants[name] = 1
            else:
                self.signature[name] = _signature_type(spec)

    def __repr__(self) -> str:
        return f"Specialization({self.fn.__name__}, signature={self.signature}, constants={self.constants})"


def _tuple_signature(spec) -> str:
    """A runtime tuple's types as Triton writes them: ``"(*fp32,i32,constexpr)"``."""
    kinds = _C.ArgSpec.Kind
    parts = []
    for part in spec.parts:
        if part.kind == kinds.Tuple:
            parts.append(_tuple_signature(part))
        elif part.kind == kinds.Constexpr or (part.kind == kinds.Int and part.is_one):
            parts.append("constexpr")
        else:
            parts.append(_signature_type(part))
    return "(" + ",".join(parts) + ")"


def _signature_type(spec) -> str:
    """A runtime value's type as Triton writes it: ``"*fp32"``, ``"i32"``, ``"nvTmaDesc"`` (a host TMA
    descriptor, passed by value)."""
    kinds = _C.ArgSpec.Kind
    if spec.kind == kinds.Pointer and spec.by_value_bytes:
        return "nvTmaDesc"
    if spec.kind in (kinds.Pointer, kinds.TensorDescriptor):
        return "*" + _TRITON_TYPE_NAMES.get(spec.dtype, spec.dtype)
    return _TRITON_TYPE_NAMES.get(spec.dtype, spec.dtype)


def _constant_of(value):
    """The Python value of a constexpr's GlobalValue."""
    kind = _C.GlobalValue.Kind
    if value.kind == kind.Int:
        return value.int_value
    if value.kind == kind.Bool:
        return bool(value.int_value)
    if value.kind == kind.Float:
        return value.float_value
    if value.kind in (kind.Str, kind.DType):
        return value.text
    return None


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


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=(),
        do_not_specialize_on_alignment=(), debug=False, noinline=False):
    """Marks a function as a Tegula kernel (or a device function kernels call).

    Takes every keyword Triton's ``jit`` takes. ``do_not_specialize`` lists
    parameters (names or indices) whose int values should not specialize the
    kernel, ``do_not_specialize_on_alignment`` those whose alignment (pointers)
    or divisibility by 16 (ints) should not; ``repr(specialization)`` names the
    compiled kernel (``Specialization``); ``debug`` (or ``TEGULA_DEBUG=1``) turns
    on bounds checks and device asserts. ``noinline``, ``launch_metadata`` and
    ``version`` are accepted and change nothing (docs/triton-compat.md).
    """

    def decorate(f):
        return JITFunction(f, version=version, repr=repr, launch_metadata=launch_metadata,
                           do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment, debug=debug,
                           noinline=noinline)

    return decorate if fn is None else decorate(fn)
