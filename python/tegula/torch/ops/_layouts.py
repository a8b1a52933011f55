"""What an op's host function derives from its arguments' metadata, kept by that metadata.

A training step calls each op with the same shapes, strides and dtypes at every step, and a host
function that checks its arguments and works out views, strides and grids from them makes a few dozen
torch calls a time to get the same answer: inside a compiled step, more host time than the op's
launches. An op keeps that answer (its "layout": plain numbers and tuples, never tensors) in a
``Layouts`` by ``metadata(...)`` of its arguments and launches from it. A layout may depend only on the
metadata and the key's other values: a table a tool may change at run time is read at every call, into
the key (the tile tables' entries, ``_rows.tables()``) or outside the layout.

Even the key costs: ``metadata`` of eight tensors makes forty attribute calls and hashes the tuples they
give, several microseconds where the host is slow. So ``Layouts.lookup`` first asks the few layouts it
found last, each through torch's guard of the tensors it was found for (``TensorGuards``: dtype, device,
sizes, strides, in C++), plus their addresses modulo 16, and computes the key only when none of them
matches.
"""

from __future__ import annotations

import torch

try:
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # a torch without it: every lookup computes the key
    TensorGuards = None


def metadata(*tensors: torch.Tensor) -> tuple:
    """What a layout may depend on: each tensor's shape, strides, dtype, device and address modulo 16
    (descriptors and vector accesses care about alignment)."""
    return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16) for t in tensors)


def _guards_tell_strides_apart() -> bool:
    """Whether this torch's guards check what lookup relies on: a guard of a strided view must refuse a tensor
    of the same shape and other strides, or dtype. Asked once."""
    global _GUARDS_CHECKED
    if _GUARDS_CHECKED is None:
        _GUARDS_CHECKED = False
        try:
            view = torch.zeros(4, 5)[:, :4]
            guard = _new_guard((view,))
            _GUARDS_CHECKED = (guard.check(view) and not guard.check(view.contiguous())
                               and not guard.check(view.double()))
        except Exception:  # noqa: BLE001 - a torch whose guards take other arguments: the key path only
            pass
    return _GUARDS_CHECKED


_GUARDS_CHECKED = None if TensorGuards is not None else False


def _new_guard(tensors: tuple):
    # Every size and stride given: a None there would leave that dimension unchecked (a dynamic one).
    return TensorGuards(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                        dynamic_dims_strides=[list(t.stride()) for t in tensors])


def _guard(tensors: tuple):
    """A check that tensors have the dtypes, devices, sizes and strides of these (None: none available)."""
    if not _guards_tell_strides_apart():
        return None
    try:
        guard = _new_guard(tensors)
        return guard if guard.check(*tensors) else None
    except Exception:  # noqa: BLE001 - a torch whose guards take other arguments: the key path only
        return None


class Layouts(dict):
    """Layouts by key (metadata plus whatever else a key holds); None for keys the general path takes.
    Bounded: a model whose shapes keep changing starts over instead of growing it."""
    LIMIT = 256
    RECENT = 4  # how many layouts lookup asks by their guards before computing the key

    def __init__(self):
        super().__init__()
        self._recent = []  # [guard, residues of the addresses modulo 16, extra, layout], latest first
        self._unguarded = set()  # keys whose tensors no guard takes

    def find(self, key, build, *args):
        """The layout of `key`, built by ``build(*args)`` the first time."""
        layout = self.get(key, self)
        if layout is self:
            if len(self) >= self.LIMIT:
                self.clear()
            layout = self[key] = build(*args)
        return layout

    def lookup(self, tensors: tuple, extra, build, *args):
        """The layout of ``(metadata(*tensors), extra)``, built by ``build(*args)`` the first time; `extra`
        holds the key's other values (hashable, compared with ==)."""
        for entry in self._recent:
            guard, residues, known, layout = entry
            if known == extra and guard.check(*tensors) and [t.data_ptr() & 15 for t in tensors] == residues:
                return layout
        key = (metadata(*tensors), extra)
        layout = self.find(key, build, *args)
        if key not in self._unguarded:
            guard = _guard(tensors)
            if guard is None:  # say, a tensor passed twice, which torch's guards refuse: the key path always
                self._unguarded.add(key)
            else:
                self._recent.insert(0, [guard, [t.data_ptr() & 15 for t in tensors], extra, layout])
                del self._recent[self.RECENT:]
        return layout

    def clear(self):
        super().clear()
        self._recent.clear()
        self._unguarded.clear()
