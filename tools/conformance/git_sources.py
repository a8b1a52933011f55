"""Library files read at the commits that hold them: the SOURCES tables of the harnesses whose libraries moved
or removed their Triton kernels (torchtitan_ops.py, xformers_ops.py, flash_attn_triton_amd_ops.py)."""

from __future__ import annotations

import atexit
import pathlib
import shutil
import subprocess
import sys
import tempfile


def source_tree(source: pathlib.Path, sources: dict[str, tuple[str, ...]], prefix: str) -> pathlib.Path:
    """The tree holding every file of `sources` ({commit: paths}): `source` itself when it is such a tree; from a
    git directory (bare, or a checkout's .git) each file at its commit, extracted into a temporary tree removed at
    exit. Exits naming what is missing."""
    source = source.resolve()
    git_dir = source if (source / "objects").is_dir() and (source / "HEAD").is_file() else \
        source / ".git" if (source / ".git").exists() else None
    tree = source
    if git_dir is not None:
        tree = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
        atexit.register(shutil.rmtree, tree, True)
        for commit, paths in sources.items():
            archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit, *paths],
                                     capture_output=True, check=False)
            if archive.returncode:
                sys.exit(f"git archive {commit[:9]} failed in {git_dir}: {archive.stderr.decode().strip()}")
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    for paths in sources.values():
        for file in paths:
            if not (tree / file).is_file():
                sys.exit(f"{tree} holds no {file}")
    return tree
