"""The ``tegula`` console script: runs the C++ CLI installed in the package.

The CLI (src/cli) compiles a kernel file for a signature and prints any
stage; it is a native executable so it works without Python too. This shim
only finds it and replaces the current process with it, except for
``tegula profile``, which runs the kernel and so needs Python: that one is
``python -m tegula.profile`` (tegula/profile.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """Path of the native `tegula` executable shipped in the package."""
    here = Path(__file__).resolve().parent
    candidates = [here / "bin" / "tegula"]
    try:  # editable installs keep compiled files next to the extension, not the sources
        from . import _C

        candidates.insert(0, Path(_C.__file__).resolve().parent / "bin" / "tegula")
    except ImportError:
        pass
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("the tegula executable is not installed; looked in "
                            + ", ".join(str(p) for p in candidates))


def main() -> None:
    if sys.argv[1:2] == ["profile"]:
        from .profile import main as profile
        sys.exit(profile(sys.argv[2:]))
    try:
        path = executable()
    except FileNotFoundError as e:
        print(f"tegula: {e}", file=sys.stderr)
        sys.exit(2)
    os.execv(path, [str(path), *sys.argv[1:]])


if __name__ == "__main__":
    main()
