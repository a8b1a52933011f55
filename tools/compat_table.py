#!/usr/bin/env python3
"""Writes the status table of docs/triton-compat.md: every public name of
`triton.language` with Tegula's status, decided by compiling a probe, not by
hand. Only the part between the BEGIN/END GENERATED markers is rewritten; the
prose around it is edited by hand.

Each name has a probe: a small kernel written as a Triton user writes it
(`import triton.language as tl`) that uses the name, and optionally feature
probes for keywords and variants. Every probe goes through Tegula's CLI
twice: the CPU backend to generated C++ and the CUDA backend to generated
CUDA for sm_90 (`--nvrtc`: through NVRTC to PTX as well). Then

  supported   the probe and every feature probe compile on both backends
  partial     the probe compiles, but a feature probe fails or one backend
              rejects it (the table says what is missing)
  not yet     the probe compiles nowhere (the table quotes the diagnostic)
  no backend  the name is for hardware Tegula has no backend for (the table
              says which); its probe is still run and must still fail cleanly

The names and the tutorials that use them are the data in compat_names.py.

    python tools/compat_table.py                 # rewrite docs/triton-compat.md
    python tools/compat_table.py --check         # exit 1 if the file is out of date
    python tools/compat_table.py --only dot,load  # print the status of a few names
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import re
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from compat_names import LIBDEVICE, NAMES, TUTORIALS, Name  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "triton-compat.md"

# What every probe starts from: f32, i32, u32 and f64 tiles of 16, and an f32
# 16x16 tile, loaded from the arguments so nothing folds away.
PROBE_HEADER = '''\
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def helper_add(a, b):
    return a + b


@triton.jit
def probe(x_ptr, y_ptr, i_ptr, u_ptr, d_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    xi = tl.load(i_ptr + offs)
    xu = tl.load(u_ptr + offs)
    xd = tl.load(d_ptr + offs)
    x2 = tl.load(x_ptr + offs[:, None] * BLOCK + offs[None, :])
'''
SIGNATURE = "*fp32:16, *fp32:16, *i32:16, *u32:16, *fp64:16, i32, i32, 16"


@dataclasses.dataclass
class Outcome:
    ok: bool
    message: str = ""


def cli() -> str:
    sys.path.insert(0, str(ROOT / "python"))
    from tegula.cli import executable

    return str(executable())


def body_lines(body: str) -> str:
    return "".join(f"    {line}\n" for line in body.strip("\n").splitlines())


def compile_probe(exe: str, folder: pathlib.Path, tag: str, body: str, backend: str, nvrtc: bool) -> Outcome:
    path = folder / f"probe_{tag}.py"
    if not path.exists():
        # The CPU and CUDA probes of one tag run at once: the file appears
        # whole (written aside, then renamed), never half written.
        partial = folder / f".probe_{tag}.{backend}.py"
        partial.write_text(PROBE_HEADER + body_lines(body))
        os.replace(partial, path)
    cmd = [exe, "compile", f"{path}::probe", "--signature", SIGNATURE, "--cache-dir", str(folder / "cache")]
    if backend == "cpu":
        cmd += ["--emit", "cpp"]
    else:
        cmd += ["--backend", "cuda", "--arch", "90", "--emit", "ptx" if nvrtc else "cuda"]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return Outcome(False, "the CLI timed out after 300 s")
    if result.returncode == 0:
        return Outcome(True)
    # "error: ..." or "error[E1001]: ...": the text after the code.
    lines = [line for line in result.stderr.splitlines() if re.search(r"error(\[E\d+\])?:", line)] or \
        result.stderr.splitlines()[-1:]
    message = re.split(r"error(?:\[E\d+\])?:", lines[0], maxsplit=1)[-1].strip() if lines else \
        f"exit status {result.returncode}"
    return Outcome(False, message)


@dataclasses.dataclass
class Status:
    name: Name
    status: str  # "supported", "partial", "not yet", "no backend"
    note: str


def decide(name: Name, results: dict) -> Status:
    cpu, cuda = results[("main", "cpu")], results[("main", "cuda")]
    def with_note(text: str) -> str:
        return f"{text}; {name.note}" if name.note and text else (text or name.note)

    if not cpu.ok and not cuda.ok:
        if name.hardware:
            return Status(name, "no backend", name.hardware)
        return Status(name, "not yet", with_note(cpu.message))
    missing = []
    if not cpu.ok:
        missing.append(f"CPU backend: {cpu.message}")
    if not cuda.ok:
        missing.append(f"CUDA backend: {cuda.message}")
    for i, (feature, _) in enumerate(name.features):
        f_cpu, f_cuda = results[(i, "cpu")], results[(i, "cuda")]
        if not f_cpu.ok and not f_cuda.ok:
            missing.append(f"{feature} ({f_cpu.message})")
        elif not (f_cpu.ok and f_cuda.ok):
            missing.append(f"{feature} on {'CUDA' if f_cpu.ok else 'CPU'}")
    if missing:
        return Status(name, "partial", with_note("missing: " + "; ".join(missing)))
    return Status(name, "supported", name.note)


def probe_all(names: list[Name], nvrtc: bool, jobs: int) -> list[Status]:
    with tempfile.TemporaryDirectory(prefix="tegula-compat-") as tmp:
        folder = pathlib.Path(tmp)
        # A private copy of the CLI: a rebuild of the package during the run must not pull it away.
        exe = str(folder / "tegula")
        shutil.copy2(cli(), exe)
        work = []
        for n_index, name in enumerate(names):
            work.append((n_index, "main", name.probe))
            work += [(n_index, i, body) for i, (_, body) in enumerate(name.features)]
        results: list[dict] = [{} for _ in names]
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = {}
            for n_index, which, body in work:
                tag = f"{n_index}_{which}"
                for backend in ("cpu", "cuda"):
                    futures[pool.submit(compile_probe, exe, folder, tag, body, backend, nvrtc)] = (
                        n_index, which, backend)
            for future in concurrent.futures.as_completed(futures):
                n_index, which, backend = futures[future]
                results[n_index][(which, backend)] = future.result()
    return [decide(name, result) for name, result in zip(names, results)]


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


STATUSES = ("supported", "partial", "not yet", "no backend")
BEGIN = "<!-- BEGIN GENERATED by tools/compat_table.py: edit the probes, not this part -->"
END = "<!-- END GENERATED -->"


def render(statuses: list[Status], nvrtc: bool) -> str:
    """The generated part of the document: totals, then one table per group."""
    counts = {s: sum(1 for st in statuses if st.status == s) for s in STATUSES}
    backend = "PTX through NVRTC" if nvrtc else "CUDA C++"
    out = [
        BEGIN,
        "",
        f"Probed: the CPU backend to C++ and the CUDA backend (sm_90) to {backend}. "
        f"Totals: **{counts['supported']} supported, {counts['partial']} partial, "
        f"{counts['not yet']} not yet, {counts['no backend']} for hardware Tegula has no backend for**, "
        f"of {len(statuses)} names.",
        "",
        "Tutorials (column *tut.*): " + "; ".join(f"{k} {v}" for k, v in TUTORIALS.items()) + ".",
        "",
    ]
    gaps = [s for s in statuses if s.name.tutorials and s.status == "not yet"]
    if gaps:
        out += ["Names a tutorial uses that are **not yet** supported: "
                + ", ".join(f"`{s.name.name}` ({s.name.tutorials})" for s in gaps) + ".", ""]
    else:
        out += ["No name used by tutorials 01-09 is *not yet* supported.", ""]
    group = None
    for st in statuses:
        if st.name.group != group:
            if group is not None:
                out.append("")
            group = st.name.group
            out += [f"### {group}", "", "| name | status | tut. | notes |", "| --- | --- | --- | --- |"]
        out.append(f"| `{st.name.name}` | {st.status} | {st.name.tutorials} | {md_escape(st.note)} |")
    out += ["", END]
    return "\n".join(out) + "\n"


def splice(document: str, generated: str) -> str:
    """`document` with its generated part replaced (appended when it has none)."""
    if BEGIN in document and END in document:
        head, rest = document.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return head + generated.rstrip("\n") + tail
    return document.rstrip("\n") + "\n\n" + generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/triton-compat.md is out of date")
    parser.add_argument("--only", help="comma-separated names: print their status, write nothing")
    parser.add_argument("--nvrtc", action="store_true", help="CUDA probes go through NVRTC to PTX (slower)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--out", type=pathlib.Path, default=DOC)
    args = parser.parse_args()

    names = NAMES + LIBDEVICE
    if args.only:
        wanted = set(args.only.split(","))
        names = [n for n in names if n.name in wanted or n.name.split(".")[-1] in wanted]
    statuses = probe_all(names, args.nvrtc, args.jobs)
    if args.only:
        for st in statuses:
            print(f"{st.name.name:32s} {st.status:10s} {st.note}")
        return 0
    current = args.out.read_text() if args.out.exists() else ""
    text = splice(current, render(statuses, args.nvrtc))
    if args.check:
        if current != text:
            print(f"{args.out} is out of date: run python tools/compat_table.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out}: " + ", ".join(
        f"{sum(1 for s in statuses if s.status == k)} {k}" for k in STATUSES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
