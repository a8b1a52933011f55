"""Runs Triton's own language tests against Tegula (issue 16's yardstick).

    python tools/conformance/run_test_core.py [--triton PATH] [--device cpu|cuda] [--module NAME]
        [--sample N] [--seed S] [-n WORKERS] [--json OUT] [-- PYTEST_ARGS...]

`--module` picks another file of Triton's python/test/unit/language (test_random, test_standard,
test_tuple, ...; default test_core).

Triton's tests are not part of this repository: they are read at run time
from a Triton checkout (`--triton`: a work tree, or a bare git directory
whose HEAD is read). They run as a Triton user would run them after
swapping the import: a stand-in `triton` package (tools/conformance/shim,
written to a temporary folder with the tests) re-exports Tegula's names
under Triton's, plus the host-side helpers Triton's tests import from
Triton's runtime (`_internal_testing`, `TensorWrapper`, the driver's
target), taken from the same checkout where they are plain Python.
Nothing in the shim implements a language feature: a missing or wrong
name fails as it would for a user.

`--device cpu` selects the tests Triton marks for CPUs (`-m cpu`), as the
CPU fork's CI runs them; `--sample N` runs a seeded random sample of the
collected cases. Prints the pass rate and the failures grouped by their
first error line; `--json` writes every outcome.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_TRITON = Path("/work/.mirror/triton-lang+triton-cpu/repo")
LANGUAGE_TESTS = "python/test/unit/language/"
FILES = {  # path in the Triton checkout -> path in the run folder (besides the module under test)
    LANGUAGE_TESTS + "test_core.py": "test_core.py",  # other modules import its helpers
    LANGUAGE_TESTS + "print_helper.py": "print_helper.py",  # test_subprocess runs it
    LANGUAGE_TESTS + "printf_helper.py": "printf_helper.py",  # an older test_printf runs it
    LANGUAGE_TESTS + "test_mxfp.py": "test_mxfp.py",  # test_matmul imports its tensor classes
    "python/test/conftest.py": "conftest.py",
    "python/triton/_internal_testing.py": "triton/_internal_testing.py",
    "python/triton/tools/mxfp.py": "triton/tools/mxfp.py",  # torch-only helpers test_mxfp imports
}
OPTIONAL = {LANGUAGE_TESTS + "printf_helper.py", LANGUAGE_TESTS + "print_helper.py", LANGUAGE_TESTS + "test_mxfp.py",
            "python/triton/tools/mxfp.py"}  # helpers only some modules use; a checkout may lack them


def read_from_triton(root: Path, path: str) -> str | None:
    if (root / path).exists():
        return (root / path).read_text()
    if not (root / "HEAD").exists():  # a work tree that lacks the file
        return None
    out = subprocess.run(["git", "--git-dir", str(root), "show", f"HEAD:{path}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def module_source(module: str) -> str:
    """The test file's path in the checkout: a language test by its name ("test_tuple"), another
    directory's under python/test/unit ("runtime/test_autotuner"), or one of python/test/unit itself
    ("./test_debug")."""
    return posixpath.normpath(("python/test/unit/" if "/" in module else LANGUAGE_TESTS) + module + ".py")


def lay_out(root: Path, folder: Path, module: str) -> None:
    shutil.copytree(HERE / "shim" / "triton", folder / "triton")
    for source, target in {**FILES, module_source(module): Path(module).name + ".py"}.items():
        text = read_from_triton(root, source)
        if text is None:
            if source in OPTIONAL:
                continue
            sys.exit(f"{source} is not in the Triton checkout {root}")
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        (folder / target).write_text(text)


def collect(folder: Path, env: dict, marker: list[str], extra: list[str], module: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          *marker, *extra, module + ".py"], cwd=folder, env=env, capture_output=True, text=True)
    ids = [line.strip() for line in out.stdout.splitlines() if line.startswith(module + ".py::")]
    if not ids:
        sys.exit("collected nothing:\n" + out.stdout[-3000:] + out.stderr[-3000:])
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triton", type=Path, default=DEFAULT_TRITON)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--module", default="test_core",
                        help="a file of Triton's python/test/unit/language, or of another directory of "
                             "python/test/unit named with it (runtime/test_autotuner)")
    parser.add_argument("--every-test", action="store_true",
                        help="with --device cpu, also the tests Triton does not mark for CPUs (modules that mark none)")
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-n", dest="workers", default="2", help="pytest-xdist workers; 0 runs in one process")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test case")
    parser.add_argument("--placeholders", default="",
                        help="comma-separated tl names Tegula lacks that the test module reads while it is "
                             "collected: each becomes a placeholder that fails when used (said in the output)")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="tegula-conformance-"))
    lay_out(args.triton, folder, args.module)
    env = dict(os.environ, PYTHONPATH=str(folder) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TEGULA_CONFORMANCE_DEVICE=args.device, TEGULA_CONFORMANCE_PLACEHOLDERS=args.placeholders)
    if args.device == "cuda":
        # Triton launches on the active GPU; Tegula runs a launch where its arrays live, and one without arrays
        # (print_helper's kernels of constexprs only) where TEGULA_BACKEND says, else on the CPU.
        env.setdefault("TEGULA_BACKEND", "cuda")
    if args.placeholders:
        print(f"placeholders for names Tegula lacks: {args.placeholders}")
    marker = ["-m", "cpu"] if args.device == "cpu" and not args.every_test else []
    ids = collect(folder, env, marker, args.pytest_args, Path(args.module).name)
    if args.sample and args.sample < len(ids):
        ids = sorted(random.Random(args.seed).sample(ids, args.sample))
    (folder / "cases.txt").write_text("\n".join(ids) + "\n")
    report = folder / "report.xml"
    timeout = ["-p", "timeout", f"--timeout={args.timeout}"] if _has("pytest_timeout") else []
    workers = ["-n", args.workers] if args.workers != "0" else []  # -n 0: one process, no pytest-xdist needed
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers,
                    "--device", args.device, f"--junitxml={report}", "-o", "junit_family=xunit1", *timeout,
                    *args.pytest_args, *ids], cwd=folder, env=env, capture_output=True, text=True)
    outcomes = read_junit(report)
    summarize(outcomes, len(ids))
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=1))
    shutil.rmtree(folder, ignore_errors=True)


def _has(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def read_junit(path: Path) -> dict:
    import xml.etree.ElementTree as ET
    outcomes = {}
    if not path.exists():
        return outcomes
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        status, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                status, why = "failed", (child.get("message") or child.text or "").strip()
            elif child.tag == "skipped":
                status, why = "skipped", (child.get("message") or "").strip()
        outcomes[name] = {"status": status, "why": why[:400]}
    return outcomes


def first_line(why: str) -> str:
    line = why.splitlines()[0] if why else "?"
    line = re.sub(r"0x[0-9a-f]+", "0x…", line)
    line = re.sub(r"\d+(\.\d+)?", "N", line)
    return line[:160]


def summarize(outcomes: dict, cases: int) -> None:
    counts = collections.Counter(o["status"] for o in outcomes.values())
    ran = counts["passed"] + counts["failed"]
    rate = counts["passed"] / ran if ran else 0.0
    print(f"{cases} cases; {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped; "
          f"pass rate of the non-skipped: {rate:.1%}")
    causes = collections.Counter(first_line(o["why"]) for o in outcomes.values() if o["status"] == "failed")
    tests = collections.defaultdict(set)
    for name, o in outcomes.items():
        if o["status"] == "failed":
            tests[first_line(o["why"])].add(name.split("[")[0])
    for cause, n in causes.most_common(40):
        print(f"{n:6d}  {cause}   ({', '.join(sorted(tests[cause])[:4])})")


if __name__ == "__main__":
    main()
