"""The TEGULA_* switches read from the environment, read one way: on for 1, true, yes or on, off for
an empty value, 0, false, no or off (any case, blanks around ignored). Anything else is off, said
once in a warning, rather than taken as whichever the reader guessed (``TEGULA_PROFILE=false`` used
to turn profiling on)."""

from __future__ import annotations

import os
import sys
import warnings

_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")
_warned: set = set()
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _callers_level() -> int:
    """The stacklevel of the first frame outside the tegula package: a setting is read deep inside a
    launch or a decoration, and the warning belongs at the user's line that caused it."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def warn_at_caller(message: str, category: type = RuntimeWarning) -> None:
    """Warns at the user's line (the first frame outside the package), for warnings the C++ launcher
    issues, whose innermost Python frame may be the package's own."""
    warnings.warn(message, category, stacklevel=_callers_level())


def flag(name: str) -> bool:
    """Whether the switch `name` is on."""
    text = os.environ.get(name, "").strip().lower()
    if text in _ON:
        return True
    if text not in _OFF and name not in _warned:
        _warned.add(name)
        warnings.warn(f"{name}={os.environ[name]!r} is not a switch (1/0, true/false, yes/no, on/off): taken as off",
                      RuntimeWarning, stacklevel=_callers_level())
    return False


def count(name: str, default: int) -> int:
    """The count >= 0 the variable `name` holds, `default` when it is unset or empty; anything else is
    `default` too, said once in a warning."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if text.isascii() and text.isdigit():  # int() would also take "3_0" and other scripts' digits
        return int(text)
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"{name}={os.environ[name]!r} is not a count (an integer >= 0): taken as {default}",
                      RuntimeWarning, stacklevel=_callers_level())
    return default
