"""``Env`` and the module-level parameter functions (``setParam``, ``resetParams``, ...).

There is no licence to check: every environment starts at once and never expires. An
environment only carries parameter values, which a ``Model`` copies when it is created.
"""

from __future__ import annotations

from types import TracebackType

from ._errors import CompatNotImplementedError, no_attribute
from ._facts import CLASS_NAMES, PARAMS
from ._params import ParamSet, ParamsProxy, ParamValue, announce, canonical_name


class Env:
    """A Gurobi environment: parameter defaults for the models created with it.

    ``Env(logfilename="", empty=False, params=None)``; ``params`` is a dict of parameter values
    (gurobipy's way of passing licence keys — accepted and stored like any parameter).
    """

    def __init__(
        self, logfilename: str = "", empty: bool = False, params: dict[str, object] | None = None
    ) -> None:
        self._params = ParamSet()
        self._started = not empty
        if logfilename:
            self._params.set("LogFile", logfilename)
        for name, value in (params or {}).items():
            self._params.set(name, value)

    @property
    def Params(self) -> ParamsProxy:
        return ParamsProxy(self._params, self.setParam)

    def setParam(self, paramname: str, newval: object) -> None:
        """Set a parameter for models created from now on with this environment."""
        canonical, value = self._params.set(paramname, newval)
        announce(self._params, canonical, value)

    def getParam(self, paramname: str) -> ParamValue:
        return self._params.get(paramname)

    def resetParams(self) -> None:
        self._params.reset()

    def start(self) -> Env:
        """Start an environment created with ``empty=True`` (always succeeds: no licence)."""
        self._started = True
        return self

    def dispose(self) -> None:
        """Release the environment (nothing to release here)."""

    close = dispose

    def __enter__(self) -> Env:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.dispose()

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in CLASS_NAMES["Env"]:
            raise CompatNotImplementedError(f"Env.{name}")
        raise no_attribute("Env", name)

    def __repr__(self) -> str:
        return f"<gurobipy.Env, {self._params.describe()}>"


_DEFAULT_ENV = Env()


def default_env() -> Env:
    """The environment a ``Model`` uses when none is given."""
    return _DEFAULT_ENV


def setParam(paramname: str, newvalue: object) -> None:
    """Set a parameter of the default environment (affects models created afterwards)."""
    _DEFAULT_ENV.setParam(paramname, newvalue)


def resetParams() -> None:
    """Reset every parameter of the default environment to its default value."""
    _DEFAULT_ENV.resetParams()


def disposeDefaultEnv() -> None:
    """Forget the default environment's parameter changes (gurobipy releases its licence)."""
    _DEFAULT_ENV.resetParams()


def getParamInfo(paramname: str) -> tuple[str, type, ParamValue, ParamValue, ParamValue, ParamValue]:
    """``(name, type, current value, minimum, maximum, default)`` in the default environment."""
    return param_info(_DEFAULT_ENV._params, paramname)


def param_info(
    params: ParamSet, paramname: str
) -> tuple[str, type, ParamValue, ParamValue, ParamValue, ParamValue]:
    canonical = canonical_name(paramname)
    kind, low, high, default = PARAMS[canonical]
    return canonical, kind, params.get(canonical), low, high, default
