"""``tl.extra``: target-specific extensions; ``libdevice`` holds extra math."""

from . import libdevice

__all__ = ["libdevice"]
