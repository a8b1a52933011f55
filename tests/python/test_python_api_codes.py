"""Error codes of the mistakes the Python package finds itself (argument
binding, launch options, decorators, autotune configs, dtypes), of the rare
environment errors (a kernel library that cannot be loaded, a kernel needing
more shared memory than the GPU has), and debug mode with pointers made from
integers. tests/python/test_diagnostic_codes.py names these tests as the ones
covering their codes."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "tegula"
# Modules whose errors reach users of kernels: the package's, and the host
# wrappers of the example kernels (examples/*.py, E0713); the benchmark, the
# demo, testing and the Triton-twin tooling report their own command-line
# mistakes uncoded.
USER_FACING = [PACKAGE / name for name in ("jit.py", "autotune.py", "_launch_support.py", "_device.py",
                                           "_saved_arguments.py", "tensor_descriptor.py", "_reinterpret.py",
                                           "language")]
USER_FACING += [path for path in sorted((ROOT / "examples").glob("*.py")) if path.name != "demo.py"]


def _user_facing_files():
    for path in USER_FACING:
        yield from (sorted(path.rglob("*.py")) if path.is_dir() else [path])


def test_user_facing_modules_raise_only_coded_errors():
    codes = set(re.findall(r"^DIAG\((E\d{4}),", (ROOT / "src/support/diagnostic_codes.def").read_text(), re.M))
    uncoded, unknown = [], []
    for path in _user_facing_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            func = node.exc.func
            if isinstance(func, ast.Name) and func.id in {"TypeError", "ValueError"}:
                uncoded.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(func, ast.Name) and func.id == "coded":
                code = node.exc.args[1].value
                if code not in codes:
                    unknown.append(f"{path.relative_to(ROOT)}:{node.lineno} {code}")
    assert uncoded == [], "raise them with tegula._errors.coded and a code of the catalogue"
    assert unknown == []


@tegula.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def raised(kind, call):
    with pytest.raises(kind) as info:
        call()
    return info.value.code, str(info.value)


def test_argument_binding_errors_are_e0701():
    x = np.zeros(8, np.float32)
    assert raised(TypeError, lambda: scale[(1,)](x, x, 8, BLOCK=8)) == (
        "E0701", "error[E0701]: kernel 'scale' is missing 1 required argument: 'factor'")
    assert raised(TypeError, lambda: scale[(1,)](x, x, 8, 2.0, 8, 9)) == (
        "E0701", "error[E0701]: kernel 'scale' takes 5 arguments (x_ptr, out_ptr, n, factor, BLOCK) but 6 were given")
    assert raised(TypeError, lambda: scale[(1,)](x, x, 8, 2.0, BLOCKS=8)) == (
        "E0701", "error[E0701]: kernel 'scale' got an unexpected keyword argument 'BLOCKS'; did you mean 'BLOCK'?")
    assert raised(TypeError, lambda: scale[(1,)](x, x, 8, 2.0, 8, n=8)) == (
        "E0701", "error[E0701]: kernel 'scale' got multiple values for argument 'n'")


def test_argument_kinds_and_ranges():
    x = np.zeros(8, np.float32)
    code, text = raised(TypeError, lambda: scale[(1,)](x, "out", 8, 2.0, BLOCK=8))
    assert code == "E0702" and text.startswith(
        "error[E0702]: argument 'out_ptr' of kernel 'scale' must be an array or a scalar, got str"), text
    code, text = raised(ValueError, lambda: scale[(1,)](x, x, 1 << 70, 2.0, BLOCK=8))
    assert code == "E0703" and text.startswith("error[E0703]: argument 'n' of kernel 'scale' is 1180591620717411303424"), text


def test_grid_and_launch_options():
    x = np.zeros(8, np.float32)
    code, text = raised(ValueError, lambda: scale[(1, 1, 1, 1)](x, x, 8, 2.0, BLOCK=8))
    assert code == "E0704" and text.startswith("error[E0704]: the grid of kernel 'scale' must be a tuple of 1 to 3"), text
    code, text = raised(ValueError, lambda: scale[(-1,)](x, x, 8, 2.0, BLOCK=8))
    assert code == "E0704" and "must hold ints >= 0" in text, text
    assert raised(ValueError, lambda: scale[(1,)](x, x, 8, 2.0, BLOCK=8, num_warps=0)) == (
        "E0705", "error[E0705]: num_warps of kernel 'scale' must be a positive int, got 0")


def test_decorator_misuse_is_e0708():
    assert raised(TypeError, lambda: tegula.jit(len)) == (
        "E0708", "error[E0708]: @tegula.jit decorates a Python function, got builtin_function_or_method")
    code, text = raised(TypeError, lambda: tegula.jit(tegula.autotune(configs=[tegula.Config({"BLOCK": 8})],
                                                                      key=["n"])(scale)))
    assert code == "E0708", text
    code, text = raised(TypeError, lambda: tegula.jit(lambda o: tl.store(o, 1.0)))
    assert code == "E0708" and text.startswith("error[E0708]: a lambda cannot be a kernel"), text
    code, text = raised(TypeError, lambda: tegula.compiler.ASTSource(scale, "*fp32, i32"))
    assert code == "E0701" and "ASTSource's signature maps parameters to values" in text, text


def test_autotune_configs_are_e0710():
    assert raised(TypeError, lambda: tegula.Config(["BLOCK", 8])) == (
        "E0710", "error[E0710]: Config takes a dict of meta-parameter names to values, got ['BLOCK', 8]")
    tuned = tegula.autotune(configs=[tegula.Config({"BLOCK": 8}), tegula.Config({"BLOCK": 16})], key=["n"],
                            reset_to_zero=["size"])(scale)
    x = np.zeros(8, np.float32)
    code, text = raised(ValueError, lambda: tuned[(1,)](x, x, 8, 2.0))
    assert code == "E0710" and "'size'" in text, text


def test_host_dtype_mistakes_keep_the_compiler_codes():
    code, text = raised(ValueError, lambda: tl.dtype("float99"))
    assert code == "E0207" and text.startswith("error[E0207]: unknown dtype 'float99'; known: "), text
    assert raised(TypeError, lambda: tl.pointer_type(3)) == (
        "E0304", "error[E0304]: pointer_type needs a tl.dtype, got int")


def test_errors_keep_their_builtin_types_for_old_handlers():
    try:
        scale(np.zeros(1, np.float32))
    except TypeError as e:  # what code written before the codes catches
        assert e.code == "E0707"
    else:
        raise AssertionError("no error")


# --- rare environment errors ----------------------------------------------------------


def test_too_much_shared_memory_for_the_arch(tmp_path):
    """E0803 at compile time, no GPU needed: the code generator knows each
    architecture's shared memory per block."""
    kernel = tmp_path / "mm.py"
    kernel.write_text(
        "import tegula\nimport tegula.language as tl\n\n\n@tegula.jit\n"
        "def mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
        "    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
        "    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b))\n")
    done = subprocess.run([str(cli.executable()), "compile", f"{kernel}::mm", "--backend", "cuda", "--arch", "80",
                           "--num-warps", "8", "-s", "*fp32, *fp32, *fp32, 256", "--emit", "layouts"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done
    assert done.stderr.splitlines()[:2] == [
        "error[E0803]: kernel @mm needs 524288 bytes of shared memory, more than sm_80 has (166912)",
        "hint: use smaller blocks"], done.stderr


def test_a_library_that_cannot_be_loaded(tmp_path):
    """E0903: a C++ compiler whose output is not a loadable library (what a
    noexec cache directory or a broken toolchain gives): the loader's error and
    the hint, not a crash."""
    fake = tmp_path / "bin" / "c++"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprev=""\nfor a in "$@"; do\n  case "$a" in\n'
                    '    --version) echo "fake c++ 1.0"; exit 0;;\n'
                    '    -print-file-name=*) echo "${a#-print-file-name=}"; exit 0;;\n  esac\n'
                    '  [ "$prev" = "-o" ] && echo "not a shared library" > "$a"\n  prev="$a"\ndone\nexit 0\n')
    fake.chmod(0o755)
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np\nimport tegula\nimport tegula.language as tl\n\n\n@tegula.jit\n"
        "def k(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n\n"
        "try:\n    k[(1,)](np.zeros(1, np.float32))\nexcept tegula.CompilationError as e:\n"
        "    print(e.code)\n    print(str(e))\n")
    env = dict(os.environ, CXX=str(fake), TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    lines = done.stdout.splitlines()
    assert lines and lines[0] == "E0903", done
    assert lines[1].startswith("error[E0903]: cannot load the compiled kernel: "), done.stdout
    assert "noexec" in done.stdout and "TEGULA_CACHE_DIR" in done.stdout, done.stdout


# --- debug mode: pointers made from integers -----------------------------------------


@tegula.jit(debug=True)
def gather_rows(table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Row r of out is 2 * the array whose address is table[r]."""
    row = tl.program_id(0)
    src = tl.load(table_ptr + row).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + row * n + offs, tl.load(src + offs, mask=mask) * 2.0, mask=mask)


def _address_table(arrays, dtype):
    return np.array([a.ctypes.data for a in arrays], dtype)


@pytest.mark.parametrize("table_dtype", [np.int64, np.uint64])
def test_pointers_from_an_address_table_run_unchecked_in_debug_mode(table_dtype):
    """The arrays behind the table are not arguments: their accesses cannot be
    checked, and must not be reported against `out_ptr` (issue #8)."""
    rng = np.random.default_rng(8)
    n = 37
    rows = [rng.standard_normal(n).astype(np.float32) for _ in range(5)]
    out = np.zeros(5 * n, np.float32)
    gather_rows[(5,)](_address_table(rows, table_dtype), out, n, BLOCK=64)
    np.testing.assert_array_equal(out.reshape(5, n), 2 * np.stack(rows))


def test_the_kernels_own_arrays_are_still_checked_beside_them():
    rng = np.random.default_rng(9)
    n = 37
    rows = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    out = np.zeros(3 * n - 1, np.float32)  # one element short: the last row's store overruns
    with pytest.raises(tegula.DeviceError) as info:
        gather_rows[(3,)](_address_table(rows, np.int64), out, n, BLOCK=64)
    e = info.value
    assert (e.code, e.kind, e.arg, e.program_id, e.offset, e.size) == ("E0907", "store", "out_ptr", (2, 0, 0),
                                                                      3 * n - 1, 3 * n - 1)
