"""Multiple objectives: ``setObjectiveN``, their attributes, and the hierarchical solve.

Objective 0 is the model's ordinary objective (the ``Obj`` attributes and ``ObjCon``); objectives
``1..NumObj-1`` are kept here, with each objective's priority, weight, tolerances and name.
Once ``setObjectiveN`` has been called the model is multi-objective (``IsMultiObj``), as in
gurobipy, and :func:`solve_hierarchy` solves it:

* objectives of equal priority are **blended**: one objective, the sum of weight times objective,
  optimised in the model's sense;
* priority levels are solved **in decreasing priority**; after each level, its blended objective
  may degrade by at most ``max(ObjNAbsTol, ObjNRelTol * |z|)`` (the smallest over the level's
  objectives) plus the level's MIP gap ``max(MIPGap * |z|, MIPGapAbs)`` in the later levels — a
  row ``blend <= z + tol`` (``>=`` when maximising). That is what Gurobi 13 does for MIPs
  (measured: with the default gaps a level degrades by ``1e-6 + 1e-4 |z|``). For LPs Gurobi
  instead fixes variables by reduced cost, which keeps the higher levels optimal (to its
  tolerance 1e-6): the layer adds the row with no degradation, and refuses
  (``NeedsGurobiError``) an LP level whose ``ObjNAbsTol`` exceeds 1e-6, where Gurobi's fixing is
  not reproducible;
* a MIP hierarchy is then **polished**: each higher level is re-optimised with the levels above
  it kept within their allowance and the levels below held at what they reached, which takes
  back the degradation the lower levels did not need — Gurobi, warm-starting each level from
  the previous solution, leaves a higher level undegraded whenever the lower ones allow it.

``ObjVal`` is then objective 0's value at the final solution; ``ObjBound`` and ``MIPGap`` do not
exist (as in gurobipy); ``ObjNVal`` gives each objective's value (``ObjNumber`` selects it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from . import _grb as G
from ._errors import GurobiError, NeedsGurobiError
from ._expr import LinExpr, QuadExpr, Var
from ._highs_solve import SolveOutcome
from ._snapshot import LinearRow, Snapshot

#: Gurobi's default ``ObjNAbsTol``; an LP level may not ask for more (see the module docstring).
DEFAULT_ABSTOL = 1e-6
#: Numerical room given to the row that keeps an LP level optimal.
LP_ROOM = 1e-9


@dataclass
class ObjectiveN:
    """One objective of a multi-objective model; ``terms`` is ``None`` for objective 0 (its
    coefficients are the variables' ``Obj`` and ``ObjCon``)."""

    terms: list[tuple[Var, float]] | None = None
    constant: float = 0.0
    priority: int = 0
    weight: float = 1.0
    abstol: float = DEFAULT_ABSTOL
    reltol: float = 0.0
    name: str = ""


@dataclass
class MultiObjectives:
    """The objectives set by ``setObjectiveN`` (index -> objective); objective 0 always exists."""

    objectives: dict[int, ObjectiveN] = field(default_factory=lambda: {0: ObjectiveN()})

    @property
    def count(self) -> int:
        return max(self.objectives) + 1

    def get(self, index: int) -> ObjectiveN:
        return self.objectives.get(index) or ObjectiveN(terms=[] if index else None)


def linear_objective(expr: object) -> LinExpr:
    """``expr`` as a linear expression, or gurobipy's error for a multi-objective model."""
    if isinstance(expr, LinExpr):
        return expr.copy()
    if isinstance(expr, Var):
        return expr._lin()
    if isinstance(expr, QuadExpr):
        raise GurobiError(-1, "Objective must be linear for multi-objective model")
    if not isinstance(expr, (int, float)):
        raise GurobiError(-1, "Unable to convert argument to an expression")
    return LinExpr(float(expr))


def column_costs(
    objective: ObjectiveN, main: tuple[float, ...], main_constant: float
) -> tuple[list[float], float]:
    """An objective's cost per column (column = variable index) and its constant."""
    if objective.terms is None:
        return list(main), main_constant
    costs = [0.0] * len(main)
    for var, coeff in objective.terms:
        if var._index >= 0 and var._index < len(costs):
            costs[var._index] += coeff
    return costs, objective.constant


def _levels(multi: MultiObjectives) -> list[list[int]]:
    by_priority: dict[int, list[int]] = {}
    for index in range(multi.count):
        by_priority.setdefault(multi.get(index).priority, []).append(index)
    return [by_priority[p] for p in sorted(by_priority, reverse=True)]


def _level_row(depth: int, blend: tuple[list[float], float], z: float, room: float, sense: int) -> LinearRow:
    """``blend <= z + room`` (``>= z - room`` when maximising) on the columns."""
    costs, constant = blend
    cols = tuple(j for j, c in enumerate(costs) if c != 0.0)
    bound = z - constant + (room if sense > 0 else -room)
    return LinearRow(
        f"objective level {depth}", "<" if sense > 0 else ">", bound, cols, tuple(costs[j] for j in cols)
    )


def _polish(
    snap: Snapshot,
    blends: list[tuple[list[float], float]],
    achieved: list[tuple[float, float]],
    solve_one: Callable[[Snapshot], SolveOutcome],
    outcome: SolveOutcome,
) -> SolveOutcome:
    """Take back the degradation that the lower levels did not need: each higher level is
    re-optimised with the levels above it kept within their allowance and the levels below it
    held at what they achieved. Gurobi, which warm-starts each level from the previous
    solution, leaves a higher level undegraded whenever the lower levels allow it."""
    values = [z for z, _tol in achieved]
    for depth in range(len(blends) - 1):
        rows = [_level_row(i, blends[i], achieved[i][0], achieved[i][1], snap.sense) for i in range(depth)]
        rows += [
            _level_row(i, blends[i], values[i], LP_ROOM * max(1.0, abs(values[i])), snap.sense)
            for i in range(depth + 1, len(blends))
        ]
        costs, constant = blends[depth]
        stage = replace(snap, obj=tuple(costs), obj_constant=constant, rows=snap.rows + tuple(rows))
        polished = solve_one(stage)
        if polished.status != G.OPTIMAL or polished.x is None:
            break
        outcome = polished
        values = [con + sum(c * v for c, v in zip(cols, polished.x, strict=False)) for cols, con in blends]
    return outcome


def solve_hierarchy(
    snap: Snapshot,
    multi: MultiObjectives,
    solve_one: Callable[[Snapshot], SolveOutcome],
    *,
    mip: bool,
    gaps: tuple[float, float] = (1e-4, 1e-10),
) -> tuple[SolveOutcome, list[float]]:
    """Solve ``snap`` (its objective is objective 0) level by level; returns the last level's
    outcome with ``objval`` set to objective 0's value, and every objective's value. ``gaps`` are
    the ``MIPGap`` and ``MIPGapAbs`` parameters (see the module docstring)."""
    if snap.q_obj:  # objective 0 made quadratic after setObjectiveN: Gurobi refuses it too
        raise GurobiError(10024, "Multi-objectives with quadratic terms")
    sense = snap.sense
    tables = [column_costs(multi.get(k), snap.obj, snap.obj_constant) for k in range(multi.count)]
    blends: list[tuple[list[float], float]] = []
    for level in _levels(multi):
        costs, constant = [0.0] * snap.num_vars, 0.0
        for index in level:
            weight = multi.get(index).weight
            column, con = tables[index]
            costs = [c + weight * v for c, v in zip(costs, column, strict=False)]
            constant += weight * con
        blends.append((costs, constant))
    levels = _levels(multi)
    rows: list[LinearRow] = []
    achieved: list[tuple[float, float]] = []  # (z, allowed degradation) per solved level
    outcome: SolveOutcome | None = None
    for depth, level in enumerate(levels):
        costs, constant = blends[depth]
        outcome = solve_one(
            replace(snap, obj=tuple(costs), obj_constant=constant, rows=snap.rows + tuple(rows))
        )
        if outcome.status != G.OPTIMAL or outcome.objval is None:
            break
        z = outcome.objval
        if mip:
            tol = min(max(multi.get(k).abstol, multi.get(k).reltol * abs(z)) for k in level)
            tol += max(gaps[0] * abs(z), gaps[1])
        elif depth < len(levels) - 1 and any(multi.get(k).abstol > DEFAULT_ABSTOL for k in level):
            raise NeedsGurobiError(
                "a hierarchical LP objective with ObjNAbsTol above 1e-6 (Gurobi fixes variables "
                "by reduced cost there, which an objective bound cannot reproduce)"
            )
        else:
            tol = LP_ROOM * max(1.0, abs(z))
        achieved.append((z, tol))
        rows.append(_level_row(depth, blends[depth], z, tol, sense))
    if mip and outcome is not None and outcome.status == G.OPTIMAL and len(achieved) == len(levels) > 1:
        outcome = _polish(snap, blends, achieved, solve_one, outcome)
    assert outcome is not None
    values: list[float] = []
    if outcome.x is not None:
        for column, con in tables:
            values.append(con + sum(c * v for c, v in zip(column, outcome.x, strict=False)))
        outcome.objval = values[0]
    outcome.objbound = None
    outcome.mip_gap = None
    outcome.pi = None
    outcome.rc = None
    return outcome, values
