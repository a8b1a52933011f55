"""Stand-ins the library harnesses share for what a CPU machine lacks, at torch's level (nothing of a library,
of Tegula or of the shim): allocations a library makes with device="cuda" sent to the conformance device, a
Tensor.is_cuda that says yes for tensors there, and a library tree imported as bare packages (directories as
__path__, no __init__ run) when its package __init__ pulls in compiled CUDA code."""

import contextlib
import importlib.abc
import importlib.util
import pathlib
import sys
import types

import torch
from torch.overrides import TorchFunctionMode


def module(name: str, **attrs) -> types.ModuleType:
    """A stand-in module `name` holding `attrs`, registered in sys.modules. It is a package (an empty
    __path__), so that importing a submodule it lacks is an ImportError the library's try blocks catch."""
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def placeholder(name: str, harness: str):
    """A function standing in for library code no case reaches: calling it says so."""
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{name} is a placeholder in {harness}")
    return fn


def is_cuda(device) -> bool:
    """Whether a `device=` argument names a CUDA device."""
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return isinstance(device, torch.device) and device.type == "cuda"


class CudaToDevice(TorchFunctionMode):
    """device="cuda" (a keyword of any torch function) -> `device`."""

    def __init__(self, device: str):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types=(), args=(), kwargs=None):
        kwargs = kwargs or {}
        if "device" in kwargs and is_cuda(kwargs["device"]):
            kwargs = {**kwargs, "device": self.device}
        return func(*args, **kwargs)


_REAL_IS_CUDA = torch.Tensor.is_cuda


@contextlib.contextmanager
def cuda_claims(device: str):
    """While the library's host code runs: Tensor.is_cuda true for tensors on `device`, device="cuda" to it.
    Nothing changes when `device` is "cuda"."""
    if device == "cuda":
        yield
        return
    torch.Tensor.is_cuda = property(lambda self: self.device.type == device or _REAL_IS_CUDA.__get__(self))
    try:
        with CudaToDevice(device):
            yield
    finally:
        torch.Tensor.is_cuda = _REAL_IS_CUDA


class _BarePackages(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, tree: pathlib.Path, roots, as_is):
        self.tree, self.roots, self.as_is = tree, tuple(roots), frozenset(as_is)

    def find_spec(self, name, path, target=None):
        if name not in self.as_is and name.split(".")[0] in self.roots and self.tree.joinpath(*name.split(".")).is_dir():
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = [str(self.tree.joinpath(*spec.name.split(".")))]
        return module

    def exec_module(self, module):
        pass


def bare_packages(tree: pathlib.Path, *roots: str, as_is=()) -> None:
    """Every package under `tree` whose top name is one of `roots` imports as a bare package (its directory as
    __path__, its __init__ not run), but those named in `as_is`; the modules in them load from their files as
    usual."""
    sys.meta_path.insert(0, _BarePackages(tree, roots, as_is))
    sys.path.insert(0, str(tree))
