"""A Tegula launch inside a region torch.compile traces.

TorchDynamo would trace into ``kernel[grid]`` and fail on the compiled
launcher behind it (an internal error about a ``property``). Marking the
launch with ``torch.compiler.disable`` makes Dynamo break the graph there
instead, run the launch as it is, and say why: the reason names the route
that keeps a launch inside the graph, a ``torch.library`` custom op
(docs/python-api.md, "torch.compile").

torch is never imported for this: the mark is made when torch is already
imported, at ``import tegula`` and again whenever a kernel is defined.
"""

from __future__ import annotations

import sys

REASON = ("a Tegula launch runs outside the torch.compile graph; to keep it in the graph, launch it inside a "
          "torch.library custom op (torch.library.custom_op with a register_fake), which torch.compile keeps "
          "whole")

_marked = False


def mark_launches(jit_function_type) -> None:
    """Once torch is imported: `kernel[grid]` becomes a graph break with REASON."""
    global _marked
    if _marked or "torch" not in sys.modules:
        return
    torch = sys.modules["torch"]
    compiler = getattr(torch, "compiler", None)
    disable = getattr(compiler, "disable", None)
    if disable is None:
        return
    _marked = True
    launch = jit_function_type.__getitem__
    try:
        jit_function_type.__getitem__ = disable(launch, reason=REASON)
    except TypeError:  # torch before `reason`
        jit_function_type.__getitem__ = disable(launch)
