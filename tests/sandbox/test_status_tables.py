"""Every status the installed solver libraries can report has a row in its hook's table (issue 16):
an unmapped status reads "solve ended unknown (20)" in a user's summary, so a library upgrade that
adds one must fail here, not there.

Each library's statuses are enumerated from the library itself (its enum or constants), never
from a list written in this file, except where a library exposes no such group (noted below).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from trex_eval.sandbox.runtime import capture as c
from trex_eval.sandbox.runtime.hooks import (
    coptpy,
    cvxpy,
    gurobipy,
    highspy,
    ortools_linear,
    ortools_mathopt,
    ortools_sat,
    pulp,
    pyomo,
    pyscipopt,
)

STATUSES = {
    c.OPTIMAL,
    c.INFEASIBLE,
    c.UNBOUNDED,
    c.INF_OR_UNBD,
    c.TIME_LIMIT,
    c.SUBOPTIMAL,
    c.FEASIBLE,
    c.INTERRUPTED,
    c.NUMERIC,
    c.NOT_SOLVED,
    c.ERROR,
    c.UNKNOWN,
}

# COPT keeps its status codes among its other constants; these groups are not statuses.
_COPT_NOT_STATUS_PREFIXES = (
    "BASIS_",
    "CBCONTEXT_",
    "CLIENT_",
    "CONE_",
    "DENSETYPE_",
    "EVALTYPE_",
    "EXPCONE_",
    "GENCONSTR_",
    "INDICATOR_",
    "SOS_",
    "VERSION_",
)
_COPT_NOT_STATUS = {"BINARY", "CONTINUOUS", "INTEGER", "EQUAL", "GREATER_EQUAL", "LESS_EQUAL", "FREE"}
_COPT_NOT_STATUS |= {"RANGE"}
_COPT_NOT_STATUS |= {"MAXIMIZE", "MINIMIZE", "INFINITY", "UNDEFINED"}


def _copt() -> dict[str, int]:
    from coptpy import COPT

    return {
        name: getattr(COPT, name)
        for name in dir(COPT)
        if name.isupper()
        and isinstance(getattr(COPT, name), int)
        and not name.startswith(_COPT_NOT_STATUS_PREFIXES)
        and name not in _COPT_NOT_STATUS
    }


def _gurobi() -> dict[str, int]:
    from gurobipy import GRB

    return {name: getattr(GRB.Status, name) for name in dir(GRB.Status) if name.isupper()}


def _highs() -> list[str]:
    import highspy as library

    return list(library.HighsModelStatus.__members__)


def _scip() -> list[str]:
    import pyscipopt as library

    # Model.getStatus() returns the lower-case name of each SCIP_STATUS member.
    return [name.lower() for name in dir(library.SCIP_STATUS) if name.isupper()]


def _ortools_linear() -> dict[str, int]:
    from ortools.linear_solver import pywraplp

    names = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNBOUNDED", "ABNORMAL", "MODEL_INVALID", "NOT_SOLVED")
    # pywraplp exposes ResultStatus as class constants with no enum to list; a renamed constant
    # fails the getattr, and a new one would break the contiguous range checked here.
    codes = {name: int(getattr(pywraplp.Solver, name)) for name in names}
    assert sorted(codes.values()) == list(range(len(names)))
    return codes


def _ortools_sat() -> dict[str, int]:
    from ortools.sat import cp_model_pb2

    return dict(cp_model_pb2.CpSolverStatus.items())


def _mathopt() -> list[str]:
    from ortools.math_opt.python import mathopt

    return list(mathopt.TerminationReason.__members__)


def _cvxpy() -> list[str]:
    import cvxpy.settings as settings

    return [*settings.SOLUTION_PRESENT, *settings.INF_OR_UNB, *settings.ERROR]


def _pyomo() -> list[str]:
    from pyomo.opt import TerminationCondition

    return list(TerminationCondition.__members__)


def _pulp() -> dict[str, int]:
    import pulp as library

    return {text: code for code, text in library.LpStatus.items()}


def _coded(table: dict[int, tuple[str, str]]) -> dict[int, str]:
    return {code: status for code, (_, status) in table.items()}


CASES: list[tuple[str, Callable[[], Iterable[Any]], dict[Any, str]]] = [
    ("coptpy", _copt, _coded(coptpy._STATUS)),
    ("gurobipy", _gurobi, _coded(gurobipy._STATUS)),
    ("highspy", _highs, highspy._STATUS),
    ("pyscipopt", _scip, pyscipopt._STATUS),
    ("ortools.linear_solver", _ortools_linear, _coded(ortools_linear._STATUS)),
    ("ortools.sat", _ortools_sat, _coded(ortools_sat._STATUS)),
    ("ortools.math_opt", _mathopt, ortools_mathopt._REASON),
    ("cvxpy", _cvxpy, cvxpy._STATUS),
    ("pyomo", _pyomo, pyomo._STATUS),
    ("pulp", _pulp, pulp._STATUS),
]


@pytest.mark.parametrize(("library", "enumerate_statuses", "table"), CASES, ids=[case[0] for case in CASES])
def test_every_status_of_the_installed_library_is_mapped(
    library: str, enumerate_statuses: Callable[[], Iterable[Any]], table: dict[Any, str]
) -> None:
    reported = enumerate_statuses()
    # Name -> code libraries are checked on the code, which is what the hook reads at run time.
    keys = list(reported.values()) if isinstance(reported, dict) else list(reported)
    assert keys, f"{library}: no status enumerated (the library changed how it exposes them?)"
    unmapped = [key for key in keys if key not in table]
    assert not unmapped, f"{library}: statuses with no row in the hook's table: {unmapped}"
    assert set(table.values()) <= STATUSES


def test_copt_8_local_statuses_read_as_what_they_mean() -> None:
    """COPT 8's non-convex solver ends LOCAL_OPTIMAL (20) or LOCAL_INFEASIBLE (21): a local optimum
    is a feasible point (its objective is reported, never called optimal), a local infeasibility
    proves nothing."""
    from coptpy import COPT

    assert coptpy._STATUS[COPT.LOCAL_OPTIMAL] == ("LOCAL_OPTIMAL", c.FEASIBLE)
    assert coptpy._STATUS[COPT.LOCAL_INFEASIBLE] == ("LOCAL_INFEASIBLE", c.UNKNOWN)
    assert c.FEASIBLE in coptpy._HAS_SOLUTION
