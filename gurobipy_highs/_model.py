"""``Model``: building, lazy updates, ``optimize`` (HiGHS) and the queries around them.

Lazy updates work as in gurobipy: every change (new variables and constraints, attribute
writes, ``setObjective``, ``chgCoeff``, ``remove``) is queued and applied by ``update()`` — which
``optimize()`` and ``write()`` call first — new variables first, then the rest in call order.
Until then new objects report the index they will get but reading their attributes raises
``AttributeError``, attribute reads return the old values, and counts such as ``NumVars`` do not
include them. Applying a change that alters the model discards the previous solution
(``Status`` goes back to ``LOADED``).

Adding variables lives in :mod:`._model_vars`, adding constraints in :mod:`._model_constrs`
(general ones in :mod:`._model_general`), multiple objectives in :mod:`._model_multi`, callbacks
in :mod:`._callback`, attribute access in :mod:`._model_attrs`, file output in
:mod:`._model_files`, the state and its canonical forms in :mod:`._state`.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

from . import _grb as G
from ._args import removal_targets
from ._attrs import canonical_attr
from ._callback import CallbackMethods
from ._env import Env, default_env, param_info
from ._errors import CompatNotImplementedError, GurobiError, no_attribute
from ._expr import LinExpr, QuadExpr, Var, as_number
from ._facts import CLASS_NAMES
from ._iis import compute_iis
from ._matrix import MatrixBase, single_expression
from ._model_attrs import ModelAttributes
from ._model_constrs import ConstraintMethods
from ._model_files import write_file
from ._model_multi import MultiObjectiveMethods
from ._objects import REMOVED, SOS, Constr, GenConstr, ModelObject, QConstr
from ._optimize import run_optimize
from ._params import ParamsProxy, ParamValue, announce
from ._state import (
    ModelState,
    build_snapshot,
    check_name,
    float_prop,
    merged_quad,
    number,
    require_member,
    to_linear,
)


class Model(ModelAttributes, ConstraintMethods, MultiObjectiveMethods, CallbackMethods):
    """A gurobipy-compatible optimisation model solved with HiGHS.

    ``Model(name="", env=None)``. See the package docstring for what is supported and for the
    ``needs_gurobi`` contract.
    """

    _gpc: ModelState

    def __init__(self, name: str = "", env: Env | None = None) -> None:
        source = env if env is not None else default_env()
        state = ModelState(check_name(name), source._params.copy())
        object.__setattr__(self, "_gpc", state)

    # ------------------------------------------------------------------ parameters
    @property
    def Params(self) -> ParamsProxy:
        """Parameters as attributes: ``model.Params.TimeLimit = 60``."""
        return ParamsProxy(self._gpc.params, self.setParam)

    params = Params

    def setParam(self, paramname: str, newval: object) -> None:
        """Set parameter ``paramname`` (case-insensitive); ``GurobiError`` if unknown or out of range."""
        canonical, value = self._gpc.params.set(paramname, newval)
        announce(self._gpc.params, canonical, value)

    def getParamInfo(
        self, paramname: str
    ) -> tuple[str, type, ParamValue, ParamValue, ParamValue, ParamValue]:
        """``(name, type, current value, minimum, maximum, default)``."""
        return param_info(self._gpc.params, paramname)

    def resetParams(self) -> None:
        self._gpc.params.reset()

    def __getattr__(self, name: str) -> object:
        if name.startswith("__") or name == "_gpc":
            raise AttributeError(name)
        canonical = canonical_attr(name)
        if canonical is not None:
            return self._model_attr(canonical)
        if name in CLASS_NAMES["Model"]:
            raise CompatNotImplementedError(f"Model.{name}")
        raise no_attribute("Model", name)

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        canonical = canonical_attr(name)
        if canonical is None:
            raise no_attribute("Model", name)
        self._set_model_attr(canonical, value)

    # ------------------------------------------------------------------ objective
    def setObjective(self, expr: object, sense: object = None) -> None:
        """Replace the objective (applied at the next update); ``sense`` is 1 or -1."""
        if sense is not None and sense not in (G.MINIMIZE, G.MAXIMIZE):
            raise GurobiError(10003, "Invalid objective sense")
        expr = single_expression(expr)
        if isinstance(expr, QuadExpr):
            objective: LinExpr | QuadExpr = expr.copy()
        elif isinstance(expr, (Var, LinExpr)) or as_number(expr) is not None:
            objective = to_linear(expr).copy()
        else:
            raise GurobiError(10003, "Unable to convert argument to an expression")

        def commit() -> bool:
            state = self._gpc
            for var in state.vars:
                var._props["Obj"] = 0.0
            linear = objective._linear if isinstance(objective, QuadExpr) else objective
            for coeff, var in zip(linear._coeffs, linear._vars, strict=True):
                require_member(self, var)
                var._props["Obj"] = float_prop(var, "Obj") + coeff
            state.obj_constant = linear._constant
            if isinstance(objective, QuadExpr):
                state.q_obj = merged_quad(self, objective, objective=True)
            else:
                state.q_obj = []
            if sense is not None:
                state.sense = G.MAXIMIZE if sense == G.MAXIMIZE else G.MINIMIZE
            return True

        self._gpc.pending.append(commit)

    def getObjective(self, index: object = None) -> LinExpr | QuadExpr:
        """The current (updated) objective: a LinExpr, or a QuadExpr when it has squares/products."""
        if index is not None and index != 0:
            assert isinstance(index, int)
            return self._objective_n(index)
        state = self._gpc
        linear = LinExpr(state.obj_constant)
        for var in state.vars:
            coeff = float_prop(var, "Obj")
            if coeff != 0.0:
                linear._coeffs.append(coeff)
                linear._vars.append(var)
        if not state.q_obj:
            return linear
        return QuadExpr._raw(
            linear,
            [q for _a, _b, q in state.q_obj],
            [a for a, _b, _q in state.q_obj],
            [b for _a, b, _q in state.q_obj],
        )

    # ------------------------------------------------------------------ update / remove / queries
    def update(self) -> None:
        """Apply every queued change: new variables first (so that range variables follow
        them, as in gurobipy), then everything else in call order."""
        state = self._gpc
        if not state.pending and not state.pending_vars and not state.pending_late:
            return
        new_vars, state.pending_vars = state.pending_vars, []
        state.pending_counts = {}
        pending, state.pending, state.pending_late = state.pending + state.pending_late, [], []
        modified = bool(new_vars)
        for var in new_vars:
            self._commit_var(var)
        for operation in pending:
            modified = operation() or modified
        if modified:
            self._discard_solution()

    def _discard_solution(self) -> None:
        state = self._gpc
        state.status = G.LOADED
        state.outcome = None
        state.iis = None
        state.infeasibility_proof = None
        for var in state.vars:
            object.__setattr__(var, "_solution", None)

    def reset(self, clearall: object = 0) -> None:
        """Discard the solution (the model returns to status ``LOADED``)."""
        self.update()
        self._discard_solution()

    def remove(self, items: object) -> None:
        """Remove a Var/Constr/QConstr/SOS/GenConstr, or nested lists/tuples/dicts of them (at
        update); ``GurobiError`` for anything else or for an object of another model."""
        targets = removal_targets(items, (Var, ModelObject), MatrixBase)
        for target in targets:
            assert isinstance(target, (Var, ModelObject))
            if target._model is not self:
                raise GurobiError(-1, "Item to be removed is not in model")
        self._gpc.pending.append(lambda: self._apply_removal(targets))

    def _apply_removal(self, targets: list[object]) -> bool:
        state = self._gpc
        doomed = {id(t) for t in targets}
        for target in targets:
            object.__setattr__(target, "_index", REMOVED)
        state.vars = [v for v in state.vars if id(v) not in doomed]
        state.constrs = [c for c in state.constrs if id(c) not in doomed]
        state.qconstrs = [q for q in state.qconstrs if id(q) not in doomed]
        state.sos = [s for s in state.sos if id(s) not in doomed]
        state.genconstrs = [g for g in state.genconstrs if id(g) not in doomed]
        for collection in (state.vars, state.constrs, state.qconstrs, state.sos, state.genconstrs):
            for position, item in enumerate(collection):
                object.__setattr__(item, "_index", position)
        for constr in state.constrs:
            keep = [k for k, v in enumerate(constr._vars) if v._index >= 0]
            constr._set_row([constr._vars[k] for k in keep], [constr._coeffs[k] for k in keep])
        for qconstr in state.qconstrs:
            keep = [k for k, v in enumerate(qconstr._lin_vars) if v._index >= 0]
            quad = [(a, b, q) for a, b, q in qconstr._quad if a._index >= 0 and b._index >= 0]
            qconstr._set_terms(
                ([qconstr._lin_vars[k] for k in keep], [qconstr._lin_coeffs[k] for k in keep]), quad
            )
        state.q_obj = [(a, b, q) for a, b, q in state.q_obj if a._index >= 0 and b._index >= 0]
        return True

    def getVars(self) -> list[Var]:
        return list(self._gpc.vars)

    def getConstrs(self) -> list[Constr]:
        return list(self._gpc.constrs)

    def getQConstrs(self) -> list[QConstr]:
        return list(self._gpc.qconstrs)

    def getSOSs(self) -> list[SOS]:
        return list(self._gpc.sos)

    def getGenConstrs(self) -> list[GenConstr]:
        return list(self._gpc.genconstrs)

    def getVarByName(self, name: str) -> Var | None:
        return next((v for v in self._gpc.vars if v._props["VarName"] == name), None)

    def getConstrByName(self, name: str) -> Constr | None:
        return next((c for c in self._gpc.constrs if c._props["ConstrName"] == name), None)

    def getRow(self, constr: Constr) -> LinExpr:
        """The constraint's left-hand side: merged terms in column order, without constant."""
        require_member(self, constr)
        return LinExpr._raw(list(constr._coeffs), list(constr._vars), 0.0)

    def getQCRow(self, qconstr: QConstr) -> QuadExpr:
        require_member(self, qconstr)
        linear = LinExpr._raw(list(qconstr._lin_coeffs), list(qconstr._lin_vars), 0.0)
        quad = qconstr._quad
        return QuadExpr._raw(
            linear, [q for _a, _b, q in quad], [a for a, _b, _q in quad], [b for _a, b, _q in quad]
        )

    def getCoeff(self, constr: Constr, var: Var) -> float:
        require_member(self, constr)
        return sum(c for c, v in zip(constr._coeffs, constr._vars, strict=True) if v is var)

    def chgCoeff(self, constr: Constr, var: Var, newvalue: object) -> None:
        """Set the coefficient of ``var`` in ``constr`` (0 removes it), at the next update."""
        value = number(newvalue, "newvalue")

        def commit() -> bool:
            require_member(self, constr)
            require_member(self, var)
            pairs = [(v, c) for v, c in zip(constr._vars, constr._coeffs, strict=True) if v is not var]
            if value != 0.0:
                pairs.append((var, value))
            pairs.sort(key=lambda pair: pair[0]._index)
            constr._set_row([v for v, _c in pairs], [c for _v, c in pairs])
            return True

        self._gpc.pending.append(commit)

    # ------------------------------------------------------------------ solve
    def optimize(self, callback: object = None) -> None:
        """Solve with HiGHS (see :mod:`._optimize`); ``callback(model, where)`` is called by the
        lazy-constraint loop of :mod:`._callback`. Raises ``NeedsGurobiError`` (status stays
        ``LOADED``) for models HiGHS cannot solve exactly; see the package docstring."""
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable")
        self.update()
        state = self._gpc
        # An unchanged model keeps its IIS through a solve, as in gurobipy (a change drops it).
        iis = state.iis
        self._discard_solution()
        state.iis = iis
        sys.stdout.flush()
        outcome = run_optimize(self, state, callback)
        state.outcome = outcome
        state.status = outcome.status
        # A callback's lazy constraints are not the model's: its infeasibility proves nothing.
        if outcome.status == G.INFEASIBLE and callback is None:
            state.infeasibility_proof = (outcome.runtime_s, _tolerances(state))
        if outcome.x is not None:
            for var, value in zip(state.vars, outcome.x, strict=True):
                object.__setattr__(var, "_solution", value)

    def computeIIS(self) -> None:
        """Find an irreducible inconsistent subsystem with HiGHS (:mod:`._iis`); afterwards
        ``IISConstr``, ``IISLB``, ``IISUB`` and ``IISMinimal`` read it, ``write("*.ilp")``
        writes it, and the status is ``INFEASIBLE`` (where ``TimeLimit`` passed before the model
        was proven infeasible there is none, as in gurobipy). Raises ``GurobiError`` 10015 on a feasible
        model, ``NeedsGurobiError`` on one with quadratic, SOS, general or semi-continuous
        parts."""
        self.update()
        state = self._gpc
        logging = state.params.logging_on()
        if logging:
            print("Computing Irreducible Inconsistent Subsystem (IIS)...", flush=True)
        started = time.perf_counter()
        proof = state.infeasibility_proof
        # A proof under other tolerances proves nothing now.
        proven = proof[0] if proof is not None and proof[1] == _tolerances(state) else None
        iis = compute_iis(build_snapshot(state), state.params, proven_in_s=proven)
        if iis is None:
            return
        state.iis = iis
        state.status = G.INFEASIBLE
        if logging:
            bounds = len(iis.lower) + len(iis.upper)
            print(f"\nIIS computed: {len(iis.rows)} constraints, {bounds} bounds")
            print(f"IIS runtime: {time.perf_counter() - started:.2f} seconds", flush=True)

    # ------------------------------------------------------------------ misc
    def write(self, filename: str) -> None:
        """Write the model (``.lp``, ``.mps``: Gurobi's exact text), its IIS (``.ilp``), its
        solution (``.sol``, ``.mst``) or its parameters (``.prm``); ``.gz``/``.bz2`` compress.
        Other formats raise ``CompatNotImplementedError``."""
        self.update()
        write_file(self._gpc, filename)

    def copy(self) -> Model:
        """An independent copy named ``<name>_copy`` of the updated model (pending changes are
        not copied, as in gurobipy); the solution is not copied."""
        return _clone(self, relax=False)

    def relax(self) -> Model:
        """Like :meth:`copy`, with every integrality restriction dropped (binaries keep [0, 1])."""
        return _clone(self, relax=True)

    def printStats(self) -> None:
        """Print model statistics (console output only)."""
        if not self._gpc.params.logging_on():
            return
        state = self._gpc
        integers = sum(v._props["VType"] != "C" for v in state.vars)
        binaries = sum(v._props["VType"] == "B" for v in state.vars)
        nonzeros = sum(len(c._vars) for c in state.constrs)
        shape = f"{len(state.constrs)} rows, {len(state.vars)} columns, {nonzeros} nonzeros"
        types = f"{len(state.vars) - integers} continuous, {integers} integer ({binaries} binary)"
        print(f"\nStatistics for model '{state.name}':")
        print(f"  Linear constraint matrix    : {shape}")
        print(f"  Variable types              : {types}")

    def message(self, msg: str) -> None:
        if self._gpc.params.logging_on():
            print(msg)

    def dispose(self) -> None:
        self._gpc.disposed = True

    close = dispose

    def __enter__(self) -> Model:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.dispose()

    def __repr__(self) -> str:
        state = self._gpc
        is_mip = (
            any(v._props["VType"] != "C" for v in state.vars) or bool(state.sos) or bool(state.genconstrs)
        )
        kind = "MIP" if is_mip else "Continuous"
        return (
            f"<gurobi.Model {kind} instance {state.name}: {len(state.constrs)} constrs, "
            f"{len(state.vars)} vars, {state.params.describe()}>"
        )

    # ------------------------------------------------------------------ helpers
    def _future_index(self, kind: str) -> int:
        """The index the next new object of ``kind`` will get at the coming update."""
        state = self._gpc
        committed: dict[str, list[Any]] = {
            "Constr": state.constrs,
            "QConstr": state.qconstrs,
            "SOS": state.sos,
            "GenConstr": state.genconstrs,
        }
        waiting = state.pending_counts.get(kind, 0)
        state.pending_counts[kind] = waiting + 1
        return len(committed[kind]) + waiting


def _clone(model: Model, *, relax: bool) -> Model:
    """A new model with the same (updated) contents; ``relax`` makes every variable continuous."""
    state = model._gpc
    if state.sos or state.genconstrs:
        raise CompatNotImplementedError(
            f"Model.{'relax' if relax else 'copy'}() of models with SOS or general constraints"
        )
    clone = Model(f"{state.name}_copy")
    clone._gpc.params = state.params.copy()
    mapping: dict[int, Var] = {}
    for var in state.vars:
        vtype = str(var._props["VType"])
        lb, ub = float_prop(var, "LB"), float_prop(var, "UB")
        if relax and vtype != "C":
            if vtype == "B":
                lb, ub = max(lb, 0.0), min(ub, 1.0)
            vtype = "C"
        mapping[var._serial] = clone.addVar(lb, ub, var._props["Obj"], vtype, var._props["VarName"])
    for constr in state.constrs:
        expr = LinExpr._raw(list(constr._coeffs), [mapping[v._serial] for v in constr._vars], 0.0)
        clone._add_linear(
            expr, str(constr._props["Sense"]), float_prop(constr, "RHS"), str(constr._props["ConstrName"])
        )
    for qconstr in state.qconstrs:
        linear = LinExpr._raw(list(qconstr._lin_coeffs), [mapping[v._serial] for v in qconstr._lin_vars], 0.0)
        quad = QuadExpr._raw(
            linear,
            [q for _a, _b, q in qconstr._quad],
            [mapping[a._serial] for a, _b, _q in qconstr._quad],
            [mapping[b._serial] for _a, b, _q in qconstr._quad],
        )
        clone._add_quadratic(
            quad,
            str(qconstr._props["QCSense"]),
            float_prop(qconstr, "QCRHS"),
            str(qconstr._props["QCName"]),
        )
    objective = model.getObjective()
    linear = objective._linear if isinstance(objective, QuadExpr) else objective
    new_linear = LinExpr._raw(
        list(linear._coeffs), [mapping[v._serial] for v in linear._vars], linear._constant
    )
    if isinstance(objective, QuadExpr):
        clone.setObjective(
            QuadExpr._raw(
                new_linear,
                list(objective._qcoeffs),
                [mapping[v._serial] for v in objective._qvars1],
                [mapping[v._serial] for v in objective._qvars2],
            ),
            state.sense,
        )
    else:
        clone.setObjective(new_linear, state.sense)
    clone.update()
    return clone


def _tolerances(state: ModelState) -> tuple[object, ...]:
    """The parameters a proof of infeasibility depends on."""
    return tuple(state.params.get(name) for name in ("FeasibilityTol", "IntFeasTol", "Presolve"))
