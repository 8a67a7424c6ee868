"""The worker's view of the processes below it, read from its own ``/proc``: who descends from a
job, and the sweep that kills and reaps them where no per-job PID namespace does it.

A job mounts a ``/proc`` of its own PID namespace over the worker's while it runs (see
``child.own_proc``), so the supervisor reads its ``/proc`` through a descriptor taken at start-up
(:func:`pin_proc`), never by the path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

_proc_fd: int | None = None


def pin_proc() -> int:
    """Open (once) and return a descriptor on the ``/proc`` this process sees now: every read of
    this module goes through it."""
    global _proc_fd
    if _proc_fd is None:
        _proc_fd = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return _proc_fd


@contextlib.contextmanager
def in_pinned_proc() -> Iterator[None]:
    """Make the pinned ``/proc`` the working directory for the block (then ``/`` again): a
    relative path such as ``self/fd/7`` then reaches it by name, for calls that take a path
    (``mount``'s source), even while ``/proc`` leads into a job's ``/tmp`` (``proc_dir``)."""
    os.fchdir(pin_proc())
    try:
        yield
    finally:
        os.chdir("/")


def proc_read(relative: str) -> bytes | None:
    """The contents of ``/proc/<relative>`` of the pinned ``/proc`` (None if it cannot be read)."""
    try:
        fd = os.open(relative, os.O_RDONLY | os.O_CLOEXEC, dir_fd=pin_proc())
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def proc_listdir(relative: str = ".") -> list[str]:
    """The entries of ``/proc/<relative>`` of the pinned ``/proc`` (empty if it cannot be read)."""
    try:
        fd = os.open(relative, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=pin_proc())
    except OSError:
        return []
    try:
        return os.listdir(fd)
    except OSError:
        return []
    finally:
        os.close(fd)


def _processes() -> dict[int, int]:
    """pid -> parent pid of every process visible in the pinned /proc."""
    table = {}
    for entry in proc_listdir():
        if not entry.isdigit():
            continue
        found = proc_read(f"{entry}/stat")
        try:
            table[int(entry)] = int(found.rsplit(b")", 1)[1].split()[1]) if found else -1
        except (IndexError, ValueError):
            continue
    return {pid: parent for pid, parent in table.items() if parent >= 0}


def descendants(root: int) -> list[int]:
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, parent in table.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        for pid in children.get(frontier.pop(), []):
            found.append(pid)
            frontier.append(pid)
    return found


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def sweep_descendants(*, spare: int | None = None) -> None:
    """Kill and reap everything below this worker but ``spare`` (the zygote; it is a subreaper,
    so orphans come back here)."""
    for _ in range(100):
        victims = [pid for pid in descendants(os.getpid()) if pid != spare]
        for pid in victims:
            kill_quietly(pid)
        for pid in victims:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
        if not victims:
            return
        time.sleep(0.005)
