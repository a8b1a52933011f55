"""What one variant measured: its samples, how its output compared, why it failed."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Outcome:
    variant: str
    samples: list = field(default_factory=list)  # ms per call
    check: str = "unchecked"  # reference | ok | mismatch | unchecked | error
    error: Optional[str] = None
    note: Optional[str] = None  # what ran, when the variant's name does not say it (SDPA's backend)
    num_warps: Optional[int] = None  # the variant's own, when it chose them (an autotuned config)

    @property
    def median_ms(self) -> Optional[float]:
        return statistics.median(self.samples) if self.samples else None


def describe_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip()

