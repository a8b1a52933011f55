"""Triton's triton.backends: the installed compiler backends, found through entry points. Tegula's
backends are not Triton plugins (tegula._C.backends() lists them), so the table is empty; host code
that reads it (to pick a driver) finds no Triton backend, as on a machine without one."""

from . import compiler  # noqa: F401

backends = {}
