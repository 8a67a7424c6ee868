"""Why a structure-graded model is not the reference (B4O-ORGEval): the smallest part in which the
two differ, named by the vocabulary's categories. Pure; no re-solve, no I/O.

The comparison works on the models' parts up to renaming and reordering, as ORGEval's does, but
part by part rather than as one graph, so that what differs can be named:

* **rows** as signatures: a row's coefficients divided by its largest ``|a|``, as a sorted
  multiset, with its sides, in the orientation (times ``1`` or ``-1``) whose signature sorts
  first, so ``x + y <= 4`` and ``-2x - 2y >= -8`` are one row. A row of one entry on a continuous
  or integer column is a bound (:mod:`trex_eval.grading.structure.canonical` folds it the same
  way), not a row. Numbers are compared to 6 significant digits.
* **objective**: the sense and the multiset of non-zero coefficients (linear and quadratic).
* **columns**: counts by type (continuous, integer — binary is integer in ``[0, 1]`` —,
  semi-continuous, semi-integer) and the multiset of bounds.

A quadratic objective's coefficients are compared with the linear ones. Quadratic, SOS, indicator
and general constraints are not compared part by part: where the two models' differ as written (a
row written as an indicator is no row here), the diagnosis is ``unexplained``, saying so.

The first difference in this order decides: the objective sense alone (``sense_flipped``), the
integer columns alone (``integrality_missing``/``integrality_extra``), semi-continuous or
semi-integer columns of other number (``variables_differ``), reference rows without a
counterpart while every generated row has one (``constraint_missing``, the rows named), generated
rows without one (``constraint_extra``), rows on both sides without a counterpart
(``constraint_differs``), the number of columns (``variables_differ``), the objective
coefficients or constant (``objective_differs``), lower bounds of zero the generated model lacks
(``bounds_missing``), one-variable rows of the reference whose bounds the generated model lacks
(``constraint_missing`` again). Models whose parts all match but which ORGEval still calls
different differ in which column sits in which row, or in bounds no one-variable row explains:
``unexplained``, with what was found.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from trex_eval.records import Diagnosis, DiagnosisCategory, LinearModel, StructureEvidence

Category = DiagnosisCategory

NAMED_ROWS = 3
"""Rows named in a detail at most (the count says how many there are)."""

_Signature = tuple[tuple[float, ...], float, float]
_FOLDED = frozenset({"C", "I", "B"})
"""Column types whose one-entry rows are bounds (semi-continuous ones keep theirs as rows)."""


@dataclass(frozen=True)
class _Comparison:
    """The two models' parts as compared (module docstring), computed once for every decision.
    ``missing`` names the reference rows without a counterpart in the generated model, ``extra``
    the generated rows without one in the reference; ``*_types`` count columns by type
    (:func:`_types`)."""

    reference: LinearModel
    generated: LinearModel
    reference_rows: int
    generated_rows: int
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    reference_types: Mapping[str, int]
    generated_types: Mapping[str, int]

    @property
    def rows_match(self) -> bool:
        return not self.missing and not self.extra

    @property
    def same_columns(self) -> bool:
        return sum(self.reference_types.values()) == sum(self.generated_types.values())

    @property
    def semi_equal(self) -> bool:
        ref, gen = self.reference_types, self.generated_types
        return (ref["S"], ref["N"]) == (gen["S"], gen["N"])

    def evidence(self) -> dict[str, float]:
        """The counts every structure diagnosis carries as its evidence."""
        return {
            "reference_rows": float(self.reference_rows),
            "generated_rows": float(self.generated_rows),
            "reference_columns": float(self.reference.num_vars),
            "generated_columns": float(self.generated.num_vars),
            "reference_integer": float(self.reference_types["I"]),
            "generated_integer": float(self.generated_types["I"]),
            "rows_without_counterpart": float(len(self.missing)),
            "extra_rows": float(len(self.extra)),
        }


_Finding = tuple[DiagnosisCategory, str]
"""A decision's category and detail line."""


def structure_diagnosis(
    reference: LinearModel, generated: LinearModel, *, failed_check: str = ""
) -> Diagnosis:
    """The smallest differing part of ``generated`` against ``reference`` (module docstring).
    ``failed_check`` names the ORGEval check that failed, for the ``unexplained`` detail.

    The decisions of :data:`_ORDER` are asked in turn and the first that finds a difference
    decides; when none does, the models differ in which column sits in which row
    (``unexplained``). Every diagnosis carries :meth:`_Comparison.evidence`."""
    comparison = _compare(reference, generated)
    finding = next((found for decide in _ORDER if (found := decide(comparison)) is not None), None)
    if finding is None:
        check = f" ({failed_check} failed)" if failed_check else ""
        finding = (
            Category.UNEXPLAINED,
            f"rows, objective, columns and bounds match part by part; the models differ in which "
            f"column sits in which row{check}",
        )
    return Diagnosis(category=finding[0], detail=finding[1], evidence=comparison.evidence())


def _compare(reference: LinearModel, generated: LinearModel) -> _Comparison:
    ref_rows, gen_rows = _rows(reference), _rows(generated)
    return _Comparison(
        reference=reference,
        generated=generated,
        reference_rows=len(ref_rows),
        generated_rows=len(gen_rows),
        missing=tuple(_unmatched(ref_rows, gen_rows)),
        extra=tuple(_unmatched(gen_rows, ref_rows)),
        reference_types=_types(reference),
        generated_types=_types(generated),
    )


def _other_parts_differ(c: _Comparison) -> _Finding | None:
    """Quadratic, SOS, indicator or general constraints written otherwise: not compared part by
    part, so ``unexplained``."""
    nonlinear = _nonlinear(c.reference) or _nonlinear(c.generated)
    if not nonlinear or _other_parts(c.reference) == _other_parts(c.generated):
        return None
    return (
        Category.UNEXPLAINED,
        "the models' quadratic, SOS, indicator or general constraints differ, and those are not "
        "compared part by part",
    )


def _sense_alone_differs(c: _Comparison) -> _Finding | None:
    """The sense differs while rows and objective coefficients as written match."""
    if c.reference.sense == c.generated.sense or not c.rows_match:
        return None
    if _coefficients(c.reference) != _coefficients(c.generated):
        return None
    return (
        Category.SENSE_FLIPPED,
        f"the generated model {_verb(c.generated)}s what the reference {_verb(c.reference)}s; its "
        "rows and objective coefficients match",
    )


def _integrality_alone_differs(c: _Comparison) -> _Finding | None:
    """Rows and column count match and only integer columns differ in number."""
    ref, gen = c.reference_types, c.generated_types
    if not (c.rows_match and c.same_columns and c.semi_equal) or ref == gen:
        return None
    fewer = gen["I"] < ref["I"]
    return (
        Category.INTEGRALITY_MISSING if fewer else Category.INTEGRALITY_EXTRA,
        f"{gen['I']} integer columns where the reference has {ref['I']}; rows match",
    )


def _semi_columns_differ(c: _Comparison) -> _Finding | None:
    """Semi-continuous or semi-integer columns of other number: decided before the rows, since
    such columns keep one-variable rows that the others fold away."""
    if c.semi_equal:
        return None
    ref, gen = c.reference_types, c.generated_types
    return (
        Category.VARIABLES_DIFFER,
        f"semi-continuous/semi-integer columns: {gen['S']}/{gen['N']} where the reference "
        f"has {ref['S']}/{ref['N']}",
    )


def _rows_differ(c: _Comparison) -> _Finding | None:
    """Rows without a counterpart: on the reference's side only (missing), the generated side
    only (extra) or both (differs)."""
    missing, extra = c.missing, c.extra
    if missing and not extra:
        return (
            Category.CONSTRAINT_MISSING,
            f"{len(missing)} reference row(s) without a counterpart in the generated model: "
            + _named(missing),
        )
    if extra and not missing:
        return (
            Category.CONSTRAINT_EXTRA,
            f"{len(extra)} generated row(s) without a counterpart in the reference: {_named(extra)}",
        )
    if missing and extra:
        return (
            Category.CONSTRAINT_DIFFERS,
            f"{len(missing)} reference row(s) ({_named(missing)}) and {len(extra)} generated row(s) "
            f"({_named(extra)}) have no counterpart: coefficients or sides differ",
        )
    return None


def _column_count_differs(c: _Comparison) -> _Finding | None:
    if c.same_columns:
        return None
    return (
        Category.VARIABLES_DIFFER,
        f"{sum(c.generated_types.values())} columns where the reference has "
        f"{sum(c.reference_types.values())}; rows match",
    )


def _objective_differs(c: _Comparison) -> _Finding | None:
    """The objective as minimised: its coefficients, then its constant."""
    if _objective(c.reference) != _objective(c.generated):
        return Category.OBJECTIVE_DIFFERS, "the objective coefficients differ; rows and columns match"
    constants = [
        _key(m.objective_constant * (-1.0 if m.sense == "max" else 1.0)) for m in (c.reference, c.generated)
    ]
    if constants[0] != constants[1]:
        return (
            Category.OBJECTIVE_DIFFERS,
            f"the objective constants differ ({constants[0]!r} vs {constants[1]!r}); rows and columns match",
        )
    return None


def _bounds_differ(c: _Comparison) -> _Finding | None:
    """Columns the reference holds at zero or above that are free in the generated model, then
    other bounds: a lost one-variable row where the reference's one-variable rows explain them,
    else ``unexplained``."""
    reference, generated = c.reference, c.generated
    free = _nonnegative(reference) - _nonnegative(generated)
    if free > 0:
        return (
            Category.BOUNDS_MISSING,
            f"{free} column(s) the reference holds at zero or above are free in the generated model",
        )
    bounds = _unmatched_count(_bounds(reference), _bounds(generated))
    if not bounds:
        return None
    lost = _unmatched(_rows(reference, single=True), _rows(generated, single=True))
    if lost and not _unmatched(_rows(generated, single=True), _rows(reference, single=True)):
        return (
            Category.CONSTRAINT_MISSING,
            f"{len(lost)} one-variable row(s) of the reference without a counterpart ({bounds} "
            f"column(s) bounded otherwise): {_named(lost)}",
        )
    return (
        Category.UNEXPLAINED,
        f"rows, objective and column types match; {bounds} column(s) have other bounds "
        "(variable bounds or one-variable constraints)",
    )


_ORDER: tuple[Callable[[_Comparison], _Finding | None], ...] = (
    _other_parts_differ,
    _sense_alone_differs,
    _integrality_alone_differs,
    _semi_columns_differ,
    _rows_differ,
    _column_count_differs,
    _objective_differs,
    _bounds_differ,
)
"""The decisions in the order the module docstring gives: the first that finds a difference decides."""


def failed_check(evidence: StructureEvidence | None) -> str:
    """The name of the ORGEval check that failed (``""`` when none is recorded)."""
    if evidence is None:
        return ""
    return next((check.name for check in evidence.checks if not check.passed), "")


def _rows(model: LinearModel, *, single: bool = False) -> list[tuple[str, _Signature]]:
    """Named signatures of the rows (``single``: of the one-variable rows, which are bounds)."""
    rows = []
    for i, terms, lower, upper in _parts(model):
        if (len(terms) == 1 and model.vtype[next(iter(terms))] in _FOLDED) != single:
            continue
        values = list(terms.values())
        scale = max(abs(a) for a in values)
        up = (tuple(sorted(_key(a / scale) for a in values)), _key(lower / scale), _key(upper / scale))
        down = (tuple(sorted(_key(-a / scale) for a in values)), _key(-upper / scale), _key(-lower / scale))
        rows.append((model.row_names[i] if i < len(model.row_names) else f"row {i}", min(up, down)))
    return rows


def _bounds(model: LinearModel) -> list[tuple[float, float]]:
    """Each column's bounds with its one-entry rows folded in, as the canonical form folds them."""
    lb, ub = list(model.lb), list(model.ub)
    for j, kind in enumerate(model.vtype):
        if kind == "B":
            lb[j], ub[j] = max(lb[j], 0.0), min(ub[j], 1.0)
    for _, terms, lower, upper in _parts(model):
        if len(terms) == 1:
            ((j, a),) = terms.items()
            if model.vtype[j] in _FOLDED:
                low, high = (lower / a, upper / a) if a > 0 else (upper / a, lower / a)
                lb[j], ub[j] = max(lb[j], low), min(ub[j], high)
    return list(zip(lb, ub, strict=True))


def _parts(model: LinearModel) -> list[tuple[int, dict[int, float], float, float]]:
    """Rows with entries and a finite side: index, non-zero entries (summed), sides."""
    entries: list[dict[int, float]] = [{} for _ in model.row_names]
    for i, j, value in zip(model.a_row, model.a_col, model.a_val, strict=True):
        entries[i][j] = entries[i].get(j, 0.0) + value
    parts = []
    for i, terms in enumerate(entries):
        kept = {j: a for j, a in terms.items() if a != 0.0}
        lower, upper = model.row_lower[i], model.row_upper[i]
        if kept and not (lower == -math.inf and upper == math.inf):
            parts.append((i, kept, lower, upper))
    return parts


def _unmatched(rows: Sequence[tuple[str, _Signature]], others: Sequence[tuple[str, _Signature]]) -> list[str]:
    """Names of ``rows`` left once each is paired with an equal signature of ``others``."""
    available = Counter(signature for _, signature in others)
    left = []
    for name, signature in rows:
        if available[signature]:
            available[signature] -= 1
        else:
            left.append(name)
    return left


def _unmatched_count(items: Sequence[tuple[float, float]], others: Sequence[tuple[float, float]]) -> int:
    left = Counter((_key(a), _key(b)) for a, b in items)
    left.subtract(Counter((_key(a), _key(b)) for a, b in others))
    return sum(n for n in left.values() if n > 0)


def _types(model: LinearModel) -> Counter[str]:
    """Columns by type: continuous, integer (binary included), semi-continuous, semi-integer."""
    counts: Counter[str] = Counter({"C": 0, "I": 0, "S": 0, "N": 0})
    for kind in model.vtype:
        counts["I" if kind == "B" else kind if kind in counts else "C"] += 1
    return counts


def _other_parts(model: LinearModel) -> tuple[object, ...]:
    """The constraints other than linear rows, as written (equal only when written alike)."""
    return (model.q_constraints, model.sos, model.indicators, model.n_general_constraints, model.n_sos)


def _nonlinear(model: LinearModel) -> bool:
    """Whether the model has constraints other than linear rows (a quadratic objective is compared
    with the objective)."""
    return bool(
        model.q_constraints
        or model.n_quadratic_constraints
        or model.n_general_constraints
        or model.n_sos
        or model.sos
        or model.indicators
    )


def _coefficients(model: LinearModel) -> Counter[tuple[str, float]]:
    """The objective's non-zero coefficients as written (linear and quadratic)."""
    return _objective_terms(model, 1.0)


def _objective(model: LinearModel) -> Counter[tuple[str, float]]:
    """The objective's non-zero coefficients, as minimised (a maximisation negated)."""
    return _objective_terms(model, -1.0 if model.sense == "max" else 1.0)


def _objective_terms(model: LinearModel, factor: float) -> Counter[tuple[str, float]]:
    terms = Counter(("linear", _key(factor * c)) for c in model.obj if c != 0.0)
    terms.update(("quadratic", _key(factor * c)) for _, _, c in model.q_obj if c != 0.0)
    return terms


def _nonnegative(model: LinearModel) -> int:
    return sum(1 for low, _ in _bounds(model) if low >= 0.0)


def _key(value: float) -> float:
    return value if not math.isfinite(value) else float(f"{value:.6g}")


def _verb(model: LinearModel) -> str:
    return "maximise" if model.sense == "max" else "minimise"


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(repr(name) for name in names[:NAMED_ROWS])
    return shown + (f" and {len(names) - NAMED_ROWS} more" if len(names) > NAMED_ROWS else "")
