"""``triton.runtime.autotuner``'s names, where libraries import them from (a subclass of Autotuner, Config,
the decorators): Tegula's autotuner (tegula/autotune.py)."""

from ..autotune import Autotuner, Config, Heuristics, autotune, heuristics

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics"]
