from tegula.runtime.autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from .errors import OutOfResources  # noqa: E402,F401
