"""Tegula ops as Inductor fallbacks, registered before Inductor meets them.

Inductor has no lowering for a custom op and creates one (an "implicit
fallback": the compiled graph calls the op as it is) the first time a graph
uses it. torch 2.11 logs that event with the op's arguments formatted
eagerly, whatever the log level, and the text of an argument is its
Inductor IR printed whole: a tree that repeats shared subexpressions,
exponential in the depth of the pointwise code not yet computed into a
buffer. On a Transformer's graph (the residual stream and the norms' outputs
feeding the next block) those strings kept the first compiled step busy for
minutes. Later versions format the line lazily.

Registered beforehand, with the layout constraint Inductor would have chosen
itself, Inductor finds a lowering and formats nothing. That needs Inductor's
lowering module, whose import costs about a second, so the ops are
registered from their fake implementations, which only tracing runs, and
only once Dynamo is imported (torch.compile, torch.export, explain): plain
fake-tensor use (opcheck) imports nothing. Every Tegula op known by then is
registered at once, since the fake tensor cache may never call another
op's fake implementation again.

The lowering also names what the compiled graph calls: not the op through
torch's dispatcher (``torch.ops.tegula.rms_norm.default(...)``, a round trip
from Python through the dispatcher's boxing back into Python, some 8 to 25
microseconds a call in a training step) but the op's ``DIRECT`` attribute,
which calls the host function itself (``direct_call``). The graph's
arguments are real tensors and it runs without autograd, so nothing the
dispatcher would do is lost; under a dispatch mode or a functorch transform
(a profiler mode, fake tensors) the attribute takes the dispatcher's route
after all. Python wrappers only: C++ wrappers (AOTInductor) call the op by
its schema as before.

The graph does not check the ops' outputs' sizes and strides either (``_no_size_asserts``); their
alignment it still checks.
"""

from __future__ import annotations

import sys

import torch

_pending: list = []  # overloads of the Tegula ops not yet registered
_registered: set = set()

# The attribute of an op's overload that compiled graphs call (set by tegula.torch.custom_op), and
# whether graphs compiled from now on call it (False: the op, through the dispatcher, to compare).
DIRECT = "_tegula_direct"
CALL_DIRECTLY = True
# Whether graphs compiled from now on leave out the size asserts of the ops' outputs (False: to compare).
SKIP_SIZE_ASSERTS = True


def add(op: torch._ops.OpOverload) -> None:
    """An op to register when the time comes."""
    _pending.append(op)


def register_pending() -> None:
    """Registers every pending op with Inductor, if Dynamo is imported (else nothing: a later call does it)."""
    if not _pending or "torch._dynamo" not in sys.modules:
        return
    try:
        from torch._inductor import lowering
        from torch._library.utils import get_layout_constraint_tag
    except Exception:  # noqa: BLE001 - an Inductor that cannot import (say, a broken Triton) lowers nothing
        _pending.clear()
        return
    while _pending:
        op = _pending.pop()
        _registered.add(op)
        try:
            if op not in lowering.lowerings:
                constraint = lowering.tag_to_layout_constraint(get_layout_constraint_tag(op, with_default=True))
                lowering.make_fallback(op, layout_constraint=constraint, warn=False)
                if hasattr(op, DIRECT):
                    lowering.lowerings[op] = _calling_directly(op, lowering.lowerings[op])
        except (AttributeError, TypeError, ImportError):
            pass  # a torch whose Inductor differs: it creates the fallback itself, as for any custom op


def _calling_directly(op: torch._ops.OpOverload, fallback):
    """`fallback` (the lowering make_fallback registered for `op`), whose kernel nodes call op's DIRECT
    attribute instead of the op: the kernel nodes a lowering creates are the buffers the graph gains."""
    from torch._inductor import ir
    from torch._inductor.virtualized import V
    name = f"torch.ops.{op.namespace}.{op._overloadpacket.__name__}.{op._overloadname}.{DIRECT}"

    def ours(buffer) -> bool:
        return isinstance(buffer, ir.FallbackKernel) and buffer.op_overload is op

    def lower(*args, **kwargs):
        first = len(V.graph.buffers)
        result = fallback(*args, **kwargs)
        for buffer in V.graph.buffers[first:]:
            if CALL_DIRECTLY and ours(buffer) and not buffer.kwargs:
                buffer.python_kernel_name = name
            if SKIP_SIZE_ASSERTS and (ours(buffer) or (isinstance(buffer, ir.MultiOutput)
                                                       and any(ours(b) for b in buffer.inputs))):
                buffer.codegen_size_asserts = _no_size_asserts
        return result
    lower.__dict__.update(fallback.__dict__)  # what Inductor marks on its lowerings (_is_fallback_handler)
    return lower


def _no_size_asserts(wrapper) -> None:
    """A Tegula op's outputs are not checked against its fake implementation's sizes and strides at every
    call (Inductor's ``assert_size_stride``, a microsecond each, several per op): the host functions
    allocate exactly what the fake implementations describe, which the ops' opcheck tests hold them to."""


def direct_call(op: torch._ops.OpOverload, host):
    """What a compiled graph calls for `op`: the host function on the graph's plain tensors, the op itself
    (torch's dispatcher) when a dispatch mode or a functorch transform is active, or given keywords."""
    from . import _dispatch_modes, _functorch_level

    def call(*args, **kwargs):
        if kwargs or _dispatch_modes() or _functorch_level() is not None:
            return op(*args, **kwargs)
        return host(*args)
    call.__name__ = call.__qualname__ = f"{host.__name__}_direct"
    return call
