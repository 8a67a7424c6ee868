"""What every re-solver shares: its verdict (:class:`Resolve`), its refusals (:class:`Unsolvable`,
:class:`OutOfTime`), the clock one re-solve runs against (:class:`Deadline`) and how a row becomes
constraints in the solvers that take one side at a time (:func:`row_sides`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ...records import SolveStatus

MIP_GAP = 1e-6
"""Relative MIP gap of the parent's re-solves: the parent's objective is then within 1e-6 of the
true optimum, far inside the agreement tolerance (a 1e-4 gap changed no verdict here and did not
rescue the MILPs that time out, LogiOR prob_015 and prob_019)."""

BUILD_STEP = 4096
"""Entries (columns, terms) a re-solve's Python-level build handles between two looks at its
:class:`Deadline`: small enough that a step takes milliseconds, large enough that the clock is
not the cost."""


@dataclass(frozen=True)
class Resolve:
    """The parent's verdict on a model: normalised status, objective, raw status, solver name."""

    status: SolveStatus
    objective: float | None
    raw_status: str
    solver: str = "highs"


class Unsolvable(Exception):
    """The parent has no solver for this model; the message says why (a "skipped" reason)."""


class OutOfTime(Unsolvable):
    """The re-solve's time limit ran out before a solver could be given any of it (building the
    model, checking convexity, waiting for another thread's solve of the same model). Unlike a
    plain :class:`Unsolvable`, it ends the re-solve: the next solver of the list would find no
    time left either. ``solver`` names the solver being prepared, where there was one."""

    def __init__(self, message: str, solver: str | None = None) -> None:
        super().__init__(message)
        self.solver = solver


class Deadline:
    """The wall clock of one re-solve: ``limit_s`` seconds (monotonic) from construction, for the
    build and the solve together. The build checks it between bounded steps (a row, a chunk of
    terms), so a re-solve overruns its limit by at most one such step (or one solver call
    that takes whole arrays, linear in a size a cap bounds); the solver gets what is
    left (:meth:`solver_limit`)."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = float(limit_s)
        self.started = time.monotonic()

    def remaining(self) -> float:
        """Seconds left (negative once past the limit)."""
        return self.limit_s - (time.monotonic() - self.started)

    def check(self, doing: str, solver: str | None = None) -> None:
        """Return while time is left; raise :class:`OutOfTime` naming ``doing`` once it is not.

        Raises:
            OutOfTime: the limit has passed.
        """
        if self.remaining() <= 0.0:
            spent = time.monotonic() - self.started
            raise OutOfTime(
                f"{doing} ran past the re-solve's {self.limit_s:.3g} s time limit ({spent:.3g} s spent)",
                solver,
            )

    def solver_limit(self, solver: str) -> float:
        """The seconds to hand ``solver`` for its run: what is left, once the build is done.

        Raises:
            OutOfTime: nothing is left (the build used it all).
        """
        self.check(f"building the {solver} model", solver)
        return self.remaining()


def row_sides(low: float, high: float) -> list[tuple[str, float]]:
    """The constraints a row ``low <= a'x <= high`` becomes, as (sense, value) pairs: one ``=``
    where its bounds meet at a finite value, else a ``<`` and a ``>`` for each finite side. An
    equality at an infinite value (a capture's ``= 1e20``) is a free row, as HiGHS reads it, not
    an infeasible equation."""
    if low == high and math.isfinite(low):
        return [("=", low)]
    return [(sense, value) for sense, value in (("<", high), (">", low)) if math.isfinite(value)]
