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

import functools
from typing import Any, Callable, Iterable

import torch
from torch._library.custom_ops import CustomOpDef

import tegula.language as tl

from . import _inductor_fallback

__all__ = ["custom_op", "register_autograd", "compute_dtype", "dot_precision", "TegulaOp"]


def custom_op(name: str, *, fake: Callable, mutates_args: Iterable[str] = (), tags: Iterable = ()) -> "TegulaOp":
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
    ``tags`` are ``torch.Tag`` values for the op, e.g. the layout constraint
    Inductor honours when it passes the op buffers: by default the exact
    strides the inputs had when traced, so a buffer Inductor padded (rows of
    2048 bytes or more are padded to 128-byte multiples on a GPU) is copied
    first; ``torch.Tag.needs_fixed_stride_order`` passes it as it is, for a
    function that reads rows of any stride.
    Returns a ``TegulaOp``: call it like the function."""
    def wrap(fn: Callable) -> TegulaOp:
        extra = {"tags": tuple(tags)} if tags else {}
        op = torch.library.custom_op(name, mutates_args=tuple(mutates_args), **extra)(fn)
        _inductor_fallback.add(op._opoverload)

        @functools.wraps(fake)
        def fake_registering_fallback(*args, **kwargs):
            _inductor_fallback.register_pending()
            return fake(*args, **kwargs)

        op.register_fake(fake_registering_fallback)
        op.__class__ = TegulaOp
        op._tegula_fn, op._tegula_mutates, op._tegula_function = fn, bool(tuple(mutates_args)), None
        if not mutates_args:
            _register_kernels(name, op)
            setattr(op._opoverload, _inductor_fallback.DIRECT, _inductor_fallback.direct_call(op._opoverload, fn))
        return op
    return wrap


def _register_kernels(name: str, op: "TegulaOp") -> None:
    """Registers the op's kernels for the calls that come through torch's
    dispatcher (a compiled graph's, ``torch.ops``'s) on CPU and CUDA tensors.

    The backend kernel is the host function itself. custom_op's own wraps it
    in a frame-evaluation guard and an aliasing check of the outputs, some 10
    microseconds of Python per call; the host functions never return their
    inputs and are never traced.

    The autograd kernel, registered for AutogradCPU and AutogradCUDA (which
    take precedence over custom_op's registration for the Autograd alias, so
    nothing is overridden), does in Python what ``TegulaOp.__call__`` does:
    with plain tensors and nothing tracing, the host function directly, or its
    ``autograd.Function`` when a gradient is needed. custom_op's kernel would
    call back into the dispatcher below autograd and from there into Python
    again (docs/torch.md has the measurement). Anything else
    (fake or functional tensors, a dispatch mode, an op without a gradient
    formula asked for one) takes custom_op's kernel, as before."""
    namespace, op_name = name.split("::")
    library = _LIBRARIES.get(namespace)
    if library is None:
        library = _LIBRARIES[namespace] = torch.library.Library(namespace, "FRAGMENT")
    host = op._tegula_fn
    for key in ("CPU", "CUDA"):
        library.impl(op_name, host, key)
        library.impl(op_name, _autograd_kernel(op, torch.library.get_kernel(op._opoverload, "Autograd" + key)),
                     "Autograd" + key, with_keyset=True)


def _autograd_kernel(op: "TegulaOp", custom_op_kernel) -> Callable:
    def autograd_kernel(keyset, *args, **kwargs):
        if kwargs:
            return custom_op_kernel.call_boxed(keyset, *args, **kwargs)
        result = _call_directly(op, args)
        return custom_op_kernel.call_boxed(keyset, *args) if result is _NOT_DIRECT else result
    return autograd_kernel


_NOT_DIRECT = object()


def _call_directly(op: "TegulaOp", args: tuple) -> Any:
    """The call of ``op`` on positional ``args`` without torch's dispatcher when
    nothing can be tracing it: the host function, or its ``autograd.Function``
    when a gradient is needed; ``_NOT_DIRECT`` when the call must take torch's
    route (something may be tracing, the op mutates an input, or a gradient is
    asked of an op without a formula, whose error is torch's)."""
    if op._tegula_mutates or not _plain_eager(args):
        return _NOT_DIRECT
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        return _NOT_DIRECT if op._tegula_function is None else op._tegula_function.apply(*args)
    return op._tegula_fn(*args)


# One fragment per namespace, alive as long as the ops: a Library's registrations end when it is freed.
_LIBRARIES: dict = {}


class TegulaOp(CustomOpDef):
    """A Tegula custom op: torch's ``CustomOpDef`` (opcheck, register_kernel
    and the rest work as for any custom op) whose calls go through torch's
    dispatcher whenever something may be tracing them (torch.compile,
    torch.export, a dispatch mode such as FakeTensorMode, tensor subclasses,
    functorch transforms), and straight to the host function in plain eager
    mode, with the same autograd formula through a
    ``torch.autograd.Function``. The dispatcher's route costs tens of
    microseconds of Python per call, as much as the launches of a small op;
    the results are the same either way."""

    # Set on the instance when custom_op turns a CustomOpDef into a TegulaOp.
    _tegula_fn: Callable
    _tegula_mutates: bool
    _tegula_function: Any  # the autograd.Function, once register_autograd gave a formula

    def __call__(self, *args, **kwargs):
        result = _NOT_DIRECT if kwargs else _call_directly(self, args)
        return super().__call__(*args, **kwargs) if result is _NOT_DIRECT else result


def _plain_eager(args) -> bool:
    """Nothing can be tracing a call with these arguments: not compiling, no
    dispatch mode or functorch transform active, and every tensor a plain
    torch.Tensor (or Parameter) with memory, not a fake or functional
    subclass, nor a meta tensor, nor a negated view."""
    if torch.compiler.is_compiling() or _dispatch_modes() or _functorch_level() is not None:
        return False
    for a in args:
        # A meta tensor has no memory to launch on: the dispatcher's route runs the op's fake. A negated view
        # (x.conj().imag) holds its values with the other sign, which a launch refuses; the dispatcher's
        # route resolves it into a copy first, as for any torch op.
        if isinstance(a, torch.Tensor) and (type(a) not in _PLAIN_TENSORS or a.is_meta or a.is_neg()):
            return False
        if isinstance(a, (list, tuple)) and not _plain_eager(a):
            return False
    return True


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


# How many dispatch modes are active (torch.utils._python_dispatch._get_current_dispatch_mode's test, without
# its Python frame: the ops' direct calls ask it at every call).
_dispatch_modes = torch._C._len_torch_dispatch_stack
_functorch_level = torch._C._functorch.peek_interpreter_stack


def register_autograd(op, backward: Callable, *, save: Callable, non_differentiable: Iterable[int] = ()) -> None:
    """Gives ``op`` (from ``custom_op``) its gradient formula.

    ``save(inputs, output)`` picks what the backward needs: a tuple of tensors
    and plain values (tensors are kept through ``ctx.save_for_backward``, so
    in-place changes to them after the forward are detected). ``backward(saved,
    *grads)`` receives that tuple and one gradient per output, and returns one
    gradient per input of ``op`` (None for inputs without one). To stay in a
    compiled graph, the backward may use torch only to allocate and reshape,
    and launch its kernels through other custom ops.

    ``non_differentiable``: indices of outputs that carry no gradient (values
    the op hands out for its own backward, such as rotated inputs); they do
    not require grad, and for an op with any, ``backward`` receives None
    instead of zeros for every output without a gradient (no zeros are
    allocated for them)."""
    if not hasattr(op, "register_autograd"):
        raise TypeError(f"register_autograd takes an op made by tegula.torch.custom_op, got {type(op).__name__}")
    non_differentiable = tuple(non_differentiable)
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in non_differentiable):
        raise TypeError(f"register_autograd's non_differentiable holds output indices (ints >= 0), got "
                        f"{non_differentiable!r}")

    def setup_context(ctx, inputs, output):
        outputs = output if isinstance(output, (tuple, list)) else (output,)  # one output: the tensor itself
        if non_differentiable:
            if max(non_differentiable) >= len(outputs):
                raise ValueError(f"register_autograd's non_differentiable {non_differentiable} names an output "
                                 f"the op does not have (it has {len(outputs)})")
            ctx.mark_non_differentiable(*(outputs[i] for i in non_differentiable))
            ctx.set_materialize_grads(False)
        saved = save(inputs, output)
        if not isinstance(saved, (tuple, list)):  # a bare tensor would be split into its rows
            raise TypeError(f"register_autograd's save must return a tuple of what the backward needs, got "
                            f"{type(saved).__name__} (write `lambda inputs, output: (inputs[0],)`)")
        saved = tuple(saved)
        ctx.tegula_tensor_at = [i for i, value in enumerate(saved) if isinstance(value, torch.Tensor)]
        ctx.tegula_values = tuple(None if isinstance(value, torch.Tensor) else value for value in saved)
        ctx.save_for_backward(*(saved[i] for i in ctx.tegula_tensor_at))

    def backward_from_context(ctx, *grads):
        saved = list(ctx.tegula_values)
        for i, tensor in zip(ctx.tegula_tensor_at, ctx.saved_tensors):
            saved[i] = tensor
        return backward(tuple(saved), *grads)

    op.register_autograd(backward_from_context, setup_context=setup_context)
    if isinstance(op, TegulaOp):
        host = op._tegula_fn

        # forward(ctx, ...) rather than a separate setup_context: with one,
        # Function.apply binds its arguments through inspect.signature at
        # every call. Named after the host function, so is its grad_fn.
        def forward(ctx, *args):
            output = host(*args)
            setup_context(ctx, args, output)
            return output

        Function = type(f"{host.__name__}_function", (torch.autograd.Function,), {
            "forward": staticmethod(forward),
            "backward": staticmethod(backward_from_context),
        })
        op._tegula_function = Function


def compute_dtype(*tensors: torch.Tensor) -> Any:
    """The Tegula dtype kernels should accumulate in for these tensors:
    float64 when any is float64 (so gradcheck sees double precision), else
    float32 (half and bfloat16 inputs are widened)."""
    for t in tensors:
        if t.dtype is torch.float64:
            return tl.float64
    return tl.float32


def dot_precision(tensor: torch.Tensor) -> str:
    """The ``input_precision`` of a ``tl.dot`` over float32 tiles of `tensor`
    that must keep float32's accuracy: on the GPU ``"tf32x3"`` (each operand
    split into two TF32 parts, three tensor-core products: an error of the
    order of float32's, at a multiple of the FMA units' rate, as torch's own
    float32 attention kernels do it), elsewhere ``"ieee"``. Other dtypes
    ignore the argument."""
    return "tf32x3" if tensor.is_cuda and tensor.dtype == torch.float32 else "ieee"
