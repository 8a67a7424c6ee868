"""``Model.computeIIS`` on HiGHS: an irreducible inconsistent subsystem of rows and bounds.

An IIS is a set of linear rows and variable bounds that is infeasible (with the model's
integrality kept) and becomes feasible when any one of them is removed. HiGHS's own IIS
(``Highs.getIis``) is for LPs and comes back empty for a MIP infeasible only by integrality, so
the layer finds one itself, with a deletion filter over groups (:func:`_deletion_filter`): drop a
group; if what remains is still infeasible, the group is gone for good; else put it back and
try its halves, down to single members, which then belong to the IIS. Every test is a
feasibility solve of what is left (objective zero), and a member kept is one whose removal was
seen to make the rest feasible, so the result is irreducible, as Gurobi's is.

For a MIP whose LP relaxation is already infeasible, the filter first runs on the relaxation
(LP solves only): an infeasible LP subsystem is an infeasible MIP subsystem, and only its
members then need MIP solves.

Candidates are every linear row and every finite bound (a binary's only where it is tightened
past 0 or 1: otherwise its type holds it there, and Gurobi does not name it). The filter stops at
the ``TimeLimit`` parameter, keeping what it has not yet tested; the IIS is then infeasible but
maybe not minimal (``IISMinimal`` 0), as Gurobi's is when interrupted. Quadratic, SOS, general and
semi-continuous parts are refused before anything runs (``NeedsGurobiError``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from ._errors import GurobiError, NeedsGurobiError
from ._highs_solve import _apply_options, _bound, _highs_lp, _highspy, _new_highs
from ._params import ParamSet
from ._snapshot import Snapshot

TEST_ALLOWANCE = 4.0
TEST_FLOOR_S = 1.0
"""Time of one test after the first: at most ``TEST_ALLOWANCE`` times the first (a proof of
infeasibility: the model's own solve's, else the first test's), and at least ``TEST_FLOOR_S``
seconds (see :meth:`_Subsystem.test`)."""

Member = tuple[str, int]
"""``("row", i)``, ``("lb", j)`` or ``("ub", j)``."""


@dataclass(frozen=True)
class Iis:
    """The rows, lower bounds and upper bounds (indices) in the IIS; ``minimal`` False when the
    time limit stopped the filter before every member was tested."""

    rows: frozenset[int]
    lower: frozenset[int]
    upper: frozenset[int]
    minimal: bool


def compute_iis(snap: Snapshot, params: ParamSet, *, proven_in_s: float | None = None) -> Iis | None:
    """An IIS of ``snap`` (see the module docstring); None when the time limit passed before
    the model was proven infeasible (gurobipy then has no IIS either, and the status stays).
    ``proven_in_s``: the seconds the model's own solve took to prove it infeasible, where it
    just did; that proof is then not repeated, and it sets the time each test gets.

    Raises:
        GurobiError: 10015, the model is feasible (or unbounded), as gurobipy raises it.
        NeedsGurobiError: the model has parts the filter cannot relax (see the module docstring).
    """
    _check_supported(snap)
    limit = float(params.get("TimeLimit"))
    deadline = time.monotonic() + (limit if math.isfinite(limit) else 1e12)
    members = _candidates(snap)
    # An infeasible LP relaxation: its IIS is an infeasible part of the MIP, whose only members
    # then need MIP tests.
    relaxed_first = False
    if snap.is_mip:
        relaxation = _Subsystem(snap, params, deadline, integral=False)
        if relaxation.test() == "infeasible":
            members, _ = _deletion_filter(relaxation, members)
            relaxed_first = True
    full = _Subsystem(snap, params, deadline)
    if relaxed_first:
        full.keep_only(members)
    # The tests' allowance follows from a MIP proof: the model's own solve, else one here.
    full.first_s = proven_in_s
    if proven_in_s is None:
        verdict = full.test()
        if verdict == "feasible" and not relaxed_first:
            raise GurobiError(10015, "Cannot compute IIS on a feasible model")
        if verdict == "unknown" and not relaxed_first:
            return None
    kept, complete = _deletion_filter(full, members)
    return _iis(kept, complete)


def iis_snapshot(snap: Snapshot, iis: Iis) -> Snapshot:
    """The IIS as a model of its own, as Gurobi writes it to an ``.ilp`` file: named
    ``<name>_copy``, no objective, the IIS rows, and the variables they or the IIS bounds use,
    each with only its IIS bounds (the others infinite, a binary's 0 and 1)."""
    rows = [snap.rows[i] for i in sorted(iis.rows)]
    used = sorted({c for row in rows for c in row.cols} | iis.lower | iis.upper)
    where = {col: k for k, col in enumerate(used)}
    return Snapshot(
        name=f"{snap.name}_copy",
        sense=snap.sense,
        obj_constant=0.0,
        var_names=tuple(snap.var_names[j] for j in used),
        lb=tuple(snap.lb[j] if j in iis.lower else _relaxed(snap, j)[0] for j in used),
        ub=tuple(snap.ub[j] if j in iis.upper else _relaxed(snap, j)[1] for j in used),
        obj=tuple(0.0 for _ in used),
        vtype=tuple(snap.vtype[j] for j in used),
        rows=tuple(replace(row, cols=tuple(where[c] for c in row.cols)) for row in rows),
    )


def _check_supported(snap: Snapshot) -> None:
    parts = [
        (len(snap.qrows), "quadratic constraint(s)"),
        (len(snap.sos), "SOS constraint(s)"),
        (len(snap.general), "general constraint(s)"),
        (sum(t in ("S", "N") for t in snap.vtype), "semi-continuous variable(s)"),
    ]
    found = [f"{count} {what}" for count, what in parts if count]
    if found:
        raise NeedsGurobiError(f"computeIIS of a model with {', '.join(found)}")


def _relaxed(snap: Snapshot, j: int) -> tuple[float, float]:
    """Column ``j``'s bounds where none of its own is in force: a binary's type still holds it
    to [0, 1]."""
    return (0.0, 1.0) if snap.vtype[j] == "B" else (-math.inf, math.inf)


def _candidates(snap: Snapshot) -> list[Member]:
    """Every row, and every bound tighter than its column's relaxed one (a binary's only where
    it was tightened past 0 or 1, as Gurobi names them)."""
    members: list[Member] = [("row", i) for i in range(len(snap.rows))]
    for j in range(snap.num_vars):
        low, high = _relaxed(snap, j)
        if _bound(snap.lb[j]) > low:
            members.append(("lb", j))
        if _bound(snap.ub[j]) < high:
            members.append(("ub", j))
    return members


def _iis(kept: list[Member], complete: bool) -> Iis:
    return Iis(
        rows=frozenset(i for kind, i in kept if kind == "row"),
        lower=frozenset(j for kind, j in kept if kind == "lb"),
        upper=frozenset(j for kind, j in kept if kind == "ub"),
        minimal=complete,
    )


def _deletion_filter(system: _Subsystem, members: list[Member]) -> tuple[list[Member], bool]:
    """The members of ``system`` (all active, and infeasible together) that form an IIS, and
    whether every one was tested (False once the deadline passed or a test was inconclusive)."""
    kept: list[Member] = []
    complete = True
    groups = [members]
    while groups:
        group = groups.pop()
        if system.expired():
            kept.extend(group)
            for rest in groups:
                kept.extend(rest)
            return kept, False
        system.drop(group)
        verdict = system.test()
        if verdict == "infeasible":
            continue
        system.restore(group)
        if len(group) == 1:
            kept.append(group[0])
            complete = complete and verdict == "feasible"
            continue
        half = len(group) // 2
        groups.append(group[half:])
        groups.append(group[:half])
    return kept, complete


class _Subsystem:
    """One HiGHS instance holding ``snap`` with a zero objective (without its integrality where
    not ``integral``: its LP relaxation), whose rows and bounds are switched off (relaxed, see
    :func:`_relaxed`) and on again."""

    def __init__(self, snap: Snapshot, params: ParamSet, deadline: float, *, integral: bool = True) -> None:
        self.snap = snap
        self.deadline = deadline
        self.first_s: float | None = None
        self.highs: Any = _new_highs(True)
        self.highs.setOptionValue("output_flag", False)
        _apply_options(self.highs, params)
        # Factor 0: a zero objective (a quadratic one is never passed). A relaxed binary keeps
        # [0, 1] as bounds: members are switched off to the original snapshot's _relaxed bounds.
        passed = snap if integral else replace(snap, vtype=tuple("C" for _ in snap.vtype))
        self.highs.passModel(_highs_lp(passed, 0.0))
        lp = self.highs.getLp()
        self.row_bounds = list(zip(lp.row_lower_, lp.row_upper_, strict=True))
        self.col_bounds = list(zip(lp.col_lower_, lp.col_upper_, strict=True))
        self.lower = [float(v) for v in lp.col_lower_]
        self.upper = [float(v) for v in lp.col_upper_]
        self.rows_now = list(self.row_bounds)
        self.tolerance = float(params.get("FeasibilityTol"))

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def keep_only(self, members: list[Member]) -> None:
        """Switch off every candidate not in ``members``."""
        chosen = set(members)
        self.drop([member for member in _candidates(self.snap) if member not in chosen])

    def drop(self, group: list[Member]) -> None:
        self._switch(group, on=False)

    def restore(self, group: list[Member]) -> None:
        self._switch(group, on=True)

    def _switch(self, group: list[Member], *, on: bool) -> None:
        for kind, index in group:
            if kind == "row":
                self.rows_now[index] = self.row_bounds[index] if on else (-math.inf, math.inf)
                self.highs.changeRowBounds(index, *self.rows_now[index])
                continue
            relaxed = _relaxed(self.snap, index)
            if kind == "lb":
                self.lower[index] = self.col_bounds[index][0] if on else relaxed[0]
            else:
                self.upper[index] = self.col_bounds[index][1] if on else relaxed[1]
            self.highs.changeColBounds(index, self.lower[index], self.upper[index])

    def test(self) -> str:
        """``"infeasible"``, ``"feasible"`` or ``"unknown"`` (time limit, numerical trouble).

        After the first test, each is given at most :data:`TEST_ALLOWANCE` times the first
        one's time (at least :data:`TEST_FLOOR_S`): proving a part of a MIP infeasible may take
        far longer than the whole, and a group whose test ran out is kept and split like one
        found needed, so the filter goes on shrinking the IIS instead of spending the whole
        time limit on one test (which then stays non-minimal)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            return "unknown"
        if self.first_s is not None:
            left = min(left, max(TEST_FLOOR_S, TEST_ALLOWANCE * self.first_s))
        # HiGHS measures its time limit on the instance's total run time, over every run.
        self.highs.setOptionValue("time_limit", self.highs.getRunTime() + min(left, 1e12))
        started = time.monotonic()
        self.highs.run()
        if self.first_s is None:
            self.first_s = time.monotonic() - started
        status = self.highs.getModelStatus()
        statuses = _highspy().HighsModelStatus
        # With a zero objective nothing is unbounded: "unbounded or infeasible" is infeasible.
        if status in (statuses.kInfeasible, statuses.kUnboundedOrInfeasible):
            return "infeasible"
        if status == statuses.kOptimal:
            return "feasible"
        if status == statuses.kModelEmpty:
            # No columns: each row in force must hold at zero.
            holds = all(low <= self.tolerance and high >= -self.tolerance for low, high in self.rows_now)
            return "feasible" if holds else "infeasible"
        return "unknown"
