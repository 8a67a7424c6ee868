"""What a wrong value is to the reference, without a re-solve: the rule's acceptance of a value,
a power-of-ten scale, a rounding to the label's decimals, a near miss. Pure."""

from __future__ import annotations

import math
import re
from typing import Literal

from trex_eval.errors import GradingError
from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.records import (
    DiagnosisCategory,
    ExecStatus,
    Execution,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
)

Category = DiagnosisCategory

SCALE_EXPONENTS = (2, -2, 1, -1, 3, -3, 4, -4, 5, -5, 6, -6)
"""Powers of ten a value is multiplied by to look for a scale mistake (percent first)."""

NEAR_MISS_RTOL = 1e-3
"""A value within this relative distance of the reference (outside the rule) is a near miss."""


def accepts(
    rule: ObjectiveRule, reference: ObjectiveReference, status: SolveStatus, value: float | None
) -> bool:
    """Whether ``rule`` grades a harness-verified solve of ``status`` and ``value`` ``correct``
    against ``reference``: the sample's own rule decides, on a record as the harness would have
    verified it (``verification="match"``). A rule that cannot judge it accepts nothing."""
    solve = SolveRecord(
        library="diagnosis",
        status=status,
        raw_status=status.value,
        objective=value,
        verified_objective=value,
        verification="match",
        verified_by="highs",
    )
    try:
        grade = rule.grade(Execution(status=ExecStatus.OK, solves=(solve,)), reference)
    except GradingError:
        return False
    return grade.verdict is Verdict.CORRECT


Standing = Literal["met", "short", "past"]
"""Where a re-solve stands to the reference (:func:`standing`)."""


def standing(
    rule: ObjectiveRule,
    reference: ObjectiveReference,
    sense: Literal["min", "max"],
    status: SolveStatus,
    value: float | None,
) -> Standing | None:
    """Where a re-solve of a model of ``sense`` stands to the reference: ``met`` (an optimum the
    rule accepts), ``short`` (an optimum not accepted and worse than the reference for ``sense``,
    or infeasible: short of any optimum), ``past`` (an optimum not accepted and better, or
    unbounded: past any optimum); ``None`` when the status says neither (``inf_or_unbd``, an
    error). Sound for the search's bounds because a rule accepts an interval around the reference
    (a tolerance on the values, rounded or not): an optimum that moves further away from the
    reference than one not accepted is not accepted either."""
    if status is SolveStatus.INFEASIBLE:
        return "short"
    if status is SolveStatus.UNBOUNDED:
        return "past"
    if status is not SolveStatus.OPTIMAL or value is None or reference.value is None:
        return None
    if accepts(rule, reference, status, value):
        return "met"
    better = value < reference.value if sense == "min" else value > reference.value
    return "past" if better else "short"


def label_decimals(label: str) -> int | None:
    """Decimals the reference label was written with, trailing zeros ignored (``"3000.0"``: 0,
    ``"12.35"``: 2); ``None`` for a label in exponent form or not a plain number."""
    text = label.strip()
    if not re.fullmatch(r"[-+]?\d+(\.\d*)?", text):
        return None
    _, _, fraction = text.partition(".")
    return len(fraction.rstrip("0"))


def scaled(rule: ObjectiveRule, reference: ObjectiveReference, value: float) -> int | None:
    """The exponent ``k`` of :data:`SCALE_EXPONENTS` for which ``value * 10**k`` is accepted, else
    ``None``."""
    if value == 0.0:
        return None
    for exponent in SCALE_EXPONENTS:
        if accepts(rule, reference, SolveStatus.OPTIMAL, value * 10.0**exponent):
            return exponent
    return None


def rounds_to_label(rule: ObjectiveRule, reference: ObjectiveReference, value: float) -> int | None:
    """The label's decimals when ``value`` rounded to them is accepted (``value`` itself is not),
    else ``None``."""
    decimals = label_decimals(reference.label)
    if decimals is None or decimals > 6:
        return None
    if accepts(rule, reference, SolveStatus.OPTIMAL, round(value, decimals)):
        return decimals
    return None


def near_miss(reference: ObjectiveReference, value: float) -> float | None:
    """The relative distance of ``value`` from the reference when it is within
    :data:`NEAR_MISS_RTOL`, else ``None``."""
    if reference.value is None or reference.value == 0.0 or not math.isfinite(value):
        return None
    distance = abs(value - reference.value) / abs(reference.value)
    return distance if distance <= NEAR_MISS_RTOL else None
