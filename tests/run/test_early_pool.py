"""The sandbox pool starts while the run loads its data and plans (issue 44): the pipeline starts
it from the benchmarks' YAML files alone, hiding exactly the folders the session would hide, and
the session adopts it; one that hides other folders is closed and replaced, never used."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.loading import source_root
from trex_eval.errors import SandboxError
from trex_eval.records import SamplingParams
from trex_eval.run import pipeline
from trex_eval.run.prepare import prepare_benchmarks, run_settings
from trex_eval.run.session import EarlyPool, Session, hidden_folders, pool_lanes
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunManifest, RunStore

REFERENCE = BackendSpec(name="reference", backend="reference", model="reference", sampling=SamplingParams())


@pytest.mark.parametrize("name", ["nl4opt", "optibench", "b4o-feasible", "b4o-orgeval"])
def test_the_source_root_known_before_loading_is_the_loaded_root(name: str, data_dir: Path) -> None:
    assert source_root(name, data_dir=data_dir) == load_benchmark(name, data_dir=data_dir).root


def _session(spec: RunSpec, options: RunOptions, early: EarlyPool | None) -> Session:
    assert options.out is not None
    prepared = prepare_benchmarks(spec, data_dir=options.data_dir)
    manifest = RunManifest(
        run_id=options.out.name, created_at="2026-12-07T00:00:00+00:00", settings=run_settings(spec, prepared)
    )
    return Session(spec, options, prepared, RunStore.create(options.out, manifest), early=early)


def test_the_session_adopts_the_pool_started_while_its_data_loaded(tmp_path: Path, data_dir: Path) -> None:
    spec = RunSpec(model=REFERENCE, benchmarks=("nl4opt",), limit=1)
    options = RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False)
    early = pipeline.early_pool(spec, options, tmp_path / "run")
    assert early is not None
    session = _session(spec, options, early)
    try:
        assert session.pool is early.pool
        assert early.pool.workers == 1  # one sample: one lane of the default two
        expected = hidden_folders(session.store.root, [item.bench.root for item in session.prepared], options)
        assert early.hidden == expected
        assert {os.path.realpath(tmp_path), os.path.realpath(data_dir)} <= set(early.pool.hidden)
        asyncio.run(session.execute())
    finally:
        session.store.close()
    assert session.graded_now == 1 and session.executed_now == 1
    with pytest.raises(SandboxError, match="closed"):
        _ = early.pool.isolation  # closed with the session


def test_a_pool_hiding_other_folders_is_closed_and_replaced(tmp_path: Path, data_dir: Path) -> None:
    spec = RunSpec(model=REFERENCE, benchmarks=("nl4opt",), limit=1)
    options = RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    early = EarlyPool(options, (str(elsewhere),))
    session = _session(spec, options, early)
    try:
        assert session.pool is not early.pool and session.early is None
        assert os.path.realpath(data_dir) in session.pool.hidden
        with pytest.raises(SandboxError, match="closed"):
            _ = early.pool.isolation
        asyncio.run(session.execute())
    finally:
        session.store.close()
    assert session.graded_now == 1


def test_no_early_pool_where_the_session_may_not_start_one(tmp_path: Path, data_dir: Path) -> None:
    spec = RunSpec(model=REFERENCE, benchmarks=("nl4opt",), limit=1)
    reused = RunOptions(data_dir=data_dir, out=tmp_path / "run", reuse_executions=tmp_path / "old")
    unknown = RunSpec(model=REFERENCE, benchmarks=("no-such-benchmark",), limit=1)
    plain = RunOptions(data_dir=data_dir, out=tmp_path / "run")

    assert pipeline.early_pool(spec, reused, tmp_path / "run") is None
    assert pipeline.early_pool(unknown, plain, tmp_path / "run") is None


def test_a_run_whose_claims_certificates_settle_starts_no_verifier_process(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verifier process starts at the first claim that needs a re-solve, not with the run: the
    first two NL4OPT reference programs are LPs whose optimality certificates hold, so the run
    verifies both passes without one (a start is ~0.25 CPU s of a short run's fixed cost)."""
    from trex_eval.verify import lanes as lanes_module

    fresh = lanes_module.VerifierLanes()
    monkeypatch.setattr(lanes_module, "_LANES", fresh)
    spec = RunSpec(model=REFERENCE, benchmarks=("nl4opt",), limit=2)
    options = RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False, keep_records=True)
    try:
        result = pipeline.run(spec, options)
    finally:
        fresh.close()
    grades = [record.grade for record in result.records]
    assert len(grades) == 2 and all(grade.verdict.value == "correct" for grade in grades)
    # Every pass is still verified: by the harness's own certificate check.
    assert all(getattr(grade.evidence, "source", None) == "certified" for grade in grades)
    assert fresh.started == 0


def test_a_run_has_no_more_lanes_than_samples() -> None:
    options = RunOptions(workers=4)
    assert [pool_lanes(options, n) for n in (None, 0, 1, 3, 4, 9)] == [4, 1, 1, 3, 4, 4]
