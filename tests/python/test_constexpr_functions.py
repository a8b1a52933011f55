"""Functions passed as constexpr arguments (docs/language.md, "Constexpr
arguments"): a @jit helper, a function of the tile language or of
tl.extra.cuda, as Triton kernels take an activation or a timer. Each function
specializes the kernel of its own; the function is called where the kernel
calls the parameter."""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def relu(x):
    return tl.maximum(x, 0.0)


@tegula.jit
def leaky(x):
    return tl.where(x >= 0, x, 0.01 * x)


@tegula.jit
def twice_then(x, f: tl.constexpr):  # a helper that takes a function too
    return f(2.0 * x)


@tegula.jit
def apply_kernel(X, Y, n, f: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, f(tl.load(X + offs, mask=mask)), mask=mask)


@tegula.jit
def compose_kernel(X, Y, n, fs: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, fs[1](twice_then(x, fs[0])), mask=mask)


def _data(backend, n=1000):
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    return x, backend.array(x), backend.empty(n, np.float32)


@pytest.mark.parametrize("f,reference", [
    (relu, lambda x: np.maximum(x, 0)),
    (leaky, lambda x: np.where(x >= 0, x, np.float32(0.01) * x)),
    (tl.exp, np.exp),
    (tl.math.abs, np.abs),
])
def test_a_function_argument_is_called_by_the_kernel(backend, f, reference):
    x, X, Y = _data(backend)
    apply_kernel[(tegula.cdiv(x.size, 256),)](X, Y, x.size, f, BLOCK=256)
    np.testing.assert_allclose(backend.numpy(Y), reference(x), rtol=1e-6, atol=1e-7)


def test_each_function_is_a_specialization_of_its_own(backend):
    x, X, Y = _data(backend, 300)
    keys = {apply_kernel._launcher.specialization(X, Y, x.size, f, BLOCK=128) for f in (relu, leaky, relu, tl.exp)}
    assert len(keys) == 3
    for f, ref in ((relu, np.maximum(x, 0)), (leaky, np.where(x >= 0, x, np.float32(0.01) * x)), (relu, None)):
        apply_kernel[(3,)](X, Y, x.size, f=f, BLOCK=128)
        if ref is not None:
            np.testing.assert_allclose(backend.numpy(Y), ref, rtol=1e-6)
    np.testing.assert_allclose(backend.numpy(Y), np.maximum(x, 0))


def test_functions_in_a_tuple_and_passed_on_to_a_helper(backend):
    x, X, Y = _data(backend, 777)
    compose_kernel[(4,)](X, Y, x.size, (relu, tl.exp), BLOCK=256)
    np.testing.assert_allclose(backend.numpy(Y), np.exp(np.maximum(2 * x, 0)), rtol=1e-6)


def test_the_compile_request_names_the_function_by_index_not_by_process_state():
    # The reference in the launch key is this process's; the request the
    # compiler (and its disk cache) sees holds the function's source instead.
    x = np.ones(8, np.float32)
    request, _ = apply_kernel._launcher.request(x, x, 8, leaky, BLOCK=8)
    specs = request.args
    from tegula._globals import collect_sources
    functions = collect_sources(apply_kernel, specs)
    f = specs[3].value
    assert f.kind == tegula._C.GlobalValue.Kind.JitFunction and f.text == ""
    assert functions[f.function].name == "leaky"


def test_a_host_function_is_refused_with_what_is_accepted():
    x = np.ones(8, np.float32)
    with pytest.raises(TypeError, match=re.escape(
            "constexpr argument 'f' of kernel 'apply_kernel' must be an int, float, bool, str, None, tl.dtype, "
            "a function of the tile language, a @jit function, a tuple of them or another hashable value the kernel "
            "does not use, got function")):
        apply_kernel[(1,)](x, x, 8, lambda v: v, BLOCK=8)


@tegula.jit
def timer_kernel(Out, clock: tl.constexpr):
    start = clock()
    tl.store(Out, start)
    tl.store(Out + 1, clock())


def test_a_timer_of_tl_extra_cuda_as_an_argument(backend):
    if not backend.is_cuda:
        pytest.skip("tl.extra.cuda's timers read GPU registers (the CUDA backend)")
    out = backend.zeros(2, np.int64)
    compiled = timer_kernel[(1,)](out, tl.extra.cuda.globaltimer)
    got = backend.numpy(out)
    assert got[1] >= got[0] > 0
    assert compiled.asm["ptx"].count("%globaltimer") == 2
