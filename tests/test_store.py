"""The run directory: append-only records, torn tails, locking, old manifests, odd text, the record
budget and the harness-failure record (issue 28)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from trex_eval.backends.base import BackendSpec
from trex_eval.errors import StoreError
from trex_eval.records import (
    ChatMessage,
    Completion,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    Program,
    Prompt,
    RepairRound,
    SampleRecord,
    Verdict,
    WrittenFile,
)
from trex_eval.store import (
    COMPLETIONS,
    MANIFEST,
    SAMPLES,
    BenchmarkEntry,
    CompletionLine,
    RunManifest,
    RunSettings,
    RunStore,
)


def _manifest() -> RunManifest:
    entry = BenchmarkEntry(
        name="nl4opt",
        source="nl4opt",
        title="NL4OPT",
        version=1,
        sha256="ab",
        problems=2,
        grader=GraderKind.OBJECTIVE,
        rule="strict@3",
        extractor="default",
        prompt_set="t-rex",
        template_sha256="cd",
    )
    settings = RunSettings(
        model=BackendSpec(name="m", backend="reference"),
        sampling=BackendSpec(name="m", backend="x").sampling,
        benchmarks=(entry,),
    )
    return RunManifest(run_id="r", created_at="2026-11-29T00:00:00+00:00", settings=settings)


def _line(problem: str, text: str) -> CompletionLine:
    prompt = Prompt(
        problem_id=problem,
        prompt_set="t-rex",
        messages=(ChatMessage(role="user", content="q"),),
        template_sha256="x",
    )
    return CompletionLine(
        benchmark="nl4opt",
        prompt=prompt,
        completion=Completion(problem_id=problem, sample_index=0, text=text),
    )


def test_torn_tail_is_cut_on_open_and_ignored_by_readers(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", _manifest())
    store.append_completion(_line("0", "first"))
    store.close()
    path = tmp_path / "run" / COMPLETIONS
    with path.open("a") as handle:
        handle.write('{"benchmark": "nl4opt", "prompt": {')  # a writer killed mid-line
    assert [line.completion.text for line in RunStore(tmp_path / "run").iter_completions()] == ["first"]
    reopened = RunStore.open(tmp_path / "run")
    reopened.append_completion(_line("1", "second"))
    reopened.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x) for x in lines)


def test_a_second_writer_is_refused_while_the_first_holds_the_run(tmp_path: Path) -> None:
    first = RunStore.create(tmp_path / "run", _manifest())
    with pytest.raises(StoreError, match="another trex-eval process is writing"):
        RunStore.open(tmp_path / "run")
    first.close()
    assert not (tmp_path / "run" / ".lock").exists()  # a closed run keeps no empty lock file
    RunStore.open(tmp_path / "run").close()
    with pytest.raises(StoreError, match="already holds a run"):
        RunStore.create(tmp_path / "run", _manifest())


def test_a_lock_on_a_removed_lock_file_is_taken_again_on_the_new_one(tmp_path: Path) -> None:
    first = RunStore.create(tmp_path / "run", _manifest())
    first.close()
    stale = (tmp_path / "run" / ".lock").open("a")  # opened the file a closing writer then removed
    (tmp_path / "run" / ".lock").unlink(missing_ok=True)
    try:
        second = RunStore.open(tmp_path / "run")
        with pytest.raises(StoreError, match="another trex-eval process is writing"):
            RunStore.open(tmp_path / "run")
        second.close()
    finally:
        stale.close()


def test_a_lone_surrogate_from_a_server_is_stored_not_fatal(tmp_path: Path) -> None:
    text = json.loads('"x = 1  # \\ud800 broken"')
    store = RunStore.create(tmp_path / "run", _manifest())
    store.append_completion(_line("0", text))
    store.close()
    (stored,) = RunStore(tmp_path / "run").iter_completions()
    assert stored.completion.text.startswith("x = 1  # ") and "\ufffd" in stored.completion.text


def test_manifests_written_before_benchmark_sources_were_recorded_still_read(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", _manifest())
    store.close()
    raw = json.loads((tmp_path / "run" / MANIFEST).read_text())
    del raw["settings"]["benchmarks"][0]["source"]
    (tmp_path / "run" / MANIFEST).write_text(json.dumps(raw))
    (entry,) = RunStore(tmp_path / "run").read_manifest().settings.benchmarks
    assert entry.requested == "nl4opt"


def test_manifests_naming_the_gurobi_policy_compat_read_as_highs(tmp_path: Path) -> None:
    """``compat`` was the policy name of the gurobipy_highs layer: old runs still load and resume."""
    store = RunStore.create(tmp_path / "run", _manifest())
    store.close()
    raw = json.loads((tmp_path / "run" / MANIFEST).read_text())
    raw["settings"]["gurobi"] = "compat"
    (tmp_path / "run" / MANIFEST).write_text(json.dumps(raw))
    settings = RunStore(tmp_path / "run").read_manifest().settings
    assert settings.gurobi == "highs"
    assert settings == RunSettings.model_validate({**raw["settings"], "gurobi": "highs"})


def test_newer_major_schema_is_refused(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", _manifest())
    store.close()
    raw = json.loads((tmp_path / "run" / MANIFEST).read_text())
    raw["schema_version"] = "2.0"
    (tmp_path / "run" / MANIFEST).write_text(json.dumps(raw))
    with pytest.raises(StoreError, match=r"schema 2\.0"):
        RunStore(tmp_path / "run").read_manifest()


# --------------------------------------------------------------------------- issue 28: storing never fails


def _sample(problem: str, *, rounds: int = 0, file_bytes: int = 0, tail: str = "") -> SampleRecord:
    """A graded sample whose every execution wrote an earlier and a last model file of
    ``file_bytes`` control bytes each (stored as U+FFFD: three bytes), with ``tail`` as stdout."""
    prompt = Prompt(
        problem_id=problem,
        prompt_set="t-rex",
        messages=(ChatMessage(role="user", content="q"),),
        template_sha256="x",
    )
    files = tuple(
        WrittenFile(name=name, content="Minimize\n obj: x\nEnd\n" + "\x01" * file_bytes, sha256="0")
        for name in ("first.lp", "model.lp")
    )
    execution = Execution(status=ExecStatus.OK, written_files=files if file_bytes else (), stdout_tail=tail)
    completion = Completion(problem_id=problem, sample_index=0, text="```python\nprint(1)\n```")
    program = Program(code="print(1)", extractor="default", reason="fence")
    grade = Grade(verdict=Verdict.CORRECT, rule="orgeval-exact@2", reason="equivalent")
    repaired = tuple(
        RepairRound(
            round=number,
            failure="wrong",
            feedback="try again",
            completion=completion,
            program=program,
            execution=execution,
            grade=grade,
        )
        for number in range(1, rounds + 1)
    )
    return SampleRecord(
        benchmark="nl4opt",
        problem_id=problem,
        sample_index=0,
        prompt=prompt,
        completion=completion,
        program=program,
        execution=execution,
        grade=grade,
        rounds=repaired,
    )


def test_a_record_that_cannot_be_serialised_is_stored_as_a_harness_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A harness bug puts a lone surrogate where no record type cleans it (past validation, as
    ``model_copy`` does): the store writes a harness-failure record instead, logs it, and goes on."""
    good = _sample("0")
    bad = good.model_copy(
        update={"problem_id": "1", "prompt": good.prompt.model_copy(update={"prompt_set": "\udcff"})}
    )
    store = RunStore.create(tmp_path / "run", _manifest())
    with caplog.at_level(logging.ERROR, logger="trex_eval.store"):
        stored = store.append_sample(bad)
    assert store.append_sample(good) is good
    store.close()
    assert stored.grade.verdict is Verdict.HARNESS_ERROR and stored.key == bad.key
    assert stored.grade.reason.startswith(
        "the harness could not store this sample's record: PydanticSerializationError"
    )
    assert "stored as a harness failure" in caplog.text
    by_key = {record.problem_id: record for record in RunStore(tmp_path / "run").iter_samples()}
    assert by_key == {"1": stored, "0": good}


def test_the_record_budget_holds_for_the_encoded_line_cutting_what_the_grade_reads_last(
    tmp_path: Path,
) -> None:
    """Two repair rounds and the sample's own execution each wrote two 300 KiB files of control
    bytes (900 KiB stored each), with a 200 KiB stdout tail: 6.0 MiB against a 3 MiB budget. The
    earlier files go first, then the tails (their ends kept); each execution's last file, the one
    a grade reads, is kept whole."""
    record = _sample("0", rounds=2, file_bytes=300 << 10, tail="t" * (200 << 9) + "e" * (200 << 9))
    assert len(record.model_dump_json().encode()) > 5 << 20
    store = RunStore.create(tmp_path / "run", _manifest())
    stored = store.append_sample(record, max_bytes=3 << 20)
    store.close()
    (line,) = (tmp_path / "run" / SAMPLES).read_bytes().splitlines()
    assert len(line) <= 3 << 20
    (read,) = RunStore(tmp_path / "run").iter_samples()
    assert read == stored and read.grade == record.grade
    tails = []
    for execution in (read.execution, *(r.execution for r in read.rounds)):
        first, last = execution.written_files
        assert first.content == "" and last == record.execution.written_files[1]
        assert execution.detail.startswith(
            "stored record cut to its 3.0 MiB budget: first.lp content left out (900.0 KiB)"
        )
        tails.append(execution.stdout_tail)
    # The largest tails first, each dropped or cut to what is still over (its end kept).
    assert sum(map(len, tails)) < 3 * (200 << 10) and all(
        not tail or tail.endswith("e" * 1000) for tail in tails
    )
    assert any(0 < len(tail) < 200 << 10 for tail in tails)


def test_a_record_over_the_budget_with_everything_cut_is_a_harness_failure(tmp_path: Path) -> None:
    record = _sample("0", file_bytes=10).model_copy(update={"benchmark": "b" * (2 << 20)})
    store = RunStore.create(tmp_path / "run", _manifest())
    stored = store.append_sample(record, max_bytes=1 << 20)
    store.close()
    assert stored.grade.verdict is Verdict.HARNESS_ERROR and "OverBudget" in stored.grade.reason


def test_old_lines_with_odd_content_read_and_resume(tmp_path: Path) -> None:
    """Lines an older version wrote (NULs as six-byte escapes, names longer than the cap) and one
    another writer left with a lone-surrogate escape (not JSON to the strict parser): all read,
    cleaned, and the run reopens and appends."""
    store = RunStore.create(tmp_path / "run", _manifest())
    store.close()
    old = _sample("0").model_dump(mode="json")
    old["execution"].update(detail="\u0000" * 10, stdout_tail="a\u0001b")
    old["execution"]["bindings"] = [{"name": "v" * 500, "library": "l", "has_optimize": 0, "has_objval": 0}]
    foreign = _sample("1").model_dump(mode="json")
    foreign["execution"]["detail"] = "ValueError: \udcff"
    lines = [json.dumps(old, ensure_ascii=False), json.dumps(foreign)]
    assert "\\udcff" in lines[1]
    (tmp_path / "run" / SAMPLES).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    by_key = {record.problem_id: record for record in RunStore(tmp_path / "run").iter_samples()}
    assert by_key["0"].execution.detail == "\ufffd" * 10 and by_key["0"].execution.stdout_tail == "a\ufffdb"
    assert len(by_key["0"].execution.bindings[0].name) == 200
    assert by_key["1"].execution.detail == "ValueError: \ufffd"
    reopened = RunStore.open(tmp_path / "run")
    reopened.append_sample(_sample("2"))
    reopened.close()
    assert {record.problem_id for record in RunStore(tmp_path / "run").iter_samples()} == {"0", "1", "2"}


def test_a_write_that_fails_is_a_store_error_not_half_a_line(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    store = RunStore.create(tmp_path / "run", _manifest())
    (tmp_path / "run" / SAMPLES).symlink_to("/dev/full")
    with pytest.raises(StoreError, match=r"cannot write .*samples\.jsonl"):
        store.append_sample(_sample("0"))
    store.close()
