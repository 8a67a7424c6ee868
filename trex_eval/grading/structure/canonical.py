"""Canonical form of a linear model for the ``fixed`` structural-equivalence rule.

:func:`canonicalise` removes the differences between two formulations that are the same model
written differently, so that what remains can be compared as a graph:

* **Objective sense**: a maximisation becomes a minimisation of the negated objective (and
  negated constant).
* **Variable types**: binary becomes integer with bounds clamped into ``[0, 1]``; integer bounds
  are rounded inward (``ceil(lb - 1e-9)``, ``floor(ub + 1e-9)``).
* **Rows**: repeated entries are summed and zero entries dropped. A row without entries is
  dropped when ``0`` satisfies it and otherwise marks the model trivially infeasible; a row
  with no finite side is dropped. A row with one entry ``a x`` on a continuous or integer
  variable becomes a bound with the correct sign (``a < 0`` swaps the sides) intersected with
  the variable's bounds, and is dropped. Every other row is divided by its largest ``|a|``.
* **Unused variables**: a variable with no row entry left, a zero objective coefficient and a
  non-empty domain cannot matter and is dropped.

Orientation (``<=`` versus ``>=``, the sign of an equality) is settled later, by
:mod:`trex_eval.grading.structure.fixed`, because it needs the shared numeric keys.
Semi-continuous and semi-integer variables keep their single-entry rows (a bound would change
their meaning). Pure; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trex_eval.records import LinearModel

INTEGRALITY_SLACK = 1e-9
"""Inward rounding slack for integer bounds: ``ceil(lb - 1e-9)``, ``floor(ub + 1e-9)``."""


@dataclass(frozen=True, slots=True)
class CanonicalRow:
    """``lower <= sum(vals[k] * x[cols[k]]) <= upper`` with ``max |vals| == 1``."""

    cols: tuple[int, ...]
    vals: tuple[float, ...]
    lower: float
    upper: float


@dataclass(frozen=True, slots=True)
class CanonicalModel:
    """A minimisation over ``len(obj)`` variables (indices into ``original_index``)."""

    obj: tuple[float, ...]
    objective_constant: float
    vtype: tuple[str, ...]
    lb: tuple[float, ...]
    ub: tuple[float, ...]
    rows: tuple[CanonicalRow, ...]
    trivially_infeasible: bool
    original_index: tuple[int, ...]
    dropped_variables: int
    dropped_rows: int


def canonicalise(model: LinearModel, *, used: frozenset[int] = frozenset()) -> CanonicalModel:
    """Canonical form of the linear part of ``model`` (module docstring). Quadratic, SOS and
    general-constraint parts are ignored here; the caller decides what they mean, and names the
    columns they use in ``used`` so that those are never dropped as unused."""
    flip = -1.0 if model.sense == "max" else 1.0
    obj = [flip * c for c in model.obj]
    vtype = list(model.vtype)
    lb = list(model.lb)
    ub = list(model.ub)
    for j, kind in enumerate(vtype):
        if kind == "B":
            vtype[j] = "I"
            lb[j], ub[j] = max(lb[j], 0.0), min(ub[j], 1.0)

    entries: list[dict[int, float]] = [{} for _ in model.row_names]
    for i, j, value in zip(model.a_row, model.a_col, model.a_val, strict=True):
        entries[i][j] = entries[i].get(j, 0.0) + value
    rows: list[CanonicalRow] = []
    infeasible = False
    for i, row_entries in enumerate(entries):
        lower, upper = model.row_lower[i], model.row_upper[i]
        terms = {j: a for j, a in row_entries.items() if a != 0.0}
        if not terms:
            infeasible = infeasible or not lower <= 0.0 <= upper
            continue
        if lower == -math.inf and upper == math.inf:
            continue
        if len(terms) == 1:
            ((j, a),) = terms.items()
            if vtype[j] in ("C", "I"):
                low, high = (lower / a, upper / a) if a > 0 else (upper / a, lower / a)
                lb[j], ub[j] = max(lb[j], low), min(ub[j], high)
                continue
        cols = tuple(sorted(terms))
        scale = max(abs(terms[j]) for j in cols)
        rows.append(CanonicalRow(cols, tuple(terms[j] / scale for j in cols), lower / scale, upper / scale))
    for j, kind in enumerate(vtype):
        if kind == "I":
            lb[j] = math.ceil(lb[j] - INTEGRALITY_SLACK) if math.isfinite(lb[j]) else lb[j]
            ub[j] = math.floor(ub[j] + INTEGRALITY_SLACK) if math.isfinite(ub[j]) else ub[j]

    used = used | {j for row in rows for j in row.cols}
    keep = [
        j for j in range(len(obj)) if j in used or obj[j] != 0.0 or not _has_value(vtype[j], lb[j], ub[j])
    ]
    position = {j: k for k, j in enumerate(keep)}
    return CanonicalModel(
        obj=tuple(obj[j] for j in keep),
        objective_constant=flip * model.objective_constant,
        vtype=tuple(vtype[j] for j in keep),
        lb=tuple(float(lb[j]) for j in keep),
        ub=tuple(float(ub[j]) for j in keep),
        rows=tuple(
            CanonicalRow(tuple(position[j] for j in row.cols), row.vals, row.lower, row.upper) for row in rows
        ),
        trivially_infeasible=infeasible,
        original_index=tuple(keep),
        dropped_variables=len(obj) - len(keep),
        dropped_rows=len(model.row_names) - len(rows),
    )


def _has_value(kind: str, lower: float, upper: float) -> bool:
    """Whether a variable of this type can take some value within its bounds."""
    if kind in ("S", "N"):
        return True
    return lower <= upper
