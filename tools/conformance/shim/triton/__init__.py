"""A stand-in `triton` package for running Triton's tests against Tegula
(tools/conformance/run_test_core.py): Tegula's names under Triton's module
paths, and nothing more. A name Tegula lacks is missing here too."""

import sys

import tegula
import tegula.language
import tegula.language.extra
import tegula.language.extra.libdevice
import tegula.testing

for _name in ("language", "language.core", "language.math", "language.extra", "language.extra.libdevice",
              "language.extra.cuda", "language.extra.cuda.libdevice", "language.extra.cpu",
              "language.extra.cpu.libdevice", "language.semantic", "language.standard", "language.random"):
    _module = sys.modules.get("tegula." + _name)
    if _module is None:
        try:
            __import__("tegula." + _name)
            _module = sys.modules["tegula." + _name]
        except ImportError:
            continue
    sys.modules[__name__ + "." + _name] = _module
language = tegula.language
testing = tegula.testing


class _Missing:
    """A placeholder for a name Tegula lacks that a test module reads while
    it is collected (`--placeholders`), so that the module's other tests
    run; any use of it fails."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"missing:{self.name}"

    def __call__(self, *args, **kwargs):
        # A decorator (`@triton.constexpr_function`) or decorator factory (`@triton.must_use_result(...)`):
        # what it makes is missing too.
        return _Missing(self.name)


import os  # noqa: E402

for _name in filter(None, os.environ.get("TEGULA_CONFORMANCE_PLACEHOLDERS", "").split(",")):
    if _name.startswith("triton."):  # a name of the triton package itself
        if _name[len("triton."):] not in globals():
            globals()[_name[len("triton."):]] = _Missing(_name)
    elif "." in _name:  # a name of a tl submodule (core.builtin: tl.core.builtin)
        _owner, _, _attr = _name.rpartition(".")
        _owner = sys.modules[__name__ + ".language." + _owner]
        if not hasattr(_owner, _attr):
            setattr(_owner, _attr, _Missing("tl." + _name))
    elif not hasattr(language, _name):
        setattr(language, _name, _Missing(_name))
sys.modules[__name__ + ".testing"] = testing

from tegula import Config, JITFunction, KernelInterface, autotune, cdiv, heuristics, jit, next_power_of_2, set_allocator  # noqa: E402
from tegula import ConstexprFunction, aggregate, constexpr_function, must_use_result  # noqa: E402
from tegula import CompilationError, OutOfResources, compile  # noqa: E402,A004


class _TritonErrorType(type):
    # Triton raises subclasses of TritonError for a program it refuses;
    # Tegula's counterparts are CompilationError and the exceptions its own
    # modules define. Coded built-in exceptions (ValueError, TypeError) are
    # Tegula's choice where Triton raises TritonError: they do not match.
    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and (issubclass(sub, CompilationError) or
                                          sub.__module__.split(".")[0] == "tegula" or type.__subclasscheck__(cls, sub))

    def __instancecheck__(cls, instance):
        return cls.__subclasscheck__(type(instance))


class TritonError(Exception, metaclass=_TritonErrorType):
    pass


from . import backends, compiler, knobs, runtime, tools  # noqa: E402,F401
from .runtime.jit import MockTensor, TensorWrapper, reinterpret  # noqa: E402,F401

__version__ = "3.6.0+tegula." + tegula.__version__
