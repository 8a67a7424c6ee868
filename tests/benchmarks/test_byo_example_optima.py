"""The example benchmark's answers are right: each problem of examples/or-word-problems is written
here a second time, as a matrix model, and solved with two independent solvers (HiGHS through
scipy.optimize.milp, CBC through PuLP); the combinatorial ones are also enumerated exhaustively.
Both must agree with the hand-derived optimum in the README and with the label in problems.jsonl.
No trex-eval code is involved."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pulp
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "or-word-problems"

# Optimum by hand (derivations in examples/or-word-problems/README.md).
BY_HAND: dict[str, float | str] = {
    "product-mix": 4100.0,
    "diet": 4.4,
    "transportation": 630.0,
    "assignment": 34.0,
    "knapsack": 60.0,
    "night-shift": "infeasible",
    "flour-mill": "unbounded",
    "facility-location": 490.0,
    "overtime": 0.0,
    "production-plan": 1655.0,
}


@dataclass(frozen=True)
class MatrixModel:
    """``sense c·x`` subject to ``lower <= A x <= upper``, ``x`` within ``bounds`` (``None``: no
    bound), ``integer[j]`` for integer columns."""

    sense: str
    c: list[float]
    rows: list[tuple[list[float], float, float]]
    bounds: list[tuple[float | None, float | None]] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)

    def column_bounds(self) -> list[tuple[float | None, float | None]]:
        return self.bounds or [(0.0, None)] * len(self.c)

    def is_integer(self) -> list[bool]:
        return self.integer or [False] * len(self.c)


INF = math.inf


def _facility() -> MatrixModel:
    data = json.loads((EXAMPLE / "instances" / "facility.json").read_text())
    sites, regions = data["sites"], data["regions"]
    # Columns: open[s] for each site, then assign[s, r] site-major.
    n_open, n = len(sites), len(sites) + len(sites) * len(regions)
    c = [float(data["fixed_cost"][s]) for s in sites] + [
        float(data["serving_cost"][s][k]) for s in sites for k in range(len(regions))
    ]

    def assign(i: int, k: int) -> int:
        return n_open + i * len(regions) + k

    rows = []
    for k in range(len(regions)):
        row = [0.0] * n
        for i in range(len(sites)):
            row[assign(i, k)] = 1.0
        rows.append((row, 1.0, 1.0))
    for i in range(len(sites)):
        for k in range(len(regions)):
            row = [0.0] * n
            row[assign(i, k)], row[i] = 1.0, -1.0
            rows.append((row, -INF, 0.0))
    return MatrixModel("min", c, rows, [(0.0, 1.0)] * n, [True] * n)


def _models() -> dict[str, MatrixModel]:
    hours = [[12, 9, 14, 10], [8, 11, 10, 13], [15, 10, 9, 12], [11, 14, 12, 8]]
    assignment_rows = []
    for t in range(4):
        assignment_rows.append(([1.0 if i // 4 == t else 0.0 for i in range(16)], 1.0, 1.0))
    for j in range(4):
        assignment_rows.append(([1.0 if i % 4 == j else 0.0 for i in range(16)], 1.0, 1.0))
    weights, values = [12, 7, 11, 8, 9, 6], [24, 13, 23, 15, 16, 11]
    # Transportation columns: W1->S1, W1->S2, W1->S3, W2->S1, W2->S2, W2->S3.
    # Production plan columns: make1, make2, make3, stock1, stock2 (stock3 = 0 by the data).
    return {
        "product-mix": MatrixModel("max", [70, 50], [([4, 3], -INF, 240), ([2, 1], -INF, 100)]),
        "diet": MatrixModel(
            "min",
            [0.40, 0.60, 0.50],
            [([4, 8, 7], 52, INF), ([5, 0, 6], 30, INF), ([150, 120, 110], 1340, INF)],
        ),
        "transportation": MatrixModel(
            "min",
            [4, 6, 9, 5, 3, 7],
            [
                ([1, 1, 1, 0, 0, 0], -INF, 50),
                ([0, 0, 0, 1, 1, 1], -INF, 70),
                ([1, 0, 0, 1, 0, 0], 30, 30),
                ([0, 1, 0, 0, 1, 0], 40, 40),
                ([0, 0, 1, 0, 0, 1], 50, 50),
            ],
        ),
        "assignment": MatrixModel(
            "min", [float(h) for row in hours for h in row], assignment_rows, [(0, 1)] * 16, [True] * 16
        ),
        "knapsack": MatrixModel("max", values, [(weights, -INF, 30)], [(0, 1)] * 6, [True] * 6),
        "night-shift": MatrixModel(
            "min",
            [150, 90],
            [([1, 1], 10, INF), ([1, 0], 4, INF), ([150, 90], -INF, 1100)],
            integer=[True, True],
        ),
        "flour-mill": MatrixModel("max", [30, 20], [([0, 1], 5, INF), ([1, -1], -INF, 10)]),
        "facility-location": _facility(),
        # Columns: regular P1, regular P2, overtime P1, overtime P2.
        "overtime": MatrixModel(
            "min", [0, 0, 12, 15], [([1, 1, 1, 1], 100, 100)], [(0, 60), (0, 50), (0, 20), (0, 20)]
        ),
        "production-plan": MatrixModel(
            "min",
            [10, 12, 11, 1, 1],
            [
                ([1, 0, 0, -1, 0], 40, 40),  # month 1: make1 - stock1 = demand1
                ([0, 1, 0, 1, -1], 60, 60),  # month 2: stock1 + make2 - stock2 = demand2
                ([0, 0, 1, 0, 1], 50, 50),  # month 3: stock2 + make3 = demand3 (no final stock)
            ],
            [(0, 55), (0, 55), (0, 55), (0, None), (0, None)],
        ),
    }


def _solve_highs(model: MatrixModel) -> float | str:
    sign = -1.0 if model.sense == "max" else 1.0
    bounds = model.column_bounds()
    result = milp(
        c=sign * np.array(model.c, dtype=float),
        constraints=LinearConstraint(
            np.array([row for row, _, _ in model.rows], dtype=float),
            [lo for _, lo, _ in model.rows],
            [hi for _, _, hi in model.rows],
        ),
        integrality=np.array(model.is_integer(), dtype=int),
        bounds=Bounds(
            [-INF if lo is None else lo for lo, _ in bounds], [INF if hi is None else hi for _, hi in bounds]
        ),
    )
    return {0: sign * float(result.fun) if result.fun is not None else math.nan, 2: "infeasible"}.get(
        result.status, "unbounded" if result.status == 3 else f"status {result.status}"
    )


def _solve_cbc(model: MatrixModel) -> float | str:
    problem = pulp.LpProblem("check", pulp.LpMaximize if model.sense == "max" else pulp.LpMinimize)
    x = [
        problem.add_variable(f"x{j}", lo, hi, cat="Integer" if integer else "Continuous")
        for j, ((lo, hi), integer) in enumerate(zip(model.column_bounds(), model.is_integer(), strict=True))
    ]
    problem += pulp.lpSum(c * v for c, v in zip(model.c, x, strict=True))
    for i, (row, lo, hi) in enumerate(model.rows):
        expr = pulp.lpSum(a * v for a, v in zip(row, x, strict=True) if a)
        if lo == hi:
            problem += expr == lo, f"r{i}"
        else:
            if lo > -INF:
                problem += expr >= lo, f"r{i}_lo"
            if hi < INF:
                problem += expr <= hi, f"r{i}_hi"
    with warnings.catch_warnings():
        # PuLP 3.3 deprecates its bundled CBC in favour of a separate install; it is still CBC.
        warnings.simplefilter("ignore", DeprecationWarning)
        status = pulp.LpStatus[problem.solve(pulp.PULP_CBC_CMD(msg=False))]
    if status == "Optimal":
        return float(pulp.value(problem.objective) or 0.0)
    return status.lower()


def _labels() -> dict[str, object]:
    rows = [json.loads(line) for line in (EXAMPLE / "problems.jsonl").read_text().splitlines()]
    return {row["id"]: row["answer"] for row in rows}


def test_every_problem_has_a_hand_optimum_and_a_model() -> None:
    assert set(_labels()) == set(BY_HAND) == set(_models())


@pytest.mark.parametrize("problem_id", sorted(BY_HAND))
def test_two_solvers_agree_with_the_hand_optimum_and_the_label(problem_id: str) -> None:
    model = _models()[problem_id]
    expected = BY_HAND[problem_id]
    for solved in (_solve_highs(model), _solve_cbc(model)):
        if isinstance(expected, str):
            assert solved == expected
        else:
            assert solved == pytest.approx(expected, abs=1e-6)
    assert _labels()[problem_id] == expected


def test_combinatorial_optima_by_enumeration() -> None:
    hours = [[12, 9, 14, 10], [8, 11, 10, 13], [15, 10, 9, 12], [11, 14, 12, 8]]
    assert min(sum(hours[t][p[t]] for t in range(4)) for p in itertools.permutations(range(4))) == 34

    weights, values = [12, 7, 11, 8, 9, 6], [24, 13, 23, 15, 16, 11]
    subsets = itertools.chain.from_iterable(itertools.combinations(range(6), k) for k in range(7))
    assert max(sum(values[i] for i in s) for s in subsets if sum(weights[i] for i in s) <= 30) == 60

    data = json.loads((EXAMPLE / "instances" / "facility.json").read_text())
    fixed, serve = data["fixed_cost"], data["serving_cost"]
    regions = range(len(data["regions"]))
    costs = [
        sum(fixed[s] for s in opened) + sum(min(serve[s][k] for s in opened) for k in regions)
        for n in range(1, len(data["sites"]) + 1)
        for opened in itertools.combinations(data["sites"], n)
    ]
    assert min(costs) == 490

    # Night shift: with r >= 4 nurses and r + a >= 10 staff, 150r + 90a = 90(r + a) + 60r >= 1140.
    staffing = [150 * r + 90 * a for r in range(4, 11) for a in range(0, 11) if r + a >= 10]
    assert min(staffing) == 1140 > 1100
