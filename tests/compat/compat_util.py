"""Helpers shared by the compat tests: seeded data and the known-bug marker."""

from __future__ import annotations

import os

import numpy as np
import pytest

RUNTIME = os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula")


def tegula_bug(reason: str):
    """Marks a test that fails on Tegula because of a Tegula bug or missing
    feature (`reason` says which, with the kernel's file:line). Strict: once
    Tegula passes, the marker must go. Under Triton the test runs normally."""
    return pytest.mark.xfail(RUNTIME == "tegula", reason=reason, strict=True)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(seed: int, *shape, dtype=np.float32) -> np.ndarray:
    return rng(seed).standard_normal(shape).astype(dtype)


def assert_close(actual, expected, atol=1e-6, rtol=1e-5, what="") -> None:
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what} shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), atol=atol, rtol=rtol,
                               err_msg=what)
