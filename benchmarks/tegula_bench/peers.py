"""What each workload is measured against.

On the CPU a *peer* turns a workload's inputs into a callable: Tegula, NumPy
eager (the baseline), PyTorch eager and torch.compile on CPU tensors sharing
the NumPy inputs' memory.

On the GPU a *variant* is a factory of such a callable: ``tegula`` (the
example module's host wrapper), ``triton`` (the same wrapper of the module's
Triton twin: the same source compiled by Triton, ``triton_twin``), ``torch``
and ``torch.compile`` (eager PyTorch, op by op, and the same function through
torch.compile), ``cublas`` (``torch.matmul``) and ``sdpa`` (PyTorch's
scaled_dot_product_attention).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable, Optional

import numpy as np

from . import reference, triton_twin
from .kernels import fused_chain, layer_norm, matmul, softmax, vector_add

# --- CPU peers -------------------------------------------------------------------
# A peer turns a workload's inputs into a zero-argument callable that runs the
# workload and returns its outputs (arrays or tensors; tuples for several). It
# has one method per workload it implements, named after the workload; a
# missing method means "this peer does not run that workload". Adding a peer
# (Triton on a GPU machine, say) is one more subclass in PEERS.


class Peer:
    name = ""

    def available(self) -> bool:
        return True

    def prepare(self, workload: str, inputs: dict) -> Optional[Callable[[], Any]]:
        build = getattr(self, workload, None)
        return build(**inputs) if build is not None else None


class TegulaPeer(Peer):
    name = "tegula"

    def vector_add(self, x, y):
        out = np.empty_like(x)
        return lambda: vector_add.add(x, y, out)

    def fused_chain(self, x, residual, keep, bias, weight):
        out = np.empty_like(x)
        return lambda: fused_chain.fused_chain(x, residual, keep, bias, weight, out=out)

    def softmax(self, x):
        out = np.empty_like(x)
        return lambda: softmax.softmax(x, out)

    def layer_norm(self, x, weight, bias):
        out = np.empty_like(x)
        return lambda: layer_norm.layer_norm(x, weight, bias, out=out)

    def matmul(self, a, b):
        out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        return lambda: matmul.matmul(a, b, out)


class NumPyPeer(Peer):
    """Eager NumPy, one array operation at a time: what the kernels replace."""

    name = "numpy"

    def vector_add(self, x, y):
        out = np.empty_like(x)
        return lambda: vector_add.add_reference(x, y, out)

    def fused_chain(self, x, residual, keep, bias, weight):
        return lambda: fused_chain.eager_chain(x, residual, keep, bias, weight)

    def softmax(self, x):
        return lambda: softmax.softmax_reference(x)

    def layer_norm(self, x, weight, bias):
        return lambda: layer_norm.layer_norm_reference(x, weight, bias)

    def matmul(self, a, b):
        return lambda: matmul.matmul_reference(a, b)


class HandFusedPeer(Peer):
    """The chain written by hand in C++ (benchmarks/reference/fused_chain.cpp),
    built with the CPU backend's compiler and flags, on as many threads as
    Tegula's pool: the yardstick of issue 22 for the fused kernel."""

    name = "c++"

    def available(self) -> bool:
        return reference.load("fused_chain") is not None

    def fused_chain(self, x, residual, keep, bias, weight):
        lib = reference.load("fused_chain")
        arrays = (x, residual, keep, np.ascontiguousarray(bias, np.float32),
                  np.ascontiguousarray(weight, np.float32), np.empty_like(x))
        if not (x.dtype == residual.dtype == np.float32 and keep.dtype == np.bool_
                and all(a.flags.c_contiguous for a in arrays)):
            return None  # the reference takes contiguous float32 rows and a bool mask
        M, N = x.shape
        call_args = [ctypes.c_void_p(a.ctypes.data) for a in arrays] + [
            ctypes.c_int64(M), ctypes.c_int64(N), ctypes.c_int64(N), ctypes.c_float(fused_chain.ALPHA),
            ctypes.c_float(fused_chain.EPS), ctypes.c_float(1.0 / (1.0 - fused_chain.P_DROP)),
            ctypes.c_int(reference.thread_count())]

        def run(arrays=arrays):  # the default keeps the arrays alive as long as their pointers
            lib.fused_chain_reference(*call_args)
            return arrays[-1]

        return run


class TorchPeer(Peer):
    """PyTorch eager on the CPU tensors sharing the NumPy inputs' memory."""

    name = "torch"

    def available(self) -> bool:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False
        return True

    def wrap(self, fn):
        return fn

    @staticmethod
    def _tensor(array):
        """A CPU tensor sharing the array's memory; ml_dtypes' bfloat16, which torch cannot read, through
        its 16-bit pattern."""
        import torch
        if array.dtype.name == "bfloat16":
            return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
        return torch.from_numpy(array)

    def _run(self, fn, *arrays):
        tensors = [self._tensor(a) for a in arrays]
        fn = self.wrap(fn)
        return lambda: fn(*tensors)

    def vector_add(self, x, y):
        import torch
        return self._run(torch.add, x, y)

    def fused_chain(self, x, residual, keep, bias, weight):
        return self._run(fused_chain.eager_chain_torch, x, residual, keep, bias, weight)

    def softmax(self, x):
        import torch
        return self._run(lambda t: torch.softmax(t, dim=1), x)

    def layer_norm(self, x, weight, bias):
        import torch.nn.functional as F
        return self._run(lambda t, w, b: F.layer_norm(t, (t.shape[1],), w, b, layer_norm.EPS),
                         x, weight, bias)

    def matmul(self, a, b):
        import torch
        return self._run(torch.matmul, a, b)


class TorchCompilePeer(TorchPeer):
    name = "torch.compile"

    def wrap(self, fn):
        import torch
        return torch.compile(fn)


PEERS = (TegulaPeer(), HandFusedPeer(), NumPyPeer(), TorchPeer(), TorchCompilePeer())


# --- GPU variants ------------------------------------------------------------------


def kernel_variants(module, run) -> dict:
    """The tegula and triton variants of one host wrapper: `run(m)` allocates the
    outputs and returns the callable that calls module m's wrapper."""
    return {"tegula": lambda: run(module), "triton": lambda: run(triton_twin.load(module))}


def eager_variants(torch, eager: Callable, *args) -> dict:
    """PyTorch eager and torch.compile of the same function on the same inputs."""
    return {"torch": lambda: functools.partial(eager, *args),
            "torch.compile": lambda: functools.partial(torch.compile(eager), *args)}



# The SDPA backends tried in order, with the names rows give them.
SDPA_BACKENDS = (("CUDNN_ATTENTION", "cuDNN"), ("FLASH_ATTENTION", "flash"), ("EFFICIENT_ATTENTION", "efficient"))


def sdpa_variant(torch, q, k, v, causal: bool):
    """PyTorch SDPA on the first backend that runs these inputs, cuDNN first (the
    issue's yardstick); the callable's ``note`` names the backend, and why the
    ones before it were passed over."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # an older torch: its own choice
        run = functools.partial(sdpa, q, k, v, is_causal=causal)
        run.note = "default backend"
        return run
    skipped = []
    for name, label in SDPA_BACKENDS:
        backend = getattr(SDPBackend, name, None)
        if backend is None:
            skipped.append(f"{label}: not in this torch")
            continue

        def run(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, k, v, is_causal=causal)

        try:
            run()
            torch.cuda.synchronize()
        except RuntimeError as e:
            skipped.append(f"{label}: {str(e).strip().splitlines()[0][:60] if str(e).strip() else 'refused'}")
            continue
        run.note = label + (f" ({'; '.join(skipped)})" if skipped else "")
        return run
    run = functools.partial(sdpa, q, k, v, is_causal=causal)
    run.note = f"default backend ({'; '.join(skipped)})"
    return run
