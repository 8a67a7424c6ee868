"""Single edits of a captured model, each a candidate explanation of a wrong answer: the model
with its sense flipped, its continuous variables integer, its integer variables relaxed, its
free variables non-negative, or one row dropped. Pure: each edit is a new
:class:`~trex_eval.records.LinearModel` (``model_copy``), the captured one is never changed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from trex_eval.records import DiagnosisCategory, LinearModel, VariableType

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


MAX_FAMILIES = 8
"""Variable families (:func:`families`) edited one at a time, beyond the edit of all of them."""

_FAMILY = re.compile(r"^(.*?)(?:[\[(].*|_\d+(?:_\d+)*)$")


def families(model: LinearModel, vtype: str) -> list[tuple[str, tuple[int, ...]]]:
    """The variables of type ``vtype`` grouped by family, the name without its index
    (``flow[3]``, ``flow(3)`` and ``flow_3`` are of ``flow``), largest family first: a program
    declares a family's type in one ``addVars`` call, so that is where a wrong type sits."""
    groups: dict[str, list[int]] = {}
    for index, (name, kind) in enumerate(zip(model.var_names, model.vtype, strict=True)):
        if kind == vtype:
            match = _FAMILY.match(name)
            groups.setdefault(match.group(1) if match else name, []).append(index)
    return sorted(((k, tuple(v)) for k, v in groups.items()), key=lambda item: (-len(item[1]), item[0]))


def retyped(model: LinearModel, columns: tuple[int, ...], vtype: VariableType) -> LinearModel:
    """``model`` with the variables ``columns`` of type ``vtype``."""
    kinds = list(model.vtype)
    for column in columns:
        kinds[column] = vtype
    return model.model_copy(update={"vtype": tuple(kinds)})


def _retypings(model: LinearModel, source: str, target: VariableType) -> Iterator[tuple[str, LinearModel]]:
    """Every ``source`` variable retyped ``target`` (continuous ``C`` made integer; general
    integers ``I`` relaxed, binaries kept: a yes/no choice declared binary is rarely the mistake),
    then, with more than one family, each of the first :data:`MAX_FAMILIES` families alone."""
    groups = families(model, source)
    if not groups:
        return
    every = tuple(column for _, columns in groups for column in columns)
    yield f"{len(every)} variable(s)", retyped(model, every, target)
    if len(groups) > 1:
        for name, columns in groups[:MAX_FAMILIES]:
            yield f"the {len(columns)} variable(s) of {name!r}", retyped(model, columns, target)


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
    then extra: all variables of the type, then family by family), missing non-negativity, then
    each of the first ``max_rows`` constrained rows dropped in the model's order. Generated
    lazily: a caller that stops early builds no more."""
    yield Edit(
        Category.SENSE_FLIPPED,
        f"the model {model.sense}imises; the reference is reached "
        f"when it {'max' if model.sense == 'min' else 'min'}imises",
        flipped(model),
    )
    for what, edited in _retypings(model, "C", "I"):
        yield Edit(Category.INTEGRALITY_MISSING, f"{what} made integer", edited)
    for what, edited in _retypings(model, "I", "C"):
        yield Edit(Category.INTEGRALITY_EXTRA, f"{what} relaxed to continuous", edited)
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
