"""Shared fixtures. Tests run on the real benchmark data, found as ``trex-eval run`` finds it
(CI uses ../shared/benchmarks/t-rex beside the checkout). Under CI=true a missing data directory is an error,
never a skip."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Tests count, time and budget re-solves: a store of re-solve results kept across test sessions
# (the user's cache) would answer them from an earlier session. Tests of the store opt in.
os.environ["TREX_RESOLVE_STORE"] = "off"
# The facts a pool's start keeps (licence report, site view) start empty in every test session,
# and are kept across its pools as across a user's commands. Tests of them use their own folder.
_START_FACTS = tempfile.mkdtemp(prefix="trex-test-start-facts-")
os.environ["TREX_START_FACTS"] = _START_FACTS
atexit.register(shutil.rmtree, _START_FACTS, True)


def _data_dir() -> Path | None:
    """The data directory ``trex-eval run`` would use (one rule: ``TREX_DATA_DIR``, else
    ../shared/benchmarks/t-rex beside the checkout, else the copy `trex-eval data pull`
    installed), or None where none holds the data."""
    from trex_eval.benchmarks.data import resolve_data_dir
    from trex_eval.errors import DataError

    try:
        return resolve_data_dir()
    except DataError:
        return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data root (folder holding ``data/`` and ``evaluation/``)."""
    found = _data_dir()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("benchmark data not found: set TREX_DATA_DIR (CI must not skip data tests)")
        pytest.skip("benchmark data not found: set TREX_DATA_DIR")
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under CI=true a skipped test is a failure: every test (data, local model, vLLM, browser)
    must really run there."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true (not allowed): {reason}"


@pytest.fixture
def store_not_withdrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store of re-solve results and the start facts in use again for one test: the suite
    shares one process, where a pool at the rlimits level in an earlier test withdrew both for
    good (as it should in a real run), which would leave nothing to test."""
    from trex_eval import config

    monkeypatch.setattr(config, "_store_withdrawn", [])
