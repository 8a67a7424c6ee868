"""The file systems a job writes to: a fresh tmpfs over ``/tmp`` and ``/dev/shm`` for every job.

Where the worker may mount (``bwrap`` and ``unshare``; ``WorkerConfig.job_tmpfs``) it mounts a new,
size-capped tmpfs over each of those paths just before a job, writes the job's directories into
it, and detaches it, with the ``/proc`` the job mounted for itself, once the job's reply is sent
(the harness reads the reply meanwhile). Nothing a job leaves there reaches the next one: not its
files, not the space it took, not the file system's inode counter (a new tmpfs numbers its inodes
from the start; a reused one carried a value from job to job). Detaching is also the wipe: no
tree of the job's is walked.

Each detach waits for a kernel grace period (0.1-0.7 ms on a busy machine, interrupting every
core), so a job's mounts are detached in as few calls as possible: where ``/proc`` leads into
``/tmp`` (``WorkerConfig.proc_dir``, under bubblewrap) the job mounts its ``/proc`` inside its
own ``/tmp``, and the one detach of that ``/tmp`` takes it along (and the binds below). Where
jobs cannot mount a ``/proc`` of their own, the worker's is bound there instead.

Entries of ``/tmp`` that the worker itself needs (an interpreter or checkout living under
``/tmp``: ``WorkerConfig.keep``) are bound back, read-only, into every new ``/tmp`` from handles
opened once at start-up.

Elsewhere (``rlimits``) the job's directories live in the worker's scratch directory on the host
and are removed after every job, as :func:`.workdir.wipe` does.
"""

from __future__ import annotations

import os

from . import native
from .contract import JOB_DIR, TMP_DIR, WorkerConfig
from .processes import in_pinned_proc, pin_proc
from .workdir import wipe


class JobFileSystems:
    """Prepares and releases the directories of one job after another (one worker, one job at once).

    ``keep``: entries of ``/tmp`` bound back into every new one, besides ``config.keep``.
    ``own_proc``: whether each job mounts a ``/proc`` of its own (else, where ``/proc`` leads into
    ``/tmp``, the worker's is bound into every new ``/tmp``).

    Raises (from :meth:`open`):
        OSError: a tmpfs could not be mounted (the worker must not serve with a shared ``/tmp``).
    """

    def __init__(self, config: WorkerConfig, *, keep: tuple[str, ...] = (), own_proc: bool = True) -> None:
        self.config = config
        self.own_proc = own_proc
        self.fresh = bool(config.job_tmpfs)
        self.keep = tuple(dict.fromkeys((*config.keep, *keep)))
        self.workdir = os.path.join(config.scratch, JOB_DIR)
        self.tmpdir = os.path.join(config.scratch, TMP_DIR)
        self._kept: list[tuple[str, int]] = []
        if self.fresh:
            for entry in self.keep:
                try:
                    self._kept.append((entry, os.open(entry, os.O_PATH | os.O_CLOEXEC)))
                except OSError:
                    continue
        # Told apart from what a job mounts over them by device number, read before any job.
        self._base = {path: os.stat(path).st_dev for path, _ in config.job_tmpfs}
        self._base["/proc"] = os.fstat(pin_proc()).st_dev
        self._mounted: list[str] = []
        self._proc_pending = False
        """Whether a job may have mounted a ``/proc`` of its own not yet released."""
        self._problems: list[str] = []

    def probe(self) -> str | None:
        """Mount and detach the job file systems once, before serving: None when that works (or
        none are used), else why not; where the sandbox gave the worker a private ``/tmp`` of its
        own to fall back on (``config.wipe``), the jobs then share it and it is wiped after each
        one (and the reason is a note). Raises OSError where there is nothing to fall back on: a
        worker must never serve with the host's ``/tmp``."""
        if not self.fresh:
            return None
        try:
            self.open()
        except OSError as error:
            if not self.config.wipe:
                raise
            self.fresh = False
            return f"no fresh /tmp per job ({error.strerror}): the worker's private /tmp is wiped instead"
        problems = self.close()
        if problems:
            raise OSError(0, "; ".join(problems))
        return None

    def open(self) -> None:
        """Mount the job's file systems, where fresh ones are used (``workdir`` and ``tmpdir``
        are then created in them by :func:`.workdir.prepare`)."""
        self._proc_pending = True
        if self.fresh:
            try:
                for path, mib in self.config.job_tmpfs:
                    native.mount(
                        "tmpfs", path, "tmpfs", native.MS_NOSUID | native.MS_NODEV, f"size={mib}m,mode=1777"
                    )
                    self._mounted.append(path)
                self._proc_mount_point()
                self._bind_kept()
            except OSError:
                self.close()
                raise

    def _proc_mount_point(self) -> None:
        """Where ``/proc`` leads into the new ``/tmp``: the directory the job mounts its ``/proc``
        on (or the worker's is bound to, as jobs would otherwise see it, where they have none of
        their own)."""
        if not self.config.proc_dir:
            return
        os.mkdir(self.config.proc_dir, 0o555)
        if not self.own_proc:
            with in_pinned_proc():
                # Recursive: the sandbox's read-only covers over parts of it come along.
                native.mount(".", self.config.proc_dir, "", native.MS_BIND | native.MS_REC)

    def _bind_kept(self) -> None:
        for entry, handle in self._kept:
            # Recursive: a kept entry may hold the sandbox's own mounts (masks, deeper binds).
            bind_back(entry, handle, recursive=True)

    def close(self) -> list[str]:
        """Detach the job's file systems (or wipe its directories); what could not be undone
        (empty when all went: otherwise the worker must not serve again)."""
        problems = []
        # Where /proc leads into a fresh /tmp, the job's /proc goes with that /tmp.
        if self._proc_pending and not (self.fresh and self.config.proc_dir):
            problems += self._detach("/proc")
        self._proc_pending = False
        if not self.fresh:
            keep = (*self.keep, self.config.proc_dir) if self.config.proc_dir else self.keep
            return [*problems, *wipe(self.workdir, self.tmpdir, self.config.wipe, keep)]
        while self._mounted:
            problems += self._detach(self._mounted.pop())
        if os.stat("/proc").st_dev != self._base["/proc"]:
            problems.append("/proc: a job's /proc is still mounted")
        return problems

    def _detach(self, path: str) -> list[str]:
        try:
            detach_down_to(path, self._base[path])
        except OSError as error:
            return [f"{path}: {error}"]
        return []


def bind_back(entry: str, handle: int, *, recursive: bool) -> None:
    """Bind what the ``O_PATH`` descriptor ``handle`` holds at ``entry`` (first created as an
    empty directory or file, as the handle's is), read-only; ``recursive`` takes the mounts below
    it along. The handle is reached through the pinned ``/proc``: ``/proc`` by name may lead into
    a new, still empty ``/tmp`` (``WorkerConfig.proc_dir``).

    Raises:
        OSError: the entry could not be created, bound or made read-only.
    """
    with in_pinned_proc():
        source = f"self/fd/{handle}"
        if os.path.isdir(source):
            os.mkdir(entry, 0o755)
        else:
            os.close(os.open(entry, os.O_CREAT | os.O_WRONLY, 0o644))
        native.mount(source, entry, "", native.MS_BIND | (native.MS_REC if recursive else 0))
    native.remount_read_only(entry)


_MOST_STACKED = 8
"""Mounts detached at one path at most before giving up (a job can mount nothing itself)."""


def detach_down_to(path: str, base_device: int) -> None:
    """Detach mounts at ``path`` until the file system there is ``base_device`` again.

    Raises:
        OSError: one could not be detached, or more than :data:`_MOST_STACKED` were found.
    """
    for _ in range(_MOST_STACKED):
        if os.stat(path).st_dev == base_device:
            return
        native.detach(path)
    if os.stat(path).st_dev != base_device:
        raise OSError(0, f"{path}: more than {_MOST_STACKED} mounts to detach")
