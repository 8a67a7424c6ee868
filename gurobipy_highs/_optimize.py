"""``Model.optimize``: from the model's state to a Gurobi-style outcome.

The steps, each exact or refused:

1. the snapshot's indicator and ``max_``/``min_``/``abs_``/``and_``/``or_`` constraints become
   rows (:mod:`._reform`); what HiGHS still cannot solve raises ``NeedsGurobiError``;
2. each solve is checked against the original general constraints; a big-M row that held only
   thanks to the integrality tolerance triggers one re-solve with tolerances at 1e-9, and if
   that is still not exact, ``NeedsGurobiError``;
3. a callback wraps each solve in the lazy-constraint loop (:mod:`._callback`);
4. a multi-objective model is solved level by level (:mod:`._multiobj`), a MIP one with a
   tighter MIP feasibility tolerance (see :data:`HIERARCHY`);
5. ``Cutoff``: an optimum worse than the cutoff becomes status ``CUTOFF``, reported as Gurobi
   reports it (see :func:`_apply_cutoff`). ``BestObjStop``/``BestBdStop`` need nothing: the optimum satisfies
   both stopping rules, so it is an answer Gurobi can give (Gurobi may stop earlier with a
   worse incumbent and status ``USER_OBJ_LIMIT``; HiGHS solves to optimality);
6. the outcome is cut back to the model's own columns and rows; a model with general
   constraints is a MIP for Gurobi, so it has no duals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import _grb as G
from ._callback import cut_loop
from ._errors import NeedsGurobiError
from ._highs_solve import SolveOutcome, check_solvable, solve
from ._multiobj import solve_hierarchy
from ._params import ParamSet
from ._reform import reformulate, violations
from ._snapshot import Snapshot
from ._state import ModelState, build_snapshot

#: Tolerance of the re-check of general constraints (relative to the magnitudes involved).
GENERAL_TOL = 1e-5
#: HiGHS tolerances of the retry after a big-M row held only within tolerance.
TIGHT = {"mip_feasibility_tolerance": 1e-9, "primal_feasibility_tolerance": 1e-9}
#: HiGHS's MIP presolve holds rows only to ``mip_feasibility_tolerance`` (``IntFeasTol``, 1e-5),
#: so it takes a hierarchy level's allowance (1e-6 + 1e-10 for an objective at 0) for zero — a
#: forcing row — where Gurobi uses it; a multi-objective MIP is solved with it tighter (found by
#: the property-based differential test).
HIERARCHY = {"mip_feasibility_tolerance": 1e-9}


def run_optimize(
    model: Any, state: ModelState, callback: Callable[[Any, int], object] | None
) -> SolveOutcome:
    """Solve the model's current (updated) contents; see the module docstring."""
    snap = build_snapshot(state)
    work = reformulate(snap)
    check_solvable(work, state.params)
    params = state.params
    first = HIERARCHY if state.multi is not None and snap.is_mip else None

    def checked(stage: Snapshot) -> SolveOutcome:
        outcome = solve(stage, params, overrides=first)
        if outcome.x is None or not violations(snap, outcome.x, GENERAL_TOL):
            return outcome
        outcome = solve(stage, params, overrides=TIGHT)
        broken = violations(snap, outcome.x, GENERAL_TOL) if outcome.x is not None else []
        if broken:
            raise NeedsGurobiError(
                f"general constraint(s) {', '.join(broken[:3])} hold only within the integrality "
                "tolerance of their big-M reformulation"
            )
        return outcome

    solve_one: Callable[[Snapshot], SolveOutcome] = checked
    if callback is not None:
        solve_one = cut_loop(model, state, callback, snap.is_mip, checked)
    objective_values: list[float] | None = None
    if state.multi is not None:
        gaps = (float(params.get("MIPGap")), float(params.get("MIPGapAbs")))
        outcome, objective_values = solve_hierarchy(work, state.multi, solve_one, mip=snap.is_mip, gaps=gaps)
    else:
        outcome = solve_one(work)
    _apply_cutoff(outcome, params, snap.sense, snap.is_mip)
    outcome.objn = objective_values
    if outcome.x is not None:
        outcome.x = outcome.x[: snap.num_vars]
    if outcome.rc is not None:
        outcome.rc = outcome.rc[: snap.num_vars]
    if outcome.slack is not None:
        outcome.slack = outcome.slack[: len(snap.rows)]
    if outcome.pi is not None:
        outcome.pi = outcome.pi[: len(snap.rows)]
    if snap.general:
        outcome.pi = outcome.rc = None
    return outcome


def _apply_cutoff(outcome: SolveOutcome, params: ParamSet, sense: int, mip: bool) -> None:
    """Status ``CUTOFF`` for an optimum worse than ``Cutoff``, reported as gurobipy reports it:
    an LP keeps its solution (with ``SolCount`` 0); a MIP has none and an infinite ``ObjVal``."""
    cutoff = params.get("Cutoff")
    assert isinstance(cutoff, (int, float))
    if outcome.objval is None or math.isinf(cutoff) or abs(cutoff) >= G.INFINITY:
        return
    room = 1e-9 * max(1.0, abs(cutoff))
    worse = outcome.objval > cutoff + room if sense > 0 else outcome.objval < cutoff - room
    if not worse:
        return
    outcome.status = G.CUTOFF
    if mip:
        outcome.objval = math.inf * sense
        outcome.objbound = float(cutoff)
        outcome.mip_gap = math.inf
        outcome.x = outcome.rc = outcome.pi = outcome.slack = None
