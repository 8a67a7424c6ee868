"""gurobipy_highs: the gurobipy 13 API on HiGHS, for running Gurobi programs without a licence.

A package of its own (its own version, :data:`GUROBIPY_HIGHS`; its own docs,
``docs/gurobipy-highs.md``), shipped in the trex-eval wheel beside ``trex_eval``. It imports
nothing from the harness, and the harness never imports it: inside the sandbox, when the gurobi
policy is ``highs``, the runtime loads this folder *as* ``gurobipy`` (found by path). It imports
only the standard library at import time; ``numpy`` and ``highspy`` load on the first
``optimize()``.

Supported: ``Model`` (``addVar(s)`` with multi-dimensional keys and bound/objective arguments
as gurobipy reads them, ``Column``, ``addConstr(s)`` including generator, range, indicator and
``var == max_(...)`` forms, ``addLConstr``, ``addQConstr``, ``addRange``, ``addSOS``,
``addGenConstr{Max,Min,Abs,And,Or,Norm,Indicator,PWL}``, ``setObjective``, ``setObjectiveN``,
``update``, ``optimize`` (with a lazy-constraint callback), ``write`` to ``.lp`` (Gurobi's exact
dialect), ``.mps``, ``.sol``, ``.mst``, ``.prm``, ``read`` of ``.lp``/``.mps`` files (parsed by
HiGHS), ``getAttr``/``setAttr``, ``Params``,
``remove``, ``copy``, ``relax``), the matrix API (``addMVar``, ``MVar``, ``MLinExpr``,
``MQuadExpr``, ``MConstr``, ``@``), ``Var``/``LinExpr``/``QuadExpr`` arithmetic, ``quicksum``,
``tupledict``, ``tuplelist``, ``multidict``, ``Env``, and ``GRB`` with the real constant values.

Solved by HiGHS: LP, MILP and convex continuous QP; indicator and ``max_``/``min_``/``abs_``/
``and_``/``or_`` constraints become exact rows or big-M rows over finite bounds; multiple
objectives are solved level by level, lazy constraints by a cut loop. Models that only real
Gurobi can solve (quadratic constraints, non-convex or mixed-integer quadratic objectives, SOS,
``norm``/PWL constraints, general constraints over unbounded variables) make ``optimize()``
raise :class:`NeedsGurobiError`; real gurobipy APIs that are not emulated raise
:class:`CompatNotImplementedError` naming the API. See ``docs/gurobipy-highs.md`` for the full
contract.
"""

from __future__ import annotations

from ._column import Column
from ._env import Env, disposeDefaultEnv, getParamInfo, resetParams, setParam
from ._errors import (
    NEEDS_GUROBI_ERRNO,
    NEEDS_GUROBI_EVENTS,
    CompatNotImplementedError,
    GurobiError,
    NeedsGurobiError,
)
from ._expr import GenExpr, LinExpr, QuadExpr, TempConstr, Var, quicksum
from ._facts import API_VERSION, MODULE_NAMES
from ._genexpr import abs_, and_, max_, min_, norm, or_
from ._grb import GRB
from ._matrix import MConstr, MLinExpr, MQuadExpr, MVar
from ._model import Model
from ._objects import SOS, Constr, GenConstr, QConstr
from ._tuples import multidict, tupledict, tuplelist
from ._version import VERSION as GUROBIPY_HIGHS

# GUROBIPY_HIGHS marks this package as the layer (real gurobipy has no such name); its value is the
# layer's own version. The sandbox records ``"gurobipy_highs <version>"`` as the gurobipy a
# program saw.

#: The gurobipy API level this layer reproduces.
__version__ = ".".join(str(part) for part in API_VERSION)


class gurobi:
    """gurobipy's ``gurobi`` helper namespace."""

    @staticmethod
    def version() -> tuple[int, int, int]:
        """The emulated gurobipy API version, ``(13, 0, 3)``."""
        return API_VERSION

    @staticmethod
    def platform() -> str:
        return "linux64"


def read(filename: str, env: Env | None = None) -> Model:
    """The model in an LP or MPS file (optionally ``.gz``/``.bz2``), parsed by HiGHS; see
    :mod:`._read` for what is read and what is refused."""
    from ._read import read_model

    return read_model(filename, env)


def __getattr__(name: str) -> object:
    if name in MODULE_NAMES:
        raise CompatNotImplementedError(f"gurobipy.{name}")
    raise AttributeError(f"module 'gurobipy' has no attribute '{name}'")


__all__ = [
    "GRB",
    "GUROBIPY_HIGHS",
    "NEEDS_GUROBI_ERRNO",
    "NEEDS_GUROBI_EVENTS",
    "SOS",
    "Column",
    "CompatNotImplementedError",
    "Constr",
    "Env",
    "GenConstr",
    "GenExpr",
    "GurobiError",
    "LinExpr",
    "MConstr",
    "MLinExpr",
    "MQuadExpr",
    "MVar",
    "Model",
    "NeedsGurobiError",
    "QConstr",
    "QuadExpr",
    "TempConstr",
    "Var",
    "abs_",
    "and_",
    "disposeDefaultEnv",
    "getParamInfo",
    "gurobi",
    "max_",
    "min_",
    "multidict",
    "norm",
    "or_",
    "quicksum",
    "read",
    "resetParams",
    "setParam",
    "tupledict",
    "tuplelist",
]
