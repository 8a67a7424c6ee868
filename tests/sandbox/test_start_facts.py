"""The facts a pool's start keeps between commands (:mod:`trex_eval.sandbox.start_facts`): the real
licence probe and the real site-packages view, remembered, keyed, trusted only where this user
alone can write them."""

from __future__ import annotations

import datetime as dt
import json
import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from trex_eval.sandbox import licence_facts, site_entries, start_facts
from trex_eval.sandbox.licence import LicenceReport, licence_preflight, solver_licence
from trex_eval.sandbox.licence_facts import remember_preflight, remembered_preflight

# An earlier pool at the rlimits level may have withdrawn them in this process (conftest).
pytestmark = pytest.mark.usefixtures("store_not_withdrawn")

SITE = sysconfig.get_paths()["purelib"]
WORKING = {"installed": True, "version": "1", "ok": True, "size_limited": True, "error": None}


@pytest.fixture
def facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "facts"
    monkeypatch.setenv("TREX_START_FACTS", str(root))
    site_entries.solver_entries.cache_clear()
    yield root
    site_entries.solver_entries.cache_clear()


def kept(root: Path, kind: str) -> list[Path]:
    return sorted(root.glob(f"{kind}-*.json"))


def report(gurobipy: dict[str, object], coptpy: dict[str, object] | None = None) -> LicenceReport:
    today = dt.date.today()
    return LicenceReport(
        checked_on=today,
        solvers=(
            solver_licence("gurobipy", gurobipy, today=today),
            solver_licence("coptpy", coptpy or {"installed": False}, today=today),
        ),
    )


def test_a_working_licence_report_is_remembered_for_the_day(facts: Path) -> None:
    assert remembered_preflight() is None
    probed = licence_preflight()
    assert probed.gurobipy_ok and probed.get("coptpy").ok  # type: ignore[union-attr]
    remember_preflight(probed)
    (entry,) = kept(facts, "licence")
    assert oct(facts.stat().st_mode & 0o777) == "0o700" and entry.stat().st_mode & 0o777 == 0o600
    assert "13.0.3" not in entry.name  # the key's digest names the file, never its text

    assert remembered_preflight() == probed
    tomorrow = dt.date.today() + dt.timedelta(days=1)
    assert remembered_preflight(today=tomorrow) is None  # an expiry date may pass overnight
    assert remembered_preflight(extra_env={"GRB_LICENSE_FILE": "/nowhere/gurobi.lic"}) is None


def test_a_failure_or_a_server_licence_is_never_remembered(facts: Path, tmp_path: Path) -> None:
    remember_preflight(report({**WORKING, "ok": False, "error": "no licence"}))
    assert kept(facts, "licence") == []

    served = tmp_path / "gurobi.lic"
    served.write_text("TOKENSERVER=licences.example\n")
    remember_preflight(report(WORKING), extra_env={"GRB_LICENSE_FILE": str(served)})
    assert kept(facts, "licence") == []
    assert remembered_preflight(extra_env={"GRB_LICENSE_FILE": str(served)}) is None


def test_a_changed_licence_file_misses(facts: Path, tmp_path: Path) -> None:
    node = tmp_path / "gurobi.lic"
    node.write_text("TYPE=NODE\nKEY=one\n")
    environment = {"GRB_LICENSE_FILE": str(node)}
    remember_preflight(report(WORKING), extra_env=environment)
    found = remembered_preflight(extra_env=environment)
    assert found is not None and found.gurobipy_ok

    node.write_text("TYPE=NODE\nKEY=two\n")
    assert remembered_preflight(extra_env=environment) is None


def test_a_remembered_answer_it_would_not_keep_is_not_believed(facts: Path, tmp_path: Path) -> None:
    # Planted under the right key (only a writer of the folder could): a failing gurobipy would
    # make every program's claimed licence failure believed; odd values must not raise.
    key = licence_facts._key({}, dt.date.today())
    assert key is not None
    for planted in (
        {"gurobipy": {**WORKING, "ok": False, "error": "no licence"}, "coptpy": {"installed": False}},
        {"gurobipy": "x", "coptpy": {"installed": False}},
        {"gurobipy": {**WORKING, "expires": "someday"}, "coptpy": {"installed": False}},
    ):
        start_facts.remember("licence", key, planted)
        assert remembered_preflight() is None
    (entry,) = kept(facts, "licence")
    entry.write_text(f'{{"key": "{start_facts.digest(key)}", "value": {"[" * 5000}{"]" * 5000}}}')
    assert remembered_preflight() is None  # too deep for the parser: a miss, not an exception

    fifo = tmp_path / "licence-fifo"
    os.mkfifo(fifo)  # a variable naming a FIFO: opened without blocking, never remembered
    assert remembered_preflight(extra_env={"GRB_LICENSE_FILE": str(fifo)}) is None


def test_entries_others_could_write_or_that_are_not_well_formed_are_misses(facts: Path) -> None:
    key = {"what": "a fact"}
    start_facts.remember("test", key, [1, 2])
    assert start_facts.recall("test", key) == [1, 2]
    (entry,) = kept(facts, "test")

    entry.chmod(0o644)  # not how the harness writes it: someone else made or changed it
    assert start_facts.recall("test", key) is None
    entry.chmod(0o600)
    facts.chmod(0o777)
    assert start_facts.recall("test", key) is None
    facts.chmod(0o700)

    genuine = entry.read_bytes()
    entry.write_text(json.dumps({"key": "0" * 64, "value": [3]}))  # another key's answer
    assert start_facts.recall("test", key) is None
    entry.write_text('{"key": ')
    assert start_facts.recall("test", key) is None
    entry.write_bytes(genuine)
    assert start_facts.recall("test", key) == [1, 2]


def test_at_most_a_few_entries_of_a_kind_are_kept(facts: Path) -> None:
    numbers = range(start_facts.KEEP_PER_KIND + 3)
    for number in numbers:
        start_facts.remember("test", {"number": number}, number)
        # Written now, the newest while it prunes; then dated in order (a clock tick holds many).
        entry = facts / f"test-{start_facts.digest({'number': number})}.json"
        os.utime(entry, ns=(10**18 + number, 10**18 + number))
    assert len(kept(facts, "test")) == start_facts.KEEP_PER_KIND
    assert [start_facts.recall("test", {"number": number}) for number in numbers] == [
        None if number < 3 else number for number in numbers
    ]


def test_the_site_view_is_remembered_and_a_forged_one_is_read_again(facts: Path) -> None:
    read = site_entries._read_solver_entries(SITE, site_entries.SOLVER_DISTRIBUTIONS)
    assert site_entries.solver_entries(SITE) == read
    (entry,) = kept(facts, "site-entries")
    site_entries.solver_entries.cache_clear()
    assert site_entries.solver_entries(SITE) == read

    # An entry naming a path outside the site folder (the harness's data, say) is not believed.
    forged = json.loads(entry.read_text())
    forged["value"] = [*forged["value"], "/etc"]
    entry.write_text(json.dumps(forged))
    site_entries.solver_entries.cache_clear()
    assert site_entries.solver_entries(SITE) == read
    assert json.loads(entry.read_text())["value"] == list(read)


def test_a_remembered_link_out_of_the_site_folder_is_read_again(facts: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "solver").mkdir()
    (site / "link").symlink_to("/etc")
    assert site_entries.solver_entries(str(site)) == ()  # no distribution here
    (entry,) = kept(facts, "site-entries")
    for forged in ([str(site / "link")], [str(site / "solver" / ".." / "link")], [str(tmp_path)]):
        entry.write_text(json.dumps({**json.loads(entry.read_text()), "value": forged}))
        site_entries.solver_entries.cache_clear()
        assert site_entries.solver_entries(str(site)) == ()


def test_off_keeps_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path))  # where the folder would be by default
    monkeypatch.setenv("TREX_START_FACTS", "off")
    start_facts.remember("test", {"a": 1}, 1)
    assert start_facts.recall("test", {"a": 1}) is None
    assert list(tmp_path.iterdir()) == []
