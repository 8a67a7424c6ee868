"""HiGHS re-solve of captured matrices (hand-built models with hand-checked optima)."""

from __future__ import annotations

import math

import pytest

from trex_eval.records import LinearModel, SolveRecord, SolveStatus
from trex_eval.verify import objectives_agree, verify_solve

INF = math.inf


def textbook(*, integer: bool = False, **changes: object) -> LinearModel:
    """max 5x + 4y  s.t. 6x + 4y <= 24, x + 2y <= 6, x, y >= 0: LP optimum 21 at (3, 1.5),
    integer optimum 20 at (4, 0)."""
    fields: dict[str, object] = {
        "sense": "max",
        "var_names": ("x", "y"),
        "obj": (5.0, 4.0),
        "lb": (0.0, 0.0),
        "ub": (INF, INF),
        "vtype": ("I", "I") if integer else ("C", "C"),
        "row_names": ("wood", "labour"),
        "row_lower": (-INF, -INF),
        "row_upper": (24.0, 6.0),
        "a_row": (0, 0, 1, 1),
        "a_col": (0, 1, 0, 1),
        "a_val": (6.0, 4.0, 1.0, 2.0),
    }
    fields.update(changes)
    return LinearModel.model_validate(fields)


def claim(model: LinearModel | None, status: SolveStatus, objective: float | None = None) -> SolveRecord:
    return SolveRecord(library="test", status=status, raw_status="", objective=objective, model=model)


@pytest.mark.parametrize(
    ("integer", "reported", "verdict"),
    [
        (False, 21.0, "match"),
        (False, 21.0 + 1e-7, "match"),
        (False, 21.5, "mismatch"),
        (False, 20.0, "mismatch"),
        (True, 20.0, "match"),
        (True, 20.003, "match"),
        (True, 21.0, "mismatch"),
    ],
)
def test_optimal_claims(integer: bool, reported: float, verdict: str) -> None:
    checked = verify_solve(claim(textbook(integer=integer), SolveStatus.OPTIMAL, reported))

    assert checked.verification == verdict
    assert checked.verified_objective == pytest.approx(20.0 if integer else 21.0, abs=1e-7)


def test_objective_constant_and_minimisation() -> None:
    # min x + y + 10 with x + y >= 3: optimum 13.
    model = LinearModel(
        sense="min",
        objective_constant=10.0,
        var_names=("x", "y"),
        obj=(1.0, 1.0),
        lb=(0.0, 0.0),
        ub=(INF, INF),
        vtype=("C", "C"),
        row_names=("r",),
        row_lower=(3.0,),
        row_upper=(INF,),
        a_row=(0, 0),
        a_col=(0, 1),
        a_val=(1.0, 1.0),
    )

    assert verify_solve(claim(model, SolveStatus.OPTIMAL, 13.0)).verification == "match"
    assert verify_solve(claim(model, SolveStatus.OPTIMAL, 3.0)).verification == "mismatch"


def test_duplicate_entries_are_summed_and_binaries_bounded() -> None:
    # max b + x with x + x <= 3 (one coefficient 2 given as two 1s), b binary declared with ub = inf:
    # optimum 1 + 1.5 = 2.5.
    model = LinearModel(
        sense="max",
        var_names=("b", "x"),
        obj=(1.0, 1.0),
        lb=(0.0, 0.0),
        ub=(INF, INF),
        vtype=("B", "C"),
        row_names=("r",),
        row_lower=(-INF,),
        row_upper=(3.0,),
        a_row=(0, 0),
        a_col=(1, 1),
        a_val=(1.0, 1.0),
    )

    checked = verify_solve(claim(model, SolveStatus.OPTIMAL, 2.5))
    assert checked.verification == "match" and checked.verified_objective == pytest.approx(2.5)


def test_infeasibility_claims() -> None:
    infeasible = textbook(row_upper=(-1.0, 6.0))  # 6x + 4y <= -1 with x, y >= 0

    assert verify_solve(claim(infeasible, SolveStatus.INFEASIBLE)).verification == "match"
    assert verify_solve(claim(infeasible, SolveStatus.INF_OR_UNBD)).verification == "match"
    assert verify_solve(claim(textbook(), SolveStatus.INFEASIBLE)).verification == "mismatch"
    assert verify_solve(claim(infeasible, SolveStatus.OPTIMAL, 0.0)).verification == "mismatch"


def test_unboundedness_claims() -> None:
    unbounded = textbook(row_upper=(INF, INF))

    assert verify_solve(claim(unbounded, SolveStatus.UNBOUNDED)).verification == "match"
    assert verify_solve(claim(unbounded, SolveStatus.OPTIMAL, 1e9)).verification == "mismatch"


@pytest.mark.parametrize(
    ("solve", "reason"),
    [
        (claim(None, SolveStatus.OPTIMAL, 1.0), "skipped: no matrix captured"),
        (
            claim(textbook(n_quadratic_constraints=1), SolveStatus.OPTIMAL, 1.0),
            "skipped: model has quadratic constraints that were not captured",
        ),
        (
            claim(textbook(n_general_constraints=1), SolveStatus.OPTIMAL, 1.0),
            "skipped: model has SOS or general constraints",
        ),
        (claim(textbook(n_sos=1), SolveStatus.OPTIMAL, 1.0), "skipped: model has SOS or general constraints"),
        (claim(textbook(), SolveStatus.TIME_LIMIT, 19.0), "skipped: solver status time_limit"),
    ],
)
def test_skips(solve: SolveRecord, reason: str) -> None:
    checked = verify_solve(solve)

    assert checked.verification == reason and checked.verified_objective is None


def test_existing_verification_is_kept() -> None:
    solve = claim(None, SolveStatus.OPTIMAL, 1.0).model_copy(update={"verification": "skipped: already"})

    assert verify_solve(solve) is solve


def test_empty_model_is_its_constant() -> None:
    empty = LinearModel(
        sense="min",
        objective_constant=42.0,
        var_names=(),
        obj=(),
        lb=(),
        ub=(),
        vtype=(),
        row_names=(),
        row_lower=(),
        row_upper=(),
        a_row=(),
        a_col=(),
        a_val=(),
    )

    checked = verify_solve(claim(empty, SolveStatus.OPTIMAL, 42.0))
    assert checked.verification == "match" and checked.verified_objective == 42.0


def test_tolerance_rule() -> None:
    assert objectives_agree(1e9, 1e9 + 999.0, integral=False)  # 1e-6 * 1e9 = 1000
    assert not objectives_agree(1e9, 1e9 + 1001.0 + 1e-6, integral=False)
    assert objectives_agree(0.0, 1e-6, integral=False)
    assert not objectives_agree(0.0, 3e-6, integral=False)
    assert objectives_agree(100.0, 100.02, integral=True)  # 1e-6 + 2e-4 * 100


def test_verification_works_after_the_harness_solved_with_another_thread_count() -> None:
    """HiGHS keeps one scheduler per process; a harness that already ran HiGHS with 2 threads
    (SciPy, the reference backend) must still verify (regression: it reported kNotset)."""
    import highspy

    other = highspy.Highs()
    other.setOptionValue("output_flag", False)
    other.setOptionValue("threads", 2)
    other.addVar(0.0, 1.0)
    other.run()
    model = LinearModel(
        sense="max",
        var_names=("x",),
        obj=(3.0,),
        lb=(0.0,),
        ub=(2.0,),
        vtype=("C",),
        row_names=(),
        row_lower=(),
        row_upper=(),
        a_row=(),
        a_col=(),
        a_val=(),
    )
    solve = SolveRecord(
        library="t", status=SolveStatus.OPTIMAL, raw_status="2", objective=6.0, sense="max", model=model
    )
    checked = verify_solve(solve)
    assert checked.verification == "match" and checked.verified_objective == 6.0
