"""The run directory: append-only records, torn tails, locking, old manifests, odd text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trex_eval.backends.base import BackendSpec
from trex_eval.errors import StoreError
from trex_eval.records import ChatMessage, Completion, GraderKind, Prompt
from trex_eval.store import (
    COMPLETIONS,
    MANIFEST,
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
        rule="strict@2",
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
    RunStore.open(tmp_path / "run").close()
    with pytest.raises(StoreError, match="already holds a run"):
        RunStore.create(tmp_path / "run", _manifest())


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
