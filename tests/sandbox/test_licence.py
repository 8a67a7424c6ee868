"""Licence pre-flight: the real check (facts from the environment notes) and its interpretation."""

from __future__ import annotations

import datetime as dt
import sys

import pytest

from trex_eval.sandbox import licence_preflight
from trex_eval.sandbox.licence import solver_licence


def test_real_preflight_reports_gurobipy_and_coptpy() -> None:
    report = licence_preflight(today=dt.date(2026, 11, 29))

    gurobipy = report.get("gurobipy")
    assert gurobipy is not None and gurobipy.installed and gurobipy.ok
    assert gurobipy.version == "13.0.3"
    # gurobipy 13.0.3's pip licence: 2000 variables, expires 2027-11-29 (environment notes).
    assert gurobipy.expires == dt.date(2027, 11, 29) and gurobipy.days_left == 365
    assert gurobipy.size_limited is True and gurobipy.warning is None
    coptpy = report.get("coptpy")
    assert coptpy is not None and coptpy.ok and coptpy.size_limited is True and coptpy.expires is None
    assert report.gurobipy_ok


@pytest.mark.parametrize(
    ("today", "days_left", "warning"),
    [
        (dt.date(2027, 10, 29), 31, None),
        (dt.date(2027, 10, 30), 30, "gurobipy licence expires in 30 days (2027-11-29)"),
        (dt.date(2027, 11, 29), 0, "gurobipy licence expires in 0 days (2027-11-29)"),
        (dt.date(2027, 12, 1), -2, "gurobipy licence expired on 2027-11-29"),
    ],
)
def test_expiry_warning_window(today: dt.date, days_left: int, warning: str | None) -> None:
    raw = {"installed": True, "version": "13.0.3", "ok": True, "expires": "2027-11-29", "size_limited": True}
    licence = solver_licence("gurobipy", raw, today=today)

    assert licence.days_left == days_left and licence.warning == warning


def test_expired_licence_is_not_ok_and_says_why() -> None:
    raw = {
        "installed": True,
        "version": "12.0.3",
        "ok": False,
        "expires": "2026-11-23",
        "error": "GurobiError: License expired 2026-11-23",
    }
    licence = solver_licence("gurobipy", raw, today=dt.date(2026, 11, 29))

    assert not licence.ok and licence.days_left == -6
    assert licence.warning == "gurobipy licence expired on 2026-11-23"
    assert licence.error is not None and "expired" in licence.error


def test_missing_library() -> None:
    licence = solver_licence("coptpy", {"installed": False}, today=dt.date(2026, 1, 1))

    assert not licence.installed and not licence.ok and licence.warning is None


def test_no_probe_process_where_neither_library_can_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules is Python's own "this module cannot be imported": the harness then
    # finds neither library and starts no probe, which (both being installed here) would have
    # reported them installed.
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    monkeypatch.setitem(sys.modules, "coptpy", None)
    report = licence_preflight(today=dt.date(2026, 11, 29))

    assert [(s.library, s.installed, s.ok, s.warning) for s in report.solvers] == [
        ("gurobipy", False, False, None),
        ("coptpy", False, False, None),
    ]
    assert not report.gurobipy_ok and report.warnings == ()


def test_one_importable_library_is_still_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "coptpy", None)  # the harness's view; the probe finds both
    report = licence_preflight(today=dt.date(2026, 11, 29))

    gurobipy = report.get("gurobipy")
    assert gurobipy is not None and gurobipy.installed and gurobipy.ok
