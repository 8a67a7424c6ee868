"""Equivalent rewrites of a linear model, for exercising structural-equivalence rules.

:func:`perturb` returns a model that is the same optimisation problem written differently: what
a correct model from another author typically looks like. A sound and complete equivalence rule
must accept it. Pure and deterministic for a given seed.
"""

from __future__ import annotations

import random

from trex_eval.records import LinearModel

_SCALE_RANGE = (0.25, 4.0)


def perturb(model: LinearModel, *, seed: int, flip_sense: bool = True) -> LinearModel:
    """An equivalent copy of ``model``.

    Variables are renamed (``p0, p1, ...``) and put in a random order; rows are renamed
    (``q0, ...``), put in a random order and each multiplied by a random factor with magnitude in
    ``[0.25, 4)`` and random sign (a negative factor swaps the row's sides, turning ``>=`` into
    ``<=``). With ``flip_sense`` the objective sense is swapped and the objective (linear,
    quadratic and constant) negated. Integrality, bounds and the counted non-linear parts are
    kept.
    """
    rng = random.Random(seed)
    var_order = list(range(model.num_vars))
    rng.shuffle(var_order)
    new_var = {old: new for new, old in enumerate(var_order)}
    row_order = list(range(model.num_rows))
    rng.shuffle(row_order)
    new_row = {old: new for new, old in enumerate(row_order)}
    factors = [rng.choice((-1.0, 1.0)) * rng.uniform(*_SCALE_RANGE) for _ in range(model.num_rows)]

    lower: list[float] = []
    upper: list[float] = []
    for new, old in enumerate(row_order):
        low, high = model.row_lower[old] * factors[new], model.row_upper[old] * factors[new]
        lower.append(min(low, high))
        upper.append(max(low, high))
    entries = sorted(
        (new_row[i], new_var[j], value * factors[new_row[i]])
        for i, j, value in zip(model.a_row, model.a_col, model.a_val, strict=True)
    )
    sign = -1.0 if flip_sense else 1.0
    sense = model.sense
    if flip_sense:
        sense = "min" if model.sense == "max" else "max"
    quadratic = sorted(
        (min(new_var[i], new_var[j]), max(new_var[i], new_var[j]), sign * q) for i, j, q in model.q_obj
    )
    return model.model_copy(
        update={
            "sense": sense,
            "objective_constant": sign * model.objective_constant,
            "var_names": tuple(f"p{k}" for k in range(model.num_vars)),
            "obj": tuple(sign * model.obj[old] for old in var_order),
            "lb": tuple(model.lb[old] for old in var_order),
            "ub": tuple(model.ub[old] for old in var_order),
            "vtype": tuple(model.vtype[old] for old in var_order),
            "row_names": tuple(f"q{k}" for k in range(model.num_rows)),
            "row_lower": tuple(lower),
            "row_upper": tuple(upper),
            "a_row": tuple(e[0] for e in entries),
            "a_col": tuple(e[1] for e in entries),
            "a_val": tuple(e[2] for e in entries),
            "q_obj": tuple(quadratic),
        }
    )
