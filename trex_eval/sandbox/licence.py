"""Licence pre-flight for the commercial solver libraries programs may use.

gurobipy's pip wheel carries a size-limited licence that stops working on a fixed date
(13.0.3: 2027-11-29); coptpy runs size-limited without a licence file. Without a check, every
gurobipy program would fail once the licence lapses and be scored as wrong. The check runs the
libraries in a separate process (they print banners and may hold licence state).
"""

from __future__ import annotations

import datetime as dt
import glob
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..records import Record
from . import launch, start_facts

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
    remember: bool = False,
) -> LicenceReport:
    """Check gurobipy and coptpy licences in a separate process.

    ``extra_env`` is added to the scrubbed environment (e.g. ``GRB_LICENSE_FILE``). A probe that
    cannot run at all yields libraries marked not ok with the reason, never an exception. With
    neither library importable by this interpreter (``python`` left out) no process is started:
    both are reported not installed, as the probe would report them. ``remember``: keep the
    answer for :func:`remembered_preflight` (this interpreter's, where every library works).
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
    if remember and python is None:
        _remember(raw, extra_env or {}, checked_on)
    return LicenceReport(checked_on=checked_on, solvers=solvers)


_NETWORK_LICENCE = re.compile(
    rb"TOKENSERVER|WLSACCESSID|WLSSECRET|LICENSEID|CLOUDACCESSID|CSMANAGER|COMPUTESERVER", re.IGNORECASE
)
"""Words of a Gurobi licence file that names a server: whether it answers changes by the minute."""
_LICENCE_NAMES = ("gurobi.lic", "license.dat", "license.key", "client.ini")
_LICENCE_FILE_BYTES = 1 << 20


def remembered_preflight(
    *, extra_env: Mapping[str, str] | None = None, today: dt.date | None = None
) -> LicenceReport | None:
    """:func:`licence_preflight`'s report as an earlier command of this day remembered it
    (:mod:`.start_facts`), for the same interpreter, library versions, licence settings and
    licence files; None where there is none or the licence may change within the day (a server
    licence: a token server, WLS, Gurobi Cloud, a Compute Server, COPT's ``client.ini``)."""
    checked_on = today or dt.date.today()
    key = _remembered_key(extra_env or {}, checked_on)
    raw = None if key is None else start_facts.recall("licence", key)
    if not isinstance(raw, dict):
        return None
    return LicenceReport(
        checked_on=checked_on,
        solvers=tuple(solver_licence(name, raw.get(name) or {}, today=checked_on) for name in LIBRARIES),
    )


def _remembered_key(extra_env: Mapping[str, str], checked_on: dt.date) -> dict[str, Any] | None:
    """What a licence report depends on, or None where it may change within the day."""
    if any(word in name.upper() for name in extra_env for word in ("WLS", "TOKEN", "CLOUD", "SERVER")):
        return None
    paths = {
        *glob.glob("/opt/gurobi*/gurobi.lic"),
        os.path.expanduser("~/gurobi.lic"),
        *(os.path.join(os.getcwd(), name) for name in _LICENCE_NAMES),
    }
    for value in extra_env.values():
        if os.path.isdir(value):
            paths.update(os.path.join(value, name) for name in _LICENCE_NAMES)
        elif os.path.sep in value:
            paths.add(value)
    files = []
    for path in sorted(paths):
        try:
            with open(path, "rb") as file:
                data = file.read(_LICENCE_FILE_BYTES)
        except OSError:
            continue
        if os.path.basename(path) == "client.ini" or _NETWORK_LICENCE.search(data):
            return None
        files.append((path, hashlib.sha256(data).hexdigest()))
    return {
        "probe": hashlib.sha256((launch.RUNTIME_DIR / "licence.py").read_bytes()).hexdigest(),
        "python": os.path.realpath(sys.executable),
        "versions": {name: _installed_version(name) for name in LIBRARIES},
        "environment": sorted(extra_env.items()),
        "files": files,
        "date": checked_on.isoformat(),
        "host": socket.gethostname(),
        "uid": os.geteuid(),
    }


def _remember(raw: Mapping[str, Any], extra_env: Mapping[str, str], checked_on: dt.date) -> None:
    """Keep a probe's ``raw`` answer where every installed library works (a failure is looked at
    again by every command, so that a mended licence is seen at once)."""
    answers = [raw.get(name) or {} for name in LIBRARIES]
    if any(answer.get("installed") and (not answer.get("ok") or answer.get("error")) for answer in answers):
        return
    key = _remembered_key(extra_env, checked_on)
    if key is not None:
        start_facts.remember("licence", key, {name: raw.get(name) or {} for name in LIBRARIES})


def _installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _importable(name: str) -> bool:
    """Whether top-level module ``name`` can be found on this interpreter's path (nothing is
    imported; the probe runs ``python -I``, whose path is a part of this one's)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
