"""Reward policies as weighted terms, on the real sandbox, solvers and B4O-Feasible rows: binary and
staged pay what they paid before, no term pays a model that a trivial program builds, the SIRL
policy reproduces SIRL's own reward, and a reward log keeps the policy's terms."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError, StoreError
from trex_eval.records import ExecStatus, ObjectiveReference, Problem, SolveStatus, Verdict
from trex_eval.reward import InlineProblem, ProblemKey, RewardRequest, RewardScorer, ScorerSettings
from trex_eval.reward.catalogue import Target
from trex_eval.reward.policy import BINARY, STAGED, PolicySpec, get_policy
from trex_eval.reward.records import Rollout
from trex_eval.reward.runlog import LoggedRollout, RewardRunLog
from trex_eval.reward.terms import ExecutedTerm, FormatTerm, Graded, ObjectiveTerm
from trex_eval.store import RunStore

BENCH = "b4o-feasible"

MAX_X = (
    "```python\nimport gurobipy as gp\nm = gp.Model()\nx = m.addVar()\nm.addConstr(x <= 1)\n"
    "m.setObjective(x, gp.GRB.MAXIMIZE)\nm.optimize()\nprint(m.ObjVal)\n```"
)
"""``max x, x <= 1``: verified feasible on any problem, models none."""
TWO_VARS = (
    "```python\nimport pulp\np = pulp.LpProblem('t', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0)\n"
    "y = pulp.LpVariable('y', 0)\np += x + y\np += x + y <= 1\np.solve(pulp.PULP_CBC_CMD(msg=0))\n"
    "print(pulp.value(p.objective))\n```"
)
"""Two variables and a constraint, built of 0 and 1 alone."""
X_IS_ONE = (
    "```python\nimport gurobipy as gp\nm = gp.Model()\nx = m.addVar()\nm.addConstr(x == 1)\n"
    "m.optimize()\nprint(x.X)\n```"
)
PRINTS = "```python\nprint(1234.5)\n```"
RAISES = "```python\nraise ValueError('no model')\n```"
NO_CODE = "I would model this as a linear program."
TARGETS: dict[str, Target] = {}
"""The targets the ``scored`` fixture graded, by problem id."""
TRIVIAL = {"max_x": MAX_X, "two_vars": TWO_VARS, "x_is_one": X_IS_ONE, "prints": PRINTS}


def _shifted(problem: Problem) -> str:
    """The reference program with its objective moved by a constant larger than its optimum: a
    genuine model of the problem's data, verified feasible, graded wrong."""
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
    shift = abs(problem.reference.value) + 12.5
    text = reference_completion_text(problem)
    moved = rf"\1.ObjCon = \1.ObjCon + {shift!r}\n\1.optimize()"
    shifted, count = re.subn(r"(\w+)\.optimize\(\)", moved, text, count=1)
    assert count == 1
    return shifted


def _legacy_staged(rollout: Rollout) -> tuple[float, str]:
    """``staged@1`` as it was written before policies had terms (the stage table, no guard)."""
    if rollout.grade.verdict is Verdict.CORRECT:
        return 1.0, "correct"
    if rollout.program.code is None:
        return 0.0, "no_code"
    if rollout.execution.status not in (ExecStatus.OK, ExecStatus.NO_SOLVE):
        return 0.1, "format"
    solve = rollout.execution.last_solve
    if (
        rollout.grade.verdict is Verdict.WRONG
        and solve is not None
        and solve.verification == "match"
        and solve.status is SolveStatus.OPTIMAL
        and solve.verified_objective is not None
    ):
        return 0.5, "feasible"
    return 0.2, "executes"


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> list[Problem]:
    return list(load_benchmark(BENCH, data_dir=data_dir).problems[:3])


@pytest.fixture(scope="module")
def scored(data_dir: Path, rows: list[Problem]) -> Iterator[dict[tuple[str, str], Rollout]]:
    """Every rollout kind on every row, scored once by a ``staged@2`` scorer (which re-solves wrong
    claims), keyed by (problem id, kind); each row's target in :data:`TARGETS`."""
    kinds = {"reference": reference_completion_text, "shifted": _shifted}
    settings = ScorerSettings(policy="staged", benchmarks=(BENCH,), data_dir=data_dir, workers=2)
    with RewardScorer(settings) as scorer:

        async def all_rollouts() -> dict[tuple[str, str], Rollout]:
            jobs = {}
            for row in rows:
                target = TARGETS[row.id] = scorer.target(ProblemKey(benchmark=BENCH, problem_id=row.id))
                texts = {kind: make(row) for kind, make in kinds.items()}
                texts |= {**TRIVIAL, "raises": RAISES, "no_code": NO_CODE}
                for kind, text in texts.items():
                    jobs[(row.id, kind)] = scorer.score_rollout(target, text)
            done = await asyncio.gather(*jobs.values())
            return dict(zip(jobs, done, strict=True))

        yield asyncio.run(all_rollouts())


def _graded(rollout: Rollout, problem: Problem) -> Graded:
    ran = None if rollout.program.code is None else rollout.execution
    return Graded(
        problem=problem,
        text=rollout.completion.text,
        program=rollout.program,
        execution=ran,
        grade=rollout.grade,
    )


def test_binary_and_staged_pay_what_they_paid_before_on_real_rollouts(
    scored: dict[tuple[str, str], Rollout], rows: list[Problem]
) -> None:
    expected = {"reference": 1.0, "shifted": 0.5, "raises": 0.1, "prints": 0.2, "no_code": 0.0}
    for row in rows:
        for kind, reward in expected.items():
            rollout = scored[(row.id, kind)]
            record = rollout.record
            assert (record.reward, record.stage) == _legacy_staged(rollout) == (reward, record.stage), kind
            assert record.policy == "staged@2"
            assert [(t.name, t.weight) for t in record.terms] == [
                ("extracted", 0.1),
                ("executed", 0.2),
                ("feasible", 0.5),
                ("objective", 1.0),
            ]
            assert record.reward == max(t.value * t.weight for t in record.terms)
            binary = BINARY.pay(_graded(rollout, row))
            assert binary.reward == (1.0 if rollout.grade.verdict is Verdict.CORRECT else 0.0)
            assert [t.name for t in binary.terms] == ["objective"]


def test_no_term_pays_a_model_that_a_trivial_program_builds(
    scored: dict[tuple[str, str], Rollout], rows: list[Problem]
) -> None:
    for row in rows:
        for kind in ("reference", "shifted"):
            feasible = {t.name: t for t in scored[(row.id, kind)].record.terms}["feasible"]
            assert feasible.value == 1.0, (kind, feasible.detail)
        for kind in TRIVIAL:
            rollout = scored[(row.id, kind)]
            terms = {t.name: t for t in rollout.record.terms}
            assert terms["feasible"].value == 0.0, (kind, terms["feasible"].detail)
            assert rollout.record.reward == 0.2 and rollout.record.stage == "executes", kind
        # Without the guard, max x <= 1 was a verified feasible model: 0.5 under staged@1.
        assert _legacy_staged(scored[(row.id, "max_x")]) == (0.5, "feasible")
        assert (
            "trivial model: 1 variables"
            in {t.name: t for t in scored[(row.id, "max_x")].record.terms}["feasible"].detail
        )
        assert (
            "stated numbers"
            in {t.name: t for t in scored[(row.id, "two_vars")].record.terms}["feasible"].detail
        )


def _sirl_oracle(text: str, *, answer: bool, code: bool) -> float:
    """SIRL's ``compute_score`` for one rollout, transcribed from Cardinal-Operations/SIRL
    ``SIRLTrain/reward_func/batch_score_gurobi.py`` (commit 8caaad1): ``ans*1 + format*0.5 +
    code*1``, ``format_reward`` as written there."""
    minus = 0.0
    tags = {
        "think_start": ("<think>", 1),
        "think_end": ("</think>", 1),
        "model_start": ("<model", 1),
        "model_end": ("</model>", 1),
        "python_start": ("<python>", 1),
        "python_end": ("</python>", 1),
    }
    position = {}
    for name, (tag, expected) in tags.items():
        position[name] = text.find(tag)
        if text.count(tag) != expected:
            minus += 1 / 8 if "python" not in name else 1 / 4
    order = [position[k] for k in tags]
    if order[1] > min(order[2:5]):
        minus += 1 / 3
    if any(order[i] > order[i + 1] for i in range(0, 6, 2)):
        minus += 1 / 3
    if order[4] <= max(order[:4]):
        minus += 1 / 3
    return answer * 1.0 + (2 - minus) * 0.5 + code * 1.0


LP = (
    "import pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n"
)
"""Optimum 11."""


def _sirl_text(*, think: bool = True, model_first: bool = True, code: str = LP) -> str:
    parts = ["<think>read the problem</think>\n"] if think else []
    model = "<model>max 3x + 2y s.t. x + y <= 4, x + 3y <= 6</model>\n"
    program = f"<python>\n```python\n{code}```\n</python>\n"
    return "".join([*parts, *([model, program] if model_first else [program, model])])


def test_the_sirl_policy_reproduces_sirls_reward_term_by_term(data_dir: Path) -> None:
    cases = [  # (completion, label, SIRL's answer reward, SIRL's code reward)
        (_sirl_text(), 11.0, True, True),
        (_sirl_text(), 12.0, False, True),
        (_sirl_text(think=False), 11.0, True, True),
        (_sirl_text(model_first=False, code="raise ValueError('no model')\n"), 11.0, False, False),
        (f"```python\n{LP}```", 11.0, True, True),
    ]
    settings = ScorerSettings(policy="sirl", rule="sirl", data_dir=data_dir, workers=1)
    with RewardScorer(settings) as scorer:
        records = scorer.score(
            [
                RewardRequest(problem=InlineProblem(value=value), completion=text)
                for text, value, _, _ in cases
            ]
        )
    for record, (text, _, answer, code) in zip(records, cases, strict=True):
        terms = {t.name: t for t in record.terms}
        assert list(terms) == ["objective", "format", "executed"]
        assert terms["objective"].value == float(answer)
        assert terms["executed"].value == float(code)
        assert terms["format"].value * terms["format"].weight == pytest.approx(
            _sirl_oracle(text, answer=False, code=False)
        )
        assert record.reward == pytest.approx(_sirl_oracle(text, answer=answer, code=code))
        assert record.policy == "sirl@1"
    assert [round(r.reward or 0.0, 6) for r in records] == [
        3.0,
        2.0,
        2.875,
        round(5 / 6, 6),
        round(1 + 1 / 3 + 1, 6),
    ]


SIRL_LIKE_YAML = """
name: mine
version: 2
description: answer, tags and a run
combine: sum
terms:
  - kind: objective
    weight: 2
  - kind: format
    tags: [think, python]
    fences: [python]
    weight: 0.5
  - kind: executed
    name: ran
    weight: 0.25
"""


def test_a_policy_declared_in_yaml_equals_its_python_record(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(SIRL_LIKE_YAML)
    python = PolicySpec(
        name="mine",
        version=2,
        description="answer, tags and a run",
        terms=(
            ObjectiveTerm(weight=2),
            FormatTerm(tags=("think", "python"), fences=("python",), weight=0.5),
            ExecutedTerm(name="ran", weight=0.25),
        ),
    )
    loaded = get_policy(str(path))
    assert loaded == python and loaded.spec == "mine@2" and not loaded.verify_wrong
    assert loaded.manifest()["sha256"] == python.manifest()["sha256"]
    assert STAGED.verify_wrong and get_policy("staged@2") is STAGED


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("name: x\nversion: 1\nterms: [{kind: bonus}]\n", "terms.0"),
        ("name: x\nversion: 1\nterms: [{kind: executed, weight: -1}]\n", "weight"),
        ("name: x\nversion: 1\nterms: [{kind: executed}, {kind: executed}]\n", "repeat"),
        (
            "name: x\nversion: 1\nterms: [{kind: format, scoring: sirl, tags: [think, python]}]\n",
            "exactly three",
        ),
        ("name: x\nversion: 1\nterms: []\n", "terms"),
        ("- not a mapping\n", "mapping"),
    ],
)
def test_an_invalid_policy_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, body: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message) as caught:
        get_policy(str(path))
    assert str(path) in str(caught.value) or caught.value.where == str(path)


def test_a_diagnosis_term_needs_a_diagnosing_scorer(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "partial.yaml"
    path.write_text(
        "name: partial\nversion: 1\nterms:\n  - {kind: objective}\n"
        "  - {kind: diagnosis, weight: 0.5, credit: {sense_flipped: 0.6}}\n"
    )
    with pytest.raises(ConfigError, match="diagnosis term"):
        RewardScorer(ScorerSettings(policy=str(path), data_dir=data_dir))
    assert get_policy(str(path)).needs_diagnosis


def test_the_reward_log_manifest_keeps_the_policy_spec_and_refuses_other_terms(
    tmp_path: Path, scored: dict[tuple[str, str], Rollout], rows: list[Problem]
) -> None:
    target = TARGETS[rows[0].id]
    rollout = scored[(rows[0].id, "reference")]
    request = RewardRequest(problem=target.key, completion=rollout.completion.text)
    with RewardRunLog(
        tmp_path, per_problem=1, policy=STAGED.spec, protocol="default", policy_spec=STAGED.manifest()
    ) as log:
        assert log.append([LoggedRollout(target, request, rollout)]) == []
    manifest = RunStore.open(tmp_path / "epoch-0001").read_manifest()
    kept = manifest.provenance["reward_policy"]
    assert kept["spec"] == "staged@2" and kept["combine"] == "max"
    assert [(t["kind"], t["weight"]) for t in kept["terms"]] == [
        ("extracted", 0.1),
        ("executed", 0.2),
        ("feasible", 0.5),
        ("objective", 1.0),
    ]
    assert manifest.settings.model.options["policy_sha256"] == STAGED.manifest()["sha256"]
    assert json.loads(json.dumps(kept)) == STAGED.manifest()
    other = STAGED.model_copy(update={"combine": "sum"})
    with pytest.raises(StoreError, match="sha256"):
        RewardRunLog(
            tmp_path, per_problem=1, policy=other.spec, protocol="default", policy_spec=other.manifest()
        ).open()
