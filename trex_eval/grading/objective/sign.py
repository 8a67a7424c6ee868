"""The sign of a minimise-only solver's optimum. Pure.

SciPy's ``linprog`` and ``milp`` (the sandbox hooks' libraries ``scipy.linprog`` and
``scipy.milp``, :data:`MINIMISE_ONLY`) cannot state a maximisation: a program maximises ``f`` by
minimising ``−f`` and reports ``−res.fun``, SciPy's documented idiom. The hooks capture the solve
as it ran, so the harness's re-solve of that model is ``min −f = −max f``: right magnitude, the
sign only in the program's hands. The rule (:func:`signed`):

* the **magnitude** always comes from verification (the harness's re-solve, or, before one ran,
  the claim that must agree with it); only the **sign** may come from elsewhere;
* where the benchmark states the objective's sense (:attr:`ObjectiveReference.sense`), the sense
  decides: ``max`` grades the negation, ``min`` the value as solved, whatever was printed;
* else the negation is graded when the program reported it: the last number the program printed
  (:attr:`Execution.stdout_tail`, the last ``SandboxLimits.tail_chars`` characters) that agrees
  with the value or with its negation, within verification's agreement tolerance
  (:data:`~trex_eval.grading.objective.base.AGREEMENT_RTOL`), agrees with the negation;
* a program that printed neither keeps the value as solved (a grade that misses where its
  negation would pass says so, and the diagnosis is ``objective_negated``).

Every other library states its sense, and its value is graded as solved. A forger gains nothing:
the printed number only chooses between ``v`` and ``−v`` for the ``v`` the harness re-derived
from the captured model, so passing still takes a model whose optimum has the reference's
magnitude, which is what building that model honestly under any library gains.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from trex_eval.errors import GradingError
from trex_eval.grading.objective.base import AGREEMENT_ATOL, AGREEMENT_RTOL, fmt
from trex_eval.records import ObjectiveReference, Problem, SolveRecord

__all__ = [
    "MINIMISE_ONLY",
    "SENSE_FIELD",
    "Signed",
    "last_reported",
    "signed",
    "stated_sense",
    "unsigned_note",
]

MINIMISE_ONLY = frozenset({"scipy.linprog", "scipy.milp"})
"""Hooked libraries (``SolveRecord.library``) that only minimise (``scipy.optimize.minimize`` is
not hooked: it has no captured model and no verified value)."""

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
"""A number as a program prints one (``3000.0``, ``-1.5e3``, ``3,000.00``), not the digits of a
name (``x1``) or of a dotted path."""


@dataclass(frozen=True)
class Signed:
    """The sign a solve's value is graded with: ``factor`` (``1.0``, or ``-1.0``: the negation is
    graded) and ``note``, the reason's words for a negation (empty otherwise)."""

    factor: float = 1.0
    note: str = ""

    @property
    def negated(self) -> bool:
        return self.factor < 0


AS_SOLVED = Signed()

SENSE_FIELD = "sense"
"""The problem field (``Problem.meta``, a benchmark YAML's ``fields.meta``) that states the
objective's sense: ``min``/``max`` or a spelled-out form (``minimize``, ``Maximisation``, ...)."""

_SENSE_WORDS: tuple[tuple[Literal["min", "max"], str], ...] = (("min", "minim"), ("max", "maxim"))
_SENSES: dict[str, Literal["min", "max"]] = {
    word: sense
    for sense, stem in _SENSE_WORDS
    for word in (sense, f"{stem}um", f"{stem}ize", f"{stem}ise", f"{stem}ization", f"{stem}isation")
}


def stated_sense(problem: Problem, reference: ObjectiveReference) -> ObjectiveReference:
    """``reference`` with the sense ``problem`` states in its :data:`SENSE_FIELD` field (itself when
    the field is absent or blank, or the reference already carries a sense).

    Raises:
        GradingError: the field holds something other than a sense.
    """
    text = problem.meta.get(SENSE_FIELD, "").strip()
    if not text or reference.sense is not None:
        return reference
    sense = _SENSES.get(text.lower())
    if sense is None:
        raise GradingError(
            f"problem {problem.benchmark}/{problem.id}: field {SENSE_FIELD!r} is {text!r}, "
            "not an objective sense",
            hint="write min or max (or minimize/maximize) in that column, or leave it out of fields.meta",
        )
    return reference.model_copy(update={"sense": sense})


def _agrees(printed: float, value: float) -> bool:
    return abs(printed - value) <= AGREEMENT_ATOL + AGREEMENT_RTOL * max(1.0, abs(value))


def last_reported(stdout: str, value: float) -> float | None:
    """The last number in ``stdout`` that agrees with ``value`` or with ``−value`` (verification's
    agreement tolerance), or ``None``."""
    found: float | None = None
    for match in _NUMBER.finditer(stdout):
        try:
            number = float(match.group().replace(",", ""))
        except ValueError:  # "1." and the like parse; kept for any text the pattern lets through
            continue
        if math.isfinite(number) and (_agrees(number, value) or _agrees(number, -value)):
            found = number
    return found


def signed(solve: SolveRecord, value: float, *, stdout: str, sense: Literal["min", "max"] | None) -> Signed:
    """The sign ``value`` (the harness's re-solve of ``solve``, or its claim before one ran) is
    graded with (see the module docstring): :data:`AS_SOLVED` for a library that states its sense,
    a zero value, a stated ``min``, or a program that printed no negation of ``value``."""
    library = solve.library
    if library not in MINIMISE_ONLY or value == 0.0 or sense == "min":
        return AS_SOLVED
    if sense == "max":
        return Signed(
            -1.0,
            f"{library} only minimises and the benchmark states a maximisation: the negation of "
            f"its optimum {fmt(value)} is graded",
        )
    printed = last_reported(stdout, value)
    if printed is None or _agrees(printed, value):
        return AS_SOLVED
    return Signed(
        -1.0,
        f"{library} only minimises and the program printed {fmt(printed)}, the negation of its "
        f"optimum {fmt(value)}: the negation is graded, its magnitude the harness's",
    )


def unsigned_note(solve: SolveRecord | None) -> str | None:
    """Why a minimise-only solve whose negation would pass was graded as solved (``None`` for
    any other library)."""
    if solve is None or solve.library not in MINIMISE_ONLY:
        return None
    return (
        f"{solve.library} only minimises: a maximisation's optimum is the negation of the solve's, "
        "but the program printed no number agreeing with that negation (nor does the benchmark "
        "state the sense), so the value is graded as solved"
    )
