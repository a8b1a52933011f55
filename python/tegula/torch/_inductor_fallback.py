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
"""

from __future__ import annotations

import sys

import torch

_pending: list = []  # overloads of the Tegula ops not yet registered
_registered: set = set()


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
        except (AttributeError, TypeError):
            pass  # a torch whose Inductor differs: it creates the fallback itself, as for any custom op
