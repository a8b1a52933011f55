"""``tl.extra``: target-specific extensions: ``libdevice`` holds extra math,
``cuda`` what a program knows of the machine it runs on."""

from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]
