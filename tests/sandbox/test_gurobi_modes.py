"""Which gurobipy a program gets (real, highs, auto) and how licence failures are reported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gurobipy_highs._version import VERSION as _LAYER_VERSION
from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool

TOO_LARGE = """
import gurobipy as gp
m = gp.Model()
m.addVars(2001)
m.optimize()
print("objective", m.ObjVal)
"""
"""2001 variables: above the 2000-variable limit of gurobipy's pip licence (environment notes)."""


def test_real_gurobipy_is_recorded_with_its_version(pool: SandboxPool) -> None:
    execution = pool.run(Job(code="import gurobipy\n", gurobi="real", expect="any"))

    assert execution.status is ExecStatus.OK
    assert execution.gurobi == "gurobipy 13.0.3"


PYOMO_GUROBI = """
import pyomo.environ as pyo
m = pyo.ConcreteModel()
m.x = pyo.Var(bounds=(0, 4))
m.y = pyo.Var(bounds=(0, 3))
m.c = pyo.Constraint(expr=m.x + m.y <= 5)
m.obj = pyo.Objective(expr=3 * m.x + 2 * m.y, sense=pyo.maximize)
result = pyo.SolverFactory("gurobi_direct").solve(m)
print("objective", pyo.value(m.obj), result.solver.termination_condition)
"""


def test_pyomo_finds_real_gurobipy_through_its_own_import_finder(pool: SandboxPool) -> None:
    """Pyomo installs an import finder that asks every other finder, the sandbox's gurobipy
    switch included, which asked Pyomo's back: ``RecursionError``, and Pyomo's ``gurobi_direct``
    reported no gurobipy in the sandbox while it had one outside."""
    execution = pool.run(Job(code=PYOMO_GUROBI, gurobi="real"))

    assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
    assert "objective 14.0 optimal" in execution.stdout_tail
    assert execution.gurobi == "gurobipy 13.0.3"
    solve = execution.last_solve
    assert solve is not None and solve.objective == pytest.approx(14.0)


def test_no_gurobipy_import_records_none(pool: SandboxPool) -> None:
    assert pool.run(Job(code="import math\n", gurobi="real", expect="any")).gurobi is None


def test_size_limit_under_real_is_a_licence_error(pool: SandboxPool) -> None:
    execution = pool.run(Job(code=TOO_LARGE, gurobi="real"))

    assert execution.status is ExecStatus.LICENCE_ERROR
    assert execution.error_type == "GurobiError"
    assert "too large" in execution.detail


def test_caught_size_limit_is_still_a_licence_error(pool: SandboxPool) -> None:
    code = "import gurobipy as gp\ntry:\n" + "".join(
        f"    {line}\n" for line in TOO_LARGE.strip().splitlines()[1:]
    )
    code += "except gp.GurobiError as error:\n    print('caught', error)\n"
    execution = pool.run(Job(code=code, gurobi="real"))

    assert execution.status is ExecStatus.LICENCE_ERROR


def test_auto_reruns_a_size_limited_program_under_highs(pool: SandboxPool) -> None:
    execution = pool.run(Job(code=TOO_LARGE, gurobi="auto"))

    # The stand-in gurobipy_highs layer solves every model to 42.
    assert execution.status is ExecStatus.OK, execution.detail
    assert execution.gurobi == "gurobipy_highs stand-in"
    assert "rerun under highs" in execution.detail and "too large" in execution.detail
    assert execution.solves[-1].objective == 42.0


def test_copt_size_limit_is_a_licence_error(pool: SandboxPool) -> None:
    code = """
import coptpy as cp
from coptpy import COPT
env = cp.Envr()
m = env.createModel()
x = m.addVars(2001, vtype=COPT.INTEGER, ub=1)
m.addConstr(x.sum() <= 1)
m.solve()
"""
    execution = pool.run(Job(code=code))

    assert execution.status is ExecStatus.LICENCE_ERROR
    assert "LICENSE" in execution.detail


@pytest.fixture(scope="module")
def pool_without_highs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxPool]:
    missing = Path(tmp_path_factory.mktemp("no-highs")) / "absent"
    with SandboxPool(limits=SandboxLimits(wall_s=30), workers=1, highs_package=missing) as started:
        yield started


def test_missing_highs_layer_is_reported_not_crashed(pool_without_highs: SandboxPool) -> None:
    execution = pool_without_highs.run(Job(code="import gurobipy\n", gurobi="highs"))

    assert execution.status is ExecStatus.NEEDS_GUROBI
    assert "gurobipy_highs layer" in execution.detail
    assert not pool_without_highs.highs_available


def test_the_installed_layer_is_located_without_importing_it() -> None:
    """The harness finds gurobipy_highs by path and reads its version as text: never imports it."""
    code = (
        "import sys\n"
        "from trex_eval.sandbox import launch\n"
        "package = launch.highs_package()\n"
        "print(package.name, launch.highs_version(package), 'gurobipy_highs' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["gurobipy_highs", _LAYER_VERSION, "False"]
