"""The compiler's request objects hand their containers to Python as copies:
a list read from `request.args` (or `.functions`, an ArgSpec's `.parts`, a
GlobalValue's `.elements`) holds values of its own, so assigning it back and
changing it again never writes into storage the request has freed (it did,
and a later cache key read garbage)."""

import numpy as np

import tegula
import tegula.language as tl
from tegula import _C


@tegula.jit
def scaled(o_ptr, x_ptr, s, pair, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * s + pair[0] + pair[1], mask=m)


def _request():
    x = np.random.default_rng(3).standard_normal(37).astype(np.float32)
    return scaled._request_for(np.empty_like(x), x, 3, (1, 2.5), 37, BLOCK=16)


def test_containers_read_as_copies_and_assign_back():
    request, options = _request()
    key = _C.cache_key(request, options)
    specs = request.args
    specs[2].divisibility = 16
    assert request.args[2].divisibility == 1  # the list is the caller's own
    request.args = specs
    assert request.args[2].divisibility == 16
    for _ in range(50):  # the old storage is gone: changing the list again must not reach it
        specs[2].dtype, specs[2].divisibility = "i64", 1
        request.args = specs
        assert _C.cache_key(request, options) not in (key, "")
    functions = request.functions
    request.functions = functions
    functions[0].source = functions[0].source + "\n"
    assert request.functions[0].source != functions[0].source


def test_nested_parts_and_elements_are_copies_too():
    request, _ = _request()
    specs = request.args
    pair = specs[3]
    assert pair.kind == _C.ArgSpec.Kind.Tuple and len(pair.parts) == 2
    parts = pair.parts
    parts[0].divisibility = 16
    assert pair.parts[0].divisibility != 16
    pair.parts = parts
    assert pair.parts[0].divisibility == 16
    value = _C.GlobalValue(_C.GlobalValue.Kind.Tuple)
    value.elements = [_C.GlobalValue(_C.GlobalValue.Kind.Int, 7)]
    elements = value.elements
    elements[0].int_value = 8
    assert value.elements[0].int_value == 7
