"""The reward log as run directories: rollouts scored by the real server (``serve --out``) or the
real scorer land as samples of epoch run directories, which ``leaderboard`` and ``compare`` read
like any run; a continued log keeps its slots; a log written with other settings is refused."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reward.test_server import BENCH, LP, SLEEPER, _score, _start, _stop
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import StoreError
from trex_eval.records import Verdict
from trex_eval.report.runs import load_run
from trex_eval.reward import RewardRequest, RewardScorer, ScorerSettings
from trex_eval.reward.records import InlineProblem
from trex_eval.reward.runlog import LoggedRollout, RewardRunLog
from trex_eval.store import RunStore


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trex_eval", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_served_rollouts_become_runs_that_leaderboard_and_compare_read(
    tmp_path: Path, data_dir: Path
) -> None:
    out = tmp_path / "rollouts"
    rows = load_benchmark(BENCH, data_dir=data_dir).problems[:2]
    right = reference_completion_text(rows[0])
    key = {"benchmark": BENCH, "problem_id": rows[0].id}
    server = _start(tmp_path, "--data-dir", str(data_dir), "--out", str(out), "--per-problem", "2")
    try:
        first = _score(
            server,
            [
                {"problem": key, "completion": right, "prompt": "Solve problem 0."},
                {"problem": key, "completion": "no program"},
                {"problem": key, "completion": right},  # a third rollout: the second epoch
                {
                    "problem": {"benchmark": BENCH, "problem_id": rows[1].id},
                    "completion": reference_completion_text(rows[1]),
                    "prompt": [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "1"}],
                },
                {"problem": {"problem_id": "lp", "value": 11}, "completion": LP},
            ],
        )
        late = _score(
            server,
            [{"problem": {"problem_id": "lp", "value": 11}, "completion": SLEEPER.format(seconds=30)}],
            deadline_s=1,
        )
    finally:
        code = _stop(server)

    assert code == 0
    assert first.status_code == 200 and late.status_code == 200, (first.text, late.text)
    assert [r["verdict"] for r in first.json()["records"]] == [
        "correct",
        "no_code",
        "correct",
        "correct",
        "correct",
    ]
    epochs = sorted(path.name for path in out.iterdir())
    assert epochs == ["epoch-0001", "epoch-0002"]

    one, two = load_run(out / "epoch-0001"), load_run(out / "epoch-0002")
    bench_one = one.benchmark(rows[0].benchmark)
    assert bench_one.selected == 2 and bench_one.samples_per_problem == 2
    by_id = {problem.problem_id: problem for problem in bench_one.problems}
    assert by_id[rows[0].id].correct == (True, False)
    assert by_id[rows[1].id].correct == (True, False)  # its second slot was never filled: missing
    inline = one.benchmark("inline").problems[0]
    assert [s.grade.verdict if s else None for s in inline.samples] == [Verdict.CORRECT, Verdict.NOT_RUN]
    assert two.benchmark(rows[0].benchmark).problems[0].correct == (True, False)

    stored = {(s.problem_id, s.sample_index): s for s in RunStore(out / "epoch-0001").iter_samples()}
    sample = stored[(rows[0].id, 0)]
    assert [m.content for m in sample.prompt.messages] == ["Solve problem 0."]
    assert sample.program.code and sample.execution.status.value == "ok"
    assert sample.grade.rule == "strict@3" and sample.grade.verdict is Verdict.CORRECT
    assert [m.role for m in stored[(rows[1].id, 0)].prompt.messages] == ["system", "user"]
    assert stored[(rows[0].id, 1)].grade.verdict is Verdict.NO_CODE
    summary = json.loads((out / "epoch-0001" / "summary.json").read_text())
    assert summary["run"]["run_id"].endswith("epoch-0001")
    assert (
        one.manifest.finished_at is not None and one.manifest.settings.model.options["policy"] == "binary@1"
    )

    board = _cli(
        "leaderboard", str(out / "epoch-0001"), str(out / "epoch-0002"), "--out", str(tmp_path / "board.md")
    )
    assert board.returncode == 0, board.stderr
    compared = _cli("compare", str(out / "epoch-0001"), str(out / "epoch-0002"), "--common")
    assert compared.returncode == 0, compared.stderr
    assert "common" in compared.stdout + compared.stderr
    regraded = _cli("grade", str(out / "epoch-0001"), "--diagnose", "--out", str(tmp_path / "again"))
    assert regraded.returncode == 2 and "reward log" in regraded.stderr and "--diagnose" in regraded.stderr

    # Continued: the next rollout of problem 0 takes epoch 2's free slot; other settings are refused.
    again = _start(tmp_path, "--data-dir", str(data_dir), "--out", str(out), "--per-problem", "2")
    try:
        assert _score(again, [{"problem": key, "completion": "still no program"}]).status_code == 200
    finally:
        assert _stop(again) == 0
    assert sorted(path.name for path in out.iterdir()) == ["epoch-0001", "epoch-0002"]
    problem = load_run(out / "epoch-0002").benchmark(rows[0].benchmark).problems[0]
    assert [s.grade.verdict for s in problem.samples if s] == [Verdict.CORRECT, Verdict.NO_CODE]

    refused = _cli("serve", "-b", BENCH, "--data-dir", str(data_dir), "--port", "0", "--out", str(out))
    assert refused.returncode != 0
    assert "other settings" in refused.stderr and "epoch-0001" in refused.stderr


@pytest.fixture(scope="module")
def scorer() -> Iterator[RewardScorer]:
    with RewardScorer(ScorerSettings(workers=1)) as started:
        yield started


def _rollouts(scorer: RewardScorer, problem_ids: list[str]) -> list[LoggedRollout]:
    requests = [
        RewardRequest(problem=InlineProblem(problem_id=p, value=11), completion=LP) for p in problem_ids
    ]
    targets = [scorer.target(request.problem) for request in requests]

    async def scored() -> list[LoggedRollout]:
        return [
            LoggedRollout(target, request, await scorer.score_rollout(target, request.completion))
            for target, request in zip(targets, requests, strict=True)
        ]

    return asyncio.run(scored())


def test_each_rollout_takes_the_earliest_free_slot_and_a_reopened_log_keeps_counting(
    tmp_path: Path, scorer: RewardScorer
) -> None:
    # Epoch boundaries overlap in an asynchronous trainer: b's first group arrives after a's second.
    items = _rollouts(scorer, ["a", "a", "a", "b", "a", "b"])
    with RewardRunLog(tmp_path, per_problem=2, policy="binary@1", protocol="default") as log:
        log.append(items[:3])
        log.append(items[3:])
        assert [path.name for path in log.epochs] == ["epoch-0001", "epoch-0002"]

    def slots(epoch: str) -> list[tuple[str, int]]:
        return sorted((s.problem_id, s.sample_index) for s in RunStore(tmp_path / epoch).iter_samples())

    assert slots("epoch-0001") == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert slots("epoch-0002") == [("a", 0), ("a", 1)]

    with RewardRunLog(tmp_path, per_problem=2, policy="binary@1", protocol="default") as log:
        log.append(_rollouts(scorer, ["b", "a"]))
    assert slots("epoch-0002") == [("a", 0), ("a", 1), ("b", 0)]
    assert slots("epoch-0003") == [("a", 0)]
    assert load_run(tmp_path / "epoch-0003").benchmark("inline").selected == 1

    with pytest.raises(StoreError, match="other settings"):
        RewardRunLog(tmp_path, per_problem=4, policy="binary@1", protocol="default").open()


def test_a_log_already_holding_a_benchmark_under_another_rule_is_refused(
    tmp_path: Path, data_dir: Path
) -> None:
    with RewardScorer(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir, workers=1)) as strict:
        row = load_benchmark(BENCH, data_dir=data_dir).problems[0]
        request = RewardRequest(problem={"benchmark": BENCH, "problem_id": row.id}, completion="none")  # type: ignore[arg-type]
        target = strict.target(request.problem)
        rollout = asyncio.run(strict.score_rollout(target, request.completion))
        with RewardRunLog(tmp_path, per_problem=1, policy="binary@1", protocol="default") as log:
            log.append([LoggedRollout(target, request, rollout)])
    loose = RewardScorer(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir, rule="orthought", workers=1))
    loose.catalogue.open()
    log = RewardRunLog(tmp_path, per_problem=1, policy="binary@1", protocol="default").open()
    try:
        with pytest.raises(StoreError, match="rule"):
            log.check(loose.catalogue.plans())
        log.check(strict.catalogue.plans())
    finally:
        log.close()


def test_a_failed_write_leaves_the_log_as_its_files_say_and_a_closed_log_refuses(
    tmp_path: Path, scorer: RewardScorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = RewardRunLog(tmp_path, per_problem=2, policy="binary@1", protocol="default").open()
    log.append(_rollouts(scorer, ["a"]))
    real = RunStore.write_manifest

    def full_disk(store: RunStore, manifest: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunStore, "write_manifest", full_disk)
    with pytest.raises(OSError):
        log.append(_rollouts(scorer, ["b"]))  # a new problem: its manifest write fails
    monkeypatch.setattr(RunStore, "write_manifest", real)
    log.append(_rollouts(scorer, ["b", "a"]))  # nothing of the failed batch was counted
    log.close()
    run = load_run(tmp_path / "epoch-0001")  # every stored sample is one its manifest selects
    slots = {p.problem_id: [s.sample_index for s in p.samples if s] for p in run.benchmark("inline").problems}
    assert slots == {"a": [0, 1], "b": [0]}
    with pytest.raises(StoreError, match="closed"):
        log.append(_rollouts(scorer, ["a"]))


def test_reopening_repairs_a_manifest_a_crash_left_behind_its_samples(
    tmp_path: Path, scorer: RewardScorer
) -> None:
    with RewardRunLog(tmp_path, per_problem=2, policy="binary@1", protocol="default") as log:
        log.append(_rollouts(scorer, ["a"]))
    epoch = tmp_path / "epoch-0001"
    stale = (epoch / "manifest.json").read_text()
    with RewardRunLog(tmp_path, per_problem=2, policy="binary@1", protocol="default") as log:
        log.append(_rollouts(scorer, ["b"]))
    (epoch / "manifest.json").write_text(stale)  # as if the process died before its manifest write
    with pytest.raises(StoreError):
        load_run(epoch)
    RewardRunLog(tmp_path, per_problem=2, policy="binary@1", protocol="default").open().close()
    assert {p.problem_id for p in load_run(epoch).benchmark("inline").problems} == {"a", "b"}


def test_rollouts_graded_under_another_rule_are_refused_one_by_one(
    tmp_path: Path, scorer: RewardScorer
) -> None:
    with RewardRunLog(tmp_path, per_problem=4, policy="binary@1", protocol="default") as log:
        log.append(_rollouts(scorer, ["a"]))
    with RewardScorer(ScorerSettings(workers=1, rule="orthought")) as other:
        mixed = _rollouts(other, ["a"]) + _rollouts(scorer, ["a"])
    with RewardRunLog(tmp_path, per_problem=4, policy="binary@1", protocol="default") as log:
        with pytest.raises(StoreError, match="orthought"):
            log.check([], inline_rule="orthought@3")
        refused = log.append(mixed)
    assert len(refused) == 1 and "orthought" in refused[0]
    stored = [s for s in RunStore(tmp_path / "epoch-0001").iter_samples()]
    assert {s.grade.rule for s in stored} == {"strict@3"} and len(stored) == 2
