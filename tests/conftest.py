"""Shared fixtures. Tests run on the real benchmark data: point TREX_DATA_DIR at a copy
(CI uses ../shared/benchmarks/t-rex). Under CI=true a missing data directory is an error,
never a skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_FALLBACK = REPO.parent / "shared" / "benchmarks" / "t-rex"


def _data_dir() -> Path | None:
    env = os.environ.get("TREX_DATA_DIR")
    candidate = Path(env) if env else _FALLBACK
    return candidate if (candidate / "data").is_dir() else None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data root (folder holding ``data/`` and ``evaluation/``)."""
    found = _data_dir()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("benchmark data not found: set TREX_DATA_DIR (CI must not skip data tests)")
        pytest.skip("benchmark data not found: set TREX_DATA_DIR")
    return found
