"""Models the licence-free gurobipy layer refuses are `needs_gurobi`, never a wrong answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gurobipy_highs._version import VERSION as LAYER_VERSION
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
def real_highs_pool() -> Iterator[SandboxPool]:
    """One worker with the project's own gurobipy_highs layer (the shared fixtures use a stand-in)."""
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
def test_highs_refusal_is_needs_gurobi(real_highs_pool: SandboxPool, solve: str) -> None:
    pool = real_highs_pool
    code = QUADRATIC_CONSTRAINT.format(solve=solve)
    highs = pool.run(Job(code=code, gurobi="highs"))
    assert highs.status is ExecStatus.NEEDS_GUROBI
    assert "quadratic constraint" in highs.detail
    assert highs.gurobi == f"gurobipy_highs {LAYER_VERSION}"
    real = pool.run(Job(code=code, gurobi="real"))
    assert real.status is ExecStatus.OK
    solve_record = real.last_solve
    assert solve_record is not None and solve_record.status is SolveStatus.OPTIMAL
    assert solve_record.objective == pytest.approx(2**0.5, rel=1e-6)


def test_the_layer_is_imported_as_gurobipy_and_recorded_with_its_version(
    real_highs_pool: SandboxPool,
) -> None:
    """Samples name the layer and its own version; the program sees a module named ``gurobipy``
    whose ``__version__`` is the gurobipy API level it reproduces. The manifest records it too."""
    code = "import gurobipy as gp\nprint(gp.__name__, gp.__version__, gp.GRB.OPTIMAL)\n"
    execution = real_highs_pool.run(Job(code=code, gurobi="highs", expect="any"))
    assert execution.status is ExecStatus.OK, execution.detail
    assert execution.gurobi == f"gurobipy_highs {LAYER_VERSION}"
    assert execution.stdout_tail.split() == ["gurobipy", "13.0.3", "2"]
    versions = real_highs_pool.describe()["versions"]
    assert isinstance(versions, dict) and versions["gurobipy_highs"] == LAYER_VERSION
