"""Host-side names of Triton's that kernels' test suites and libraries call:
`JITFunction._unsafe_update_src` (a kernel patched from a template),
`tl.str_to_ty` (a dtype from a signature's type string) and
`set_allocator` (the hook for launch-time memory, which no Tegula kernel
needs, so it is kept and never called), `CompiledKernel.hash`. Results
against NumPy on random data with masked tails, on the backend under test."""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula._allocation import NullAllocator, get_allocator


@tegula.jit
def template(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, GENERATE_TEST_HERE, mask=mask)  # noqa: F821 - replaced before it compiles


@tegula.jit
def twice_plus(a, b):  # named only by a patched source
    return 2 * a + b


def patched(expression):
    kernel = tegula.JITFunction(template.fn)
    kernel._unsafe_update_src(kernel.src.replace("GENERATE_TEST_HERE", expression))
    return kernel


@pytest.mark.parametrize("expression, reference", [
    ("x * 3.0 + 1.0", lambda x: x * 3 + 1),
    ("tl.abs(x) - x", lambda x: np.abs(x) - x),
    ("twice_plus(x, 1.5)", lambda x: 2 * x + 1.5),  # a global the original text never named
    ("tl.cumsum(x, axis=0) if BLOCK > 0 else x", None),
])
def test_a_patched_template_runs_its_new_source(backend, expression, reference):
    n = 1000  # not a multiple of the block: a masked tail
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    xd, yd = backend.array(x), backend.array(y)
    patched(expression)[(tegula.cdiv(n, 256),)](xd, yd, n, BLOCK=256)
    backend.synchronize()
    if reference is None:  # a scan over each block of 256, the tail masked (other=0)
        padded = np.concatenate([x, np.zeros(-n % 256, np.float32)]).reshape(-1, 256)
        expected = np.cumsum(padded, axis=1, dtype=np.float64).reshape(-1)[:n]
    else:
        expected = reference(x)
    np.testing.assert_allclose(backend.numpy(yd), expected, rtol=1e-5, atol=1e-4)


def test_updating_the_source_forgets_the_old_specializations(backend):
    n = 77
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    xd, yd = backend.array(x), backend.array(np.zeros_like(x))
    kernel = patched("x + 1.0")
    kernel[(1,)](xd, yd, n, BLOCK=128)
    backend.synchronize()
    np.testing.assert_allclose(backend.numpy(yd), x + 1, rtol=1e-6)
    kernel._unsafe_update_src(kernel.src.replace("x + 1.0", "x * x"))
    kernel[(1,)](xd, yd, n, BLOCK=128)
    backend.synchronize()
    np.testing.assert_allclose(backend.numpy(yd), x * x, rtol=1e-6)
    with pytest.raises(TypeError, match="new source as a str"):
        kernel._unsafe_update_src(None)


def nested_template():
    @tegula.jit
    def kernel(x_ptr, y_ptr, n, flip, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        CHOOSE
        tl.store(y_ptr + offs, out, mask=mask)  # noqa: F821 - `out` is defined by the patch

    return kernel


def test_src_is_dedented_as_triton_has_it(backend):
    # Triton's tests patch a nested kernel with blocks written for its dedented text (`def` at column 0, the
    # body at 4 spaces): an `if` replacing CHOOSE must land in the body, not after the function.
    kernel = tegula.JITFunction(nested_template().fn)
    assert kernel.src.startswith("def kernel(") and "\n    CHOOSE\n" in kernel.src
    kernel._unsafe_update_src(kernel.src.replace("CHOOSE", """
    if flip:
        out = -x
    else:
        out = x * 2.0
"""))
    n = 100
    x = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    for flip, expected in ((1, -x), (0, x * 2)):
        xd, yd = backend.array(x), backend.array(np.zeros_like(x))
        kernel[(1,)](xd, yd, n, flip, BLOCK=128)
        backend.synchronize()
        np.testing.assert_array_equal(backend.numpy(yd), expected)


def test_a_patched_nested_kernel_reports_the_files_columns():
    # The replacement is put back at the original indentation, so a diagnostic still points at the file's
    # columns (the name sits at column 19 of the patched line, 8 spaces in).
    kernel = tegula.JITFunction(nested_template().fn)
    kernel._unsafe_update_src(kernel.src.replace("CHOOSE", "out = x + undefined_name"))  # noqa: F821
    x = np.zeros(8, np.float32)
    with pytest.raises(tegula.CompilationError, match=r":\d+:19: error\[E\d+\].*undefined_name"):
        kernel[(1,)](x, np.zeros_like(x), 8, 0, BLOCK=8)


@pytest.mark.parametrize("text, expected", [
    ("fp32", tl.float32), ("bf16", tl.bfloat16), ("fp16", tl.float16), ("fp64", tl.float64),
    ("i1", tl.int1), ("u1", tl.int1), ("i8", tl.int8), ("i32", tl.int32), ("i64", tl.int64),
    ("u8", tl.uint8), ("u64", tl.uint64), ("fp8e4nv", tl.float8e4nv), ("fp8e5", tl.float8e5),
    ("void", tl.void),
])
def test_str_to_ty_reads_triton_type_strings(text, expected):
    assert tl.str_to_ty(text, None) == expected


def test_str_to_ty_reads_pointers_and_refuses_the_unknown():
    pointer = tl.str_to_ty("*fp16", None)
    assert pointer.is_ptr() and pointer.element_ty == tl.float16
    const_pointer = tl.str_to_ty("*ki32", None)
    assert const_pointer.is_ptr() and const_pointer.element_ty == tl.int32 and const_pointer.is_const()
    with pytest.raises(ValueError, match=r"E0207.*unknown type string 'q7'"):
        tl.str_to_ty("q7", None)
    with pytest.raises(TypeError, match="type string"):
        tl.str_to_ty(3, None)


def test_set_allocator_keeps_the_allocator_and_refuses_non_callables():
    calls = []
    before = get_allocator()
    try:
        tegula.set_allocator(lambda size, alignment, stream: calls.append(size))
        assert get_allocator() is not before
        tegula.set_allocator(NullAllocator())
        assert isinstance(get_allocator(), NullAllocator)
        with pytest.raises(RuntimeError, match="tegula.set_allocator"):
            get_allocator()(64, 16, None)
        with pytest.raises(TypeError, match="callable"):
            tegula.set_allocator(42)
    finally:
        tegula.set_allocator(before)
    assert calls == []


@tegula.jit
def _scaled_rows(x_ptr, y_ptr, offs: tl.constexpr, n, scale, BLOCK: tl.constexpr):
    # `offs` annotated constexpr, given a tile: Triton's attention tutorial passes offs_m so.
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


@tegula.jit
def constexpr_hint_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    _scaled_rows(x_ptr, y_ptr, offs, n, 3.0, BLOCK)


def test_helper_constexpr_annotation_takes_runtime_values(backend):
    # A helper's tl.constexpr annotation is a hint, as in Triton: tiles and run-time scalars pass through.
    n = 1000
    x = np.random.default_rng(13).standard_normal(n).astype(np.float32)
    xd, yd = backend.array(x), backend.array(np.zeros_like(x))
    constexpr_hint_kernel[(tegula.cdiv(n, 256),)](xd, yd, n, BLOCK=256)
    backend.synchronize()
    np.testing.assert_array_equal(backend.numpy(yd), x * np.float32(3.0))


def test_triton_host_module_paths_have_their_names():
    """The module paths host code written for Triton imports from hold Tegula's objects."""
    import tegula.backends
    import tegula.backends.compiler
    import tegula.compiler.compiler
    import tegula.runtime.autotuner
    import tegula.runtime.jit

    assert tegula.backends.compiler.GPUTarget is tegula.runtime.GPUTarget and tegula.backends.backends == {}
    assert tegula.compiler.compiler.CompiledKernel is tegula.compiler.CompiledKernel is tegula._C.CompiledKernel
    assert tegula.compiler.compiler.ASTSource is tegula.compiler.ASTSource
    assert tegula.compiler.compiler.compile is tegula.compile
    assert tegula.runtime.autotuner.OutOfResources is tegula.OutOfResources
    assert tegula.runtime.jit.KernelInterface is tegula.KernelInterface


def test_compiled_kernel_hash_is_its_key_and_tells_specializations_apart(backend):
    # Triton's CompiledKernel.hash (libraries compare it to see whether two launches ran one build).
    n = 300
    x = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    xs, ys = backend.array(x), backend.zeros(n, np.float32)
    kernel = patched("x * 3.0 + 1.0")
    small = kernel[(tegula.cdiv(n, 64),)](xs, ys, n, BLOCK=64)
    # The GPU contracts `x * 3.0 + 1.0` into one fma: compare with the exact value, not NumPy's two roundings.
    np.testing.assert_allclose(backend.numpy(ys), x.astype(np.float64) * 3 + 1, rtol=1e-6, atol=1e-7)
    large = kernel[(tegula.cdiv(n, 256),)](xs, ys, n, BLOCK=256)
    again = kernel[(tegula.cdiv(n, 64),)](xs, ys, n, BLOCK=64)
    assert isinstance(small.hash, str) and small.hash == small.key
    assert small.hash == again.hash and small.hash != large.hash
