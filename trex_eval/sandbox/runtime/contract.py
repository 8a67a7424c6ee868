"""Names the harness and the sandbox runtime must agree on (imported by both sides)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

PROTOCOL = 1
"""Version of what a worker and the harness exchange (the ``ready`` message, the requests,
:class:`JobReply`). A worker's ``ready`` says it; the harness refuses a worker that says another
(one started from a trex-eval changed on disk under a running harness, which loads the runtime
afresh for every worker it starts). Raise it with any change to those messages' fields."""

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


KILL_REASONS = frozenset({"wall", "cpu", "output", "disk", "processes", "memory", "starved"})
"""What a worker may stop a job for (``JobReply.killed_for``; see ``runtime.supervise``)."""


class CollectedFile(NamedTuple):
    """A file of a job's working directory that matched the job's ``collect`` patterns: its path
    relative to that directory, its whole size in bytes, and its first bytes (``truncated`` when
    fewer than ``size``: cut to the job's file-size limit and model-file budget)."""

    name: str
    size: int
    truncated: bool
    content: bytes


class JobReply(NamedTuple):
    """A worker's answer to one job request: written by ``runtime.server``, read by the harness
    (``sandbox.worker`` decodes it, ``sandbox.pool`` and ``sandbox.outcome`` act on it).

    Of one of four kinds: ``not_run`` (the worker ran nothing, as it could not undo the previous
    job's traces: the pool runs the job on another worker); ``lost`` (why the worker's zygote
    went away while the job ran: the job is ``killed``); ``error`` (the worker failed to run the
    job: a harness failure, raised); else the job ran, and the other fields say how it ended.
    ``retire`` (why), on any kind: the worker stops after this reply.

    Attributes:
        id: the request's ``id``.
        exit_code, signal: how the job's process ended (one of them None).
        started: whether the job reached the program (the worker's word, not a record's).
        killed_for: what the worker stopped it for (one of :data:`KILL_REASONS`), else None.
        wall_s: wall-clock seconds charged (less time starved of CPU); ``starved_s``: seconds
            starved of its share of CPU; ``cpu_received_s``: CPU seconds the watch charged it
            (None where not measured); ``cpu_s``: CPU seconds of its reaped processes (rusage).
        max_rss_kib: peak resident memory of its largest process, KiB.
        stdout, stderr: the last ``output_bytes`` of each, raw; ``stdout_bytes``,
            ``stderr_bytes``: their whole sizes.
        channel: the result channel's bytes, raw; ``channel_dropped``: bytes left out of its
            middle (over twice the record budget).
        files: the collected model files, oldest first; ``files_dropped``,
            ``files_dropped_bytes``: those left out for the budget.

    The output, the channel and the files' names and contents are the program's to write, read
    only as claims. On the wire (``runtime.framing``) the bytes are byte fields (``file:<i>``
    for the i-th file's content) and the rest JSON; :meth:`decode` takes nothing else.
    """

    id: str
    exit_code: int | None = None
    signal: int | None = None
    started: bool = False
    killed_for: str | None = None
    wall_s: float = 0.0
    starved_s: float = 0.0
    cpu_received_s: float | None = None
    cpu_s: float | None = None
    max_rss_kib: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    channel: bytes = b""
    channel_dropped: int = 0
    files: tuple[CollectedFile, ...] = ()
    files_dropped: int = 0
    files_dropped_bytes: int = 0
    not_run: bool = False
    lost: str | None = None
    error: str | None = None
    retire: str | None = None

    def encode(self) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The frame's JSON object and byte fields: ``framing.write_frame(fd, *reply.encode())``."""
        message = {name: getattr(self, name) for name in _REPLY_FIELDS}
        message["files"] = [
            {"name": item.name, "size": item.size, "truncated": item.truncated} for item in self.files
        ]
        blobs = {name: getattr(self, name) for name in _REPLY_BLOBS}
        blobs.update((f"file:{index}", item.content) for index, item in enumerate(self.files))
        return message, blobs

    @classmethod
    def decode(cls, message: dict[str, Any]) -> JobReply:
        """The reply :meth:`encode` wrote, as ``framing`` reads it back. ValueError, naming the
        field, for a field missing, unknown or not of its type (a bool is no int; numbers are
        finite and not negative): the harness acts on no field it did not check."""
        listed = message.get("files")
        if type(listed) is not list:
            raise ValueError("field 'files' is not a list")
        contents = [f"file:{index}" for index in range(len(listed))]
        expected = {*_REPLY_FIELDS, *_REPLY_BLOBS, "files", *contents}
        if set(message) != expected:
            missing, unknown = sorted(expected - set(message)), sorted(set(message) - expected)
            raise ValueError(f"fields missing {missing[:3]}, unknown {[name[:40] for name in unknown[:3]]}")
        fields = {name: _checked(name, message[name], kind) for name, kind in _REPLY_FIELDS.items()}
        if fields["killed_for"] is not None and fields["killed_for"] not in KILL_REASONS:
            raise ValueError(
                f"field 'killed_for' is {fields['killed_for'][:40]!r}, not one of {sorted(KILL_REASONS)}"
            )
        for name in (*_REPLY_BLOBS, *contents):
            if type(message[name]) is not bytes:
                raise ValueError(f"field {name!r} is not a byte field")
        files = tuple(_collected(index, item, message[f"file:{index}"]) for index, item in enumerate(listed))
        return cls(**fields, **{name: message[name] for name in _REPLY_BLOBS}, files=files)


_REPLY_FIELDS: dict[str, tuple[type, bool]] = {
    "id": (str, False),
    "exit_code": (int, True),
    "signal": (int, True),
    "started": (bool, False),
    "killed_for": (str, True),
    "wall_s": (float, False),
    "starved_s": (float, False),
    "cpu_received_s": (float, True),
    "cpu_s": (float, True),
    "max_rss_kib": (int, True),
    "stdout_bytes": (int, False),
    "stderr_bytes": (int, False),
    "channel_dropped": (int, False),
    "files_dropped": (int, False),
    "files_dropped_bytes": (int, False),
    "not_run": (bool, False),
    "lost": (str, True),
    "error": (str, True),
    "retire": (str, True),
}
"""The JSON fields of a :class:`JobReply`: each one's type and whether it may be None."""
_REPLY_BLOBS = ("stdout", "stderr", "channel")


def _checked(name: str, value: object, kind: tuple[type, bool]) -> Any:
    """``value`` if it is of ``kind`` (type, may be None) and not negative (an int taken as a
    float where a float is expected; floats finite); ValueError naming ``name`` otherwise."""
    wanted, optional = kind
    if value is None and optional:
        return None
    if wanted is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if number - number == 0.0 and number >= 0.0:  # finite: inf - inf is NaN
            return number
    elif type(value) is wanted and not (isinstance(value, int) and value < 0):
        return value
    raise ValueError(f"field {name!r} is {type(value).__name__} {repr(value)[:40]}, not of its type")


def _collected(index: int, item: object, content: object) -> CollectedFile:
    """The ``index``-th collected file from its JSON entry and byte field; ValueError if malformed."""
    if type(item) is dict and set(item) == {"name", "size", "truncated"} and type(content) is bytes:
        name, size, truncated = item["name"], item["size"], item["truncated"]
        if type(name) is str and type(size) is int and size >= 0 and type(truncated) is bool:
            return CollectedFile(name, size, truncated, content)
    raise ValueError(f"collected file {index} is malformed")


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
