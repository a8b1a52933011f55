"""tegula.compile(tegula.compiler.ASTSource(fn, signature, constexprs)): Triton's compile of a kernel for a
signature, without arguments (python/tegula/compiler.py). The signature's types reach the generated code
exactly (fp16 pointers, 64-bit and unsigned integers), the CompiledKernel launches through compiled[grid], and
bad signatures are errors that name the parameter."""

from __future__ import annotations

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula.runtime.driver import GPUTarget

CPU = GPUTarget("cpu", "x86_64", 1)  # the CPU backend's code is what these read, on any machine


@tegula.jit
def scale_kernel(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, (x * factor).to(y_ptr.dtype.element_ty), mask=offs < n)


@tegula.jit
def undefined_name_kernel():
    a += 1  # noqa: F821


def _program(compiled) -> str:
    source = compiled.asm.get("cpp") or compiled.asm.get("cuda") or ""
    return next(line for line in source.splitlines() if "tegula_program(" in line or "tegula_kernel(" in line)


def test_signature_types_reach_the_code_and_the_kernel_runs():
    src = tegula.compiler.ASTSource(scale_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp32", "n": "i64", "factor": "fp32",
                                                  "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
    compiled = tegula.compile(src, target=CPU)
    header = _program(compiled)
    assert "uint16_t* v0" in header and "float* v1" in header and "int64_t v2" in header, header
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1000).astype(np.float16)
    y = np.zeros(1000, np.float32)
    compiled[(tegula.cdiv(1000, 128),)](x, y, 1000, 2.5, 128)
    np.testing.assert_array_equal(y, x.astype(np.float32) * np.float32(2.5))


def test_constexprs_and_attrs_by_index_as_triton_keys_them():
    # Triton keys constexprs and attrs by (index,) paths; "u32" is unsigned in the code.
    src = tegula.compiler.ASTSource(scale_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "u32", "factor": "fp32",
                                                  "BLOCK": "constexpr"}, constexprs={(4,): 64},
                                    attrs={(0,): [["tt.divisibility", 16]]})
    compiled = tegula.compile(src, target=CPU)
    assert "uint32_t v2" in _program(compiled)
    assert "BLOCK" not in _program(compiled)


def test_a_refused_kernel_raises_compilation_error_with_its_place():
    with pytest.raises(tegula.CompilationError) as e:
        tegula.compile(tegula.compiler.ASTSource(undefined_name_kernel, signature={}, constexprs={}))
    assert "name `a` is not defined" in str(e.value) and "test_compile_api.py" in str(e.value)


@pytest.mark.parametrize("signature, constexprs, message", [
    ({"x_ptr": "*fp99"}, {}, "'*fp99' for 'x_ptr' points to no dtype"),
    ({"n": "int"}, {}, "'int' for 'n' is not a type"),
    ({"n": 32}, {}, "parameter 'n' must be a string"),
    ({"BLOCK": "constexpr"}, {}, "'BLOCK' is a constexpr in the signature but constexprs gives it no value"),
    ({"m": "i32"}, {}, "has no parameter named m"),
])
def test_bad_signatures_name_the_parameter(signature, constexprs, message):
    with pytest.raises(TypeError, match="E0701") as e:
        tegula.compile(tegula.compiler.ASTSource(scale_kernel, signature, constexprs))
    assert message in str(e.value)


def test_only_jit_functions_and_ast_sources():
    with pytest.raises(TypeError, match="ASTSource takes a @jit function"):
        tegula.compiler.ASTSource(lambda: None, {})
    with pytest.raises(TypeError, match="tegula.compile takes an ASTSource"):
        tegula.compile(scale_kernel)


def test_cuda_target_compiles_cuda_without_a_gpu():
    from tegula import _C
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")
    src = tegula.compiler.ASTSource(scale_kernel, {"x_ptr": "*bf16", "y_ptr": "*fp32", "n": "i32", "factor": "fp32",
                                                  "BLOCK": "constexpr"}, constexprs={"BLOCK": 256})
    compiled = tegula.compile(src, target=GPUTarget("cuda", 90, 32))
    assert "cuda" in compiled.asm and "ptx" in compiled.asm
    assert "tg_bf16" in _program(compiled)
