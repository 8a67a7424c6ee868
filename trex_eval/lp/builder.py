"""Accumulate a model while a reader walks a file, then freeze it into a :class:`LinearModel`.

The readers (:mod:`trex_eval.lp.lp_reader`, :mod:`trex_eval.lp.mps_reader`) only recognise
syntax; every rule about what the numbers *mean* lives here, so that both formats agree with
``gurobipy.read()`` (Gurobi 13.0.3, measured) in the same way:

* variables are numbered in order of first appearance anywhere in the file, and a name is a
  variable's identity (two occurrences of one name are one variable);
* objective coefficients start from ``+0.0`` and are added to (so ``- 0 x`` leaves ``+0.0``);
  repeated terms of one row are summed in file order (the MPS reader passes only the first of
  repeated entries, as Gurobi keeps); rows then lose entries that summed to exactly zero and
  entries too small to keep (LP: ``|a| <= 1e-13``, MPS: ``|a| < 1e-13``);
* objective coefficients and right-hand sides at or beyond ``1e100`` in magnitude are infinite;
  a lower bound at or below ``-1e20`` is ``-inf`` and one above ``1e30`` is ``1e30``; an upper
  bound at or above ``1e20`` is ``+inf`` and one below ``-1e30`` is ``-1e30``;
* rows are stored as ``row_lower <= a.x <= row_upper``: ``<=`` gives ``(-inf, rhs)``, ``>=``
  gives ``(rhs, +inf)``, ``=`` gives ``(rhs, rhs)``; matrix entries are sorted by row, then
  column;
* quadratic constraints, SOS sets and indicator constraints that a reader hands over are held
  (``q_constraints``, ``sos``, ``indicators``) as well as counted: their linear terms are summed
  and sorted by column like a row's, their quadratic terms merged into ``i <= j`` pairs and
  sorted, exact zeros dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from trex_eval.errors import GradingError
from trex_eval.linear_model import MAX_COLUMNS, MAX_NONZEROS, MAX_ROWS
from trex_eval.records import (
    IndicatorConstraint,
    LinearModel,
    QuadraticConstraint,
    SOSConstraint,
    VariableType,
)

INF = math.inf
RHS_INFINITY = 1e100
"""Objective coefficients and right-hand sides with ``|v| >= RHS_INFINITY`` read as infinite."""
BOUND_INFINITY = 1e20
"""A lower bound ``<= -1e20`` is ``-inf``; an upper bound ``>= 1e20`` is ``+inf``."""
BOUND_CAP = 1e30
"""A lower bound above ``1e30`` is stored as ``1e30``; an upper bound below ``-1e30`` as ``-1e30``."""
INTEGRALITY_TOLERANCE = 1e-5
"""Gurobi's default ``IntFeasTol``: LP ``Generals``/``Binaries`` round bounds with this slack."""


def clamp_value(value: float) -> float:
    """An objective coefficient or right-hand side as Gurobi stores it (``±1e100`` -> ``±inf``)."""
    if value >= RHS_INFINITY:
        return INF
    if value <= -RHS_INFINITY:
        return -INF
    return value


def clamp_lower(value: float) -> float:
    """A lower bound as Gurobi stores it."""
    if value <= -BOUND_INFINITY:
        return -INF
    return min(value, BOUND_CAP)


def clamp_upper(value: float) -> float:
    """An upper bound as Gurobi stores it."""
    if value >= BOUND_INFINITY:
        return INF
    return max(value, -BOUND_CAP)


def _signed_zero(value: float, sign_of: float) -> float:
    # math.ceil/floor return ints and would lose the sign of a zero result; Gurobi keeps it.
    return math.copysign(0.0, sign_of) if value == 0.0 else value


def round_integer_lower(value: float) -> float:
    """Lower bound of a variable declared integer in an LP file (ceil with ``1e-5`` slack)."""
    if not math.isfinite(value) or value == math.floor(value):
        return value
    shifted = value - INTEGRALITY_TOLERANCE
    return _signed_zero(float(math.ceil(shifted)), shifted)


def round_integer_upper(value: float) -> float:
    """Upper bound of a variable declared integer in an LP file (floor with ``1e-5`` slack)."""
    if not math.isfinite(value) or value == math.floor(value):
        return value
    shifted = value + INTEGRALITY_TOLERANCE
    return _signed_zero(float(math.floor(shifted)), shifted)


@dataclass(slots=True)
class PendingRow:
    """One linear row as read: raw terms in file order (duplicates not yet summed)."""

    name: str
    terms: list[tuple[int, float]]
    lower: float
    upper: float


@dataclass(slots=True)
class PendingQuadratic:
    """One quadratic constraint as read: linear and quadratic terms in file order."""

    linear: list[tuple[int, float]]
    quadratic: list[tuple[int, int, float]]
    lower: float
    upper: float


@dataclass(slots=True)
class PendingIndicator:
    """``x[binary] = value -> lower <= terms <= upper`` as read."""

    binary: int
    value: int
    terms: list[tuple[int, float]]
    lower: float
    upper: float


class ModelTooLarge(GradingError):
    """A model file holds more than the harness reads (the re-solve caps of
    :mod:`trex_eval.linear_model`): refused while it is read, before it is all in memory."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}, the most the harness reads of a model file")


@dataclass(slots=True)
class ModelBuilder:
    """Mutable model under construction. Readers call the ``add_*``/``set_*`` methods in file
    order; :meth:`build` applies the finishing rules and returns the frozen record."""

    sense: Literal["min", "max"] = "min"
    objective_constant: float = 0.0
    names: list[str] = field(default_factory=list)
    obj: list[float] = field(default_factory=list)
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    vtype: list[VariableType] = field(default_factory=list)
    rows: list[PendingRow] = field(default_factory=list)
    quadratic_objective: list[tuple[int, int, float]] = field(default_factory=list)
    n_quadratic_constraints: int = 0
    n_general_constraints: int = 0
    n_sos: int = 0
    quadratic_constraints: list[PendingQuadratic] = field(default_factory=list)
    sos: list[tuple[int, list[tuple[int, float]]]] = field(default_factory=list)
    indicators: list[PendingIndicator] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict)
    _nonzeros: int = 0

    def var(self, name: str) -> int:
        """Index of variable ``name``, created with default bounds ``[0, +inf)`` if new.

        Raises:
            ModelTooLarge: the model would pass :data:`~trex_eval.linear_model.MAX_COLUMNS`.
        """
        index = self._index.get(name)
        if index is None:
            index = len(self.names)
            if index >= MAX_COLUMNS:
                raise ModelTooLarge(f"the model has more than MAX_COLUMNS = {MAX_COLUMNS:,} variables")
            self._index[name] = index
            self.names.append(name)
            self.obj.append(0.0)
            self.lb.append(0.0)
            self.ub.append(INF)
            self.vtype.append("C")
        return index

    def find(self, name: str) -> int | None:
        """Index of an existing variable, or ``None``."""
        return self._index.get(name)

    def add_objective(self, index: int, coefficient: float) -> None:
        self.obj[index] += coefficient

    def add_row(self, name: str | None, terms: list[tuple[int, float]], lower: float, upper: float) -> int:
        """Append a linear row; an unnamed row is called ``R<position>`` as Gurobi does.

        Raises:
            ModelTooLarge: the model would pass :data:`~trex_eval.linear_model.MAX_ROWS` rows or
                :data:`~trex_eval.linear_model.MAX_NONZEROS` coefficients.
        """
        position = len(self.rows)
        self._nonzeros += len(terms)
        if position >= MAX_ROWS or self._nonzeros > MAX_NONZEROS:
            raise ModelTooLarge(
                f"the model has more than MAX_ROWS = {MAX_ROWS:,} rows "
                f"or MAX_NONZEROS = {MAX_NONZEROS:,} coefficients"
            )
        self.rows.append(PendingRow(name if name is not None else f"R{position}", terms, lower, upper))
        return position

    def build(self, *, keep_entry: KeepEntry, drop_constant_column: bool) -> LinearModel:
        """Freeze the model.

        ``keep_entry`` decides which summed matrix entries survive (the formats differ on the
        threshold). With ``drop_constant_column`` (LP files), a variable named exactly
        ``Constant`` that is fixed to 1 and has no matrix entry is Gurobi's objective-constant
        carrier: it is removed, its objective coefficient moves to ``objective_constant`` and
        quadratic objective terms touching it are dropped (what gurobipy does).
        """
        entries = [_summed_entries(row.terms, keep_entry) for row in self.rows]
        removed = self._constant_column(entries) if drop_constant_column else None
        objective_constant = self.objective_constant
        if removed is not None:
            objective_constant += self.obj[removed]

        def new_index(j: int) -> int:
            return j - 1 if removed is not None and j > removed else j

        kept = [j for j in range(len(self.names)) if j != removed]
        a_row: list[int] = []
        a_col: list[int] = []
        a_val: list[float] = []
        for i, row_entries in enumerate(entries):
            for j, value in row_entries:
                a_row.append(i)
                a_col.append(new_index(j))
                a_val.append(value)
        return LinearModel(
            sense=self.sense,
            objective_constant=objective_constant,
            var_names=tuple(self.names[j] for j in kept),
            obj=tuple(clamp_value(self.obj[j]) for j in kept),
            lb=tuple(self.lb[j] for j in kept),
            ub=tuple(self.ub[j] for j in kept),
            vtype=tuple(self.vtype[j] for j in kept),
            row_names=tuple(row.name for row in self.rows),
            row_lower=tuple(row.lower for row in self.rows),
            row_upper=tuple(row.upper for row in self.rows),
            a_row=tuple(a_row),
            a_col=tuple(a_col),
            a_val=tuple(a_val),
            q_obj=_merged_quadratic(
                (new_index(i), new_index(j), q)
                for i, j, q in self.quadratic_objective
                if removed is None or removed not in (i, j)
            ),
            n_quadratic_constraints=self.n_quadratic_constraints,
            n_general_constraints=self.n_general_constraints,
            n_sos=self.n_sos,
            q_constraints=tuple(
                QuadraticConstraint(
                    lower=pending.lower,
                    upper=pending.upper,
                    linear=tuple((new_index(j), a) for j, a in _summed_entries(pending.linear, keep_entry)),
                    quadratic=_merged_quadratic(
                        (new_index(i), new_index(j), q) for i, j, q in pending.quadratic
                    ),
                )
                for pending in self.quadratic_constraints
            ),
            sos=tuple(
                SOSConstraint(
                    type=1 if kind == 1 else 2, members=tuple((new_index(j), w) for j, w in members)
                )
                for kind, members in self.sos
            ),
            indicators=tuple(
                IndicatorConstraint(
                    binary=new_index(pending.binary),
                    value=1 if pending.value else 0,
                    lower=pending.lower,
                    upper=pending.upper,
                    linear=tuple((new_index(j), a) for j, a in _summed_entries(pending.terms, keep_entry)),
                )
                for pending in self.indicators
            ),
        )

    def _constant_column(self, entries: list[list[tuple[int, float]]]) -> int | None:
        index = self._index.get("Constant")
        if index is None or self.lb[index] != 1.0 or self.ub[index] != 1.0:
            return None
        if any(j == index for row_entries in entries for j, _ in row_entries):
            return None
        if index in self._columns_outside_rows():
            return None
        return index

    def _columns_outside_rows(self) -> set[int]:
        """Columns named by quadratic constraints, SOS sets or indicators."""
        used: set[int] = set()
        for pending in self.quadratic_constraints:
            used.update(j for j, _ in pending.linear)
            used.update(k for i, j, _ in pending.quadratic for k in (i, j))
        for _, members in self.sos:
            used.update(j for j, _ in members)
        for indicator in self.indicators:
            used.add(indicator.binary)
            used.update(j for j, _ in indicator.terms)
        return used


class KeepEntry:
    """Which summed matrix entries a format keeps: non-zero and above a magnitude threshold."""

    __slots__ = ("_inclusive", "_threshold")

    def __init__(self, threshold: float, *, inclusive: bool) -> None:
        self._threshold = threshold
        self._inclusive = inclusive

    def __call__(self, value: float) -> bool:
        magnitude = abs(value)
        if self._inclusive:
            return magnitude > self._threshold
        return magnitude >= self._threshold and magnitude != 0.0


LP_KEEP = KeepEntry(1e-13, inclusive=True)
"""LP files drop summed entries with ``|a| <= 1e-13``."""
MPS_KEEP = KeepEntry(1e-13, inclusive=False)
"""MPS files drop entries with ``|a| < 1e-13``."""


def _summed_entries(terms: list[tuple[int, float]], keep_entry: KeepEntry) -> list[tuple[int, float]]:
    totals: dict[int, float] = {}
    for j, value in terms:
        totals[j] = totals.get(j, 0.0) + value
    return [(j, totals[j]) for j in sorted(totals) if keep_entry(totals[j])]


def _merged_quadratic(terms: Iterable[tuple[int, int, float]]) -> tuple[tuple[int, int, float], ...]:
    totals: dict[tuple[int, int], float] = {}
    for i, j, q in terms:
        key = (i, j) if i <= j else (j, i)
        totals[key] = totals.get(key, 0.0) + q
    return tuple((i, j, totals[i, j]) for i, j in sorted(totals) if totals[i, j] != 0.0)
