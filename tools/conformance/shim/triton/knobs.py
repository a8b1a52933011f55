"""Triton's settings objects: Tegula's own (tegula.knobs), under Triton's module path."""

import sys

import tegula.knobs

sys.modules[__name__] = tegula.knobs
