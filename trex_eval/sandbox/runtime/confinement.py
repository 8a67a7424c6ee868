"""Worker start-up: what the worker can do to confine each job, found out once before it serves.

It moves the protocol off fds 0/1, makes per-job PID namespaces possible (creating a user
namespace of its own if needed), checks that the configured job uid can read the interpreter,
and calibrates ``RLIMIT_NPROC`` against the processes the kernel already charges to that uid.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import sys

from . import native
from .contract import WorkerConfig
from .jobfs import bind_back, detach_down_to
from .processes import pin_proc


class Confinement:
    """What the worker found it can do for each job (reported in the ``ready`` message)."""

    def __init__(self) -> None:
        self.pid_namespace_fd: int | None = None
        self.job_uid: int | None = None
        self.nproc_base: int | None = None
        self.notes: list[str] = []
        self.kept: tuple[str, ...] = ()
        """Entries of a private ``/tmp`` bound back from the host (the wipe leaves them alone)."""
        self.own_proc: str | None = None
        """Options of the ``/proc`` each job mounts for itself, or None (see :func:`probe_own_proc`)."""
        self.pid_counter_fd: int | None = None
        self.pid_max = 32768


def take_protocol_descriptors() -> tuple[int, int]:
    """Move the protocol off fds 0/1 so stray library output cannot corrupt it."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.set_inheritable(proto_in, False)
    os.set_inheritable(proto_out, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return proto_in, proto_out


def _try_pid_namespace_switch() -> int | None:
    """An fd of this process's PID namespace if it may give each child a fresh one, else None."""
    fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        native.unshare(native.CLONE_NEWPID)
        native.setns(fd, native.CLONE_NEWPID)
    except OSError:
        os.close(fd)
        return None
    return fd


def enter_job_namespaces(
    config: WorkerConfig, confinement: Confinement, proto_in: int, proto_out: int
) -> None:
    """Make per-job PID namespaces possible, creating a user namespace of our own if needed.

    Without privilege over its PID namespace the worker unshares a user and a PID namespace and
    continues in a child (the first process of the new PID namespace); the original process only
    waits for it and exits with its status.
    """
    confinement.pid_namespace_fd = _try_pid_namespace_switch()
    if confinement.pid_namespace_fd is not None or not config.allow_user_namespace:
        if confinement.pid_namespace_fd is None:
            confinement.notes.append("no PID namespace per job: descendants are swept instead")
        return
    uid, gid = os.geteuid(), os.getegid()
    try:
        # A mount namespace too, owned by the new user namespace: the worker mounts each job's
        # fresh /tmp there.
        native.unshare(native.CLONE_NEWUSER | native.CLONE_NEWPID | native.CLONE_NEWNS)
        native.write_id_maps(uid, gid)
    except OSError as error:
        confinement.notes.append(f"no PID namespace per job ({error}): descendants are swept instead")
        return
    pid = os.fork()
    if pid:
        os.close(proto_in)
        os.close(proto_out)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    native.prctl(native.PR_SET_PDEATHSIG, signal.SIGKILL)
    confinement.pid_namespace_fd = _try_pid_namespace_switch()
    if confinement.pid_namespace_fd is None:
        confinement.notes.append("no PID namespace per job even in an own user namespace")


def _top_entries(directory: str, paths: list[str]) -> list[str]:
    """The entries of ``directory`` that ``paths`` (their real paths too) lie in."""
    found = set()
    prefix = directory.rstrip("/") + "/"
    for path in paths:
        for candidate in (os.path.abspath(path), os.path.realpath(path)):
            if candidate.startswith(prefix):
                found.add(prefix + candidate[len(prefix) :].split("/")[0])
    return sorted(found)


def mount_private_tmpfs(config: WorkerConfig, confinement: Confinement) -> None:
    """Mount the ``config.private_tmpfs`` file systems over their paths in this worker's own
    mount namespace (``unshare`` gives it one; propagation there is private, so the host never
    sees them): each of the given size, world-writable with the sticky bit, ``nosuid,nodev``;
    size 0 means an empty read-only one. Entries of a hidden directory that the worker still
    needs (an interpreter or checkout under ``/tmp``) are bound back read-only first.

    Raises:
        OSError: a mount failed (the worker must not serve with the host's ``/tmp`` instead).
    """
    for path, mib in config.private_tmpfs:
        kept = _top_entries(path, [*_needed_paths(config), sys.prefix, sys.base_prefix])
        # O_PATH handles keep the host's entries reachable once the tmpfs hides them.
        handles = {entry: os.open(entry, os.O_PATH | os.O_CLOEXEC) for entry in kept}
        try:
            options = f"size={mib}m,mode=1777" if mib else "size=4k,mode=0755"
            native.mount("tmpfs", path, "tmpfs", native.MS_NOSUID | native.MS_NODEV, options)
            for entry, handle in handles.items():
                bind_back(entry, handle, recursive=False)
        finally:
            for handle in handles.values():
                os.close(handle)
        if not mib:
            native.remount_read_only(path)
        confinement.kept += tuple(kept)
        confinement.notes.append(
            f"private tmpfs over {path}" + (f" ({mib} MiB)" if mib else " (empty, read-only)")
        )


_OCTAL_ESCAPE = re.compile(rb"\\([0-7]{3})")

WRITABLE_KERNEL_TREES = ("/proc",)
"""Left as they are by :func:`read_only_mounts`: the worker sets its own ``oom_score_adj`` and each
job its own there (jobs mount a ``/proc`` of their own over it where they can, and never see it)."""


def _mount_points() -> list[str]:
    """The mount points of this process's mount namespace, as ``/proc/self/mountinfo`` lists them
    (octal escapes of spaces and the like undone), each once."""
    with open("/proc/self/mountinfo", "rb") as handle:
        lines = handle.read().splitlines()
    points = [
        os.fsdecode(_OCTAL_ESCAPE.sub(lambda found: bytes([int(found[1], 8)]), fields[4]))
        for fields in (line.split(b" ") for line in lines)
        if len(fields) > 4
    ]
    return list(dict.fromkeys(points))


def read_only_mounts(exempt: tuple[str, ...] = WRITABLE_KERNEL_TREES) -> int:
    """Make every mount of this process's mount namespace read-only but those at or below
    ``exempt``; returns how many it changed. Only for a process in a mount namespace of its own
    (the ``unshare`` level's: the host's mounts are not changed). Mounts mounted later (each job's
    fresh ``/tmp`` and ``/dev/shm``) are writable as mounted. A mount point this process cannot
    reach (a folder its uid may not enter, a point covered by a later mount) is left alone: a job,
    of the same uid or an unprivileged one, cannot reach it either.

    Raises:
        OSError: a mount could not be made read-only (the worker must not serve then).
    """
    changed = 0
    for point in _mount_points():
        if any(point == tree or point.startswith(tree + "/") for tree in exempt):
            continue
        try:
            if os.statvfs(point).f_flag & os.ST_RDONLY:
                continue
        except (PermissionError, FileNotFoundError, NotADirectoryError):
            continue
        native.make_mount_read_only(point)
        changed += 1
    return changed


def make_host_read_only(config: WorkerConfig, confinement: Confinement) -> None:
    """Where ``config.read_only_host`` says so (``unshare``), make the host's file system read-only
    in this worker's mount namespace (:func:`read_only_mounts`), after the private tmpfs are
    mounted and before any job exists: what a job writes then lands only in its own fresh
    ``/tmp`` and ``/dev/shm``, never in the installation, the runtime, ``/etc`` or the data that
    the harness and later jobs read.

    Raises:
        OSError: a mount could not be made read-only.
    """
    if not config.read_only_host:
        return
    changed = read_only_mounts()
    confinement.notes.append(f"host file system read-only ({changed} mounts made read-only)")


def kept_under_job_tmpfs(config: WorkerConfig, confinement: Confinement) -> None:
    """Add to ``confinement.kept`` the entries of each per-job tmpfs path (``/tmp``) that hold
    what the worker needs (an interpreter or checkout living under ``/tmp``): every job's fresh
    tmpfs gets them bound back."""
    needed = [*_needed_paths(config), sys.prefix, sys.base_prefix]
    for path, _ in config.job_tmpfs:
        confinement.kept += tuple(
            entry for entry in _top_entries(path, needed) if entry not in confinement.kept
        )


def _needed_paths(config: WorkerConfig) -> list[str]:
    paths = [os.path.dirname(os.__file__), os.path.dirname(os.path.abspath(__file__)), sys.executable]
    paths += [path for path in sys.path if path and os.path.isdir(path)]
    if config.highs_package:
        paths.append(config.highs_package)
    return paths


def check_job_uid(config: WorkerConfig, confinement: Confinement) -> None:
    """Adopt ``config.job_uid`` only if that uid can read the interpreter and the libraries."""
    if config.job_uid is None:
        return
    if os.geteuid() != 0:
        confinement.notes.append("job uid ignored: the worker is not root")
        return
    uid = config.job_uid
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            blocked = [path for path in _needed_paths(config) if not os.access(path, os.R_OK)]
            os.write(writer, "\n".join(blocked).encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(writer)
    blocked_text = _read_all(reader)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        confinement.notes.append(f"job uid {uid} unusable: cannot switch to it")
    elif blocked_text:
        confinement.notes.append(f"job uid {uid} unusable: cannot read {blocked_text.splitlines()[0]}")
    else:
        confinement.job_uid = uid


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def calibrate_process_limit(confinement: Confinement) -> None:
    """Find how many processes the kernel already charges to the jobs' uid (in this user
    namespace) besides a job, by forking under ever larger ``RLIMIT_NPROC``; None if the limit
    is not enforced at all (root in the initial user namespace)."""
    uid = confinement.job_uid
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
            for limit in range(1, 65):
                if hard != resource.RLIM_INFINITY and limit > hard:
                    break
                resource.setrlimit(resource.RLIMIT_NPROC, (limit, hard))
                try:
                    grandchild = os.fork()
                except BlockingIOError:
                    continue
                if grandchild == 0:
                    os._exit(0)
                os.waitpid(grandchild, 0)
                os.write(writer, str(limit).encode())
                break
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(writer)
    answer = _read_all(reader)
    os.waitpid(pid, 0)
    limit = int(answer) if answer.isdigit() else 0
    if limit >= 2:
        confinement.nproc_base = limit - 2
    else:
        confinement.notes.append("RLIMIT_NPROC not enforced: the process count is polled instead")


_PID_COUNTER = "/proc/sys/kernel/ns_last_pid"
_OWN_PROC_OPTIONS = ("subset=pid", "")
"""``/proc`` mount options a job tries, best first: ``subset=pid`` (Linux 5.8) leaves out every
machine-wide file (``/proc/stat`` counts every fork since boot, ``/proc/meminfo`` the page cache),
the plain mount at least hides the worker's processes and numbers the job's from 1."""


def probe_own_proc(confinement: Confinement) -> None:
    """Find whether a job can mount a ``/proc`` of its own (tried by a child that does what a job
    will: a fresh PID namespace, then :func:`.child.own_proc`); sets ``confinement.own_proc`` to
    the options that worked. Without a PID namespace per job a ``/proc`` would show the worker's."""
    from .child import own_proc

    if confinement.pid_namespace_fd is None:
        confinement.notes.append("no /proc of its own per job: no PID namespace per job")
        return
    for options in _OWN_PROC_OPTIONS:
        pid = native.fork_into_pid_namespace(confinement.pid_namespace_fd)
        if pid == 0:
            try:
                own_proc(os.fsencode(options))
                os._exit(0 if os.path.exists("/proc/self/status") else 1)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        detach_job_proc()
        if os.waitstatus_to_exitcode(status) == 0:
            confinement.own_proc = options
            return
    confinement.notes.append(
        "no /proc of its own per job: jobs see the worker's /proc (its processes and the machine's counters)"
    )


def detach_job_proc() -> None:
    """Detach every ``/proc`` a job mounted over the worker's (the pinned one, see
    ``processes.pin_proc``, is told by its device number); OSError if one stays."""
    detach_down_to("/proc", os.fstat(pin_proc()).st_dev)


def open_pid_counter(confinement: Confinement) -> None:
    """Keep ``ns_last_pid`` of the worker's PID namespace open for writing where this worker may
    set it (``confinement.pid_counter_fd``); see :func:`randomise_pid_counter`."""
    try:
        fd = os.open(_PID_COUNTER, os.O_RDWR | os.O_CLOEXEC)
    except OSError as error:
        confinement.notes.append(
            f"pids of jobs not randomised ({error.strerror}): one job's process count reaches the next"
        )
        return
    try:
        current = os.pread(fd, 32, 0).strip()
        os.pwrite(fd, current, 0)
    except OSError as error:
        os.close(fd)
        confinement.notes.append(
            f"pids of jobs not randomised ({error.strerror}): one job's process count reaches the next"
        )
        return
    confinement.pid_counter_fd = fd
    try:
        with open("/proc/sys/kernel/pid_max", "rb") as handle:
            confinement.pid_max = int(handle.read().strip())
    except (OSError, ValueError):
        confinement.pid_max = 32768


def randomise_pid_counter(confinement: Confinement) -> None:
    """Set the worker namespace's next pid at random before a job is forked: a job's pid (which
    the zygote holds, and a job without a ``/proc`` of its own can read) then says nothing about
    how many processes the jobs before it started. No-op where :func:`open_pid_counter` failed."""
    fd = confinement.pid_counter_fd
    if fd is None:
        return
    low, high = 1000, max(1001, confinement.pid_max - 4096)
    value = low + int.from_bytes(os.urandom(4), "little") % (high - low)
    with contextlib.suppress(OSError):
        os.pwrite(fd, str(value).encode(), 0)
