"""What autotuning shows while and after it runs: the TEGULA_PRINT_AUTOTUNING
report on stdout and the progress line on stderr."""

from __future__ import annotations

import sys
import time

from . import knobs


def first_line(error: BaseException) -> str:
    """'TypeError: <first line of the message>' (with ' ...' when there is more)."""
    text = str(error).strip() or type(error).__name__
    lines = text.splitlines()
    # A rendered diagnostic's first line is "file:line:col: error: ..."; keep it whole.
    return f"{type(error).__name__}: {lines[0]}" + (" ..." if len(lines) > 1 else "")


def print_autotuning() -> bool:
    """TEGULA_PRINT_AUTOTUNING, or tegula.knobs.autotuning.print where it is set."""
    return knobs.autotuning.print


def report(kernel: str, key: tuple, trials: list, best, total_s: float, compile_s: float,
           pruned: int) -> None:
    """Every config's time (or why it was skipped) and the choice, on stdout."""
    pruned_note = f" ({pruned} more pruned)" if pruned else ""
    print(f"tegula autotune: kernel '{kernel}' key {key}: {len(trials)} configs{pruned_note}")
    for trial in trials:
        if trial.timing is not None:
            median, low, high = trial.timing
            outcome = f"{median:.4f} ms (20%-80%: {low:.4f}-{high:.4f})"
        else:
            outcome = f"skipped, failed to {trial.stage}: {first_line(trial.error)}"
        print(f"  {trial.config}: {outcome}")
    print(f"tegula autotune: kernel '{kernel}' chose {best.config} ({best.timing[0]:.4f} ms) after "
          f"{total_s:.2f} s ({compile_s:.2f} s compiling)")
    sys.stdout.flush()


class Progress:
    """A one-line progress display on stderr (a terminal only), shown once tuning
    has taken more than a second and erased when it ends."""

    DELAY_S = 1.0

    def __init__(self, kernel: str, total: int, stream=None):
        self.kernel = kernel
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.perf_counter()
        self.shown = False
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())

    def show(self, phase: str, done: int, config, best=None) -> None:
        """`best`: the fastest (config, ms) timed so far, if any."""
        if not self.enabled or time.perf_counter() - self.started < self.DELAY_S:
            return
        what = f": {config}" if config is not None else ""
        so_far = f" (best so far {best[0]}: {best[1]:.4f} ms)" if best is not None else ""
        line = f"tegula autotune '{self.kernel}': {phase} {done + 1}/{self.total}{what}{so_far}"
        self.stream.write("\r\x1b[K" + line[:200])
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
