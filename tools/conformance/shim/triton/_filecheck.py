"""Triton's frontend-test helpers (`triton._filecheck`), over Tegula's compiler.

`run_parser(kernel, args)` compiles the kernel for these arguments without
launching it, as Triton's builds its IR module without launching: a kernel
Tegula refuses raises its CompilationError there. Tegula has no Triton IR to
give back, so a FileCheck test (`filecheck_test`, `run_filecheck_test`)
compiles the kernel and then fails, saying that the rest reads Triton's IR
text: the compile is what such a test can show of Tegula.
"""

import functools


class TritonIRUnavailable(AssertionError):
    """A test that reads the text of Triton's IR (FileCheck)."""


class _NoTritonModule:

    def __init__(self, compiled):
        self.compiled = compiled

    def _refuse(self, *args, **kwargs):
        raise TritonIRUnavailable("FileCheck reads the text of Triton's IR, which Tegula does not make "
                                  "(the kernel compiled under Tegula)")

    str_nodebug = __str__ = _refuse


def run_parser(kernel_fn, args=(), kwargs={}, target=None):
    kwargs = {k: v for k, v in dict(kwargs).items() if k != "sanitize_overflow"}
    return _NoTritonModule(kernel_fn.warmup(*args, grid=(1, ), **kwargs))


def run_filecheck_test(kernel_fn):
    run_parser(kernel_fn)._refuse()


def filecheck_test(fn):

    @functools.wraps(fn)
    def test_fn():
        run_filecheck_test(fn)

    return test_fn
