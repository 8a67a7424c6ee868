"""Names the harness and the sandbox runtime must agree on (imported by both sides)."""

from __future__ import annotations

import json
from typing import NamedTuple

WORKDIR_TOKEN = "@@TREX_WORKDIR@@"
"""Replaced in a program's text by the absolute working directory just before it runs."""

PROGRAM_FILE = "program.py"
"""File name of the program inside its working directory (its ``__file__``)."""

SETUP_FAILED_EXIT = 120
"""Exit status of a job whose confinement failed before any program code ran."""

JOB_DIR = "job"
TMP_DIR = "tmp"
"""The job's working and temporary directories, under the worker's scratch directory: the same
names for every job (where each job gets a fresh ``/tmp``, so nothing of a path tells one job
from another or says how many ran before it)."""

JOB_PROC_DIR = "/tmp/.proc"
"""Under bubblewrap ``/proc`` is a symbolic link to this directory of the private ``/tmp`` (see
``WorkerConfig.proc_dir``): the worker's ``/proc`` is mounted there, and each job's over it in
the job's own ``/tmp``."""

STARVED_FACTOR = 3.0
STARVED_SLACK_S = 30.0
"""A job that has not used up its wall-clock limit (which does not count time it was starved of
CPU, see ``runtime.supervise``) is still stopped ``STARVED_FACTOR * wall_s + STARVED_SLACK_S``
seconds after it started (``killed_for="starved"``): the machine, not the program, is the
problem then, and the harness must not wait without end."""


def real_time_cap_s(wall_s: float) -> float:
    """Seconds of real time after which a job is stopped whatever it was charged (see above)."""
    return STARVED_FACTOR * wall_s + STARVED_SLACK_S


class JobOrder(NamedTuple):
    """What the supervisor sends a job forked ahead when its request comes (the job already holds
    its output files and result channel, made by the zygote): its nonce, its limits
    (``trex_eval.sandbox.SandboxLimits``; ``allowance_bytes`` is added to the zygote's address
    space for ``RLIMIT_AS``, ``nproc_limit`` None where the kernel would not enforce it) and its
    gurobipy mode (``"real"`` or ``"highs"``).

    Sent as its fields' text joined by NUL bytes, not JSON: decoding JSON in the forked job copied
    ~30 of the zygote's pages (each write to a page the job shares with the zygote is a fault).
    """

    nonce: str
    cpu_s: float
    allowance_bytes: int
    file_size_mib: int
    nproc_limit: int | None
    gurobi: str

    def encode(self) -> bytes:
        return "\0".join("" if field is None else str(field) for field in self).encode()

    @classmethod
    def decode(cls, data: bytes) -> JobOrder:
        """The order :meth:`encode` wrote; ValueError if ``data`` is not one."""
        nonce, cpu_s, allowance, file_size, nproc, gurobi = data.decode().split("\0")
        return cls(nonce, float(cpu_s), int(allowance), int(file_size), int(nproc) if nproc else None, gurobi)


class WorkerConfig(NamedTuple):
    """Start-up settings sent by the harness (see ``trex_eval.sandbox.pool``).

    A named tuple, not a dataclass: ``dataclasses`` pulls ``inspect`` and a dozen more modules
    into every worker, and every module a worker holds makes each of its forks dearer.

    Attributes:
        preload: modules to import before serving.
        scratch: directory for the jobs' working and temporary directories.
        wipe: directories emptied after every job (the private ``/tmp``, ``/dev/shm``).
        keep: entries of those directories that are not emptied (read-only binds of the
            interpreter when it lives under ``/tmp``).
        job_uid: unprivileged uid to run jobs under (only honoured as root, and only if it can
            read the interpreter).
        parent_pid: when set, die with that parent (no other mechanism does it at this level).
        allow_user_namespace: may create a user namespace to get per-job PID namespaces.
        highs_package: folder of the gurobipy_highs layer (``highs`` jobs import it as ``gurobipy``).
        job_env: the environment of every program (``HOME``/``TMPDIR``/``PWD`` added per job).
        warmable: modules the worker imports itself once ``warm_after`` of its jobs' programs
            imported them, so that later forks get them already imported (see ``hooks.WARM_FIRST``).
        warm_after: number of jobs importing a module before the worker warms it.
        tmpfs_mib: MiB of size-capped private tmpfs every job can fill (``/tmp`` + ``/dev/shm``
            under bubblewrap; 0 elsewhere): taken off each job's address-space allowance, since
            tmpfs is memory (see ``SandboxLimits.memory_mib``).
        private_tmpfs: ``(path, MiB)`` tmpfs the worker mounts over ``path`` in its own mount
            namespace before it serves (``unshare`` level: ``/tmp`` of ``disk_mib``, ``/dev/shm``
            of ``SHM_MIB``, and ``/var/tmp`` with 0: empty and read-only), so that what jobs write
            there is bounded and private. Entries of ``/tmp`` that hold the interpreter or the
            runtime are bound back read-only (and kept by the wipe).
        read_only_host: make every mount of the worker's mount namespace read-only (but
            ``/proc``) once ``private_tmpfs`` is mounted and before any job exists (``unshare``
            level; only ever set where the worker has a mount namespace of its own): jobs then
            write only their fresh ``job_tmpfs``.
        disk_watch: directories whose file systems' free space the worker watches while a job
            runs (``rlimits`` level, where ``/tmp`` is the host's): a job that makes them lose
            more than ``disk_mib`` MiB in all is killed (``killed_for="disk"``).
        disk_mib: the pool's ``SandboxLimits.disk_mib``: the disk watch's budget, and a cap on
            every job's ``RLIMIT_FSIZE`` (0: no cap).
        job_tmpfs: ``(path, MiB)`` tmpfs the worker mounts anew over ``path`` for every job and
            unmounts after it (``bwrap`` and ``unshare``: ``/tmp`` of ``disk_mib`` holding the
            job's directories, ``/dev/shm`` of ``SHM_MIB``): a job finds nothing of an earlier
            one there, not even its inode numbers. Empty: the scratch directory is wiped instead.
        proc_dir: where ``/proc`` really is, inside the first ``job_tmpfs`` path, when ``/proc``
            is a symbolic link to it (``/tmp/.proc`` under bubblewrap; empty elsewhere). Each job
            mounts its own ``/proc`` there, in its fresh ``/tmp``, so detaching that ``/tmp``
            takes the job's ``/proc`` along: one detach, one kernel grace period, fewer per job.
        lanes: workers of the pool, for a job's fair share of the machine's CPUs (see
            ``runtime.supervise``).
        cpu_usage_fd: a descriptor open on the worker's own cgroup CPU counter (cgroup v1
            ``cpuacct.usage``, nanoseconds, or v2 ``cpu.stat``), passed by the harness; None where
            the harness has no cgroup for it (CPU is then summed over the job's processes).
        cpu_usage_format: ``"v1"`` or ``"v2"``: how to read ``cpu_usage_fd`` and ``memory_fds``.
        memory_fds: descriptors on the worker's cgroup memory usage (read), limit (write) and
            events (read), passed by the harness where its cgroup has the memory controller: the
            worker holds each job to ``memory_mib`` with them (see ``runtime.memory``). None: the
            job's memory is sampled instead.
    """

    preload: tuple[str, ...]
    scratch: str
    wipe: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    job_uid: int | None = None
    parent_pid: int | None = None
    allow_user_namespace: bool = True
    highs_package: str = ""
    job_env: dict[str, str] | None = None
    warmable: tuple[str, ...] = ()
    warm_after: int = 2
    tmpfs_mib: int = 0
    private_tmpfs: tuple[tuple[str, int], ...] = ()
    read_only_host: bool = False
    disk_watch: tuple[str, ...] = ()
    disk_mib: int = 0
    job_tmpfs: tuple[tuple[str, int], ...] = ()
    proc_dir: str = ""
    lanes: int = 1
    cpu_usage_fd: int | None = None
    cpu_usage_format: str = ""
    memory_fds: tuple[int, int, int] | None = None

    def to_json(self) -> str:
        return json.dumps(self._asdict())

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        """The config :meth:`to_json` wrote (JSON arrays become the tuples they were)."""
        fields = json.loads(text)
        for key, value in fields.items():
            if isinstance(value, list):
                fields[key] = tuple(tuple(item) if isinstance(item, list) else item for item in value)
        return cls(**fields)
