"""Real programs for every hooked library: status, objective and matrix as the hooks capture them.

The model throughout is the textbook example ``max 5x + 4y  s.t. 6x + 4y <= 24, x + 2y <= 6,
x, y >= 0``. Its LP optimum is x = 3, y = 1.5, objective 21 (both rows tight: 6*3 + 4*1.5 = 24,
3 + 2*1.5 = 6); with x, y integer the optimum is x = 4, y = 0, objective 20 (the integer points
of the region are (0..4, 0), (0..3, 1), (0..2, 2), (0, 3); 5x + 4y is largest at (4, 0)).
"""

from __future__ import annotations

import math

import pytest

from trex_eval.records import ExecStatus, LinearModel, SolveStatus
from trex_eval.sandbox import Job, SandboxPool

LP_OPTIMUM = 21.0
MILP_OPTIMUM = 20.0
ROWS = {((6.0, 4.0), -math.inf, 24.0), ((1.0, 2.0), -math.inf, 6.0)}

PROGRAMS = {
    "gurobipy": """
import gurobipy as gp
from gurobipy import GRB
m = gp.Model("textbook")
vtype = GRB.INTEGER if INTEGER else GRB.CONTINUOUS
x = m.addVar(vtype=vtype, name="x")
y = m.addVar(vtype=vtype, name="y")
m.addConstr(6 * x + 4 * y <= 24, name="wood")
m.addConstr(x + 2 * y <= 6, name="labour")
m.setObjective(5 * x + 4 * y, GRB.MAXIMIZE)
m.optimize()
""",
    "coptpy": """
import coptpy as cp
from coptpy import COPT
env = cp.Envr()
m = env.createModel("textbook")
vtype = COPT.INTEGER if INTEGER else COPT.CONTINUOUS
x = m.addVar(vtype=vtype, name="x")
y = m.addVar(vtype=vtype, name="y")
m.addConstr(6 * x + 4 * y <= 24, name="wood")
m.addConstr(x + 2 * y <= 6, name="labour")
m.setObjective(5 * x + 4 * y, COPT.MAXIMIZE)
m.solve()
""",
    "pulp": """
import pulp
prob = pulp.LpProblem("textbook", pulp.LpMaximize)
cat = "Integer" if INTEGER else "Continuous"
x = pulp.LpVariable("x", lowBound=0, cat=cat)
y = pulp.LpVariable("y", lowBound=0, cat=cat)
prob += 5 * x + 4 * y
prob += 6 * x + 4 * y <= 24, "wood"
prob += x + 2 * y <= 6, "labour"
prob.solve(pulp.PULP_CBC_CMD(msg=0))
""",
    "ortools.linear_solver": """
from ortools.linear_solver import pywraplp
solver = pywraplp.Solver.CreateSolver("SCIP" if INTEGER else "GLOP")
make = solver.IntVar if INTEGER else solver.NumVar
x = make(0, solver.infinity(), "x")
y = make(0, solver.infinity(), "y")
solver.Add(6 * x + 4 * y <= 24, "wood")
solver.Add(x + 2 * y <= 6, "labour")
solver.Maximize(5 * x + 4 * y)
status = solver.Solve()
""",
    "ortools.math_opt": """
from ortools.math_opt.python import mathopt
model = mathopt.Model(name="textbook")
x = model.add_variable(lb=0, is_integer=INTEGER, name="x")
y = model.add_variable(lb=0, is_integer=INTEGER, name="y")
model.add_linear_constraint(6 * x + 4 * y <= 24, name="wood")
model.add_linear_constraint(x + 2 * y <= 6, name="labour")
model.maximize(5 * x + 4 * y)
result = mathopt.solve(model, mathopt.SolverType.HIGHS)
""",
    "pyomo": """
import pyomo.environ as pyo
model = pyo.ConcreteModel()
domain = pyo.NonNegativeIntegers if INTEGER else pyo.NonNegativeReals
model.x = pyo.Var(domain=domain)
model.y = pyo.Var(domain=domain)
model.wood = pyo.Constraint(expr=6 * model.x + 4 * model.y <= 24)
model.labour = pyo.Constraint(expr=model.x + 2 * model.y <= 6)
model.profit = pyo.Objective(expr=5 * model.x + 4 * model.y, sense=pyo.maximize)
pyo.SolverFactory("appsi_highs").solve(model)
""",
    "pyscipopt": """
from pyscipopt import Model
m = Model("textbook")
m.hideOutput()
vtype = "I" if INTEGER else "C"
x = m.addVar("x", vtype=vtype, lb=0)
y = m.addVar("y", vtype=vtype, lb=0)
m.addCons(6 * x + 4 * y <= 24, name="wood")
m.addCons(x + 2 * y <= 6, name="labour")
m.setObjective(5 * x + 4 * y, "maximize")
m.optimize()
""",
    "highspy": """
import highspy
h = highspy.Highs()
h.silent()
x = h.addVariable(lb=0, type=highspy.HighsVarType.kInteger if INTEGER else highspy.HighsVarType.kContinuous)
y = h.addVariable(lb=0, type=highspy.HighsVarType.kInteger if INTEGER else highspy.HighsVarType.kContinuous)
h.addConstr(6 * x + 4 * y <= 24)
h.addConstr(x + 2 * y <= 6)
h.maximize(5 * x + 4 * y)
""",
    "scipy.linprog": """
from scipy.optimize import linprog
result = linprog([-5, -4], A_ub=[[6, 4], [1, 2]], b_ub=[24, 6], integrality=[int(INTEGER)] * 2)
""",
    "scipy.milp": """
import numpy as np
from scipy.optimize import LinearConstraint, milp
result = milp([-5, -4], constraints=LinearConstraint([[6, 4], [1, 2]], -np.inf, [24, 6]),
              integrality=[int(INTEGER)] * 2)
""",
    "cvxpy": """
import cvxpy as cp
x = cp.Variable(integer=INTEGER, name="x")
y = cp.Variable(integer=INTEGER, name="y")
problem = cp.Problem(cp.Maximize(5 * x + 4 * y), [6 * x + 4 * y <= 24, x + 2 * y <= 6, x >= 0, y >= 0])
problem.solve(solver=cp.HIGHS)
""",
}

MINIMISING = {"scipy.linprog", "scipy.milp"}
"""Libraries that only minimise: the program states ``min -5x - 4y``."""


def _dense_rows(
    model: LinearModel, columns: tuple[int, int]
) -> set[tuple[tuple[float, float], float, float]]:
    rows: dict[int, dict[int, float]] = {}
    for i, j, value in zip(model.a_row, model.a_col, model.a_val, strict=True):
        rows.setdefault(i, {})[j] = rows.get(i, {}).get(j, 0.0) + value
    return {
        (
            (rows.get(i, {}).get(columns[0], 0.0), rows.get(i, {}).get(columns[1], 0.0)),
            model.row_lower[i],
            model.row_upper[i],
        )
        for i in range(model.num_rows)
    }


@pytest.mark.parametrize("integer", [False, True], ids=["lp", "milp"])
@pytest.mark.parametrize("library", sorted(PROGRAMS))
def test_hooks_capture_status_objective_and_matrix(pool: SandboxPool, library: str, integer: bool) -> None:
    code = f"INTEGER = {integer}\n" + PROGRAMS[library]
    execution = pool.run(Job(code=code, gurobi="real"))

    assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
    assert [solve.library for solve in execution.solves] == [library]
    solve = execution.solves[0]
    expected = MILP_OPTIMUM if integer else LP_OPTIMUM
    sign = -1.0 if library in MINIMISING else 1.0
    assert solve.status is SolveStatus.OPTIMAL
    assert solve.objective == pytest.approx(sign * expected, abs=1e-6)
    assert solve.sense == ("min" if library in MINIMISING else "max")
    assert solve.model is not None, solve.verification
    assert solve.verification == "match"
    assert solve.verified_objective == pytest.approx(sign * expected, abs=1e-6)
    model = solve.model
    if library == "cvxpy":
        # CVXPY's canonical form adds the bound rows x >= 0, y >= 0; its objective is the program's.
        assert model.num_vars == 2 and model.num_rows == 4
        return
    assert model.num_vars == 2 and model.num_rows == 2
    columns = (model.obj.index(sign * 5.0), model.obj.index(sign * 4.0))
    assert _dense_rows(model, columns) == ROWS
    assert all(model.lb[j] == 0.0 and model.ub[j] == math.inf for j in columns)
    integral = {"I", "B"} if integer else {"C"}
    assert {model.vtype[j] for j in columns} <= integral


def test_gurobipy_matrix_keeps_constant_quadratic_and_counts(pool: SandboxPool) -> None:
    code = """
import gurobipy as gp
from gurobipy import GRB
m = gp.Model()
x = m.addVar(lb=-1, ub=3, name="x")
y = m.addVar(vtype=GRB.BINARY, name="y")
m.addConstr(x + y == 2, name="tie")
m.addConstr(x - y >= -5, name="loose")
m.addQConstr(x * x <= 4, name="ball")
m.setObjective(x * x + 2 * y + 7, GRB.MINIMIZE)
m.optimize()
"""
    execution = pool.run(Job(code=code, gurobi="real"))

    assert execution.status is ExecStatus.OK, execution.detail
    solve = execution.solves[0]
    model = solve.model
    assert model is not None
    # min x^2 + 2y + 7 with x + y = 2: y = 0 gives x = 2 (x^2 = 4, total 11), y = 1 gives x = 1 (total 10).
    assert solve.objective == pytest.approx(10.0, abs=1e-5)
    assert model.objective_constant == 7.0
    assert model.q_obj == ((0, 0, 1.0),)
    assert model.n_quadratic_constraints == 1
    assert model.vtype == ("C", "B")
    assert (model.lb, model.ub) == ((-1.0, 0.0), (3.0, 1.0))
    assert (model.row_lower, model.row_upper) == ((2.0, -5.0), (2.0, math.inf))
    (ball,) = model.q_constraints
    assert (ball.lower, ball.upper, ball.linear, ball.quadratic) == (-math.inf, 4.0, (), ((0, 0, 1.0),))
    # The harness's own solver takes the quadratic parts now (gurobipy here, SCIP without it).
    assert solve.verification == "match"
    assert solve.verified_objective == pytest.approx(10.0, abs=1e-5)


def test_cp_sat_linear_part_and_general_constraints(pool: SandboxPool) -> None:
    code = """
from ortools.sat.python import cp_model
model = cp_model.CpModel()
x = model.new_int_var(0, 10, "x")
y = model.new_int_var(0, 10, "y")
model.add(6 * x + 4 * y <= 24)
model.add(x + 2 * y <= 6)
model.maximize(5 * x + 4 * y)
solver = cp_model.CpSolver()
status = solver.solve(model)
model.add_all_different([x, y])
second = solver.solve(model)
"""
    execution = pool.run(Job(code=code))

    assert execution.status is ExecStatus.OK, execution.detail
    first, second = execution.solves
    assert first.library == "ortools.sat" and first.status is SolveStatus.OPTIMAL
    assert first.objective == MILP_OPTIMUM
    assert first.model is not None and first.model.sense == "max" and first.model.obj == (5.0, 4.0)
    assert first.verification == "match"
    # (4, 0) stays optimal under all_different; the constraint itself is not linear.
    assert second.objective == MILP_OPTIMUM
    assert second.model is not None and second.model.n_general_constraints == 1
    assert second.verification is not None and second.verification.startswith("skipped")


def test_infeasible_and_unbounded_claims_are_verified(pool: SandboxPool) -> None:
    code = """
import highspy
h = highspy.Highs()
h.silent()
x = h.addVariable(lb=0)
h.addConstr(x <= -1)
h.minimize(x)
g = highspy.Highs()
g.silent()
y = g.addVariable(lb=0)
g.maximize(y)
"""
    execution = pool.run(Job(code=code))

    infeasible, unbounded = execution.solves
    assert infeasible.status is SolveStatus.INFEASIBLE and infeasible.verification == "match"
    assert unbounded.status in (SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)
    assert unbounded.verification == "match"


def test_pulp_highs_interface_is_recorded_once_as_pulp(pool: SandboxPool) -> None:
    code = "INTEGER = True\n" + PROGRAMS["pulp"].replace("pulp.PULP_CBC_CMD(msg=0)", "pulp.HiGHS(msg=False)")
    execution = pool.run(Job(code=code))

    assert [solve.library for solve in execution.solves] == ["pulp"]
    assert execution.solves[0].objective == MILP_OPTIMUM
