"""The golden corpus: every kernel specialization the compat suite and the
examples compile, with the C++ and CUDA source Tegula generates for it.

    python tools/golden_corpus.py capture     run tests/compat and tests/python/test_examples.py,
                                              record each compiled request under tests/golden/corpus
                                              and write its generated sources
    python tools/golden_corpus.py update      regenerate the sources of the recorded requests
    python tools/golden_corpus.py check       regenerate and compare (also a pytest:
                                              tests/python/test_golden_corpus.py)

A request is stored as NAME.json (the kernel's sources, globals, argument
specialization and the options that change code); beside it NAME.cpp (CPU),
NAME.sm90.cu and NAME.sm80.cu (CUDA, Hopper and Ampere paths) hold the kernel
part of the generated source, and the prelude before the "// ---- kernel ----"
line is kept once per distinct text as prelude-HASH.{cpp,cu}, named on the
first line of the kernel file. Generation runs the front end, the passes and
code generation only (tegula._C.generate_source): no compiler, no GPU.

A refactor that must change no generated code shows it by `check` passing
before and after; an intended change is reviewed through `update` and git diff.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "golden" / "corpus"
KERNEL_MARK = "// ---- kernel ----"
# (suffix, backend, CUDA arch)
TARGETS = ((".cpp", "cpu", 0), (".sm90.cu", "cuda", 90), (".sm80.cu", "cuda", 80))


# --- requests as JSON ------------------------------------------------------------------


def _relative(filename: str) -> str:
    path = pathlib.Path(filename)
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except (ValueError, OSError):
        return path.name


def _stable_text(text: str) -> str:
    """Host descriptions (Opaque globals) may name checkout paths."""
    return text.replace(str(REPO) + "/", "")


def _global_to_json(value) -> dict:
    return {"kind": value.kind.name, "int_value": value.int_value, "float_value": value.float_value,
            "text": _stable_text(value.text), "function": value.function}


def _arg_to_json(arg) -> dict:
    return {"kind": arg.kind.name, "dtype": arg.dtype, "divisibility": arg.divisibility,
            "is_one": arg.is_one, "value": _global_to_json(arg.value),
            "parts": [_arg_to_json(p) for p in arg.parts], "block_shape": list(arg.block_shape)}


def request_to_json(request, options) -> dict:
    functions = [{"name": f.name, "filename": _relative(f.filename), "source": f.source,
                  "first_line": f.first_line,
                  "globals": {k: _global_to_json(v) for k, v in sorted(f.globals.items())}}
                 for f in request.functions]
    return {"functions": functions, "args": [_arg_to_json(a) for a in request.args], "debug": request.debug,
            "options": {"num_warps": options.num_warps, "num_stages": options.num_stages,
                        "fp_fusion": options.fp_fusion}}


def _global_from_json(_C, d):
    return _C.GlobalValue(kind=getattr(_C.GlobalValue.Kind, d["kind"]), int_value=d["int_value"],
                          float_value=d["float_value"], text=d["text"], function=d["function"])


def _arg_from_json(_C, d):
    arg = _C.ArgSpec(kind=getattr(_C.ArgSpec.Kind, d["kind"]), dtype=d["dtype"], divisibility=d["divisibility"],
                     is_one=d["is_one"], value=_global_from_json(_C, d["value"]))
    arg.parts = [_arg_from_json(_C, p) for p in d["parts"]]
    arg.block_shape = d["block_shape"]
    return arg


def request_from_json(_C, d):
    functions = [_C.FunctionSource(name=f["name"], filename=f["filename"], source=f["source"],
                                   first_line=f["first_line"],
                                   globals={k: _global_from_json(_C, v) for k, v in f["globals"].items()})
                 for f in d["functions"]]
    return _C.KernelRequest(functions=functions, args=[_arg_from_json(_C, a) for a in d["args"]],
                            debug=d["debug"])


def options_for(_C, d, backend: str, arch: int):
    o = d["options"]
    return _C.CompileOptions(backend=backend, cuda_arch=arch, debug=d["debug"], num_warps=o["num_warps"],
                             num_stages=o["num_stages"], fp_fusion=o["fp_fusion"])


# --- generation ---------------------------------------------------------------------------


def generate(d) -> dict:
    """{suffix: full generated source} for every target of request `d`. A
    target that refuses the kernel records its error text instead (some
    kernels are CPU-only or need a newer architecture): that is pinned too."""
    from tegula import _C
    request = request_from_json(_C, d)
    out = {}
    for suffix, backend, arch in TARGETS:
        try:
            source, _layouts = _C.generate_source(request, options_for(_C, d, backend, arch))
        except Exception as e:  # a located diagnostic: pinned as text
            source = f"// error: {type(e).__name__}: {e}\n"
        out[suffix] = source
    return out


def split(source: str, suffix: str):
    """(prelude file name or None, prelude text, kernel file text)."""
    at = source.find(KERNEL_MARK)
    if at <= 0:
        return None, "", source
    prelude, kernel = source[:at], source[at:]
    # The first line names the kernel: it stays with the kernel, so kernels
    # with equal preludes share one file.
    header = ""
    if prelude.startswith("// Generated by Tegula"):
        header, prelude = prelude.split("\n", 1)
        header += "\n"
    ext = ".cpp" if suffix.endswith(".cpp") else ".cu"
    name = "prelude-" + hashlib.sha256(prelude.encode()).hexdigest()[:12] + ext
    return name, prelude, f"{header}// prelude: {name}\n" + kernel


def expected_files(d) -> dict:
    """{file name relative to the corpus: text} that request `d` pins, preludes included."""
    files = {}
    for suffix, source in generate(d).items():
        prelude_name, prelude, kernel = split(source, suffix)
        files[suffix] = kernel
        if prelude_name:
            files[prelude_name] = prelude
    return files


def entries() -> list:
    return sorted(CORPUS.glob("*.json"))


def compare_entry(path: pathlib.Path, update: bool) -> list:
    """Differences (file names) between the corpus and what the compiler now generates."""
    d = json.loads(path.read_text())
    stem = path.name[:-len(".json")]
    differing = []
    for name, text in expected_files(d).items():
        target = CORPUS / (name if name.startswith("prelude-") else stem + name)
        if not target.exists() or target.read_text() != text:
            if update:
                target.write_text(text)
            else:
                differing.append(target.name)
    return differing


def referenced_preludes() -> set:
    names = set()
    for path in CORPUS.iterdir():
        if path.suffix in (".cpp", ".cu") and not path.name.startswith("prelude-"):
            for line in path.read_text().split("\n", 2)[:2]:
                if line.startswith("// prelude: "):
                    names.add(line[len("// prelude: "):])
    return names


def remove_unreferenced_preludes() -> None:
    keep = referenced_preludes()
    for path in CORPUS.glob("prelude-*"):
        if path.name not in keep:
            path.unlink()


# --- capture ------------------------------------------------------------------------------


class _Recorder:
    """A pytest plugin that records each request JITFunction._compile compiles."""

    def __init__(self):
        self.requests = {}

    def pytest_configure(self, config):
        import importlib
        jit = importlib.import_module("tegula.jit")
        original = jit.JITFunction._compile
        recorder = self

        def recording_compile(fn, request, options):
            try:
                return original(fn, request, options)  # fills in the request's sources
            finally:
                try:
                    if request.functions:
                        d = request_to_json(request, options)
                        text = json.dumps(d, sort_keys=True)
                        name = f"{d['functions'][0]['name']}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"
                        recorder.requests.setdefault(name, d)
                except Exception as e:  # recording must never change what the tests see
                    print(f"golden_corpus: could not record {fn.__name__}: {e}", file=sys.stderr)

        jit.JITFunction._compile = recording_compile


def capture(extra_pytest_args: list) -> int:
    import pytest
    recorder = _Recorder()
    os.environ.setdefault("TEGULA_CACHE_DIR", str(REPO / ".cache" / "tegula"))
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=",
            str(REPO / "tests" / "python" / "test_examples.py"), str(REPO / "tests" / "compat")]
    status = pytest.main(args + extra_pytest_args, plugins=[recorder])
    if status not in (0, 5):
        print(f"golden_corpus: the captured tests failed (pytest status {status}); corpus not written")
        return 1
    CORPUS.mkdir(parents=True, exist_ok=True)
    for old in CORPUS.iterdir():
        old.unlink()
    for name, d in sorted(recorder.requests.items()):
        (CORPUS / (name + ".json")).write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    for path in entries():
        compare_entry(path, update=True)
    remove_unreferenced_preludes()
    print(f"golden_corpus: {len(recorder.requests)} requests recorded in {CORPUS.relative_to(REPO)}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("capture", "update", "check"))
    parser.add_argument("pytest_args", nargs="*", help="capture: extra pytest arguments")
    args = parser.parse_args(argv)
    if args.mode == "capture":
        return capture(args.pytest_args)
    bad = 0
    for path in entries():
        differing = compare_entry(path, update=args.mode == "update")
        if differing:
            bad += 1
            print(f"{path.name}: {', '.join(differing)} differ")
    if args.mode == "update":
        remove_unreferenced_preludes()
    if args.mode == "check":
        print(f"golden_corpus: {len(entries()) - bad} of {len(entries())} requests generate their pinned "
              f"sources")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
