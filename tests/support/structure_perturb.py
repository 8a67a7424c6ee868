"""Equivalent rewrites of a linear model, for exercising structural-equivalence rules.

:func:`perturb` returns a model that is the same optimisation problem written differently: what
a correct model from another author typically looks like. A sound and complete equivalence rule
must accept it. Pure and deterministic for a given seed.
"""

from __future__ import annotations

import random

from trex_eval.records import IndicatorConstraint, LinearModel, QuadraticConstraint, SOSConstraint

_SCALE_RANGE = (0.25, 4.0)


def perturb(
    model: LinearModel,
    *,
    seed: int,
    flip_sense: bool = True,
    scales: tuple[float, float] = _SCALE_RANGE,
    signs: tuple[float, ...] = (-1.0, 1.0),
) -> LinearModel:
    """An equivalent copy of ``model``.

    Variables are renamed (``p0, p1, ...``) and put in a random order; rows are renamed
    (``q0, ...``), put in a random order and each multiplied by a random factor with magnitude in
    ``[0.25, 4)`` and random sign (a negative factor swaps the row's sides, turning ``>=`` into
    ``<=``); ``scales`` and ``signs`` narrow those factors (``(1.0, 1.0)`` and ``(1.0,)``: no
    scaling). With ``flip_sense`` the objective sense is swapped and the objective (linear,
    quadratic and constant) negated. Integrality and bounds are kept. Held quadratic
    constraints and indicators are renumbered, reordered and scaled like rows; SOS sets are
    renumbered and reordered, their weights mapped by an increasing affine function (the same
    order). Counts of parts that are not held are kept. The random draws for the linear part
    come first, so a linear model's copy does not depend on this.
    """
    rng = random.Random(seed)
    var_order = list(range(model.num_vars))
    rng.shuffle(var_order)
    new_var = {old: new for new, old in enumerate(var_order)}
    row_order = list(range(model.num_rows))
    rng.shuffle(row_order)
    new_row = {old: new for new, old in enumerate(row_order)}
    factors = [_factor(rng, scales, signs) for _ in range(model.num_rows)]

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
    q_constraints = []
    for constraint in model.q_constraints:
        factor = _factor(rng, scales, signs)
        low, high = constraint.lower * factor, constraint.upper * factor
        q_constraints.append(
            QuadraticConstraint(
                lower=min(low, high),
                upper=max(low, high),
                linear=tuple(sorted((new_var[j], a * factor) for j, a in constraint.linear)),
                quadratic=tuple(
                    sorted(
                        (min(new_var[i], new_var[j]), max(new_var[i], new_var[j]), q * factor)
                        for i, j, q in constraint.quadratic
                    )
                ),
            )
        )
    rng.shuffle(q_constraints)
    sos = []
    for sos_set in model.sos:
        scale, shift = rng.uniform(*_SCALE_RANGE), rng.uniform(-10.0, 10.0)
        members = [(new_var[j], scale * w + shift) for j, w in sos_set.members]
        rng.shuffle(members)
        sos.append(SOSConstraint(type=sos_set.type, members=tuple(members)))
    rng.shuffle(sos)
    indicators = []
    for indicator in model.indicators:
        factor = _factor(rng, scales, signs)
        low, high = indicator.lower * factor, indicator.upper * factor
        indicators.append(
            IndicatorConstraint(
                binary=new_var[indicator.binary],
                value=indicator.value,
                lower=min(low, high),
                upper=max(low, high),
                linear=tuple(sorted((new_var[j], a * factor) for j, a in indicator.linear)),
            )
        )
    rng.shuffle(indicators)
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
            "q_constraints": tuple(q_constraints),
            "sos": tuple(sos),
            "indicators": tuple(indicators),
        }
    )


def _factor(rng: random.Random, scales: tuple[float, float], signs: tuple[float, ...]) -> float:
    # Both draws always happen, so narrowing the factors does not shift the other random choices.
    sign = rng.choice((-1.0, 1.0))
    magnitude = rng.uniform(*scales)
    return (sign if sign in signs else signs[0]) * magnitude
