"""The general-constraint half of ``Model`` (a mixin): ``addGenConstr{Max,Min,Abs,And,Or,Norm,
PWL,Indicator}`` and the ``var == max_(...)``/indicator forms of ``addConstr``. They are stored
as gurobipy stores them (and written to LP files the same way); how the solve treats each kind
is in :mod:`._reform`.

The ``vars`` argument of the max/min/and/or/norm helpers is read as gurobipy reads it: a list or
tuple of variables, or a ``tupledict`` whose *values* are the variables (with gurobipy's
``DeprecationWarning``); a plain ``dict`` is iterated like any iterable, so its *keys* are read,
as gurobipy 13 reads them (measured). Anything that is not a variable raises gurobipy's
``GurobiError`` 10003 "Invalid data in vars array" when the constraint is added, never later
(gurobipy 13 also takes integers there, as column indices; the layer does not)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from . import _grb as G
from ._errors import GurobiError
from ._expr import LinExpr, TempConstr, Var
from ._objects import GenConstr
from ._state import ModelState, check_name, number, optional_number, sense_code, to_linear
from ._tuples import tupledict

if TYPE_CHECKING:
    from ._model import Model


def _operands(method: str, vars: object) -> tuple[Var, ...]:
    """The variables of a general constraint's ``vars`` argument (see the module docstring)."""
    if isinstance(vars, tupledict):
        # stacklevel 3: the warning names the program's line, as gurobipy's does
        warnings.warn(f"Passing a tupledict to {method} is deprecated", DeprecationWarning, stacklevel=3)
        vars = list(vars.values())
    if not isinstance(vars, Iterable) or isinstance(vars, (str, bytes)):
        raise TypeError(f"object of type '{type(vars).__name__}' has no len()")
    operands = tuple(vars)
    if not all(isinstance(v, Var) for v in operands):
        raise GurobiError(10003, "Invalid data in vars array")
    return cast("tuple[Var, ...]", operands)


class GeneralConstraintMethods:
    """Needs the model state in ``self._gpc``."""

    _gpc: ModelState

    def _add_general(self, kind: str, name: object, **data: object) -> GenConstr:
        type_code = {
            "max": G.GENCONSTR_MAX,
            "min": G.GENCONSTR_MIN,
            "abs": G.GENCONSTR_ABS,
            "and": G.GENCONSTR_AND,
            "or": G.GENCONSTR_OR,
            "norm": G.GENCONSTR_NORM,
            "indicator": G.GENCONSTR_INDICATOR,
            "pwl": G.GENCONSTR_PWL,
        }[kind]
        general = GenConstr(
            cast("Model", self),
            {"GenConstrName": check_name(name), "GenConstrType": type_code},
            {"kind": kind, **data},
        )

        def commit() -> bool:
            state = self._gpc
            object.__setattr__(general, "_index", len(state.genconstrs))
            if not general._props["GenConstrName"]:
                general._props["GenConstrName"] = f"GC{general._index}"
            state.genconstrs.append(general)
            return True

        self._gpc.pending.append(commit)
        return general

    def addGenConstrMax(
        self, resvar: Var, vars: object, constant: object = None, name: object = ""
    ) -> GenConstr:
        operands = _operands("addGenConstrMax", vars)
        return self._add_general(
            "max", name, resvar=resvar, vars=operands, constant=optional_number(constant)
        )

    def addGenConstrMin(
        self, resvar: Var, vars: object, constant: object = None, name: object = ""
    ) -> GenConstr:
        operands = _operands("addGenConstrMin", vars)
        return self._add_general(
            "min", name, resvar=resvar, vars=operands, constant=optional_number(constant)
        )

    def addGenConstrAbs(self, resvar: Var, argvar: Var, name: object = "") -> GenConstr:
        if not isinstance(argvar, Var):  # a list here is a program error in gurobipy too
            raise TypeError(f"{argvar!r} is not a variable")
        return self._add_general("abs", name, resvar=resvar, vars=(argvar,), constant=None)

    def addGenConstrAnd(self, resvar: Var, vars: object, name: object = "") -> GenConstr:
        operands = _operands("addGenConstrAnd", vars)
        return self._add_general("and", name, resvar=resvar, vars=operands, constant=None)

    def addGenConstrOr(self, resvar: Var, vars: object, name: object = "") -> GenConstr:
        operands = _operands("addGenConstrOr", vars)
        return self._add_general("or", name, resvar=resvar, vars=operands, constant=None)

    def addGenConstrNorm(self, resvar: Var, vars: object, which: object, name: object = "") -> GenConstr:
        operands = _operands("addGenConstrNorm", vars)
        return self._add_general("norm", name, resvar=resvar, vars=operands, constant=number(which, "which"))

    def addGenConstrPWL(
        self, xvar: Var, yvar: Var, xpts: Iterable[object], ypts: Iterable[object], name: object = ""
    ) -> GenConstr:
        xs = tuple(number(p, "xpts") for p in xpts)
        ys = tuple(number(p, "ypts") for p in ypts)
        return self._add_general("pwl", name, xvar=xvar, yvar=yvar, xpts=xs, ypts=ys)

    def addGenConstrIndicator(
        self,
        binvar: Var,
        binval: object,
        lhs: object,
        sense: object = None,
        rhs: object = None,
        name: object = "",
    ) -> GenConstr:
        """``binvar == binval  ->  lhs sense rhs`` (``lhs`` may be a linear ``TempConstr``)."""
        if isinstance(lhs, TempConstr):
            if lhs.kind != "linear":
                raise GurobiError(10003, "Indicator constraints must imply a linear constraint")
            expr = to_linear(lhs.lhs) - to_linear(lhs.rhs)
            row_sense = lhs.sense
        else:
            expr = to_linear(lhs) - to_linear(rhs)
            row_sense = sense_code(sense)
        assert isinstance(expr, LinExpr)
        return self._add_general(
            "indicator",
            name,
            binvar=binvar,
            binval=bool(binval),
            coeffs=tuple(expr._coeffs),
            vars=tuple(expr._vars),
            sense=row_sense,
            rhs=-expr._constant,
        )
