"""Sandboxed execution of untrusted solver programs.

::

    with SandboxPool(limits=SandboxLimits(wall_s=30)) as pool:
        execution = pool.run(Job(code=program.code, files=problem.instance_files))

Each program runs in a fresh process forked from a warm worker that has already imported the
solver libraries, inside the strongest isolation the machine allows (see :mod:`.isolation`),
with a scrubbed environment, one thread per solver, resource limits, and everything it started
killed when it ends. Hooks inside the sandbox record every solve (status, objective, matrix);
those records are claims, which :mod:`.verify` checks by re-solving the captured model in the
harness process (the pool does it after each job unless ``verify=False``; a run leaves it to its
grading step).
"""

from __future__ import annotations

from .isolation import IsolationReport, probe_isolation
from .job import PROGRAM_FILE, WORKDIR_TOKEN, Job
from .licence import LicenceReport, SolverLicence, licence_preflight
from .limits import SandboxLimits
from .pool import DEFAULT_PRELOAD, DEFAULT_WARMABLE, SandboxPool
from .verify import verify_solve
from .verify import warm_up as warm_up_verification

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
    "verify_solve",
    "warm_up_verification",
]
