"""Which pointer arguments a compiled kernel reads and writes, from its tile IR.

The autotuner launches a kernel many times on the caller's arrays; an
argument the kernel updates in place (``x += 1``, an atomic accumulator)
must be saved before tuning and put back before every trial so that tuning
leaves the caller's data exactly as one launch would. This module answers
"which pointer parameters can a store or an atomic reach" by reading the
final IR text (``kernel.inspect(...).ir``, format in docs/ir.md).

The analysis is flow-insensitive and errs on the side of "written":

* every value depends on every value its defining op names, except that the
  result of a ``load`` (or an atomic) depends on nothing: memory never holds
  pointers (``ptr<T>`` never points at a pointer), so a loaded index can move
  a pointer but never make it point into another argument;
* the results and block arguments of an op with regions (``for``, ``if``,
  ``while``, ``reduce``) depend on its operands and on everything its regions
  yield (loop-carried pointers);
* the pointer a ``store`` or an atomic writes through is traced back to the
  pointer parameters it may derive from. A pointer that derives from none
  (an integer cast to a pointer) could point anywhere: every pointer
  parameter then counts as written. So does text this module cannot read.
"""

from __future__ import annotations

import dataclasses
import re

_HEADER = re.compile(r"^kernel @(?:\"(?:[^\"\\]|\\.)*\"|[\w.]+)\((.*)\) \{$")
_PARAM = re.compile(r"(%(?:\"(?:[^\"\\]|\\.)*\"|[\w.]+)): ([^,()]+(?:<[^>]*>)?)")
_VALUE = re.compile(r"%(?:\"(?:[^\"\\]|\\.)*\"|[\w.?]+)")
_OP = re.compile(r"^((?:%\S+)(?:, %\S+)*) = ([a-z_][\w.]*)(.*)$|^([a-z_][\w.]*)(.*)$")
# The location comment the printer appends: "// file:line:col", no quote after it.
_LOCATION = re.compile(r"\s+// [^\"]*$")
_REGION_SEPARATOR = re.compile(r"^\}(?: [a-z]+)? \{$")
# Stands for "any address" among the roots of a pointer built from an integer.
_UNKNOWN_ORIGIN = "%<unknown origin>"


@dataclasses.dataclass(frozen=True)
class ParamEffects:
    """What a kernel may do to the memory behind one pointer parameter."""

    read: bool = False
    written: bool = False
    atomic: bool = False


class _Frame:
    """An op with regions whose text is open: its results, operands and the values its regions yield."""

    def __init__(self, results, operands):
        self.results = list(results)
        self.operands = set(operands)
        self.block_args: list = []
        self.yielded: set = set()


def _writes_memory(op: str) -> bool:
    return op == "store" or "atomic" in op


def _reads_memory(op: str) -> bool:
    return op == "load" or "atomic" in op


def analyze(ir_text: str) -> dict | None:
    """``{pointer parameter name: ParamEffects}`` for the kernel in ``ir_text``,
    or None when the text is not a kernel this module can read (the caller
    should then assume every pointer parameter is read and written)."""
    lines = [line.rstrip() for line in ir_text.strip().splitlines()]
    if len(lines) < 2 or lines[-1] != "}":
        return None
    header = _HEADER.match(lines[0])
    if header is None:
        return None
    pointer_params = {name for name, type_ in _PARAM.findall(header.group(1)) if "ptr<" in type_}

    depends: dict[str, set] = {}
    writes, reads, atomics = [], [], []
    frames: list[_Frame] = []
    for raw in lines[1:-1]:
        line = _LOCATION.sub("", raw).strip()
        if not line:
            continue
        if line == "}":
            if not frames:
                return None
            frame = frames.pop()
            for value in frame.results + frame.block_args:
                depends.setdefault(value, set()).update(frame.operands | frame.yielded)
            continue
        if _REGION_SEPARATOR.match(line):
            if not frames:
                return None
            continue
        if line.startswith("^bb("):
            if not frames:
                return None
            frames[-1].block_args += _VALUE.findall(line)
            continue
        match = _OP.match(line)
        if match is None:
            return None
        if match.group(2):
            results, op, rest = _VALUE.findall(match.group(1)), match.group(2), match.group(3)
        else:
            results, op, rest = [], match.group(4), match.group(5)
        opens_region = rest.endswith("{")
        operands = _VALUE.findall(rest)
        if op in ("yield", "condition"):
            if not frames:
                return None
            frames[-1].yielded.update(operands)
        target = operands[:1]  # the pointer operand comes first
        if _writes_memory(op):
            writes.append(target)
        if _reads_memory(op):
            reads.append(target)
        if "atomic" in op:
            atomics.append(target)
        if op == "cast" and "ptr<" in rest.rpartition(" : ")[2]:
            operands.append(_UNKNOWN_ORIGIN)  # an address made from an integer
        if opens_region:
            frames.append(_Frame(results, operands))
        loaded = _reads_memory(op)
        for value in results:
            depends.setdefault(value, set()).update(() if loaded else operands)
    if frames:
        return None

    roots_of: dict[str, frozenset] = {}

    def roots(value: str) -> frozenset:
        # Iterative depth-first walk: kernels can chain thousands of values.
        if value in roots_of:
            return roots_of[value]
        found, seen, stack = set(), {value}, [value]
        while stack:
            current = stack.pop()
            if current in pointer_params or current == _UNKNOWN_ORIGIN:
                found.add(current)
            for dep in depends.get(current, ()):
                if dep in roots_of:
                    found |= roots_of[dep]
                elif dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        roots_of[value] = frozenset(found)
        return roots_of[value]

    def params_behind(targets: list) -> set:
        behind = set()
        for target in targets:
            reached = roots(target[0]) if target else frozenset()
            if not reached or _UNKNOWN_ORIGIN in reached:
                return set(pointer_params)  # a pointer that may point anywhere
            behind |= reached
        return behind

    written = params_behind(writes)
    read = params_behind(reads)
    atomic = params_behind(atomics)
    return {_plain(name): ParamEffects(read=name in read, written=name in written, atomic=name in atomic)
            for name in pointer_params}


def _plain(value_ref: str) -> str:
    """The parameter name of ``%name`` (or of the quoted ``%"odd name"``)."""
    name = value_ref[1:]
    if name.startswith('"'):
        name = name[1:-1].encode().decode("unicode_escape")
    return name
