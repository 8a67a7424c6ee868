"""Single edits of a captured model, each a candidate explanation of a wrong answer: the model
with its sense flipped, its continuous variables integer, its integer variables relaxed, its
free variables non-negative, or one constraint dropped (:func:`without`, searched by
:mod:`.drops`). Pure: each edit is a new :class:`~trex_eval.records.LinearModel`
(``model_copy``), the captured one is never changed.

Each edit but the sense flip moves the optimum one way only, which lets the search skip edits
that cannot reach the reference: an edit that *relaxes* the model (integrality relaxed, a
constraint dropped) can only keep or improve its optimum, one that *restricts* it (integrality
added, non-negativity added) can only keep or worsen it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from trex_eval.records import DiagnosisCategory, LinearModel, VariableType

Category = DiagnosisCategory

Direction = Literal["relaxes", "restricts"]
"""How an edit moves the feasible set: ``relaxes`` grows it (the optimum can only stay or
improve), ``restricts`` shrinks it (the optimum can only stay or worsen)."""


@dataclass(frozen=True)
class Edit:
    """One edited copy of a captured model and the category it stands for when its re-solve meets
    the reference; ``detail`` says what was edited (row names are the program's own text);
    ``direction`` how it moves the optimum (``None``: either way, the sense flip)."""

    category: Category
    detail: str
    model: LinearModel
    direction: Direction | None = None


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


def model_edits(model: LinearModel) -> Iterator[Edit]:
    """The edits of the whole model to try, cheapest and most common mistakes first: sense,
    integrality (missing, then extra: all variables of the type, then family by family), missing
    non-negativity. Constraint drops come after them (:mod:`.drops`). Generated lazily: a caller
    that stops early builds no more."""
    yield Edit(
        Category.SENSE_FLIPPED,
        f"the model {model.sense}imises; the reference is reached "
        f"when it {'max' if model.sense == 'min' else 'min'}imises",
        flipped(model),
    )
    for what, edited in _retypings(model, "C", "I"):
        yield Edit(Category.INTEGRALITY_MISSING, f"{what} made integer", edited, "restricts")
    for what, edited in _retypings(model, "I", "C"):
        yield Edit(Category.INTEGRALITY_EXTRA, f"{what} relaxed to continuous", edited, "relaxes")
    bounded = nonnegative(model)
    if bounded is not None:
        count = sum(1 for lo in model.lb if lo == -math.inf)
        yield Edit(
            Category.BOUNDS_MISSING, f"{count} free variable(s) made non-negative", bounded, "restricts"
        )


def continuous_relaxation(model: LinearModel) -> LinearModel | None:
    """``model`` with its integer and binary variables continuous (its bounds kept): an LP, whose
    re-solve is far cheaper than the MILP's. ``None`` for a model with none, with semi-continuous
    or semi-integer variables (not relaxed here), or with quadratic parts: the continuous
    relaxation of a non-convex quadratic model can take longer than the model itself (measured:
    an ORThought MIQCP of 6 columns solved in milliseconds, its relaxation ran out of 2 s)."""
    kinds = set(model.vtype)
    if not kinds & {"I", "B"} or kinds & {"S", "N"} or model.q_obj or model.q_constraints:
        return None
    return model.model_copy(update={"vtype": ("C",) * model.num_vars})


def rounded_bounds_widened(model: LinearModel, relaxed: LinearModel) -> LinearModel | None:
    """``relaxed`` (``model`` with integer variables made continuous) with each finite upper bound
    of those variables raised by one and each finite non-zero lower bound lowered by one, or
    ``None`` when there is none to widen.

    Why: gurobipy rounds the bounds of an integer variable when it is declared (``ub=7.98`` is
    stored, and captured, as ``7``), so a variable the program declared integer by mistake comes
    with bounds that are no longer the program's. The program's model without the mistake lies
    between ``relaxed`` and this model (its bounds were within one of the rounded ones), and so
    does its optimum. A zero lower bound is kept: it is the non-negativity a program declares,
    rarely a rounded ``-0.5``, and widening it would loosen the bracket the most."""
    lb, ub, widened = list(relaxed.lb), list(relaxed.ub), False
    for column, (before, after) in enumerate(zip(model.vtype, relaxed.vtype, strict=True)):
        if before != "I" or after != "C":
            continue
        if math.isfinite(ub[column]):
            ub[column], widened = ub[column] + 1.0, True
        if math.isfinite(lb[column]) and lb[column] != 0.0:
            lb[column], widened = lb[column] - 1.0, True
    return relaxed.model_copy(update={"lb": tuple(lb), "ub": tuple(ub)}) if widened else None
