"""Fair shares of the machine: one cgroup per sandbox worker, where the harness may make them.

Every worker (and so every job it runs, with all the processes the job starts) lives in a cgroup
of its own, beside the other workers' under one group of the pool's:

* equal CPU weights, so a job that starts 63 spinners takes its worker's share of the CPUs, not
  its neighbours' (without it, CFS shares CPU per task and the spinners starved an honest program
  beside them into a timeout);
* ``pids.max``: the processes a job may have, counted for that worker only (``RLIMIT_NPROC``
  counts per uid);
* a CPU counter (``cpuacct.usage`` or ``cpu.stat``) that the worker reads to charge each job the
  CPU it received, over all its processes (see ``runtime.supervise``);
* a memory limit (``memory.limit_in_bytes`` or ``memory.max``) that the worker sets before each
  job to what the worker holds then plus the job's ``memory_mib``, and the count of kills the
  limit caused (``memory.oom_control`` or ``memory.events``): a job's processes and the files it
  writes to its tmpfs are held to ``memory_mib`` together (``RLIMIT_AS`` holds each process
  alone: four children of a job took 4.8 GiB under a 2 GiB limit). Optional: where the memory
  controller is not available the worker samples the job's memory instead.

Two layouts are used, tried in this order, and the manifest says which applied (``cgroups``):

``v1``
    The controllers ``cpu``, ``cpuacct`` and ``pids`` mounted as cgroup v1 hierarchies (together
    or apart) where the harness may create groups below its own (root, typically).
``v2``
    A cgroup v2 hierarchy whose group holding the harness has ``cpu`` and ``pids`` available and
    contains no other process than the harness (a delegated scope, e.g.
    ``systemd-run --user --scope -p Delegate=yes trex-eval ...``): the harness moves itself into a
    leaf of its own so that the group may hand the controllers down.

Elsewhere there are no cgroups: the workers charge CPU by summing their jobs' processes and do not
charge a job for time it was starved (``runtime.supervise``); the process count is
``RLIMIT_NPROC`` (per uid: each worker's jobs have a uid of their own where the harness is root).
Nothing here ever fails a run: a step that does not work gives up with a note.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "trex-eval-"
"""Pool groups are ``<controller root>/<the harness's group>/trex-eval-<pid>-<random>``."""
_WEIGHT_V1 = 1024
_RMDIR_TRIES = 50
WRAPPER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c WRAPPER sh <cgroup.procs files...> -- <command...>``: the shell moves itself into the
worker's cgroups, then becomes the worker, so that every process the worker starts is counted
there from the first one on."""


@dataclass(frozen=True)
class LaneDescriptors:
    """See :meth:`Lane.open_descriptors`."""

    cpu: int
    memory: tuple[int, int, int] | None

    @property
    def all(self) -> tuple[int, ...]:
        return (self.cpu, *(self.memory or ()))

    def close(self) -> None:
        for fd in self.all:
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass(frozen=True)
class Lane:
    """One worker's cgroup: the directories to remove, the ``cgroup.procs`` files to join, the
    CPU counter file, its format (``v1``: nanoseconds; ``v2``: ``cpu.stat``), ``pids.max``, and
    the memory controller's usage, limit and events files (None without it)."""

    directories: tuple[Path, ...]
    procs: tuple[Path, ...]
    usage: Path
    usage_format: str
    pids_max: Path
    memory: tuple[Path, Path, Path] | None = None

    def open_descriptors(self) -> LaneDescriptors:
        """Descriptors a worker inherits on this lane's files: its CPU counter (read) and, with
        the memory controller, its memory usage (read), limit (write) and events (read). The
        caller closes them once the worker started (OSError if one cannot be opened)."""
        opened: list[int] = []
        try:
            opened.append(os.open(self.usage, os.O_RDONLY))
            if self.memory is not None:
                for path, mode in zip(self.memory, (os.O_RDONLY, os.O_WRONLY, os.O_RDONLY), strict=True):
                    opened.append(os.open(path, mode))
        except OSError:
            for fd in opened:
                os.close(fd)
            raise
        for fd in opened:
            os.set_inheritable(fd, True)
        memory = (opened[1], opened[2], opened[3]) if len(opened) == 4 else None
        return LaneDescriptors(cpu=opened[0], memory=memory)

    def command_prefix(self, shell: str) -> list[str]:
        """What to put before a worker's command so that it starts inside this lane."""
        return [shell, "-c", WRAPPER, "sh", *map(str, self.procs), "--"]

    def limit_processes(self, extra: int) -> None:
        """``pids.max`` = the tasks in the lane now (the idle worker) + ``extra``."""
        current = int(self.pids_max.with_name("pids.current").read_text().strip())
        self.pids_max.write_text(f"{current + extra}\n")


@dataclass
class PoolGroups:
    """The pool's cgroups (:meth:`detect`); :meth:`lane` makes one per worker."""

    kind: str
    roots: dict[str, Path]
    """Controller -> the pool's group directory in that controller's hierarchy."""
    notes: list[str] = field(default_factory=list)
    _lanes: list[Lane] = field(default_factory=list)

    @classmethod
    def detect(cls, *, workers: int) -> tuple[PoolGroups | None, str]:
        """The pool's groups, made now, or None and why not."""
        reasons = []
        for attempt in (_v1_roots, _v2_roots):
            try:
                found = attempt()
            except OSError as error:
                reasons.append(f"{attempt.__name__[1:3]}: {error}")
                continue
            if isinstance(found, str):
                reasons.append(found)
                continue
            kind, parents = found
            name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
            roots: dict[str, Path] = {}
            try:
                for controller, parent in parents.items():
                    if parent in roots.values():
                        roots[controller] = parent / name
                        continue
                    (parent / name).mkdir()
                    roots[controller] = parent / name
                if kind == "v1":
                    # The pool's group weighs as much as its workers would as plain tasks.
                    (roots["cpu"] / "cpu.shares").write_text(f"{_WEIGHT_V1 * workers}\n")
                else:
                    wanted = "+cpu +pids" + (" +memory" if "memory" in roots else "")
                    (roots["cpu"] / "cgroup.subtree_control").write_text(wanted + "\n")
            except OSError as error:
                for path in set(roots.values()):
                    with contextlib.suppress(OSError):
                        path.rmdir()
                reasons.append(f"{kind}: cannot create the pool's group ({error.strerror})")
                continue
            return cls(kind=kind, roots=roots), ""
        return None, "; ".join(reasons)

    def lane(self, index: int) -> Lane:
        """A new cgroup for worker ``index`` (OSError if the kernel refuses)."""
        name = f"worker-{index}-{secrets.token_hex(2)}"
        made: list[Path] = []
        for root in dict.fromkeys(self.roots.values()):
            (root / name).mkdir()
            made.append(root / name)
        memory_root = self.roots.get("memory")
        if self.kind == "v1":
            usage = self.roots["cpuacct"] / name / "cpuacct.usage"
            files = ("memory.usage_in_bytes", "memory.limit_in_bytes", "memory.oom_control")
        else:
            usage = self.roots["cpu"] / name / "cpu.stat"
            files = ("memory.current", "memory.max", "memory.events")
        lane = Lane(
            directories=tuple(made),
            procs=tuple(path / "cgroup.procs" for path in made),
            usage=usage,
            usage_format=self.kind,
            pids_max=self.roots["pids"] / name / "pids.max",
            memory=None
            if memory_root is None
            else (
                memory_root / name / files[0],
                memory_root / name / files[1],
                memory_root / name / files[2],
            ),
        )
        self._lanes.append(lane)
        return lane

    def remove(self, lane: Lane) -> None:
        """Remove a lane whose worker is dead (its processes may take a moment to leave)."""
        for directory in lane.directories:
            _rmdir_soon(directory)
        with contextlib.suppress(ValueError):
            self._lanes.remove(lane)

    def close(self) -> None:
        """Remove every lane and the pool's group."""
        for lane in list(self._lanes):
            self.remove(lane)
        for root in dict.fromkeys(self.roots.values()):
            _rmdir_soon(root)


def _rmdir_soon(path: Path) -> None:
    # A killed worker leaves its cgroup within a millisecond or two: poll fast first, then every
    # 20 ms, up to about a second in all.
    pause = 0.001
    for _ in range(_RMDIR_TRIES):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(pause)
            pause = min(2 * pause, 0.02)


def _mounts() -> list[tuple[str, Path, str, set[str]]]:
    """``(fs type, mount point, root inside the hierarchy, super options)`` of cgroup mounts."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((tail[0], Path(fields[4]), fields[3], set(tail[2].split(","))))
    return found


def _own_groups() -> dict[str, str]:
    """Controller (``""`` for v2) -> the harness's group path, from ``/proc/self/cgroup``."""
    groups = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = path
    return groups


def _below(mount: Path, root: str, path: str) -> Path:
    relative = os.path.relpath(path, root) if path.startswith(root) else path
    return (mount / relative.lstrip("/")).resolve() if relative != "." else mount


def _v1_roots() -> tuple[str, dict[str, Path]] | str:
    groups = _own_groups()
    parents: dict[str, Path] = {}
    for kind, point, root, options in _mounts():
        if kind != "cgroup":
            continue
        for controller in ("cpu", "cpuacct", "pids", "memory"):
            if controller in options and controller in groups:
                parents[controller] = _below(point, root, groups[controller])
    missing = [name for name in ("cpu", "cpuacct", "pids") if name not in parents]
    if missing:
        return f"v1: no {', '.join(missing)} hierarchy"
    if "memory" in parents and not os.access(parents["memory"], os.W_OK):
        del parents["memory"]  # optional: the worker samples the jobs' memory instead
    unwritable = [str(path) for path in set(parents.values()) if not os.access(path, os.W_OK)]
    if unwritable:
        return f"v1: {', '.join(unwritable)} not writable"
    return "v1", parents


def _v2_roots() -> tuple[str, dict[str, Path]] | str:
    own = _own_groups().get("")
    mount = next(((point, root) for kind, point, root, _ in _mounts() if kind == "cgroup2"), None)
    if own is None or mount is None:
        return "v2: no cgroup2 hierarchy"
    group = _below(mount[0], mount[1], own)
    available = set((group / "cgroup.controllers").read_text().split())
    if not {"cpu", "pids"} <= available:
        return (
            f"v2: cpu and pids not delegated to {group} (available: {' '.join(sorted(available)) or 'none'})"
        )
    others = [pid for pid in (group / "cgroup.procs").read_text().split() if int(pid) != os.getpid()]
    if others:
        return f"v2: {group} holds other processes than the harness"
    # The group may hand controllers down only once no process is in it: move the harness out.
    leaf = group / f"{PREFIX}harness-{os.getpid()}"
    leaf.mkdir(exist_ok=True)
    (leaf / "cgroup.procs").write_text(f"{os.getpid()}\n")
    memory = "memory" in available
    (group / "cgroup.subtree_control").write_text("+cpu +pids" + (" +memory" if memory else "") + "\n")
    return "v2", {"cpu": group, "pids": group, **({"memory": group} if memory else {})}


def remove_stale_groups() -> list[str]:
    """Remove the pool groups of harnesses that are gone (their pid no longer runs); empty ones only."""
    removed = []
    try:
        mounts = _mounts()
        groups = _own_groups()
    except OSError:
        return []
    for kind, point, root, options in mounts:
        for controller in ("cpu", "cpuacct", "pids") if kind == "cgroup" else ("",):
            if (controller and controller not in options) or controller not in groups:
                continue
            parent = _below(point, root, groups[controller])
            with contextlib.suppress(OSError):
                for entry in parent.iterdir():
                    pid = entry.name[len(PREFIX) :].split("-", 1)[0]
                    if not entry.name.startswith(PREFIX) or not pid.isdigit() or _alive(int(pid)):
                        continue
                    for lane in [child for child in entry.iterdir() if child.is_dir()]:
                        with contextlib.suppress(OSError):
                            lane.rmdir()
                    with contextlib.suppress(OSError):
                        entry.rmdir()
                        removed.append(str(entry))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
