"""Attribute access for ``Model`` (a mixin): gurobipy's ``getAttr``/``setAttr`` and the
case-insensitive attribute properties of models, variables and constraints.

Reads return committed values (writes are queued until the next update); reading any attribute
of an object awaiting an update raises ``AttributeError``; solution attributes raise
``AttributeError`` while no solution exists. Multi-scenario models are refused by name: setting
``NumScenarios`` above 0, or reading or setting any ``ScenN*`` attribute, raises
``NeedsGurobiError`` at once (``NumScenarios`` reads 0). Attributes Gurobi has but this layer does not
emulate raise ``CompatNotImplementedError``; names Gurobi lacks raise its ``AttributeError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from . import _grb as G
from ._attrs import (
    IIS_BY_KIND,
    MODEL_SUPPORTED,
    MODEL_WRITABLE,
    MODIFYING,
    READ_ONLY,
    SCENARIO_ATTRS,
    SOLUTION_BY_KIND,
    STORED_BY_KIND,
    canonical_attr,
    object_kind_of,
    owner_has,
)
from ._errors import (
    CompatNotImplementedError,
    GurobiError,
    NeedsGurobiError,
    invalid_argument,
    no_attribute,
)
from ._expr import Var
from ._model_multi import MULTI_ATTRS, multi_attr, var_objn
from ._objects import ModelObject
from ._state import VTYPES, ModelState, bound, check_name, number, sense_code


class ModelAttributes:
    """The attribute half of ``Model``; needs the model state in ``self._gpc``."""

    _gpc: ModelState

    def getAttr(self, attrname: str, objs: object = None) -> object:
        """A model attribute, or an attribute of each object in ``objs`` (list -> list,
        dict/tupledict -> dict with the same keys; no ``objs`` -> every object of that kind)."""
        canonical = canonical_attr(str(attrname))
        if canonical is None:
            raise no_attribute("Model", str(attrname))
        if objs is None:
            return self._model_attr(canonical)
        if isinstance(objs, dict):
            return {key: self._get_attr_of(obj, canonical) for key, obj in objs.items()}
        if isinstance(objs, (Var, ModelObject)):
            return self._get_attr_of(objs, canonical)
        if not isinstance(objs, Iterable):
            raise GurobiError(10003, "getAttr: objs must be a list or dict of model objects")
        return [self._get_attr_of(obj, canonical) for obj in objs]

    def setAttr(self, attrname: str, objects: object, newvalues: object = None) -> None:
        """Set a model attribute (``setAttr(name, value)``) or one per object
        (``setAttr(name, objs, values)`` with lists, or dicts keyed like ``objs``)."""
        canonical = canonical_attr(str(attrname))
        if canonical is None:
            raise no_attribute("Model", str(attrname))
        if newvalues is None:
            self._set_model_attr(canonical, objects)
            return
        if isinstance(objects, dict):
            for key, obj in objects.items():
                value = newvalues[key] if isinstance(newvalues, dict) else newvalues
                self._set_attr_of(obj, canonical, value)
            return
        if not isinstance(objects, Iterable):
            raise GurobiError(10003, "setAttr: objs must be a list or dict of model objects")
        targets = list(objects)
        if isinstance(newvalues, (list, tuple)):
            if len(newvalues) != len(targets):
                raise GurobiError(10003, "setAttr: objs and values differ in length")
            values: list[object] = list(newvalues)
        else:
            values = [newvalues] * len(targets)
        for obj, value in zip(targets, values, strict=True):
            self._set_attr_of(obj, canonical, value)

    def _model_attr(self, canonical: str) -> object:
        state = self._gpc
        if canonical in SCENARIO_ATTRS:
            raise _scenarios_refused(f"attribute Model.{canonical}")
        if canonical in MODEL_SUPPORTED:
            return self._read_model_attr(canonical)
        kind = object_kind_of(canonical)
        if kind is not None:
            collections: dict[str, list[Any]] = {
                "Var": state.vars,
                "Constr": state.constrs,
                "QConstr": state.qconstrs,
                "SOS": state.sos,
                "GenConstr": state.genconstrs,
            }
            collection = collections[kind]
            return [self._get_attr_of(obj, canonical) for obj in collection]
        raise CompatNotImplementedError(f"attribute Model.{canonical}")

    def _read_model_attr(self, canonical: str) -> object:
        state = self._gpc
        outcome = state.outcome
        vtypes = [str(v._props["VType"]) for v in state.vars]
        is_mip = any(t != "C" for t in vtypes) or bool(state.sos) or bool(state.genconstrs)
        simple: dict[str, Callable[[], object]] = {
            "NumVars": lambda: len(state.vars),
            "NumConstrs": lambda: len(state.constrs),
            "NumQConstrs": lambda: len(state.qconstrs),
            "NumGenConstrs": lambda: len(state.genconstrs),
            "NumSOS": lambda: len(state.sos),
            "NumIntVars": lambda: sum(t != "C" for t in vtypes),  # gurobipy counts S and N too
            "NumBinVars": lambda: vtypes.count("B"),
            "NumNZs": lambda: sum(len(c._vars) for c in state.constrs),
            "NumQNZs": lambda: len(state.q_obj),
            "NumQCNZs": lambda: sum(len(q._quad) for q in state.qconstrs),
            "NumObj": lambda: multi_attr(state, "NumObj"),
            "NumScenarios": lambda: 0,
            "ModelSense": lambda: state.sense,
            "ObjCon": lambda: state.obj_constant,
            "ModelName": lambda: state.name,
            "IsMIP": lambda: int(is_mip),
            "IsQP": lambda: int(bool(state.q_obj) and not state.qconstrs),
            "IsQCP": lambda: int(bool(state.qconstrs)),
            "IsMultiObj": lambda: multi_attr(state, "IsMultiObj"),
            "Status": lambda: state.status,
            "SolCount": lambda: (
                1 if outcome is not None and outcome.x is not None and outcome.status != G.CUTOFF else 0
            ),
        }
        if canonical in simple:
            return simple[canonical]()
        if canonical in MULTI_ATTRS:
            return multi_attr(state, canonical)
        if canonical in ("PoolObjVal", "PoolObjBound"):
            return _pool_attr(state, canonical, is_mip)
        if canonical == "IISMinimal":
            if state.iis is None:
                raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
            return int(state.iis.minimal)
        if outcome is None:
            raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
        solution: dict[str, object] = {
            "ObjVal": outcome.objval,
            "ObjBound": outcome.objbound,
            "ObjBoundC": outcome.objbound,
            "MIPGap": outcome.mip_gap,
            "Runtime": outcome.runtime_s,
            "IterCount": outcome.iterations,
            "BarIterCount": outcome.barrier_iterations,
            "NodeCount": outcome.nodes,
        }
        value = solution[canonical]
        if value is None:
            raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
        return value

    def _set_model_attr(self, canonical: str, value: object) -> None:
        if canonical in SCENARIO_ATTRS:
            raise _scenarios_refused(f"setting attribute Model.{canonical}")
        if canonical not in MODEL_WRITABLE:
            if canonical in MODEL_SUPPORTED or object_kind_of(canonical) is not None:
                raise AttributeError(f"Attribute '{canonical}' cannot be set")
            raise CompatNotImplementedError(f"setting attribute Model.{canonical}")
        state = self._gpc
        if canonical == "ModelSense":
            if value not in (G.MINIMIZE, G.MAXIMIZE):
                raise GurobiError(10003, "Invalid objective sense")
            sense = G.MAXIMIZE if value == G.MAXIMIZE else G.MINIMIZE
            self._queue(lambda: setattr(state, "sense", sense), modifies=True)
        elif canonical == "NumScenarios":
            count = int(number(value, canonical))
            if count != 0:
                raise _scenarios_refused(f"NumScenarios = {count}")
        elif canonical == "ObjCon":
            constant = number(value, "ObjCon")
            self._queue(lambda: setattr(state, "obj_constant", constant), modifies=True)
        else:
            name = check_name(value)
            self._queue(lambda: setattr(state, "name", name), modifies=False)

    def _queue(self, action: Callable[[], object], *, modifies: bool) -> None:
        def commit() -> bool:
            action()
            return modifies

        self._gpc.pending.append(commit)

    def _get_attr_of(self, obj: object, name: str) -> object:
        kind = _kind(obj)
        canonical = canonical_attr(name)
        if canonical is None or not owner_has(kind, canonical):
            raise no_attribute(kind, name)
        assert isinstance(obj, (Var, ModelObject))
        if canonical in SCENARIO_ATTRS:
            raise _scenarios_refused(f"attribute {kind}.{canonical}")
        if obj._index < 0:
            raise AttributeError(f"Index out of range for attribute '{canonical}'")
        stored = STORED_BY_KIND[kind]
        if canonical in stored:
            return obj._props.get(canonical, stored[canonical])
        if canonical == "ObjN":
            assert isinstance(obj, Var)
            return var_objn(self._gpc, obj)
        if canonical == "Xn":
            _pool_attr(self._gpc, canonical, _is_mip(self._gpc))
            return self._solution_value(obj, "X")
        if canonical in SOLUTION_BY_KIND[kind]:
            return self._solution_value(obj, canonical)
        if canonical in IIS_BY_KIND.get(kind, ()):
            return self._iis_member(obj, canonical)
        raise CompatNotImplementedError(f"attribute {kind}.{canonical}")

    def _iis_member(self, obj: Var | ModelObject, canonical: str) -> int:
        iis = self._gpc.iis
        if iis is None:
            raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
        members = {"IISConstr": iis.rows, "IISLB": iis.lower, "IISUB": iis.upper}[canonical]
        return int(obj._index in members)

    def _solution_value(self, obj: Var | ModelObject, canonical: str) -> float:
        outcome = self._gpc.outcome
        values = None
        if outcome is not None:
            values = {"X": outcome.x, "RC": outcome.rc, "Pi": outcome.pi, "Slack": outcome.slack}.get(
                canonical
            )
        if values is None:
            raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
        return values[obj._index]

    def _set_attr_of(self, obj: object, name: str, value: object) -> None:
        kind = _kind(obj)
        if name.startswith("_"):
            object.__setattr__(obj, name, value)
            return
        canonical = canonical_attr(name)
        if canonical is None or not owner_has(kind, canonical):
            raise no_attribute(kind, name)
        if canonical in SCENARIO_ATTRS:
            raise _scenarios_refused(f"setting attribute {kind}.{canonical}")
        stored = STORED_BY_KIND[kind]
        computed = SOLUTION_BY_KIND[kind] | IIS_BY_KIND.get(kind, frozenset())
        if canonical in computed or canonical in READ_ONLY:
            raise AttributeError(f"Attribute '{canonical}' cannot be set")
        if canonical not in stored:
            raise CompatNotImplementedError(f"setting attribute {kind}.{canonical}")
        converted = _convert_attr(canonical, value, stored[canonical])
        assert isinstance(obj, (Var, ModelObject))
        self._queue(lambda: obj._props.__setitem__(canonical, converted), modifies=canonical in MODIFYING)

    def printAttr(self, attrs: object, filter: str = "*") -> None:
        """Print the nonzero values of variable/constraint attributes (console output only)."""
        if not self._gpc.params.logging_on():
            return
        names = [attrs] if isinstance(attrs, str) else list(attrs)  # type: ignore[call-overload]
        for attr in names:
            canonical = canonical_attr(str(attr))
            kind = object_kind_of(canonical) if canonical else None
            if canonical is None or kind is None:
                print(f"    {attr}: {self.getAttr(str(attr))}")
                continue
            objects: list[Any] = self._gpc.vars if kind == "Var" else self._gpc.constrs
            label = "Variable" if kind == "Var" else "Constraint"
            print(f"\n{label:>12} {canonical:>12} \n" + "-" * 25)
            for obj in objects:
                value = self._get_attr_of(obj, canonical)
                if value:
                    print(f"{obj._props.get('VarName', obj._props.get('ConstrName'))!s:>12} {value!s:>12} ")


def _scenarios_refused(what: str) -> NeedsGurobiError:
    return NeedsGurobiError(
        f"a multi-scenario model ({what}): HiGHS has no scenarios (a program can solve each "
        "scenario as a model of its own)"
    )


def _is_mip(state: ModelState) -> bool:
    return any(v._props["VType"] != "C" for v in state.vars) or bool(state.sos) or bool(state.genconstrs)


def _pool_attr(state: ModelState, canonical: str, is_mip: bool) -> float:
    """``PoolObjVal``/``PoolObjBound`` (and the check behind ``Xn``): HiGHS keeps no solution
    pool, so solution 0 — the best — is the only one (``SolCount`` is at most 1); LPs have no
    pool at all, as in gurobipy. The errors are gurobipy 13's, whose messages differ from case to
    case (measured; programs print them)."""
    outcome = state.outcome
    unable = f"Unable to retrieve attribute '{canonical}'"
    if outcome is None:  # never solved: gurobipy names PoolObjBound for Xn too
        if canonical == "PoolObjVal":
            raise AttributeError("No solution available")
        raise AttributeError("Unable to retrieve attribute 'PoolObjBound'")
    if not is_mip:
        raise AttributeError(unable if canonical == "PoolObjBound" else "No solution available")
    if canonical == "PoolObjBound":  # the MIP's bound, whichever solution is selected
        if outcome.objbound is not None:
            return outcome.objbound
        if outcome.status == G.INFEASIBLE:  # nothing is feasible: the bound is infinite
            return math.inf * state.sense
        raise AttributeError(unable)
    if outcome.x is None or outcome.objval is None:  # gurobipy names PoolObjVal here, for Xn too
        raise AttributeError("Unable to retrieve attribute 'PoolObjVal'")
    if state.params.get("SolutionNumber") != 0:
        raise AttributeError(unable)
    return outcome.objval


def _kind(obj: object) -> str:
    if isinstance(obj, Var):
        return "Var"
    if isinstance(obj, ModelObject):
        return obj._kind
    raise GurobiError(10003, f"{type(obj).__name__} is not a model object")


def _convert_attr(canonical: str, value: object, default: object) -> object:
    if canonical == "VType":
        kind = str(value).upper()
        if kind not in VTYPES:
            raise invalid_argument(f"Invalid variable type '{value}'")
        return kind
    if canonical in ("Sense", "QCSense"):
        return sense_code(value)
    if canonical in ("LB", "UB"):
        return bound(value)
    if isinstance(default, str):
        return check_name(value)
    if isinstance(default, int) and not isinstance(default, bool):
        return int(number(value, canonical))
    return number(value, canonical)
