"""The constraint half of ``Model`` (a mixin): ``addConstr`` (every ``TempConstr`` form),
``addLConstr``, ``addConstrs``, ``addRange``, ``addQConstr``, ``addMConstr`` and ``addSOS``. Each
constraint is queued and gets its row at the next update, with duplicate terms merged then (see
:mod:`._model`); indicator and ``var == max_(...)`` forms go to the general constraints of
:mod:`._model_general`.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import GeneratorType
from typing import TYPE_CHECKING, cast

from . import _grb as G
from ._errors import GurobiError, invalid_argument
from ._expr import GenExpr, LinExpr, QuadExpr, TempConstr, Var
from ._keys import generator_keys, key_name
from ._matrix import MConstr, MTempConstr, MVar, add_matrix_constraints
from ._model_general import GeneralConstraintMethods
from ._model_vars import VariableMethods
from ._objects import SOS, Constr, GenConstr, QConstr
from ._state import check_name, merged_quad, merged_terms, number, sense_code, to_linear, to_quadratic
from ._tuples import tupledict

if TYPE_CHECKING:
    from ._model import Model


class ConstraintMethods(VariableMethods, GeneralConstraintMethods):
    """Needs the model state in ``self._gpc``; builds on the variable methods (``addRange`` adds
    its range variable) and the general-constraint ones (the indicator and ``max_`` forms)."""

    def addMConstr(self, A: object, x: object, sense: object, b: object, name: object = "") -> MConstr:
        """``A @ x sense b`` as an :class:`MConstr` (``x`` an MVar or list of Vars)."""
        variables = x if isinstance(x, MVar) else MVar.fromlist(x)
        product = A @ variables
        code = sense_code(sense)
        constrs = product <= b if code == "<" else product >= b if code == ">" else product == b
        return add_matrix_constraints(cast("Model", self), constrs, check_name(name))

    def addConstr(self, constr: object, name: object = "", *extra: object) -> Constr | QConstr | GenConstr:
        """Add a constraint given as a ``TempConstr`` (``expr <= rhs``, ``expr == [lb, ub]``,
        ``(b == 1) >> (...)``, ``y == max_(...)``); ``True``/``False`` add ``0 <= 0``/``0 <= -1``.

        The old ``addConstr(lhs, sense, rhs)`` form raises ``TypeError`` as in gurobipy 13
        (use ``addLConstr``)."""
        if extra:
            raise TypeError(f"addConstr() takes at most 3 positional arguments ({3 + len(extra)} given)")
        text = check_name(name)
        if isinstance(constr, MTempConstr):
            return add_matrix_constraints(cast("Model", self), constr, text)  # type: ignore[return-value]
        if isinstance(constr, bool):
            return self._add_linear(LinExpr(), "<", 0.0 if constr else -1.0, text)
        if not isinstance(constr, TempConstr):
            raise GurobiError(10003, "Invalid value for Model.addConstr")
        return self._add_temp(constr, text)

    def _add_temp(self, constr: TempConstr, name: str) -> Constr | QConstr | GenConstr:
        if constr.kind == "linear":
            expr = to_linear(constr.lhs) - to_linear(constr.rhs)
            assert isinstance(expr, LinExpr)
            return self._add_linear(expr, constr.sense, 0.0, name)
        if constr.kind == "quadratic":
            qexpr = to_quadratic(constr.lhs) - to_quadratic(constr.rhs)
            return self._add_quadratic(qexpr, constr.sense, 0.0, name)
        if constr.kind == "range":
            bounds = constr.rhs
            assert isinstance(bounds, tuple)
            return self.addRange(constr.lhs, bounds[0], bounds[1], name)
        if constr.kind == "indicator":
            condition, implied = constr.lhs, constr.rhs
            assert isinstance(condition, tuple) and isinstance(implied, TempConstr)
            return self.addGenConstrIndicator(condition[0], condition[1], implied, name=name)
        if constr.kind == "general":
            target, genexpr = constr.lhs, constr.rhs
            assert isinstance(target, Var) and isinstance(genexpr, GenExpr)
            return self._add_general(
                genexpr.kind, name, resvar=target, vars=genexpr.args, constant=genexpr.constant
            )
        raise GurobiError(10003, "Invalid value for Model.addConstr")

    def _add_linear(self, expr: LinExpr, sense: str, rhs: float, name: str) -> Constr:
        row_rhs = rhs - expr._constant
        constr = Constr(cast("Model", self), {"ConstrName": name, "Sense": sense, "RHS": row_rhs})
        coeffs, variables = list(expr._coeffs), list(expr._vars)
        self._gpc.pending.append(lambda: self._commit_constr(constr, coeffs, variables))
        return constr

    def _commit_constr(self, constr: Constr, coeffs: list[float], variables: list[Var]) -> bool:
        state = self._gpc
        object.__setattr__(constr, "_index", len(state.constrs))
        if not constr._props["ConstrName"]:
            constr._props["ConstrName"] = f"R{constr._index}"
        constr._set_row(*merged_terms(self, coeffs, variables))
        state.constrs.append(constr)
        return True

    def addLConstr(self, lhs: object, sense: object = None, rhs: object = None, name: object = "") -> Constr:
        """Add a linear constraint, as a ``TempConstr`` or as ``(lhs, sense, rhs)``."""
        if isinstance(lhs, TempConstr) and sense is None and rhs is None:
            if lhs.kind != "linear":
                raise GurobiError(10003, "addLConstr needs a linear constraint")
            result = self._add_temp(lhs, check_name(name))
            assert isinstance(result, Constr)
            return result
        expr = to_linear(lhs) - to_linear(rhs)
        assert isinstance(expr, LinExpr)
        return self._add_linear(expr, sense_code(sense), 0.0, check_name(name))

    def addConstrs(self, generator: object, name: object = "") -> tupledict:
        """Add one constraint per item of a generator expression; keys are its loop values."""
        if not isinstance(generator, GeneratorType):
            raise KeyError("Missing constraint index")
        prefix = check_name(name)
        result = tupledict()
        for key, constr in generator_keys(generator):
            label = key_name(prefix, key) if prefix else ""
            if isinstance(constr, bool):
                result[key] = self.addConstr(constr, label)
            elif isinstance(constr, TempConstr):
                result[key] = self._add_temp(constr, check_name(label))
            else:
                raise GurobiError(10003, "Invalid value for Model.addConstrs")
        return result

    def addRange(self, expr: object, lower: object, upper: object, name: object = "") -> Constr:
        """``lower <= expr <= upper`` the Gurobi way: ``expr + Rg<name> = upper`` with a new
        variable ``Rg<name>`` in ``[0, upper - lower]`` (it counts in ``NumVars``)."""
        low, high = number(lower, "lower"), number(upper, "upper")
        linear = to_linear(expr)
        constr = Constr(
            cast("Model", self),
            {"ConstrName": check_name(name), "Sense": "=", "RHS": high - linear._constant},
        )
        coeffs, variables = list(linear._coeffs), list(linear._vars)

        def commit() -> bool:
            self._commit_constr(constr, coeffs, variables)
            span = high - low
            range_var = Var(
                cast("Model", self),
                {
                    "VarName": f"Rg{constr._props['ConstrName']}",
                    "LB": 0.0,
                    "UB": span,
                    "Obj": 0.0,
                    "VType": "C",
                },
            )
            self._commit_var(range_var)
            constr._set_row([*constr._vars, range_var], [*constr._coeffs, 1.0])
            return True

        self._gpc.pending.append(commit)
        return constr

    def addQConstr(self, lhs: object, sense: object = None, rhs: object = None, name: object = "") -> QConstr:
        """Add a quadratic constraint (``TempConstr`` or ``(lhs, sense, rhs)``)."""
        if isinstance(lhs, TempConstr) and sense is None and rhs is None:
            if lhs.kind not in ("linear", "quadratic"):
                raise GurobiError(10003, "addQConstr needs a quadratic constraint")
            qexpr = to_quadratic(lhs.lhs) - to_quadratic(lhs.rhs)
            return self._add_quadratic(qexpr, lhs.sense, 0.0, check_name(name))
        qexpr = to_quadratic(lhs) - to_quadratic(rhs)
        return self._add_quadratic(qexpr, sense_code(sense), 0.0, check_name(name))

    def _add_quadratic(self, expr: QuadExpr, sense: str, rhs: float, name: str) -> QConstr:
        qconstr = QConstr(
            cast("Model", self), {"QCName": name, "QCSense": sense, "QCRHS": rhs - expr._linear._constant}
        )
        terms = expr.copy()

        def commit() -> bool:
            state = self._gpc
            object.__setattr__(qconstr, "_index", len(state.qconstrs))
            linear = merged_terms(self, terms._linear._coeffs, terms._linear._vars)
            qconstr._set_terms(linear, merged_quad(self, terms, objective=False))
            state.qconstrs.append(qconstr)
            return True

        self._gpc.pending.append(commit)
        return qconstr

    def addSOS(self, type: object, vars: Sequence[Var], wts: Sequence[object] | None = None) -> SOS:
        """Add an SOS of type 1 or 2 (weights default to 1, 2, 3, ...)."""
        if type not in (G.SOS_TYPE1, G.SOS_TYPE2):
            raise invalid_argument(f"Invalid SOS type {type}")
        members = list(vars)
        if wts is None:
            weights = [float(k + 1) for k in range(len(members))]
        else:
            weights = [number(w, "wts") for w in wts]
        sos = SOS(cast("Model", self), G.SOS_TYPE1 if type == G.SOS_TYPE1 else G.SOS_TYPE2, members, weights)

        def commit() -> bool:
            object.__setattr__(sos, "_index", len(self._gpc.sos))
            self._gpc.sos.append(sos)
            return True

        self._gpc.pending.append(commit)
        return sos
