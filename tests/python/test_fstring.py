"""f-strings in kernels (docs/language.md): built at compile time from
compile-time values, each field formatted as Python formats it, and usable
wherever a kernel takes a string (tl.static_print, tl.static_assert's
message, tl.device_print's prefix). A field that holds a run-time value is
E0601, a spec that does not fit its value E0611, a malformed f-string E0109
(E0101 unterminated), each located at the field.

tl.static_print prints while the kernel compiles, so this module compiles
into a kernel cache of its own (a kernel the session's cache already holds
would print nothing). The expected texts are Python's: the test of
`agreement_kernel` evaluates its f-strings in Python itself, the others were
printed by python3 from the same f-strings and values."""

import ast
import inspect
import pathlib
import re
import textwrap

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cache_util import seed_precompiled_prelude

THIS_FILE = str(pathlib.Path(__file__).resolve())


@pytest.fixture(scope="module", autouse=True)
def fresh_kernel_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TEGULA_CACHE_DIR", str(seed_precompiled_prelude(tmp_path_factory.mktemp("fstring") / "cache")))
        yield


def marked_line(fn, marker: str) -> tuple:
    """(line number in this file, text) of the line of `fn`'s source that holds `marker`."""
    lines, first = inspect.getsourcelines(fn)
    [k] = [k for k, text in enumerate(lines) if marker in text]
    return first + k, lines[k].rstrip("\n")


def expect_located(error, code: str, line: int, text: str, col: int, message: str):
    """`error` is `code` at line:col of this file, says `message`, and shows the line with its caret."""
    first = str(error).splitlines()[0]
    assert error.code == code, str(error)
    assert first == f"{THIS_FILE}:{line}:{col}: error[{code}]: {message}", str(error)
    assert f"\n {line} | {text}\n" in str(error), str(error)


# --- what f-strings print ------------------------------------------------------------------------


@tegula.jit
def fstring_kernel(x_ptr, BLOCK: tl.constexpr, NAME: tl.constexpr, SCALE: tl.constexpr, SHAPE: tl.constexpr):
    W = BLOCK // 4
    tl.static_print(f"{BLOCK=}", f"{BLOCK = }", f"{NAME=}", f"{SCALE=:.3f}", f"{ W = !s:>3}")
    tl.static_print(f"{NAME!r} {NAME!s} {NAME!a} [{NAME!r:>10}] [{BLOCK!r:<4}] [{SCALE!s:^7}]")
    tl.static_print(f"[{BLOCK:{W}}] [{BLOCK:>{W}x}] [{SCALE:{W}.{BLOCK // 16}f}] [{NAME:{'*'}^{W + 3}}]")
    tl.static_print(f"{{}} {{BLOCK}} }}{{ {{{BLOCK}}}")
    tl.static_print("a" f"{BLOCK}" 'c' f'{NAME}' "e")
    tl.static_print(rf"\n{BLOCK}\t", Rf'{NAME}\\', fr"\{BLOCK}")
    tl.static_print(f"""three
{BLOCK} "quoted" 'x'""", f'''{NAME}''')
    tl.static_print(f"{x_ptr.dtype.element_ty} {x_ptr.dtype.element_ty!r} {x_ptr.dtype} {tl.float16!r}")
    tl.static_print(f"{SHAPE} {SHAPE!r} {(BLOCK,)} {(BLOCK, NAME, SCALE)} {()} {SHAPE[1]:03}")
    tl.static_print(f"{f'{BLOCK:>5}'!r} {f'<{NAME}>':*^11} {f'{W:{W}}'}")
    tl.static_print(f"{BLOCK * 2 + 1:#x} {BLOCK > 16} {None} {True:>5} {-SCALE:+.1e} {BLOCK / 3}")
    tl.static_assert(BLOCK >= 16, f"BLOCK is {BLOCK}, below {16:#x}, for {NAME!r}")  # ASSERT
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.device_print(f"row {BLOCK // 8}: ", x)
    tl.device_print("row 4: ", x)


def test_fstrings_in_static_print_and_device_print(backend, capfd):
    x = np.array([1.5, -0.25, 3.0, 12.125], np.float32)
    fstring_kernel[(1,)](backend.array(x), BLOCK=32, NAME="héllo", SCALE=0.5, SHAPE=(2, 3))
    backend.synchronize()
    lines = capfd.readouterr().out.splitlines()
    assert lines[:12] == [
        "BLOCK=32 BLOCK = 32 NAME='héllo' SCALE=0.500  W =   8",  # `=` keeps the spaces; repr unless !s or a spec
        "'héllo' héllo 'h\\xe9llo' [   'héllo'] [32  ] [  0.5  ]",
        "[      32] [      20] [    0.50] [***héllo***]",  # fields inside specs
        "{} {BLOCK} }{ {32}",
        "a32chélloe",  # adjacent literals and f-strings are one string
        "\\n32\\t héllo\\\\ \\32",  # raw: backslashes stay
        "three",
        "32 \"quoted\" 'x' héllo",
        "fp32 triton.language.float32 pointer<fp32> triton.language.float16",  # dtypes as Triton prints them
        "(2, 3) (2, 3) (32,) (32, 'héllo', 0.5) () 003",  # tuples show their elements' reprs
        "'   32' **<héllo>**        8",  # f-strings inside fields
        "0x41 True None     1 -5.0e-01 10.666666666666666",
    ]
    # The f-string prefix prints as the same text written out does (docs/debug-mode.md's format).
    device = lines[12:]
    if backend.is_cuda:  # a line per element, in no promised order
        assert sorted(device) == sorted(2 * [f"pid (0, 0, 0) idx ({i}) row 4: {v:f}" for i, v in enumerate(x)])
    else:
        assert device == 2 * ["(0, 0, 0) row 4: [  1.5000,  -0.2500,   3.0000,  12.1250]"]


def test_a_static_assert_message_is_an_fstring(backend):
    line, text = marked_line(fstring_kernel.fn, "# ASSERT")
    with pytest.raises(tegula.CompileTimeAssertionFailure) as info:
        fstring_kernel[(1,)](backend.zeros(4, np.float32), BLOCK=8, NAME="héllo", SCALE=0.5, SHAPE=(2, 3))
    expect_located(info.value, "E0604", line, text, text.index("tl.static_assert") + 1,
                   "static assertion failed: BLOCK is 8, below 0x10, for 'héllo'")


# --- the same f-strings in Python ----------------------------------------------------------------


@tegula.jit
def agreement_kernel(x_ptr, A: tl.constexpr, F: tl.constexpr, S: tl.constexpr, T: tl.constexpr, B: tl.constexpr):
    tl.static_print(
        f"{A}|{A:>8}|{A:<8}|{A:^9}|{A:*^9}|{A:=+10}|{A:+}|{A: }|{A:08}|{A:010,}|{A:_}|{A:,}|{A:c}|{A:d}|{A:n}",
        f"{A:#x}|{A:#X}|{A:#b}|{A:#o}|{A:_b}|{A:x}|{-A:#010x}|{-A:08,}|{A:e}|{A:.2E}|{A:%}|{A:.1%}|{A!r}|{A=}",
        f"{F}|{F:.3f}|{F:.0f}|{F:#.0f}|{F:e}|{F:.2E}|{F:g}|{F:.3}|{F:#.3g}|{F:%}|{F:.1%}|{F:z.1f}|{-F:010.2f}",
        f"{F * 1e15}|{F * 1e16}|{F * 1e-5}|{-0.0}|{F:,.2f}|{F:>12}|{F:<9.4}|{F!r}|{F!s}|{F=:.2f}|{0.1 + 0.2}",
        f"{S}|{S!r}|{S!a}|{S:>8}|{S:<8}|{S:^9}|{S:*^9}|{S:.2}|{S:8.2}|{S:s}|{S!r:>10}|{S=}|{S + '!'}",
        f"{T}|{T!r}|{T!s}|{T!a}|{T[2]!r}|{B}|{B!r}|{not B}|{B:>6}|{B:d}|{B:.1f}|{None}|{None!r}|{[A, S]}|{[A]!r}|{[]}",
        f"{A:{'>'}{A // 1000}}|{S:{'^'}{A // 1000}}|{A:{'x'}}|{f'{A}{S}'!r:>16}|{'lit'!r}|{A:>{A // 1000}}",
        sep="\n")


def test_fstrings_print_what_python_prints(backend, capfd):
    values = dict(A=9731, F=2.675, S="héllo", T=(1, 2.5, "x", True), B=True)
    agreement_kernel[(1,)](backend.zeros(1, np.float32), **values)
    printed = capfd.readouterr().out
    # Python evaluates the very f-strings of the kernel's source, with the same constexprs.
    tree = ast.parse(textwrap.dedent(inspect.getsource(agreement_kernel.fn)))
    [call] = [node for node in ast.walk(tree)
              if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.static_print"]
    expected = [eval(compile(ast.Expression(arg), THIS_FILE, "eval"), {}, dict(values)) for arg in call.args]
    assert len(expected) == 7
    assert printed.splitlines() == expected


@tegula.jit
def spec_field_kernel(x_ptr, B: tl.constexpr, W: tl.constexpr):
    tl.static_print(f"[{B:{W:d}}] [{B:{W:}}] [{B:{'>'}{W:d}}] [{B:{W!r:>2}}]")


def test_a_field_inside_a_spec_may_have_a_spec_of_its_own(backend, capfd):
    """Python formats such a field first, then the outer one with the text (one level deep)."""
    spec_field_kernel[(1,)](backend.zeros(1, np.float32), B=32, W=6)
    B, W = 32, 6
    assert capfd.readouterr().out == f"[{B:{W:d}}] [{B:{W:}}] [{B:{'>'}{W:d}}] [{B:{W!r:>2}}]\n"


# --- errors -------------------------------------------------------------------------------------


@tegula.jit
def field_errors(x_ptr, n, MODE: tl.constexpr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    if MODE == "tile":
        tl.static_print(f"x = {x!r}")  # tile
    elif MODE == "scalar":
        tl.static_assert(B > 0, f"n = {n:>4}")  # scalar
    elif MODE == "precision":
        tl.static_print(f"B = {B:.2d}")  # precision
    elif MODE == "sign":
        tl.static_print(f"{MODE:+}")  # sign
    elif MODE == "tuple":
        tl.static_print(f"{(B, B):>8}")  # tuple
    elif MODE == "dtype":
        tl.device_print(f"{x_ptr.dtype.element_ty:>8}", x)  # dtype
    elif MODE == "nested":
        tl.static_print(f"{B:{MODE}}")  # nested
    elif MODE == "module":
        tl.static_print(f"{tl}")  # module


@pytest.mark.parametrize("mode, where, describe", [
    ("tile", "x!r", "a tile of type tile<4xf32>"),
    ("scalar", "n:>4", "a scalar of type i32"),
])
def test_a_run_time_value_in_a_field_is_e0601(backend, mode, where, describe):
    line, text = marked_line(field_errors.fn, f"# {mode}")
    with pytest.raises(tegula.CompilationError) as info:
        field_errors[(1,)](backend.zeros(4, np.float32), 4, MODE=mode, B=7)
    expect_located(info.value, "E0601", line, text, text.index(where) + 1,
                   f"an f-string in a kernel is built at compile time, but this field is {describe}, whose value is "
                   "known only at run time")
    assert "tl.device_print" in str(info.value)  # the hint says how to print it


def test_a_field_that_is_no_value_at_all_is_e0404(backend):
    line, text = marked_line(field_errors.fn, "# module")
    with pytest.raises(tegula.CompilationError) as info:
        field_errors[(1,)](backend.zeros(4, np.float32), 4, MODE="module", B=7)
    expect_located(info.value, "E0404", line, text, text.index("tl}") + 1,
                   "an f-string field must be a compile-time value (a constexpr, a dtype, a tuple of them), but "
                   "this one is the module `language`")


@pytest.mark.parametrize("mode, field, value, spec, python", [
    ("precision", "{B:.2d}", 7, ".2d", "Precision not allowed in integer format specifier"),
    ("sign", "{MODE:+}", "sign", "+", "Sign not allowed in string format specifier"),
    ("tuple", "{(B, B):>8}", (7, 7), ">8", "unsupported format string passed to tuple.__format__"),
    ("dtype", "{x_ptr.dtype.element_ty:>8}", None, ">8", "unsupported format string passed to dtype.__format__"),
    ("nested", "{B:{MODE}}", 7, "nested", "Invalid format specifier 'nested' for object of type 'int'"),
])
def test_a_spec_that_does_not_fit_its_value_is_e0611(backend, mode, field, value, spec, python):
    if value is not None:  # Python refuses it in the same words
        with pytest.raises((ValueError, TypeError), match=re.escape(python)):
            format(value, spec)
    line, text = marked_line(field_errors.fn, f"# {mode}")
    with pytest.raises(tegula.CompilationError) as info:
        field_errors[(1,)](backend.zeros(4, np.float32), 4, MODE=mode, B=7)
    expect_located(info.value, "E0611", line, text, text.index(field) + 1,
                   f"f-string field cannot be formatted with '{spec}': {python}")


def syntax_probe():
    """A fresh kernel whose f-string the caller replaces (with text Python itself would refuse to import)."""
    @tegula.jit
    def probe(x_ptr, B: tl.constexpr):
        tl.static_print(f"{B}")  # PROBE

    return probe


@pytest.mark.parametrize("fstring, at, code, message", [
    ('f"a {} b"', "{}", "E0109", "f-string: empty expression in a replacement field"),
    ('f"a } b"', "}", "E0109", "f-string: single '}' is not allowed"),
    ('f"{B!z}"', "!z", "E0109", "f-string: invalid conversion character after '!'"),
    ('f"{B B}"', "B}", "E0109", "f-string: expected '}' after the field's expression, found 'B'"),
    ('f"{B" + "x"', 'f"', "E0101", "unterminated f-string"),
])
def test_malformed_fstrings_are_located_syntax_errors(backend, fstring, at, code, message):
    with pytest.raises(SyntaxError):
        compile(fstring, "<f-string>", "eval")  # Python refuses each too
    probe = syntax_probe()
    line, text = marked_line(probe.fn, "# PROBE")
    probe._unsafe_update_src(probe.src.replace('f"{B}"', fstring))
    text = text.replace('f"{B}"', fstring)
    with pytest.raises(tegula.CompilationError) as info:
        probe[(1,)](backend.zeros(1, np.float32), B=7)
    col = text.index(fstring) + fstring.index(at) + 1
    expect_located(info.value, code, line, text, col, message)
