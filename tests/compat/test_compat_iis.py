"""``Model.computeIIS`` in the gurobipy_highs layer against real gurobipy 13.0.3.

An infeasible model may have several IISs, and Gurobi's choice among them is its own, so random
models are checked by what makes a set an IIS, with real gurobipy as the judge: the set is
infeasible, and removing any one member makes it feasible. Small models whose IIS is unique
must give Gurobi's IIS, its attributes, its errors and its ``.ilp`` file to the byte.
"""

from __future__ import annotations

import math
import random
import re
from types import ModuleType
from typing import Any

import pytest
from api_snippets import HEADER
from compat_runner import ProgramJob, run_programs

import gurobipy_highs

pytestmark = pytest.mark.timeout(600)

_LICENCE_LINE = re.compile(r"^Restricted license.*\n", re.MULTILINE)

CASES = {
    "feasible": """
m = gp.Model("feas")
x = m.addVar(ub=3, name="x"); m.addConstr(x >= 1, name="c0"); m.setObjective(x)
m.update()
try:
    print(m.getConstrs()[0].IISConstr)
except Exception as e:
    print("before:", type(e).__name__, repr(str(e)))
try:
    m.write("before.ilp")
except gp.GurobiError as e:
    print("write before:", e.errno, str(e))
try:
    m.computeIIS()
except gp.GurobiError as e:
    print("feasible:", e.errno, str(e))
""",
    "edges": """
def run(name, build):
    m = gp.Model(name)
    build(m)
    m.update()
    try:
        m.computeIIS()
        print(name, m.Status, m.IISMinimal, [c.IISConstr for c in m.getConstrs()],
              [(v.IISLB, v.IISUB) for v in m.getVars()])
    except gp.GurobiError as e:
        print(name, e.errno, str(e))
def equalities(m):
    x = m.addVar(name="x"); y = m.addVar(name="y")
    m.addConstr(x + y == 1, name="e"); m.addConstr(x + y == 2, name="f")
def ranged(m):
    x = m.addVar(name="x"); m.addRange(x, 2, 3, name="r"); m.addConstr(x <= 1, name="u")
run("empty", lambda m: None)
run("lb above ub", lambda m: m.addVar(lb=3, ub=1, name="x"))
run("fractional integer bounds", lambda m: m.addVar(lb=0.2, ub=0.8, vtype=GRB.INTEGER, name="x"))
run("equalities", equalities)
run("range", ranged)
run("bounds only", lambda m: (m.addVar(lb=2, ub=5, name="x"), m.addVar(lb=-1, ub=-2, name="y")))
""",
    "tightened_binaries": """
m = gp.Model("b")
x = m.addVar(vtype=GRB.BINARY, lb=1, name="x"); y = m.addVar(vtype=GRB.BINARY, name="y")
z = m.addVar(vtype=GRB.BINARY, ub=0, name="z")
m.addConstr(x + y + z <= 0, name="c"); m.addConstr(y - z >= 0, name="d")
m.computeIIS()
print([(v.VarName, v.IISLB, v.IISUB) for v in m.getVars()], [c.IISConstr for c in m.getConstrs()])
m.write("tightened.ilp")
f = gp.Model("f")
x = f.addVar(vtype=GRB.BINARY, lb=0.5, ub=0.7, name="x")
f.computeIIS()
print([(v.VarName, v.IISLB, v.IISUB) for v in f.getVars()])
f.write("fractional.ilp")
""",
    "row_without_columns": """
m = gp.Model("z")
m.addConstr(gp.LinExpr() >= 1, name="z")
m.computeIIS()
print(m.Status, m.IISMinimal, [c.IISConstr for c in m.getConstrs()])
m.write("model.ilp")
""",
    "large_lp": """
import random
random.seed(1)
md = gp.Model("big")
x = [md.addVar(ub=10, name=f"x{j}") for j in range(400)]
for i in range(300):
    cols = random.sample(range(150, 400), 20)
    md.addConstr(gp.quicksum(random.uniform(0.1, 1) * x[j] for j in cols) <= random.uniform(50, 100))
md.addConstr(gp.quicksum(x[:150]) >= 1501, name="bad")
md.computeIIS()
print(md.IISMinimal, [c.ConstrName for c in md.getConstrs() if c.IISConstr])
print(sum(v.IISUB for v in md.getVars()), sum(v.IISLB for v in md.getVars()))
""",
    "unbounded": """
m = gp.Model("unb")
x = m.addVar(name="x"); m.setObjective(x, GRB.MAXIMIZE)
try:
    m.computeIIS()
except gp.GurobiError as e:
    print("unbounded:", e.errno, str(e))
""",
    "lp_bounds": """
m = gp.Model("lbcase")
x = m.addVar(lb=2, ub=5, name="x"); y = m.addVar(lb=0.5, name="y"); w = m.addVar(lb=-3, ub=0.2, name="w")
m.addConstr(x + y - w <= 1, name="c"); m.addConstr(x + w >= -100, name="loose")
print("status", m.Status)
m.computeIIS()
print("status", m.Status, "minimal", m.IISMinimal)
print(m.getAttr("IISConstr", m.getConstrs()), m.getAttr("IISLB", m.getVars()))
print(m.getAttr("IISUB", m.getVars()))
m.write("model.ilp")
m.addConstr(x <= 100, name="new"); m.update()
try:
    print(m.getConstrs()[0].IISConstr)
except Exception as e:
    print("after a change:", type(e).__name__, repr(str(e)))
""",
    "mip_integrality": """
m = gp.Model("int")
x = m.addVar(vtype=GRB.INTEGER, name="x", ub=10); m.addConstr(2 * x == 7, name="odd")
m.addConstr(x <= 8, name="c1")
m.optimize()
print("status", m.Status)
m.computeIIS()
print([c.IISConstr for c in m.getConstrs()], [(v.IISLB, v.IISUB) for v in m.getVars()], m.IISMinimal)
m.write("model.ilp")
m.optimize()
m.Params.MIPGap = 0.5
print("kept through a solve and a parameter:", m.IISMinimal, m.getConstrs()[0].IISConstr)
m.reset()
try:
    print(m.IISMinimal)
except Exception as e:
    print("after reset:", type(e).__name__, repr(str(e)))
m.computeIIS()
x.Obj = 3
m.update()
try:
    print(x.IISUB)
except Exception as e:
    print("after a new objective:", type(e).__name__, repr(str(e)))
""",
    "time_limit": """
m = gp.Model("tl")
x = m.addVars(30, vtype=GRB.INTEGER, name="x", ub=10)
for i in range(29):
    m.addConstr(2 * x[i] + 2 * x[i + 1] == 7, name=f"odd{i}")
m.Params.TimeLimit = 0
m.computeIIS()
try:
    print(m.IISMinimal)
except Exception as e:
    print("no time:", m.Status, type(e).__name__, repr(str(e)))
m.Params.TimeLimit = 5
m.computeIIS()
print(m.Status, m.IISMinimal, sum(c.IISConstr for c in m.getConstrs()))
""",
    "binaries": """
m = gp.Model("bin")
b = m.addVars(3, vtype=GRB.BINARY, name="b")
m.addConstr(b.sum() >= 4, name="tooMany"); m.addConstr(b[0] + b[1] <= 1, name="pair")
m.computeIIS()
print([(v.VarName, v.IISLB, v.IISUB) for v in m.getVars()])
print([(c.ConstrName, c.IISConstr) for c in m.getConstrs()])
m.write("model.ilp")
""",
    "maximize_integer": """
m = gp.Model("inf")
x = m.addVar(lb=0, ub=10, vtype=GRB.INTEGER, name="x"); y = m.addVar(lb=-5, ub=4, name="y")
z = m.addVar(name="z", vtype=GRB.BINARY)
m.addConstr(x + y >= 20, name="c0"); m.addConstr(x - y <= 3, name="c1"); m.addConstr(z + x <= 100, name="c2")
m.setObjective(x + y, GRB.MAXIMIZE)
m.computeIIS()
for c in m.getConstrs():
    print(c.ConstrName, c.IISConstr)
for v in m.getVars():
    print(v.VarName, v.IISLB, v.IISUB)
m.write("model.ilp")
""",
}


def test_small_models_give_gurobis_iis_errors_and_ilp_file(real_gurobipy: ModuleType) -> None:
    jobs = [ProgramJob(key=name, code=HEADER + body) for name, body in CASES.items()]
    real = run_programs(jobs, flavour="real")
    layer = run_programs(jobs, flavour="highs")
    for job in jobs:
        assert real[job.key].error_type is None, (job.key, real[job.key].error)
        assert layer[job.key].error_type is None, (job.key, layer[job.key].error)
        assert layer[job.key].stdout == _LICENCE_LINE.sub("", real[job.key].stdout), job.key
        assert layer[job.key].written == real[job.key].written, job.key


def _random_model(gp: Any, seed: int, *, integer: bool) -> Any:
    """A random model of 6-14 variables and 5-14 rows, infeasible more often than not: each row
    is drawn around a random point, and some are then pushed past it."""
    rng = random.Random(seed)
    model = gp.Model(f"r{seed}")
    model.Params.OutputFlag = 0
    n = rng.randint(6, 14)
    point = [rng.randint(-5, 5) for _ in range(n)]
    variables = []
    for j in range(n):
        lb = point[j] - rng.choice((0, 1, 3, math.inf))
        ub = point[j] + rng.choice((0, 2, 4, math.inf))
        vtype = rng.choice("CIB") if integer else "C"
        if vtype == "B":
            lb, ub = rng.choice(((0, 1), (0, 1), (1, 1), (0, 0)))
        variables.append(
            model.addVar(lb=-gp.GRB.INFINITY if lb == -math.inf else lb, ub=ub, vtype=vtype, name=f"x{j}")
        )
    for i in range(rng.randint(5, 14)):
        cols = rng.sample(range(n), rng.randint(1, min(4, n)))
        coefs = [rng.choice((1, -1, 2, -3, 5)) for _ in cols]
        activity = sum(c * point[j] for c, j in zip(coefs, cols, strict=True))
        expr = gp.quicksum(c * variables[j] for c, j in zip(coefs, cols, strict=True))
        shift = rng.choice((0, 0, 1, 3, -2)) + (0.5 if integer and rng.random() < 0.2 else 0)
        sense = rng.choice("<>=")
        rhs = activity - shift if sense == "<" else activity + shift
        model.addConstr(
            gp.LinExpr(expr) <= rhs if sense == "<" else (expr >= rhs if sense == ">" else expr == rhs),
            name=f"c{i}",
        )
    model.update()
    return model


def _subsystem_is_feasible(gp: Any, seed: int, integer: bool, members: set[tuple[str, int]]) -> bool:
    """Whether the part of model ``seed`` made of ``members`` (rows and bounds; the rest removed
    or relaxed: infinite, a binary's 0 and 1) is feasible, by real gurobipy."""
    model = _random_model(gp, seed, integer=integer)
    model.setObjective(0)
    for i, constr in enumerate(model.getConstrs()):
        if ("row", i) not in members:
            model.remove(constr)
    for j, var in enumerate(model.getVars()):
        binary = var.VType == gp.GRB.BINARY  # its type holds it to [0, 1]
        if ("lb", j) not in members:
            var.LB = 0 if binary else -gp.GRB.INFINITY
        if ("ub", j) not in members:
            var.UB = 1 if binary else gp.GRB.INFINITY
    model.optimize()
    assert model.Status in (gp.GRB.OPTIMAL, gp.GRB.INFEASIBLE), model.Status
    return bool(model.Status == gp.GRB.OPTIMAL)


@pytest.mark.parametrize("integer", [False, True], ids=["lp", "mip"])
def test_random_models_get_an_infeasible_and_irreducible_subsystem(
    real_gurobipy: ModuleType, integer: bool
) -> None:
    gp = real_gurobipy
    infeasible = 0
    for seed in range(60):
        real = _random_model(gp, seed, integer=integer)
        real.optimize()
        layer = _random_model(gurobipy_highs, seed, integer=integer)
        if real.Status != gp.GRB.INFEASIBLE:
            assert real.Status == gp.GRB.OPTIMAL
            with pytest.raises(gurobipy_highs.GurobiError) as refused:
                layer.computeIIS()
            assert refused.value.errno == 10015
            continue
        infeasible += 1
        if seed % 2:
            layer.optimize()  # its proof of infeasibility is then not repeated
            assert layer.Status == gp.GRB.INFEASIBLE
        layer.computeIIS()
        assert layer.IISMinimal == 1
        members = {("row", c.index) for c in layer.getConstrs() if c.IISConstr}
        members |= {("lb", v.index) for v in layer.getVars() if v.IISLB}
        members |= {("ub", v.index) for v in layer.getVars() if v.IISUB}
        assert not _subsystem_is_feasible(gp, seed, integer, members), seed
        for member in sorted(members):
            assert _subsystem_is_feasible(gp, seed, integer, members - {member}), (seed, member)
    assert infeasible >= 20
