"""CPU seconds of a process tree, for the benchmark scripts: a cgroup v1 ``cpuacct`` group (as root)
counts every process placed in it and every descendant forked after, reaped or not, which
``getrusage`` does not (a sandbox worker's jobs, a verifier process, a fork server's children).

    with tree_cpu("audit") as cpu:      # this process (and what it starts from now on) is counted
        subprocess.run([...])
    print(cpu.seconds)                  # None where no group could be made (not root, no cgroup v1)
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class TreeCpu:
    """One measurement: ``seconds`` (user + system of every process counted) once the ``with``
    block of :func:`tree_cpu` has ended; None while it runs or where no group could be made."""

    def __init__(self, group: Path | None) -> None:
        self.group = group
        self.seconds: float | None = None
        self._moved: list[int] = []

    def add(self, pid: int) -> None:
        """Count ``pid`` (an already running process) and what it forks from now on."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(pid))
            self._moved.append(pid)


@contextlib.contextmanager
def tree_cpu(name: str, *, pids: Iterable[int] = ()) -> Iterator[TreeCpu]:
    """Count this process, ``pids`` and their descendants started within the block; on leaving,
    every process still in the group goes back to the root group and the group is removed."""
    group: Path | None = CPUACCT / f"trex-bench-{os.getpid()}-{name}-{time.monotonic_ns()}"
    try:
        group.mkdir()  # type: ignore[union-attr]
    except OSError:
        group = None
    meter = TreeCpu(group)
    meter.add(os.getpid())
    for pid in pids:
        meter.add(pid)
    try:
        yield meter
    finally:
        if group is not None:
            meter.seconds = int((group / "cpuacct.usage").read_text()) / 1e9
            for pid in meter._moved:
                with contextlib.suppress(OSError):  # it may have exited
                    (CPUACCT / "cgroup.procs").write_text(str(pid))
            remove_group(group)


def remove_group(group: Path) -> None:
    """Remove a cgroup once its processes have left it (polls up to ~2 s, then gives up quietly)."""
    # Children killed at the end leave the group within milliseconds; poll briefly.
    for _ in range(200):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.01)
    with contextlib.suppress(OSError):
        group.rmdir()
