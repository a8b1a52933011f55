"""The scalar type a kernel parameter's annotation declares, read as Triton reads it.

Triton types a runtime scalar parameter by its annotation: ``stride: tl.int64``
makes the kernel compute with a 64-bit ``stride`` whatever value a launch
passes, ``u: tl.uint8`` takes 300 as 44, ``f: tl.float16`` rounds 2.7 to
2.69921875. An annotation counts as Python holds it (``inspect.signature``),
so one a decorator sets on ``__annotations__`` counts too, as in Triton:

- a dtype object: ``tl.int64``, ``triton.language.uint8``, ``tl.float16``;
- a string (every annotation is one under ``from __future__ import
  annotations``): ``"tl.int64"``, or Triton's short names ``"i64"``, ``"u8"``,
  ``"fp16"``, ``"bf16"``, ``"fp32"``, ``"i1"``, ``"u1"``..., or a dtype's name
  ``"int64"``, ``"float16"``;
- the Python types ``int``, ``float`` and ``bool``, which Triton reads as
  ``i32``, ``fp32`` and ``u1`` (so does Tegula).

Anything else declares nothing, without an error: pointer annotations
(``"*fp32"``, ``tl.pointer_type(...)``, ``torch.Tensor``), ``tl.constexpr``,
``tl.const``, ``tl.tensor`` and annotations Tegula does not know. The
launcher (``src/bindings/launch_arguments.h``, ``DeclaredType``) converts the
arguments of a declared parameter to its type.
"""

from __future__ import annotations

# Triton's spellings of the scalar types (its type_canonicalisation_dict, and its canonical names
# themselves) -> the tile IR's scalar names, which the launcher takes.
_TRITON_NAMES = {
    "u1": "i1", "i1": "i1", "bool": "i1", "int1": "i1", "uint1": "i1",
    "i8": "i8", "int8": "i8", "i16": "i16", "int16": "i16", "i32": "i32", "int": "i32", "int32": "i32",
    "i64": "i64", "int64": "i64",
    "u8": "u8", "uint8": "u8", "u16": "u16", "uint16": "u16", "u32": "u32", "uint32": "u32",
    "u64": "u64", "uint64": "u64",
    "fp16": "f16", "float16": "f16", "half": "f16", "bf16": "bf16", "bfloat16": "bf16",
    "fp32": "f32", "float32": "f32", "float": "f32", "fp64": "f64", "float64": "f64", "double": "f64",
    "fp8e4nv": "f8e4m3", "float8e4nv": "f8e4m3", "float8_e4m3fn": "f8e4m3",
    "fp8e5": "f8e5m2", "float8e5": "f8e5m2", "float8_e5m2": "f8e5m2",
    "fp8e4b15": "f8e4b15", "float8e4b15": "f8e4b15",
    "fp8e4b8": "f8e4b8", "float8e4b8": "f8e4b8", "float8_e4m3fnuz": "f8e4b8",
    "fp8e5b16": "f8e5b16", "float8e5b16": "f8e5b16", "float8_e5m2fnuz": "f8e5b16",
}


def _name_of(annotation) -> str | None:
    """The annotation as a type name to look up, or None for a pointer (which declares no scalar)."""
    from .language import core

    if isinstance(annotation, str):
        text = annotation.strip()
        if text.startswith(("*", "const ")) or text.endswith("*"):
            return None
        return text.removeprefix("tl.")
    if isinstance(annotation, core.pointer_type) or type(annotation).__name__ == "pointer_type":
        return None
    if isinstance(annotation, type):  # int, float, bool; torch.Tensor and the like are no type name
        return annotation.__name__
    if isinstance(annotation, core.dtype) or type(annotation).__name__ == "dtype":  # Tegula's, or Triton's
        return str(annotation.name)
    return str(annotation)


def declared_scalar(annotation) -> str | None:
    """The IR scalar type (``"i64"``) `annotation` declares for a runtime parameter, or None."""
    if annotation is None:
        return None
    try:
        name = _name_of(annotation)
    except Exception:  # an annotation object that cannot say what it is declares nothing
        return None
    if name is None:
        return None
    # Triton drops a C "_t" ("int64_t" is int64).
    return _TRITON_NAMES.get(name.replace("_t", ""))


# Triton's canonical spellings, the ones ``KernelParam.annotation`` reports: a name in _TRITON_NAMES
# maps to the canonical name of its IR type (bools are "u1" in Triton's spelling).
_CANONICAL = {
    "i1": "u1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
    "u8": "u8", "u16": "u16", "u32": "u32", "u64": "u64",
    "f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64",
    "f8e4m3": "fp8e4nv", "f8e5m2": "fp8e5", "f8e4b15": "fp8e4b15", "f8e4b8": "fp8e4b8", "f8e5b16": "fp8e5b16",
}
_CANONICAL_NAMES = frozenset(_CANONICAL.values()) | {"void"}


def _canonical(name: str) -> str:
    name = name.replace("_t", "")
    if name in _CANONICAL_NAMES:
        return name
    ir = _TRITON_NAMES.get(name)
    return _CANONICAL[ir] if ir else name


def annotation_text(annotation) -> str:
    """The annotation as Triton's ``KernelParam.annotation`` spells it: "" for none, "i64" for
    ``tl.int64`` or ``"int64"``, "*fp16" for a pointer to float16, "*kfp16" for ``"const *fp16"``,
    "constexpr" for ``tl.constexpr``; a name it does not know stays as written."""
    from .language import core

    if annotation is None or annotation == "":
        return ""
    if isinstance(annotation, str):
        text = annotation.strip()
        if text.startswith("const "):
            inner = annotation_text(text.removeprefix("const").strip())
            return "*k" + inner[1:] if inner.startswith("*") else inner
        if text.endswith("*"):
            return "*" + annotation_text(text[:-1])
        if text.startswith("*"):
            return "*" + annotation_text(text[1:])
        return _canonical(text.removeprefix("tl."))
    if isinstance(annotation, core.pointer_type) or type(annotation).__name__ == "pointer_type":
        return "*" + annotation_text(annotation.element_ty)
    if isinstance(annotation, core.dtype) or type(annotation).__name__ == "dtype":
        return _canonical(str(annotation.name))
    if isinstance(annotation, type):
        return _canonical(annotation.__name__)
    return _canonical(str(annotation))


def annotation_type_text(text: str) -> str:
    """Triton's ``KernelParam.annotation_type``: `text` (an annotation_text) when it names a scalar
    type or a pointer to one, else ""."""
    element = text[2:] if text.startswith("*k") else text[1:] if text.startswith("*") else text
    return text if element in _CANONICAL_NAMES else ""
