"""The gurobipy_highs layer on its own: the needs_gurobi contract, named NotImplementedErrors, the
model API the sandbox hooks read, number formatting, and import hygiene.

Expected values are hand-computed (small models solved on paper) or are outputs of real
gurobipy 13.0.3 recorded in the docstrings of the formatting module.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys

import pytest
from compat_runner import AS_GUROBIPY, HIGHS_PACKAGE

import gurobipy_highs as gp
from gurobipy_highs import GRB
from gurobipy_highs._numfmt import gurobi_mps_number, gurobi_number

# --------------------------------------------------------------------------- needs_gurobi contract


def _quiet_model(name: str = "") -> gp.Model:
    model = gp.Model(name)
    model.Params.OutputFlag = 0
    return model


def _assert_needs_gurobi(model: gp.Model, reason: str) -> None:
    before = len(gp.NEEDS_GUROBI_EVENTS)
    with pytest.raises(gp.NeedsGurobiError) as caught:
        model.optimize()
    error = caught.value
    assert isinstance(error, gp.GurobiError)
    assert error.errno == gp.NEEDS_GUROBI_ERRNO == 10024
    assert error.needs_gurobi is True
    assert reason in str(error)
    assert gp.NEEDS_GUROBI_EVENTS[before:] == [error.message]
    assert model.Status == GRB.LOADED
    assert not hasattr(model, "ObjVal")


def test_quadratic_constraints_need_gurobi() -> None:
    model = _quiet_model()
    x, y = model.addVar(name="x"), model.addVar(name="y")
    model.addConstr(x * y == 1)
    model.setObjective(x + y)
    _assert_needs_gurobi(model, "quadratic constraint")


def test_nonconvex_objective_needs_gurobi_but_its_concave_mirror_is_solved() -> None:
    model = _quiet_model()
    x = model.addVar(lb=-1, ub=2, name="x")
    model.setObjective(x * x, GRB.MAXIMIZE)
    _assert_needs_gurobi(model, "non-convex quadratic objective")
    # max -x^2 + 2x on [-1, 2]: optimum at x = 1, value 1
    model.setObjective(-(x * x) + 2 * x, GRB.MAXIMIZE)
    model.optimize()
    assert model.Status == GRB.OPTIMAL
    assert model.ObjVal == pytest.approx(1.0, abs=1e-6)
    solution = x.X
    assert solution == pytest.approx(1.0, abs=1e-4)


def test_indefinite_products_and_mixed_integer_qp_need_gurobi() -> None:
    model = _quiet_model()
    x, y = model.addVar(ub=1, name="x"), model.addVar(ub=1, name="y")
    model.setObjective(x * y)
    _assert_needs_gurobi(model, "non-convex")
    model.setObjective(x * x + y * y)
    y.VType = GRB.INTEGER
    _assert_needs_gurobi(model, "MIQP")


def test_sos_and_general_constraints_need_gurobi() -> None:
    model = _quiet_model()
    x, y = (model.addVar(ub=4, name=n) for n in "xy")
    model.addSOS(GRB.SOS_TYPE1, [x, y])
    _assert_needs_gurobi(model, "SOS")
    other = _quiet_model()
    a, b = other.addVar(name="a"), other.addVar(lb=-3, name="b")
    other.addConstr(a == gp.abs_(b))
    _assert_needs_gurobi(other, "general constraint")


def test_semicontinuous_bound_above_highs_limit_needs_gurobi() -> None:
    """HiGHS caps semi-continuous upper bounds at 1e5; above it, it solved this feasible model
    (x = 150000 is the optimum) as INFEASIBLE — or status NUMERIC on other models."""
    model = _quiet_model()
    x = model.addVar(vtype=GRB.SEMICONT, lb=10, ub=2e5, name="x")
    y = model.addVar(ub=50, name="y")
    model.addConstr(x + y >= 150000)
    model.setObjective(x + 2 * y)
    _assert_needs_gurobi(model, "semi-continuous variable x with upper bound 200000")
    x.UB = 1e5  # at the limit: solved (x must then be 0 or in [10, 1e5])
    model.getConstrs()[0].RHS = 60000
    model.optimize()
    assert (model.Status, model.ObjVal, x.X) == (GRB.OPTIMAL, 60000.0, 60000.0)


def test_multiple_scenarios_need_gurobi() -> None:
    model = _quiet_model()
    x = model.addVar(ub=3, name="x")
    model.update()
    assert model.NumScenarios == 0
    model.NumScenarios = 0  # no scenarios: accepted
    for action, reason in (
        (lambda: setattr(model, "NumScenarios", 2), "NumScenarios = 2"),
        (lambda: setattr(x, "ScenNUB", 1.0), "attribute Var.ScenNUB"),
        (lambda: model.ScenNObjVal, "attribute Model.ScenNObjVal"),
        (lambda: model.setAttr("ScenNName", "base"), "attribute Model.ScenNName"),
    ):
        with pytest.raises(gp.NeedsGurobiError, match="multi-scenario model") as caught:
            action()
        assert reason in str(caught.value)


def test_general_constraint_helpers_take_a_tupledicts_values() -> None:
    """gurobipy reads a tupledict's values (with a DeprecationWarning) where the layer once read
    its keys and crashed on ``'str' object has no attribute '_index'``."""
    model = _quiet_model()
    x = model.addVars(["a", "b"], lb=-5, ub=[1, 2], name="x")
    low, high = model.addVar(lb=-9, ub=9, name="low"), model.addVar(lb=-9, ub=9, name="high")
    with pytest.warns(DeprecationWarning, match="Passing a tupledict to addGenConstrMin is deprecated"):
        model.addGenConstrMin(low, x)
    with pytest.warns(DeprecationWarning, match="addGenConstrMax"):
        model.addGenConstrMax(high, x, constant=1.5)
    model.addConstr(x["a"] + x["b"] == 0)
    model.setObjective(low + high, GRB.MAXIMIZE)
    model.optimize()
    # b = -a: low = -|a|, high = max(|a|, 1.5), so low + high = 1.5 - |a| up to |a| = 1.5: a = 0
    assert model.Status == GRB.OPTIMAL and model.ObjVal == pytest.approx(1.5)
    with pytest.raises(gp.GurobiError, match="Invalid data in vars array"):
        model.addGenConstrOr(model.addVar(vtype="B"), {"not": "a variable"})  # a dict's keys


def test_a_caught_needs_gurobi_error_is_still_recorded() -> None:
    model = _quiet_model()
    x = model.addVar(name="x")
    model.addQConstr(x * x <= 4)
    before = len(gp.NEEDS_GUROBI_EVENTS)
    with contextlib.suppress(gp.GurobiError):
        model.optimize()
    assert len(gp.NEEDS_GUROBI_EVENTS) == before + 1


# --------------------------------------------------------------------------- unsupported API


@pytest.mark.parametrize(
    ("action", "api"),
    [
        (lambda m, x: m.tune(), "Model.tune"),
        (lambda m, x: x / x, "nonlinear"),
        (lambda m, x: x**3, "nonlinear"),
        (lambda m, x: __import__("numpy").array([1.0, 2.0]) * x, "matrix API"),
        (lambda m, x: m.fixed(), "Model.fixed"),
        (lambda m, x: m.addGenConstrExp(x, x), "Model.addGenConstrExp"),
        (lambda m, x: gp.read("model.rew"), "gurobipy.read of '.rew' files"),
        (lambda m, x: m.feasRelaxS(0, False, False, True), "Model.feasRelaxS"),
        (lambda m, x: x.VBasis, "Var.VBasis"),
        (lambda m, x: m.write("model.json"), ".json"),
        (lambda m, x: gp.Batch, "gurobipy.Batch"),
    ],
)
def test_unsupported_gurobipy_api_raises_a_named_not_implemented_error(action: object, api: str) -> None:
    model = _quiet_model()
    x = model.addVar(name="x")
    model.update()
    with pytest.raises(gp.CompatNotImplementedError) as caught:
        action(model, x)  # type: ignore[operator]
    assert isinstance(caught.value, NotImplementedError)
    assert api in str(caught.value)


def test_cutoff_turns_a_worse_optimum_into_status_cutoff() -> None:
    """max x, x <= 3: a cutoff of 4 cannot be reached (status CUTOFF with SolCount 0 — an LP
    keeps its solution, a MIP reports an infinite ObjVal, as gurobipy 13 does); a cutoff of 3 is
    met by the optimum itself."""
    model = _quiet_model()
    x = model.addVar(ub=3, name="x")
    model.setObjective(x, GRB.MAXIMIZE)
    model.Params.Cutoff = 4.0
    model.optimize()
    assert (model.Status, model.SolCount, model.ObjVal) == (GRB.CUTOFF, 0, 3.0)
    x.VType = GRB.INTEGER
    model.optimize()
    assert (model.Status, model.SolCount, model.ObjVal) == (GRB.CUTOFF, 0, -math.inf)
    model.Params.Cutoff = 3.0
    model.optimize()
    assert model.Status == GRB.OPTIMAL and model.ObjVal == 3.0


def test_names_real_gurobipy_lacks_raise_attribute_error_like_it() -> None:
    model = _quiet_model()
    x = model.addVar(name="x")
    model.update()
    with pytest.raises(AttributeError, match=r"'gurobipy\.Model' object has no attribute 'addConstraint'"):
        _ = model.addConstraint
    with pytest.raises(AttributeError):
        _ = x.ObjVal
    with pytest.raises(AttributeError, match="module 'gurobipy' has no attribute 'solve'"):
        _ = gp.solve


# --------------------------------------------------------------------------- what the sandbox hooks read


def test_model_matrix_api_used_by_the_sandbox_hooks() -> None:
    """A 2x2 LP solved on paper: max 3x + 2y + 1 s.t. x + y <= 4, x + 3y <= 6, x <= 3."""
    model = _quiet_model("hooks")
    x = model.addVar(name="x", ub=3)
    y = model.addVar(name="y", vtype=GRB.INTEGER)
    model.addConstr(x + y <= 4, name="c0")
    model.addConstr(x + 3 * y <= 6, name="c1")
    model.setObjective(3 * x + 2 * y + 1, GRB.MAXIMIZE)
    model.optimize()
    assert [v.VarName for v in model.getVars()] == ["x", "y"]
    assert [(v.LB, v.UB, v.Obj, v.VType) for v in model.getVars()] == [
        (0.0, 3.0, 3.0, "C"),
        (0.0, math.inf, 2.0, "I"),
    ]
    rows = []
    for constr in model.getConstrs():
        row = model.getRow(constr)
        rows.append(
            (
                constr.ConstrName,
                constr.Sense,
                constr.RHS,
                [(row.getVar(k).VarName, row.getCoeff(k)) for k in range(row.size())],
            )
        )
    assert rows == [("c0", "<", 4.0, [("x", 1.0), ("y", 1.0)]), ("c1", "<", 6.0, [("x", 1.0), ("y", 3.0)])]
    assert (model.ModelSense, model.ObjCon, model.NumVars, model.NumConstrs) == (-1, 1.0, 2, 2)
    assert (model.NumQConstrs, model.NumGenConstrs, model.NumSOS) == (0, 0, 0)
    # x = 3, y = 1: 9 + 2 + 1 = 12
    assert model.Status == GRB.OPTIMAL == 2
    assert model.ObjVal == pytest.approx(12.0)
    objective = model.getObjective()
    assert isinstance(objective, gp.LinExpr)
    assert objective.getConstant() == 1.0
    assert [(objective.getVar(k).VarName, objective.getCoeff(k)) for k in range(objective.size())] == [
        ("x", 3.0),
        ("y", 2.0),
    ]


def test_quadratic_objective_is_exposed_as_quadexpr() -> None:
    model = _quiet_model()
    x, y = model.addVar(name="x"), model.addVar(name="y")
    model.setObjective(x * x + 2 * x * y + 3 * y * x + y)
    model.update()
    objective = model.getObjective()
    assert isinstance(objective, gp.QuadExpr)
    terms = [
        (objective.getVar1(k).VarName, objective.getVar2(k).VarName, objective.getCoeff(k))
        for k in range(objective.size())
    ]
    assert terms == [("x", "x", 1.0), ("x", "y", 5.0)]
    linear = objective.getLinExpr()
    assert [(linear.getVar(k).VarName, linear.getCoeff(k)) for k in range(linear.size())] == [("y", 1.0)]


def test_objval_exists_only_with_a_solution() -> None:
    model = _quiet_model()
    x = model.addVar(name="x")
    model.addConstr(x >= 2)
    model.addConstr(x <= 1)
    assert hasattr(model, "optimize") and not hasattr(model, "ObjVal")
    model.optimize()
    assert model.Status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD)
    assert not hasattr(model, "ObjVal")


def test_time_limit_and_status_codes_are_gurobis() -> None:
    codes = {"LOADED": 1, "OPTIMAL": 2, "INFEASIBLE": 3, "INF_OR_UNBD": 4, "UNBOUNDED": 5, "TIME_LIMIT": 9}
    for name, value in codes.items():
        assert getattr(GRB, name) == getattr(GRB.Status, name) == value
    assert (GRB.MINIMIZE, GRB.MAXIMIZE, GRB.INFINITY) == (1, -1, 1e100)
    assert (GRB.CONTINUOUS, GRB.BINARY, GRB.INTEGER, GRB.LESS_EQUAL, GRB.EQUAL) == ("C", "B", "I", "<", "=")
    assert GRB.Attr.ObjVal == "ObjVal" and GRB.Param.TimeLimit == "TimeLimit"


# --------------------------------------------------------------------------- number formatting


@pytest.mark.parametrize(
    ("value", "lp_text"),
    [
        (8.89, "8.89"),
        (9.5191969238, "9.519196923799999"),
        (76.9527917131554, "76.95279171315541"),
        (0.4752970000000001, "0.475297"),
        (1234567.5, "1.2345675e+06"),
        (5689852.1888, "5.6898521887999997e+06"),
        (0.0001, "0.0001"),
        (1.2436318829314398e-05, "1.24363e-05"),
        (0.00038119971504225667, "3.8119971504225667e-04"),
        (0.023861592861522018, "0.023861592861522"),
        (1e15, "1e+15"),
        (-3.0, "-3"),
    ],
)
def test_lp_numbers_are_printed_as_gurobi_prints_them(value: float, lp_text: str) -> None:
    """Pairs observed in files written by gurobipy 13.0.3."""
    assert gurobi_number(value) == lp_text


def test_mps_numbers_are_exact() -> None:
    assert gurobi_mps_number(659.3016) == "659.3016"
    assert gurobi_mps_number(0.1 + 1 / 3) == "4.3333333333333335e-01"
    assert gurobi_mps_number(-4.884383734338047) == "-4.8843837343380470e+00"


# --------------------------------------------------------------------------- import hygiene


def _python(code: str) -> str:
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", AS_GUROBIPY + code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def test_import_gurobipy_resolves_to_the_layer_and_loads_only_the_stdlib() -> None:
    probe = (
        "import sys, gurobipy\n"
        "heavy = sorted({n.split('.')[0] for n in sys.modules} & {'numpy', 'highspy', 'trex_eval'})\n"
        "print(gurobipy.__file__, gurobipy.GUROBIPY_HIGHS, heavy)\n"
    )
    location, _version, heavy = _python(probe).split(" ", 2)
    assert location.startswith(str(HIGHS_PACKAGE))
    assert heavy == "[]"


def test_solving_loads_numpy_and_highspy_but_never_trex_eval() -> None:
    probe = (
        "import sys, gurobipy as gp\n"
        "m = gp.Model(); m.Params.OutputFlag = 0; x = m.addVar(ub=2)\n"
        "m.setObjective(x, -1); m.optimize()\n"
        "loaded = {n.split('.')[0] for n in sys.modules} & {'numpy', 'highspy', 'trex_eval'}\n"
        "print(m.ObjVal, sorted(loaded))\n"
    )
    assert _python(probe) == "2.0 ['highspy', 'numpy']"


def test_quiet_solve_prints_nothing() -> None:
    probe = (
        "import gurobipy as gp\nm = gp.Model(); m.Params.OutputFlag = 0\n"
        "x = m.addVar(ub=2); m.setObjective(x, -1); m.optimize()\n"
    )
    assert _python(probe) == ""
