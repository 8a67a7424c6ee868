"""A test's prerequisite: skipped where it is missing, but a failure under ``CI=true`` (CI must run
every test; see tests/conftest.py)."""

from __future__ import annotations

import os

import pytest


def required(condition: bool, why: str, *, in_ci: str) -> None:
    """Skip the test with ``why`` unless ``condition`` holds; under CI fail instead, saying ``in_ci``
    (how CI provides it)."""
    if not condition:
        if os.environ.get("CI"):
            pytest.fail(f"{why} ({in_ci})")
        pytest.skip(why)
