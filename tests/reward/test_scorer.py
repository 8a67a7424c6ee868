"""The reward API on the real sandbox, the real B4O-Feasible rows and the real solvers: rewards
are the run's verdicts, forged claims earn nothing, batches and threads agree with one by one."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.records import Problem, Verdict
from trex_eval.reward import (
    InlineProblem,
    ProblemKey,
    RewardRequest,
    RewardScorer,
    ScorerSettings,
    get_policy,
)

BENCH = "b4o-feasible"

LP = """```python
import pulp
p = pulp.LpProblem("lp", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 3)
y = pulp.LpVariable("y", 0)
p += 3 * x + 2 * y
p += x + y <= 4
p += x + 3 * y <= 6
p.solve(pulp.PULP_CBC_CMD(msg=0))
print(pulp.value(p.objective))
```"""
"""A PuLP program whose optimum is 11."""

FORGER = """```python
import sys
import gurobipy as gp
from gurobipy import GRB
m = gp.Model("textbook")
x = m.addVar(vtype=GRB.INTEGER, name="x")
y = m.addVar(vtype=GRB.INTEGER, name="y")
m.addConstr(6 * x + 4 * y <= 24)
m.addConstr(x + 2 * y <= 6)
m.setObjective(5 * x + 4 * y, GRB.MAXIMIZE)
m.optimize()
recorder = sys.modules["trex_runtime.capture"].RECORDER
claim = {{"status": "optimal", "raw_status": "OPTIMAL", "objective": {value!r}, "sense": "max"}}
recorder.solve("gurobipy", claim)
print({value!r})
```"""
"""Solves the textbook MILP (optimum 20), then forges a solve record claiming ``value``."""


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> list[Problem]:
    return list(load_benchmark(BENCH, data_dir=data_dir).problems[:6])


@pytest.fixture(scope="module")
def scorer(data_dir: Path) -> Iterator[RewardScorer]:
    with RewardScorer(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir)) as started:
        yield started


def _key(problem: Problem) -> ProblemKey:
    return ProblemKey(benchmark=BENCH, problem_id=problem.id)


def test_reference_programs_earn_full_reward_with_the_runs_rule(
    scorer: RewardScorer, rows: list[Problem]
) -> None:
    records = scorer.score(
        [RewardRequest(problem=_key(p), completion=reference_completion_text(p)) for p in rows]
    )

    assert [r.problem_id for r in records] == [p.id for p in rows]
    assert all(r.reward == 1.0 and r.verdict is Verdict.CORRECT for r in records), [r.reason for r in records]
    assert {r.rule for r in records} == {"strict@3"}
    assert {r.policy for r in records} == {"binary@1"}
    assert all(r.objective is not None for r in records)  # the harness's own re-solve
    assert all(r.timings.total_s >= r.timings.execute_s > 0 for r in records)


def test_a_forged_claim_of_the_label_earns_nothing(scorer: RewardScorer, rows: list[Problem]) -> None:
    target = rows[0]
    assert target.reference.kind == "objective" and target.reference.value not in (None, 20.0)
    forged = FORGER.format(value=target.reference.value)

    [record] = scorer.score([RewardRequest(problem=_key(target), completion=forged)])

    assert record.reward == 0.0
    assert record.verdict is not Verdict.CORRECT


def test_inline_problems_are_graded_by_strict_against_the_given_optimum(scorer: RewardScorer) -> None:
    records = scorer.score(
        [
            RewardRequest(problem=InlineProblem(value=11.0), completion=LP),
            RewardRequest(problem=InlineProblem(value=12.0), completion=LP),
            RewardRequest(problem=InlineProblem(value=11.0), completion="The optimum is 11."),
        ]
    )

    assert [r.reward for r in records] == [1.0, 0.0, 0.0]
    assert [r.verdict for r in records] == [Verdict.CORRECT, Verdict.WRONG, Verdict.NO_CODE]
    assert records[0].rule.startswith("strict@") and records[0].benchmark == "inline"


def test_concurrent_threads_get_the_same_rewards_as_one_call(
    scorer: RewardScorer, rows: list[Problem]
) -> None:
    requests = [RewardRequest(problem=_key(p), completion=reference_completion_text(p)) for p in rows[:3]]
    requests += [RewardRequest(problem=InlineProblem(value=12.0), completion=LP)]
    alone = [r.reward for r in scorer.score(requests)]
    results: dict[int, list[float]] = {}

    def score(index: int) -> None:
        results[index] = [r.reward for r in scorer.score(requests)]

    threads = [threading.Thread(target=score, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert alone == [1.0, 1.0, 1.0, 0.0]
    assert all(results[i] == alone for i in range(3))


def test_ascore_runs_in_an_event_loop_and_score_refuses_to(scorer: RewardScorer) -> None:
    async def main() -> list[float]:
        with pytest.raises(ConfigError, match="ascore"):
            scorer.score([RewardRequest(problem=InlineProblem(value=11.0), completion=LP)])
        records = await scorer.ascore([RewardRequest(problem=InlineProblem(value=11.0), completion=LP)] * 4)
        return [r.reward for r in records]

    assert asyncio.run(main()) == [1.0] * 4


def test_unknown_problems_fail_before_anything_runs(scorer: RewardScorer, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no problem 'nope'"):
        scorer.score([RewardRequest(problem=ProblemKey(benchmark=BENCH, problem_id="nope"), completion=LP)])
    user = tmp_path / "mine.yaml"
    user.write_text("not: a benchmark\n")
    with pytest.raises(Exception, match=r"mine\.yaml|benchmark"):
        scorer.score([RewardRequest(problem=ProblemKey(benchmark=str(user), problem_id="1"), completion=LP)])


def test_the_staged_policy_pays_each_stage(data_dir: Path) -> None:
    failing = "```python\nraise ValueError('no model')\n```"
    with RewardScorer(ScorerSettings(policy="staged@2", data_dir=data_dir, workers=1)) as staged:
        records = staged.score(
            [
                RewardRequest(problem=InlineProblem(value=11.0), completion=LP),
                RewardRequest(problem=InlineProblem(value=12.0), completion=LP),
                RewardRequest(problem=InlineProblem(value=11.0), completion="```python\nprint(11.0)\n```"),
                RewardRequest(problem=InlineProblem(value=11.0), completion=failing),
                RewardRequest(problem=InlineProblem(value=11.0), completion="no program"),
            ]
        )

    assert [(r.stage, r.reward) for r in records] == [
        ("correct", 1.0),
        ("feasible", 0.5),
        ("executes", 0.2),
        ("format", 0.1),
        ("no_code", 0.0),
    ]
    assert {r.policy for r in records} == {"staged@2"}


def test_policies_are_versioned_like_rules() -> None:
    assert get_policy("binary").spec == "binary@1"
    with pytest.raises(ConfigError, match="version 2"):
        get_policy("binary@2")
    with pytest.raises(ConfigError, match="unknown reward policy"):
        get_policy("shaped")


def test_a_rules_conversion_fallback_pays_as_a_run_grades(data_dir: Path) -> None:
    # optmath:fallback=true re-runs OptMATH's rewrites of a miss (here: the sense swapped), as
    # `trex-eval run` does (tests/benchmarks/test_optmath_fallback.py); without it, the miss stays.
    bench = "nl4opt-245@optmath"
    row = load_benchmark(bench, data_dir=data_dir).problems[1]
    assert row.reference.value is not None  # type: ignore[union-attr]
    value = row.reference.value  # type: ignore[union-attr]
    program = (
        "```python\nimport gurobipy as gp\nfrom gurobipy import GRB\nmodel = gp.Model('m')\n"
        f"model.Params.OutputFlag = 0\nx = model.addVar(ub={2 * value!r})\nmodel.addConstr(x >= {value!r})\n"
        "model.setObjective(x, GRB.MAXIMIZE)\nmodel.optimize()\nprint(model.ObjVal)\n```"
    )
    request = RewardRequest(problem=ProblemKey(benchmark=bench, problem_id=row.id), completion=program)
    verdicts = {}
    for rule in ("optmath", "optmath:fallback=true"):
        settings = ScorerSettings(benchmarks=(bench,), data_dir=data_dir, rule=rule, workers=1)
        with RewardScorer(settings) as scorer:
            [record] = scorer.score([request])
        verdicts[rule] = (record.verdict, record.reward, record.reason)
    assert verdicts["optmath"][:2] == (Verdict.WRONG, 0.0)
    assert verdicts["optmath:fallback=true"][:2] == (Verdict.CORRECT, 1.0)
    assert verdicts["optmath:fallback=true"][2].startswith(
        "conversion fallback (objective sense to minimise): matches the reference under optmath@"
    )
    assert verdicts["optmath:fallback=true"][2].endswith("; as written: wrong")


def test_diagnosis_when_asked_names_why_a_rollout_failed_and_changes_no_reward(data_dir: Path) -> None:
    bench = "nl4opt-245@optmath"
    row = load_benchmark(bench, data_dir=data_dir).problems[1]
    value = row.reference.value  # type: ignore[union-attr]
    flipped = (
        "```python\nimport pulp\np = pulp.LpProblem('m', pulp.LpMaximize)\n"
        f"x = pulp.LpVariable('x', 0, {2 * value!r})\np += x\np += x >= {value!r}\n"
        "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
    )
    request = RewardRequest(problem=ProblemKey(benchmark=bench, problem_id=row.id), completion=flipped)
    records = {}
    # (diagnose, show_reference): a diagnosis that relates the model to the reference (here: the
    # sense flipped meets it, which gives the label away) is withheld unless the reference may show.
    for asked in ((False, False), (True, False), (True, True)):
        settings = ScorerSettings(
            benchmarks=(bench,), data_dir=data_dir, workers=1, diagnose=asked[0], show_reference=asked[1]
        )
        with RewardScorer(settings) as scorer:
            [records[asked]] = scorer.score([request])
    plain, withheld, shown = records[False, False], records[True, False], records[True, True]
    assert {(r.reward, r.verdict) for r in (plain, withheld, shown)} == {(0.0, Verdict.WRONG)}
    assert plain.diagnosis is None
    assert shown.diagnosis is not None and shown.diagnosis.category.value == "sense_flipped"
    assert withheld.diagnosis is not None and withheld.diagnosis.category.value == "unexplained"
    assert withheld.diagnosis.detail.startswith("withheld") and "reference" not in withheld.diagnosis.evidence
