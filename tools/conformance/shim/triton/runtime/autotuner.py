from tegula.runtime.autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
