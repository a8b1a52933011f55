"""Compiling a kernel for a signature, without arguments: Triton's
``triton.compile(triton.compiler.ASTSource(fn, signature, constexprs))``.

``signature`` maps each parameter to what it is bound to, as Triton spells
it: ``"*fp32"`` (a pointer to float32 elements), ``"i32"``, ``"i64"``,
``"u32"``, ``"fp32"``, ``"fp64"``, ``"i1"``, ... or ``"constexpr"``, whose
value ``constexprs`` gives (by name, or by Triton's ``(index,)`` path).
Parameters the signature leaves out take their defaults. ``attrs`` may say
which pointers and integers are divisible by 16 (Triton's
``{(i,): [["tt.divisibility", 16]]}``); nothing is assumed otherwise.

``tegula.compile(src)`` compiles for the active device (``target``: a
``GPUTarget``, else ``tegula.runtime.driver.active``'s) and returns the
CompiledKernel: ``.asm``, ``.metadata``, and ``compiled[grid](*args)``
launches it. A kernel the compiler refuses raises ``CompilationError`` with
its location, as a launch would.
"""

from __future__ import annotations

import numpy as np

from .. import _C
from .._errors import coded
from ..jit import _TRITON_TYPE_NAMES

__all__ = ["ASTSource", "CompiledKernel", "compile"]

# What compile() and a launch return; Triton's host code names the class as triton.compiler.CompiledKernel.
CompiledKernel = _C.CompiledKernel

# Signature dtypes -> the IR's names, which ArgSpec takes: the IR's own names, and Triton's spellings
# where they differ (jit.py's table, the other way round).
_SCALARS = {name: name for name in ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
                                    "f64", "f8e4m3", "f8e5m2", "f8e4b15", "f8e4b8", "f8e5b16")}
_SCALARS.update({triton: ir for ir, triton in _TRITON_TYPE_NAMES.items()}, u1="i1")


class ASTSource:
    """A @jit function and the signature it is compiled for (see the module's text)."""

    def __init__(self, fn, signature: dict, constexprs: dict | None = None, attrs: dict | None = None):
        from ..jit import JITFunction

        if not isinstance(fn, JITFunction):
            raise coded(TypeError, "E0701", f"ASTSource takes a @jit function, got {type(fn).__name__}")
        for what, table in (("signature", signature), ("constexprs", constexprs), ("attrs", attrs)):
            if table is not None and not isinstance(table, dict):
                raise coded(TypeError, "E0701", f"ASTSource's {what} maps parameters to values (a dict such as "
                                                f"{{'x_ptr': '*fp32', 'n': 'i32'}}), got {type(table).__name__}")
        self.fn = fn
        self.signature = dict(signature)
        self.constexprs = dict(constexprs or {})
        self.attrs = dict(attrs or {})

    def __repr__(self) -> str:
        return f"ASTSource({self.fn.__name__}, signature={self.signature}, constexprs={self.constexprs})"


def _by_name(names: tuple, table: dict) -> dict:
    """`table` keyed by parameter names, whether it is keyed so or by Triton's (index,) paths."""
    out = {}
    for key, value in table.items():
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], int) and 0 <= key[0] < len(names):
            key = names[key[0]]
        elif isinstance(key, int) and 0 <= key < len(names):
            key = names[key]
        out[key] = value
    return out


def _divisible(attrs: list) -> bool:
    return any(list(a)[:2] == ["tt.divisibility", 16] for a in attrs)


def _stand_in(kernel: str, name: str, spec: str):
    """A value the launcher classifies in the place of the argument `spec` binds, and (kind, IR type) of
    the ArgSpec that then replaces its spec: an array for a pointer, None (which any parameter takes,
    an annotated one too) for a scalar."""
    if not isinstance(spec, str):
        raise coded(TypeError, "E0701", f"signature of kernel '{kernel}': parameter '{name}' must be a string "
                                        f"such as '*fp32', 'i32' or 'constexpr', got {spec!r}")
    text = spec.strip()
    if text.startswith("*"):
        text = text[1:].lstrip("k")  # Triton's "*kfp32": a pointer to constant elements
        if text not in _SCALARS:
            raise coded(TypeError, "E0701", f"signature of kernel '{kernel}': '{spec}' for '{name}' points to "
                                            f"no dtype Tegula knows ({', '.join(sorted(_SCALARS))})")
        return np.zeros(1, np.float32), ("pointer", _SCALARS[text])
    if text not in _SCALARS:
        raise coded(TypeError, "E0701", f"signature of kernel '{kernel}': '{spec}' for '{name}' is not a type "
                                        f"('*fp32', 'i32', 'fp32', ... or 'constexpr')")
    scalar = _SCALARS[text]
    if scalar == "i1":
        return None, ("bool", scalar)
    if scalar.startswith("f") or scalar == "bf16":
        return None, ("float", scalar)
    return None, ("int", scalar)


def compile(src: ASTSource, target=None, options: dict | None = None):
    """The CompiledKernel of `src` for `target` (see the module's text). `options` may set ``num_warps``,
    ``num_stages`` and ``debug``."""
    from .. import runtime
    from ..jit import _remember_owner, show_compile_warnings

    if not isinstance(src, ASTSource):
        raise coded(TypeError, "E0701", f"tegula.compile takes an ASTSource, got {type(src).__name__}")
    fn, names = src.fn, src.fn.signature.names
    signature, constexprs = _by_name(names, src.signature), _by_name(names, src.constexprs)
    attrs = _by_name(names, src.attrs)
    unknown = sorted(set(signature) - set(names)) + sorted(set(constexprs) - set(names))
    if unknown:
        raise coded(TypeError, "E0701", f"kernel '{fn.__name__}' has no parameter named {', '.join(unknown)}")
    kwargs, exact = {}, {}
    for name in names:
        spec = signature.get(name)
        if name in constexprs or spec == "constexpr":
            if name not in constexprs:
                raise coded(TypeError, "E0701", f"kernel '{fn.__name__}': '{name}' is a constexpr in the "
                                                f"signature but constexprs gives it no value")
            kwargs[name] = constexprs[name]
        elif spec is not None:
            kwargs[name], exact[name] = _stand_in(fn.__name__, name, spec)
    options = dict(options or {})
    launch_options = {k: options[k] for k in ("num_warps", "num_stages", "debug") if k in options}
    request, compile_options = fn._request_for(**kwargs, **launch_options)
    specs = request.args
    kinds = {"pointer": _C.ArgSpec.Kind.Pointer, "int": _C.ArgSpec.Kind.Int, "float": _C.ArgSpec.Kind.Float,
             "bool": _C.ArgSpec.Kind.Bool}
    for i, name in enumerate(names):
        if name in exact:
            kind, scalar = exact[name]
            specs[i] = _C.ArgSpec(kinds[kind], scalar, 16 if _divisible(attrs.get(name, [])) else 1)
    request.args = specs
    target = target or runtime.driver.active.get_current_target()
    if getattr(target, "backend", "cpu") == "cuda":
        compile_options.backend = "cuda"
        compile_options.cuda_arch = int(target.arch)
    compiled = _C.compile(request, compile_options)
    show_compile_warnings(compiled, stacklevel=2)
    _remember_owner(compiled, fn, (), {**launch_options, **{n: v for n, v in kwargs.items() if n in constexprs}})
    return compiled
