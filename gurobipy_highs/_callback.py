"""``optimize(callback)``: lazy constraints by a cut loop, and the ``cb*`` methods.

HiGHS has no callbacks, so a MIP solved with a callback is solved in rounds: solve, call the
callback once with ``where == GRB.Callback.MIPSOL`` on the optimal solution of the round (as
Gurobi calls it on each new incumbent), add the lazy constraints it gave with ``cbLazy`` to the
rows of the next round, and stop when no lazy constraint cuts off the solution (it is then
accepted, as Gurobi accepts an incumbent). Lazy constraints never become model constraints
(``NumConstrs`` is unchanged), as in Gurobi. A callback that adds valid lazy constraints — ones
that cut off only infeasible points — reaches Gurobi's optimum; callbacks that change the search
itself (other ``where`` values: node relaxations, user cuts, heuristics, progress polling) are
not called, which cannot change an optimum. LPs are solved once: Gurobi calls no ``MIPSOL``
callback for them. As in gurobipy, an exception raised in the callback is printed and ignored,
and ``cbLazy`` without the ``LazyConstraints`` parameter set raises inside the callback.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from . import _grb as G
from ._errors import CompatNotImplementedError, GurobiError, NeedsGurobiError
from ._expr import LinExpr, TempConstr, Var
from ._facts import GRB_CALLBACK
from ._highs_solve import SolveOutcome
from ._snapshot import LinearRow, Snapshot
from ._state import ModelState, sense_code, to_linear

#: Rounds after which a cut loop that keeps cutting is given up (Gurobi would go on searching).
MAX_ROUNDS = 5000
#: A lazy constraint cuts off a solution when violated by more than this (Gurobi's FeasibilityTol).
VIOLATION_TOL = 1e-6


@dataclass
class CallbackContext:
    """What a callback may read while it runs, and what it asks for."""

    where: int
    x: list[float]
    objective: float
    bound: float
    best: float
    solutions: int
    started: float
    lazy: list[LinearRow] = field(default_factory=list)
    terminate: bool = False


def _violated(row: LinearRow, x: list[float]) -> bool:
    activity = sum(v * x[c] for c, v in zip(row.cols, row.vals, strict=True))
    gap = activity - row.rhs
    room = VIOLATION_TOL * max(1.0, abs(row.rhs))
    return gap > room if row.sense == "<" else gap < -room if row.sense == ">" else abs(gap) > room


def cut_loop(
    model: Any,
    state: ModelState,
    callback: Callable[[Any, int], object],
    mip: bool,
    solve_one: Callable[[Snapshot], SolveOutcome],
) -> Callable[[Snapshot], SolveOutcome]:
    """``solve_one`` wrapped in the lazy-constraint loop (see the module docstring); lazy rows
    gathered in one call stay for the later solves of the same ``optimize``."""
    cuts: list[LinearRow] = []
    started = time.perf_counter()
    accepted = 0

    def solve(stage: Snapshot) -> SolveOutcome:
        nonlocal accepted
        rounds = 0
        while True:
            outcome = solve_one(_with_rows(stage, cuts))
            if not mip or outcome.x is None or outcome.objval is None:
                return outcome
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise NeedsGurobiError(f"the lazy-constraint callback still cuts after {MAX_ROUNDS} rounds")
            context = CallbackContext(
                where=GRB_CALLBACK["MIPSOL"],
                x=outcome.x,
                objective=outcome.objval,
                bound=outcome.objbound if outcome.objbound is not None else outcome.objval,
                best=G.INFINITY * stage.sense,
                solutions=accepted,
                started=started,
            )
            state.callback = context
            try:
                callback(model, context.where)
            except Exception:
                # gurobipy prints an exception raised in a callback and carries on
                sys.stderr.write("Exception ignored in: 'gurobipy._core.callbackstub'\n")
                traceback.print_exc()
            finally:
                state.callback = None
            cuts.extend(context.lazy)
            if not any(_violated(row, outcome.x) for row in context.lazy):
                accepted += 1
                return outcome
            if context.terminate:
                return SolveOutcome(status=G.INTERRUPTED, runtime_s=time.perf_counter() - started)

    return solve


def _with_rows(stage: Snapshot, rows: list[LinearRow]) -> Snapshot:
    return replace(stage, rows=stage.rows + tuple(rows)) if rows else stage


class CallbackMethods:
    """The ``cb*`` methods of ``Model``; valid only while a callback runs."""

    _gpc: ModelState

    def _context(self, method: str) -> CallbackContext:
        context = self._gpc.callback
        if context is None:
            raise GurobiError(10011, f"{method} may only be called from within a callback")
        return context

    def cbGet(self, what: int) -> float | int:
        """``MIPSOL_OBJ``, ``MIPSOL_OBJBST``, ``MIPSOL_OBJBND``, ``MIPSOL_NODCNT``,
        ``MIPSOL_SOLCNT``, ``MIPSOL_PHASE`` and ``RUNTIME``; other codes are not emulated."""
        context = self._context("cbGet")
        codes = GRB_CALLBACK
        values: dict[int, float | int] = {
            codes["MIPSOL_OBJ"]: context.objective,
            codes["MIPSOL_OBJBST"]: context.best,
            codes["MIPSOL_OBJBND"]: context.bound,
            codes["MIPSOL_NODCNT"]: 0.0,
            codes["MIPSOL_SOLCNT"]: context.solutions,
            codes["MIPSOL_PHASE"]: 2,
            codes["RUNTIME"]: time.perf_counter() - context.started,
        }
        if what not in values:
            raise CompatNotImplementedError(f"Model.cbGet({what})", "only MIPSOL values and RUNTIME")
        return values[what]

    def cbGetSolution(self, vars: object) -> object:
        """The candidate solution's value of a Var, a list of Vars or a dict of Vars (dict ->
        ``tupledict`` with the same keys)."""
        context = self._context("cbGetSolution")
        from ._tuples import tupledict

        def value(var: object) -> float:
            if not isinstance(var, Var):
                raise TypeError(f"object of type '{type(var).__name__}' has no len()")
            return context.x[var._index]

        if isinstance(vars, Var):
            return value(vars)
        if isinstance(vars, dict):
            return tupledict({key: value(var) for key, var in vars.items()})
        if isinstance(vars, (list, tuple)):
            return [value(var) for var in vars]
        raise TypeError(f"object of type '{type(vars).__name__}' has no len()")

    def cbLazy(self, lhs: object, sense: object = None, rhs: object = None) -> None:
        """Add a lazy constraint (``TempConstr``, or ``lhs, sense, rhs``) for the next round."""
        context = self._context("cbLazy")
        if not self._gpc.params.get("LazyConstraints"):
            raise GurobiError(10011, "Must set LazyConstraints parameter to use lazy constraints")
        if isinstance(lhs, TempConstr) and sense is None and rhs is None:
            if lhs.kind != "linear":
                raise GurobiError(10003, "Lazy constraints must be linear")
            expr, row_sense = to_linear(lhs.lhs) - to_linear(lhs.rhs), lhs.sense
        else:
            expr, row_sense = to_linear(lhs) - to_linear(rhs), sense_code(sense)
        assert isinstance(expr, LinExpr)
        merged: dict[int, float] = {}
        for coeff, var in zip(expr._coeffs, expr._vars, strict=True):
            merged[var._index] = merged.get(var._index, 0.0) + coeff
        cols = tuple(sorted(c for c, v in merged.items() if v != 0.0))
        row = LinearRow("lazy", row_sense, -expr._constant, cols, tuple(merged[c] for c in cols))
        context.lazy.append(row)

    def cbSetSolution(self, vars: object, solution: object) -> None:
        """A heuristic solution: accepted and ignored (it cannot change the optimum)."""
        self._context("cbSetSolution")

    def cbUseSolution(self) -> float:
        self._context("cbUseSolution")
        return G.INFINITY

    def cbCut(self, lhs: object, sense: object = None, rhs: object = None) -> None:
        """A user cut: accepted and ignored (valid cuts cannot change the optimum)."""
        self._context("cbCut")

    def terminate(self) -> None:
        """Stop the solve: inside a callback, the cut loop stops after the current round."""
        context = self._gpc.callback
        if context is not None:
            context.terminate = True
