"""The diagnosis's pieces on their own: the edits of a model, the exception classification, the
label arithmetic and the report helpers."""

from __future__ import annotations

import math

from trex_eval.grading.diagnosis.edits import candidate_edits, families
from trex_eval.grading.diagnosis.failures import failure_diagnosis
from trex_eval.grading.diagnosis.values import label_decimals
from trex_eval.records import (
    Completion,
    Diagnosis,
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    Verdict,
)

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
    edits = list(candidate_edits(model, max_rows=10))
    assert [e.category for e in edits] == [
        C.SENSE_FLIPPED,
        C.INTEGRALITY_MISSING,
        C.INTEGRALITY_EXTRA,
        C.BOUNDS_MISSING,
        C.CONSTRAINT_EXTRA,  # only row 0: row 1 is free already
    ]
    assert edits[0].model.sense == "min"
    assert edits[1].model.vtype == ("I", "I", "I", "I", "B")
    assert edits[2].model.vtype == ("C", "C", "C", "C", "B")  # binaries stay binary
    assert edits[3].model.lb == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert edits[4].model.row_upper == (math.inf, math.inf) and "'cap'" in edits[4].detail
    assert model == _model()  # the captured model is never changed
    assert families(model, "I") == [("y", (2, 3))]
    assert list(candidate_edits(model, max_rows=0))[-1].category is C.BOUNDS_MISSING


def test_integrality_is_tried_family_by_family() -> None:
    model = _model().model_copy(update={"vtype": ("C", "C", "C", "C", "B")})
    missing = [e for e in candidate_edits(model, max_rows=0) if e.category is C.INTEGRALITY_MISSING]
    assert [e.model.vtype for e in missing] == [
        ("I", "I", "I", "I", "B"),
        ("I", "I", "C", "C", "B"),
        ("C", "C", "I", "I", "B"),
    ]


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
    grade = Grade(verdict=Verdict.RUNTIME_ERROR, rule="strict@2", reason="x")
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
