"""Parameters: gurobipy's full table, validated like Gurobi, and what each means for HiGHS.

Every Gurobi 13.0.3 parameter can be read and set (names are case-insensitive, values are
range-checked with Gurobi's messages). Only some change what HiGHS does (:data:`HIGHS_OPTIONS`);
the rest tune Gurobi's own algorithms and cannot change an optimal objective, so they are
accepted and ignored. ``Cutoff``, ``BestObjStop`` and ``BestBdStop`` are applied to the optimum
(``_optimize``); ``LazyConstraints``, ``ObjNumber`` and ``SolutionNumber`` are read by the
callback loop and the attributes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ._errors import GurobiError
from ._facts import PARAMS

ParamValue = int | float | str

_CANONICAL: dict[str, str] = {name.lower(): name for name in PARAMS}

#: Parameters with a HiGHS counterpart: Gurobi name -> HiGHS option name.
HIGHS_OPTIONS: dict[str, str] = {
    "TimeLimit": "time_limit",
    "MIPGap": "mip_rel_gap",
    "MIPGapAbs": "mip_abs_gap",
    "Seed": "random_seed",
    "FeasibilityTol": "primal_feasibility_tolerance",
    "OptimalityTol": "dual_feasibility_tolerance",
    "IntFeasTol": "mip_feasibility_tolerance",
    "NodeLimit": "mip_max_nodes",
    "SolutionLimit": "mip_max_improving_sols",
    "IterationLimit": "simplex_iteration_limit",
}


#: Parameters applied to the solve's result by the layer itself (``_optimize``): how each is met.
SOLVE_RULES: dict[str, str] = {
    "Cutoff": "an optimum worse than the cutoff gives status CUTOFF and no solution",
    "BestObjStop": "solved to optimality (the optimum meets the stop; Gurobi may stop earlier)",
    "BestBdStop": "solved to optimality (the optimum meets the stop; Gurobi may stop earlier)",
    "LazyConstraints": "needed by cbLazy in the lazy-constraint loop",
    "ObjNumber": "selects the objective of the ObjN* attributes",
    "SolutionNumber": "selects the solution of Xn/PoolObjVal (only the best one is kept)",
}


def canonical_name(name: str) -> str:
    """Gurobi's spelling of parameter ``name``; ``GurobiError`` if there is no such parameter."""
    found = _CANONICAL.get(str(name).lower())
    if found is None:
        raise GurobiError(0, f"Unknown parameter '{name}'")
    return found


def _show(value: ParamValue) -> str:
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:g}"
    return str(value)


def _out_of_range(canonical: str, value: ParamValue, limit: str) -> GurobiError:
    return GurobiError(10008, f"Unable to set parameter {canonical} to value {_show(value)} ({limit})")


class ParamSet:
    """Parameter values of one environment or model: only non-default values are stored."""

    def __init__(self, values: dict[str, ParamValue] | None = None) -> None:
        self._values: dict[str, ParamValue] = dict(values or {})

    def copy(self) -> ParamSet:
        return ParamSet(self._values)

    def get(self, name: str) -> ParamValue:
        """Current value of parameter ``name`` (its default unless set)."""
        canonical = canonical_name(name)
        if canonical in self._values:
            return self._values[canonical]
        return PARAMS[canonical][3]

    def set(self, name: str, value: object) -> tuple[str, ParamValue]:
        """Set ``name`` to ``value`` after Gurobi's type and range checks.

        Returns ``(canonical name, stored value)``. Raises ``GurobiError`` (errno 10008) when the
        value is outside the parameter's range or of the wrong type.
        """
        canonical = canonical_name(name)
        kind, low, high, default = PARAMS[canonical]
        converted = self._convert(canonical, kind, value)
        if kind is not str:
            assert isinstance(low, (int, float)) and isinstance(high, (int, float))
            assert isinstance(converted, (int, float))
            if converted < low:
                raise _out_of_range(canonical, converted, f"minimum is {_show(low)}")
            if converted > high:
                raise _out_of_range(canonical, converted, f"maximum is {_show(high)}")
        if converted == default:
            self._values.pop(canonical, None)
        else:
            self._values[canonical] = converted
        return canonical, converted

    @staticmethod
    def _convert(canonical: str, kind: type, value: object) -> ParamValue:
        if kind is str:
            return str(value)
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise GurobiError(10008, f"Unable to set parameter {canonical} to value {value!r}") from None
        if kind is int:
            if not number.is_integer():
                raise GurobiError(
                    10008, f"Unable to set parameter {canonical} to value {value!r} (not an integer)"
                )
            return int(number)
        return number

    def reset(self) -> None:
        self._values.clear()

    def changed(self) -> dict[str, ParamValue]:
        """The parameters set away from their default, in the order they were set."""
        return dict(self._values)

    def describe(self) -> str:
        """``"No parameter changes"`` or ``"Parameter changes: A=1, B=2"`` (as gurobipy's repr)."""
        if not self._values:
            return "No parameter changes"
        return "Parameter changes: " + ", ".join(f"{k}={_show(v)}" for k, v in self._values.items())

    def logging_on(self) -> bool:
        """Whether Gurobi would print to the console (``OutputFlag`` and ``LogToConsole``)."""
        return bool(self.get("OutputFlag")) and bool(self.get("LogToConsole"))


def announce(params: ParamSet, canonical: str, value: ParamValue) -> None:
    """Print gurobipy's ``Set parameter X to value Y`` line when console output is on."""
    if params.logging_on():
        print(f"Set parameter {canonical} to value {_show(value)}")


class ParamsProxy:
    """``model.Params`` / ``env.Params``: parameters as case-insensitive attributes."""

    __slots__ = ("_apply", "_params")
    _params: ParamSet
    _apply: Callable[[str, object], None]

    def __init__(self, params: ParamSet, apply: Callable[[str, object], None]) -> None:
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_apply", apply)

    def __getattr__(self, name: str) -> ParamValue:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._params.get(name)
        except GurobiError:
            raise AttributeError(f"No parameter named '{name}'") from None

    def __setattr__(self, name: str, value: object) -> None:
        self._apply(name, value)

    def __repr__(self) -> str:
        return f"<gurobipy.Params: {self._params.describe()}>"
