"""Nesting that adds up across inlined @jit functions is a located error
(E0108), not a crash. The parser bounds each function (200 levels of
brackets or blocks, as Python), but the front end inlines every call, so a
helper's expressions and blocks nest inside its caller's: valid Python whose
helpers call one another from deep inside overflowed the native stack
(a segmentation fault), and a long run of `if c: return` lines nested the
IR's regions past what its verifier takes (an internal error, E0999)."""

import importlib.util
import threading

import numpy as np
import pytest

import tegula
from tegula import _C


def load(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text("import tegula\nimport tegula.language as tl\n\n" + text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lower(kernel):
    """Front end, passes and code generation only: the errors here come before the C++ compiler."""
    request, _ = kernel._request_for(np.zeros(4, np.float32))
    request.functions = tegula._globals.collect_sources(kernel)
    _C.generate_source(request, _C.CompileOptions(backend="cpu"))


def call_chain(helpers, depth=95):
    """Each helper calls the next inside `depth` nested calls: depth * helpers levels of expressions."""
    text = ""
    for h in range(helpers):
        inner = f"h{h + 1}(v)" if h + 1 < helpers else "v"
        text += f"@tegula.jit\ndef h{h}(v):\n    return " + "tl.abs(" * depth + inner + ")" * depth + "\n\n"
    return text + "@tegula.jit\ndef kernel(x):\n    tl.store(x, h0(tl.load(x)))\n"


def elif_chain(helpers, branches=190):
    """Each helper's `elif` chain ends in a call to the next: branches * helpers nested blocks."""
    text = ""
    for h in range(helpers):
        text += f"@tegula.jit\ndef h{h}(v):\n    if v < 0:\n        w = 0.0\n"
        text += "".join(f"    elif v < {i}:\n        w = {i}.0\n" for i in range(1, branches))
        text += f"    else:\n        w = {f'h{h + 1}(v)' if h + 1 < helpers else 'v'}\n    return w\n\n"
    return text + "@tegula.jit\ndef kernel(x):\n    tl.store(x, h0(tl.load(x)))\n"


def early_returns(n):
    """n flat `if v > k: return k` lines: the rest of the function after each nests under `if not returned`."""
    text = "@tegula.jit\ndef h(v):\n" + "".join(f"    if v > {n - i}:\n        return {i}.0\n" for i in range(n))
    return text + "    return -1.0\n\n@tegula.jit\ndef kernel(x):\n    tl.store(x, h(tl.load(x)))\n"


def test_nested_calls_across_helpers_stop_before_the_stack_does(tmp_path):
    # 60 helpers x 95 nested calls: a segmentation fault.
    module = load(tmp_path, "call_chain", call_chain(60))
    with pytest.raises(tegula.CompilationError, match="the code nests too deeply here for the compiler's stack") as e:
        lower(module.kernel)
    assert e.value.code == "E0108"
    assert "note: called from `h0`" in str(e.value)


@pytest.mark.parametrize("name,text", [("elif_chain", elif_chain(20)), ("early_returns", early_returns(1200))])
def test_blocks_nested_across_helpers_and_returns_are_bounded(tmp_path, name, text):
    # The elif chains were a segmentation fault, the returns an internal error (E0999) from the IR verifier.
    module = load(tmp_path, name, text)
    with pytest.raises(tegula.CompilationError, match="blocks nest more than 900 deep here, counting those of the "
                                                      "@jit functions that call this one") as e:
        lower(module.kernel)
    assert e.value.code == "E0108"


def test_the_stack_bound_is_measured_on_the_compiling_thread(tmp_path):
    # A thread with a 1 MB stack: a simple kernel compiles there, one of 8 x 95 nested calls (fine on
    # the main thread's 8 MB) is refused instead of overflowing it.
    simple = load(tmp_path, "simple", "@tegula.jit\ndef kernel(x):\n    tl.store(x, tl.load(x) + 1)\n")
    deep = load(tmp_path, "deep_on_thread", call_chain(8))
    result = {}

    def work():
        try:
            lower(simple.kernel)
            result["simple"] = "compiled"
            lower(deep.kernel)
            result["deep"] = "compiled"
        except tegula.CompilationError as e:
            result["deep"] = e.code

    previous = threading.stack_size(1024 * 1024)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert result == {"simple": "compiled", "deep": "E0108"}
    lower(deep.kernel)  # the main thread's stack holds it


def test_nesting_within_the_bounds_compiles_and_computes(tmp_path):
    module = load(tmp_path, "within", elif_chain(3, branches=150) + early_returns(300).replace("def h(", "def r(")
                  .replace("def kernel(x):\n    tl.store(x, h(", "def kernel2(x):\n    tl.store(x, r("))
    x = np.array([500.0], np.float32)
    module.kernel[(1,)](x)
    assert x[0] == 500.0  # past every branch: the last helper returns v
    y = np.array([150.5], np.float32)
    module.kernel2[(1,)](y)
    assert y[0] == 150.0  # the first k with 150.5 > 300 - k
