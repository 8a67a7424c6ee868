"""The exceptions of the layer and the ``needs_gurobi`` contract.

Three kinds of failure, each a different class so that the sandbox can tell them apart:

``GurobiError``
    What real gurobipy raises for the same misuse (unknown parameter, bad value, ...); same
    class name, ``errno`` and message wherever the layer reproduces the case.
``NeedsGurobiError`` (a ``GurobiError``, ``errno`` :data:`NEEDS_GUROBI_ERRNO`)
    The model is valid gurobipy but HiGHS cannot solve it exactly: non-convex quadratic
    objective, quadratic constraints, integer variables with a quadratic objective, SOS or
    general constraints. Raised by ``Model.optimize``; the model keeps status ``LOADED``.
    The sandbox maps it to ``ExecStatus.NEEDS_GUROBI``. It is also recorded in
    :data:`NEEDS_GUROBI_EVENTS`, so a program that catches the exception still reports it.
``CompatNotImplementedError`` (a ``NotImplementedError``)
    The program uses a real gurobipy API that this layer does not emulate (callbacks, IIS,
    multi-objective, matrix API, nonlinear expressions, ...). The message names the API.
    Names that real gurobipy does not have either raise ``AttributeError`` exactly as there.
"""

from __future__ import annotations

#: ``errno`` of :class:`NeedsGurobiError`; Gurobi's own ``GRB.Error.NOT_SUPPORTED`` value, which
#: real gurobipy uses for "this build cannot do that".
NEEDS_GUROBI_ERRNO = 10024

#: Every ``NeedsGurobiError`` raised in this process, oldest first, as its message. Read by the
#: sandbox after the program ends; a program catching the exception cannot hide it.
NEEDS_GUROBI_EVENTS: list[str] = []


class GurobiError(Exception):
    """Error raised by gurobipy calls; ``errno`` is Gurobi's error code (0 when none applies)."""

    def __init__(self, errno: int, message: str) -> None:
        super().__init__(message)
        self.errno = errno
        self.message = message

    def __str__(self) -> str:
        return self.message


class NeedsGurobiError(GurobiError):
    """The model needs real Gurobi to be solved (see the module docstring for when)."""

    #: Marker the sandbox may test instead of the class (``getattr(exc, "needs_gurobi", False)``).
    needs_gurobi = True

    def __init__(self, reason: str) -> None:
        super().__init__(
            NEEDS_GUROBI_ERRNO,
            f"gurobipy_highs cannot solve this model with HiGHS: {reason}; it needs real Gurobi",
        )
        self.reason = reason
        NEEDS_GUROBI_EVENTS.append(self.message)


class CompatNotImplementedError(NotImplementedError):
    """A real gurobipy API that the layer does not implement; ``api`` names it."""

    def __init__(self, api: str, detail: str = "") -> None:
        message = f"gurobipy_highs does not implement {api}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)
        self.api = api


def no_attribute(owner: str, name: str) -> AttributeError:
    """The ``AttributeError`` real gurobipy raises for a name its ``owner`` class lacks."""
    return AttributeError(f"'gurobipy.{owner}' object has no attribute '{name}'")


def invalid_argument(message: str) -> GurobiError:
    """``GurobiError`` with Gurobi's INVALID_ARGUMENT code (10003)."""
    return GurobiError(10003, message)
