"""Checks of the example and benchmark scripts' flags, as argparse ``type=`` functions.

A bad value stops a script before any work: argparse reports it as a usage
error naming the flag, the value and what is allowed (exit status 2, no
traceback). The examples import this as a sibling module (``import _cli``),
as they do ``_host``; the benchmark finds it the same way.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path


def _bad(allowed: str, text: str):
    return argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")


def integer(minimum: int = None, power_of_two: bool = False, maximum: int = None):
    """An int >= ``minimum`` (and <= ``maximum``); with ``power_of_two``, a power of two."""
    what = "a power of two" if power_of_two else "an integer"
    if minimum is not None and maximum is not None:
        what += f" from {minimum} to {maximum}"
    elif minimum is not None:
        what += f" >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _bad(what, text) from None
        if ((minimum is not None and value < minimum) or (maximum is not None and value > maximum)
                or (power_of_two and (value < 1 or value & (value - 1)))):
            raise _bad(what, text)
        return value

    return parse


def number(minimum: float = 0.0):
    """A finite float >= ``minimum``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < minimum:
            raise _bad(f"a finite number >= {minimum:g}", text)
        return value

    return parse


def shape(form: str, minimum: int = 1, check=None):
    """A shape written like ``form`` ("MxNxK"): that many integers >= ``minimum`` joined by x.
    ``check(dims)`` may return what else is wrong. The text is returned unchanged: the
    scripts parse and print it as they always have."""
    rank = len(form.split("x"))

    def parse(text: str) -> str:
        try:
            dims = tuple(int(v) for v in text.lower().split("x"))
        except ValueError:
            dims = ()
        if len(dims) != rank or min(dims) < minimum:
            raise _bad(f"{form}, {rank} integers >= {minimum}", text)
        why = check(dims) if check else None
        if why:
            raise _bad(f"{form} with {why}", text)
        return text

    return parse


def power_of_two_dim(name: str, index: int, low: int, high: int = None):
    """A ``check`` for ``shape``: dimension ``index`` a power of two from ``low`` (to ``high``)."""
    def check(dims):
        d = dims[index]
        if d < low or (high is not None and d > high) or d & (d - 1):
            return f"{name} a power of two " + (f"from {low} to {high}" if high else f">= {low}")
        return None

    return check


def _unwritable(folder: Path, makes_parents: bool):
    """Why no file can be written in ``folder`` (made first when ``makes_parents``), or None."""
    if makes_parents:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    if not folder.exists():
        return f"{folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a directory"
    # Trying is the only reliable test: access() says yes to root on a read-only mount.
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return f"cannot write in {folder} ({e.strerror or e})"
    return None


def output_file(makes_parents: bool = False):
    """A file path the script can write; ``makes_parents``: the script makes missing folders."""
    def parse(text: str) -> str:
        path = Path(text)
        if not text or path.is_dir():
            raise argparse.ArgumentTypeError(f"expected a file path, got the directory {text!r}")
        why = _unwritable(path.parent, makes_parents)
        if why:
            raise argparse.ArgumentTypeError(f"cannot write {text!r}: {why}")
        return text

    return parse


def output_dir(text: str) -> str:
    """A directory the script writes files into, made if missing."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"expected a directory, got the file {text!r}")
    why = _unwritable(path, makes_parents=True)
    if why:
        raise argparse.ArgumentTypeError(f"cannot write into {text!r}: {why}")
    return text


def json_file(text: str) -> str:
    """A readable file holding a JSON object."""
    try:
        with open(text) as f:
            value = json.load(f)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: {e.strerror or e}") from None
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} holds no JSON object")
    return text


def require_cuda(parser: argparse.ArgumentParser, flag: str = "--device cuda") -> None:
    """A usage error unless a CUDA GPU is usable by torch and Tegula."""
    import _host

    usable, why = _host.cuda_usable()
    if not usable:
        parser.error(f"{flag}: no usable CUDA GPU ({why})")
