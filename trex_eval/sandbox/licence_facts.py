"""The licence pre-flight's answer (:mod:`.licence`), remembered for the day (:mod:`.start_facts`).

The answer is kept under what it depends on: the interpreter, gurobipy's and coptpy's versions,
the licence variables programs are given, the contents of the licence files gurobipy and COPT
would read (``GRB_LICENSE_FILE`` and ``COPT_LICENSE_DIR`` as given, ``/opt/gurobi*``, the home
folder, the working folder), the probe's source, the day, the host and the user. It is kept only
where every installed library works, and never for a licence that names a server (a token
server, WLS, Gurobi Cloud, a Compute Server, COPT's ``client.ini``), whose answer may change
within the minute. Nothing here raises: anything unexpected is a miss.
"""

from __future__ import annotations

import datetime as dt
import glob
import hashlib
import importlib.metadata
import os
import re
import socket
import stat
import sys
from collections.abc import Mapping
from typing import Any

from . import launch, start_facts
from .licence import LIBRARIES, LicenceReport, solver_licence

KIND = "licence"
_NETWORK_LICENCE = re.compile(
    rb"TOKENSERVER|WLSACCESSID|WLSSECRET|LICENSEID|CLOUDACCESSID|CSMANAGER|COMPUTESERVER", re.IGNORECASE
)
"""Words of a Gurobi licence file that names a server."""
_NETWORK_VARIABLES = ("WLS", "TOKEN", "CLOUD", "SERVER")
_LICENCE_NAMES = ("gurobi.lic", "license.dat", "license.key", "client.ini")
_LICENCE_FILE_BYTES = 1 << 20


def remembered_preflight(
    *, extra_env: Mapping[str, str] | None = None, today: dt.date | None = None
) -> LicenceReport | None:
    """The report an earlier command of this day remembered for the same inputs (see the module
    docstring), or None. Only a report :func:`remember_preflight` would keep is believed: every
    installed library working, each field of its type."""
    checked_on = today or dt.date.today()
    try:
        key = _key(extra_env or {}, checked_on)
        raw = None if key is None else start_facts.recall(KIND, key)
        if not isinstance(raw, dict) or not all(_working(raw.get(name)) for name in LIBRARIES):
            return None
        solvers = tuple(solver_licence(name, raw[name], today=checked_on) for name in LIBRARIES)
        return LicenceReport(checked_on=checked_on, solvers=solvers)
    except Exception:  # a file only this user can write, but still no reason to stop a run
        return None


def remember_preflight(report: LicenceReport, *, extra_env: Mapping[str, str] | None = None) -> None:
    """Keep ``report`` (the pre-flight's, of this interpreter) where every installed library
    works; a failure is looked at again by every command, so that a mended licence is seen at
    once."""
    raw = {
        solver.library: {
            "installed": solver.installed,
            "version": solver.version,
            "ok": solver.ok,
            "expires": solver.expires.isoformat() if solver.expires else None,
            "size_limited": solver.size_limited,
            "error": solver.error,
        }
        for solver in report.solvers
    }
    if not all(_working(raw.get(name)) for name in LIBRARIES):
        return
    try:
        key = _key(extra_env or {}, report.checked_on)
    except Exception:
        return
    if key is not None:
        start_facts.remember(KIND, key, raw)


def _working(answer: object) -> bool:
    """Whether ``answer`` is one library's well-formed answer: not installed, or working."""
    if not isinstance(answer, dict) or not isinstance(answer.get("installed"), bool):
        return False
    if not answer["installed"]:
        return True
    expires = answer.get("expires")
    if expires is not None:
        if not isinstance(expires, str):
            return False
        dt.date.fromisoformat(expires)  # ValueError: the caller's miss
    return (
        answer.get("ok") is True
        and answer.get("error") is None
        and isinstance(answer.get("version"), (str, type(None)))
        and isinstance(answer.get("size_limited"), (bool, type(None)))
    )


def _key(extra_env: Mapping[str, str], checked_on: dt.date) -> dict[str, Any] | None:
    """What a licence report depends on, or None where it may change within the day.

    Raises:
        OSError: a folder or file the key needs cannot be read (the caller's miss).
    """
    if any(word in name.upper() for name in extra_env for word in _NETWORK_VARIABLES):
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
        data = _licence_file(path)
        if data is None:
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


def _licence_file(path: str) -> bytes | None:
    """The first MiB of the regular file ``path``, or None where there is none; opened without
    blocking (a FIFO named by a variable must not hold the pool's start).

    Raises:
        OSError: ``path`` is something other than a regular file (no key can name its contents).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, _LICENCE_FILE_BYTES)
    finally:
        os.close(fd)


def _installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
