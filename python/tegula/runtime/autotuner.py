"""``triton.runtime.autotuner``'s names, where libraries import them from (a subclass of Autotuner, Config,
the decorators): Tegula's autotuner (tegula/autotune.py)."""

from ..autotune import Autotuner, Config, Heuristics, autotune, heuristics
from .errors import OutOfResources  # the autotuner's module names it too, and host code imports it there

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics", "OutOfResources"]
