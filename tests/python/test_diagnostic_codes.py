"""Every error code of src/support/diagnostic_codes.def is documented in
docs/diagnostics.md and triggered by a test that checks the code, the line and
column, and the message.

The examples of docs/diagnostics.md are the table of this test: each entry's
```python block is a complete kernel.py and the ```text block after it the first
line of the error it must print. Files Python accepts are run (the error
surfaces at the launch, as it does for users); files that are not valid Python
go through `tegula compile kernel.py --emit ast`, because Python would reject
them before Tegula sees them. Codes without an example are listed in
COVERED_ELSEWHERE with the tests that trigger them."""

import ast
import os
import pathlib
import re
import runpy
import subprocess

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEF_FILE = ROOT / "src" / "support" / "diagnostic_codes.def"
DOC_FILE = ROOT / "docs" / "diagnostics.md"

# Codes whose trigger depends on the machine (driver, cache directory, C++
# compiler), on a launch path only C++ reaches, or on a broken invariant: the
# tests that assert them, each a test of this file, "tests/python/FILE.py
# test_name", or "tests/cpp/FILE.cpp Suite.Test" (Suite.* for a whole suite).
# Every one must exist (test_every_code_is_covered_by_a_test checks it).
COVERED_ELSEWHERE = {
    "E0108": ["tests/cpp/test_lexer.cpp LexerErrors.NestingLimits", "tests/cpp/test_parser_errors.cpp ParserErrors.*"],
    "E0114": ["tests/cpp/test_ir_text.cpp IrParseErrors.LocatedMessages"],
    "E0207": ["test_unknown_dtype_global"],
    "E0701": ["tests/cpp/test_launch.cpp LaunchTest.WrongArgumentCount",
              "tests/python/test_python_api_codes.py test_argument_binding_errors_are_e0701"],
    "E0702": ["tests/cpp/test_launch.cpp LaunchTest.WrongKinds",
              "tests/python/test_python_api_codes.py test_argument_kinds_and_ranges"],
    "E0703": ["tests/cpp/test_launch.cpp LaunchTest.ValuesOutOfRange",
              "tests/python/test_python_api_codes.py test_argument_kinds_and_ranges"],
    "E0704": ["tests/cpp/test_launch.cpp LaunchTest.BadGrids", "test_launch_errors_carry_codes"],
    "E0705": ["tests/cpp/test_compiler.cpp CompilerTest.UnknownBackendIsAValueError",
              "tests/cpp/test_cuda_runtime.cpp CudaCompilerTest.BadNumWarpsAndBackendAreValueErrors"],
    "E0706": ["tests/cpp/test_launch.cpp LaunchTest.UnloadedKernelIsAnErrorNotACrash"],
    "E0802": ["tests/cpp/test_cli.cpp Cli.BackendErrorsCarryTheirCodes"],
    "E0803": ["tests/python/test_python_api_codes.py test_too_much_shared_memory_for_the_arch",
              "tests/cpp/test_cuda_runtime.cpp CudaLaunch.TooMuchSharedMemoryNamesTheKernel"],  # the latter on a GPU
    "E0804": ["tests/cpp/test_rare_diagnostics.cpp BackendNotBuilt.IsAValueErrorCodedE0804"],
    "E0901": ["tests/python/test_cache_safety.py test_a_world_writable_cache_directory_is_refused",
              "tests/cpp/test_disk_cache_safety.cpp CacheDirectory.ALinkIsResolvedAndItsTargetChecked"],
    "E0902": ["tests/cpp/test_rare_diagnostics.cpp DiskCacheTest.AnEntryThatCannotBeWrittenIsE0902"],
    "E0903": ["tests/python/test_python_api_codes.py test_a_library_that_cannot_be_loaded"],
    "E0904": ["test_missing_cxx_compiler"],
    "E0905": ["tests/cpp/test_cuda_runtime.cpp CudaLibraryLoad.*"],
    "E0906": ["tests/cpp/test_cuda_runtime.cpp CudaLaunch.DriverRefusalNamesKernelAndResult",  # on a GPU
              "tests/cpp/test_cuda_runtime.cpp CudaLibraryLoad.ResultsAreNamedEvenWithoutADriver"],
    "E0907": ["test_debug_fault_carries_its_code"],
    "E0908": ["tests/python/test_cache_locks.py test_waiting_on_a_working_builder_says_so_and_times_out"],
    "E0909": ["tests/python/test_memory_fault.py test_a_faulting_launch_is_a_device_error_and_the_next_launches_run"],
    "E0999": ["test_internal_compiler_error", "tests/cpp/test_diagnostic.cpp InternalErrorLocation.*"],
    "E1001": ["tests/cpp/test_cli.cpp Cli.CommandLineMistakesExitWithStatus2", "test_explain_prints_the_entry"],
    "E1002": ["tests/cpp/test_cli.cpp Cli.CommandLineMistakesExitWithStatus2"],
    "E1003": ["tests/cpp/test_cli.cpp Cli.KernelErrorsExitWithStatus1"],
}

# Retired codes: their summary says "reserved, never raised", nothing in the
# compiler or the package raises them, and they keep their number forever.
RESERVED = {"E0801"}


def def_codes():
    return re.findall(r"^DIAG\((E\d{4}), (\w+), \"(.*)\"\)$", DEF_FILE.read_text(), re.M)


def doc_entries():
    """{code: (heading summary, python source or None, expected first line or None)}."""
    text = DOC_FILE.read_text()
    entries = {}
    parts = re.split(r"^## (E\d{4}): (.*)$", text, flags=re.M)
    for i in range(1, len(parts), 3):
        code, summary, body = parts[i], parts[i + 1], parts[i + 2]
        body = re.split(r"^# ", body, flags=re.M)[0]  # up to the next stage heading
        source = re.search(r"```python\n(.*?)```", body, re.S)
        expected = re.search(r"```text\n(.*?)\n```", body, re.S)
        entries[code] = (summary, source and source.group(1), expected and expected.group(1))
    return entries


def run_example(source, directory):
    """(code, first line of the error with the directory stripped) of kernel.py."""
    path = pathlib.Path(directory) / "kernel.py"
    path.write_text(source)
    prefix = f"{directory}{os.sep}"
    try:
        ast.parse(source)
    except SyntaxError:
        done = subprocess.run([str(cli.executable()), "compile", str(path), "--emit", "ast"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done
        first = done.stderr.splitlines()[0].replace(prefix, "")
        found = re.search(r"error\[(E\d{4})\]", first)
        return (found and found.group(1)), first
    try:
        runpy.run_path(str(path), run_name="__main__")
    except Exception as e:  # noqa: BLE001 - any error the example raises is what is checked
        return getattr(e, "code", None), str(e).splitlines()[0].replace(prefix, "")
    raise AssertionError("the example ran without an error")


DOCUMENTED = doc_entries()
EXAMPLES = sorted(code for code, (_, source, _) in DOCUMENTED.items() if source)


def test_doc_lists_exactly_the_codes_of_the_table_with_their_summaries():
    table = {code: summary for code, _, summary in def_codes()}
    assert sorted(DOCUMENTED) == sorted(table)
    for code, (summary, _, _) in DOCUMENTED.items():
        assert summary == table[code], code


def test_codes_are_unique_and_grouped_by_stage():
    rows = def_codes()
    codes = [code for code, _, _ in rows]
    names = [name for _, name, _ in rows]
    assert codes == sorted(set(codes)) and len(set(names)) == len(names)
    assert 60 <= len(codes) <= 120
    assert all(code[1:3] in {"01", "02", "03", "04", "05", "06", "07", "08", "09", "10"} for code in codes)


def named_test_exists(test):
    """Whether a COVERED_ELSEWHERE entry names a test that is really there."""
    if not test.startswith("tests/"):
        return f"def {test}(" in pathlib.Path(__file__).read_text()
    path, name = test.split(" ")
    text = (ROOT / path).read_text()
    if path.endswith(".py"):
        return f"def {name}(" in text
    suite, case = name.split(".")
    case = r"\w+" if case == "*" else case
    return re.search(rf"^TEST(_F|_P)?\({suite}, {case}\)", text, re.M) is not None


def test_every_code_is_covered_by_a_test():
    codes = [code for code, _, _ in def_codes()]
    uncovered = [code for code in codes if code not in EXAMPLES and code not in COVERED_ELSEWHERE
                 and code not in RESERVED]
    assert uncovered == []
    assert not set(COVERED_ELSEWHERE) & RESERVED and not set(EXAMPLES) & RESERVED
    for code in EXAMPLES:
        assert DOCUMENTED[code][2], f"{code}: the example has no ```text block with its error"
    for code, tests in COVERED_ELSEWHERE.items():
        assert code in codes, code
        for test in tests:
            assert named_test_exists(test), f"{code}: no test {test}"


def test_reserved_codes_are_raised_nowhere():
    names = {code: name for code, name, _ in def_codes()}
    summaries = {code: summary for code, _, summary in def_codes()}
    assert {code for code, summary in summaries.items() if summary.startswith("reserved, never raised")} == RESERVED
    sources = [p for p in (ROOT / "src").rglob("*") if p.suffix in {".cpp", ".h", ".inc"}]
    sources += list((ROOT / "python" / "tegula").rglob("*.py"))
    for code in RESERVED:
        for path in sources:
            text = path.read_text()
            assert f"Diag::{names[code]}" not in text, path
            assert f'"{code}"' not in text, path


@pytest.mark.parametrize("code", EXAMPLES)
def test_documented_example_reports_its_code_location_and_message(code, tmp_path):
    _, source, expected = DOCUMENTED[code]
    got_code, first_line = run_example(source, tmp_path)
    assert got_code == code, first_line
    assert first_line == expected


def test_compilation_error_has_code_attribute():
    @tegula.jit
    def bad(x_ptr):
        tl.store(x_ptr, tl.arange(0, 100))

    with pytest.raises(tegula.CompilationError) as info:
        bad[(1,)](np.zeros(4, np.float32))
    assert info.value.code == "E0502"
    assert "error[E0502]: tl.arange range length must be a power of two" in str(info.value)


def test_launch_errors_carry_codes():
    @tegula.jit
    def fill(x_ptr, n):
        tl.store(x_ptr + tl.arange(0, 16), 1.0, mask=tl.arange(0, 16) < n)

    with pytest.raises(ValueError) as info:
        fill[(1 << 31,)](np.zeros(16, np.float32), 16)
    assert info.value.code == "E0704"
    # The whole text: a launch error ends without the newline a rendered diagnostic's lines end with.
    assert str(info.value) == (
        "error[E0704]: grid dimension 0 is 2147483648; each grid dimension must be between 0 and 2^31 - 1")


def test_unknown_dtype_global():
    """A host dtype the compiler cannot name (Python only passes known ones, so
    the request is built by hand)."""
    from tegula import _C

    source = _C.FunctionSource(name="k", filename="kernel.py", source="def k(x_ptr):\n    y = DT\n", first_line=1,
                               globals={"DT": _C.GlobalValue(_C.GlobalValue.Kind.DType, text="float99")})
    pointer = _C.ArgSpec(_C.ArgSpec.Kind.Pointer, "f32", 16, False, _C.GlobalValue())
    with pytest.raises(tegula.CompilationError) as info:
        _C.compile(_C.KernelRequest(functions=[source], args=[pointer]), _C.CompileOptions(backend="cpu"))
    assert info.value.code == "E0207"
    assert "error[E0207]: unsupported dtype `float99`" in str(info.value)


def test_missing_cxx_compiler(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np\nimport tegula\nimport tegula.language as tl\n\n\n@tegula.jit\n"
        "def k(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n\n"
        "try:\n    k[(1,)](np.zeros(1, np.float32))\nexcept tegula.CompilationError as e:\n"
        "    print(e.code)\n    print(str(e).splitlines()[0])\n")
    env = dict(os.environ, PATH=str(tmp_path / "empty"), TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CXX", None)
    done = subprocess.run([os.sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    lines = done.stdout.splitlines()
    if not lines and "prelude" in done.stderr:
        pytest.skip(done.stderr)
    assert lines[:2] == ["E0904", "error[E0904]: no C++ compiler found for the CPU backend "
                                  "(tried $CXX, c++, g++, clang++)"], done
    # A compiler the user named that is not there is not stepped over for another.
    env["CXX"] = "/nonexistent/c++"
    done = subprocess.run([os.sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.splitlines()[:2] == [
        "E0904", "error[E0904]: $CXX names `/nonexistent/c++`, which is no executable file (on PATH or at that "
                 "path)"], done


def _compile_with(compiler, tmp_path) -> subprocess.CompletedProcess:
    """A fresh process compiling a one-store kernel with CXX=compiler; prints the error's code and text."""
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np\nimport tegula\nimport tegula.language as tl\n\n\n@tegula.jit\n"
        "def k(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n\n"
        "try:\n    k[(1,)](np.zeros(1, np.float32))\nexcept tegula.CompilationError as e:\n"
        "    print(e.code)\n    print(str(e))\n")
    env = dict(os.environ, CXX=str(compiler), TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TEGULA_DUMP_DIR", None)
    return subprocess.run([os.sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)


def _fake_compiler(tmp_path, body: str):
    fake = tmp_path / "bin" / "c++"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "fake c++ 1.0"; exit 0; fi\n' + body)
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("body, says", [
    ("echo 'fatal: license expired' >&2\nexit 1\n",
     "failed (exit status 1) without a complaint about the kernel's source:\nfatal: license expired"),
    ("exit 0\n", "exited without writing the kernel's library"),
])
def test_a_broken_cxx_compiler_is_the_environment_not_tegula(tmp_path, body, says):
    """A compiler that fails without naming the generated source, or writes
    nothing, is broken where it runs: E0904 saying so, not an internal error."""
    fake = _fake_compiler(tmp_path, body)
    done = _compile_with(fake, tmp_path)
    lines = done.stdout.splitlines()
    assert lines and lines[0] == "E0904", done
    assert f"error[E0904]: the C++ compiler {fake} {says}" in done.stdout, done.stdout
    assert "internal compiler error" not in done.stdout


def test_internal_compiler_error(tmp_path):
    """A C++ compiler that rejects the generated code is Tegula's bug, not the
    user's: it is reported as an internal compiler error with the dump hint."""
    # It names the source it rejects, as compilers do.
    fake = _fake_compiler(tmp_path, 'for a; do case "$a" in *.cpp) echo "$a:1:1: error: rejected" >&2;; esac; done\n'
                                    "exit 1\n")
    done = _compile_with(fake, tmp_path)
    lines = done.stdout.splitlines()
    assert lines and lines[0] == "E0999", done
    assert lines[1].startswith("error[E0999]: internal compiler error"), done.stdout
    assert "TEGULA_DUMP_DIR" in done.stdout


def test_debug_fault_carries_its_code():
    @tegula.jit(debug=True)
    def overrun(x_ptr):
        offs = tl.arange(0, 32)
        tl.store(x_ptr + offs, 1.0)

    with pytest.raises(tegula.DeviceError) as info:
        overrun[(1,)](np.zeros(16, np.float32))
    assert info.value.code == "E0907"


def test_explain_prints_the_entry():
    done = subprocess.run([str(cli.executable()), "explain", "E0502"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    assert done.stdout.startswith("## E0502: a tile size that is not a power of two\n")
    assert "tegula.next_power_of_2" in done.stdout
    assert "## E0503" not in done.stdout
    unknown = subprocess.run([str(cli.executable()), "explain", "E4242"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2
    assert "'E4242' is not a Tegula error code" in unknown.stderr
