"""The arrays autotuning must put back: which ones, their copies, and restoring them.

Tuning launches a kernel many times on the caller's own arrays. Saved before
the first trial and put back before every timed launch (untimed) and once
more when tuning ends:

* every array ``restore_value`` or ``reset_to_zero`` names;
* every array the kernel both reads and writes, or updates atomically, as the
  compiler's pointer provenance analysis reports it for each compiled config
  (``CompiledKernel.effects``);
* every array it writes that shares memory with another array argument (an
  output aliasing an input is an in-place update).

Arrays a kernel only writes are not copied: every config writes the same
elements, and the launch after tuning overwrites them again, so copying them
would only cost memory (a GPU matmul's C can be gigabytes).
"""

from __future__ import annotations

import numpy as np
from ._errors import coded


class SavedArguments:
    """Copies of the array arguments tuning must not change (see the module
    docstring); ``reset_to_zero`` arrays are also zeroed before every trial."""

    def __init__(self, tuner, trials: list, named: dict):
        sig = tuner.base.signature
        # The arrays inside tuple and aggregate arguments too, by the names the compiler gives their
        # parameters (NAME__i): its effects name them so.
        flat = dict(named)
        for name in sig.names:
            if name in named:
                _add_elements(name, named[name], flat)
        pointer_params = [name for name, value in flat.items()
                          if _is_array(value) and (name not in named or not _is_constexpr(sig, name))]
        chosen = set()
        for name in (*tuner.restore_value, *tuner.reset_to_zero):
            chosen.update(_arrays_under(name, flat) or [name])
        for trial in trials:
            for name, effects in trial.kernel.effects.items():
                if not effects.written or name not in flat:
                    continue
                if effects.read or effects.atomic or _overlaps_another(name, flat, pointer_params):
                    chosen.add(name)
        self.kernel = tuner.__name__
        self.saved = []   # (name, array, copy)
        self.zeroed = []  # arrays zeroed after each restore
        zeroed_names = {n for name in tuner.reset_to_zero for n in (_arrays_under(name, flat) or [name])}
        for name in sorted(chosen, key=lambda n: (sig.names.index(n.split("__")[0]) if n.split("__")[0] in sig.names
                                                  else -1, n)):
            value = flat.get(name)
            if not _is_array(value):
                # None stands for an optional array this call leaves out (Triton's autotuner skips it too).
                if value is not None and (name in tuner.restore_value or name in tuner.reset_to_zero):
                    raise coded(TypeError, "E0710", f"autotune of kernel '{self.kernel}' must save argument '{name}' "
                                                    f"(restore_value / reset_to_zero), but it is a "
                                                    f"{type(value).__name__}, not an array")
                continue
            self.saved.append((name, value, _copy_of(self.kernel, name, value)))
            if name in zeroed_names:
                self.zeroed.append(value)

    @property
    def names(self) -> list:
        return [name for name, _, _ in self.saved]

    def restore(self, for_trial: bool) -> None:
        """Puts the saved arrays back; before a trial, also zeroes the reset_to_zero ones."""
        for _, array, copy in self.saved:
            _copy_into(array, copy)
        if for_trial:
            for array in self.zeroed:
                _fill_zero(array)


def _is_constexpr(sig, name: str) -> bool:
    return sig.is_constexpr[sig.names.index(name)]


def _elements(value) -> tuple | None:
    """The elements of a tuple argument, or the fields of an @aggregate instance in their order
    (constexpr ones included: the compiler numbers elements so); None for anything else."""
    if isinstance(value, tuple):
        return value
    fields = getattr(type(value), "__aggregate_fields__", None)
    if getattr(type(value), "__tegula_aggregate__", False) and fields is not None:
        state = getattr(value, "__dict__", {})
        return tuple(state.get(field) for field in fields)
    return None


def _add_elements(name: str, value, flat: dict, depth: int = 0) -> None:
    items = _elements(value)
    if items is None or depth > 32:
        return
    for i, item in enumerate(items):
        flat[f"{name}__{i}"] = item
        _add_elements(f"{name}__{i}", item, flat, depth + 1)


def _arrays_under(name: str, flat: dict) -> list:
    """The names of the arrays inside the tuple or aggregate argument `name` (none for an array)."""
    prefix = name + "__"
    return [n for n, v in flat.items() if n.startswith(prefix) and _is_array(v)]


def _is_array(value) -> bool:
    return (isinstance(value, np.ndarray) or hasattr(value, "data_ptr")
            or hasattr(value, "__cuda_array_interface__"))


def _copy_of(kernel: str, name: str, array):
    if isinstance(array, np.ndarray):
        return array.copy()
    if hasattr(array, "clone") and hasattr(array, "copy_"):  # torch
        return array.clone()
    if hasattr(array, "copy"):  # CuPy and other array libraries
        return array.copy()
    raise coded(TypeError, "E0710", f"autotune of kernel '{kernel}' cannot save argument '{name}' "
                                    f"({type(array).__name__}) before tuning; pass a NumPy array or a torch tensor")


def _copy_into(array, copy) -> None:
    if isinstance(array, np.ndarray):
        np.copyto(array, copy)
    elif hasattr(array, "copy_"):
        array.copy_(copy)
    else:
        array[...] = copy


def _fill_zero(array) -> None:
    if hasattr(array, "zero_"):
        array.zero_()
    else:
        array.fill(0)


def _byte_span(array):
    """(where, first byte, one past the last byte) of an array's memory, or None if unknown."""
    if isinstance(array, np.ndarray):
        if array.size == 0:
            return ("cpu", 0, 0)
        low, high = (np.lib.array_utils.byte_bounds(array) if hasattr(np.lib, "array_utils")
                     else np.byte_bounds(array))
        return ("cpu", low, high)
    if hasattr(array, "data_ptr") and hasattr(array, "stride") and hasattr(array, "element_size"):
        if array.numel() == 0:
            return (str(array.device), 0, 0)
        extent = sum((size - 1) * stride for size, stride in zip(array.shape, array.stride()))
        start = array.data_ptr()
        return (str(array.device), start, start + (extent + 1) * array.element_size())
    return None


def _overlaps_another(name: str, named: dict, pointer_params: list) -> bool:
    mine = _byte_span(named[name])
    if mine is None:
        return True
    for other in pointer_params:
        if other == name:
            continue
        theirs = _byte_span(named[other])
        if theirs is None:
            return True
        if theirs[0] == mine[0] and theirs[1] < mine[2] and mine[1] < theirs[2]:
            return True
    return False
