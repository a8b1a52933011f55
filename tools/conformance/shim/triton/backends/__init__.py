from tegula.backends import backends  # noqa: F401

from . import compiler  # noqa: F401
