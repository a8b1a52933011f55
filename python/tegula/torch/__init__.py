"""Tegula inside PyTorch: host functions that launch Tegula kernels as
``torch.library`` custom ops, with their fake implementation and autograd
formula, so ``torch.compile(fullgraph=True)`` keeps them in the graph.

Importing this package imports torch; ``import tegula`` alone never does.

A kernel launched directly inside a compiled region is a graph break (the
launcher cannot run on the fake tensors Dynamo traces with). Wrapped in a
custom op, the launch is opaque to the tracer: Dynamo and AOTAutograd call
the fake implementation to learn the outputs' shapes, dtypes and devices, and
the compiled graph calls the real function, which launches. The backward of
such an op must be a custom op too, for the same reason: AOTAutograd traces
the backward formula with fake tensors.

Launches on CUDA tensors go on ``torch.cuda.current_stream()`` of the device
the tensors live on (the launcher asks torch for that stream at every launch),
so they are ordered with the torch work around them and are captured by
``torch.cuda.graph``. CPU tensors run on the CPU backend through the same
host function. See docs/torch.md.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

__all__ = ["custom_op", "register_autograd", "compute_dtype", "dot_precision"]


def custom_op(name: str, *, fake: Callable, mutates_args: Iterable[str] = ()) -> Callable:
    """Decorator: the host function becomes the custom op ``name``
    ("namespace::op", reachable as ``torch.ops.namespace.op``).

    The function must annotate its parameters and result with the types
    ``torch.library.custom_op`` accepts (Tensor, float, int, bool, lists and
    tuples of them); it allocates its outputs with torch and launches Tegula
    kernels on them. It must not return one of its inputs or a view of one.
    ``fake`` takes the same arguments and returns outputs of the shape, dtype,
    device and strides the function's own outputs have, without computing
    them: ``x.new_empty(shape)`` for a contiguous output (``torch.empty_like``
    keeps the strides of a permuted input, which torch.compile then expects).
    Returns torch's ``CustomOpDef``: call it like the function."""
    def wrap(fn: Callable):
        op = torch.library.custom_op(name, mutates_args=tuple(mutates_args))(fn)
        op.register_fake(fake)
        return op
    return wrap


def register_autograd(op, backward: Callable, *, save: Callable) -> None:
    """Gives ``op`` (from ``custom_op``) its gradient formula.

    ``save(inputs, output)`` picks what the backward needs: a tuple of tensors
    and plain values (tensors are kept through ``ctx.save_for_backward``, so
    in-place changes to them after the forward are detected). ``backward(saved,
    *grads)`` receives that tuple and one gradient per output, and returns one
    gradient per input of ``op`` (None for inputs without one). To stay in a
    compiled graph, the backward may use torch only to allocate and reshape,
    and launch its kernels through other custom ops."""
    def setup_context(ctx, inputs, output):
        saved = tuple(save(inputs, output))
        ctx.tegula_tensor_at = [i for i, value in enumerate(saved) if isinstance(value, torch.Tensor)]
        ctx.tegula_values = tuple(None if isinstance(value, torch.Tensor) else value for value in saved)
        ctx.save_for_backward(*(saved[i] for i in ctx.tegula_tensor_at))

    def backward_from_context(ctx, *grads):
        saved = list(ctx.tegula_values)
        for i, tensor in zip(ctx.tegula_tensor_at, ctx.saved_tensors):
            saved[i] = tensor
        return backward(tuple(saved), *grads)

    op.register_autograd(backward_from_context, setup_context=setup_context)


def compute_dtype(*tensors: torch.Tensor) -> Any:
    """The Tegula dtype kernels should accumulate in for these tensors:
    float64 when any is float64 (so gradcheck sees double precision), else
    float32 (half and bfloat16 inputs are widened)."""
    import tegula.language as tl
    return tl.float64 if any(t.dtype == torch.float64 for t in tensors) else tl.float32


def dot_precision(tensor: torch.Tensor) -> str:
    """The ``input_precision`` of a ``tl.dot`` over float32 tiles of `tensor`
    that must keep float32's accuracy: on the GPU ``"tf32x3"`` (each operand
    split into two TF32 parts, three tensor-core products: an error of the
    order of float32's, at a multiple of the FMA units' rate, as torch's own
    float32 attention kernels do it), elsewhere ``"ieee"``. Other dtypes
    ignore the argument."""
    return "tf32x3" if tensor.is_cuda and tensor.dtype == torch.float32 else "ieee"
