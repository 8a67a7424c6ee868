"""Which gurobipy a program gets (real, compat, auto) and how licence failures are reported."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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


def test_auto_reruns_a_size_limited_program_under_compat(pool: SandboxPool) -> None:
    execution = pool.run(Job(code=TOO_LARGE, gurobi="auto"))

    # The stand-in compat layer solves every model to 42.
    assert execution.status is ExecStatus.OK, execution.detail
    assert execution.gurobi == "compat"
    assert "rerun under compat" in execution.detail and "too large" in execution.detail
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
def pool_without_compat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxPool]:
    missing = Path(tmp_path_factory.mktemp("no-compat")) / "absent"
    with SandboxPool(limits=SandboxLimits(wall_s=30), workers=1, compat_root=missing) as started:
        yield started


def test_missing_compat_layer_is_reported_not_crashed(pool_without_compat: SandboxPool) -> None:
    execution = pool_without_compat.run(Job(code="import gurobipy\n", gurobi="compat"))

    assert execution.status is ExecStatus.NEEDS_GUROBI
    assert "compat layer" in execution.detail
    assert not pool_without_compat.compat_available
