"""``@tegula.autotune``, ``@tegula.heuristics`` and ``tegula.Config``.

    @tegula.autotune(configs=[tegula.Config({"BLOCK": 256}, num_warps=4),
                              tegula.Config({"BLOCK": 1024}, num_warps=8)],
                     key=["n"])
    @tegula.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @tegula.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr): ...

    kernel[lambda META: (tegula.cdiv(n, META["BLOCK"]),)](x, n)

The first launch for a new value of the key compiles every candidate config
(in parallel threads), times each one on the caller's own arguments, keeps
the fastest for that key (``.cache``) and on disk next to the kernel cache
(``_autotune_store``), then launches it. Later launches with the same key,
in this process or another one on the same device, launch the stored config
straight away.

Tuning never changes the caller's data: before timing, the autotuner saves
every array argument the kernel may update in place, as the compiler's
pointer provenance analysis reports it (``CompiledKernel.effects``), plus
those named in ``restore_value`` and ``reset_to_zero``; it puts them back before every
timed launch (untimed) and once more when tuning ends, so the launch that
follows sees exactly the arrays it was given. See docs/autotune.md.
"""

from __future__ import annotations

import collections.abc
import concurrent.futures
import json
import numbers
import os
import threading
import time
import warnings

import numpy as np

from . import _autotune_store, _C, _recompiles, knobs, testing
from ._autotune_report import Progress, first_line, print_autotuning, report
from ._saved_arguments import SavedArguments
from .jit import _MISSING, JITFunction, KernelInterface, _remember_owner
from ._errors import coded

__all__ = ["Config", "Autotuner", "Heuristics", "autotune", "heuristics", "AutotuneError",
           "AutotuneWarning"]

_PRUNE_KEYS = ("perf_model", "top_k", "early_config_prune")


class AutotuneError(RuntimeError, _C.TritonError):
    """Tuning found no config to launch: every candidate failed (the message lists why), or pruning
    left none. A TritonError, as Triton's AutotunerError."""


class AutotuneWarning(UserWarning):
    """A candidate config failed to compile or run and was skipped."""


# The launch options' defaults (docs/python-api.md "Launch options"), which a Config reads when not given them.
_LAUNCH_DEFAULTS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1}


class Config:
    """One candidate of an autotuned kernel: meta-parameter values (``kwargs``,
    passed to the kernel's constexpr parameters), launch options (Triton's
    ``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg``,
    ``num_cpu_threads``, ``ir_override``; the first three default to the
    launch's defaults, 4, 3 and 1, as Triton's Config reads them (host code
    passes ``config.num_ctas`` on to launches); None keeps the launch's
    default; the launch checks what each backend can honour,
    docs/python-api.md "Launch options"), and an optional ``pre_hook(args)``
    called with every argument by name before each launch with this config."""

    _OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "num_cpu_threads", "ir_override")

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, num_cpu_threads=None,
                 maxnreg=None, pre_hook=None, ir_override=None):
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise coded(TypeError, "E0710", f"Config takes a dict of meta-parameter names to values, got {kwargs!r}")
        options = {"num_warps": num_warps, "num_stages": num_stages, "num_ctas": num_ctas, "maxnreg": maxnreg,
                   "num_cpu_threads": num_cpu_threads}
        for option, value in options.items():
            least = 0 if option == "num_cpu_threads" else 1
            if isinstance(value, np.integer):  # from a NumPy sweep: the int it is
                value = options[option] = int(value)
            if value is not None and (type(value) is not int or value < least):
                kind = "a positive int" if least else "an int >= 0"
                raise coded(ValueError, "E0710", f"Config {option} must be {kind} or None, got {value!r}")
        num_warps, num_stages, num_ctas, maxnreg, num_cpu_threads = options.values()
        if pre_hook is not None and not callable(pre_hook):
            raise coded(TypeError, "E0710", f"Config pre_hook must be callable, got {type(pre_hook).__name__}")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.num_cpu_threads = num_cpu_threads
        self.maxnreg = maxnreg
        self.ir_override = ir_override
        self.pre_hook = pre_hook

    def _options(self) -> dict:
        """The launch options that are set."""
        return {name: getattr(self, name) for name in self._OPTIONS if getattr(self, name) is not None}

    def all_kwargs(self) -> dict:
        """The meta-parameters and the launch options that are set, as launch keywords."""
        return {**self.kwargs, **self._options()}

    def describe(self) -> dict:
        """A JSON-able description; two configs that launch alike describe alike."""
        return {"kwargs": {k: _json_value(v) for k, v in sorted(self.kwargs.items())},
                **{name: _json_value(getattr(self, name)) for name in self._OPTIONS},
                "pre_hook": None if self.pre_hook is None else _qualified_name(self.pre_hook)}

    def _options_not_default(self) -> dict:
        """The launch options that differ from the launch's defaults: what a message about this config names."""
        return {name: value for name, value in self._options().items() if _LAUNCH_DEFAULTS.get(name) != value}

    def __str__(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in {**self.kwargs, **self._options_not_default()}.items()) or "(defaults)"

    def __repr__(self) -> str:
        parts = [repr(self.kwargs)]
        parts += [f"{name}={value!r}" for name, value in self._options_not_default().items()]
        if self.pre_hook is not None:
            parts.append(f"pre_hook={_qualified_name(self.pre_hook)}")
        return f"Config({', '.join(parts)})"


def _qualified_name(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _json_value(value):
    """Meta-parameter and key values as JSON keeps them (tl.dtypes and the like by repr)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


# --- the wrappers ------------------------------------------------------------------------


class _KernelWrapper(KernelInterface):
    """What @autotune and @heuristics share: ``kernel[grid](...)`` launching and
    the kernel's names, taken from the @jit function underneath."""

    def __init__(self, fn, decorator: str):
        if not isinstance(fn, (JITFunction, _KernelWrapper)):
            raise coded(TypeError, "E0708", f"@tegula.{decorator} goes above @tegula.jit (Triton's order: @autotune, "
                                            f"then @heuristics, then @jit), got {type(fn).__name__}")
        self.fn = fn
        self.base = fn.base if isinstance(fn, _KernelWrapper) else fn
        for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
            setattr(self, attribute, getattr(self.base, attribute, None))

    @property
    def arg_names(self) -> tuple:
        return self.base.arg_names

    @property
    def base_fn(self) -> JITFunction:
        """The @jit function underneath every decorator (Triton's name for it)."""
        return self.base

    def __getitem__(self, grid):
        # Triton's calling convention, which subclasses of Autotuner override: run(*args, grid=, warmup=).
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def __call__(self, *args, **kwargs):
        name = self.__name__
        raise coded(TypeError, "E0707", f"kernel '{name}' cannot be called like a Python function; launch it "
                                        f"with a grid: {name}[grid](...)")

    def _named(self, args: tuple, kwargs: dict) -> dict:
        """Every argument by name, as far as given: positionals, keywords, then defaults."""
        sig = self.base.signature
        if len(args) > len(sig.names):
            raise coded(TypeError, "E0701", f"kernel '{self.__name__}' takes {len(sig.names)} arguments "
                                            f"({', '.join(sig.names)}) but {len(args)} were given")
        named = dict(zip(sig.names, args))
        named.update(kwargs)
        for name, default in zip(sig.names, sig.defaults):
            if name not in named and default is not _MISSING:
                named[name] = default
        return named


# The launch options a launch takes besides the kernel's parameters, which configs and heuristics may set
# too (FlagGems's heuristics pick num_warps). Those of Triton's backends that Tegula takes at their default only
# (waves_per_eu, kpack, ...) count too: Triton looks at a config's options only when it launches, so a module
# whose configs are tuned for AMD's backend loads, and the launch of such a config says what it lacks.
_LAUNCH_OPTIONS = frozenset(_C.launch_option_names())


def _not_a_parameter(base, names, what: str) -> str | None:
    """What is wrong when a config or a heuristic sets a name that is not a parameter of the kernel (said
    where it is set, not as an unexpected keyword at the first launch); None when every name is one."""
    parameters = base.arg_names
    for name in names:
        if name not in parameters and name not in _LAUNCH_OPTIONS:
            return (f"{what} of kernel '{base.__name__}' sets '{name}', which is not one of its parameters "
                    f"({', '.join(parameters)})")
    return None


def _down_to_jit(fn, args: tuple, kwargs: dict):
    """(the JITFunction, the arguments and keywords it gets) once every @heuristics on the way has put its
    values in (by position where the caller gave one so)."""
    while isinstance(fn, Heuristics):
        args, kwargs = fn._with_values(args, kwargs)
        fn = fn.fn
    if not isinstance(fn, JITFunction):
        raise coded(TypeError, "E0708", f"@tegula.autotune cannot wrap another @tegula.autotune (kernel "
                                        f"'{fn.__name__}'); give one autotune all the configs")
    return fn, args, kwargs


class Heuristics(_KernelWrapper):
    """``@tegula.heuristics({name: fn})``: each ``fn(args)`` computes a
    meta-parameter from the launch's arguments (a dict by name, tuned config
    values included) at every launch."""

    def __init__(self, fn, values: dict):
        super().__init__(fn, "heuristics")
        if not isinstance(values, dict) or not all(isinstance(k, str) and callable(v)
                                                   for k, v in values.items()):
            raise coded(TypeError, "E0708", "@tegula.heuristics takes a dict of meta-parameter names to functions "
                                            "of the arguments, e.g. {'EVEN': lambda args: args['n'] % 64 == 0}")
        self.values = dict(values)
        wrong = _not_a_parameter(self.base, self.values, "@tegula.heuristics")
        if wrong:
            raise coded(TypeError, "E0708", wrong)

    def _with_values(self, args: tuple, kwargs: dict) -> tuple:
        """(args, kwargs) with every computed value in place. A value the caller passes for a computed
        name is an input of the heuristic, and its result replaces it where it was given (by position
        or keyword), as in Triton: libraries pass a flag and normalize it (`lambda a: bool(a["GEMMA"])`)."""
        named = self._named(args, kwargs)
        args, kwargs = list(args), dict(kwargs)
        names = self.base.arg_names
        for name, heuristic in self.values.items():
            try:
                value = heuristic({**named, **kwargs})
            except Exception as e:
                e.add_note(f"in the @heuristics function for '{name}' of kernel '{self.__name__}'")
                raise
            position = names.index(name) if name in names else len(args)  # a launch option: by keyword
            if position < len(args):
                args[position] = value
            else:
                kwargs[name] = value
            named[name] = value
        return tuple(args), kwargs

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        args, kwargs = self._with_values(args, kwargs)
        return self.fn.run(*args, grid=grid, **kwargs)

    def warmup(self, *args, grid=None, **kwargs):
        args, kwargs = self._with_values(args, kwargs)
        return self.fn.warmup(*args, grid=grid, **kwargs)

    def inspect(self, *args, **kwargs):
        args, kwargs = self._with_values(args, kwargs)
        return self.fn.inspect(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tegula.Heuristics of {self.base!r}: {', '.join(self.values)}>"


def heuristics(values: dict):
    """Decorator: meta-parameters computed from the arguments at each launch.
    ``values`` maps a constexpr parameter name to ``fn(args) -> value``."""

    def decorate(fn):
        return Heuristics(fn, values)

    return decorate


# --- the autotuner -------------------------------------------------------------------------


class _Trial:
    """One candidate config during tuning: what it launches with and how it fared."""

    def __init__(self, config: Config, jit_args: tuple, jit_kwargs: dict):
        self.config = config
        self.jit_args = jit_args
        self.jit_kwargs = jit_kwargs
        self.kernel = None         # the CompiledKernel, once compiled
        self.backend = None
        self.error = None          # why it was skipped (an exception)
        self.stage = ""            # "compile" or "run"
        self.timing = None         # [median, 20th, 80th percentile] ms


class _LaunchPlan:
    """What every launch of an Autotuner needs, worked out at its first launch."""

    def __init__(self, tuner: "Autotuner"):
        sig = tuner.base.signature
        index = {name: i for i, name in enumerate(sig.names)}
        self.defaults = sig.defaults
        self.key_params = [(index[name], name) for name in tuner.keys]
        self.runtime_params = [(i, name) for i, (name, is_constexpr)
                               in enumerate(zip(sig.names, sig.is_constexpr)) if not is_constexpr]
        self.tuned_names = frozenset(name for config in tuner.configs for name in config.all_kwargs())
        fn = tuner.fn
        self.launch = fn._launch if isinstance(fn, JITFunction) else (lambda grid, *a, **k: fn.run(*a, grid=grid, **k))


class Autotuner(_KernelWrapper):
    """A kernel tuned over ``configs`` per value of ``key``; see ``autotune``.

    ``.configs`` are the candidates, ``.cache`` maps each key seen to the
    chosen Config, ``.best_config`` is the config of the latest launch, and
    ``.configs_timings`` maps each config of the latest tuning to its
    [median, 20th, 80th percentile] time in ms (None for skipped ones).
    """

    def __init__(self, fn, configs, key, *triton_order, prune_configs_by=None, reset_to_zero=None,
                 restore_value=None, pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
                 do_bench=None, cache_results=True):
        if _is_arg_names(configs):
            # Triton's constructor, which its subclasses call: (fn, arg_names, configs, key, reset_to_zero,
            # restore_value, pre_hook, post_hook, prune_configs_by, warmup, rep, use_cuda_graph, do_bench,
            # cache_results). The kernel's own names stand for arg_names.
            positional = (key, *triton_order)
            if len(positional) > len(_TRITON_ORDER):
                raise coded(TypeError, "E0710", f"Autotuner takes at most {len(_TRITON_ORDER) + 2} positional "
                                                f"arguments in Triton's order")
            given = dict(zip(_TRITON_ORDER, positional))
            configs, key = given["configs"], given.get("key")
            reset_to_zero = given.get("reset_to_zero", reset_to_zero)
            restore_value = given.get("restore_value", restore_value)
            pre_hook = given.get("pre_hook", pre_hook)
            post_hook = given.get("post_hook", post_hook)
            prune_configs_by = given.get("prune_configs_by", prune_configs_by)
            warmup, rep = given.get("warmup", warmup), given.get("rep", rep)
            use_cuda_graph = given.get("use_cuda_graph", use_cuda_graph)
            do_bench = given.get("do_bench", do_bench)
            cache_results = given.get("cache_results", cache_results)
        elif triton_order:
            raise coded(TypeError, "E0710", "Autotuner(fn, configs, key, ...) takes its other arguments by keyword")
        super().__init__(fn, "autotune")
        if _contains_autotuner(fn):
            raise coded(TypeError, "E0708", f"@tegula.autotune cannot wrap another @tegula.autotune (kernel "
                                            f"'{self.__name__}'); give one autotune all the configs")
        if isinstance(configs, Config) or not isinstance(configs, (list, tuple, type(None))):
            raise coded(TypeError, "E0710", f"autotune configs of kernel '{self.__name__}' must be a list of "
                                            f"tegula.Config, got {type(configs).__name__} (write configs=[...])")
        configs = list(configs or [])
        for config in configs:
            if not isinstance(config, Config):
                raise coded(TypeError, "E0710", f"autotune configs of kernel '{self.__name__}' must be tegula.Config "
                                                f"objects, got {type(config).__name__}")
            wrong = _not_a_parameter(self.base, config.kwargs, f"autotune config {config.kwargs}")
            if wrong:
                raise coded(TypeError, "E0710", wrong)
        self.configs = configs or [Config({})]
        self.keys = [key] if isinstance(key, str) else list(key or [])
        self.reset_to_zero = _names(reset_to_zero)
        self.restore_value = _names(restore_value)
        prune_configs_by = dict(prune_configs_by or {})
        unknown = set(prune_configs_by) - set(_PRUNE_KEYS)
        if unknown:
            raise coded(ValueError, "E0710", f"prune_configs_by of kernel '{self.__name__}' has unknown entries "
                                             f"{sorted(unknown)}; expected some of {list(_PRUNE_KEYS)}")
        self.perf_model = prune_configs_by.get("perf_model")
        self.top_k = prune_configs_by.get("top_k")
        self.early_config_prune = prune_configs_by.get("early_config_prune")
        top_k = self.top_k
        if top_k is not None and not ((type(top_k) is int and top_k >= 1) or
                                      (type(top_k) is float and 0.0 < top_k <= 1.0)):
            raise coded(ValueError, "E0710", f"prune_configs_by top_k of kernel '{self.__name__}' must be an int "
                                             f">= 1 or a fraction in (0, 1], got {top_k!r}")
        if self.perf_model is not None and top_k is None:  # Triton refuses it too: the model would go unused
            raise coded(ValueError, "E0710", f"prune_configs_by of kernel '{self.__name__}' has a perf_model but "
                                             f"no top_k: say how many configs of the best estimates to time "
                                             f"(an int, or a fraction of the configs)")
        for name in ("perf_model", "early_config_prune"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise coded(TypeError, "E0710", f"prune_configs_by {name} of kernel '{self.__name__}' must be "
                                                f"callable, got {type(getattr(self, name)).__name__}")
        self.warmup_ms = 25 if warmup is None else warmup
        self.rep_ms = 100 if rep is None else rep
        self.user_do_bench = do_bench
        self.cache_results = cache_results
        self.cache: dict = {}
        self.best_config = None
        self.configs_timings = None
        self._lock = threading.RLock()
        self._plan = None
        self._kernel_identity = None
        # Triton's hooks around every timed launch: pre_hook(kwargs, reset_only=False) before (and once with
        # reset_only=True after tuning), post_hook(kwargs, exception) after. Tegula zeroes reset_to_zero and
        # restores the arrays a launch writes itself; these run besides that, and a subclass may replace them.
        for name, hook in (("pre_hook", pre_hook), ("post_hook", post_hook)):
            if hook is not None and not callable(hook):
                raise coded(TypeError, "E0710", f"autotune {name} of kernel '{self.__name__}' must be callable, "
                                                f"got {type(hook).__name__}")
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook = pre_hook or (lambda kwargs, reset_only=False: None)
        self.post_hook = post_hook or (lambda kwargs, exception: None)
        self.use_cuda_graph = bool(use_cuda_graph)  # accepted; timing does not capture graphs

    def __repr__(self) -> str:
        return f"<tegula.Autotuner of {self.base!r}: {len(self.configs)} configs, key {self.keys}>"

    # --- launching ---------------------------------------------------------------------

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        plan = self._plan or self._make_plan()
        if kwargs and not plan.tuned_names.isdisjoint(kwargs):
            conflicts = ", ".join(repr(c) for c in sorted(plan.tuned_names.intersection(kwargs)))
            raise coded(ValueError, "E0710", f"kernel '{self.__name__}' got {conflicts}, which its autotune configs "
                                             f"set; do not pass tuned meta-parameters")
        key, device = self._key(plan, args, kwargs)
        config = self.cache.get(key)
        if config is None:
            with self._lock:
                config = self.cache.get(key)
                if config is None:
                    config = self._choose(key, device, grid, args, kwargs, self._named(args, kwargs))
                    self.cache[key] = config
        self.best_config = config
        launch_kwargs = config.all_kwargs()
        if config.pre_hook is not None:
            config.pre_hook({**self._named(args, kwargs), **launch_kwargs})
        compiled = plan.launch(grid, *args, **kwargs, **launch_kwargs)
        if compiled is not None and isinstance(self.fn, JITFunction):
            # The kernel a library launches again later, as compiled[grid](*args).
            _remember_owner(compiled, self.fn, args, {**kwargs, **launch_kwargs})
        return compiled

    # --- Triton's methods that subclasses with their own run() call ----------------------

    def prune_configs(self, kwargs: dict) -> list:
        """The configs left after ``prune_configs_by`` for the arguments in
        ``self.nargs`` (set by the caller, as Triton's run sets it) and ``kwargs``."""
        meta = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        return self._prune(self.configs, dict(getattr(self, "nargs", None) or {}), meta)

    def _bench(self, *args, config: Config, **meta) -> list:
        """Times one config on these arguments: [median, 20th, 80th percentile] ms, or three
        infinities when it does not compile or run (Triton's method of the same name; ``meta``
        holds the grid)."""
        grid = meta.pop("grid", None)
        meta.pop("warmup", None)
        [trial] = self._compile_all([config], args, meta)
        if trial.error is None:
            named = self._named(args, meta)
            saved = SavedArguments(self, [trial], named)
            try:
                self._time(trial, grid, args, meta, named, saved)
            finally:
                saved.restore(for_trial=False)
        return trial.timing if trial.timing is not None else [float("inf")] * 3

    def warmup(self, *args, grid=None, **kwargs):
        """Compiles every candidate config for these arguments (in parallel)
        without launching; returns the compiled kernels of those that compiled."""
        self._named(args, kwargs)  # checks the argument count
        trials = self._compile_all(self._prune(self.configs, self._positional(args), kwargs), args, kwargs)
        return [trial.kernel for trial in trials if trial.error is None]

    def _make_plan(self) -> "_LaunchPlan":
        """Checks the names the decorator was given against the kernel's, once,
        and precomputes what every launch needs to find its key."""
        names = self.arg_names
        # Triton leaves a key name that is not a parameter out of the key (torchao's kernels have one):
        # so does this, saying so once, since it is more often a misspelling.
        for name in [name for name in self.keys if name not in names]:
            warnings.warn(f"autotune key of kernel '{self.__name__}' names '{name}', which is not one of its "
                          f"parameters ({', '.join(names)}); it is left out of the key", AutotuneWarning,
                          stacklevel=4)
        self.keys = [name for name in self.keys if name in names]
        for what, listed in (("reset_to_zero", self.reset_to_zero), ("restore_value", self.restore_value)):
            for name in listed:
                if name not in names:
                    raise coded(ValueError, "E0710",
                                f"autotune {what} of kernel '{self.__name__}' names '{name}', which "
                                f"is not one of its parameters ({', '.join(names)})")
        self._plan = _LaunchPlan(self)
        return self._plan

    def _key(self, plan: "_LaunchPlan", args: tuple, kwargs: dict):
        """(the tuning key, the CUDA device or None): the key arguments' values,
        the dtype of every array argument, and where the launch runs."""
        given = len(args)
        defaults = plan.defaults

        def value(i, name):
            return args[i] if i < given else kwargs.get(name, defaults[i])

        key = []
        for i, name in plan.key_params:
            v = value(i, name)
            if v is _MISSING:
                raise coded(TypeError, "E0701", f"kernel '{self.__name__}' is missing argument '{name}', which its "
                                                f"autotune key names")
            key.append(v if type(v) is int else _key_value(v))
        # The launcher classifies the arrays (missing arguments are the
        # launch's error to report, and so are arrays on different devices).
        named = {name: value(i, name) for i, name in plan.runtime_params if value(i, name) is not _MISSING}
        dtypes, backend, device = self.base._launcher.arrays(named)
        key.extend(dtypes)
        key.append(backend if device is None else f"{backend}:{device}")
        return tuple(key), device

    # --- choosing a config -----------------------------------------------------------------

    def _choose(self, key: tuple, device, grid, args: tuple, kwargs: dict, named: dict) -> Config:
        if len(self.configs) == 1:  # nothing to choose: Triton calls no prune hook then (a perf model may need a GPU)
            return self.configs[0]
        configs = self._prune(self.configs, self._positional(args), kwargs)
        if len(configs) == 1:
            return configs[0]
        store, identity, entry = None, None, None
        if self.cache_results and knobs.autotuning.cache:
            store, why_not = _autotune_store.Store.open()
            if store is None and print_autotuning():
                print(f"tegula autotune: not using the tuning cache: {why_not}")
            if store is not None:
                identity = self._identity(key, device)
                entry = _autotune_store.entry_name(identity)
                record = store.load(entry, identity)
                stored = _matching_config(record, configs) if record else None
                if stored is not None:
                    if print_autotuning():
                        print(f"tegula autotune: kernel '{self.__name__}' key {key}: {stored} "
                              f"(tuned before, from the tuning cache)")
                    self._tell_listener(key, stored, None, cache_hit=True)
                    return stored
        started = time.perf_counter()
        config, trials = self._tune(configs, key, device, grid, args, kwargs, named)
        self._tell_listener(key, config, time.perf_counter() - started, cache_hit=False)
        if store is not None:
            timings = [{"config": t.config.describe(), "ms": t.timing,
                        "error": None if t.error is None else first_line(t.error)} for t in trials]
            why = store.save(entry, identity, config.describe(), timings, self.__name__)
            if why and print_autotuning():
                print(f"tegula autotune: could not save the tuning result: {why}")
        return config

    def _tell_listener(self, key: tuple, config: "Config", duration, cache_hit: bool) -> None:
        """tegula.knobs.autotuning.listener, as Triton calls it after choosing a config by timing (not
        for a kernel with one config, nor for a key chosen before in this process)."""
        listener = knobs.autotuning.listener
        if listener is None:
            return
        timings = self.configs_timings if not cache_hit else {config: None}
        listener(fn=self.base, key=key, best_config=config, configs_timings=timings, duration=duration,
                 cache_hit=cache_hit)

    def _identity(self, key: tuple, device) -> dict:
        if self._kernel_identity is None:
            self._kernel_identity = _autotune_store.kernel_identity(self.base)
        heuristic_names = []
        fn = self.fn
        while isinstance(fn, Heuristics):
            heuristic_names.append(sorted(fn.values))
            fn = fn.fn
        return {"tegula": _C.__version__, "kernel": self._kernel_identity, "debug": self.base.debug,
                "key": [_json_value(v) for v in key],
                "device": _autotune_store.device_identity(device),
                "configs": [c.describe() for c in self.configs], "heuristics": heuristic_names}

    def _positional(self, args: tuple) -> dict:
        """The positional arguments by name: what Triton's autotuner keeps as ``nargs``."""
        self.nargs = dict(zip(self.base.signature.names, args))
        return self.nargs

    def _prune(self, configs: list, positional: dict, kwargs: dict) -> list:
        """Triton's calls: early_config_prune(configs, positional arguments by name, **keyword
        arguments), perf_model(**positional, **keywords, **config)."""
        if self.early_config_prune is not None:
            pruned = self.early_config_prune(configs, positional, **kwargs)
            if isinstance(pruned, collections.abc.Iterator):
                pruned = list(pruned)  # Triton iterates what the hook returns: a generator of configs is one
            if not isinstance(pruned, (list, tuple)) or not all(isinstance(c, Config) for c in pruned):
                got = type(pruned).__name__ if not isinstance(pruned, (list, tuple)) else \
                    "a list holding " + next(type(c).__name__ for c in pruned if not isinstance(c, Config))
                raise coded(TypeError, "E0710", f"early_config_prune of kernel '{self.__name__}' must return a list "
                                                f"of the tegula.Config it was given, got {got}")
            configs = list(pruned)
            for config in configs:
                if _not_a_parameter(self.base, config.kwargs, "") is not None:
                    raise coded(ValueError, "E0710", f"early_config_prune of kernel '{self.__name__}' returned the "
                                                     f"config {config.describe()}, which sets names that are not "
                                                     f"parameters of the kernel ({', '.join(self.base.arg_names)})")
            if not configs:
                raise coded(AutotuneError, "E0710", f"no valid autotuner configs after pruning: early_config_prune "
                                                    f"of kernel '{self.__name__}' returned none of the "
                                                    f"{len(self.configs)}; it should return at least one config")
        if self.perf_model is not None and self.top_k is not None:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(configs) * top_k))
            if type(top_k) is not int or top_k < 1:
                raise coded(ValueError, "E0710", f"prune_configs_by top_k of kernel '{self.__name__}' must be an int "
                                                 f">= 1 or a fraction in (0, 1], got {self.top_k!r}")
            estimates = []
            for i, config in enumerate(configs):
                estimate = self.perf_model(**{**positional, **kwargs, **config.all_kwargs()})
                if isinstance(estimate, np.generic):
                    estimate = estimate.item()
                if isinstance(estimate, bool) or not isinstance(estimate, (int, float)) or estimate != estimate:
                    raise coded(TypeError, "E0710", f"prune_configs_by perf_model of kernel '{self.__name__}' "
                                                    f"must return a number (an estimated time), got {estimate!r} "
                                                    f"for config {config.describe()}")
                estimates.append((estimate, i))
            configs = [configs[i] for _, i in sorted(estimates)[:top_k]]
        return configs

    def _compile_all(self, configs: list, args: tuple, kwargs: dict, progress=None) -> list:
        """A _Trial per config, compiled in parallel threads (the compiler
        releases the GIL); a config that fails to compile keeps its error."""
        trials, jobs = [], []
        for config in configs:
            jit, jit_args, jit_kwargs = _down_to_jit(self.fn, args, {**kwargs, **config.all_kwargs()})
            trials.append(_Trial(config, jit_args, jit_kwargs))
        jit = self.base

        def compile_one(trial: _Trial):
            with _recompiles.tuning():  # trying configs is not recompiling
                return jit.warmup(*trial.jit_args, **trial.jit_kwargs)  # builds it into the launch cache

        workers = max(1, min(len(trials), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            jobs = [pool.submit(compile_one, trial) for trial in trials]
            for i, (trial, job) in enumerate(zip(trials, jobs)):
                if progress is not None:
                    progress.show("compiling", i, trial.config)
                try:
                    trial.kernel = job.result()
                except (_C.CompilationError, RuntimeError, ValueError) as e:
                    trial.error, trial.stage, trial.kernel = e, "compile", None
                    continue
                trial.backend = trial.kernel.backend
        return trials

    def _tune(self, configs, key, device, grid, args, kwargs, named):
        started = time.perf_counter()
        progress = Progress(self.__name__, len(configs))
        saved = None
        try:
            trials = self._compile_all(configs, args, kwargs, progress)
            compile_s = time.perf_counter() - started
            compiled = [t for t in trials if t.error is None]
            saved = SavedArguments(self, compiled, named) if compiled else None
            timed_launches = {}  # configs that launch the same code alike are timed once
            best = None  # (config, median ms) of the fastest trial so far, for the progress line
            for i, trial in enumerate(compiled):
                same = (trial.kernel.key, json.dumps(trial.config.describe()["kwargs"]), trial.config.pre_hook)
                if same in timed_launches:
                    twin = timed_launches[same]
                    trial.timing, trial.error, trial.stage = twin.timing, twin.error, twin.stage
                    continue
                timed_launches[same] = trial
                progress.show("timing", i, trial.config, best)
                self._time(trial, grid, args, kwargs, named, saved)
                if trial.timing is not None and (best is None or trial.timing[0] < best[1]):
                    best = (trial.config, trial.timing[0])
        finally:
            if saved is not None:
                saved.restore(for_trial=False)
            progress.done()
        for trial in trials:
            if trial.error is not None:
                warnings.warn(f"autotune of kernel '{self.__name__}': skipped config {trial.config} "
                              f"(failed to {trial.stage}: {first_line(trial.error)})",
                              AutotuneWarning, stacklevel=5)  # the caller's kernel[grid](...)
        timed = [t for t in trials if t.timing is not None]
        self.configs_timings = {t.config: t.timing for t in trials}
        if not timed:
            raise _all_failed(self.__name__, trials)
        best = min(timed, key=lambda t: t.timing[0])
        self.pre_hook({**named, **best.config.all_kwargs()}, reset_only=True)  # Triton's reset before the launch
        if print_autotuning():
            report(self.__name__, key, trials, best, time.perf_counter() - started, compile_s,
                    pruned=len(self.configs) - len(configs))
        return best.config, trials

    def _user_timing(self, result) -> list:
        """do_bench's answer (ms, or ms at the quantiles asked) as [median, 20%, 80%]; anything else is the
        do_bench's error, said as such."""
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        if not values or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
            raise AutotuneError(f"the do_bench of kernel '{self.__name__}' must return a time in ms (a number, or "
                                f"a list of them for the quantiles), got {result!r}")
        values = [float(v) for v in values]
        return (values + values[-1:] * 3)[:3]

    def _time(self, trial: _Trial, grid, args, kwargs, named, saved) -> None:
        config = trial.config
        full = {**named, **config.all_kwargs()}

        def prepare():
            saved.restore(for_trial=True)
            if config.pre_hook is not None:
                config.pre_hook(full)
            self.pre_hook(full)

        def launch():
            try:
                self.fn[grid](*args, **kwargs, **config.all_kwargs())
            except Exception as e:
                self.post_hook(full, exception=e)
                raise
            self.post_hook(full, exception=None)

        try:
            if self.user_do_bench is not None:
                def call():
                    prepare()
                    launch()

                trial.timing = self._user_timing(self.user_do_bench(call, quantiles=(0.5, 0.2, 0.8)))
            else:
                samples = testing.bench_samples(launch, self.warmup_ms, self.rep_ms, device=trial.backend,
                                                setup=prepare)
                trial.timing = [float(v) for v in np.quantile(samples, (0.5, 0.2, 0.8))]
        except Exception as e:  # noqa: BLE001 - a config that cannot run is skipped, see _all_failed
            trial.error, trial.stage, trial.timing = e, "run", None


# Triton's positional order of Autotuner's arguments after fn and arg_names.
_TRITON_ORDER = ("configs", "key", "reset_to_zero", "restore_value", "pre_hook", "post_hook", "prune_configs_by",
                 "warmup", "rep", "use_cuda_graph", "do_bench", "cache_results")


def _is_arg_names(value) -> bool:
    """Whether Autotuner's second argument is Triton's arg_names (names) rather than Tegula's configs."""
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(isinstance(v, str) for v in value)


def _contains_autotuner(wrapper) -> bool:
    fn = wrapper
    while isinstance(fn, _KernelWrapper):
        if isinstance(fn, Autotuner):
            return True
        fn = fn.fn
    return False


def _names(value) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _key_value(value):
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return "nan"  # NaN equals nothing, itself included: as a key it would miss at every launch
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:  # an array named in the key: its shape and dtype
        return ("array", tuple(int(d) for d in shape), str(dtype))
    if isinstance(value, tuple):
        return tuple(_key_value(v) for v in value)
    cls = type(value)
    if getattr(cls, "__tegula_aggregate__", False):  # its class and its fields, arrays by shape and dtype
        state = getattr(value, "__dict__", {})
        return (f"{cls.__module__}.{cls.__qualname__}",
                tuple(_key_value(getattr(state.get(f), "value", state.get(f))) for f in cls.__aggregate_fields__))
    return repr(value)


def _matching_config(record: dict, configs: list):
    wanted = json.loads(json.dumps(record["config"]))
    for config in configs:
        if json.loads(json.dumps(config.describe())) == wanted:
            return config
    return None


def _all_failed(kernel: str, trials: list) -> Exception:
    errors = [t.error for t in trials]
    first = errors[0]
    if all(type(e) is type(first) and str(e) == str(first) for e in errors):
        # One cause for all (a wrong argument, a kernel that does not compile
        # whatever the config): the original error says it best.
        if hasattr(first, "add_note"):
            first.add_note(f"(every one of the {len(trials)} autotune configs of kernel '{kernel}' "
                           f"failed this way)")
        return first
    lines = [f"every autotune config of kernel '{kernel}' failed:"]
    lines += [f"  {t.config}: failed to {t.stage}: {first_line(t.error)}" for t in trials]
    error = AutotuneError("\n".join(lines))
    error.__cause__ = first
    return error


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=True):
    """Decorator: tune a kernel over ``configs`` for each value of ``key``.

    ``key``: argument names whose values pick the config (a new value tunes
    again). ``prune_configs_by``: ``{"early_config_prune": fn(configs, args,
    **kwargs) -> configs, "perf_model": fn(**args, **config) -> estimate,
    "top_k": int or fraction}``. ``reset_to_zero``: arrays zeroed before each
    timed launch; ``restore_value``: arrays to save and restore besides the
    ones found automatically (both are put back to the caller's values when
    tuning ends). ``warmup``/``rep``: timing budgets per config in ms
    (25/100); ``do_bench``: a replacement timer called as ``do_bench(fn,
    quantiles=(0.5, 0.2, 0.8))``. ``cache_results=False`` keeps results in
    this process only. ``pre_hook(kwargs, reset_only=False)`` and
    ``post_hook(kwargs, exception)``: Triton's hooks, called around every timed
    launch (besides Tegula's own zeroing and restoring); ``use_cuda_graph`` is
    accepted and changes nothing. See docs/autotune.md.
    """

    def decorate(fn):
        return Autotuner(fn, configs, key, prune_configs_by=prune_configs_by,
                         reset_to_zero=reset_to_zero, restore_value=restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph,
                         do_bench=do_bench, cache_results=cache_results)

    return decorate
