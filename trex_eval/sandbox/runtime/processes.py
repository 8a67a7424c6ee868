"""The worker's view of the processes below it, read from ``/proc``: who descends from a job, and
the sweep that kills and reaps them where no per-job PID namespace does it."""

from __future__ import annotations

import contextlib
import os
import signal
import time


def _processes() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            table[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return table


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
