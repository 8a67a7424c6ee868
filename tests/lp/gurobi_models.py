"""Models built with the gurobipy API to cover what Gurobi's LP and MPS writers emit: every
section, general-constraint kinds, ranges, odd names and numbers. Each entry builds a fresh
model (gurobipy models are mutable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gurobi_oracle import gp, gurobi_env


def every_section() -> Any:
    grb = gp.GRB
    m = gp.Model("every section", env=gurobi_env())
    x = m.addVars(3, name="x")
    y = m.addVar(lb=-5, ub=7, vtype=grb.INTEGER, name="y[a,b]")
    free = m.addVar(lb=-grb.INFINITY, name="free")
    neg = m.addVar(lb=-grb.INFINITY, ub=-2, name="neg")
    b = m.addVar(vtype=grb.BINARY, name="b")
    b2 = m.addVar(vtype=grb.BINARY, lb=0, ub=0, name="b2")
    s = m.addVar(lb=2, ub=9, vtype=grb.SEMICONT, name="s")
    si = m.addVar(lb=1, ub=9, vtype=grb.SEMIINT, name="si")
    fixed = m.addVar(lb=3, ub=3, name="fx")
    unnamed = m.addVar(name="")
    d1, d2 = m.addVar(name="dup"), m.addVar(name="dup")
    m.setObjective(
        3 * x[0] + 2 * x[1] - y + 0.5 * x[0] * x[0] + x[1] * x[2] + 100 + d1 + 2 * d2, grb.MAXIMIZE
    )
    m.addConstr(x[0] + x[1] >= 1, name="c0")
    m.addConstr(x[2] - free == 0, name="c2")
    m.addRange(x[0] + x[2], 1, 5, name="rng")
    m.addConstr(x[0] * x[0] + x[1] * x[1] <= 4, name="qc0")
    m.addSOS(grb.SOS_TYPE1, [x[0], x[1], x[2]], [1, 2, 3])
    m.addGenConstrMax(free, [x[0], x[1]], constant=1.0, name="gmax")
    m.addGenConstrIndicator(b, True, x[0] + x[1] <= 3, name="ind")
    m.addConstr(-x[0] >= -5, name="c3")
    m.addConstr(unnamed + neg + s + si + fixed + b2 >= 0)
    lazy = m.addConstr(x[2] <= 8, name="lazy")
    m.update()
    lazy.Lazy = 1
    return m


def general_constraints() -> Any:
    grb = gp.GRB
    m = gp.Model("general constraints", env=gurobi_env())
    x = m.addVars(4, lb=-10, ub=10, name="x")
    bits = m.addVars(3, vtype=grb.BINARY, name="b")
    y = m.addVar(lb=-20, name="y")
    z = m.addVar(lb=-grb.INFINITY, name="z")
    m.addGenConstrMin(y, [x[0], x[1]], name="gmin")
    m.addGenConstrAbs(y, x[2], name="gabs")
    m.addGenConstrAnd(bits[0], [bits[1], bits[2]], name="gand")
    m.addGenConstrNorm(y, [x[0], x[1]], 2.0, name="gnorm")
    m.addGenConstrPWL(x[0], y, [0, 1, 2], [1.5, 0, 3], name="gpwl")
    m.addGenConstrPoly(x[0], y, [3, 0, 2, 4], name="gpoly")
    m.addGenConstrExpA(x[0], y, 3.0, name="gexpa")
    m.addGenConstrLogA(x[1], y, 2.0, name="gloga")
    m.addGenConstrNL(z, gp.nlfunc.sqrt(x[3]) + x[0] * gp.nlfunc.sin(x[1]), name="gnl")
    m.addSOS(grb.SOS_TYPE2, [x[0], x[1], x[2]], [1, 2, 3])
    m.addConstr(x[0] + x[1] + x[2] + x[3] >= -5, name="lin")
    m.addLConstr(x[0] >= 1)
    m.setObjective(x[0] + z)
    return m


def odd_numbers_and_names() -> Any:
    grb = gp.GRB
    m = gp.Model("odd numbers and names", env=gurobi_env())
    bounds = [(-0.0, 1e-7, "tiny ub"), (1e-300, 1e300, "a:b"), (-1e25, 3.25, "c(1)"), (0.0, 0.0, "z.z")]
    v = [m.addVar(lb=low, ub=high, name=name) for low, high, name in bounds]
    m.setObjective(-0.0 * v[0] + 1e-20 * v[1] + 123456789.123456789 * v[2] - 5, grb.MINIMIZE)
    m.addConstr(1e-12 * v[0] + 3 * v[1] - 2.5e-8 * v[2] <= -0.0, name="r 1")
    m.addConstr(v[0] - v[0] + v[3] == 0.1, name="r:2")
    m.addConstr(gp.LinExpr() >= -4, name="empty")
    m.addConstr(v[2] >= -grb.INFINITY, name="free row")
    return m


def integers_and_quadratic_objective() -> Any:
    grb = gp.GRB
    m = gp.Model("integers and quadratic objective", env=gurobi_env())
    x = m.addVars(3, lb=-1, ub=10, name="x")
    y = m.addVar(name="y", vtype=grb.INTEGER)
    z = m.addVar(name="z", vtype=grb.INTEGER, ub=5)
    m.setObjective(x[0] * x[0] + 2 * x[0] * x[1] + 3 * x[1] * x[2] + y, grb.MAXIMIZE)
    m.addConstr(x[0] * x[0] + x[0] * x[1] + 4 * x[1] * x[0] + x[2] <= 3, name="qc")
    m.addConstr(x[0] + z <= 3, name="c")
    m.addRange(x[0] + x[1], -2, 2, name="r")
    m.ObjCon = 7
    return m


GUROBI_MODELS: dict[str, Callable[[], Any]] = {
    "every_section": every_section,
    "general_constraints": general_constraints,
    "odd_numbers_and_names": odd_numbers_and_names,
    "integers_and_quadratic_objective": integers_and_quadratic_objective,
}
