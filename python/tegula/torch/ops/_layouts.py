"""What an op's host function derives from its arguments' metadata, kept by that metadata.

A training step calls each op with the same shapes, strides and dtypes at every step, and a host
function that checks its arguments and works out views, strides and grids from them makes a few dozen
torch calls a time to get the same answer: inside a compiled step, more host time than the op's
launches. An op keeps that answer (its "layout": plain numbers and tuples, never tensors) in a
``Layouts`` by ``metadata(...)`` of its arguments and launches from it. A layout may depend only on the
metadata: tile sizes and other tables a tool may change at run time are read at every call.
"""

from __future__ import annotations

import torch


def metadata(*tensors: torch.Tensor) -> tuple:
    """What a layout may depend on: each tensor's shape, strides, dtype, device and address modulo 16
    (descriptors and vector accesses care about alignment)."""
    return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16) for t in tensors)


class Layouts(dict):
    """Layouts by metadata (plus whatever else a key holds); None for keys the general path takes.
    Bounded: a model whose shapes keep changing starts over instead of growing it."""
    LIMIT = 256

    def find(self, key, build, *args):
        """The layout of `key`, built by ``build(*args)`` the first time."""
        layout = self.get(key, self)
        if layout is self:
            if len(self) >= self.LIMIT:
                self.clear()
            layout = self[key] = build(*args)
        return layout
