"""Forged claims against the grading step: none may make a sample correct.

Each forger runs a real program in the real sandbox (a pool that does not verify, as the run's
pool), then is graded by the real plan of B4O-Feasible's BENCH4OPT_132 (reference from the data):
the forger claims the reference optimum while its own model is the textbook MILP (optimum 20).
The grading step (``EvaluationPlan.judge``) must verify in the parent and never say ``correct``;
the honest reference program must still be ``correct`` and verified. The last tests patch a
PuLP program's objective read-out by less than verification's agreement tolerance (issue 28):
the harness's value, not the claim, is what the rule grades.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import STAND_IN

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.grading import grade_objective
from trex_eval.protocols.plan import EvaluationPlan, plan_for
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    Problem,
    Verdict,
)
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool
from trex_eval.verify import verify_last_solve

PROBLEM = "BENCH4OPT_132"

TEXTBOOK = """
import gurobipy as gp
from gurobipy import GRB
m = gp.Model("textbook")
x = m.addVar(vtype=GRB.INTEGER, name="x")
y = m.addVar(vtype=GRB.INTEGER, name="y")
m.addConstr(6 * x + 4 * y <= 24, name="wood")
m.addConstr(x + 2 * y <= 6, name="labour")
m.setObjective(5 * x + 4 * y, GRB.MAXIMIZE)
m.optimize()
"""
"""The forgers' own model: integer optimum 20 at (4, 0)."""

RECORDER = 'import sys\nrecorder = sys.modules["trex_runtime.capture"].RECORDER\n'
CLAIM = '{{"status": "optimal", "raw_status": "OPTIMAL", "objective": {value!r}, "sense": "max"}}'


def _no_reference_models(_: object) -> LinearModel:
    raise AssertionError("objective grading never loads a reference model")


@pytest.fixture(scope="module")
def grading_pool() -> Iterator[SandboxPool]:
    """A pool that leaves verification to the grading step, with a 1 MiB record budget."""
    limits = SandboxLimits(wall_s=30.0, cpu_s=30.0, record_mib=1)
    with SandboxPool(limits=limits, workers=2, highs_package=STAND_IN) as started:
        yield started


@pytest.fixture(scope="module")
def case(data_dir: Path) -> tuple[EvaluationPlan, Problem, float]:
    bench = load_benchmark("b4o-feasible", data_dir=data_dir)
    problem = next(p for p in bench.problems if p.id == PROBLEM)
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
    assert problem.reference.value != 20.0  # the forgers' model must not happen to be right
    return plan_for(bench), problem, problem.reference.value


def judge(
    pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float], code: str
) -> tuple[Execution, Grade]:
    plan, problem, _ = case
    execution = pool.run(Job(code=code, files=dict(problem.instance_files), gurobi="real"))
    return plan.judge(problem, execution, reference_model=_no_reference_models)


def test_the_honest_reference_program_is_correct_and_verified(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    plan, problem, _ = case
    program = plan.extract(
        Completion(problem_id=problem.id, sample_index=0, text=reference_completion_text(problem))
    )
    assert program.code is not None
    execution = grading_pool.run(plan.job(problem, program))
    assert execution.solves[-1].verification is None  # the pool left it to the grading step

    checked, grade = plan.judge(problem, execution, reference_model=_no_reference_models)

    assert grade.verdict is Verdict.CORRECT, grade.reason
    assert checked.solves[-1].verification == "match"
    assert checked.solves[-1].verified_by in ("gurobipy", "highs")


def test_a_claim_without_a_matrix_is_unverified(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    code = TEXTBOOK + RECORDER + f"recorder.solve('gurobipy', {CLAIM.format(value=case[2])})\n"

    checked, grade = judge(grading_pool, case, code)

    assert checked.solves[-1].verification == "skipped: no matrix captured"
    assert grade.verdict is Verdict.UNVERIFIED and "no matrix captured" in grade.reason


def test_a_zero_quadratic_term_does_not_hide_the_model(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    # The solver's ObjVal is faked; a 0·x² term used to send the model to "skipped: quadratic".
    code = TEXTBOOK.replace(
        'm = gp.Model("textbook")',
        f"""
class Lying(gp.Model):
    @property
    def ObjVal(self):
        return {case[2]!r}
m = Lying("textbook")""",
    ).replace(
        "m.setObjective(5 * x + 4 * y, GRB.MAXIMIZE)",
        "m.setObjective(5 * x + 4 * y + 0 * x * x, GRB.MAXIMIZE)",
    )

    checked, grade = judge(grading_pool, case, code)

    last = checked.solves[-1]
    assert last.objective == case[2]
    assert last.verification == "mismatch" and last.verified_objective == pytest.approx(20.0)
    assert grade.verdict is Verdict.WRONG and "not the model's" in grade.reason


def test_an_out_of_range_matrix_index_is_unverified(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    code = (
        TEXTBOOK
        + RECORDER
        + "from trex_runtime.hooks.gurobipy import capture_matrix\n"
        + "matrix = capture_matrix(m)\nmatrix['a_row'][0] = 99\n"
        + f"recorder.solve('gurobipy', {{**{CLAIM.format(value=case[2])}, 'model': matrix}})\n"
    )

    checked, grade = judge(grading_pool, case, code)

    assert checked.solves[-1].verification == "skipped: matrix index out of range"
    assert grade.verdict is Verdict.UNVERIFIED


def test_a_matrix_too_large_for_the_record_is_unverified(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    # 60,000 columns: far beyond half of the 1 MiB record budget, so the matrix is left out.
    code = (
        TEXTBOOK
        + RECORDER
        + "n = 60000\n"
        + "matrix = {'sense': 'max', 'var_names': ['v'] * n, 'obj': [1.0] * n, 'lb': [0.0] * n,"
        + " 'ub': [1.0] * n, 'vtype': ['C'] * n, 'row_names': [], 'row_lower': [], 'row_upper': [],"
        + " 'a_row': [], 'a_col': [], 'a_val': []}\n"
        + f"recorder.solve('gurobipy', {{**{CLAIM.format(value=case[2])}, 'model': matrix}})\n"
    )

    checked, grade = judge(grading_pool, case, code)

    assert checked.solves[-1].verification == "skipped: matrix too large"
    assert grade.verdict is Verdict.UNVERIFIED


def test_a_raw_write_to_the_result_channel_is_only_a_claim(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    # The reported attack: find the memfd, read the job's nonce back from its own start record,
    # append a solve record carrying it.
    code = (
        TEXTBOOK
        + f"""
import json, os
for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{{name}}")
    except OSError:
        continue
    if "trex-result" in target:
        fd = int(name)
        first = os.pread(fd, 4096, 0).decode().splitlines()[0]
        nonce = json.loads(first)["nonce"]
        record = {{"nonce": nonce, "kind": "solve", "library": "gurobipy", **{CLAIM.format(value=case[2])}}}
        os.write(fd, (json.dumps(record) + "\\n").encode())
        print("forged")
"""
    )

    checked, grade = judge(grading_pool, case, code)

    assert "forged" in checked.stdout_tail, checked.stderr_tail
    assert checked.status is ExecStatus.OK
    assert checked.solves[-1].objective == case[2]  # the forged record was taken as a claim ...
    assert grade.verdict is Verdict.UNVERIFIED  # ... and nothing more


def test_a_forged_claim_on_a_real_matrix_is_wrong(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    code = (
        TEXTBOOK
        + RECORDER
        + "from trex_runtime.hooks.gurobipy import capture_matrix\n"
        + f"recorder.solve('gurobipy', {{**{CLAIM.format(value=case[2])}, 'model': capture_matrix(m)}})\n"
    )

    checked, grade = judge(grading_pool, case, code)

    assert checked.solves[-1].verification == "mismatch"
    assert grade.verdict is Verdict.WRONG


def test_a_forged_licence_failure_is_not_an_environment_failure(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    # "No licence" while the harness's own pre-flight solved with this very gurobipy: a lie.
    assert grading_pool.licence.gurobipy_ok, "the pre-flight must find gurobipy's bundled licence"
    code = (
        RECORDER
        + "class GurobiError(Exception):\n    errno = 10009\n"
        + "recorder.solve_error('gurobipy', GurobiError('No Gurobi license found'))\n"
        + "raise GurobiError('No Gurobi license found')\n"
    )

    checked, grade = judge(grading_pool, case, code)

    assert checked.status is not ExecStatus.LICENCE_ERROR, checked.detail
    assert grade.verdict is Verdict.RUNTIME_ERROR
    assert not grade.verdict.is_environment_failure


PATCHED_READ_OUT = """
import pulp

honest_value = pulp.LpAffineExpression.value


def reported(self):
    # The objective read-out (what the hook records) says {claim!r} where the solver found 5050.9.
    value = honest_value(self)
    return {claim!r} if value is not None and abs(value - 5050.9) < 1e-6 else value


pulp.LpAffineExpression.value = reported
prob = pulp.LpProblem("patched", pulp.LpMaximize)
x = pulp.LpVariable("x", lowBound=0, upBound=100, cat="Integer")
prob += 505.09 * x
prob += x <= 10.5
prob.solve(pulp.PULP_CBC_CMD(msg=0))
print(pulp.value(prob.objective), x.varValue)
"""
"""An integer model whose optimum is 5050.9 (x = 10), its objective read-out patched to ``claim``."""


def _patched(grading_pool: SandboxPool, claim: float) -> Execution:
    execution = grading_pool.run(Job(code=PATCHED_READ_OUT.format(claim=claim)))
    assert execution.status is ExecStatus.OK, execution.detail
    assert execution.stdout_tail.split() == [repr(claim), "10.0"]
    solve = execution.solves[-1]
    assert (solve.library, solve.objective, solve.verification) == ("pulp", claim, None)
    return execution


def _with_reference(problem: Problem, value: float) -> Problem:
    return problem.model_copy(update={"reference": ObjectiveReference(value=value, label=repr(value))})


def test_a_read_out_patched_within_verifications_tolerance_is_graded_on_the_harnesss_value(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    # The reported attack: the claim 5050.0 is the reference; the captured model's optimum is
    # 5050.9, 0.9 away: inside verification's 2e-4·5050.9 (a "match"), outside strict's 0.505.
    execution = _patched(grading_pool, 5050.0)
    checked = verify_last_solve(execution)
    solve = checked.solves[-1]
    assert solve.verification == "match" and solve.verified_objective == pytest.approx(5050.9)

    grade = grade_objective(checked, ObjectiveReference(value=5050.0, label="5050.0"), rule="strict")
    assert grade.verdict is Verdict.WRONG, grade.reason
    assert "the program's claim 5050.0 was close to the harness's value 5050.9" in grade.reason

    # The run's grading step reaches the same verdict from the unverified execution.
    plan, problem, _ = case
    judged, graded = plan.judge(
        _with_reference(problem, 5050.0), execution, reference_model=_no_reference_models
    )
    assert judged.solves[-1].verification == "match"
    assert graded.verdict is Verdict.WRONG and graded.rule == "strict@3"


def test_a_claim_that_misses_is_re_solved_when_its_re_solve_could_pass(
    grading_pool: SandboxPool, case: tuple[EvaluationPlan, Problem, float]
) -> None:
    # The mirror image: the claim 5051.5 misses the reference 5050.9 under strict, but agrees with
    # the re-solve, which is the reference: the grading step re-solves it and grades that.
    plan, problem, _ = case
    execution = _patched(grading_pool, 5051.5)
    judged, grade = plan.judge(
        _with_reference(problem, 5050.9), execution, reference_model=_no_reference_models
    )
    assert judged.solves[-1].verification == "match"
    assert grade.verdict is Verdict.CORRECT, grade.reason
    assert "the program claimed 5051.5" in grade.reason
