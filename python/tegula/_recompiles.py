"""Warns when one kernel keeps compiling for new specializations.

Every new combination of what a launch specializes on (an int equal to 1 or
divisible by 16, a pointer's dtype and alignment, a constexpr's value, a
launch option) is a compile of its own: seconds on a cold cache, and a
kernel launched with a varying constexpr or an int that is sometimes 1 can
compile on every call. Triton gives no sign of it. Once a kernel has
compiled ``TEGULA_RECOMPILE_WARNING`` specializations in this process
(default 8; 0 turns the check off), a ``tegula.RecompileWarning`` names the
parameters and options that differ between them, and what to do about each.
An autotuner's trials do not count: trying configs is what it is for.
"""

from __future__ import annotations

import threading

from . import _C, _environment

_DEFAULT_THRESHOLD = 8
_TUNING = threading.local()  # .active: this thread compiles an autotuner's trial
_OPTIONS = ("backend", "num_warps", "num_stages", "fp_fusion", "maxnreg", "debug", "device")


class RecompileWarning(UserWarning):
    """One kernel compiled for many specializations (see tegula._recompiles)."""


class tuning:
    """``with tuning():`` the compiles on this thread are an autotuner's trials."""

    def __enter__(self):
        self.before = getattr(_TUNING, "active", False)
        _TUNING.active = True

    def __exit__(self, *exc):
        _TUNING.active = self.before


def threshold() -> int:
    """0: never; else at least 2 (one specialization is no recompile)."""
    value = _environment.count("TEGULA_RECOMPILE_WARNING", _DEFAULT_THRESHOLD)
    return 0 if value == 0 else max(2, value)


def _spec_text(spec) -> str:
    """How a parameter was specialized, in words a user recognizes."""
    kinds = _C.ArgSpec.Kind
    if spec.kind == kinds.Constexpr:
        value = spec.value
        gv = _C.GlobalValue.Kind
        if value.kind in (gv.Int, gv.Bool):
            return repr(bool(value.int_value)) if value.kind == gv.Bool else str(value.int_value)
        if value.kind == gv.Float:
            return repr(value.float_value)
        if value.kind in (gv.Str, gv.DType):
            return value.text
        if value.kind == gv.None_:
            return "None"
        return value.text or str(value.kind).split(".")[-1]
    if spec.kind == kinds.Int:
        if spec.is_one:
            return f"{spec.dtype} equal to 1"
        return f"{spec.dtype} divisible by 16" if spec.divisibility == 16 else f"{spec.dtype}"
    if spec.kind in (kinds.Pointer, kinds.TensorDescriptor):
        aligned = "16-byte aligned" if spec.divisibility == 16 else "not 16-byte aligned"
        return f"*{spec.dtype} {aligned}"
    if spec.kind == kinds.Tuple:
        return "(" + ", ".join(_spec_text(p) for p in spec.parts) + ")"
    return str(spec.dtype)


def _element_names(spec) -> list:
    """How a tuple's or an aggregate's elements are read: their field names, else their indices."""
    gv = _C.GlobalValue.Kind
    text = spec.value.text
    if spec.value.kind == gv.AggregateType and ":" in text:
        fields = text.split(":", 1)[1].split(",")
    elif spec.value.kind == gv.Str and text and not text.startswith("agg:"):
        fields = text.split(",")
    else:
        fields = []
    return ["." + f for f in fields] if len(fields) == len(spec.parts) else [f"[{i}]" for i in range(len(spec.parts))]


def _describe(path: str, param: str, constexpr: bool, spec, out: dict) -> None:
    """out[path] = (role, text) for `spec` and, for a tuple or an aggregate, for each of its elements
    (path "ep.bias", "t[1]"); the role says how the parameter `param` is declared and what the element is."""
    kinds = _C.ArgSpec.Kind
    if spec.kind == kinds.Tuple:
        for suffix, part in zip(_element_names(spec), spec.parts):
            _describe(path + suffix, param, constexpr, part, out)
        return
    if path == param:
        role = "constexpr" if constexpr else "argument"
    else:  # inside a tuple or an aggregate: how it can be fixed depends on the parameter's declaration
        role = ("constant in " if spec.kind == kinds.Constexpr else "value in ") + \
            ("constexpr " if constexpr else "") + param
    out[path] = (role, _spec_text(spec))


class SpecializationLog:
    """The specializations one kernel has compiled in this process."""

    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self.seen: list[dict] = []
        self.warned = False
        self._lock = threading.Lock()

    def record(self, names: tuple, is_constexpr: tuple, request, options) -> None:
        if getattr(_TUNING, "active", False):
            return
        limit = threshold()
        described = {}
        for name, constexpr, spec in zip(names, is_constexpr, request.args):
            _describe(name, name, constexpr, spec, described)
        for option in _OPTIONS:
            if hasattr(options, option):
                described["option " + option] = ("option", repr(getattr(options, option)))
        with self._lock:
            if described in self.seen:
                return
            self.seen.append(described)
            if self.warned or limit == 0 or len(self.seen) < limit:
                return
            self.warned = True
            message = self._message()
        _environment.warn_at_caller(message, RecompileWarning)

    def _message(self) -> str:  # noqa: C901 - one sentence per kind of difference
        varying = []
        for key in self.seen[0]:
            values = []
            for described in self.seen:
                text = described.get(key, (None, "?"))[1]
                if text not in values:
                    values.append(text)
            if len(values) > 1:
                varying.append((key, self.seen[0][key][0], values))
        parts = []
        advice = []
        for key, role, values in varying:
            shown = ", ".join(values[:5]) + (", ..." if len(values) > 5 else "")
            parts.append(f"{key} ({shown})")
            # Advice only where it removes a difference: values that differ only in the int specialization
            # (== 1, % 16) or only in an address's alignment, and constexprs of three or more int values (two
            # flags or two dtypes are code worth compiling twice).
            ints = _differ_only_in(values, (" equal to 1", " divisible by 16"))
            aligned = _differ_only_in(values, _ALIGNMENTS)
            if role.startswith("value in constexpr "):
                param = role.split()[-1]
                if ints or aligned:
                    advice.append(f"{key} is specialized as any argument is: without the tl.constexpr "
                                  f"annotation of {param}, @jit(do_not_specialize=[{param!r}]) or "
                                  f"do_not_specialize_on_alignment=[{param!r}] covers its fields")
            elif role.startswith("value in ") or role == "argument":
                param = role.split()[-1] if role != "argument" else key
                if ints:
                    advice.append(f"@jit(do_not_specialize=[{param!r}]) compiles once for every value of {key}")
                elif aligned:
                    advice.append(f"@jit(do_not_specialize_on_alignment=[{param!r}]) compiles once for every "
                                  f"alignment of {key}")
            elif (role == "constexpr" or role.startswith("constant in ")) and len(values) > 2 and all(
                    v.lstrip("-").isdigit() for v in values):
                # A constexpr that sizes a tile (tl.arange, a block shape) cannot become a runtime argument:
                # rounding comes first, the runtime argument only where it sets no shape.
                advice.append(f"a constexpr that takes many values ({key}) compiles once per value: round it "
                              f"to fewer values (a power of two), or, if it sets no tile shape, pass it as a "
                              f"runtime argument")
        what = "; ".join(parts) if parts else "nothing visible here (the kernel's globals changed)"
        text = (f"kernel '{self.kernel_name}' has compiled {len(self.seen)} specializations in this process, "
                f"each a compile of its own; they differ in: {what}.")
        if advice:
            text += " " + "; ".join(advice) + "."
        return text + " TEGULA_RECOMPILE_WARNING=0 turns this check off."


_ALIGNMENTS = (" not 16-byte aligned", " 16-byte aligned")  # as describe() words them


def _differ_only_in(values: list, phrases: tuple) -> bool:
    """Whether two of the described values are the same once these phrases are taken out of them."""
    stripped = []
    for value in values:
        for phrase in phrases:
            value = value.replace(phrase, "")
        stripped.append(value)
    return len(set(stripped)) < len(stripped)
