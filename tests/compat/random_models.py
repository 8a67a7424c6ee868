"""Seeded random gurobipy programs for differential tests against real gurobipy.

Each program builds a model with explicit API calls (names of every length, coefficients of
every magnitude and sign, all bound shapes and variable types, ranges, quadratic objectives and
constraints, indicators, general constraints, SOS, unnamed objects) and writes ``model.lp`` and,
when the model is linear, ``model.mps``. Nothing here knows the expected output: the test runs
each program under real gurobipy and under the gurobipy_highs layer and compares what they wrote.
"""

from __future__ import annotations

import random

_MAGNITUDES = (1e-9, 1e-6, 3e-4, 0.01, 0.1, 1.0, 7.0, 100.0, 12345.0, 1e6, 3e8, 1e12)


def _coefficient(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.25:
        value = rng.choice((1.0, -1.0, 2.0, -3.0, 0.5))
    elif kind < 0.5:
        value = round(rng.uniform(-1000, 1000), rng.randint(0, 4))
    else:
        value = rng.uniform(-1, 1) * rng.choice(_MAGNITUDES)
    return repr(value if value != 0.0 else 1.0)


def _name(rng: random.Random, stem: str, index: int) -> str:
    style = rng.random()
    if style < 0.1:
        return ""
    if style < 0.2:
        return f"{stem}{'_' * rng.randint(0, 3)}with space {index}"
    if style < 0.6:
        return f"{stem}[{index},{rng.randint(0, 99)}]"
    return f"{stem}{'x' * rng.randint(0, 40)}{index}"


def _bounds(rng: random.Random) -> str:
    choice = rng.randint(0, 6)
    if choice == 0:
        return ""
    if choice == 1:
        return "lb=-GRB.INFINITY, "
    if choice == 2:
        return f"lb=-GRB.INFINITY, ub={_coefficient(rng)}, "
    if choice == 3:
        low = rng.uniform(-50, 50)
        return f"lb={low!r}, ub={low + rng.uniform(0, 100)!r}, "
    if choice == 4:
        return f"ub={abs(float(_coefficient(rng)))!r}, "
    if choice == 5:
        value = rng.uniform(-5, 5)
        return f"lb={value!r}, ub={value!r}, "
    return f"lb={rng.uniform(-20, 20)!r}, "


def random_program(seed: int, *, nonlinear: bool, quadratic_objective: bool = False) -> str:
    """Source of one random model-building program (deterministic in ``seed``).

    ``nonlinear`` adds quadratic, indicator, general and SOS constraints (LP file only);
    ``quadratic_objective`` adds only quadratic objective terms (LP and MPS files).
    """
    rng = random.Random(seed)
    lines = [
        "import gurobipy as gp",
        "from gurobipy import GRB",
        f"m = gp.Model({rng.choice(['', 'random model', f'model_{seed}'])!r})",
        "v = []",
    ]
    count = rng.randint(1, 18)
    for j in range(count):
        vtype = rng.choice(["C", "C", "C", "I", "B", "S", "N"] if nonlinear else ["C", "C", "I", "B"])
        bounds = _bounds(rng)
        if vtype in "SN":
            bounds = f"lb={rng.uniform(0, 3)!r}, ub={rng.uniform(4, 9)!r}, "
        elif vtype == "B":
            # binaries with bounds outside [0, 1] are not worth matching byte for byte
            bounds = rng.choice(["", "", "lb=1, ", "ub=0, "])
        lines.append(f"v.append(m.addVar({bounds}vtype={vtype!r}, name={_name(rng, 'x', j)!r}))")
    if rng.random() < 0.3:
        lines.append(f"w = m.addVars({rng.randint(1, 3)}, {rng.randint(1, 4)}, name='w')")
        lines.append("v.extend(w.values())")

    def linear(size: int) -> str:
        # distinct variables: merging repeated terms is tested separately (Gurobi's merge order
        # can differ from left-to-right in the last bit)
        picked = rng.sample(range(count), min(size, count))
        terms = [f"{_coefficient(rng)} * v[{k}]" for k in picked]
        return " + ".join(terms) if terms else "gp.LinExpr()"

    def pairs(size: int) -> list[tuple[int, int]]:
        # each product at most twice (as x*y and y*x): merging two terms is order-free
        chosen = rng.sample([(i, j) for i in range(count) for j in range(i, count)], min(size, count))
        return [(j, i) if rng.random() < 0.5 else (i, j) for i, j in chosen]

    for i in range(rng.randint(0, 12)):
        sense = rng.choice(["<=", ">=", "=="])
        rhs = _coefficient(rng) if rng.random() < 0.8 else "0"
        name = _name(rng, "c", i)
        lines.append(f"m.addConstr({linear(rng.randint(0, count))} {sense} {rhs}, name={name!r})")
    if rng.random() < 0.3:
        lines.append(
            f"m.addRange({linear(rng.randint(1, 4))}, -5.5, {rng.uniform(0, 9)!r}, name='rng{seed}')"
        )
    objective = linear(rng.randint(0, count))
    if rng.random() < 0.5:
        objective += f" + {_coefficient(rng)}"
    if quadratic_objective or (nonlinear and rng.random() < 0.6):
        for i, j in pairs(rng.randint(1, 6)):
            objective += f" + {_coefficient(rng)} * v[{i}] * v[{j}]"
    lines.append(f"m.setObjective({objective}, {rng.choice(['GRB.MINIMIZE', 'GRB.MAXIMIZE'])})")
    if nonlinear:
        for i in range(rng.randint(0, 3)):
            quad = " + ".join(f"{_coefficient(rng)} * v[{i}] * v[{j}]" for i, j in pairs(rng.randint(1, 5)))
            name = rng.choice(["", f"q{i}"])
            lines.append(
                f"m.addQConstr({linear(rng.randint(0, 3))} + {quad} <= {_coefficient(rng)}, name={name!r})"
            )
        if rng.random() < 0.5:
            lines.append("b = m.addVar(vtype=GRB.BINARY, name='flag')")
            lines.append(
                f"m.addConstr((b == {rng.randint(0, 1)}) >> ({linear(rng.randint(1, 4))} <= 3.5), name='ind')"
            )
            lines.append(f"m.addGenConstrIndicator(b, True, {linear(2)} >= -1.25)")
        if rng.random() < 0.5:
            lines.append("r = m.addVar(lb=-GRB.INFINITY, name='res')")
            lines.append(
                f"m.addGenConstrMax(r, [v[0], v[{count - 1}]], constant={rng.uniform(-3, 3)!r}, name='mx')"
            )
            lines.append("m.addGenConstrMin(r, [v[0]])")
            lines.append("m.addGenConstrAbs(r, v[0], name='ab')")
            lines.append("m.addGenConstrPWL(v[0], r, [0, 1, 2.5], [0, 3, -1], name='pw')")
        if rng.random() < 0.3 and count >= 2:
            lines.append("m.addSOS(GRB.SOS_TYPE1, [v[0], v[1]], [1, 2])")
    lines.append("m.write('model.lp')")
    if not nonlinear:
        lines.append("m.write('model.mps')")
    return "\n".join(lines) + "\n"


def random_solve_program(seed: int) -> str:
    """A random LP, MILP or QP (convex or not) that is optimised; the driver reads
    ``model.Status`` and ``model.ObjVal`` afterwards. Bounds are finite and every constraint
    holds at a hidden integral point, so most models are feasible; about one in eight gets an
    extra contradictory constraint. Deterministic in ``seed``."""
    rng = random.Random(seed)
    kind = rng.choice(["lp", "milp", "milp", "convex_qp", "nonconvex_qp"])
    count = rng.randint(2, 12)
    lines = [
        f"# kind: {kind}",
        "import gurobipy as gp",
        "from gurobipy import GRB",
        "model = gp.Model('solve')",
    ]
    lines.append("model.Params.OutputFlag = 0")
    point = []
    for j in range(count):
        vtype = rng.choice("CIB") if kind == "milp" else "C"
        low, high = (0, 1) if vtype == "B" else (rng.choice([0, -10, -3]), rng.randint(1, 20))
        point.append(rng.randint(low, high))
        lines.append(f"x{j} = model.addVar(lb={low}, ub={high}, vtype={vtype!r}, name='x{j}')")
    for i in range(rng.randint(1, 2 * count)):
        picked = rng.sample(range(count), rng.randint(1, count))
        coeffs = {j: rng.randint(-9, 9) or 1 for j in picked}
        activity = sum(coeffs[j] * point[j] for j in picked)
        terms = " + ".join(f"{coeffs[j]} * x{j}" for j in picked)
        sense = rng.choice(["<=", ">=", "<=", "=="])
        rhs = activity + {"<=": rng.uniform(0, 9), ">=": -rng.uniform(0, 9), "==": 0}[sense]
        lines.append(f"model.addConstr({terms} {sense} {rhs!r}, name='c{i}')")
    if rng.random() < 0.125:
        lines.append("model.addConstr(x0 >= 1e3, name='impossible')")
    objective = " + ".join(f"{rng.uniform(-10, 10)!r} * x{j}" for j in range(count))
    if kind == "convex_qp":
        objective += " + " + " + ".join(f"{rng.uniform(0.1, 3)!r} * x{j} * x{j}" for j in range(count))
        objective += " + 0.05 * x0 * x1"
        sense = "GRB.MINIMIZE"
    elif kind == "nonconvex_qp":
        objective += f" + {rng.uniform(1, 3)!r} * x0 * x{count - 1}"
        sense = rng.choice(["GRB.MINIMIZE", "GRB.MAXIMIZE"])
    else:
        sense = rng.choice(["GRB.MINIMIZE", "GRB.MAXIMIZE"])
    lines.append(f"model.setObjective({objective} + {rng.uniform(-5, 5)!r}, {sense})")
    lines.append("model.optimize()")
    return "\n".join(lines) + "\n"
