"""Licence pre-flight for the commercial solver libraries programs may use.

gurobipy's pip wheel carries a size-limited licence that stops working on a fixed date
(13.0.3: 2027-11-29); coptpy runs size-limited without a licence file. Without a check, every
gurobipy program would fail once the licence lapses and be scored as wrong. The check runs the
libraries in a separate process (they print banners and may hold licence state).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import subprocess
from collections.abc import Mapping

from pydantic import Field

from ..records import Record
from . import launch

WARN_DAYS = 30
"""A licence expiring within this many days produces a warning."""
LIBRARIES = ("gurobipy", "coptpy")
"""The libraries checked, in report order."""


class SolverLicence(Record):
    """Licence state of one solver library.

    Attributes:
        library: ``gurobipy`` or ``coptpy``.
        installed: the library can be imported.
        version: installed version.
        ok: a model could be built and solved (small enough for any size limit).
        expires: licence expiry date, when the library reports one.
        days_left: days from ``today`` to ``expires`` (negative once expired).
        size_limited: a model with 2001 variables was refused as too large.
        warning: set when the licence expires within :data:`WARN_DAYS` days or has expired.
        error: why ``ok`` is False.
    """

    library: str
    installed: bool
    version: str | None = None
    ok: bool = False
    expires: dt.date | None = None
    days_left: int | None = None
    size_limited: bool | None = None
    warning: str | None = None
    error: str | None = None


class LicenceReport(Record):
    """Pre-flight result for every checked library (goes into the run manifest)."""

    checked_on: dt.date
    solvers: tuple[SolverLicence, ...] = Field(default_factory=tuple)

    def get(self, library: str) -> SolverLicence | None:
        return next((solver for solver in self.solvers if solver.library == library), None)

    @property
    def gurobipy_ok(self) -> bool:
        found = self.get("gurobipy")
        return bool(found and found.ok)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(solver.warning for solver in self.solvers if solver.warning)


def solver_licence(library: str, raw: Mapping[str, object], *, today: dt.date) -> SolverLicence:
    """Interpret the probe's raw answer for ``library`` as of ``today``. Pure."""
    expires_text = raw.get("expires")
    expires = dt.date.fromisoformat(str(expires_text)) if expires_text else None
    days_left = (expires - today).days if expires else None
    warning = None
    if days_left is not None and days_left < 0:
        warning = f"{library} licence expired on {expires}"
    elif days_left is not None and days_left <= WARN_DAYS:
        warning = f"{library} licence expires in {days_left} days ({expires})"
    elif raw.get("installed") and not raw.get("ok"):
        warning = f"{library} cannot solve models: {raw.get('error')}"
    size = raw.get("size_limited")
    return SolverLicence(
        library=library,
        installed=bool(raw.get("installed")),
        version=str(raw["version"]) if raw.get("version") else None,
        ok=bool(raw.get("ok")),
        expires=expires,
        days_left=days_left,
        size_limited=size if isinstance(size, bool) else None,
        warning=warning,
        error=str(raw["error"]) if raw.get("error") else None,
    )


def licence_preflight(
    *,
    python: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
    today: dt.date | None = None,
) -> LicenceReport:
    """Check gurobipy and coptpy licences in a separate process.

    ``extra_env`` is added to the scrubbed environment (e.g. ``GRB_LICENSE_FILE``). A probe that
    cannot run at all yields libraries marked not ok with the reason, never an exception. With
    neither library importable by this interpreter (``python`` left out) no process is started:
    both are reported not installed, as the probe would report them.
    """
    checked_on = today or dt.date.today()
    if python is None and not any(_importable(name) for name in LIBRARIES):
        # The probe is a Python start-up (a fifth of a CPU second) that would find nothing.
        absent = {"installed": False}
        return LicenceReport(
            checked_on=checked_on,
            solvers=tuple(solver_licence(name, absent, today=checked_on) for name in LIBRARIES),
        )
    command = launch.runtime_command("licence", python=python)
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=launch.sandbox_environment(extra_env),
            stdin=subprocess.DEVNULL,
        )
        raw = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as error:
        failure = {"installed": True, "ok": False, "error": f"licence probe failed: {error}"[:500]}
        raw = {"gurobipy": failure, "coptpy": failure}
    solvers = tuple(solver_licence(name, raw.get(name, {}), today=checked_on) for name in LIBRARIES)
    return LicenceReport(checked_on=checked_on, solvers=solvers)


def _importable(name: str) -> bool:
    """Whether top-level module ``name`` can be found on this interpreter's path (nothing is
    imported; the probe runs ``python -I``, whose path is a part of this one's)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
