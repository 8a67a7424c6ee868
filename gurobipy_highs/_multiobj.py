"""Multiple objectives: ``setObjectiveN``, their attributes, and the hierarchical solve.

Objective 0 is the model's ordinary objective (the ``Obj`` attributes and ``ObjCon``); objectives
``1..NumObj-1`` are kept here, with each objective's priority, weight, tolerances and name.
Once ``setObjectiveN`` has been called the model is multi-objective (``IsMultiObj``), as in
gurobipy, and :func:`solve_hierarchy` solves it:

* objectives of equal priority are **blended**: one objective, the sum of weight times objective,
  optimised in the model's sense;
* priority levels are solved **in decreasing priority**; after each level, its blended objective
  may degrade by at most ``max(ObjNAbsTol, ObjNRelTol * |z|)`` (the smallest over the level's
  objectives) in the later levels — a row ``blend <= z + tol`` (``>=`` when maximising). That is
  Gurobi's rule for MIPs. For LPs Gurobi instead fixes variables by reduced cost, which keeps the
  higher levels optimal (to its tolerance 1e-6): the layer adds the row with no degradation, and
  refuses (``NeedsGurobiError``) an LP level whose ``ObjNAbsTol`` exceeds 1e-6, where Gurobi's
  fixing is not reproducible.

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
    if isinstance(expr, QuadExpr) or not isinstance(expr, (int, float)):
        raise GurobiError(10003, "Objective must be linear for multi-objective model")
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


def solve_hierarchy(
    snap: Snapshot,
    multi: MultiObjectives,
    solve_one: Callable[[Snapshot], SolveOutcome],
    *,
    mip: bool,
) -> tuple[SolveOutcome, list[float]]:
    """Solve ``snap`` (its objective is objective 0) level by level; returns the last level's
    outcome with ``objval`` set to objective 0's value, and every objective's value."""
    if snap.q_obj:
        raise GurobiError(10003, "Objective must be linear for multi-objective model")
    sense = snap.sense
    tables = [column_costs(multi.get(k), snap.obj, snap.obj_constant) for k in range(multi.count)]
    rows: list[LinearRow] = []
    outcome: SolveOutcome | None = None
    levels = _levels(multi)
    for depth, level in enumerate(levels):
        costs = [0.0] * snap.num_vars
        constant = 0.0
        for index in level:
            weight = multi.get(index).weight
            column, con = tables[index]
            costs = [c + weight * v for c, v in zip(costs, column, strict=False)]
            constant += weight * con
        stage = replace(snap, obj=tuple(costs), obj_constant=constant, rows=snap.rows + tuple(rows))
        outcome = solve_one(stage)
        if outcome.status != G.OPTIMAL or outcome.objval is None or depth == len(levels) - 1:
            break
        z = outcome.objval
        if mip:
            tol = min(max(multi.get(k).abstol, multi.get(k).reltol * abs(z)) for k in level)
        else:
            if any(multi.get(k).abstol > DEFAULT_ABSTOL for k in level):
                raise NeedsGurobiError(
                    "a hierarchical LP objective with ObjNAbsTol above 1e-6 (Gurobi fixes variables "
                    "by reduced cost there, which an objective bound cannot reproduce)"
                )
            tol = LP_ROOM * max(1.0, abs(z))
        cols = tuple(j for j, c in enumerate(costs) if c != 0.0)
        bound = z - constant + (tol if sense > 0 else -tol)
        rows.append(
            LinearRow(
                f"objective level {depth}",
                "<" if sense > 0 else ">",
                bound,
                cols,
                tuple(costs[j] for j in cols),
            )
        )
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
