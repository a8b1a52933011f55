"""Triton's settings objects, as far as Triton's tests set them. Settings
are recorded; Tegula acts on none of them (its options are launch keywords
and environment variables: docs/triton-compat.md)."""

import contextlib
import os


class base_knobs:
    knob_descriptors = {}  # Triton's per-setting descriptors (environment keys): none here

    @contextlib.contextmanager
    def scope(self):
        saved = dict(self.__dict__)
        try:
            yield self
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)

    def copy(self):
        other = type(self)()
        other.__dict__.update(self.__dict__)
        return other

    def reset(self):
        self.__dict__.clear()
        return self


class _Namespace(base_knobs):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class _Ptxas(_Namespace):
    version = "12.8"


class nvidia_knobs(_Namespace):
    def __init__(self):
        self.ptxas = _Ptxas()


cache = _Namespace()
runtime = _Namespace()
language = _Namespace()
compilation = _Namespace()
build = _Namespace()
amd = _Namespace()
nvidia = nvidia_knobs()
propagate_env = True
env = os.environ
