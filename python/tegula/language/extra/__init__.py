"""``tl.extra``: target-specific extensions: ``libdevice`` holds extra math,
``cuda`` what a program knows of the machine it runs on; ``cpu`` is the CPU
fork's path to the same ``libdevice``."""

from . import cpu, cuda, libdevice

__all__ = ["cpu", "cuda", "libdevice"]
