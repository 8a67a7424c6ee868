"""A seeded perturbation corpus for structural-equivalence rules: from each reference model,
copies that are the same model written differently (truth: equivalent) and copies with one real
change (truth: different), every copy written to LP text and read back as a generated model
arrives. Pure and deterministic for a given seed.

Equivalent rewrites (each also renames and reorders variables and rows):

* ``reordered``: nothing else;
* ``rows_scaled``: every row, quadratic row and indicator row times a factor in ``[0.25, 4)``;
* ``rows_flipped``: every row times ``-1`` (``>=`` written as ``<=``, equalities negated);
* ``bounds_folded``: every finite bound of a continuous variable moved into a single-variable
  row with a random coefficient of either sign;
* ``objective_negated``: the other objective sense with the objective (and constant) negated;
* ``all_at_once``: :func:`structure_perturb.perturb` (all of the above but folding).

Real changes (each then passed through ``all_at_once``, so only the change tells them apart):

* ``coefficient_changed``: one entry of a row with two or more entries times 1.5;
* ``constraint_dropped``: one such row removed;
* ``sense_flipped``: the other objective sense, objective unchanged (models with an objective);
* ``bound_changed``: a continuous variable's upper bound tightened inside its range;
* ``integrality_changed``: a variable used in such a row switched between continuous and integer;
* ``coefficients_swapped``: two different coefficients of one row exchanged between two variables
  of the same type, objective and bounds (every row keeps its multiset of numbers, so the first
  refinement round sees nothing) whose columns differ outside that row (otherwise the swap is
  the renaming of the two);
* ``quadratic_changed``: one quadratic objective coefficient, or one coefficient of a quadratic
  constraint with two or more terms, times 1.5 (a constraint's only term is a scaling).

A change that does not apply to a model (no such row or variable) is left out for that model.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from lp_writer import write_lp
from structure_perturb import perturb

from trex_eval.lp import parse_lp
from trex_eval.records import LinearModel, QuadraticConstraint

EQUIVALENT = ("reordered", "rows_scaled", "rows_flipped", "bounds_folded", "objective_negated", "all_at_once")
DIFFERENT = (
    "coefficient_changed",
    "constraint_dropped",
    "sense_flipped",
    "bound_changed",
    "integrality_changed",
    "coefficients_swapped",
    "quadratic_changed",
)


@dataclass(frozen=True)
class Case:
    """One corpus pair: ``generated`` against reference ``item``; ``equivalent`` is the truth."""

    item: int
    transformation: str
    equivalent: bool
    generated: LinearModel


def corpus(references: list[LinearModel], *, seed: int = 0) -> list[Case]:
    """Every applicable transformation of every reference (module docstring), in item order."""
    cases = []
    for item, model in enumerate(references):
        for name in (*EQUIVALENT, *DIFFERENT):
            rng = random.Random(f"{seed}:{item}:{name}")
            copy = TRANSFORMATIONS[name](model, rng)
            if copy is not None:
                cases.append(Case(item, name, name in EQUIVALENT, parse_lp(write_lp(copy))))
    return cases


def _seed(rng: random.Random) -> int:
    return rng.randrange(1 << 30)


def _entries(model: LinearModel) -> list[tuple[int, int, float]]:
    return list(zip(model.a_row, model.a_col, model.a_val, strict=True))


def _with_entries(
    model: LinearModel, entries: list[tuple[int, int, float]], **changes: object
) -> LinearModel:
    entries = sorted(entries)
    return model.model_copy(
        update={
            "a_row": tuple(e[0] for e in entries),
            "a_col": tuple(e[1] for e in entries),
            "a_val": tuple(e[2] for e in entries),
            **changes,
        }
    )


def _long_rows(model: LinearModel) -> list[int]:
    sizes: dict[int, int] = {}
    for i, _, _ in _entries(model):
        sizes[i] = sizes.get(i, 0) + 1
    return sorted(i for i, size in sizes.items() if size >= 2)


def _reordered(model: LinearModel, rng: random.Random) -> LinearModel:
    return perturb(model, seed=_seed(rng), flip_sense=False, scales=(1.0, 1.0), signs=(1.0,))


def _rows_scaled(model: LinearModel, rng: random.Random) -> LinearModel:
    return perturb(model, seed=_seed(rng), flip_sense=False, signs=(1.0,))


def _rows_flipped(model: LinearModel, rng: random.Random) -> LinearModel:
    return perturb(model, seed=_seed(rng), flip_sense=False, scales=(1.0, 1.0), signs=(-1.0,))


def _objective_negated(model: LinearModel, rng: random.Random) -> LinearModel:
    return perturb(model, seed=_seed(rng), flip_sense=True, scales=(1.0, 1.0), signs=(1.0,))


def _all_at_once(model: LinearModel, rng: random.Random) -> LinearModel:
    return perturb(model, seed=_seed(rng), flip_sense=rng.random() < 0.5)


def _bounds_folded(model: LinearModel, rng: random.Random) -> LinearModel | None:
    entries = _entries(model)
    lower, upper = list(model.lb), list(model.ub)
    names, row_lower, row_upper = list(model.row_names), list(model.row_lower), list(model.row_upper)
    for j, kind in enumerate(model.vtype):
        if kind != "C":
            continue
        for side in ("lb", "ub"):
            value = lower[j] if side == "lb" else upper[j]
            if not math.isfinite(value):
                continue
            a = rng.choice((-1.0, 1.0)) * rng.uniform(0.5, 3.0)
            # a * x >= a * lb for a > 0, a * x <= a * lb for a < 0 (and likewise for ub).
            at_least = (side == "lb") == (a > 0)
            entries.append((len(names), j, a))
            names.append(f"fold{len(names)}")
            row_lower.append(a * value if at_least else -math.inf)
            row_upper.append(math.inf if at_least else a * value)
            if side == "lb":
                lower[j] = -math.inf
            else:
                upper[j] = math.inf
    if len(names) == model.num_rows:
        return None
    folded = _with_entries(
        model,
        entries,
        lb=tuple(lower),
        ub=tuple(upper),
        row_names=tuple(names),
        row_lower=tuple(row_lower),
        row_upper=tuple(row_upper),
    )
    return perturb(folded, seed=_seed(rng), flip_sense=False)


def _changed(
    mutate: Callable[[LinearModel, random.Random], LinearModel | None],
) -> Callable[[LinearModel, random.Random], LinearModel | None]:
    def transformation(model: LinearModel, rng: random.Random) -> LinearModel | None:
        changed = mutate(model, rng)
        return None if changed is None else _all_at_once(changed, rng)

    return transformation


def _coefficient_changed(model: LinearModel, rng: random.Random) -> LinearModel | None:
    rows = set(_long_rows(model))
    entries = _entries(model)
    positions = [k for k, (i, _, _) in enumerate(entries) if i in rows]
    if not positions:
        return None
    k = rng.choice(positions)
    i, j, a = entries[k]
    entries[k] = (i, j, a * 1.5)
    return _with_entries(model, entries)


def _constraint_dropped(model: LinearModel, rng: random.Random) -> LinearModel | None:
    candidates = _long_rows(model)
    if not candidates:
        return None
    dropped = rng.choice(candidates)
    keep = [i for i in range(model.num_rows) if i != dropped]
    renumber = {old: new for new, old in enumerate(keep)}
    return _with_entries(
        model,
        [(renumber[i], j, a) for i, j, a in _entries(model) if i != dropped],
        row_names=tuple(model.row_names[i] for i in keep),
        row_lower=tuple(model.row_lower[i] for i in keep),
        row_upper=tuple(model.row_upper[i] for i in keep),
    )


def _sense_flipped(model: LinearModel, rng: random.Random) -> LinearModel | None:
    if not any(model.obj) and not model.q_obj:
        return None
    return model.model_copy(update={"sense": "min" if model.sense == "max" else "max"})


def _in_long_rows(model: LinearModel) -> list[int]:
    rows = set(_long_rows(model))
    return sorted({j for i, j, _ in _entries(model) if i in rows})


def _bound_changed(model: LinearModel, rng: random.Random) -> LinearModel | None:
    sizes: dict[int, int] = {}
    for i, _, _ in _entries(model):
        sizes[i] = sizes.get(i, 0) + 1
    candidates = []
    for j in _in_long_rows(model):
        if model.vtype[j] != "C":
            continue
        # The effective range: bounds intersected with the single-entry rows on the variable.
        low, high = model.lb[j], model.ub[j]
        for i, col, a in _entries(model):
            if col == j and sizes[i] == 1:
                lo, hi = sorted((model.row_lower[i] / a, model.row_upper[i] / a))
                low, high = max(low, lo), min(high, hi)
        if low < high:
            candidates.append((j, low, high))
    if not candidates:
        return None
    j, low, high = rng.choice(candidates)
    if math.isfinite(low) and math.isfinite(high):
        tighter = (low + high) / 2
    else:
        tighter = low + 1.0 if math.isfinite(low) else (high - 1.0 if math.isfinite(high) else 0.0)
    upper = list(model.ub)
    upper[j] = tighter
    return model.model_copy(update={"ub": tuple(upper)})


def _integrality_changed(model: LinearModel, rng: random.Random) -> LinearModel | None:
    candidates = [j for j in _in_long_rows(model) if model.vtype[j] in ("C", "I", "B")]
    if not candidates:
        return None
    j = rng.choice(candidates)
    vtype = list(model.vtype)
    vtype[j] = "C" if vtype[j] in ("I", "B") else "I"
    return model.model_copy(update={"vtype": tuple(vtype)})


def _coefficients_swapped(model: LinearModel, rng: random.Random) -> LinearModel | None:
    entries = _entries(model)
    by_row: dict[int, list[int]] = {}
    for k, (i, _, _) in enumerate(entries):
        by_row.setdefault(i, []).append(k)

    columns: dict[int, set[tuple[int, float]]] = {}
    for i, j, a in entries:
        columns.setdefault(j, set()).add((i, a))

    def looks(j: int) -> tuple[object, ...]:
        return (model.vtype[j], model.obj[j], model.lb[j], model.ub[j])

    def elsewhere(j: int, row: int) -> set[tuple[int, float]]:
        return {(i, a) for i, a in columns[j] if i != row}

    pairs = [
        (p, q)
        for row, positions in by_row.items()
        for n, p in enumerate(positions)
        for q in positions[n + 1 :]
        if entries[p][2] != entries[q][2]
        and looks(entries[p][1]) == looks(entries[q][1])
        and elsewhere(entries[p][1], row) != elsewhere(entries[q][1], row)
    ]
    if not pairs:
        return None
    p, q = rng.choice(pairs)
    (i, j, a), (_, k, b) = entries[p], entries[q]
    entries[p], entries[q] = (i, j, b), (i, k, a)
    return _with_entries(model, entries)


def _quadratic_changed(model: LinearModel, rng: random.Random) -> LinearModel | None:
    places = [("objective", k) for k in range(len(model.q_obj))]
    places += [
        (c, k)
        for c, qc in enumerate(model.q_constraints)
        if len(qc.linear) + len(qc.quadratic) >= 2
        for k in range(len(qc.quadratic))
    ]
    if not places:
        return None
    where, k = rng.choice(places)
    if where == "objective":
        terms = list(model.q_obj)
        i, j, q = terms[k]
        terms[k] = (i, j, q * 1.5)
        return model.model_copy(update={"q_obj": tuple(terms)})
    assert isinstance(where, int)
    constraints = list(model.q_constraints)
    quadratic = list(constraints[where].quadratic)
    i, j, q = quadratic[k]
    quadratic[k] = (i, j, q * 1.5)
    constraints[where] = QuadraticConstraint(
        lower=constraints[where].lower,
        upper=constraints[where].upper,
        linear=constraints[where].linear,
        quadratic=tuple(quadratic),
    )
    return model.model_copy(update={"q_constraints": tuple(constraints)})


TRANSFORMATIONS: dict[str, Callable[[LinearModel, random.Random], LinearModel | None]] = {
    "reordered": _reordered,
    "rows_scaled": _rows_scaled,
    "rows_flipped": _rows_flipped,
    "bounds_folded": _bounds_folded,
    "objective_negated": _objective_negated,
    "all_at_once": _all_at_once,
    "coefficient_changed": _changed(_coefficient_changed),
    "constraint_dropped": _changed(_constraint_dropped),
    "sense_flipped": _changed(_sense_flipped),
    "bound_changed": _changed(_bound_changed),
    "integrality_changed": _changed(_integrality_changed),
    "coefficients_swapped": _changed(_coefficients_swapped),
    "quadratic_changed": _changed(_quadratic_changed),
}
