"""The diagnosis's pieces on their own: the edits of a model, the constraint-drop search (with
the harness's real re-solve), where a value stands to the reference, the exception
classification and the label arithmetic."""

from __future__ import annotations

import math
from typing import Literal

import pytest

from trex_eval.grading.diagnosis.drops import describe, droppable, first_drop, without
from trex_eval.grading.diagnosis.edits import (
    continuous_relaxation,
    families,
    model_edits,
    rounded_bounds_widened,
)
from trex_eval.grading.diagnosis.failures import failure_diagnosis
from trex_eval.grading.diagnosis.values import Standing, label_decimals, standing
from trex_eval.grading.registry import objective_rule
from trex_eval.records import (
    Completion,
    Diagnosis,
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    QuadraticConstraint,
    SolveStatus,
    Verdict,
)
from trex_eval.verify import resolve

C = DiagnosisCategory


def _model() -> LinearModel:
    return LinearModel(
        sense="max",
        var_names=("flow[0]", "flow[1]", "y_1", "y_2", "z"),
        obj=(1.0, 1.0, 1.0, 1.0, 1.0),
        lb=(0.0, 0.0, -math.inf, 0.0, 0.0),
        ub=(math.inf, math.inf, math.inf, math.inf, 1.0),
        vtype=("C", "C", "I", "I", "B"),
        row_names=("cap", "free"),
        row_lower=(-math.inf, -math.inf),
        row_upper=(10.0, math.inf),
        a_row=(0, 0),
        a_col=(0, 1),
        a_val=(1.0, 1.0),
    )


def test_edits_in_order_each_a_copy() -> None:
    model = _model()
    edits = list(model_edits(model))
    assert [(e.category, e.direction) for e in edits] == [
        (C.SENSE_FLIPPED, None),
        (C.INTEGRALITY_MISSING, "restricts"),
        (C.INTEGRALITY_EXTRA, "relaxes"),
        (C.BOUNDS_MISSING, "restricts"),
    ]
    assert edits[0].model.sense == "min"
    assert edits[1].model.vtype == ("I", "I", "I", "I", "B")
    assert edits[2].model.vtype == ("C", "C", "C", "C", "B")  # binaries stay binary
    assert edits[3].model.lb == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert droppable(model, limit=10) == (0,)  # row 1 is free already
    dropped = without(model, (0,))
    assert dropped.row_upper == (math.inf, math.inf) and describe(model, 0) == "constraint 'cap' (row 0)"
    assert model == _model()  # the captured model is never changed
    assert families(model, "I") == [("y", (2, 3))]
    assert droppable(model, limit=0) == ()


def test_quadratic_constraints_are_droppable_after_the_rows() -> None:
    ring = QuadraticConstraint(lower=-math.inf, upper=4.0, quadratic=((0, 0, 1.0),))
    model = _model().model_copy(update={"q_constraints": (ring, ring), "n_quadratic_constraints": 2})
    assert droppable(model, limit=10) == (0, 2, 3)  # row 0, then quadratic constraints 0 and 1
    dropped = without(model, (3,))
    assert dropped.q_constraints == (ring,) and dropped.n_quadratic_constraints == 1
    assert describe(model, 3) == "quadratic constraint 1"


def test_the_continuous_relaxation_is_linear_only() -> None:
    model = _model()
    relaxed = continuous_relaxation(model)
    assert relaxed is not None and relaxed.vtype == ("C",) * 5 and relaxed.ub == model.ub
    assert continuous_relaxation(relaxed) is None  # nothing integral left to relax
    assert continuous_relaxation(model.model_copy(update={"q_obj": ((0, 0, 1.0),)})) is None


def test_rounded_integer_bounds_are_widened_by_one() -> None:
    """gurobipy stores ``ub=7.98`` of an integer variable as 7: the bracket's far end widens the
    relaxed variables' finite bounds (a zero lower bound is kept), and nothing else."""
    model = _model().model_copy(update={"lb": (0.0, 0.0, 2.0, 0.0, 0.0), "ub": (9.0, 9.0, 7.0, 7.0, 1.0)})
    relaxed = next(e.model for e in model_edits(model) if e.category is C.INTEGRALITY_EXTRA)
    widened = rounded_bounds_widened(model, relaxed)
    assert widened is not None and widened.vtype == relaxed.vtype
    assert widened.ub == (9.0, 9.0, 8.0, 8.0, 1.0) and widened.lb == (0.0, 0.0, 1.0, 0.0, 0.0)
    unbounded = model.model_copy(update={"lb": (0.0,) * 5, "ub": (math.inf,) * 5})
    assert rounded_bounds_widened(unbounded, unbounded.model_copy(update={"vtype": ("C",) * 5})) is None


REFERENCE_100 = ObjectiveReference(status=SolveStatus.OPTIMAL, value=100.0, label="100")
STRICT = objective_rule("strict")


def test_standing_to_the_reference() -> None:
    def stands(sense: Literal["min", "max"], status: SolveStatus, value: float | None) -> str | None:
        return standing(STRICT, REFERENCE_100, sense, status, value)

    assert stands("min", SolveStatus.OPTIMAL, 100.0) == "met"
    assert stands("min", SolveStatus.OPTIMAL, 120.0) == "short"
    assert stands("min", SolveStatus.OPTIMAL, 80.0) == "past"
    assert stands("max", SolveStatus.OPTIMAL, 120.0) == "past"
    assert stands("max", SolveStatus.OPTIMAL, 80.0) == "short"
    assert stands("max", SolveStatus.INFEASIBLE, None) == "short"
    assert stands("min", SolveStatus.UNBOUNDED, None) == "past"
    assert stands("min", SolveStatus.INF_OR_UNBD, None) is None


def _capped(n: int, extra: int) -> LinearModel:
    """min 100 + x_0 + ... + x_{n-1} over x >= 0 with rows ``x_i <= 10``, but row ``extra`` asks
    ``x_extra >= 5``: the optimum is 105, the model without row ``extra`` has 100, without any
    other row still 105 (those rows bind nothing)."""
    upper = [10.0] * n
    lower = [-math.inf] * n
    lower[extra], upper[extra] = 5.0, math.inf
    return LinearModel(
        sense="min",
        objective_constant=100.0,
        var_names=tuple(f"x[{i}]" for i in range(n)),
        obj=(1.0,) * n,
        lb=(0.0,) * n,
        ub=(math.inf,) * n,
        vtype=("C",) * n,
        row_names=tuple(f"r{i}" for i in range(n)),
        row_lower=tuple(lower),
        row_upper=tuple(upper),
        a_row=tuple(range(n)),
        a_col=tuple(range(n)),
        a_val=(1.0,) * n,
    )


def test_first_drop_finds_the_row_with_far_fewer_re_solves_than_rows() -> None:
    """The row whose drop meets the reference is found by the harness's real re-solves in about
    two per halving (each half without it is short: skipped whole), where a row-by-row scan
    would re-solve 174 models; a search whose candidates stop before that row finds none."""
    model = _capped(200, 173)
    probes: list[LinearModel] = []

    def probe(edited: LinearModel) -> tuple[SolveStatus, float | None]:
        probes.append(edited)
        found = resolve(edited, budget_s=10.0)
        return found.status, found.objective

    def stands(status: SolveStatus, value: float | None) -> Standing | None:
        return standing(STRICT, REFERENCE_100, "min", status, value)

    assert probe(model)[1] == pytest.approx(105.0)
    probes.clear()
    found = first_drop(model, droppable(model, limit=500), probe, stands)
    assert found is not None and found[0] == 173 and found[1] == pytest.approx(100.0)
    assert len(probes) <= 2 * math.ceil(math.log2(200)) + 1
    assert first_drop(model, droppable(model, limit=150), probe, stands) is None


def _failed(error_type: str, message: str, frame: str) -> Diagnosis | None:
    stderr = (
        'Traceback (most recent call last):\n  File "/tmp/job/program.py", line 3, in <module>\n'
        f'  File "{frame}", line 9, in f\n{error_type}: {message}\n'
    )
    execution = Execution(
        status=ExecStatus.RUNTIME_ERROR,
        error_type=error_type,
        detail=f"{error_type}: {message}",
        stderr_tail=stderr,
    )
    grade = Grade(verdict=Verdict.RUNTIME_ERROR, rule="strict@3", reason="x")
    return failure_diagnosis(Completion(problem_id="0", sample_index=0, text=""), execution, grade)


def test_exceptions_are_classified_by_where_they_were_raised() -> None:
    def category(error_type: str, message: str, frame: str = "/tmp/job/program.py") -> C | None:
        found = _failed(error_type, message, frame)
        return found.category if found else None

    assert category("KeyError", "'demand'") is C.DATA_ACCESS
    assert category("KeyError", "(3, 4)", "/usr/lib/python3/site-packages/pulp/pulp.py") is C.API_MISUSE
    assert (
        category("JSONDecodeError", "Expecting value", "/usr/lib/python3.12/json/decoder.py") is C.DATA_ACCESS
    )
    assert category("GurobiError", "Unknown parameter") is C.API_MISUSE
    assert category("TypeError", "unsupported operand type(s) for *: 'Var' and 'dict'") is C.API_MISUSE
    assert category("TypeError", "can only concatenate str (not 'int') to str") is C.RUNTIME_OTHER
    assert category("ModuleNotFoundError", "No module named 'pyomo'") is C.MISSING_LIBRARY
    assert category("NameError", "name 'x' is not defined") is C.RUNTIME_OTHER


def test_label_decimals() -> None:
    assert [label_decimals(t) for t in ("3000.0", "2333.33", "12", "1e5", "n/a")] == [0, 2, 0, None, None]
