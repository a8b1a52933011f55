"""Triton's ``triton.knobs``: the process's settings as objects.

    tegula.knobs.cache.dir = "/scratch/kernels"
    tegula.knobs.runtime.launch_enter_hook.add(lambda metadata: print(metadata.get()["name"]))
    with tegula.knobs.compilation.scope():
        tegula.knobs.compilation.always_compile = True
        ...

A setting tied to an environment variable reads it until it is set here; setting it also sets the
variable (unless ``propagate_env`` is False), so child processes see it, and assigning ``knobs.env``
forgets the value set here. ``cache.dir``, ``cache.dump_dir`` and ``cache.override_dir`` are read by
Tegula's compiler from their variables, so they always set them.

Which settings act in Tegula, and how, is in docs/python-api.md ("Settings: tegula.knobs"). The others
Triton has (tool paths, AMD and NVIDIA switches, ...) are accepted and kept, so that code setting them
runs; setting one to anything but its default warns once that it changes nothing here. A name that is
not a setting at all is an AttributeError that suggests the nearest one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from typing import Any, Callable, Optional

from . import _C, _environment

propagate_env: bool = True


class Env:
    """The value to assign to forget a setting made here: ``knobs.cache.dir = knobs.env``."""

    def __repr__(self) -> str:
        return "tegula.knobs.env"


env = Env()

_inert_warned: set = set()


def _set_variable(key: str, value: Any) -> None:
    """The environment's text for `value` (None: unset), as Triton writes it."""
    if value is None:
        os.environ.pop(key, None)
    elif isinstance(value, bool):
        os.environ[key] = "1" if value else "0"
    elif isinstance(value, (str, int)):
        os.environ[key] = str(value)
    elif isinstance(value, os.PathLike):
        os.environ[key] = os.fspath(value)


class _Setting:
    """One setting: the value set here, else the environment variable `key` read by `read`, else
    `default`. `acts`: Tegula does something with it (else setting it away from its default warns).
    `always_propagate`: Tegula's compiler reads the variable, so setting it always writes it."""

    def __init__(self, key: Optional[str], read: Callable[[str], Any], default: Any = None, *, acts: bool = True,
                 always_propagate: bool = False, check: Optional[Callable[[str, Any], None]] = None):
        self.key, self.read, self.default = key, read, default
        self.acts, self.always_propagate, self.check = acts, always_propagate, check

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        if self.name in obj.__dict__:
            return obj.__dict__[self.name]
        if self.key is not None and os.environ.get(self.key) is not None:
            return self.read(self.key)
        return self.default() if callable(self.default) else self.default

    def __set__(self, obj, value) -> None:
        if isinstance(value, Env):
            self.__delete__(obj)
            return
        if self.check is not None:
            self.check(f"{obj._prefix}.{self.name}", value)
            if self.check is _is_bool:
                value = bool(value)
        obj.__dict__[self.name] = value
        if self.key is not None and (propagate_env or self.always_propagate):
            _set_variable(self.key, value)
        if not self.acts and value != (self.default() if callable(self.default) else self.default):
            _warn_inert(f"{obj._prefix}.{self.name}")
        obj._changed(self.name)

    def __delete__(self, obj) -> None:
        obj.__dict__.pop(self.name, None)
        obj._changed(self.name)


def _warn_inert(name: str) -> None:
    if name in _inert_warned:
        return
    _inert_warned.add(name)
    warnings.warn(f"tegula.knobs.{name} is accepted for Triton's code and changes nothing in Tegula "
                  f"(docs/python-api.md, \"Settings: tegula.knobs\")", RuntimeWarning,
                  stacklevel=_environment._callers_level())


def _flag(key: str) -> bool:
    return _environment.flag(key)


def _text(key: str) -> Optional[str]:
    return os.environ.get(key) or None


def _is_bool(name: str, value) -> None:
    if not isinstance(value, bool) and not (type(value) is int and value in (0, 1)):
        raise TypeError(f"tegula.knobs.{name} is a switch: set it to True or False, got {value!r}")


def _is_path(name: str, value) -> None:
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"tegula.knobs.{name} is a directory: set it to a str path (or knobs.env to forget it), "
                        f"got {type(value).__name__}")


def _is_hook(name: str, value) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"tegula.knobs.{name} takes a function (or None), got {type(value).__name__}")


def _switch(key: Optional[str], default: bool = False, **how) -> _Setting:
    return _Setting(key, _flag, default, check=_is_bool, **how)


class base_knobs:
    """One namespace of settings (``knobs.cache``, ``knobs.runtime``, ...), as Triton's base_knobs."""

    _prefix = ""

    def __setattr__(self, name: str, value) -> None:
        if not hasattr(type(self), name):
            raise AttributeError(_unknown(self, name))
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str):  # only for names that are no attribute at all
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(_unknown(self, name))

    def _changed(self, name: str) -> None:
        """What a setting of this group does at once when it changes (most are read where used)."""

    @property
    def knob_descriptors(self) -> dict:
        """The settings of this group that have an environment variable: {name: setting}."""
        return {name: s for klass in reversed(type(self).__mro__) for name, s in vars(klass).items()
                if isinstance(s, _Setting) and s.key is not None}

    @property
    def knobs(self) -> dict:
        """Every setting of this group and its value now."""
        return {name: getattr(self, name) for name in _names(self)}

    def copy(self):
        other = type(self)()
        other.__dict__.update(self.__dict__)
        return other

    def reset(self):
        """Forgets every value set here: the environment (or the default) again."""
        for name in list(self.__dict__):
            setting = getattr(type(self), name, None)
            if isinstance(setting, _Setting):
                setting.__delete__(self)
            else:
                del self.__dict__[name]
        return self

    @contextlib.contextmanager
    def scope(self):
        """Settings changed inside the block are put back after it: the values set here, the hooks
        chained and the environment variables."""
        saved = dict(self.__dict__)
        chained = {name: list(v.calls) for name, v in saved.items() if isinstance(v, HookChain)}
        variables = {s.key: os.environ.get(s.key) for s in self.knob_descriptors.values()}
        try:
            yield self
        finally:
            for key, value in variables.items():
                _set_variable(key, value)
            for name, calls in chained.items():
                saved[name].calls[:] = calls
            changed = set(saved) | set(self.__dict__)  # telling an unchanged setting again is harmless
            self.__dict__.clear()
            self.__dict__.update(saved)
            for name in changed:
                self._changed(name)


def _names(group: base_knobs) -> list:
    return sorted({name for klass in type(group).__mro__ for name, v in vars(klass).items()
                   if isinstance(v, (_Setting, _Hooks))})


def _unknown(group: base_knobs, name: str) -> str:
    known = _names(group)
    meant = _C.closest_name(name, known)
    hint = f"did you mean '{meant}'? " if meant else ""
    return f"tegula.knobs.{group._prefix} has no setting '{name}': {hint}it has {', '.join(known)}"


class HookChain:
    """Triton's chain of hooks of one kind: ``add(f)``, ``remove(f)``, and calling the chain calls
    each hook in the order added (the reverse for exit hooks)."""

    def __init__(self, reversed: bool = False, on_change: Optional[Callable[[], None]] = None):
        self.calls: list = []
        self.reversed = reversed
        self._on_change = on_change

    def add(self, func) -> None:
        if not callable(func):
            raise TypeError(f"a hook is a function, got {type(func).__name__}")
        if func not in self.calls:
            self.calls.append(func)
            if self._on_change is not None:
                self._on_change()

    def remove(self, func) -> None:
        self.calls.remove(func)  # ValueError for a hook never added, as list.remove and Triton's
        if self._on_change is not None:
            self._on_change()

    def __call__(self, *args, **kwargs) -> None:
        for func in (reversed(self.calls) if self.reversed else list(self.calls)):
            func(*args, **kwargs)

    def __bool__(self) -> bool:
        return bool(self.calls)

    def __repr__(self) -> str:
        return f"HookChain({self.calls!r})"


class _Hooks:
    """A hook slot of knobs.runtime: holds a HookChain (or, as Triton allows, any function, or None);
    a change tells the launch observer (tegula/profiling.py) whether launches need observing."""

    def __init__(self, reversed: bool = False, observed: bool = False):
        self.reversed, self.observed = reversed, observed

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def _chain(self, obj) -> HookChain:
        return HookChain(self.reversed, on_change=self._notify if self.observed else None)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        if self.name not in obj.__dict__:
            obj.__dict__[self.name] = self._chain(obj)
        return obj.__dict__[self.name]

    def __set__(self, obj, value) -> None:
        if value is None:
            value = self._chain(obj)
        elif not callable(value):
            raise TypeError(f"tegula.knobs.runtime.{self.name} takes a function, a HookChain or None, got "
                            f"{type(value).__name__}")
        elif isinstance(value, HookChain) and self.observed:
            value._on_change = self._notify
        obj.__dict__[self.name] = value
        if self.observed:
            self._notify()

    @staticmethod
    def _notify() -> None:
        from . import profiling
        profiling._install()


@dataclasses.dataclass
class JitFunctionInfo:
    """What jit_cache_hook and jit_post_compile_hook get as ``fn``."""

    module: str
    name: str
    jit_function: Any


# --- the groups ---------------------------------------------------------------------------------------

def _cache_home() -> str:
    return _C.cache_directory(_C.CompileOptions())


class cache_knobs(base_knobs):
    _prefix = "cache"
    home_dir = _Setting("TRITON_HOME", _text, lambda: os.path.expanduser("~/"), acts=False, check=_is_path)
    dir = _Setting("TEGULA_CACHE_DIR", _text, _cache_home, always_propagate=True, check=_is_path)
    dump_dir = _Setting("TEGULA_DUMP_DIR", _text, None, always_propagate=True, check=_is_path)
    override_dir = _Setting("TEGULA_OVERRIDE_DIR", _text, None, always_propagate=True, check=_is_path)
    manager_class = _Setting(None, _text, None, acts=False)
    remote_manager_class = _Setting(None, _text, None, acts=False)


class compilation_knobs(base_knobs):
    _prefix = "compilation"
    always_compile = _switch("TEGULA_ALWAYS_COMPILE")
    override = _switch(None, acts=False)
    dump_ir = _switch(None, acts=False)
    dump_ir_extract_di_local_variables = _switch(None, acts=False)
    store_binary_only = _switch(None, acts=False)
    use_ir_loc = _Setting(None, _text, None, acts=False)
    enable_asan = _switch(None, acts=False)
    disable_line_info = _switch(None, acts=False)
    front_end_debugging = _switch(None, acts=False)
    allow_non_constexpr_globals = _switch(None, acts=False)
    instrumentation_mode = _Setting(None, _text, "", acts=False)
    listener = _Setting(None, _text, None, acts=False, check=_is_hook)


class autotuning_knobs(base_knobs):
    _prefix = "autotuning"
    # Tegula keeps tuning results by default (@autotune(cache_results=True)); False turns that off
    # for every kernel of the process.
    cache = _switch(None, True)
    print = _switch("TEGULA_PRINT_AUTOTUNING")
    listener = _Setting(None, _text, None, check=_is_hook)


class runtime_knobs(base_knobs):
    _prefix = "runtime"
    debug = _switch("TEGULA_DEBUG")
    interpret = _switch(None, acts=False)
    override_arch = _Setting(None, _text, None, acts=False)
    launch_enter_hook = _Hooks(observed=True)
    launch_exit_hook = _Hooks(reversed=True, observed=True)
    kernel_load_start_hook = _Hooks()
    kernel_load_end_hook = _Hooks(reversed=True)
    kernel_unload_hook = _Hooks()
    jit_cache_hook = _Setting(None, _text, None, check=_is_hook)
    jit_post_compile_hook = _Setting(None, _text, None, check=_is_hook)
    add_stages_inspection_hook = _Setting(None, _text, None, acts=False, check=_is_hook)

    def _changed(self, name: str) -> None:
        if name == "debug":
            from .jit import _debug_setting_changed  # (the package's `jit` is the decorator)
            _debug_setting_changed()
        elif name in ("launch_enter_hook", "launch_exit_hook"):
            _Hooks._notify()


class language_knobs(base_knobs):
    _prefix = "language"
    fp32_default = _Setting(None, _text, None, acts=False)
    default_fp_fusion = _switch(None, True, acts=False)


class _Inert(base_knobs):
    """A group Tegula has no use for (toolchain paths, other vendors' switches): every name Triton's
    code sets is kept, and warned of once."""

    def __setattr__(self, name: str, value) -> None:
        if value is not None and value is not False:
            _warn_inert(f"{self._prefix}.{name}")
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class build_knobs(_Inert):
    _prefix = "build"


class nvidia_knobs(_Inert):
    _prefix = "nvidia"


class amd_knobs(_Inert):
    _prefix = "amd"


class proton_knobs(_Inert):
    _prefix = "proton"


class redis_knobs(_Inert):
    _prefix = "redis"


cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
build = build_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()
proton = proton_knobs()
redis = redis_knobs()


def refresh_knobs() -> None:
    """Triton's: read the environment again. Settings here read it whenever they are read; this puts
    the debug switch, which kernels hold, in step with it."""
    runtime._changed("debug")


__all__ = ["base_knobs", "cache", "compilation", "autotuning", "runtime", "language", "build", "nvidia", "amd", "proton",
           "redis", "env", "Env", "propagate_env", "HookChain", "JitFunctionInfo", "refresh_knobs"]
