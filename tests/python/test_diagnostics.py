"""Every class of user error reports file:line:col, the source line with a
caret, and what to do; launch errors are TypeError/ValueError naming the
kernel and the parameter. Nothing here may crash the process."""

import inspect
import os

import numpy as np
import pytest

import tegula
import tegula.language as tl


def where(fn, needle, occurrence=0):
    """(line, col) of `needle` inside the source of the @jit function `fn`."""
    lines, first = inspect.getsourcelines(fn.fn)
    seen = 0
    for i, text in enumerate(lines):
        if text.lstrip().startswith(("@", "def ")):
            continue  # needles are looked up in the body
        col = text.find(needle)
        if col >= 0:
            if seen == occurrence:
                return first + i, col + 1
            seen += 1
    raise AssertionError(f"{needle!r} not in the source of {fn.__name__}")


def compile_error(kernel, *args, **kwargs):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    return str(info.value)


def assert_located(message, kernel, needle, text, code, occurrence=0):
    line, col = where(kernel, needle, occurrence)
    head = f"{os.path.basename(__file__)}:{line}:{col}: error[{code}]: "
    assert head in message.splitlines()[0], message
    assert text in message, message
    assert "^" in message, message


X = np.arange(64, dtype=np.float32)


@tegula.jit
def unknown_name(x_ptr):
    tl.store(x_ptr, undefined_thing + 1)  # noqa: F821


def test_unknown_name():
    msg = compile_error(unknown_name, X)
    assert_located(msg, unknown_name, "undefined_thing", "name `undefined_thing` is not defined", "E0201")


@tegula.jit
def non_constexpr_size(x_ptr, n):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, 1.0)


def test_non_constexpr_tile_size():
    msg = compile_error(non_constexpr_size, X, 64)
    assert_located(msg, non_constexpr_size, "n)", "must be a compile-time constant", "E0601")
    assert "hint:" in msg


@tegula.jit
def non_power_of_two(x_ptr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, 1.0)


def test_non_power_of_two_arange():
    msg = compile_error(non_power_of_two, X)
    assert_located(msg, non_power_of_two, "tl.arange", "power of two, but it is 100", "E0502")
    assert "next_power_of_2" in msg


@tegula.jit
def shape_mismatch(x_ptr):
    a = tl.arange(0, 64)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, a + b)


def test_shape_mismatch():
    msg = compile_error(shape_mismatch, X)
    assert_located(msg, shape_mismatch, "a + b", "cannot be broadcast together", "E0501")


@tegula.jit
def dtype_mismatch(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs * 1.5, 0.0)


def test_dtype_mismatch_pointer_offset():
    msg = compile_error(dtype_mismatch, X, BLOCK=64)
    assert_located(msg, dtype_mismatch, "x_ptr + offs", "pointer offsets must be integers", "E0303")


@tegula.jit
def loop_type_change(x_ptr, n):
    acc = 0
    for i in range(n):
        acc = acc + tl.load(x_ptr + i)
    tl.store(x_ptr, acc)


def test_loop_carried_dtype_change():
    msg = compile_error(loop_type_change, X, 8)
    assert_located(msg, loop_type_change, "for i", "changes type from i32 to f32", "E0308")


@tegula.jit
def unsupported_lambda(x_ptr):
    v = tl.load(x_ptr)
    f = lambda w: w + v  # noqa: E731  (captures a run-time value)
    tl.store(x_ptr, f(1.0))


def test_unsupported_construct():
    msg = compile_error(unsupported_lambda, X)
    line, _ = where(unsupported_lambda, "w + v")
    assert f"{os.path.basename(__file__)}:{line}:" in msg, msg
    assert "lambda can only capture constexpr values" in msg and "E0110" in msg


@tegula.jit
def tile_condition(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    if x > 0:
        tl.store(x_ptr, 1.0)


def test_tile_condition():
    msg = compile_error(tile_condition, X, BLOCK=64)
    assert_located(msg, tile_condition, "x > 0", "must be a scalar", "E0605")
    assert "tl.where" in msg


@tegula.jit
def simple(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


def test_wrong_argument_count():
    with pytest.raises(TypeError) as info:
        simple[(1,)](X, BLOCK=64)
    assert "simple" in str(info.value) and "n" in str(info.value)
    with pytest.raises(TypeError):
        simple[(1,)](X, 64, 3, 4)


def test_non_array_for_pointer():
    with pytest.raises(TypeError) as info:
        simple[(1,)]([1.0, 2.0], 2, BLOCK=64)
    assert "x_ptr" in str(info.value) and "list" in str(info.value)


def test_unsupported_dtype():
    with pytest.raises(TypeError) as info:
        simple[(1,)](np.zeros(4, dtype=np.complex64), 4, BLOCK=64)
    assert "x_ptr" in str(info.value) and "complex64" in str(info.value)


def test_runtime_value_for_constexpr_is_rejected_cleanly():
    with pytest.raises((TypeError, ValueError, tegula.CompilationError)) as info:
        simple[(1,)](X, 64, BLOCK=np.zeros(3))
    assert "BLOCK" in str(info.value)


def test_errors_do_not_poison_later_launches():
    for _ in range(2):
        with pytest.raises(tegula.CompilationError):
            non_power_of_two[(1,)](X)
    out = np.zeros(64, dtype=np.float32)
    simple[(1,)](out, 10, BLOCK=64)
    assert (out[:10] == 1).all() and (out[10:] == 0).all()


def test_a_kernel_in_a_file_whose_path_is_not_utf8_compiles_and_is_located(tmp_path):
    """Linux paths are bytes; Python holds the ones that are not UTF-8 as
    lone surrogates. The kernel launches, and a message names the path with
    the byte escaped."""
    import subprocess
    import sys

    folder = os.path.join(os.fsencode(tmp_path), b"lat\xff")
    os.mkdir(folder)
    with open(os.path.join(folder, b"kern.py"), "w", encoding="utf-8") as f:
        f.write(
            "import numpy as np, tegula, tegula.language as tl\n"
            "@tegula.jit\n"
            "def k(o, n, B: tl.constexpr):\n"
            "    i = tl.arange(0, B)\n"
            "    tl.store(o + i, i * 2, mask=i < n)\n"
            "@tegula.jit\n"
            "def bad(o):\n"
            "    tl.store(o, undefined_name)\n"
            "o = np.zeros(8, np.int32)\n"
            "k[(1,)](o, 5, B=8)\n"
            "print(o.tolist())\n"
            "try:\n"
            "    bad[(1,)](o)\n"
            "except tegula.CompilationError as e:\n"
            "    print(str(e).splitlines()[0])\n")
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "kern.py"], cwd=folder, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = done.stdout.decode().splitlines()
    assert out[0] == "[0, 2, 4, 6, 8, 0, 0, 0]"
    assert out[1].endswith("lat\\xff/kern.py:8:17: error[E0201]: name `undefined_name` is not defined"), out[1]


def test_a_kernel_without_source_says_where_to_define_it():
    namespace = {}
    with pytest.raises(OSError) as info:
        exec("import tegula\n@tegula.jit\ndef made_by_exec(o):\n    pass\n", namespace)
    assert info.value.code == "E0708"
    assert "cannot read the source of kernel 'made_by_exec'" in str(info.value)
    assert "define kernels in a file" in str(info.value)


def test_a_zero_d_tensor_given_for_a_number_is_named_in_the_hint():
    torch = pytest.importorskip("torch")

    @tegula.jit
    def copy_first(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = torch.rand(100)
    with pytest.raises(tegula.CompilationError) as info:
        copy_first[(1,)](x, torch.empty(100), torch.tensor(100), BLOCK=128)
    text = str(info.value)
    assert "operator `<` is not defined for pointers" in text
    assert "(0-d ones included, e.g. torch.tensor(100)): pass a Python number, or `t.item()`" in text


@tegula.jit
def misspelled_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    if CASE == "tl":
        v = tl.lod(x_ptr + offs)
    elif CASE == "tl_far":
        v = tl.frobnicate(x_ptr + offs)
    elif CASE == "tl_extra":
        v = tl.extra.cuda.frobnicate(x_ptr + offs)
    elif CASE == "method":
        v = tl.load(x_ptr + offs).summ()
    elif CASE == "keyword":
        v = tl.load(x_ptr + offs, msk=offs < 4)
    else:
        v = helper_with_params(x_ptr + offs, scael=2.0)
    tl.store(x_ptr + offs, v)


@tegula.jit
def helper_with_params(ptr, scale):
    return tl.load(ptr) * scale


@pytest.mark.parametrize("case, needle, code, text, hint", [
    ("tl", "tl.lod", "E0204", "`tl.lod` is not a name of tegula.language", "did you mean `tl.load`?"),
    ("tl_far", "tl.frobnicate", "E0204", "`tl.frobnicate` is not a name of tegula.language",
     "docs/language.md lists the supported names"),
    # A name under a submodule is named by the whole path it was reached through.
    ("tl_extra", "tl.extra.cuda.frobnicate", "E0204", "`tl.extra.cuda.frobnicate` is not a name of tegula.language",
     "docs/language.md lists the supported names"),
    ("method", "tl.load(x_ptr + offs).summ", "E0203", "a tile of type tile<16xf32> has no attribute `summ`",
     "did you mean `sum`?"),
    ("keyword", "msk=", "E0402", "`load` got an unexpected keyword argument `msk`",
     "did you mean `mask`? `load` takes pointer, mask, other, boundary_check, padding_option, cache_modifier, "
     "eviction_policy, volatile"),
    ("jit", "scael=", "E0402", "`helper_with_params` has no parameter named `scael`",
     "did you mean `scale`? `helper_with_params` takes ptr, scale"),
])
def test_a_misspelled_name_gets_the_closest_name_as_its_hint(case, needle, code, text, hint):
    """A typo names what it may have meant, and an unknown keyword the parameters there are; an unknown
    tl name is not said to be a Triton name Tegula lacks (those keep 'not supported by Tegula yet')."""
    msg = compile_error(misspelled_kernel, X, CASE=case)
    assert_located(msg, misspelled_kernel, needle, text, code)
    assert f"\nhint: {hint}\n" in msg, msg


@tegula.jit
def float_block_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0)


def test_a_float_size_says_to_pass_an_int():
    """`BLOCK=256.0` said only that the size must be an integer constant: the hint says what to pass."""
    msg = compile_error(float_block_kernel, X, BLOCK=256.0)
    assert_located(msg, float_block_kernel, "BLOCK)", "the end of tl.arange must be an integer constant, but it is "
                   "the constant 256.0", "E0601")
    assert "\nhint: pass an int, e.g. `BLOCK=256` rather than `BLOCK=256.0`, and divide sizes with `//`, not `/`\n" \
        in msg, msg
