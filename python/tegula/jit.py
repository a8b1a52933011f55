"""``@tegula.jit`` and the launch path.

``kernel[grid](*args, **kwargs)`` binds the arguments like a Python call,
turns each one into a key part (see ``_specialize``), and looks the tuple of
parts up in the kernel's in-memory cache. A hit launches straight away; only a
miss builds a compile request (sources, globals, ArgSpecs) for the C++
compiler, which has its own on-disk cache behind it.

Pointer key parts record where their memory is, so the key also fixes the
backend and the CUDA device (``_device.choose``); a CUDA launch adds the
caller's current stream of that device, looked up at every launch.

The launch itself is one call into C++ (``_C.Launcher``, src/bindings/
bind_launch.cpp): it binds, specializes and finds the cached kernel for the
common argument kinds without building the Python key, and calls back here
for a cache miss (``_entry_for_launch``) and for every launch it leaves to
Python (``_launch_python``: debug kernels, binding errors, TensorDescriptor
arguments). The Python methods below stay the definition it follows.
"""

from __future__ import annotations

import functools
import inspect as _inspect
import operator
import os
import sys
import time
import types

from . import _C, _debug, _device
from ._globals import collect_sources
from ._specialize import arg_spec, constexpr_part, launch_support, place, runtime_part
from .tensor_descriptor import debug_arguments, flatten_launch_values
from ._errors import coded

_MISSING = object()
_LAUNCH_OPTIONS = ("num_warps", "num_stages")
# Bool launch options. enable_fp_fusion (default True, as in Triton) lets the
# CUDA backend contract f32/f64 a*b+c into one FMA; the CPU backend never
# contracts and accepts it only so the same launch runs on both.
_BOOL_LAUNCH_OPTIONS = ("enable_fp_fusion",)


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
    """The kernel's parameters as the compiler parsed them, plus what binding needs."""

    def __init__(self, jit_fn: "JITFunction"):
        fn_source = _C.FunctionSource(name=jit_fn.__name__, filename=jit_fn.filename,
                                      source=jit_fn.src, first_line=jit_fn.first_line)
        params = _C.parse_signature(fn_source)
        self.names = tuple(p[0] for p in params)
        self.is_constexpr = tuple(p[1] for p in params)
        self.index = {name: i for i, name in enumerate(self.names)}
        python_params = _inspect.signature(jit_fn.fn).parameters
        self.defaults = tuple(
            python_params[name].default
            if name in python_params and python_params[name].default is not _inspect.Parameter.empty
            else _MISSING
            for name in self.names)
        unspecialized = {self._resolve(jit_fn.__name__, p) for p in jit_fn.do_not_specialize}
        self.specialize = tuple(i not in unspecialized for i in range(len(self.names)))

    def _resolve(self, kernel: str, param) -> int:
        if isinstance(param, int) and 0 <= param < len(self.names):
            return param
        if isinstance(param, str) and param in self.index:
            return self.index[param]
        raise coded(ValueError, "E0708", f"do_not_specialize of kernel '{kernel}' names {param!r}, which is not "
                                         f"one of its parameters ({', '.join(self.names)})")


class _Entry:
    """A cached launch target: the kernel, which bound arguments it takes, and
    the CUDA device it runs on (None for the CPU backend). ``flatten``: some
    argument is a TensorDescriptor, whose launch value is a tuple of several
    kernel parameters."""

    __slots__ = ("kernel", "runtime_indices", "device", "flatten")

    def __init__(self, kernel, runtime_indices, device, flatten=False):
        self.kernel = kernel
        self.runtime_indices = runtime_indices
        self.device = device
        self.flatten = flatten


def _runtime_indices(sig: "_Signature", params) -> tuple:
    """The bound argument behind each kernel parameter; a TensorDescriptor's
    NAME__base, NAME__shape<d> and NAME__stride<d> count once."""
    indices = []
    for name, *_ in params:
        i = sig.index.get(name)
        if i is None:
            i = sig.index[name.rsplit("__", 1)[0]]
            if indices and indices[-1] == i:
                continue
        indices.append(i)
    return tuple(indices)


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
        self._cache: dict = {}
        self._launcher = _C.Launcher(self, launch_support())
        self._launch_fast = self._launcher.launch
        self._with_grid = self._launcher.with_grid
        self.debug = bool(debug) or _env_flag("TEGULA_DEBUG")

    @property
    def debug(self) -> bool:
        """Debug mode: bounds-checked accesses and device asserts (docs/debug-mode.md)."""
        return self._debug

    @debug.setter
    def debug(self, value) -> None:
        self._debug = bool(value)
        self._launcher.set_debug(self._debug)  # debug launches take the Python path

    # --- launching ----------------------------------------------------------

    def __getitem__(self, grid):
        return self._with_grid(grid)

    def __call__(self, /, *args, **kwargs):
        name = self.__name__
        raise coded(TypeError, "E0707", f"kernel '{name}' cannot be called like a Python function; launch it "
                                        f"with a grid: {name}[grid](...)")

    def _launch(self, grid, /, *args, **kwargs):
        return self._launch_fast(grid, *args, **kwargs)

    def _launch_python(self, grid, args: tuple, kwargs: dict):
        """The whole launch in Python: the reference the C++ launcher follows,
        and what runs the launches it leaves to this side."""
        sig = self._signature or self._load_signature()
        kwargs = dict(kwargs)
        options = self._pop_launch_options(sig, kwargs) if kwargs else None
        values = self._bind(sig, args, kwargs)
        key, launch_values = self._specialize(sig, values, options)
        grid3 = self._resolve_grid(grid, sig, values, options)
        entry = self._cached_entry(sig, key)
        if entry is None:
            entry = self._compile(sig, key)
        if self.debug:
            return self._launch_debug(entry, grid3, values, launch_values)
        device = entry.device
        args = [launch_values[i] for i in entry.runtime_indices]
        if entry.flatten:
            args = flatten_launch_values(args)
        if device is None:
            entry.kernel.launch(grid3, args)
        else:
            entry.kernel.launch(grid3, args, _device.current_stream(device), device)
        return entry.kernel

    def _launch_debug(self, entry, grid3, values, launch_values):
        """A debug launch: the kernel also gets every array's extent, and an
        error it records is raised as tegula.DeviceError."""
        args = [launch_values[i] for i in entry.runtime_indices]
        extents = _debug.extents([values[i] for i in entry.runtime_indices])
        if entry.flatten:
            args = flatten_launch_values(args)
            extents = _debug.extents(debug_arguments([values[i] for i in entry.runtime_indices]))
        if entry.device is None:
            entry.kernel.launch(grid3, args, extents=extents)
        else:
            entry.kernel.launch(grid3, args, _device.current_stream(entry.device), entry.device, extents)
        return entry.kernel

    def _launch_plan(self) -> tuple:
        """What the C++ launcher needs to bind and specialize by itself."""
        sig = self._signature or self._load_signature()
        return sig.names, sig.is_constexpr, sig.specialize, sig.defaults, _MISSING

    def _entry_for_launch(self, args: tuple, kwargs: dict) -> "_Entry":
        """The entry for a launch the C++ launcher has not seen: looked up (or
        compiled) by its Python key, so the two caches agree."""
        sig = self._signature or self._load_signature()
        kwargs = dict(kwargs)
        options = self._pop_launch_options(sig, kwargs) if kwargs else None
        key, _ = self._specialize(sig, self._bind(sig, args, kwargs), options)
        entry = self._cached_entry(sig, key)
        return entry if entry is not None else self._compile(sig, key)

    def warmup(self, /, *args, grid=None, **kwargs):
        """Compiles (or loads) the kernel for these arguments without launching it."""
        sig = self._signature or self._load_signature()
        options = self._pop_launch_options(sig, kwargs) if kwargs else None
        values = self._bind(sig, args, kwargs)
        key, _ = self._specialize(sig, values, options)
        if grid is not None:
            self._resolve_grid(grid, sig, values, options)
        entry = self._cached_entry(sig, key)
        if entry is None:
            entry = self._compile(sig, key)
        return entry.kernel

    def inspect(self, /, *args, **kwargs) -> KernelInspection:
        """The IR after every stage and the generated source, for these arguments."""
        sig = self._signature or self._load_signature()
        options = self._pop_launch_options(sig, kwargs) if kwargs else None
        values = self._bind(sig, args, kwargs)
        key, _ = self._specialize(sig, values, options)
        compile_options, device = self._compile_options(sig, key)
        compile_options.keep_stages = True
        return KernelInspection(_C.compile(self._request(sig, key), compile_options), device)

    # --- binding and specialization -------------------------------------------

    @property
    def arg_names(self) -> tuple:
        return (self._signature or self._load_signature()).names

    def _load_signature(self) -> _Signature:
        self._signature = _Signature(self)
        return self._signature

    def _pop_launch_options(self, sig: _Signature, kwargs: dict):
        options = None
        for option in _LAUNCH_OPTIONS:
            if option in kwargs and option not in sig.index:
                value = kwargs.pop(option)
                if type(value) is not int or value < 1:
                    raise coded(ValueError, "E0705", f"{option} of kernel '{self.__name__}' must be a positive "
                                                     f"int, got {value!r}")
                options = options or {}
                options[option] = value
        for option in _BOOL_LAUNCH_OPTIONS:
            if option in kwargs and option not in sig.index:
                value = kwargs.pop(option)
                if type(value) is not bool:
                    raise coded(ValueError, "E0705", f"{option} of kernel '{self.__name__}' must be a bool, got "
                                                     f"{value!r}")
                options = options or {}
                options[option] = value
        return options

    def _bind(self, sig: _Signature, args: tuple, kwargs: dict):
        count, given = len(sig.names), len(args)
        if given > count:
            raise coded(TypeError, "E0701", f"kernel '{self.__name__}' takes {count} arguments "
                                            f"({', '.join(sig.names)}) but {given} were given")
        if given == count and not kwargs:
            return args
        values = list(args) + [_MISSING] * (count - given)
        for name, value in kwargs.items():
            i = sig.index.get(name)
            if i is None:
                raise coded(TypeError, "E0701", f"kernel '{self.__name__}' got an unexpected keyword argument "
                                                f"'{name}'")
            if i < given:
                raise coded(TypeError, "E0701", f"kernel '{self.__name__}' got multiple values for argument "
                                                f"'{name}'")
            values[i] = value
        missing = []
        for i in range(given, count):
            if values[i] is _MISSING:
                if sig.defaults[i] is _MISSING:
                    missing.append(sig.names[i])
                else:
                    values[i] = sig.defaults[i]
        if missing:
            listed = ", ".join(f"'{m}'" for m in missing)
            noun = "argument" if len(missing) == 1 else "arguments"
            raise coded(TypeError, "E0701", f"kernel '{self.__name__}' is missing {len(missing)} required "
                                            f"{noun}: {listed}")
        return values

    def _specialize(self, sig: _Signature, values, options=None):
        """The in-memory cache key (one part per parameter, then the launch
        options that change the code) and the values the launcher receives."""
        name = self.__name__
        key, launch_values = [], []
        for param, value, is_constexpr, specialize in zip(sig.names, values, sig.is_constexpr,
                                                          sig.specialize):
            if is_constexpr:
                key.append(constexpr_part(name, param, value))
                launch_values.append(None)
            else:
                part, launch_value = runtime_part(name, param, value, specialize)
                key.append(part)
                launch_values.append(launch_value)
        if options and "num_warps" in options:
            key.append(("num_warps", options["num_warps"]))
        if options and options.get("num_stages") is not None:
            key.append(("num_stages", options["num_stages"]))
        if options and options.get("enable_fp_fusion") is False:  # True is the default: same key
            key.append(("enable_fp_fusion", False))
        if self.debug:  # a debug build never serves a launch without debug, nor the reverse
            key.append(("debug", True))
        return tuple(key), launch_values

    def _resolve_grid(self, grid, sig: _Signature, values, options):
        if callable(grid):
            meta = dict(zip(sig.names, values))
            if options:
                meta.update(options)
            grid = grid(meta)
        if type(grid) is tuple and len(grid) == 1:
            dim = grid[0]
            if type(dim) is int and dim >= 0:
                return (dim, 1, 1)
        return self._normalize_grid(grid)

    def _normalize_grid(self, grid):
        name = self.__name__
        if isinstance(grid, int) and not isinstance(grid, bool):
            grid = (grid,)
        if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
            raise coded(ValueError, "E0704", f"the grid of kernel '{name}' must be a tuple of 1 to 3 ints (or a "
                                             f"callable returning one), got {grid!r}")
        dims = []
        for dim in grid:
            try:
                dim = operator.index(dim)
            except TypeError:
                raise coded(ValueError, "E0704", f"the grid of kernel '{name}' must hold ints, got "
                                                 f"{type(dim).__name__} in {tuple(grid)!r}") from None
            if dim < 0:
                raise coded(ValueError, "E0704", f"the grid of kernel '{name}' must hold ints >= 0, got "
                                                 f"{tuple(grid)!r}")
            dims.append(dim)
        return tuple(dims + [1] * (3 - len(dims)))

    # --- compiling --------------------------------------------------------------

    def _cached_entry(self, sig: _Signature, key: tuple):
        """The compiled entry of a specialization, or None to compile it. With
        TEGULA_BACKEND set, the backend is chosen again at every launch (its
        conflicts are errors), and an entry compiled for another backend, under
        an earlier setting, is not used: the one for this backend is kept
        beside it (_forced_key), so the entry of `key` stays what the C++
        launcher caches for it too."""
        entry = self._cache.get(key)
        if entry is None or _device.forced_backend() is None:
            return entry
        backend, device = self._backend_of(sig, key)
        if (backend == "cpu") == (entry.device is None) and device == entry.device:
            return entry
        return self._cache.get(self._forced_key(sig, key))

    def _backend_of(self, sig: _Signature, key: tuple):
        places = {param: place(part) for param, part in zip(sig.names, key) if part[0] in ("p", "d")}
        return _device.choose(self.__name__, places)

    def _forced_key(self, sig: _Signature, key: tuple) -> tuple:
        """Where the entry of `key` compiled under TEGULA_BACKEND for a backend
        other than its first entry's is kept."""
        return key + (("backend",) + self._backend_of(sig, key),)

    def _request(self, sig: _Signature, key: tuple):
        parts = key[:len(sig.names)]
        return _C.KernelRequest(functions=collect_sources(self),
                                args=[arg_spec(part) for part in parts],
                                debug=("debug", True) in key[len(sig.names):])

    def _compile_options(self, sig: _Signature, key: tuple):
        """(CompileOptions, CUDA device or None) for a specialization: the
        backend follows where its pointer arguments live."""
        backend, device = self._backend_of(sig, key)
        options = _C.CompileOptions(backend=backend)
        if device is not None:
            options.device = device
        for extra in key[len(sig.names):]:
            if extra[0] == "num_warps":
                options.num_warps = extra[1]
            elif extra[0] == "num_stages":
                options.num_stages = extra[1]
            elif extra[0] == "enable_fp_fusion":
                options.fp_fusion = extra[1]
            elif extra[0] == "debug":
                options.debug = True
        return options, device

    def _compile(self, sig: _Signature, key: tuple) -> _Entry:
        started = time.perf_counter()
        options, device = self._compile_options(sig, key)
        request = self._request(sig, key)
        if _env_flag("TEGULA_PROFILE_COMPILE"):
            python_s = time.perf_counter() - started
            kernel, phases = _C.compile_with_profile(request, options)
            _print_compile_profile(self.__name__, options.backend, [("python", python_s)] + phases)
        else:
            kernel = _C.compile(request, options)
        try:
            runtime_indices = _runtime_indices(sig, kernel.params)
        except KeyError as e:
            raise RuntimeError(f"internal error: compiled kernel '{self.__name__}' has parameter "
                               f"{e} that its signature does not") from None
        flatten = any(param[0] not in sig.index for param in kernel.params)
        entry = _Entry(kernel, runtime_indices, device, flatten)
        self._cache[key if key not in self._cache else self._forced_key(sig, key)] = entry
        return entry

    def __repr__(self) -> str:
        return f"<tegula.JITFunction {self.__module__}.{self.__qualname__}>"


def _print_compile_profile(kernel: str, backend: str, phases: list) -> None:
    """TEGULA_PROFILE_COMPILE=1: one line per compile on stderr, e.g.
    ``tegula: compiled 'add' (cpu) in 0.412 s: python 1.1 ms, setup 0.2 ms, ...``
    (the phases: src/runtime/compile_profile.h; "python" is the request's
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
