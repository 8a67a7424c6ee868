"""The variable half of ``Model`` (a mixin): ``addVar`` (with a :class:`~._column.Column`),
``addVars`` and ``addMVar``. A new variable is queued: it gets its column at the next update, and
reports meanwhile the index it will get (see :mod:`._model`). How bound, objective, type and name
arguments are read per key (scalars, lists, ranges, dicts with ignored keys, arrays, Series) is
in :mod:`._args`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from . import _grb as G
from ._args import per_key, scalar_number
from ._column import Column
from ._errors import invalid_argument
from ._expr import Var
from ._keys import index_keys, key_name
from ._matrix import MVar, add_mvar
from ._objects import Constr
from ._state import VTYPES, ModelState, bound, check_name, creation_bounds, merged_terms, require_member
from ._tuples import tupledict

if TYPE_CHECKING:
    from ._model import Model


class VariableMethods:
    """Needs the model state in ``self._gpc``."""

    _gpc: ModelState

    def addVar(
        self,
        lb: object = 0.0,
        ub: object = G.INFINITY,
        obj: object = 0.0,
        vtype: object = G.CONTINUOUS,
        name: object = "",
        column: object = None,
    ) -> Var:
        """Add one variable (visible after the next update); ``column`` (a :class:`Column`) puts
        it into existing constraints."""
        var = self._new_var(lb, ub, obj, vtype, check_name(name))
        if column is not None:
            if not isinstance(column, Column):
                raise TypeError("column must be a gurobipy.Column")
            terms = list(column.terms())

            def commit() -> bool:
                for coeff, constr in terms:
                    require_member(self, constr)
                    assert isinstance(constr, Constr)
                    pairs = [*zip(constr._vars, constr._coeffs, strict=True), (var, coeff)]
                    merged, coeffs = merged_terms(self, [c for _v, c in pairs], [v for v, _c in pairs])
                    constr._set_row(merged, coeffs)
                return True

            self._gpc.pending.append(commit)
        return var

    def _new_var(self, lb: object, ub: object, obj: object, vtype: object, name: str) -> Var:
        kind = str(vtype).upper() if isinstance(vtype, str) else str(vtype)
        if kind not in VTYPES:
            raise invalid_argument(f"Invalid variable type '{vtype}'")
        low, high = creation_bounds(kind, bound(scalar_number(lb)), bound(scalar_number(ub)))
        props: dict[str, object] = {
            "VarName": name,
            "LB": low,
            "UB": high,
            "Obj": scalar_number(obj),
            "VType": kind,
        }
        state = self._gpc
        var = Var(cast("Model", self), props, future_index=len(state.vars) + len(state.pending_vars))
        state.pending_vars.append(var)
        return var

    def _commit_var(self, var: Var) -> bool:
        state = self._gpc
        object.__setattr__(var, "_index", len(state.vars))
        if not var._props["VarName"]:
            var._props["VarName"] = f"C{var._index}"
        state.vars.append(var)
        return True

    def addVars(
        self,
        *indices: object,
        lb: object = 0.0,
        ub: object = G.INFINITY,
        obj: object = 0.0,
        vtype: object = G.CONTINUOUS,
        name: object = "",
    ) -> tupledict:
        """Add one variable per key of the index product; returns ``tupledict(key -> Var)``.

        ``lb``/``ub``/``obj``/``vtype`` are a scalar, a list in key order or a dict by key;
        ``name`` is a prefix (names become ``name[key]``), a list or a dict of names.
        """
        keys = index_keys(indices)
        names = (
            [key_name(name, key) if name else "" for key in keys]
            if isinstance(name, str)
            else [check_name(n) for n in per_key(name, keys, "")]
        )
        columns = zip(
            keys,
            per_key(lb, keys, 0.0),
            per_key(ub, keys, G.INFINITY),
            per_key(obj, keys, 0.0),
            per_key(vtype, keys, G.CONTINUOUS),
            names,
            strict=True,
        )
        result = tupledict()
        for key, low, high, cost, kind, var_name in columns:
            result[key] = self._new_var(low, high, cost, kind, check_name(var_name))
        return result

    def addMVar(
        self,
        shape: object,
        lb: object = 0.0,
        ub: object = G.INFINITY,
        obj: object = 0.0,
        vtype: object = G.CONTINUOUS,
        name: object = "",
    ) -> MVar:
        """An :class:`MVar` of ``shape`` (see :mod:`._matrix`); arguments broadcast to it."""
        return add_mvar(cast("Model", self), shape, lb, ub, obj, vtype, name)
