"""The persistent store of re-solve results (:mod:`trex_eval.verify.store`): real re-solves in
verifier processes, real files, writers in separate processes, a real sandbox job trying to reach
the store, and a real audit of reference programs run twice."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_budgets import market_split
from test_verify import textbook

from trex_eval import config
from trex_eval.records import ExecStatus, LinearModel, ObjectiveEvidence, SolveRecord, SolveStatus
from trex_eval.run.audit import audit
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.store import RunStore
from trex_eval.verify import _MEMO, Resolve, resolve_remembered, verify_solve
from trex_eval.verify import store as store_module
from trex_eval.verify.store import ResolveStore, StoreKey, resolve_store, store_key

# An earlier pool at the rlimits level may have withdrawn them in this process (conftest).
pytestmark = pytest.mark.usefixtures("store_not_withdrawn")

REPO = Path(__file__).resolve().parents[2]
STAND_IN = REPO / "tests" / "sandbox" / "highs_stand_in"


def claim(model: LinearModel, objective: float) -> SolveRecord:
    return SolveRecord(
        library="test", status=SolveStatus.OPTIMAL, raw_status="", objective=objective, model=model
    )


def verified(model: LinearModel, objective: float, *, budget_s: float = 10.0) -> SolveRecord:
    """``verify_solve`` as a fresh process sees it: nothing in the in-memory memo."""
    _MEMO.clear()
    return verify_solve(claim(model, objective), budget_s=budget_s)


def entries(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.json"))


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "resolves"
    monkeypatch.setenv("TREX_RESOLVE_STORE", str(root))
    yield root
    _MEMO.clear()


KEY = StoreKey(model="ab" * 32, code="1:test", solvers="highspy=1|pyscipopt=2", budget="10")
RESULT = Resolve(SolveStatus.OPTIMAL, 21.0, "kOptimal", "highs", 0.25)


# --------------------------------------------------------------------------- read back, misses


def test_a_result_is_written_once_and_read_back_without_a_second_resolve(store_dir: Path) -> None:
    first = verified(textbook(), 21.0)
    assert (first.verification, first.verified_objective, first.verified_from_store) == ("match", 21.0, False)
    assert len(entries(store_dir)) == 1
    stats = resolve_store().stats  # type: ignore[union-attr]

    again = verified(textbook(var_names=("a", "b")), 21.0)  # names are not part of the model's key

    assert (again.verification, again.verified_objective, again.verified_by) == ("match", 21.0, "highs")
    assert again.verified_from_store
    after = resolve_store().stats  # type: ignore[union-attr]
    assert (after.hits, after.written) == (stats.hits + 1, stats.written)
    assert oct(store_dir.stat().st_mode & 0o777) == "0o700"
    assert all(path.stat().st_mode & 0o777 == 0o600 for path in entries(store_dir))


def test_a_changed_budget_solver_version_or_code_version_misses(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not verified(textbook(), 21.0, budget_s=10.0).verified_from_store
    assert verified(textbook(), 21.0, budget_s=10.0).verified_from_store
    assert not verified(textbook(), 21.0, budget_s=12.5).verified_from_store  # another budget
    assert len(entries(store_dir)) == 2

    # A solver upgrade: the installed HiGHS reports another version.
    real_version = store_module._version
    monkeypatch.setattr(
        store_module, "_version", lambda name: "99.0" if name == "highspy" else real_version(name)
    )
    store_module.solver_versions.cache_clear()
    try:
        assert not verified(textbook(), 21.0).verified_from_store
    finally:
        monkeypatch.setattr(store_module, "_version", real_version)
        store_module.solver_versions.cache_clear()
    assert len(entries(store_dir)) == 3

    # A new version of the re-solve code.
    monkeypatch.setattr(store_module, "RESOLVER_VERSION", store_module.RESOLVER_VERSION + 1)
    store_module.code_version.cache_clear()
    try:
        assert not verified(textbook(), 21.0).verified_from_store
        assert verified(textbook(), 21.0).verified_from_store
    finally:
        monkeypatch.undo()
        store_module.code_version.cache_clear()
    assert len(entries(store_dir)) == 4


def test_a_diagnosis_resolve_is_not_kept(store_dir: Path) -> None:
    # Its budget is what the sample's diagnosis budget has left: another in every run.
    _MEMO.clear()
    assert resolve_remembered(textbook(), budget_s=1.87).objective == 21.0
    assert entries(store_dir) == []


def test_the_key_holds_the_model_digest_code_solvers_and_budget() -> None:
    key = store_key(b"\x01" * 32, gurobi=False, budget_s=10.0)
    gurobi = store_key(b"\x01" * 32, gurobi=True, budget_s=10.0)

    assert key.model == "01" * 32 and key.budget == "10"
    assert key.code.startswith(f"{store_module.RESOLVER_VERSION}:") and not key.code.endswith("unreadable")
    assert key.solvers.startswith("highspy=") and "|pyscipopt=" in key.solvers
    assert gurobi.solvers.startswith("gurobipy=") and gurobi.solvers.endswith(key.solvers)
    assert len({key.file_name(), gurobi.file_name(), dataclasses.replace(key, budget="11").file_name()}) == 3


# --------------------------------------------------------------------------- what is never stored


def test_an_over_budget_resolve_is_never_stored(store_dir: Path) -> None:
    # ~6.8 CPU s of branch and bound for HiGHS: over a 1 CPU s budget, the verifier is ended.
    hard = market_split(4, 24, seed=2)
    checked = verified(hard, 0.0, budget_s=1.0)

    assert checked.verification is not None and checked.verification.startswith("skipped:")
    assert "budget" in checked.verification or "time limit" in checked.verification
    assert entries(store_dir) == []


@pytest.mark.parametrize(
    "result",
    [
        Resolve(SolveStatus.TIME_LIMIT, None, "kTimeLimit", "highs", 9.0),
        Resolve(SolveStatus.ERROR, None, "crash", "highs", 0.1),
        Resolve(SolveStatus.NOT_SOLVED, None, "?", "highs", 0.1),
        Resolve(SolveStatus.OPTIMAL, 21.0, "kOptimal", "highs", 10.5),  # over the budget of 10
        Resolve(SolveStatus.OPTIMAL, None, "kOptimal", "highs", 0.1),
        Resolve(SolveStatus.OPTIMAL, math.nan, "kOptimal", "highs", 0.1),
        Resolve(SolveStatus.OPTIMAL, 21.0, "kOptimal", "gurobipy", 0.1),  # not a solver of the key
        Resolve(SolveStatus.OPTIMAL, 21.0, "kOptimal", "highs", 0.1, stored=True),
    ],
)
def test_results_that_did_not_finish_within_budget_or_are_not_decisive_are_refused(
    tmp_path: Path, result: Resolve
) -> None:
    store = ResolveStore(tmp_path / "resolves")

    assert not store.put(KEY, result)
    assert store.get(KEY) is None and entries(tmp_path / "resolves") == []


# --------------------------------------------------------------------------- concurrent writers

_WRITER = """
import sys
from pathlib import Path
from trex_eval.records import SolveStatus
from trex_eval.verify.base import Resolve
from trex_eval.verify.store import ResolveStore, StoreKey

root, me = Path(sys.argv[1]), int(sys.argv[2])
store = ResolveStore(root, max_entries=int(sys.argv[3]), prune_every=7)
for round in range(3):
    for k in range(60):
        shared = StoreKey(model=f"{k:064x}", code="1:test", solvers="highspy=1", budget="10")
        # Every writer's result of a shared key is valid: it differs only in the CPU seconds.
        assert store.put(shared, Resolve(SolveStatus.OPTIMAL, float(k), "ok", "highs", me / 100))
        own = StoreKey(model=f"{me:032x}{k:032x}", code="1:test", solvers="highspy=1", budget="10")
        assert store.put(own, Resolve(SolveStatus.INFEASIBLE, None, "inf", "scip", 0.5))
        found = store.get(shared)
        # Another writer's prune may have deleted it just now; what is found is whole and its own.
        assert (found is None and store.max_entries < 1000) or found.objective == float(k), found
print(store.stats.rejected)
"""


def _writers(root: Path, count: int, max_entries: int) -> list[str]:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(root), str(me), str(max_entries)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in range(1, count + 1)
    ]
    outputs = [process.communicate(timeout=240) for process in processes]
    assert [process.returncode for process in processes] == [0] * count, [err for _, err in outputs]
    return [out.strip() for out, _ in outputs]


def test_concurrent_writers_of_the_same_and_other_keys_leave_a_consistent_store(tmp_path: Path) -> None:
    root = tmp_path / "resolves"
    assert _writers(root, 4, 10_000) == ["0"] * 4  # no reader ever met a torn or foreign entry

    store = ResolveStore(root)
    for k in range(60):
        found = store.get(StoreKey(model=f"{k:064x}", code="1:test", solvers="highspy=1", budget="10"))
        assert found is not None and found.objective == float(k) and found.cpu_s in (0.01, 0.02, 0.03, 0.04)
        for me in range(1, 5):
            own = StoreKey(model=f"{me:032x}{k:032x}", code="1:test", solvers="highspy=1", budget="10")
            assert store.get(own) == Resolve(SolveStatus.INFEASIBLE, None, "inf", "scip", 0.5, stored=True)
    assert len(entries(root)) == 60 + 4 * 60 and not list(root.glob("*/*.tmp"))
    assert store.stats.rejected == 0


def test_concurrent_pruning_keeps_the_store_bounded_and_valid(tmp_path: Path) -> None:
    root = tmp_path / "resolves"
    _writers(root, 3, 40)

    found = entries(root)
    # Bounded: at most max_entries plus what each writer added since its last prune (every 7 writes).
    assert len(found) <= 40 + 3 * 7
    for path in found:
        entry = json.loads(path.read_text())
        key = StoreKey(**entry["key"])
        assert key.file_name() == path.name
        assert ResolveStore(root).get(key) is not None
    assert not list(root.glob("*/*.tmp"))


# --------------------------------------------------------------------------- corruption, deletion


def _corruptions(path: Path) -> list[bytes | None]:
    good = json.loads(path.read_text())
    other_key = {**good, "key": {**good["key"], "budget": "99"}}
    return [
        b"",
        path.read_bytes()[:40],
        b"\xff\xfe not text",
        b"[" * 100_000,
        json.dumps({**good, "objective": "21"}).encode(),
        json.dumps({**good, "status": "time_limit"}).encode(),
        json.dumps({**good, "cpu_s": 1e9}).encode(),
        json.dumps({**good, "solver": "forged"}).encode(),
        json.dumps({**good, "extra": 1}).encode(),
        json.dumps(other_key).encode(),
        path.read_bytes().replace(b"21.0", b"Infinity"),
        None,  # a symbolic link to a valid-looking file elsewhere
    ]


def test_a_corrupt_entry_is_ignored_deleted_and_replaced(store_dir: Path, tmp_path: Path) -> None:
    verified(textbook(), 21.0)
    (path,) = entries(store_dir)
    genuine = path.read_bytes()
    for corruption in _corruptions(path):
        if corruption is None:
            elsewhere = tmp_path / "planted.json"
            elsewhere.write_bytes(genuine.replace(b"21.0", b"20.0"))
            path.unlink()
            path.symlink_to(elsewhere)
        else:
            path.write_bytes(corruption)

        again = verified(textbook(), 21.0)

        assert (again.verification, again.verified_objective, again.verified_from_store) == (
            "match",
            21.0,
            False,
        )
        assert not path.is_symlink() and json.loads(path.read_bytes())["objective"] == 21.0  # replaced
        assert verified(textbook(), 21.0).verified_from_store


def test_a_deleted_or_unusable_store_costs_only_resolves(
    store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    verified(textbook(), 21.0)
    shutil.rmtree(store_dir)  # deleted while the process uses it
    assert not verified(textbook(), 21.0).verified_from_store
    assert verified(textbook(), 21.0).verified_from_store

    shutil.rmtree(store_dir)
    store_dir.write_text("not a folder")
    store_module._STORES.clear()
    with caplog.at_level("WARNING"):
        checked = verified(textbook(), 21.0)
        assert (checked.verification, checked.verified_from_store) == ("match", False)
        assert not verified(textbook(), 21.0).verified_from_store
    assert "is not used for the rest of this process" in caplog.text and "TREX_RESOLVE_STORE" in caplog.text
    store_module._STORES.clear()


def test_a_folder_others_may_write_is_not_trusted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "shared"
    writer = ResolveStore(root)
    assert writer.put(KEY, RESULT)
    os.chmod(root, 0o777)

    reader = ResolveStore(root)
    with caplog.at_level("WARNING"):
        assert reader.get(KEY) is None
        assert not reader.put(dataclasses.replace(KEY, budget="20"), RESULT)
    assert "others could write entries" in caplog.text
    assert reader.describe()["enabled"] is False


def test_off_disables_the_store_and_the_manifest_says_where(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TREX_RESOLVE_STORE", "off")
    assert resolve_store() is None and store_module.describe()["enabled"] is False
    assert not verified(textbook(), 21.0).verified_from_store

    monkeypatch.delenv("TREX_RESOLVE_STORE")
    monkeypatch.setenv("TREX_CACHE_DIR", "/nonexistent/cache")
    assert config.resolve_store_dir() == Path("/nonexistent/cache/resolves")
    assert store_module.describe()["path"] == "/nonexistent/cache/resolves"


# --------------------------------------------------------------------------- the sandbox


_PROBE = """
import json, os
store, entry = {store!r}, {entry!r}
seen = {{}}
try:
    seen["listing"] = sorted(os.listdir(store))
except OSError as error:
    seen["listing"] = type(error).__name__
try:
    seen["read"] = open(entry, "rb").read().decode(errors="replace")
except OSError as error:
    seen["read"] = type(error).__name__
shard = os.path.dirname(entry)
for target in (entry, os.path.join(store, "planted.json"), os.path.join(shard, "planted.json")):
    try:
        with open(target, "w") as file:
            file.write("{{}}")
        seen.setdefault("written", []).append(target)
    except OSError as error:
        seen.setdefault("refused", []).append(type(error).__name__)
print("SEEN", json.dumps(seen))
"""


def test_a_program_in_the_sandbox_can_neither_read_nor_write_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The store inside a tree the sandbox binds (the gurobipy layer's folder): only the mask the
    # pool lays over the store keeps it from programs there.
    layer_root = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        layer = layer_root / "layer"
        shutil.copytree(STAND_IN, layer)
        root = layer / "resolves"
        monkeypatch.setenv("TREX_RESOLVE_STORE", str(root))
        store = ResolveStore(root)
        assert store.put(KEY, RESULT)
        (entry,) = entries(root)
        genuine = entry.read_bytes()

        with SandboxPool(workers=1, highs_package=layer) as pool:
            if pool.isolation != "bwrap":
                pytest.skip("needs bwrap isolation")
            assert str(root) in pool.hidden
            run = pool.run(Job(code=_PROBE.format(store=str(root), entry=str(entry)), expect="any"))

        assert run.status is ExecStatus.OK, run.stderr_tail
        seen = json.loads(run.stdout_tail.split("SEEN ", 1)[1])
        assert seen["listing"] in ([], "FileNotFoundError"), seen
        assert seen["read"] in ("FileNotFoundError", "PermissionError"), seen
        assert "written" not in seen, seen
        assert entries(root) == [entry] and entry.read_bytes() == genuine
        assert ResolveStore(root).get(KEY) == dataclasses.replace(RESULT, stored=True)
    finally:
        shutil.rmtree(layer_root)


def test_a_gurobipy_first_result_answers_without_asking_whether_gurobipy_is_licensed(
    store_dir: Path,
) -> None:
    # What a licensed gurobipy of the installed version derived within the same budget decides
    # the claim on a process whose gurobipy is not licensed now (documented: the store's results
    # are the harness's own, whichever process derived them).
    store = resolve_store()
    assert store is not None
    stored = Resolve(SolveStatus.OPTIMAL, 21.0, "2", "gurobipy", 0.5)
    assert store.put(store_key(b"\x02" * 32, gurobi=True, budget_s=10.0), stored)
    asked: list[bool] = []

    def unlicensed() -> bool:
        asked.append(True)
        return False

    def never() -> Resolve:
        raise AssertionError("re-solved although stored")

    found = store_module.through_store(
        b"\x02" * 32, prefer_gurobi=True, gurobi_available=unlicensed, budget_s=10.0, compute=never
    )
    assert found == dataclasses.replace(stored, stored=True) and asked == []

    # Nothing stored: asked once, solved with the open solvers and kept under their key.
    computed = Resolve(SolveStatus.OPTIMAL, 5.0, "kOptimal", "highs", 0.1)
    got = store_module.through_store(
        b"\x03" * 32, prefer_gurobi=True, gurobi_available=unlicensed, budget_s=10.0, compute=lambda: computed
    )
    assert got == computed and asked == [True]
    assert store.get(store_key(b"\x03" * 32, gurobi=False, budget_s=10.0)) is not None
    assert store.get(store_key(b"\x03" * 32, gurobi=True, budget_s=10.0)) is None


STORED_ONLY = """
import json, sys
from trex_eval.records import LinearModel, SolveRecord, SolveStatus
from trex_eval.verify import verifier_lanes, verify_solve

INF = float("inf")
model = LinearModel(
    sense="max", var_names=("x", "y"), obj=(5.0, 4.0), lb=(0.0, 0.0), ub=(INF, INF), vtype=("I", "I"),
    row_names=("wood", "labour"), row_lower=(-INF, -INF), row_upper=(24.0, 6.0),
    a_row=(0, 0, 1, 1), a_col=(0, 1, 0, 1), a_val=(6.0, 4.0, 1.0, 2.0),
)
claim = SolveRecord(
    library="gurobipy", status=SolveStatus.OPTIMAL, raw_status="", objective=20.0, model=model
)
graded = verify_solve(claim, budget_s=10.0)
print(json.dumps({"verification": graded.verification, "by": graded.verified_by,
                  "stored": graded.verified_from_store, "verifiers": verifier_lanes().started}))
"""


def test_a_claim_whose_resolve_is_stored_starts_no_verifier_process(store_dir: Path) -> None:
    # Whether gurobipy is licensed is asked of a verifier process (a Python start-up and the
    # solvers' imports): a run whose every claim is certified or stored never needs one.
    def graded() -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", STORED_ONLY], capture_output=True, text=True, check=True, timeout=120
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = graded()
    assert (first["verification"], first["stored"], first["verifiers"]) == ("match", False, 1)
    again = graded()
    assert again == {**first, "stored": True, "verifiers": 0}
    assert len(entries(store_dir)) == 1


# --------------------------------------------------------------------------- grades


def test_a_repeat_audit_pays_no_second_resolve_and_its_grades_say_so(
    store_dir: Path, data_dir: Path, tmp_path: Path
) -> None:
    _MEMO.clear()  # an earlier test's re-solves of these models would be memo hits, never stored
    first = audit(["b4o-feasible"], data_dir=data_dir, limit=3, out=tmp_path / "first", show_progress=False)
    written = len(entries(store_dir))
    _MEMO.clear()  # as a new process would start
    second = audit(["b4o-feasible"], data_dir=data_dir, limit=3, out=tmp_path / "second", show_progress=False)

    assert [row["verdict"] for row in first.rows] == [row["verdict"] for row in second.rows]
    assert [row["predicted"] for row in first.rows] == [row["predicted"] for row in second.rows]
    assert written >= 1 and len(entries(store_dir)) == written

    def grades(run_dir: Path) -> list[ObjectiveEvidence]:
        records = RunStore(run_dir).iter_samples()
        return [r.grade.evidence for r in records if isinstance(r.grade.evidence, ObjectiveEvidence)]

    before, after = grades(first.run_dir), grades(second.run_dir)
    resolved = [e for e in before if e.source.startswith("verified")]
    assert resolved and not any(e.stored for e in before)
    assert [e.stored for e in after] == [e.source.startswith("verified") for e in after]
    provenance = RunStore(second.run_dir).read_manifest().provenance["resolve_store"]
    assert provenance == {**provenance, "enabled": True, "path": str(store_dir)}


WITHDRAWN_AT_RLIMITS = """
import json, sys
from pathlib import Path
from trex_eval import config
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.verify import store

from trex_eval.sandbox.licence import licence_preflight
from trex_eval.sandbox.licence_facts import remember_preflight, remembered_preflight

root = Path(sys.argv[1])
(root / "00").mkdir(parents=True)
(root / "00" / "planted").write_text("{}")
before = store.describe()["enabled"]
# What a program of an earlier run at this level could have left: a licence answer of its own.
probed = licence_preflight()
planted = probed.model_copy(update={"solvers": tuple(
    solver.model_copy(update={"version": "planted"}) for solver in probed.solvers)})
remember_preflight(planted)
assert remembered_preflight() == planted
with SandboxPool(workers=1, isolation="rlimits") as pool:
    ran = pool.run(Job(code="print('ok')", expect="any")).status.value
    versions = [solver.version for solver in pool.licence.solvers]
print(json.dumps({"before": before, "after": store.describe(), "exists": root.exists(),
                  "dir": config.resolve_store_dir() is None, "ran": ran, "versions": versions,
                  "facts": Path(sys.argv[2]).exists() or config.start_facts_dir() is not None}))
"""


def test_a_pool_at_the_rlimits_level_withdraws_and_empties_the_store(tmp_path: Path) -> None:
    # A fresh process: withdrawing is for good in the process that does it.
    root, facts = tmp_path / "resolves", tmp_path / "facts"
    done = subprocess.run(
        [sys.executable, "-c", WITHDRAWN_AT_RLIMITS, str(root), str(facts)],
        capture_output=True,
        text=True,
        env={**os.environ, "TREX_RESOLVE_STORE": str(root), "TREX_START_FACTS": str(facts)},
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] is True and found["ran"] == "ok"
    # Programs there run as this user and could have planted entries: none is left, none is read.
    assert not found["exists"] and found["dir"]
    assert not found["facts"]  # the licence report and site view it kept went with the store
    assert "planted" not in found["versions"]  # the pre-flight ran again
    assert found["after"]["enabled"] is False and "rlimits" in found["after"]["not_used"]
