"""Fixtures for the gurobipy_highs tests.

The test process itself imports *real* gurobipy (as the oracle: it runs the reference side of
every differential test and parses LP files); the layer runs in subprocesses (loaded there as
``gurobipy``), or is imported in-process under its own name ``gurobipy_highs``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def real_gurobipy() -> ModuleType:
    """Real gurobipy with a working licence; the differential tests skip without one (the
    pip licence is size-limited and expires on a fixed date, see environment-notes.md)."""
    try:
        import gurobipy
    except ImportError:
        pytest.skip("real gurobipy is not installed: nothing to compare gurobipy_highs with")
    if hasattr(gurobipy, "GUROBIPY_HIGHS"):
        pytest.fail("gurobipy_highs shadows real gurobipy in the test process")
    try:
        gurobipy.Model().dispose()
    except gurobipy.GurobiError as error:
        pytest.skip(f"real gurobipy cannot start (licence): {error}")
    return gurobipy
