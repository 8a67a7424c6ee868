"""Models the licence-free gurobipy layer refuses are `needs_gurobi`, never a wrong answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from trex_eval.records import ExecStatus, SolveStatus
from trex_eval.sandbox import Job, SandboxPool

QUADRATIC_CONSTRAINT = """
import gurobipy as gp
m = gp.Model()
x = m.addVar(lb=-1, ub=1)
y = m.addVar(lb=-1, ub=1)
m.addQConstr(x * x + y * y <= 1)
m.setObjective(x + y, gp.GRB.MAXIMIZE)
{solve}
"""


@pytest.fixture(scope="module")
def real_compat_pool() -> Iterator[SandboxPool]:
    """One worker with the project's own compat layer (the shared fixtures use a stand-in)."""
    with SandboxPool(workers=1) as started:
        yield started


@pytest.mark.parametrize(
    "solve",
    [
        "m.optimize()\nprint(m.ObjVal)",
        "try:\n    m.optimize()\nexcept gp.GurobiError as error:\n    print(error)",
    ],
    ids=["uncaught", "caught-by-the-program"],
)
def test_compat_refusal_is_needs_gurobi(real_compat_pool: SandboxPool, solve: str) -> None:
    pool = real_compat_pool
    code = QUADRATIC_CONSTRAINT.format(solve=solve)
    compat = pool.run(Job(code=code, gurobi="compat"))
    assert compat.status is ExecStatus.NEEDS_GUROBI
    assert "quadratic constraint" in compat.detail and compat.gurobi == "compat"
    real = pool.run(Job(code=code, gurobi="real"))
    assert real.status is ExecStatus.OK
    solve_record = real.last_solve
    assert solve_record is not None and solve_record.status is SolveStatus.OPTIMAL
    assert solve_record.objective == pytest.approx(2**0.5, rel=1e-6)
