"""What every re-solver shares: its verdict (:class:`Resolve`), its refusals (:class:`Unsolvable`,
:class:`OutOfTime`), the clock one re-solve runs against (:class:`Deadline`) and how a row becomes
constraints in the solvers that take one side at a time (:func:`row_sides`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..records import SolveStatus

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
    """The harness's verdict on a model: normalised status, objective, raw status, solver name,
    and ``cpu_s``, the CPU seconds its re-solve took in a verifier process (0 where not measured):
    what a diagnosis charges to its budget for it, also when the verdict came from the memo (so
    that a diagnosis does not depend on what other samples solved first). ``stored``: the
    verdict was read from the persistent store of re-solve results (:mod:`.store`), not solved
    by this process."""

    status: SolveStatus
    objective: float | None
    raw_status: str
    solver: str = "highs"
    cpu_s: float = 0.0
    stored: bool = False


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
    """The clock of one re-solve: ``limit_s`` seconds from construction, for the build and the
    solve together. The build checks it between bounded steps (a row, a chunk of terms), so a
    re-solve overruns its limit by at most one such step (or one solver call that takes whole
    arrays, linear in a size a cap bounds); the solver gets what is left (:meth:`solver_limit`).

    The plain deadline counts wall-clock seconds (monotonic): what a library caller of
    :func:`~.highs.resolve_with_highs` asks for. The harness's own re-solves count CPU seconds
    instead (:class:`CpuDeadline`), which machine load does not stretch."""

    unit = "s"
    """How :meth:`check`'s message names the limit's unit."""

    def __init__(self, limit_s: float, *, spent_s: float = 0.0) -> None:
        """``spent_s``: seconds of the limit already used elsewhere (by the harness's thread that
        read the model, for a verifier's deadline), so messages name the whole limit."""
        self.limit_s = float(limit_s)
        self.started = self._now() - spent_s

    def _now(self) -> float:
        return time.monotonic()

    def spent(self) -> float:
        """Seconds of this deadline's clock since construction."""
        return self._now() - self.started

    def remaining(self) -> float:
        """Seconds left (negative once past the limit)."""
        return self.limit_s - self.spent()

    def check(self, doing: str, solver: str | None = None) -> None:
        """Return while time is left; raise :class:`OutOfTime` naming ``doing`` once it is not.

        Raises:
            OutOfTime: the limit has passed.
        """
        if self.remaining() <= 0.0:
            raise OutOfTime(
                f"{doing} ran past the re-solve's {self.limit_s:.3g} {self.unit} time limit "
                f"({self.spent():.3g} {self.unit} spent)",
                solver,
            )

    def solver_limit(self, solver: str) -> float:
        """The seconds to hand ``solver`` as its own time limit: what is left, once the build is
        done.

        Raises:
            OutOfTime: nothing is left (the build used it all).
        """
        self.check(f"building the {solver} model", solver)
        return self.remaining()


class CpuDeadline(Deadline):
    """A deadline in CPU seconds of the calling process (every thread of it, solver threads
    included): the clock of a re-solve in a verifier process, which does nothing else, so the
    count is the re-solve's own work and a loaded machine does not stretch it the way it
    stretches wall time (contention still adds some: see :data:`~.lanes.CPU_BUDGET_MARGIN`).

    The solvers' own time limits count wall-clock seconds, which load does stretch, so a solver
    is handed :data:`SOLVER_WALL_S` instead of what is left: what stops a solve is the process's
    CPU limit (``RLIMIT_CPU``, which the verifier process sets to the same budget before each
    re-solve, :mod:`.worker`), never the solver's clock."""

    unit = "CPU s"

    def _now(self) -> float:
        return time.process_time()

    def solver_limit(self, solver: str) -> float:
        """:data:`SOLVER_WALL_S`, once the build has left time for a solve.

        Raises:
            OutOfTime: nothing is left (the build used it all).
        """
        self.check(f"building the {solver} model", solver)
        return SOLVER_WALL_S


class ThreadCpuDeadline(Deadline):
    """A deadline in CPU seconds of the calling thread: the harness's own share of a re-solve
    (reading the captured model into a view), which runs on one of its threads beside others;
    what is left of it becomes the verifier process's budget."""

    unit = "CPU s"

    def _now(self) -> float:
        return time.thread_time()


SOLVER_WALL_S = 1e7
"""The wall-clock limit a solver is handed under a :class:`CpuDeadline`: none in effect (finite,
as SCIP wants one), since the process's CPU limit ends a solve that runs out of budget."""


def row_sides(low: float, high: float) -> list[tuple[str, float]]:
    """The constraints a row ``low <= a'x <= high`` becomes, as (sense, value) pairs: one ``=``
    where its bounds meet at a finite value, else a ``<`` and a ``>`` for each finite side. An
    equality at an infinite value (a capture's ``= 1e20``) is a free row, as HiGHS reads it, not
    an infeasible equation."""
    if low == high and math.isfinite(low):
        return [("=", low)]
    return [(sense, value) for sense, value in (("<", high), (">", low)) if math.isfinite(value)]
