"""The constraint-drop edits: which constraint of a captured model, dropped alone, lets its
re-solve meet the reference. Pure; the re-solves go through the ``probe`` the caller hands in.

Dropping constraints relaxes a model, so a model with a whole group of constraints dropped has
an optimum at least as good as the model with any one of them dropped. :func:`first_drop` uses
that as a bound: when dropping a group still leaves the optimum short of the reference (worse
and not accepted by the rule, or infeasible), no single constraint of the group can explain the
answer, and the group is skipped with one re-solve instead of one per constraint. Otherwise the
group is halved, left half first, down to single constraints, so the drop found is the first in
the model's order whose re-solve meets the reference: the one a drop-by-drop scan would find,
usually after far fewer re-solves (a model held short of the reference by one constraint that
the others do not stand in for is searched in about two re-solves per halving). A model with
integer variables first has the group dropped from its continuous relaxation, a cheap bound:
when even that is short, so is the model, and its re-solve is spared (on B4O's MILPs the
relaxations took milliseconds where the models took a tenth of a second and more).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from trex_eval.grading.diagnosis.edits import continuous_relaxation
from trex_eval.grading.diagnosis.values import Standing
from trex_eval.records import LinearModel, SolveStatus

Probe = Callable[[LinearModel], tuple[SolveStatus, float | None]]
"""Re-solves a model: its status and objective (the search's budgeted solver)."""


def droppable(model: LinearModel, *, limit: int) -> tuple[int, ...]:
    """The constraints a drop may remove, at most ``limit`` of them: the linear rows that bound
    anything (a free row changes nothing), in the model's order, then the quadratic constraints,
    numbered after the rows (``num_rows + k`` is quadratic constraint ``k``)."""
    rows = [
        row
        for row, (lower, upper) in enumerate(zip(model.row_lower, model.row_upper, strict=True))
        if lower != -math.inf or upper != math.inf
    ]
    quadratic = range(model.num_rows, model.num_rows + len(model.q_constraints))
    return tuple([*rows, *quadratic][: max(0, limit)])


def without(model: LinearModel, dropped: Sequence[int]) -> LinearModel:
    """``model`` with the constraints ``dropped`` (numbered as :func:`droppable` numbers them)
    removed: a linear row is made free (both sides infinite, the matrix not renumbered), a
    quadratic constraint is taken out of the list and its count."""
    rows = [index for index in dropped if index < model.num_rows]
    gone = {index - model.num_rows for index in dropped if index >= model.num_rows}
    lower, upper = list(model.row_lower), list(model.row_upper)
    for row in rows:
        lower[row], upper[row] = -math.inf, math.inf
    update: dict[str, object] = {"row_lower": tuple(lower), "row_upper": tuple(upper)}
    if gone:
        kept = tuple(c for k, c in enumerate(model.q_constraints) if k not in gone)
        update["q_constraints"] = kept
        update["n_quadratic_constraints"] = model.n_quadratic_constraints - len(gone)
    return model.model_copy(update=update)


def describe(model: LinearModel, index: int) -> str:
    """The constraint ``index`` as a detail names it: its row name (the program's own text) and
    number, or the quadratic constraint's number."""
    if index >= model.num_rows:
        return f"quadratic constraint {index - model.num_rows}"
    name = model.row_names[index] if index < len(model.row_names) else f"row {index}"
    return f"constraint {name!r} (row {index})"


def first_drop(
    model: LinearModel,
    candidates: Sequence[int],
    probe: Probe,
    standing: Callable[[SolveStatus, float | None], Standing | None],
) -> tuple[int, float] | None:
    """The first of ``candidates`` (in their order) whose drop alone gives a re-solve that
    ``standing`` calls ``met``, with that re-solve's value; ``None`` when there is none. Groups
    whose drop leaves the re-solve ``short`` are skipped whole (see the module docstring); the
    caller has already ruled out a model that is ``past`` the reference before any drop (every
    drop keeps it past)."""
    relaxed = continuous_relaxation(model)
    pending: list[tuple[int, ...]] = [tuple(candidates)] if candidates else []
    while pending:
        group = pending.pop()
        if relaxed is not None and standing(*probe(without(relaxed, group))) == "short":
            continue  # the continuous relaxation is short already: so is the model itself
        status, value = probe(without(model, group))
        stands = standing(status, value)
        if stands == "short":
            continue
        if len(group) == 1:
            if stands == "met" and value is not None:
                return group[0], value
            continue
        half = len(group) // 2
        pending += [group[half:], group[:half]]  # the left half is popped first
    return None
