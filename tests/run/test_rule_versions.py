"""A stored run graded under a rule version this trex-eval no longer implements (issue 28:
``strict@1`` graded the program's claim, ``strict@3`` grades the harness's re-solve): it still
reads, is neither continued nor re-graded under its outdated rule, and re-grades under the
current one from its stored executions. A real run of the ``reference`` model, in the real
sandbox, whose records are then rewritten to say what such a run said."""

from __future__ import annotations

from pathlib import Path

import pytest

from trex_eval.backends.presets import load_presets, resolve_preset
from trex_eval.errors import ConfigError, StoreError
from trex_eval.report import compare_runs, load_run, render_comparison_markdown, summarize
from trex_eval.run import pipeline, regrade
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore


@pytest.fixture(scope="module")
def old_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """Two NL4OPT problems answered by the reference model, recorded as graded under strict@1."""
    run_dir = tmp_path_factory.mktemp("rule-versions") / "old"
    spec = RunSpec(model=resolve_preset("reference", presets=load_presets()), benchmarks=("nl4opt",), limit=2)
    pipeline.run(spec, RunOptions(data_dir=data_dir, out=run_dir, show_progress=False))
    for name in ("manifest.json", "samples.jsonl"):
        path = run_dir / name
        path.write_text(path.read_text().replace('"strict@3"', '"strict@1"'))
    return run_dir


def test_it_still_reads(old_run: Path) -> None:
    records = list(RunStore(old_run).iter_samples())
    assert len(records) == 2 and {record.grade.rule for record in records} == {"strict@1"}
    store = RunStore(old_run)
    (benchmark,) = summarize(store.read_manifest(), store.iter_samples()).benchmarks
    assert (benchmark.rule, benchmark.correct_samples) == ("strict@1", 2)


def test_it_is_not_continued_under_the_new_version(old_run: Path) -> None:
    with pytest.raises(
        StoreError, match="graded nl4opt under strict@1; this trex-eval implements strict@3"
    ) as raised:
        pipeline.resume_spec(old_run)
    assert f"trex-eval grade {old_run} --rule strict@3 --out NEW_DIR" in (raised.value.hint or "")


def test_it_is_re_graded_under_the_rule_named(old_run: Path, data_dir: Path, tmp_path: Path) -> None:
    fields = regrade.CompletionFields()
    with pytest.raises(
        ConfigError, match="under strict@1, which this trex-eval no longer implements"
    ) as raised:
        regrade.plan_regrade(old_run, data_dir=data_dir, rules=(), protocol="default", fields=fields)
    assert "--rule strict@3" in (raised.value.hint or "")

    plan = regrade.plan_regrade(
        old_run, data_dir=data_dir, rules=("strict",), protocol="default", fields=fields, out=tmp_path / "new"
    )
    (result,) = regrade.run_regrade(plan)
    assert result.summary.benchmarks[0].rule == "strict@3"
    records = list(RunStore(result.run_dir).iter_samples())
    assert len(records) == 2 and all(record.grade.passed for record in records)
    # A comparison of the two says that the rule changed between them.
    markdown = render_comparison_markdown(compare_runs([load_run(old_run), load_run(result.run_dir)]))
    assert "graded under different rules (baseline strict@1, candidate strict@3)" in markdown
