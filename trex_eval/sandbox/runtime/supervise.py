"""Watching one job: its limits, and what it is charged for time it did not get.

A job's limits are its own, whatever runs beside it. The supervisor charges a job:

* **CPU it received**, over all its processes together: the worker's cgroup counter where the
  harness gave it one (exact), else the sum of the job's live processes' CPU times, sampled every
  :data:`SAMPLE_S` (a process that exits and is reaped by no one between two samples escapes that
  sum; ``RLIMIT_CPU`` still bounds each process). Over ``cpu_s``: ``killed_for="cpu"``. (The
  per-process ``RLIMIT_CPU`` let 63 processes take 63 times the limit.)
* **Wall-clock time less the time it was starved**: in each sampling interval in which the job
  received less CPU than its fair share of the machine (``cores / lanes`` CPUs) while one of its
  threads waited to run (``/proc/<tid>/schedstat``), the longest such wait (at most the interval)
  is not charged. A program starved by a neighbour's fork bomb is then charged what it would have
  been charged alone; a job that hogs CPUs itself receives at least its share and is charged
  everything. Over ``wall_s``: ``killed_for="wall"``. Still running ``real_time_cap_s(wall_s)``
  after it started, whatever it was charged: ``killed_for="starved"`` (the machine is the problem).
* memory, where no cgroup holds it (``runtime.memory``): private resident pages of its processes
  plus what its own tmpfs holds, sampled with the CPU; over ``memory_mib``: ``"memory"``.
* output size (``"output"``), free space of the temporary file systems (``"disk"``, only where
  they are the host's) and, where ``RLIMIT_NPROC`` is not enforced, its process count
  (``"processes"``), every :data:`TICK_S`; the output size once more when the job exits (a
  program that wrote past the cap within one tick is ``"output"`` too).

Sampling starts after :data:`SAMPLE_S`: a job shorter than that costs one ``poll`` per tick.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from typing import Any, NamedTuple

from .contract import real_time_cap_s
from .processes import descendants, kill_quietly, proc_listdir, proc_read

TICK_S = 0.02
SAMPLE_S = 0.25
_DISK_SLACK = 1 << 20
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class Watched(NamedTuple):
    """How a job ended as the supervisor saw it: wall seconds, seconds not charged for
    starvation, CPU seconds it received (sampled; None before the first sample) and what it was
    killed for (``"wall"``, ``"cpu"``, ``"starved"``, ``"output"``, ``"processes"``, ``"disk"``)."""

    wall_s: float
    starved_s: float
    cpu_received_s: float | None
    killed_for: str | None


class CpuCounter:
    """The worker's cgroup CPU counter (see ``WorkerConfig.cpu_usage_fd``), in seconds."""

    def __init__(self, fd: int | None, form: str) -> None:
        self.fd = fd
        self.form = form

    def read(self) -> float | None:
        if self.fd is None:
            return None
        try:
            text = os.pread(self.fd, 4096, 0).decode("ascii", "replace")
            if self.form == "v2":
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
                return None
            return int(text.strip() or 0) / 1e9
        except (OSError, ValueError):
            return None


class Sampler:
    """CPU received and starvation of the process tree under ``pid`` (see the module docstring)."""

    def __init__(self, pid: int, *, share_cpus: float, counter: CpuCounter) -> None:
        self.pid = pid
        self.share_cpus = share_cpus
        self.counter = counter
        self.counter_start = counter.read()
        self.started = time.monotonic()
        self.last = self.started
        self.cpu_s: float | None = None
        self._cpu_seen = 0.0
        self.starved_s = 0.0
        self.private_bytes = 0
        self._waits: dict[int, int] = {}

    def _tree_cpu_and_waits(self) -> tuple[float, dict[int, int]]:
        cpu_ticks = 0
        waits: dict[int, int] = {}
        private_pages = 0
        for pid in (self.pid, *descendants(self.pid)):
            statm = (proc_read(f"{pid}/statm") or b"").split()
            if len(statm) >= 3 and statm[1].isdigit() and statm[2].isdigit():
                private_pages += max(0, int(statm[1]) - int(statm[2]))
            stat = proc_read(f"{pid}/stat")
            if stat is None:
                continue
            fields = stat.rsplit(b")", 1)[-1].split()
            try:
                cpu_ticks += sum(int(value) for value in fields[11:15])
            except ValueError:
                continue
            for tid in proc_listdir(f"{pid}/task"):
                found = proc_read(f"{pid}/task/{tid}/schedstat")
                parts = found.split() if found else []
                if len(parts) >= 2 and parts[1].isdigit():
                    waits[int(tid)] = int(parts[1])
        self.private_bytes = private_pages * _PAGE_SIZE
        return cpu_ticks / _CLOCK_TICKS, waits

    def sample(self) -> None:
        now = time.monotonic()
        interval = now - self.last
        tree_cpu, waits = self._tree_cpu_and_waits()
        counted = self.counter.read()
        if counted is not None and self.counter_start is not None:
            total = max(0.0, counted - self.counter_start)
        else:
            # Reaped processes leave the sum: what was seen is kept.
            total = max(self._cpu_seen, tree_cpu)
        received = total - (self.cpu_s or 0.0)
        waited = max((wait - self._waits.get(tid, 0) for tid, wait in waits.items()), default=0) / 1e9
        if interval > 0 and received < self.share_cpus * interval and waited > 0:
            self.starved_s += min(waited, interval)
        self._waits = waits
        self._cpu_seen = max(self._cpu_seen, tree_cpu)
        self.cpu_s = total
        self.last = now


class DiskWatch:
    """The free space of the file systems holding ``directories``, at the start of a job, and
    whether the job has since taken more than ``budget`` bytes of it in all.

    A poll, not a quota: where ``/tmp`` is the host's (``rlimits``), nothing else bounds what a
    job writes there. Another process's writes to the same file systems count too, and a fast
    writer gets up to one tick's worth past the budget before it is killed. The budget has
    :data:`_DISK_SLACK` on top for file-system metadata (a file of exactly ``disk_mib``, which
    ``RLIMIT_FSIZE`` allows, takes a little more than that)."""

    def __init__(self, directories: tuple[str, ...], budget: int) -> None:
        self.budget = budget + _DISK_SLACK
        self.paths: list[str] = []
        devices: set[int] = set()
        for path in directories if budget > 0 else ():
            try:
                device = os.stat(path).st_dev
            except OSError:
                continue
            if device not in devices:
                devices.add(device)
                self.paths.append(path)
        self.start = self._free()

    def _free(self) -> int:
        total = 0
        for path in self.paths:
            try:
                found = os.statvfs(path)
            except OSError:
                continue
            total += found.f_bavail * found.f_frsize
        return total

    def exceeded(self) -> bool:
        return bool(self.paths) and self.start - self._free() > self.budget


class Watch(NamedTuple):
    """What :func:`watch` checks, besides the job's limits."""

    outputs: tuple[int, int]
    disk: DiskWatch
    count_processes: bool
    share_cpus: float
    counter: CpuCounter
    sweep: bool
    """No PID namespace per job: the job's descendants must be killed one by one."""
    memory_bytes: int | None = None
    """Where no cgroup holds the job to its ``memory_mib``: that many bytes, sampled."""
    tmpfs: tuple[str, ...] = ()
    """The job's own tmpfs mounts, whose contents count as its memory when it is sampled."""


def watch(pid: int, pidfd: int, limits: dict[str, Any], how: Watch) -> Watched:
    """Watch the job ``pid`` (``pidfd`` open on it) until it exits or is killed; see the module
    docstring for what is charged. The caller reaps it."""
    wall_s, cpu_s = float(limits["wall_s"]), float(limits["cpu_s"])
    output_cap, max_processes = int(limits["output_bytes"]), int(limits["max_processes"])
    sampler = Sampler(pid, share_cpus=how.share_cpus, counter=how.counter)
    start = sampler.started
    cap = start + real_time_cap_s(wall_s)
    next_sample = start + SAMPLE_S
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    killed_for: str | None = None
    while True:
        now = time.monotonic()
        if now >= next_sample:
            sampler.sample()
            next_sample = now + SAMPLE_S
            if sampler.cpu_s is not None and sampler.cpu_s > cpu_s:
                killed_for = "cpu"
            elif how.memory_bytes is not None and sampler.private_bytes + _used(how.tmpfs) > how.memory_bytes:
                killed_for = "memory"
        charged = now - start - sampler.starved_s
        if killed_for is None and charged >= wall_s:
            # Starvation since the last sample is not known yet: look before killing.
            sampler.sample()
            if now - start - sampler.starved_s >= wall_s:
                killed_for = "wall"
        if killed_for is None and now >= cap:
            killed_for = "starved"
        if killed_for is None:
            timeout = min(TICK_S, max(0.0, wall_s - charged), max(0.0, cap - now), next_sample - now)
            if poller.poll(max(timeout, 0.001) * 1000):
                # A program quicker than one tick can write past the cap before it is looked at:
                # the cap holds at exit too, so the verdict never depends on the watcher's timing.
                if _written(how.outputs) > output_cap:
                    killed_for = "output"
                break
            if _written(how.outputs) > output_cap:
                killed_for = "output"
            elif how.count_processes and len(descendants(pid)) + 1 > max_processes:
                killed_for = "processes"
            elif how.disk.exceeded():
                killed_for = "disk"
        if killed_for:
            _kill(pidfd, pid, sweep=how.sweep)
            break
    return Watched(time.monotonic() - start, sampler.starved_s, sampler.cpu_s, killed_for)


def _written(outputs: tuple[int, int]) -> int:
    """Bytes the job wrote to its stdout and stderr files."""
    return sum(os.fstat(fd).st_size for fd in outputs)


def _used(paths: tuple[str, ...]) -> int:
    """Bytes the file systems at ``paths`` hold."""
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            found = os.statvfs(path)
            total += (found.f_blocks - found.f_bfree) * found.f_frsize
    return total


def _kill(pidfd: int, pid: int, *, sweep: bool) -> None:
    victims = descendants(pid) if sweep else []
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    for victim in victims:
        kill_quietly(victim)
