"""Convex QPs with a tiny objective scale: HiGHS's QP solver stalled on them ("excessively small
Hessian values") until the time limit, or stopped at a visibly wrong optimum; the layer solves
them with the objective scaled by a power of two (``_highs_solve.objective_scale``).

The reference optimum of each reproducer is computed independently, with scipy's SLSQP on the
same data (objective multiplied by 1e4 so that its tolerances bite); real gurobipy 13 solves the
same models in about 0.01 s.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.optimize import minimize

import gurobipy_highs as gp
from gurobipy_highs import GRB, _highs_solve

pytestmark = pytest.mark.timeout(120)

ASSETS = 20


def _portfolio_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A 3-factor covariance with entries between ~1e-8 and ~3e-4 and returns of 0.1-2 %."""
    rng = np.random.default_rng(seed)
    factors = rng.normal(size=(ASSETS, 3)) * 5e-3
    covariance = factors @ factors.T + np.diag(rng.uniform(1e-6, 1e-5, ASSETS))
    return covariance, rng.uniform(0.001, 0.02, ASSETS)


def _portfolio(covariance: np.ndarray, returns: np.ndarray) -> tuple[gp.Model, gp.tupledict]:
    """Markowitz: minimum variance, fully invested, at least the median return, no shorting."""
    model = gp.Model("portfolio")
    model.Params.OutputFlag = 0
    model.Params.TimeLimit = 30  # before the fix: status TIME_LIMIT after 30 s
    weights = model.addVars(ASSETS, ub=1, name="w")
    model.addConstr(weights.sum() == 1, name="budget")
    model.addConstr(
        gp.quicksum(returns[i] * weights[i] for i in range(ASSETS)) >= float(np.median(returns)), name="ret"
    )
    model.setObjective(
        gp.quicksum(covariance[i, j] * weights[i] * weights[j] for i in range(ASSETS) for j in range(ASSETS))
    )
    return model, weights


def _reference(covariance: np.ndarray, returns: np.ndarray) -> float:
    scale = 1e4
    target = float(np.median(returns))
    result = minimize(
        lambda w: scale * w @ covariance @ w,
        np.full(ASSETS, 1 / ASSETS),
        jac=lambda w: 2 * scale * covariance @ w,
        bounds=[(0.0, 1.0)] * ASSETS,
        constraints=[
            {"type": "eq", "fun": lambda w: w.sum() - 1, "jac": lambda w: np.ones(ASSETS)},
            {"type": "ineq", "fun": lambda w: returns @ w - target, "jac": lambda w: returns},
        ],
        method="SLSQP",
        options={"ftol": 1e-16, "maxiter": 1000},
    )
    assert result.success, result.message
    return float(result.fun) / scale


@pytest.mark.parametrize("seed", [0, 2, 3, 1])
def test_small_scale_portfolio_qp_solves_quickly_and_exactly(seed: int) -> None:
    """Seeds 0, 2 and 3 stalled HiGHS until the time limit; seed 1 ended 'optimal' 2.3e-4 above
    the optimum (HiGHS regularises the Hessian with an absolute 1e-7)."""
    covariance, returns = _portfolio_data(seed)
    model, weights = _portfolio(covariance, returns)
    started = time.perf_counter()
    model.optimize()
    elapsed = time.perf_counter() - started
    assert model.Status == GRB.OPTIMAL
    assert model.ObjVal == pytest.approx(_reference(covariance, returns), rel=1e-7)
    assert sum(w.X for w in weights.values()) == pytest.approx(1.0, abs=1e-9)
    assert model.IterCount < 200  # a stalled solve made ~1e6 iterations
    assert elapsed < 5.0


def test_duals_and_objective_are_scaled_back() -> None:
    """min 1e-4 (x^2 + y^2) + 3e-4 s.t. x + y = 1: x = y = 1/2, objective 0.5e-4 + 3e-4 and the
    budget's dual 1e-4 (by hand: 2e-4 x = pi)."""
    model = gp.Model()
    model.Params.OutputFlag = 0
    x, y = model.addVar(name="x"), model.addVar(name="y")
    budget = model.addConstr(x + y == 1)
    model.setObjective(1e-4 * (x * x + y * y) + 3e-4)
    model.optimize()
    assert model.Status == GRB.OPTIMAL
    assert model.ObjVal == pytest.approx(3.5e-4, rel=1e-9)
    assert budget.Pi == pytest.approx(1e-4, rel=1e-6)
    point = (x.X, y.X)
    assert point == pytest.approx((0.5, 0.5), abs=1e-9)
    model.ModelSense = GRB.MAXIMIZE  # the concave mirror: same point, duals of a maximisation
    model.setObjective(-1e-4 * (x * x + y * y) - 3e-4, GRB.MAXIMIZE)
    model.optimize()
    assert model.ObjVal == pytest.approx(-3.5e-4, rel=1e-9)
    assert budget.Pi == pytest.approx(-1e-4, rel=1e-6)


def test_a_qp_that_reaches_the_layers_iteration_limit_needs_gurobi(monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer bounds HiGHS's QP iterations; reaching that bound is a refusal by name, never a
    TIME_LIMIT after the program's whole budget. (The limit is lowered so a real solve hits it.)"""
    monkeypatch.setattr(_highs_solve, "QP_ITERATIONS_BASE", 2)
    monkeypatch.setattr(_highs_solve, "QP_ITERATIONS_PER_ITEM", 0)
    model, _weights = _portfolio(*_portfolio_data(0))
    with pytest.raises(gp.NeedsGurobiError, match="QP solver made no progress in 2 iterations"):
        model.optimize()
    assert model.Status == GRB.LOADED
