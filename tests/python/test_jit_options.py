"""Every keyword Triton's `jit` takes: `repr` names the compiled kernel from
its specialization, `do_not_specialize_on_alignment` keeps pointers and ints
from specializing on 16-byte alignment (their value 1 still does), and
`noinline`, `launch_metadata`, `version` and `debug` are accepted (the first
three change nothing: docs/triton-compat.md says why).

Results are compared with NumPy on random data; the kernels are compiled by
the CUDA backend too (NVRTC, no GPU needed) where NVRTC loads.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C

from cuda_compile_util import require_nvrtc
from ops_util import check, grid1, rng_for


def _name_of(specialization):
    ty = specialization.signature["value1"]
    cst = "_".join(k for k, v in specialization.constants.items() if isinstance(k, str) and v == 1)
    return f"kernel_{ty}_{cst}"


@tegula.jit(repr=_name_of)
def named_kernel(value1, is_one, X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(X + offs, x * is_one + value1)


@tegula.jit(noinline=True, launch_metadata=lambda grid, metadata, args: {"name": "scaled"}, version=2)
def scaled(x, factor):
    return x * factor + 1


@tegula.jit(debug=False, do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr", 3])
def unaligned_kernel(x_ptr, y_ptr, n, m, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, scaled(x, m), mask=mask)


@tegula.jit(repr=lambda specialization: "not an identifier!")
def badly_named_kernel(X):
    tl.store(X, 1.0)


@pytest.mark.parametrize("value, value_type", [(-1, "i32"), (0, "i32"), (-2**31, "i32"), (2**31 - 1, "i32"),
                                               (2**31, "i64"), (2**32, "i64"), (2**63 - 1, "i64"),
                                               (-2**63, "i64"), (2**63, "u64"), (2**64 - 1, "u64")])
def test_repr_names_the_compiled_kernel_from_its_specialization(value, value_type):
    x = np.zeros(16, np.float32)
    compiled = named_kernel.warmup(value, 1, x, BLOCK=16, grid=(1,))
    assert compiled.name == f"kernel_{value_type}_is_one"


def test_a_renamed_kernel_runs(backend):
    x = rng_for("renamed").normal(0, 1, 32).astype(np.float32)
    y = backend.array(x.copy())
    named_kernel[(1,)](7, 3, y, BLOCK=32)
    check(backend.numpy(y), x.astype(np.float64) * 3 + 7, "float32")


def test_repr_must_return_an_identifier():
    with pytest.raises(ValueError, match=r"E0708.*must return an identifier"):
        badly_named_kernel[(1,)](np.zeros(1, np.float32))


def test_alignment_does_not_specialize_what_the_option_lists(backend):
    n, block = 200, 64
    base = rng_for("unaligned").normal(0, 1, n + 1).astype(np.float32)
    y = backend.zeros(n, np.float32)
    aligned = unaligned_kernel.inspect(base[:n], base[:n], 64, 32, BLOCK=block)
    divisibility = {name: div for name, _, div in aligned.params}
    assert divisibility["x_ptr"] == 1 and divisibility["m"] == 1  # listed: aligned, yet not specialized on it
    assert divisibility["y_ptr"] == 16
    assert divisibility["n"] == 1  # do_not_specialize: nothing at all
    x = backend.array(base)
    for view, m in ((x[1:], 3), (x[:n], 32)):
        unaligned_kernel[grid1(n, block)](view, y, n, m, BLOCK=block)
        src = base[1:] if m == 3 else base[:n]
        check(backend.numpy(y), src.astype(np.float64) * m + 1, "float32", atol=1e-6)


def test_the_value_one_still_specializes_without_alignment():
    x = np.zeros(64, np.float32)
    for m, is_one in ((1, True), (32, False)):
        request, _ = unaligned_kernel._request_for(x, x, 64, m, BLOCK=64)
        spec = request.args[3]
        assert (spec.is_one, spec.divisibility) == (is_one, 1)


@pytest.mark.parametrize("arch", [90, 80])
def test_jit_options_compile_for_cuda(tmp_path, arch):
    require_nvrtc(arch)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch, cache_dir=str(tmp_path), keep_stages=True)
    x = np.zeros(256, np.float32)
    request, _ = named_kernel._request_for(2**31, 1, x, BLOCK=16)
    compiled = _C.compile(request, options)
    assert compiled.name == "kernel_i64_is_one" and "kernel_i64_is_one" in compiled.source
    request, _ = unaligned_kernel._request_for(x[1:], x, 200, 32, BLOCK=64)
    _C.compile(request, options)


def _with_annotations(**types):
    # A host decorator that runs on the function before @jit sees it (Triton's test_annotations has one).
    # A pointer annotation ("*fp32") declares no scalar type (test_param_annotations.py has those).
    def decorate(fn):
        fn.__annotations__ = dict(types)
        return fn
    return decorate


SUFFIX = "32"


@tegula.jit
@_with_annotations(x_ptr=f"*fp{SUFFIX}", meta={"a": lambda v: v})
def decorated_below_jit_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


@tegula.jit
@_with_annotations(
    x_ptr=f"*fp{SUFFIX}",
)
def error_below_decorators_kernel(x_ptr):
    tl.store(x_ptr, undefined_name)  # noqa: F821


def test_decorators_between_jit_and_def_are_host_code(backend):
    # Their f-strings, dicts and lambdas are not kernel syntax; the compiler never reads them.
    x = np.random.default_rng(2).standard_normal(50).astype(np.float32)
    out = backend.zeros((50,), np.float32)
    decorated_below_jit_kernel[(1,)](backend.array(x), out, 50, BLOCK=64)
    np.testing.assert_array_equal(backend.numpy(out), x * 3)


def test_lines_below_blanked_decorators_keep_their_numbers():
    import inspect

    line = inspect.getsourcelines(error_below_decorators_kernel.fn)[1] + 5  # the tl.store line
    with pytest.raises(tegula.CompilationError, match=rf"test_jit_options.py:{line}:\d+: error"):
        error_below_decorators_kernel[(1,)](np.zeros(4, np.float32))


JIT_OPTIONS = {"do_not_specialize": ["n"], "debug": False}


@tegula.jit(**JIT_OPTIONS)
def options_unpacked_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def test_decorator_with_unpacked_options():
    # `@jit(**options)` is host code: the front end keeps the decorator unparsed (kernel expressions refuse
    # `**`), and the options apply.
    assert tuple(options_unpacked_kernel.do_not_specialize) == ("n",)
    x = np.random.default_rng(3).standard_normal(300).astype(np.float32)
    y = np.zeros_like(x)
    options_unpacked_kernel[(tegula.cdiv(300, 128),)](x, y, 300, BLOCK=128)
    np.testing.assert_array_equal(y, x * np.float32(3))
