"""The line ``run``, ``grade`` and ``audit`` end with: the sandbox isolation level the session's
programs ran at, read from the run manifest's provenance as the session recorded it."""

from __future__ import annotations

from trex_eval.report.terminal import isolation_line


def _session(level: str) -> dict[str, object]:
    return {"sandbox": {"isolation": {"level": level, "host_view": "..."}, "workers": 2}}


def test_the_level_in_force_and_what_a_weaker_one_let_programs_do() -> None:
    assert isolation_line(_session("bwrap")) == "sandbox isolation: bwrap"
    assert isolation_line(_session("unshare")) == (
        "sandbox isolation: unshare (programs could read the host file system)"
    )
    assert "reach the network" in isolation_line(_session("rlimits"))


def test_a_session_that_ran_nothing_and_earlier_sessions_at_other_levels_are_named() -> None:
    reused = {"sandbox": {"not_started": "...", "executions_reused_from": "results/run-a"}}
    assert isolation_line(reused) == (
        "sandbox isolation: no program ran this session (executions reused from results/run-a)"
    )
    resumed = {**_session("bwrap"), "earlier_sessions": [_session("unshare"), _session("bwrap")]}
    assert isolation_line(resumed) == "sandbox isolation: bwrap; earlier sessions: bwrap, unshare"
    same = {**_session("bwrap"), "earlier_sessions": [_session("bwrap")]}
    assert isolation_line(same) == "sandbox isolation: bwrap"
    assert isolation_line({}) == "sandbox isolation: no program ran this session"
