"""An LP's optimality certificate, checked by the harness from the solver's own primal and dual
values before it re-solves (issue 44). Pure arithmetic: no I/O, no solver.

The sandbox hooks capture, for a continuous LP the program's solver reported optimal, its primal
point ``x`` and row duals ``y`` (``LinearModel.primal``, ``LinearModel.row_duals``). Like the
model they are the program's word, so they are only a *candidate*: every number the verdict rests
on is computed here from the captured model.

For ``min c·x + k`` over ``rl <= A x <= ru``, ``l <= x <= u`` and *any* vector ``y``, with the
reduced costs ``z = c - Aᵀy`` computed here (never read from the program), every feasible ``x``
has ``c·x = y·(A x) + z·x``, so

    ``L(y) = k + Σᵢ (yᵢ·rlᵢ if yᵢ > 0 else yᵢ·ruᵢ) + Σⱼ (zⱼ·lⱼ if zⱼ > 0 else zⱼ·uⱼ)``

is a lower bound on the optimum whenever every bound it multiplies by a nonzero is finite (the
sign conditions of dual feasibility). ``L`` is computed in exact rational arithmetic (a float is
a binary rational: each product and sum is exact), so a dual that is only nearly feasible cannot
move it: a near-zero reduced cost on a huge finite bound counts with its full weight, and one on
an infinite bound gives no bound at all. A maximisation is the minimisation of ``-c·x - k``.

The claim is **certified** when

* ``x`` is feasible within :data:`FEASIBILITY_TOL` (absolute, times ``max(1, |bound|)``: the
  solvers' own feasibility tolerance), and
* the gap between the primal objective ``P = c·x + k`` (computed here, exactly) and ``L`` is at
  most :data:`GAP_TOL` ``· max(1, |P|)`` (the re-solve's LP agreement tolerance).

The certified value is ``P``. Duals are tried as given and negated (libraries differ in their
sign conventions; every ``y`` gives a valid bound, so trying two is safe), each with the entries
whose sign asks for an infinite row side set to zero (again a valid ``y``). Anything else —
no duals, a model that is not a continuous LP, one over :data:`MAX_CERTIFIED_ENTRIES`, an
infeasible point, an unsafe or loose bound — is a :class:`NoCertificate`, and the caller
re-solves: a failed certificate never fails a claim by itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..linear_model import LinearModel

FEASIBILITY_TOL = 1e-6
"""Largest violation of a bound or row side by the primal point, times ``max(1, |side|)``."""
GAP_TOL = 1e-6
"""Largest gap between the primal objective and the dual bound, times ``max(1, |P|)``: the
re-solve's agreement tolerance for LPs (``verify.LP_RTOL``)."""
MAX_CERTIFIED_ENTRIES = 200_000
"""Columns + rows + nonzeros above which no certificate is tried (the exact arithmetic runs in
the grading thread, ~1 µs an entry; the re-solve, in a verifier process under its CPU budget,
takes larger models)."""

REPAIR_SCOPE = 1e-9
"""A reduced cost within this of zero, relative to ``1 + |cⱼ| + Σ|aᵢⱼ yᵢ|`` (the size of the
terms it is the difference of), is zero but for rounding: the repair may move it."""
REPAIR_MARGIN = 1e-12
"""The margin (relative, as :data:`REPAIR_SCOPE`) the repair gives such a reduced cost on the
side of its finite bound, well above the ~1e-16 rounding of the float solve."""
MAX_REPAIR_CELLS = 250_000
"""Columns to repair × rows that may move, above which no repair is tried (a dense solve)."""


@dataclass(frozen=True)
class Certified:
    """A certified optimum: ``objective`` is ``P`` (the harness's primal objective, rounded to a
    float), ``bound`` the dual bound ``L`` (rounded), both in the model's own sense."""

    objective: float
    bound: float


@dataclass(frozen=True)
class NoCertificate:
    """Why the candidate does not certify the optimum (the caller re-solves)."""

    reason: str


Dyadic = tuple[int, int]
"""``(mantissa, exponent)``: the exact value ``mantissa · 2**exponent`` of a float."""


def _dyadic(value: float) -> Dyadic:
    mantissa, exponent = math.frexp(value)
    return int(mantissa * (1 << 53)), exponent - 53


def _exact_sum(terms: list[Dyadic]) -> Fraction:
    """The exact sum of dyadic ``terms`` (shifted to their least exponent: integer additions)."""
    if not terms:
        return Fraction(0)
    least = min(exponent for _, exponent in terms)
    total = sum(mantissa << (exponent - least) for mantissa, exponent in terms)
    return Fraction(total, 1 << -least) if least < 0 else Fraction(total << least)


def _product(a: Dyadic, b: Dyadic) -> Dyadic:
    return a[0] * b[0], a[1] + b[1]


def _shape_problem(model: LinearModel) -> str | None:
    """Why ``model`` cannot carry a certificate, or None."""
    if not model.primal:
        return "no primal and dual values captured"
    if not model.is_linear or model.q_constraints or model.sos or model.indicators:
        return "not a linear model"
    if any(kind != "C" for kind in model.vtype):
        return "not a continuous model"
    n, m = model.num_vars, model.num_rows
    if len(model.primal) != n or len(model.row_duals) != m:
        return "primal or dual values do not match the model's size"
    if n + m + len(model.a_val) > MAX_CERTIFIED_ENTRIES:
        return f"model over the certificate's size of {MAX_CERTIFIED_ENTRIES} entries"
    if {len(model.obj), len(model.lb), len(model.ub)} != {n} or {
        len(model.row_lower),
        len(model.row_upper),
    } != {m}:
        return "inconsistent dimensions"
    if len({len(model.a_row), len(model.a_col), len(model.a_val)}) != 1:
        return "inconsistent matrix"
    if any(not 0 <= i < m for i in model.a_row) or any(not 0 <= j < n for j in model.a_col):
        return "matrix index out of range"
    numbers = (*model.obj, *model.a_val, *model.primal, *model.row_duals, model.objective_constant)
    if not all(math.isfinite(value) for value in numbers):
        return "a coefficient or value is not finite"
    return None


def _violated(value: float, lower: float, upper: float) -> bool:
    return value < lower - FEASIBILITY_TOL * max(1.0, abs(lower)) or value > upper + FEASIBILITY_TOL * max(
        1.0, abs(upper)
    )


def _infeasibility(model: LinearModel) -> str | None:
    """Where the primal point breaks a bound or a row (floats: a tolerance test, not a bound)."""
    x = model.primal
    for j, value in enumerate(x):
        if _violated(value, model.lb[j], model.ub[j]):
            return f"primal value of column {j} outside its bounds"
    activity = [0.0] * model.num_rows
    for i, j, a in zip(model.a_row, model.a_col, model.a_val, strict=True):
        activity[i] += a * x[j]
    for i, value in enumerate(activity):
        if _violated(value, model.row_lower[i], model.row_upper[i]):
            return f"row {i} violated by the primal point"
    return None


def _row_terms(y: list[float], model: LinearModel) -> list[Dyadic] | None:
    """``yᵢ·rlᵢ`` or ``yᵢ·ruᵢ`` per nonzero ``yᵢ`` (exact), None if a side needed is infinite."""
    terms = []
    for i, value in enumerate(y):
        if value == 0.0:
            continue
        side = model.row_lower[i] if value > 0 else model.row_upper[i]
        if not math.isfinite(side):
            return None
        terms.append(_product(_dyadic(value), _dyadic(side)))
    return terms


def dual_bound(model: LinearModel, y: list[float], costs: list[float]) -> Fraction | str:
    """``L(y)`` for ``min costs·x`` over ``model``'s rows and bounds, exactly (without the
    objective constant), or why there is none: a nonzero multiplier (``yᵢ`` or a reduced cost
    ``zⱼ = costsⱼ - (Aᵀy)ⱼ``, computed exactly) on an infinite bound."""
    rows = _row_terms(y, model)
    if rows is None:
        return "a dual asks for an infinite row side"
    duals = [_dyadic(value) for value in y]
    per_column: list[list[Dyadic]] = [[_dyadic(cost)] for cost in costs]
    for i, j, a in zip(model.a_row, model.a_col, model.a_val, strict=True):
        if y[i] != 0.0 and a != 0.0:
            mantissa, exponent = _product(_dyadic(a), duals[i])
            per_column[j].append((-mantissa, exponent))
    terms = rows
    for j, column in enumerate(per_column):
        reduced = _exact_sum(column)
        if reduced == 0:
            continue
        side = model.lb[j] if reduced > 0 else model.ub[j]
        if not math.isfinite(side):
            return f"reduced cost {float(reduced):.3g} of column {j} on an infinite bound"
        terms.append(_dyadic_of_fraction(reduced * Fraction(side)))
    return _exact_sum(terms)


def _dyadic_of_fraction(value: Fraction) -> Dyadic:
    """A dyadic rational (denominator a power of two) as a :data:`Dyadic`, exactly."""
    denominator = value.denominator
    exponent = denominator.bit_length() - 1
    assert denominator == 1 << exponent  # products and sums of floats stay dyadic
    return value.numerator, -exponent


def _cleaned(model: LinearModel, y: list[float]) -> list[float]:
    """``y`` with the entries whose sign asks for an infinite row side set to zero (still a
    valid multiplier: every ``y`` gives a valid bound)."""
    return [
        0.0
        if (value > 0 and not math.isfinite(model.row_lower[i]))
        or (value < 0 and not math.isfinite(model.row_upper[i]))
        else value
        for i, value in enumerate(y)
    ]


def _repaired(model: LinearModel, y: list[float], costs: list[float]) -> list[float] | None:
    """``y`` moved so that the reduced costs of the columns with an infinite bound that are
    zero but for rounding (a basic column's ``zⱼ`` is ±1e-16, and a wrong sign on an infinite
    bound gives no bound) get a margin of :data:`REPAIR_MARGIN` on the side of their finite
    bound, or stay zero for a free column: a least-squares solve in floats over the rows whose
    multiplier may move. Only a candidate: :func:`dual_bound` checks the result exactly. None
    where there is nothing to repair or the dense solve would be over :data:`MAX_REPAIR_CELLS`."""
    n = model.num_vars
    rows, cols = np.asarray(model.a_row, dtype=np.int64), np.asarray(model.a_col, dtype=np.int64)
    values, duals = np.asarray(model.a_val, dtype=np.float64), np.asarray(y, dtype=np.float64)
    lower, upper = np.asarray(model.lb, dtype=np.float64), np.asarray(model.ub, dtype=np.float64)
    reduced = np.asarray(costs, dtype=np.float64)
    scale = np.abs(reduced) + 1.0
    np.subtract.at(reduced, cols, values * duals[rows])
    np.add.at(scale, cols, np.abs(values * duals[rows]))
    open_side = ~(np.isfinite(lower) & np.isfinite(upper))
    near_zero = np.abs(reduced) <= REPAIR_SCOPE * scale
    columns = np.flatnonzero(open_side & near_zero)
    both_sides = np.isfinite(np.asarray(model.row_lower)) & np.isfinite(np.asarray(model.row_upper))
    movable = np.flatnonzero((duals != 0.0) | both_sides)
    if columns.size == 0 or movable.size == 0 or columns.size * movable.size > MAX_REPAIR_CELLS:
        return None
    direction = np.where(np.isfinite(lower[columns]), 1.0, np.where(np.isfinite(upper[columns]), -1.0, 0.0))
    target = reduced[columns] - REPAIR_MARGIN * scale[columns] * direction
    where_column = np.full(n, -1, dtype=np.int64)
    where_column[columns] = np.arange(columns.size)
    where_row = np.full(model.num_rows, -1, dtype=np.int64)
    where_row[movable] = np.arange(movable.size)
    dense = np.zeros((columns.size, movable.size))
    keep = (where_column[cols] >= 0) & (where_row[rows] >= 0)
    np.add.at(dense, (where_column[cols[keep]], where_row[rows[keep]]), values[keep])
    step = np.linalg.lstsq(dense, target, rcond=None)[0]
    moved = duals.copy()
    moved[movable] += step
    if not np.all(np.isfinite(moved)):
        return None
    return _cleaned(model, [float(value) for value in moved])


def certify(model: LinearModel) -> Certified | NoCertificate:
    """Whether the captured primal and dual values prove ``model``'s optimum (module docstring).
    Never raises on any model: a malformed one is a :class:`NoCertificate`. O(columns + rows +
    nonzeros) exact additions, each on integers of at most a few thousand bits, and at most one
    dense least-squares solve of :data:`MAX_REPAIR_CELLS` cells per dual candidate."""
    problem = _shape_problem(model) or _infeasibility(model)
    if problem is not None:
        return NoCertificate(problem)
    flip = -1.0 if model.sense == "max" else 1.0
    costs = [flip * value for value in model.obj]
    constant = Fraction(flip * model.objective_constant)
    primal = constant + _exact_sum(
        [_product(_dyadic(c), _dyadic(v)) for c, v in zip(costs, model.primal, strict=True)]
    )
    tolerance = Fraction(GAP_TOL) * max(Fraction(1), abs(primal))
    reasons = []
    for sign in (1.0, -1.0):
        y = _cleaned(model, [sign * value for value in model.row_duals])
        found = dual_bound(model, y, costs)
        if isinstance(found, str):
            repaired = _repaired(model, y, costs)
            if repaired is not None:
                found = dual_bound(model, repaired, costs)
        if isinstance(found, str):
            reasons.append(found)
            continue
        bound = constant + found
        if abs(primal - bound) <= tolerance:
            return Certified(objective=flip * float(primal), bound=flip * float(bound))
        reasons.append(f"gap {float(primal - bound):.3g} between the primal objective and the dual bound")
    return NoCertificate(reasons[0])
