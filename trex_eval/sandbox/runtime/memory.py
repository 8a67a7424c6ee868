"""Memory: each job is held to its ``memory_mib``, all its processes and the files it writes to
its tmpfs together (``RLIMIT_AS`` holds each process alone: a job's children each stayed under it
and took 4.8 GiB together under a 2 GiB limit).

Where the harness gave the worker its cgroup's memory files (``WorkerConfig.memory_fds``), the
supervisor sets the cgroup's limit before each job to what the worker holds then plus the job's
``memory_mib``, and lifts it after: the kernel then reclaims or kills inside the job alone (the
supervisor and the zygote make themselves the last candidates, ``oom_score_adj`` -1000, and every
job the first, 1000). A job whose process the limit killed is ``killed_for="memory"``. Elsewhere
the supervisor samples the job's memory (``runtime.supervise``): private resident pages of its
processes plus what its tmpfs holds, every ``SAMPLE_S``; a fast allocator gets past it by what it
allocates in one interval, still within ``RLIMIT_AS`` per process.
"""

from __future__ import annotations

import contextlib
import os

_UNLIMITED = {"v1": b"-1", "v2": b"max"}


def protect_self() -> bool:
    """Make this process (and what it forks, until they say otherwise) the last the kernel's
    out-of-memory killer picks; False where this process may not."""
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("-1000")
        return True
    except OSError:
        return False


def expose_self() -> None:
    """Make this process (a job) the first the out-of-memory killer picks."""
    # os-level calls, no context manager: each object a job touches copies a page it shares with
    # the zygote (a text file object touched dozens).
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.write(fd, b"1000")
    except OSError:
        pass
    finally:
        os.close(fd)


class MemoryLimit:
    """The worker's cgroup memory files: ``usage``, ``limit`` and ``events`` descriptors, read in
    cgroup ``form`` (``v1`` or ``v2``). Without them every method does nothing."""

    def __init__(self, fds: tuple[int, int, int] | None, form: str) -> None:
        self.fds = fds
        self.form = form if form in _UNLIMITED else "v1"
        self._kills = 0

    @property
    def enforced(self) -> bool:
        return self.fds is not None

    def hold(self, memory_mib: int) -> None:
        """Before a job: the limit is what the cgroup holds now plus ``memory_mib``."""
        if self.fds is None:
            return
        usage, limit, _ = self.fds
        self._kills = self._oom_kills()
        try:
            now = int(os.pread(usage, 64, 0).split()[0])
            os.pwrite(limit, str(now + (memory_mib << 20)).encode(), 0)
        except (OSError, ValueError, IndexError):
            pass

    def release(self) -> bool:
        """After a job: lift the limit (the supervisor's own reading of large outputs must never
        meet it); whether the limit killed one of the job's processes."""
        if self.fds is None:
            return False
        with contextlib.suppress(OSError):
            os.pwrite(self.fds[1], _UNLIMITED[self.form], 0)
        return self._oom_kills() > self._kills

    def _oom_kills(self) -> int:
        if self.fds is None:
            return 0
        try:
            text = os.pread(self.fds[2], 4096, 0).decode("ascii", "replace")
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0
