"""One judge for every entry point: the same completions of B4O-Feasible, B4O-ORGEval and NL4OPT
are graded by a replayed run, by ``trex-eval grade`` of that run, by the reward API and by
``trex-eval serve``, all with diagnoses; every item gets the same verdict, rule, reason and
diagnosis category from each. Among them are failures only the reference program's model explains
(a dropped B4O-Feasible row), which the reward side once left ``unexplained``. And a diagnosis
that fails keeps the grade as judged: the run goes on and logs it."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from cli_process import trex_eval

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.protocols.plan import EvaluationPlan
from trex_eval.records import DiagnosisCategory, SamplingParams, Verdict
from trex_eval.reward import InlineProblem, ProblemKey, RewardRequest, RewardScorer, ScorerSettings
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

CONSTRAINT = re.compile(r"^(\s*)\w+\.addConstr\(.*\)\s*$", re.M)
NO_CODE = "I would model this as a linear programme; the optimum is 42."
ELEVEN = (
    "```python\nimport pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
)
"""A PuLP program whose optimum is 11: a wrong answer to the NL4OPT problem it is given for."""
CRASH = "```python\nimport gurobipy as gp\nm = gp.Model()\nm.optimize()\nraise RuntimeError('oops')\n```"

Item = tuple[str, str]
"""(benchmark, problem id)."""


def _without_first_constraint(text: str) -> str:
    for match in CONSTRAINT.finditer(text):
        if match.group(0).count("(") == match.group(0).count(")"):
            return text[: match.start()] + f"{match.group(1)}pass" + text[match.end() :]
    raise AssertionError("no one-line constraint to drop")


def _completions(data_dir: Path) -> dict[Item, str]:
    feasible = {p.id: p for p in load_benchmark("b4o-feasible", data_dir=data_dir).problems[:14]}
    orgeval = load_benchmark("b4o-orgeval", data_dir=data_dir).problems[:3]
    nl4opt = load_benchmark("nl4opt", data_dir=data_dir).problems[:3]
    texts: dict[Item, str] = {
        ("b4o-feasible", "BENCH4OPT_2"): reference_completion_text(feasible["BENCH4OPT_2"]),
        ("b4o-feasible", "BENCH4OPT_3"): NO_CODE,
        ("b4o-feasible", "BENCH4OPT_4"): CRASH,
        ("b4o-orgeval", orgeval[0].id): reference_completion_text(orgeval[0]),
        ("b4o-orgeval", orgeval[1].id): _without_first_constraint(reference_completion_text(orgeval[1])),
        ("b4o-orgeval", orgeval[2].id): NO_CODE,
        ("nl4opt", nl4opt[0].id): reference_completion_text(nl4opt[0]),
        ("nl4opt", nl4opt[1].id): ELEVEN,
        ("nl4opt", nl4opt[2].id): NO_CODE,
    }
    for dropped in ("BENCH4OPT_8", "BENCH4OPT_12"):  # explained by the reference program's model only
        texts["b4o-feasible", dropped] = _without_first_constraint(
            reference_completion_text(feasible[dropped])
        )
    return texts


Outcome = tuple[Verdict, str, str, DiagnosisCategory | None]
"""What must agree: verdict, rule, reason, diagnosis category."""


def _by_run(completions: dict[Item, str], tmp_path: Path, data_dir: Path) -> tuple[Path, dict[Item, Outcome]]:
    recorded = tmp_path / "completions.jsonl"
    recorded.write_text(
        "".join(
            json.dumps({"benchmark": bench, "problem_id": pid, "completion": text}) + "\n"
            for (bench, pid), text in completions.items()
        )
    )
    model = BackendSpec(
        name="parity",
        backend="replay",
        model="parity",
        options={"path": str(recorded)},
        sampling=SamplingParams(),
    )
    ids: dict[str, list[str]] = {}
    for bench, pid in completions:
        ids.setdefault(bench, []).append(pid)
    result = pipeline.run(
        RunSpec(
            model=model,
            benchmarks=tuple(ids),
            problem_ids={bench: tuple(chosen) for bench, chosen in ids.items()},
        ),
        RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False, diagnose=True),
    )
    return result.run_dir, _stored(result.run_dir)


def _stored(run_dir: Path) -> dict[Item, Outcome]:
    return {
        (s.benchmark, s.problem_id): (
            s.grade.verdict,
            s.grade.rule,
            s.grade.reason,
            None if s.grade.diagnosis is None else s.grade.diagnosis.category,
        )
        for s in RunStore(run_dir).iter_samples()
    }


def _by_scorer(completions: dict[Item, str], data_dir: Path) -> dict[Item, Outcome]:
    # The judge is compared, so the reward side shows what its records otherwise withhold (the
    # label in reasons, reference-derived diagnoses): tests/reward/test_label_free.py covers that.
    settings = ScorerSettings(
        benchmarks=tuple(dict.fromkeys(b for b, _ in completions)),
        data_dir=data_dir,
        diagnose=True,
        show_reference=True,
    )
    requests = [
        RewardRequest(problem=ProblemKey(benchmark=bench, problem_id=pid), completion=text)
        for (bench, pid), text in completions.items()
    ]
    with RewardScorer(settings) as scorer:
        records = scorer.score(requests)
    return {
        (r.benchmark, r.problem_id): (
            r.verdict,
            r.rule,
            r.reason,
            None if r.diagnosis is None else r.diagnosis.category,
        )
        for r in records
    }


@pytest.fixture
def server(tmp_path: Path, data_dir: Path) -> Iterator[str]:
    benchmarks = ("-b", "b4o-feasible", "-b", "b4o-orgeval", "-b", "nl4opt")
    process = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "serve", *benchmarks, "--diagnose", "--show-reference",
         "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert process.stdout is not None
    found = re.search(r"http://127\.0\.0\.1:(\d+)", process.stdout.readline())
    try:
        assert found is not None, process.stderr and process.stderr.read()[-2000:]
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()


def _by_server(completions: dict[Item, str], url: str) -> dict[Item, Outcome]:
    items = [
        {"problem": {"benchmark": bench, "problem_id": pid}, "completion": text}
        for (bench, pid), text in completions.items()
    ]
    answer = httpx.post(f"{url}/v1/score", json={"requests": items}, timeout=180)
    assert answer.status_code == 200, answer.text
    return {
        (r["benchmark"], r["problem_id"]): (
            Verdict(r["verdict"]),
            r["rule"],
            r["reason"],
            None if r["diagnosis"] is None else DiagnosisCategory(r["diagnosis"]["category"]),
        )
        for r in answer.json()["records"]
    }


def test_run_grade_reward_api_and_serve_judge_every_item_alike(
    tmp_path: Path, data_dir: Path, server: str
) -> None:
    completions = _completions(data_dir)
    run_dir, by_run = _by_run(completions, tmp_path, data_dir)
    trex_eval(
        "grade", str(run_dir), "--diagnose", "--no-progress", "--out", str(tmp_path / "graded"),
        "--data-dir", str(data_dir), timeout=300,
    )  # fmt: skip
    by_grade = _stored(tmp_path / "graded")
    by_scorer = _by_scorer(completions, data_dir)
    by_server = _by_server(completions, server)

    assert set(by_run) == set(completions)
    for item, outcome in by_run.items():
        assert by_grade[item] == outcome, item
        assert by_scorer[item] == outcome, item
        assert by_server[item] == outcome, item
    verdicts = {item: outcome[0] for item, outcome in by_run.items()}
    assert verdicts["b4o-feasible", "BENCH4OPT_2"] is Verdict.CORRECT
    assert verdicts["b4o-feasible", "BENCH4OPT_3"] is Verdict.NO_CODE
    assert verdicts["b4o-feasible", "BENCH4OPT_4"] is Verdict.RUNTIME_ERROR
    # Only the reference program's model names the dropped row: the parity the reward side lacked.
    for dropped in ("BENCH4OPT_8", "BENCH4OPT_12"):
        assert by_run["b4o-feasible", dropped][::3] == (Verdict.WRONG, DiagnosisCategory.CONSTRAINT_MISSING)
    failing = [outcome for outcome in by_run.values() if outcome[0] is not Verdict.CORRECT]
    assert len(failing) >= 7 and all(outcome[3] is not None for outcome in failing)


def test_a_diagnosis_that_fails_keeps_the_grade_and_is_logged(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a diagnosis bug")

    # The harness's own bug, injected: before one judge, a run ended on it (the scorer went on).
    monkeypatch.setattr(EvaluationPlan, "diagnosed", broken)
    problem = load_benchmark("b4o-feasible", data_dir=data_dir).problems[8]
    completions = {
        ("b4o-feasible", problem.id): _without_first_constraint(reference_completion_text(problem))
    }
    with caplog.at_level(logging.ERROR, logger="trex_eval.judge"):
        _, by_run = _by_run(completions, tmp_path, data_dir)

    assert by_run == {
        ("b4o-feasible", problem.id): (Verdict.WRONG, "strict@3", by_run["b4o-feasible", problem.id][2], None)
    }
    assert any("diagnosis" in r.getMessage() and problem.id in r.getMessage() for r in caplog.records)


def test_the_scorer_diagnoses_inline_problems_and_shares_reference_models_across_threads(
    data_dir: Path,
) -> None:
    problem = load_benchmark("b4o-feasible", data_dir=data_dir).problems[4]  # BENCH4OPT_8
    dropped = RewardRequest(
        problem=ProblemKey(benchmark="b4o-feasible", problem_id=problem.id),
        completion=_without_first_constraint(reference_completion_text(problem)),
    )
    inline = RewardRequest(problem=InlineProblem(value=110.0), completion=ELEVEN)
    settings = ScorerSettings(
        benchmarks=("b4o-feasible",), data_dir=data_dir, diagnose=True, show_reference=True
    )
    with RewardScorer(settings) as scorer, ThreadPoolExecutor(2) as threads:
        # Two calls at once: two event loops, one reference program's capture each may await.
        batches = list(threads.map(lambda _: scorer.score([dropped, inline]), range(2)))

    for rollout, row in batches:
        assert (
            rollout.diagnosis is not None
            and rollout.diagnosis.category is DiagnosisCategory.CONSTRAINT_MISSING
        )
        # An inline problem has a plan like any row: graded by strict, diagnosed like one.
        assert (row.benchmark, row.verdict, row.rule) == ("inline", Verdict.WRONG, "strict@3")
        assert row.diagnosis is not None and row.diagnosis.category is DiagnosisCategory.OBJECTIVE_SCALED
