"""The parent's solvers behind verification: HiGHS QP, SCIP, gurobipy, the name-free cache.

Every optimum below is worked out by hand in the test's comment.
"""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from trex_eval import verify
from trex_eval.records import (
    ExecStatus,
    Execution,
    LinearModel,
    QuadraticConstraint,
    SolveRecord,
    SolveStatus,
)
from trex_eval.verify import Resolve, gurobi_available, model_key, verify_last_solve, verify_solve

INF = math.inf
REPO = Path(__file__).resolve().parents[2]


def two_vars(**fields: object) -> LinearModel:
    """x, y free and continuous, no rows, zero objective; ``fields`` override."""
    base: dict[str, object] = {
        "sense": "min",
        "var_names": ("x", "y"),
        "obj": (0.0, 0.0),
        "lb": (-INF, -INF),
        "ub": (INF, INF),
        "vtype": ("C", "C"),
        "row_names": (),
        "row_lower": (),
        "row_upper": (),
        "a_row": (),
        "a_col": (),
        "a_val": (),
    }
    base.update(fields)
    return LinearModel.model_validate(base)


def claim(model: LinearModel, objective: float, library: str = "test") -> SolveRecord:
    return SolveRecord(
        library=library, status=SolveStatus.OPTIMAL, raw_status="", objective=objective, model=model
    )


# min (x-1)^2 + (y-2)^2 = x^2 - 2x + y^2 - 4y + 5 with x + y <= 2: the nearest point of the
# half-plane to (1, 2) is (0.5, 1.5), at squared distance 0.5.
CONVEX = two_vars(
    obj=(-2.0, -4.0),
    objective_constant=5.0,
    q_obj=((0, 0, 1.0), (1, 1, 1.0)),
    row_names=("r",),
    row_lower=(-INF,),
    row_upper=(2.0,),
    a_row=(0, 0),
    a_col=(0, 1),
    a_val=(1.0, 1.0),
)
# max x^2 + y^2 on 0 <= x, y <= 1 with x + y <= 1.5 (non-convex): a vertex, (1, 0.5) or (0.5, 1): 1.25.
NON_CONVEX = two_vars(
    sense="max",
    lb=(0.0, 0.0),
    ub=(1.0, 1.0),
    q_obj=((0, 0, 1.0), (1, 1, 1.0)),
    row_names=("r",),
    row_lower=(-INF,),
    row_upper=(1.5,),
    a_row=(0, 0),
    a_col=(0, 1),
    a_val=(1.0, 1.0),
)
# max x + y with x^2 + y^2 <= 2: (1, 1), optimum 2.
BALL = two_vars(
    sense="max",
    obj=(1.0, 1.0),
    n_quadratic_constraints=1,
    q_constraints=(QuadraticConstraint(lower=-INF, upper=2.0, quadratic=((0, 0, 1.0), (1, 1, 1.0))),),
)
# min (x - 0.6)^2 = x^2 - 1.2x + 0.36 with x integer in [0, 3]: x = 1, optimum 0.16.
MIQP = LinearModel(
    sense="min",
    objective_constant=0.36,
    var_names=("x",),
    obj=(-1.2,),
    lb=(0.0,),
    ub=(3.0,),
    vtype=("I",),
    row_names=(),
    row_lower=(),
    row_upper=(),
    a_row=(),
    a_col=(),
    a_val=(),
    q_obj=((0, 0, 1.0),),
)


def test_a_convex_qp_goes_to_highs() -> None:
    checked = verify_solve(claim(CONVEX, 0.5), prefer_gurobi=False)

    assert (checked.verification, checked.verified_by) == ("match", "highs")
    assert checked.verified_objective == pytest.approx(0.5, abs=1e-6)
    assert verify_solve(claim(CONVEX, 0.4), prefer_gurobi=False).verification == "mismatch"


def test_a_maximised_concave_qp_goes_to_highs() -> None:
    # max -(x-1)^2 - (y-2)^2 under the same row: -0.5.
    concave = CONVEX.model_copy(
        update={
            "sense": "max",
            "obj": (2.0, 4.0),
            "objective_constant": -5.0,
            "q_obj": ((0, 0, -1.0), (1, 1, -1.0)),
        }
    )

    checked = verify_solve(claim(concave, -0.5), prefer_gurobi=False)

    assert (checked.verification, checked.verified_by) == ("match", "highs")
    assert checked.verified_objective == pytest.approx(-0.5, abs=1e-6)


@pytest.mark.parametrize(
    ("model", "optimum"), [(NON_CONVEX, 1.25), (BALL, 2.0), (MIQP, 0.16)], ids=["non-convex", "qcp", "miqp"]
)
def test_what_highs_cannot_solve_goes_to_scip(model: LinearModel, optimum: float) -> None:
    checked = verify_solve(claim(model, optimum), prefer_gurobi=False)

    assert (checked.verification, checked.verified_by) == ("match", "scip")
    assert checked.verified_objective == pytest.approx(optimum, abs=1e-5)
    wrong = verify_solve(claim(model, optimum + 0.1), prefer_gurobi=False)
    assert wrong.verification == "mismatch"


@pytest.mark.parametrize(
    ("model", "optimum"),
    [(CONVEX, 0.5), (NON_CONVEX, 1.25), (BALL, 2.0), (MIQP, 0.16)],
    ids=["convex", "non-convex", "qcp", "miqp"],
)
def test_a_gurobipy_claim_is_resolved_by_the_harness_gurobipy_when_licensed(
    model: LinearModel, optimum: float
) -> None:
    checked = verify_solve(claim(model, optimum, library="gurobipy"))

    assert checked.verification == "match"
    # A convex continuous QP goes to HiGHS first even for gurobipy's claim (issue 44).
    expected = "highs" if model is CONVEX else ("gurobipy" if gurobi_available() else "scip")
    assert checked.verified_by == expected
    assert checked.verified_objective == pytest.approx(optimum, abs=1e-5)


def test_a_model_too_large_for_the_gurobipy_licence_falls_back_to_highs() -> None:
    # max sum(x) with 0 <= x <= 1 over 2001 variables (the pip licence stops at 2000): 2001.
    n = 2001
    large = LinearModel(
        sense="max",
        var_names=tuple(f"x{i}" for i in range(n)),
        obj=(1.0,) * n,
        lb=(0.0,) * n,
        ub=(1.0,) * n,
        vtype=("C",) * n,
        row_names=(),
        row_lower=(),
        row_upper=(),
        a_row=(),
        a_col=(),
        a_val=(),
    )

    checked = verify_solve(claim(large, 2001.0, library="gurobipy"))

    assert checked.verification == "match" and checked.verified_objective == pytest.approx(2001.0)
    assert checked.verified_by in ("gurobipy", "highs")  # an unlimited licence takes it itself


def test_zero_quadratic_terms_leave_a_linear_model() -> None:
    # max 5x + 4y, 6x + 4y <= 24, x + 2y <= 6 (LP optimum 21) plus a 0·x² term.
    textbook = two_vars(
        sense="max",
        obj=(5.0, 4.0),
        lb=(0.0, 0.0),
        row_names=("wood", "labour"),
        row_lower=(-INF, -INF),
        row_upper=(24.0, 6.0),
        a_row=(0, 0, 1, 1),
        a_col=(0, 1, 0, 1),
        a_val=(6.0, 4.0, 1.0, 2.0),
        q_obj=((0, 0, 0.0),),
    )

    checked = verify_solve(claim(textbook, 21.0), prefer_gurobi=False)

    assert (checked.verification, checked.verified_by) == ("match", "highs")
    assert verify_solve(claim(textbook, 999.0), prefer_gurobi=False).verification == "mismatch"


def test_the_cache_key_ignores_names_but_not_numbers() -> None:
    renamed = CONVEX.model_copy(update={"var_names": ("a", "b"), "row_names": ("budget",)})
    changed = CONVEX.model_copy(update={"row_upper": (2.5,)})

    assert model_key(renamed) == model_key(CONVEX)
    assert model_key(changed) != model_key(CONVEX)
    verify_solve(claim(CONVEX, 0.5), prefer_gurobi=False)
    remembered = len(verify._MEMO.done)
    assert verify_solve(claim(renamed, 0.5), prefer_gurobi=False).verification == "match"
    assert len(verify._MEMO.done) == remembered  # served from the entry of the first wording


def test_concurrent_requests_for_one_model_compute_once() -> None:
    memo = verify._Memo(4)
    calls: list[int] = []
    started = threading.Event()
    release = threading.Event()

    def compute() -> Resolve:
        calls.append(1)
        started.set()
        release.wait(5.0)
        return Resolve(SolveStatus.OPTIMAL, 1.0, "test")

    results: list[Resolve] = []
    first = threading.Thread(target=lambda: results.append(memo.get((b"k", False), compute)))
    first.start()
    assert started.wait(5.0)
    second = threading.Thread(target=lambda: results.append(memo.get((b"k", False), compute)))
    second.start()
    release.set()
    first.join(5.0)
    second.join(5.0)

    assert len(calls) == 1 and len(results) == 2 and results[0] is results[1]


def test_only_the_last_solve_is_verified() -> None:
    first, last = claim(CONVEX, 0.5), claim(CONVEX, 0.5)
    execution = Execution(status=ExecStatus.OK, solves=(first, last))

    checked = verify_last_solve(execution)

    assert checked.solves[0].verification is None
    assert checked.solves[-1].verification == "match"
    assert verify_last_solve(checked) is checked  # already verified: unchanged


def test_the_budget_follows_the_programs_own_cpu_time_not_its_wall_time() -> None:
    def budget(**seconds: float) -> float:
        return verify.verification_budget(Execution(status=ExecStatus.OK, **seconds))

    assert budget(wall_s=0.02, cpu_s=0.01) == verify.VERIFY_MIN_S
    assert budget(wall_s=30.0, cpu_s=30.0) == 60.0
    # A loaded machine stretched the program's wall time 20x: the budget does not follow it.
    assert budget(wall_s=600.0, cpu_s=3.0) == verify.VERIFY_MIN_S
    assert budget(wall_s=600.0, cpu_s=600.0) == verify.VERIFY_MAX_S


def test_a_time_limited_verdict_is_not_remembered() -> None:
    memo = verify._Memo(4)
    answers = iter([Resolve(SolveStatus.TIME_LIMIT, None, "t"), Resolve(SolveStatus.OPTIMAL, 1.0, "t")])

    assert memo.get((b"k", False), lambda: next(answers)).status is SolveStatus.TIME_LIMIT
    assert memo.get((b"k", False), lambda: next(answers)).status is SolveStatus.OPTIMAL


# max x + 2y on 0 <= x, y <= 1 with an equality row whose value is infinite (``x + y = 1e20`` as a
# capture reads it): the row binds nothing, so (1, 1) is optimal at 3; with x + y = 1 it is (0, 1) at 2.
def _equality_rows(value: float) -> LinearModel:
    return two_vars(
        sense="max",
        obj=(1.0, 2.0),
        lb=(0.0, 0.0),
        ub=(1.0, 1.0),
        row_names=("r",),
        row_lower=(value,),
        row_upper=(value,),
        a_row=(0, 0),
        a_col=(0, 1),
        a_val=(1.0, 1.0),
    )


@pytest.mark.parametrize(("value", "optimum"), [(INF, 3.0), (1.0, 2.0)], ids=["infinite", "finite"])
def test_every_parent_solver_reads_an_equality_row_alike(value: float, optimum: float) -> None:
    model = _equality_rows(value)
    solvers = [verify.resolve_with_highs, verify.resolve_with_scip]
    if gurobi_available():
        solvers.append(verify.resolve_with_gurobi)
    for solve in solvers:
        result = solve(model)
        assert (result.solver, result.status) == (result.solver, SolveStatus.OPTIMAL)
        assert result.objective == pytest.approx(optimum, abs=1e-9), result.solver


def test_the_gurobipy_re_solve_needs_no_scipy() -> None:
    """A base install has gurobipy but neither SciPy nor pyscipopt: the harness's gurobipy must
    still verify a quadratic claim (it once built its matrices with SciPy, so a base install left
    every QP claim unverified)."""
    if not gurobi_available():
        pytest.skip("gurobipy is not licensed in this environment")
    code = """
import sys
sys.modules["scipy"] = None  # any import of SciPy now fails, as where it is not installed
from trex_eval.records import LinearModel
from trex_eval import verify
result = verify.resolve_with_gurobi(LinearModel.model_validate_json(sys.argv[1]))
print(result.solver, result.status.value, round(result.objective, 6))
"""
    done = subprocess.run(
        [sys.executable, "-c", code, CONVEX.model_dump_json()],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["gurobipy", "optimal", "0.5"]
