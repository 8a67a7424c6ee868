"""Diagnoses of real programs: hand-written gurobipy and PuLP programs for real benchmark
problems, run in the real sandbox, judged by the benchmark's plan and diagnosed with the
harness's own re-solve (``EvaluationPlan.diagnosed``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.protocols.plan import EvaluationPlan, plan_for
from trex_eval.records import (
    Completion,
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    ObjectiveReference,
    Problem,
    SolveStatus,
    Verdict,
)
from trex_eval.sandbox import SandboxPool

C = DiagnosisCategory
_NO_OPTIMUM = (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)

GUROBI = ("import gurobipy as gp", "from gurobipy import GRB", "m = gp.Model()", "m.Params.OutputFlag = 0")
PULP = ("import pulp",)
MAX_X = ("m.setObjective(x, GRB.MAXIMIZE)", "m.optimize()")
CBC = ("p.solve(pulp.PULP_CBC_CMD(msg=0))",)
FREED = (
    "x = m.addVar(lb=-GRB.INFINITY)",
    "y = m.addVar(lb=-GRB.INFINITY)",
    "m.addConstr(x + y <= {R})",
    "m.addConstr(y <= 100)",
    "m.setObjective(x - y, GRB.MAXIMIZE)",
    "m.optimize()",
)
"""Two variables freed (``lb=0`` taken off): unbounded; with ``x, y >= 0`` the maximum is {R}."""


def _code(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# {R} is the reference value of nl4opt item 0 (3000, an integral label).
PROGRAMS: dict[str, tuple[str, DiagnosisCategory | None]] = {
    "correct": (_code(*GUROBI, "x = m.addVar()", "m.addConstr(x <= {R})", *MAX_X), None),
    "sense": (
        _code(
            *GUROBI,
            "x = m.addVar()",
            "m.addConstr(x <= {R})",
            "m.setObjective(x, GRB.MINIMIZE)",
            "m.optimize()",
        ),
        C.SENSE_FLIPPED,
    ),
    "integrality_missing": (
        _code(*GUROBI, "x = m.addVar()", "m.addConstr(2 * x <= 2 * {R} + 1)", *MAX_X),
        C.INTEGRALITY_MISSING,
    ),
    "integrality_extra": (
        _code(
            *GUROBI,
            "x = m.addVar(vtype=GRB.INTEGER)",
            "m.addConstr(7 * x <= {R})",
            "m.setObjective(7 * x, GRB.MAXIMIZE)",
            "m.optimize()",
        ),
        C.INTEGRALITY_EXTRA,
    ),
    # gurobipy stores the bound 7.5 of an integer variable as 7: relaxed with its captured bound
    # the model reaches 2800, with it widened by one 3200; the program's model lies between.
    "integrality_extra_rounded_bound": (
        _code(
            *GUROBI,
            "x = m.addVar(vtype=GRB.INTEGER, ub=7.5)",
            "m.setObjective(400 * x, GRB.MAXIMIZE)",
            "m.optimize()",
        ),
        C.INTEGRALITY_EXTRA,
    ),
    "bounds_missing": (
        _code(
            *PULP,
            "p = pulp.LpProblem('b', pulp.LpMaximize)",
            "x = pulp.LpVariable('x')",
            "y = pulp.LpVariable('y', lowBound=0)",
            "p += y - x",
            "p += y <= {R}",
            "p += x >= -50",
            *CBC,
        ),
        C.BOUNDS_MISSING,
    ),
    "constraint_extra": (
        _code(
            *GUROBI,
            "x = m.addVar()",
            "m.addConstr(x <= {R}, name='cap')",
            "m.addConstr(x <= {R} - 100, name='cap_extra')",
            *MAX_X,
        ),
        C.CONSTRAINT_EXTRA,
    ),
    "scaled": (_code(*GUROBI, "x = m.addVar()", "m.addConstr(x <= {R} / 100)", *MAX_X), C.OBJECTIVE_SCALED),
    "rounding": (
        _code(
            *GUROBI,
            "x = m.addVar(vtype=GRB.INTEGER)",
            "m.addConstr(x <= {R})",
            "m.setObjective(x + 0.45, GRB.MAXIMIZE)",
            "m.optimize()",
        ),
        C.ROUNDING,
    ),
    "infeasible": (
        _code(*GUROBI, "x = m.addVar()", "m.addConstr(x <= {R} - 10)", "m.addConstr(x >= {R} + 10)", *MAX_X),
        C.INFEASIBLE_MODEL,
    ),
    "unbounded": (
        _code(
            *PULP,
            "p = pulp.LpProblem('u', pulp.LpMaximize)",
            "x = pulp.LpVariable('x', lowBound=0)",
            "y = pulp.LpVariable('y', lowBound=0)",
            "p += x + y",
            "p += x <= {R}",
            *CBC,
        ),
        C.UNBOUNDED_MODEL,
    ),
    "data_access": (_code("data = {{'demand': 3}}", "print(data['capacity'])"), C.DATA_ACCESS),
    "api_misuse_gurobipy": (
        _code(*GUROBI, "x = m.addVar()", "m.setObjective(x)", "m.optimize()", "print(m.ObjValue)"),
        C.API_MISUSE,
    ),
    "api_misuse_pulp": (
        _code(
            *PULP,
            "p = pulp.LpProblem('a', pulp.LpMinimize)",
            "x = pulp.LpVariable('x', lowBound=0)",
            "p += x",
            *CBC,
            "print(p.objectiveValue)",
        ),
        C.API_MISUSE,
    ),
    # Issue 45: reading the objective of a model without an optimum raises; the captured solve's
    # status names it, not the exception (gurobipy's presolve says inf_or_unbd, told apart).
    "unbounded_then_raised": (_code(*GUROBI, *FREED, "print(m.ObjVal)"), C.UNBOUNDED_MODEL),
    "infeasible_then_raised": (
        _code(*GUROBI, "x = m.addVar()", "m.addConstr(x <= {R} - 10)", "m.addConstr(x >= {R} + 10)", *MAX_X)
        + "print(m.ObjVal)\n",
        C.INFEASIBLE_MODEL,
    ),
    "missing_library": (_code("import not_a_solver_library_here"), C.MISSING_LIBRARY),
    "syntax": (_code("x = (1 +"), C.SYNTAX),
    "runtime_other": (_code("print(1 / 0)"), C.RUNTIME_OTHER),
    "no_solve": (_code("print({R})"), C.NO_SOLVE),
}


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(workers=2) as started:
        yield started


@pytest.fixture(scope="module")
def plan(data_dir: Path) -> EvaluationPlan:
    return plan_for(load_benchmark("nl4opt", data_dir=data_dir))


def _problem(plan: EvaluationPlan, problem_id: str) -> Problem:
    return next(p for p in plan.benchmark.problems if p.id == problem_id)


def _graded(
    pool: SandboxPool, plan: EvaluationPlan, problem: Problem, code: str, *, finish_reason: str = "stop"
) -> tuple[Execution, Grade]:
    """The sample as a run grades and diagnoses it."""
    completion = Completion(
        problem_id=problem.id, sample_index=0, text=f"```python\n{code}```\n", finish_reason=finish_reason
    )
    program = plan.extract(completion)
    if program.code is None:
        execution = Execution(status=ExecStatus.NO_CODE, detail=program.reason)
        grade = plan.grade(problem, execution, reference_model=lambda _: pytest.fail("objective only"))
    else:
        execution = pool.run(plan.job(problem, program), limits=plan.limits)
        execution, grade = plan.judge(
            problem, execution, reference_model=lambda _: pytest.fail("objective only")
        )
    return execution, plan.diagnosed(problem, completion, execution, grade)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_category_is_diagnosed(pool: SandboxPool, plan: EvaluationPlan, name: str) -> None:
    problem = _problem(plan, "0")
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.label == "3000.0"
    template, expected = PROGRAMS[name]
    _, grade = _graded(pool, plan, problem, template.format(R=3000))
    if expected is None:
        assert grade.verdict is Verdict.CORRECT and grade.diagnosis is None
        return
    assert grade.verdict is not Verdict.CORRECT
    assert grade.diagnosis is not None, grade
    assert grade.diagnosis.category is expected, (grade.reason, grade.diagnosis)


def test_constraint_extra_names_the_constraint(pool: SandboxPool, plan: EvaluationPlan) -> None:
    _, grade = _graded(pool, plan, _problem(plan, "0"), PROGRAMS["constraint_extra"][0].format(R=3000))
    assert grade.diagnosis is not None and "cap_extra" in grade.diagnosis.detail
    assert grade.diagnosis.evidence["edited_value"] == pytest.approx(3000.0)
    assert grade.diagnosis.evidence["judged_value"] == pytest.approx(2900.0)


def test_the_judged_value_needs_no_re_solve(pool: SandboxPool, plan: EvaluationPlan) -> None:
    """A wrong claim is what the verdict judged: a value off by 10^2 is named without any re-solve."""
    _, grade = _graded(pool, plan, _problem(plan, "0"), PROGRAMS["scaled"][0].format(R=3000))
    assert grade.diagnosis is not None and grade.diagnosis.category is C.OBJECTIVE_SCALED
    assert grade.diagnosis.evidence["resolves"] == 0


def test_no_drop_is_tried_on_a_model_past_the_reference(pool: SandboxPool, plan: EvaluationPlan) -> None:
    """A maximum above the reference (a constraint missing) only grows when constraints are
    dropped: none of the 40 rows is dropped, only the sense flip and integrality are re-solved."""
    rows = [f"m.addConstr(x <= 5000 + {k})" for k in range(40)]
    code = _code(*GUROBI, "x = m.addVar()", "m.addConstr(x <= 4000)", *rows, *MAX_X)
    _, grade = _graded(pool, plan, _problem(plan, "0"), code)
    assert grade.verdict is Verdict.WRONG and grade.diagnosis is not None
    assert grade.diagnosis.category is C.UNEXPLAINED
    assert grade.diagnosis.evidence["resolves"] == 2


def test_integrality_bracket_says_gurobipy_rounded(pool: SandboxPool, plan: EvaluationPlan) -> None:
    code = PROGRAMS["integrality_extra_rounded_bound"][0]
    _, grade = _graded(pool, plan, _problem(plan, "0"), code)
    assert grade.diagnosis is not None and "rounded" in grade.diagnosis.detail
    assert grade.diagnosis.evidence["edited_value"] == pytest.approx(2800.0)
    assert grade.diagnosis.evidence["widened_value"] == pytest.approx(3200.0)


def test_near_miss_on_a_label_with_decimals(pool: SandboxPool, plan: EvaluationPlan) -> None:
    problem = _problem(plan, "5")
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.label == "2333.33"
    code = _code(*GUROBI, "x = m.addVar()", "m.addConstr(x <= 2333.33 * 1.0005)", *MAX_X)
    _, grade = _graded(pool, plan, problem, code)
    assert grade.verdict is Verdict.WRONG and grade.diagnosis is not None
    assert grade.diagnosis.category is C.NEAR_MISS
    assert grade.diagnosis.evidence["relative_error"] == pytest.approx(5e-4, rel=1e-3)


def test_a_cut_off_completion_is_truncated(pool: SandboxPool, plan: EvaluationPlan) -> None:
    _, grade = _graded(pool, plan, _problem(plan, "0"), "x = (1 +\n", finish_reason="length")
    assert grade.diagnosis is not None and grade.diagnosis.category is C.TRUNCATED


def test_no_code(plan: EvaluationPlan) -> None:
    problem = _problem(plan, "0")
    completion = Completion(problem_id="0", sample_index=0, text="The answer is 3000.", finish_reason="stop")
    execution = Execution(status=ExecStatus.NO_CODE, detail=plan.extract(completion).reason)
    grade = plan.grade(problem, execution, reference_model=lambda _: pytest.fail("objective only"))
    diagnosed = plan.diagnosed(problem, completion, execution, grade)
    assert diagnosed.verdict is grade.verdict is Verdict.NO_CODE
    assert diagnosed.diagnosis is not None and diagnosed.diagnosis.category is C.NO_CODE


def test_the_budget_bounds_the_search(pool: SandboxPool, plan: EvaluationPlan) -> None:
    """A budget spent before the first re-solve leaves the sample unexplained, saying why; the
    verdict is the one the rule gave."""
    from trex_eval.grading.diagnosis import DiagnosisBudget

    problem = _problem(plan, "0")
    completion = Completion(problem_id="0", sample_index=0, text="x", finish_reason="stop")
    code = PROGRAMS["constraint_extra"][0].format(R=3000)
    execution = pool.run(
        plan.job(problem, plan.extract(completion).model_copy(update={"code": code})), limits=plan.limits
    )
    execution, grade = plan.judge(problem, execution, reference_model=lambda _: pytest.fail("objective only"))
    diagnosed = plan.diagnosed(problem, completion, execution, grade, budget=DiagnosisBudget(time_s=0.0))
    assert diagnosed.verdict is grade.verdict is Verdict.WRONG
    assert diagnosed.diagnosis is not None and diagnosed.diagnosis.category is C.UNEXPLAINED
    assert "budget" in diagnosed.diagnosis.detail
    capped = plan.diagnosed(problem, completion, execution, grade, budget=DiagnosisBudget(max_columns=0))
    assert capped.diagnosis is not None and capped.diagnosis.category is C.UNEXPLAINED
    assert "cap" in capped.diagnosis.detail


def test_old_grades_load_without_a_diagnosis() -> None:
    stored = '{"verdict": "wrong", "rule": "strict@3", "reason": "off", "evidence": null}'
    grade = Grade.model_validate_json(stored)
    assert grade.diagnosis is None
    assert Grade.model_validate_json(grade.model_dump_json()) == grade


def test_a_raise_after_an_unbounded_solve_names_the_edit(pool: SandboxPool, plan: EvaluationPlan) -> None:
    """Issue 45: the exception of ``ObjVal`` read after an unbounded solve is not the mistake:
    the category is the captured solve's status, the detail names the edit that reaches the
    reference (non-negativity on the freed variables) and the exception; the verdict stays."""
    code = PROGRAMS["unbounded_then_raised"][0].format(R=3000)
    execution, grade = _graded(pool, plan, _problem(plan, "0"), code)
    assert execution.last_solve is not None and execution.last_solve.status is SolveStatus.INF_OR_UNBD
    assert grade.verdict is Verdict.RUNTIME_ERROR and grade.diagnosis is not None
    assert grade.diagnosis.category is C.UNBOUNDED_MODEL
    detail = grade.diagnosis.detail
    assert "ObjVal" in detail and "ended unbounded" in detail
    assert "2 free variable(s) made non-negative (bounds_missing)" in detail
    assert grade.diagnosis.evidence["edited_value"] == pytest.approx(3000.0)


def test_a_raise_after_an_optimal_solve_is_the_exception(pool: SandboxPool, plan: EvaluationPlan) -> None:
    """Only a solve without an optimum names a raise: a wrong attribute read after an optimum
    stays ``api_misuse``, a completion cut off by the token limit stays ``truncated``."""
    misuse = PROGRAMS["api_misuse_gurobipy"][0]
    execution, grade = _graded(pool, plan, _problem(plan, "0"), misuse)
    assert execution.last_solve is not None and execution.last_solve.status is SolveStatus.OPTIMAL
    assert grade.diagnosis is not None and grade.diagnosis.category is C.API_MISUSE
    code = PROGRAMS["unbounded_then_raised"][0].format(R=3000)
    _, cut = _graded(pool, plan, _problem(plan, "0"), code, finish_reason="length")
    assert cut.verdict is Verdict.RUNTIME_ERROR
    assert cut.diagnosis is not None and cut.diagnosis.category is C.TRUNCATED


def test_a_raise_against_a_reference_without_an_optimum_is_the_exception(
    pool: SandboxPool, data_dir: Path
) -> None:
    """IndustryOR row 15 has no optimum (``inf_or_unbd``): an infeasible model may be the
    answer, so a program that raised after one is named by its exception."""
    plan = plan_for(load_benchmark("industryor", data_dir=data_dir))
    problem = _problem(plan, "15")
    assert isinstance(problem.reference, ObjectiveReference)
    assert problem.reference.status is SolveStatus.INF_OR_UNBD
    code = PROGRAMS["infeasible_then_raised"][0].format(R=3000)
    execution, grade = _graded(pool, plan, problem, code)
    assert execution.last_solve is not None and execution.last_solve.status in _NO_OPTIMUM
    assert grade.diagnosis is not None and grade.diagnosis.category is C.API_MISUSE


def test_a_status_not_told_apart_names_nothing(pool: SandboxPool, plan: EvaluationPlan) -> None:
    """Without time to tell ``inf_or_unbd`` apart, the raise is ``unexplained``, saying what was
    raised and why the search stopped; the verdict is the rule's."""
    from trex_eval.grading.diagnosis import DiagnosisBudget

    problem = _problem(plan, "0")
    code = PROGRAMS["unbounded_then_raised"][0].format(R=3000)
    completion = Completion(
        problem_id="0", sample_index=0, text=f"```python\n{code}```\n", finish_reason="stop"
    )
    execution = pool.run(plan.job(problem, plan.extract(completion)), limits=plan.limits)
    execution, grade = plan.judge(problem, execution, reference_model=lambda _: pytest.fail("objective only"))
    diagnosed = plan.diagnosed(problem, completion, execution, grade, budget=DiagnosisBudget(time_s=0.0))
    assert diagnosed.verdict is grade.verdict is Verdict.RUNTIME_ERROR
    assert diagnosed.diagnosis is not None and diagnosed.diagnosis.category is C.UNEXPLAINED
    assert "ended inf_or_unbd" in diagnosed.diagnosis.detail and "budget" in diagnosed.diagnosis.detail
