"""Single edits of a captured model, each a candidate explanation of a wrong answer: the model
with its sense flipped, its continuous variables integer, its integer variables relaxed, its
free variables non-negative, or one row dropped. Pure: each edit is a new
:class:`~trex_eval.records.LinearModel` (``model_copy``), the captured one is never changed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from trex_eval.records import DiagnosisCategory, LinearModel

Category = DiagnosisCategory


@dataclass(frozen=True)
class Edit:
    """One edited copy of a captured model and the category it stands for when its re-solve meets
    the reference; ``detail`` says what was edited (row names are the program's own text)."""

    category: Category
    detail: str
    model: LinearModel


def flipped(model: LinearModel) -> LinearModel:
    """``model`` maximised where it minimised and the reverse."""
    return model.model_copy(update={"sense": "max" if model.sense == "min" else "min"})


def integral(model: LinearModel) -> LinearModel | None:
    """``model`` with every continuous variable integer (``None``: it has none)."""
    if "C" not in model.vtype:
        return None
    return model.model_copy(update={"vtype": tuple("I" if t == "C" else t for t in model.vtype)})


def relaxed(model: LinearModel) -> LinearModel | None:
    """``model`` with its general integer variables continuous (``None``: it has none). Binaries
    stay binary: declaring a yes/no choice binary is rarely the mistake, a count declared integer
    that the question measures continuously is."""
    if "I" not in model.vtype:
        return None
    return model.model_copy(update={"vtype": tuple("C" if t == "I" else t for t in model.vtype)})


def nonnegative(model: LinearModel) -> LinearModel | None:
    """``model`` with ``lb = 0`` on each variable whose lower bound is ``-inf`` and whose upper bound
    allows zero (``None``: there is none)."""
    free = [
        i for i, (lo, hi) in enumerate(zip(model.lb, model.ub, strict=True)) if lo == -math.inf and hi >= 0.0
    ]
    if not free:
        return None
    lb = list(model.lb)
    for i in free:
        lb[i] = 0.0
    return model.model_copy(update={"lb": tuple(lb)})


def without_row(model: LinearModel, row: int) -> LinearModel:
    """``model`` with row ``row`` made free (both sides infinite): the constraint dropped without
    renumbering the matrix."""
    lower, upper = list(model.row_lower), list(model.row_upper)
    lower[row], upper[row] = -math.inf, math.inf
    return model.model_copy(update={"row_lower": tuple(lower), "row_upper": tuple(upper)})


def candidate_edits(model: LinearModel, *, max_rows: int) -> Iterator[Edit]:
    """The edits to try, cheapest and most common mistakes first: sense, integrality (missing,
    then extra), missing non-negativity, then each of the first ``max_rows`` constrained rows
    dropped in the model's order. Generated lazily: a caller that stops early builds no more."""
    yield Edit(
        Category.SENSE_FLIPPED,
        f"the model {model.sense}imises; the reference is reached "
        f"when it {'max' if model.sense == 'min' else 'min'}imises",
        flipped(model),
    )
    more_integral = integral(model)
    if more_integral is not None:
        count = model.vtype.count("C")
        yield Edit(
            Category.INTEGRALITY_MISSING, f"{count} continuous variable(s) made integer", more_integral
        )
    less_integral = relaxed(model)
    if less_integral is not None:
        count = model.vtype.count("I")
        yield Edit(Category.INTEGRALITY_EXTRA, f"{count} integer variable(s) relaxed", less_integral)
    bounded = nonnegative(model)
    if bounded is not None:
        count = sum(1 for lo in model.lb if lo == -math.inf)
        yield Edit(Category.BOUNDS_MISSING, f"{count} free variable(s) made non-negative", bounded)
    tried = 0
    for row, (lower, upper) in enumerate(zip(model.row_lower, model.row_upper, strict=True)):
        if tried >= max_rows:
            return
        if lower == -math.inf and upper == math.inf:
            continue  # already free: dropping it changes nothing
        tried += 1
        name = model.row_names[row] if row < len(model.row_names) else f"row {row}"
        yield Edit(
            Category.CONSTRAINT_EXTRA, f"constraint {name!r} (row {row}) dropped", without_row(model, row)
        )
