"""``GRB``: the constants namespace, with the values of real gurobipy 13.0.3.

The typed module-level names below are what the rest of the layer uses; ``GRB`` itself is built
from :mod:`._facts` so that every constant a program may reference exists with its real value.
"""

from __future__ import annotations

from ._facts import (
    GRB_ATTR,
    GRB_CALLBACK,
    GRB_CONSTANTS,
    GRB_ERROR,
    GRB_PARAM,
    GRB_STATUS,
)

INFINITY = 1e100
"""Gurobi's infinity: bounds at or beyond it are infinite."""

MINIMIZE = 1
MAXIMIZE = -1

LESS_EQUAL = "<"
GREATER_EQUAL = ">"
EQUAL = "="

CONTINUOUS = "C"
BINARY = "B"
INTEGER = "I"
SEMICONT = "S"
SEMIINT = "N"

SOS_TYPE1 = 1
SOS_TYPE2 = 2

LOADED = 1
OPTIMAL = 2
INFEASIBLE = 3
INF_OR_UNBD = 4
UNBOUNDED = 5
CUTOFF = 6
ITERATION_LIMIT = 7
NODE_LIMIT = 8
TIME_LIMIT = 9
SOLUTION_LIMIT = 10
INTERRUPTED = 11
NUMERIC = 12
SUBOPTIMAL = 13
USER_OBJ_LIMIT = 15
WORK_LIMIT = 16
MEM_LIMIT = 17

GENCONSTR_MAX = 0
GENCONSTR_MIN = 1
GENCONSTR_ABS = 2
GENCONSTR_AND = 3
GENCONSTR_OR = 4
GENCONSTR_NORM = 5
GENCONSTR_INDICATOR = 7
GENCONSTR_PWL = 8

STATUS_NAMES: dict[int, str] = {value: name for name, value in GRB_STATUS.items()}


def _namespace(name: str, values: dict[str, int] | dict[str, str]) -> type:
    return type(name, (), dict(values))


_Status = _namespace("Status", GRB_STATUS)
_Attr = _namespace("Attr", GRB_ATTR)
_Param = _namespace("Param", GRB_PARAM)
_Callback = _namespace("Callback", GRB_CALLBACK)
_Error = _namespace("Error", GRB_ERROR)

#: The ``GRB`` class of gurobipy: scalar constants plus the ``Status``, ``Attr``, ``Param``,
#: ``Callback`` and ``Error`` groups (and their lower-case aliases, as in gurobipy).
GRB: type = type(
    "GRB",
    (),
    {
        **GRB_CONSTANTS,
        "Status": _Status,
        "status": _Status,
        "Attr": _Attr,
        "attr": _Attr,
        "Param": _Param,
        "param": _Param,
        "Callback": _Callback,
        "callback": _Callback,
        "Error": _Error,
        "error": _Error,
    },
)
