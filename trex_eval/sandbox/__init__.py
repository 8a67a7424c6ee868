"""Sandboxed execution of untrusted solver programs.

::

    with SandboxPool(limits=SandboxLimits(wall_s=30)) as pool:
        execution = pool.run(Job(code=program.code, files=problem.instance_files))

Each program runs in a fresh process forked from a warm worker that has already imported the
solver libraries, inside the strongest isolation the machine allows (see :mod:`.isolation`),
with a scrubbed environment, one thread per solver, resource limits, and everything it started
killed when it ends. Hooks inside the sandbox record every solve (status, objective, matrix);
those records are claims, which :mod:`trex_eval.verify` checks by re-solving the captured model
in a verifier process of the harness's own (the grading step does it, only where a verdict
depends on it). The sandbox runs programs; it never verifies.

``Job`` and ``SandboxLimits`` load without the pool: the pool, isolation and licence modules are
imported on first use of their names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .job import PROGRAM_FILE, WORKDIR_TOKEN, Job
from .limits import SandboxLimits

if TYPE_CHECKING:
    from .isolation import IsolationReport, probe_isolation
    from .licence import LicenceReport, SolverLicence, licence_preflight
    from .pool import DEFAULT_PRELOAD, DEFAULT_WARMABLE, SandboxPool

_LAZY = {
    "IsolationReport": ".isolation",
    "probe_isolation": ".isolation",
    "LicenceReport": ".licence",
    "SolverLicence": ".licence",
    "licence_preflight": ".licence",
    "DEFAULT_PRELOAD": ".pool",
    "DEFAULT_WARMABLE": ".pool",
    "SandboxPool": ".pool",
}

__all__ = [
    "DEFAULT_PRELOAD",
    "DEFAULT_WARMABLE",
    "PROGRAM_FILE",
    "WORKDIR_TOKEN",
    "IsolationReport",
    "Job",
    "LicenceReport",
    "SandboxLimits",
    "SandboxPool",
    "SolverLicence",
    "licence_preflight",
    "probe_isolation",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
