"""SciPy's ``linprog`` and ``milp`` only minimise: a maximisation is written as ``min −f`` and
reported as ``-res.fun`` (SciPy's documented idiom). The graded value is the harness's re-solve of
the captured model, negated where the program printed that negation or the benchmark states a
maximisation (:mod:`trex_eval.grading.objective.sign`); only the sign comes from the program.

Every program runs in the real sandbox and is judged by the real NL4OPT plan (references from the
data): thirteen hand-written SciPy programs of NL4OPT maximisation rows whose models are right,
forgers, a program that prints nothing, and PuLP programs, which state their sense themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import GradingError
from trex_eval.grading import get_rule, superseded
from trex_eval.grading.objective.sign import MINIMISE_ONLY, last_reported
from trex_eval.protocols.plan import EvaluationPlan, plan_for
from trex_eval.records import (
    Completion,
    DiagnosisCategory,
    Execution,
    Grade,
    LinearModel,
    ObjectiveEvidence,
    ObjectiveReference,
    Problem,
    Verdict,
)
from trex_eval.sandbox import SandboxPool

LP = "from scipy.optimize import linprog\n"
MILP = "import numpy as np\nfrom scipy.optimize import milp, LinearConstraint, Bounds\n"

# NL4OPT row id -> a right model of it, each reporting -res.fun its own way.
PROGRAMS: dict[str, str] = {
    "0": LP + "res = linprog(c=[-100, -300], A_ub=[[50, 100], [1, -1]], b_ub=[1000, -1],"
    " bounds=[(0, None), (0, None)])\nprint(-res.fun)\n",
    "1": LP + "r = linprog([-200, -70], A_ub=[[1, 1]], b_ub=[35], bounds=[(0, 20), (0, 30)])\n"
    "print(r.x)\nprint(-1*r.fun)\n",
    "3": MILP + "res = milp(c=-np.array([2, 4]), constraints=[LinearConstraint([[1, 1]], -np.inf, 50),"
    " LinearConstraint([[-2, 1]], -np.inf, 0)], bounds=Bounds([5, 10], [np.inf, np.inf]),"
    " integrality=np.ones(2))\nprint(f'Maximum profit: ${-res.fun:,.2f}')\n",
    "4": LP + "res = linprog([-5, -8], A_ub=[[-1, -1]], b_ub=[-100], bounds=[(30, 150), (50, 180)],"
    " method='highs')\nprint('Optimal value:', -res.fun)\n",
    "6": LP + "res = linprog([-350, -600], A_ub=[[1, 1], [-1, 1], [1, -2]], b_ub=[140, 0, 0],"
    " bounds=[(20, None), (30, None)])\nprofit = -res.fun\n"
    "print(f'tomatoes={res.x[0]:.1f} ha, potatoes={res.x[1]:.1f} ha, profit={profit:.2f}')\n",
    "7": LP + "res = linprog([-50, -20], A_ub=[[1, 1]], b_ub=[150], bounds=[(0, 100), (0, 170)])\n"
    "print(round(-res.fun, 2))\n",
    "12": LP + "res = linprog([-3, -4], A_ub=[[2, 3], [3, 5]], b_ub=[40, 70])\n"
    "print('Maximum profit is', -res.fun)\n",
    "17": MILP + "res = milp([-43, -52], constraints=LinearConstraint([[1.4, 1.1], [2, 3]], ub=[17, 11]),"
    " integrality=[1, 1])\nprint(-res.fun)\n",
    "19": MILP + "c = np.array([5, 9])\nres = milp(-c, constraints=[LinearConstraint(np.array([[50, 30],"
    " [90, 150]]), ub=[3000, 4000])], integrality=np.ones_like(c))\nprint(res.status, res.x)\n"
    "print(-1 * res.fun)\n",
    "22": LP + "res = linprog(c=[-8, -10], A_ub=[[3, 5], [5, 8]], b_ub=[300, 300])\nprint(f'{-res.fun}')\n",
    "23": LP + "res = linprog([-5, -4], A_ub=[[50, 40], [20, 30]], b_ub=[5000, 4000])\n"
    "print('elephants, tigers:', res.x)\nprint('profit:', -res.fun)\n",
    "24": MILP + "res = milp(c=[-30, -15], integrality=[1, 1], bounds=Bounds([5, 5], [np.inf, np.inf]),"
    " constraints=LinearConstraint([[4, 2], [3, 1], [5, 2]], [-np.inf] * 3, [100, 50, 70]))\n"
    "print(f'Max profit = {-res.fun:.0f}')\n",
    "27": LP + "res = linprog([-8, -10], A_ub=[[3, 4], [3, 2]], b_ub=[120, 90])\nmax_profit = -res.fun\n"
    "print(max_profit)\n",
}

FISH = LP + "res = linprog(c=[-100, -300], A_ub=[[50, 100], [1, -1]], b_ub=[{budget}, -1])\n"
"""NL4OPT row 0 (reference 3000) with the budget as a parameter: 1000 is the right model, 900 a
wrong one (optimum 2700)."""

PULP_MAX = """
import pulp
p = pulp.LpProblem("fish", pulp.{sense})
x = pulp.LpVariable("dogs", lowBound=0)
y = pulp.LpVariable("trucks", lowBound=0)
p += {sign}(100 * x + 300 * y)
p += 50 * x + 100 * y <= 1000
p += x - y <= -1
p.solve(pulp.PULP_CBC_CMD(msg=0))
print({report}pulp.value(p.objective))
"""


def _no_reference_model(_: object) -> LinearModel:
    raise AssertionError("objective grading never loads a reference model")


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(workers=2) as started:
        yield started


@pytest.fixture(scope="module")
def plan(data_dir: Path) -> EvaluationPlan:
    return plan_for(load_benchmark("nl4opt", data_dir=data_dir))


def _problem(plan: EvaluationPlan, problem_id: str) -> Problem:
    return next(p for p in plan.benchmark.problems if p.id == problem_id)


def _graded(pool: SandboxPool, plan: EvaluationPlan, problem: Problem, code: str) -> tuple[Execution, Grade]:
    """The sample as a run grades and diagnoses it (default protocol, verification included)."""
    completion = Completion(problem_id=problem.id, sample_index=0, text=f"```python\n{code}```\n")
    program = plan.extract(completion)
    assert program.code is not None
    execution = pool.run(plan.job(problem, program), limits=plan.limits)
    execution, grade = plan.judge(problem, execution, reference_model=_no_reference_model)
    return execution, plan.diagnosed(problem, completion, execution, grade)


def _evidence(grade: Grade) -> ObjectiveEvidence:
    assert isinstance(grade.evidence, ObjectiveEvidence), grade
    return grade.evidence


def _reference(problem: Problem) -> float:
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
    return problem.reference.value


@pytest.mark.parametrize("problem_id", list(PROGRAMS))
def test_the_scipy_maximisation_idiom_is_correct(
    pool: SandboxPool, plan: EvaluationPlan, problem_id: str
) -> None:
    problem = _problem(plan, problem_id)
    assert "maxim" in problem.question.lower()

    execution, grade = _graded(pool, plan, problem, PROGRAMS[problem_id])

    last = execution.solves[-1]
    assert last.library in MINIMISE_ONLY and last.verification == "match"
    assert last.verified_objective is not None
    assert last.verified_objective == pytest.approx(-_reference(problem), rel=1e-6)
    assert grade.verdict is Verdict.CORRECT, grade.reason
    assert grade.rule == "strict@3" and "only minimises and the program printed" in grade.reason
    evidence = _evidence(grade)
    # The magnitude is the harness's re-solve; only the sign is the program's.
    assert evidence.source == "verified-negated" and evidence.predicted == -last.verified_objective


def test_a_forger_printing_the_negation_of_a_wrong_models_optimum_stays_wrong(
    pool: SandboxPool, plan: EvaluationPlan
) -> None:
    _, grade = _graded(pool, plan, _problem(plan, "0"), FISH.format(budget=900) + "print(-res.fun)\n")

    assert grade.verdict is Verdict.WRONG
    assert _evidence(grade).predicted == pytest.approx(2700.0)


def test_a_forger_printing_the_label_over_a_wrong_model_stays_wrong(
    pool: SandboxPool, plan: EvaluationPlan
) -> None:
    _, grade = _graded(pool, plan, _problem(plan, "0"), FISH.format(budget=900) + "print(3000.0)\n")

    assert grade.verdict is Verdict.WRONG
    assert _evidence(grade).predicted == pytest.approx(-2700.0)  # the label gives no sign to a −2700


@pytest.mark.parametrize("report", ["", "print(res.fun)\n", "print(res)\n"])
def test_a_program_that_reports_no_negation_keeps_its_verdict(
    pool: SandboxPool, plan: EvaluationPlan, report: str
) -> None:
    _, grade = _graded(pool, plan, _problem(plan, "0"), FISH.format(budget=1000) + report)

    assert grade.verdict is Verdict.WRONG
    assert _evidence(grade).predicted == pytest.approx(-3000.0)
    assert "pred = −ref: scipy.linprog only minimises" in grade.reason
    assert grade.diagnosis is not None and grade.diagnosis.category is DiagnosisCategory.OBJECTIVE_NEGATED


def test_a_pulp_maximisation_is_unaffected(pool: SandboxPool, plan: EvaluationPlan) -> None:
    code = PULP_MAX.format(sense="LpMaximize", sign="", report="")
    _, grade = _graded(pool, plan, _problem(plan, "0"), code)

    assert grade.verdict is Verdict.CORRECT, grade.reason
    # PuLP reports an LP's duals: the harness's value comes from its certificate (issue 44).
    assert _evidence(grade).source == "certified" and _evidence(grade).predicted == pytest.approx(3000.0)


def test_a_library_that_states_its_sense_gets_no_sign_from_stdout(
    pool: SandboxPool, plan: EvaluationPlan
) -> None:
    # PuLP can maximise: its minimisation of −f is a minimisation, whatever the program prints.
    code = PULP_MAX.format(sense="LpMinimize", sign="-", report="-")
    execution, grade = _graded(pool, plan, _problem(plan, "0"), code)

    assert "3000.0" in execution.stdout_tail
    assert grade.verdict is Verdict.WRONG and "minimise/maximise confused?" in grade.reason
    assert grade.diagnosis is not None and grade.diagnosis.category is DiagnosisCategory.OBJECTIVE_NEGATED


def _stating(problem: Problem, sense: str) -> Problem:
    return problem.model_copy(update={"meta": {**problem.meta, "sense": sense}})


def test_a_stated_sense_decides_the_sign(pool: SandboxPool, plan: EvaluationPlan) -> None:
    problem = _problem(plan, "0")

    _, silent = _graded(pool, plan, _stating(problem, "Maximize"), FISH.format(budget=1000))
    _, printed = _graded(pool, plan, _stating(problem, "min"), FISH.format(budget=1000) + "print(-res.fun)\n")

    assert silent.verdict is Verdict.CORRECT and "the benchmark states a maximisation" in silent.reason
    assert printed.verdict is Verdict.WRONG  # a stated minimisation outweighs the printed sign
    assert _evidence(printed).predicted == pytest.approx(-3000.0)
    with pytest.raises(GradingError, match="not an objective sense"):
        _graded(pool, plan, _stating(problem, "sideways"), FISH.format(budget=1000))


@pytest.mark.parametrize(
    ("stdout", "reported"),
    [
        ("3000.0\n", 3000.0),
        ("np.float64(3000.0)\n", 3000.0),
        ("Max fish: $3,000.00\n", 3000.0),
        ("fun: -3000.0\n3000.0\n", 3000.0),  # the last number agreeing with ±3000 is the report
        ("3000.0\nfun: -3000.0\n", -3000.0),
        ("x3000 = 1\n", None),  # no part of a name
        ("x = [0. 10.]\n", None),
        ("profit 3001\n", None),  # outside verification's agreement tolerance of 3000 (0.6)
    ],
)
def test_the_reported_number(stdout: str, reported: float | None) -> None:
    assert last_reported(stdout, -3000.0) == reported


def test_the_tolerance_rules_are_at_version_3() -> None:
    assert get_rule("strict").spec == "strict@3" and get_rule("optmath").spec == "optmath@3"
    assert superseded("strict@2") == "strict@3"
    # The compat protocols' rules reproduce their peers' verdicts and are untouched.
    assert get_rule("trex-compat").spec == "trex-compat@1" and get_rule("orlm-compat").spec == "orlm-compat@2"
