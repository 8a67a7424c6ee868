"""Linux system calls that Python 3.10/3.11's ``os`` module lacks, called through ctypes.

Every function raises :class:`OSError` (with ``errno`` set) when the kernel refuses; callers
decide whether a refusal means "fall back" or "broken".
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNS = 0x00020000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
# statvfs(2) f_flag bits that are also mount(2) flags of the same value (nosuid, nodev, noexec,
# synchronous, mandlock, noatime, nodiratime, relatime): a bind remount inside a user namespace
# must repeat those the mount already has (the kernel locks them), or it fails with EPERM.
_STATVFS_MOUNT_FLAGS = 0x2 | 0x4 | 0x8 | 0x10 | 0x40 | 0x400 | 0x800 | 0x1000

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# capset(2) has no glibc wrapper; the raw syscall number is per architecture.
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91, "ppc64le": 184, "s390x": 185}

_libc = ctypes.CDLL(None, use_errno=True)
# The same library called with the GIL held (see lean_fork).
_libc_holding_gil = ctypes.PyDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """``unshare(2)``: detach the given namespaces (``CLONE_*`` flags)."""
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, nstype: int) -> None:
    """``setns(2)``: join the namespace open at ``fd`` (for a PID namespace: for children)."""
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


# prctl and mount as a forked job calls them (every job calls both), prototyped once (a call then
# converts its arguments in C) and without use_errno, whose errno swapping touched ~17 more of the
# zygote's pages on each job's first call (each page a job writes that it shares with the zygote
# is copied). errno is read right after a failure, before anything else runs.
_libc_job = ctypes.CDLL(None, use_errno=False)
_libc_job.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc_job.prctl.restype = ctypes.c_int
_libc_job.mount.argtypes = [*(ctypes.c_char_p,) * 3, ctypes.c_ulong, ctypes.c_char_p]
_libc_job.mount.restype = ctypes.c_int
_libc_job.__errno_location.restype = ctypes.POINTER(ctypes.c_int)


def _errno() -> int:
    return int(_libc_job.__errno_location().contents.value)


def prctl(option: int, arg: int = 0, arg3: int = 0) -> None:
    """``prctl(2)`` with up to two integer (or address) arguments."""
    if _libc_job.prctl(option, arg, arg3, 0, 0) != 0:
        err = _errno()
        raise OSError(err, f"prctl: {os.strerror(err)}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable capability sets of this thread.

    Raises OSError on an architecture whose capset syscall number is not known here.
    """
    number = _SYS_CAPSET.get(platform.machine())
    if number is None:
        raise OSError(0, f"capset: unknown syscall number on {platform.machine()}")
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)), "capset")


def write_id_maps(uid: int, gid: int) -> None:
    """Map ``uid``/``gid`` of the parent user namespace to themselves in a fresh one.

    Call right after ``unshare(CLONE_NEWUSER)``; an unprivileged process may map only its own ids,
    and must deny ``setgroups`` before writing the gid map.
    """
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"{uid} {uid} 1\n")
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny\n")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1\n")


def mount(source: str, target: str, fstype: str, flags: int = 0, data: str = "") -> None:
    """``mount(2)``; empty strings are passed as NULL."""

    def text(value: str) -> bytes | None:
        return os.fsencode(value) if value else None

    _check(
        _libc.mount(text(source), text(target), text(fstype), ctypes.c_ulong(flags), text(data)),
        f"mount {target}",
    )


def mount_encoded(source: bytes, target: bytes, fstype: bytes, flags: int, data: bytes | None) -> None:
    """:func:`mount` for a forked job, its strings already encoded (``data`` None: NULL)."""
    if _libc_job.mount(source, target, fstype, flags, data) != 0:
        err = _errno()
        raise OSError(err, f"mount {os.fsdecode(target)}: {os.strerror(err)}")


def remount_read_only(target: str) -> None:
    """Make the mount at ``target`` read-only (a bind remount keeping the flags it has)."""
    kept = os.statvfs(target).f_flag & _STATVFS_MOUNT_FLAGS
    mount("", target, "", MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


_SYS_MOUNT_SETATTR = 442
"""``mount_setattr(2)`` (Linux 5.12): one number on every architecture (added after the tables
were unified)."""
_AT_FDCWD = -100
_MOUNT_ATTR_RDONLY = 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def make_mount_read_only(target: str) -> None:
    """Make the mount at ``target`` read-only, leaving every other flag of it as it is
    (``mount_setattr(2)``; a bind remount keeping the flags ``statvfs`` shows, where the kernel
    lacks that call).

    Raises:
        OSError: the kernel refused.
    """
    attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    result = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        os.fsencode(target),
        ctypes.c_uint(0),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if result == 0:
        return
    err = ctypes.get_errno()
    if err != errno.ENOSYS:
        raise OSError(err, f"mount_setattr {target}: {os.strerror(err)}")
    remount_read_only(target)


MNT_DETACH = 2


def detach(target: str) -> None:
    """``umount2(target, MNT_DETACH)``: the mount leaves the tree now and goes once unused."""
    _check(_libc.umount2(os.fsencode(target), ctypes.c_int(MNT_DETACH)), f"umount {target}")


RUSAGE_BYTES = 144
"""``sizeof(struct rusage)`` on 64-bit Linux: two ``timeval`` and fourteen ``long``."""

_libc.wait4.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
_libc.wait4.restype = ctypes.c_int


def wait4_into(pid: int, status: ctypes.c_int, rusage: ctypes.Array[ctypes.c_char]) -> None:
    """``wait4(pid, &status, 0, &rusage)`` into caller-owned buffers, retried on EINTR.

    The zygote reaps its jobs with this: the kernel writes the status and the usage straight
    into ``status`` and ``rusage`` and no Python object is made of them, so the zygote's heap, which
    every later job is forked from, never holds a number a job influenced (it zeroes the buffers
    once sent)."""
    while _libc.wait4(pid, ctypes.byref(status), 0, ctypes.addressof(rusage)) == -1:
        err = ctypes.get_errno()
        if err != errno.EINTR:
            raise OSError(err, f"wait4: {os.strerror(err)}")


def fork_into_pid_namespace(namespace_fd: int | None) -> int:
    """:func:`lean_fork`, the child the first process of a fresh PID namespace when
    ``namespace_fd`` (this process's own PID namespace, open) is given; this process's children are
    again born in its own namespace afterwards (the child keeps the new one for its own children)."""
    if namespace_fd is None:
        return lean_fork()
    unshare(CLONE_NEWPID)
    try:
        pid = lean_fork()
    except BaseException:
        setns(namespace_fd, CLONE_NEWPID)
        raise
    if pid:
        setns(namespace_fd, CLONE_NEWPID)
    return pid


def lean_fork() -> int:
    """``fork(2)`` without the interpreter's after-fork work, for a single-threaded process.

    ``os.fork()`` runs every ``os.register_at_fork`` hook and re-initialises the runtime's
    thread state in the child: with the solver libraries imported, the child had taken ~230
    copy-on-write faults before its first statement (47 this way; ~80 fewer over a whole job,
    as the job touches some of those pages later anyway). A caller with one Python thread
    needs none of it: no other thread can hold a lock, and the GIL is kept across the call
    (``PyDLL``); with more, this is ``os.fork()``. What a hook would have changed for the
    program is redone here: ``random``'s generator is seeded afresh, so jobs do not share a
    sequence, as separate interpreters would not.

    Raises:
        OSError: the kernel refused to fork.
    """
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return os.fork()  # another Python thread may hold a lock the child would need
    pid = int(_libc_holding_gil.fork())
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"fork: {os.strerror(err)}")
    if pid == 0:
        generator = sys.modules.get("random")
        if generator is not None:
            generator.seed()
    return pid
