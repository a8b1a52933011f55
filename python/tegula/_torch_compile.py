"""A Tegula launch inside a region torch.compile traces.

TorchDynamo would trace into ``kernel[grid]`` and fail on the compiled
launcher behind it (an internal error about a ``property``). Marked as
``torch.compiler.disable`` marks a function, the launch becomes a graph
break instead: Dynamo runs it as it is and says why, and the reason names
the route that keeps a launch inside the graph, a ``torch.library`` custom
op (docs/python-api.md, "Inside torch.compile").

The mark is what ``torch.compiler.disable`` leaves on a function (the
attributes Dynamo reads before inlining a call, and its code skipped when
it runs as a frame of its own), made without importing torch._dynamo,
which would cost seconds of imports at every kernel definition. It is made
when torch is already imported, at the first kernel defined after that.
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
    _marked = True
    launch = jit_function_type.__getitem__
    launch._torchdynamo_disable = True
    launch._torchdynamo_disable_msg = REASON
    try:
        from torch._C._dynamo.eval_frame import FrameAction, FrameExecStrategy, set_code_exec_strategy
    except ImportError:  # a torch without Dynamo's frame strategies: the attributes alone
        return
    set_code_exec_strategy(launch.__code__, FrameExecStrategy(FrameAction.SKIP, FrameAction.DEFAULT))
