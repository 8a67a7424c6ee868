"""What a sandbox worker is started with at each isolation level (its ``WorkerConfig``)."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from ..records import SHM_MIB, SandboxLimits
from .cgroups import Lane, LaneDescriptors
from .isolation import IsolationReport
from .runtime.contract import JOB_PROC_DIR, WorkerConfig
from .scratch import _kept_under_tmp


@dataclass(frozen=True)
class WorkerSettings:
    """The pool's settings every worker shares (see :class:`~trex_eval.sandbox.SandboxPool`)."""

    limits: SandboxLimits
    lanes: int
    preload: tuple[str, ...]
    warmable: tuple[str, ...]
    highs_package: str
    environment: dict[str, str]


def worker_config(
    report: IsolationReport,
    settings: WorkerSettings,
    *,
    scratch: Callable[[], str],
    lane: Lane | None,
    descriptors: LaneDescriptors | None,
) -> WorkerConfig:
    """The configuration of one worker under ``report``'s level: ``scratch`` makes the worker's
    host scratch directory where one is needed (``rlimits``); ``lane`` is its cgroup (or None),
    ``descriptors`` those the worker inherits on that cgroup's files.

    ``bwrap`` and ``unshare`` workers mount a fresh, sized ``/tmp`` and ``/dev/shm`` for every job
    (``job_tmpfs``); under bubblewrap the sandbox's own private ``/tmp`` is the fallback (wiped
    after each job) should that fail, under ``unshare`` nothing is (the worker refuses to serve).
    ``unshare`` workers also make the whole host file system read-only in their mount namespace
    (``read_only_host``), and as root run each job under an unprivileged uid, as ``bwrap`` does.
    """
    in_bwrap = report.level == "bwrap"
    private = report.level == "unshare"
    disk_mib = settings.limits.disk_mib
    return WorkerConfig(
        preload=settings.preload,
        scratch="/tmp" if in_bwrap or private else scratch(),
        wipe=("/tmp", "/dev/shm") if in_bwrap else (),
        keep=tuple(_kept_under_tmp(report.command)) if in_bwrap else (),
        # Not root for the jobs either where the harness is: the host's /proc/sys and whatever the
        # read-only view leaves writable stay out of a job's reach.
        job_uid=(200_000 + secrets.randbelow(1 << 30))
        if (in_bwrap or private) and report.privileged
        else None,
        parent_pid=os.getpid() if report.level == "rlimits" else None,
        allow_user_namespace=report.level != "rlimits" or not report.privileged,
        highs_package=settings.highs_package,
        job_env=settings.environment,
        warmable=settings.warmable,
        tmpfs_mib=disk_mib + SHM_MIB if in_bwrap or private else 0,
        private_tmpfs=(("/var/tmp", 0),) if private else (),
        read_only_host=private,
        job_tmpfs=(("/tmp", disk_mib), ("/dev/shm", SHM_MIB)) if in_bwrap or private else (),
        proc_dir=JOB_PROC_DIR if in_bwrap else "",
        disk_watch=(tempfile.gettempdir(), "/tmp", "/dev/shm", "/var/tmp")
        if report.level == "rlimits"
        else (),
        disk_mib=disk_mib,
        lanes=settings.lanes,
        cpu_usage_fd=None if descriptors is None else descriptors.cpu,
        cpu_usage_format=lane.usage_format if lane is not None else "",
        memory_fds=None if descriptors is None else descriptors.memory,
    )
