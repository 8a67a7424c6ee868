"""The file systems a job writes to: a fresh tmpfs over ``/tmp`` and ``/dev/shm`` for every job.

Where the worker may mount (``bwrap`` and ``unshare``; ``WorkerConfig.job_tmpfs``) it mounts a new,
size-capped tmpfs over each of those paths just before a job, writes the job's directories into
it, and detaches it, with the ``/proc`` the job mounted for itself, once the job's reply is sent
(each detach waits for an RCU grace period, ~0.1 ms on a busy machine: the harness reads the reply
meanwhile). Nothing a job leaves there reaches the next one: not its files, not the space it took,
not the file system's inode counter (a new tmpfs numbers its inodes from the start; a reused one
carried a value from job to job). Detaching is also the wipe: no tree of the job's is walked.

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
from .processes import pin_proc
from .workdir import wipe


class JobFileSystems:
    """Prepares and releases the directories of one job after another (one worker, one job at once).

    ``keep``: entries of ``/tmp`` bound back into every new one, besides ``config.keep``.

    Raises (from :meth:`open`):
        OSError: a tmpfs could not be mounted (the worker must not serve with a shared ``/tmp``).
    """

    def __init__(self, config: WorkerConfig, *, keep: tuple[str, ...] = ()) -> None:
        self.config = config
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
                self._bind_kept()
            except OSError:
                self.close()
                raise

    def _bind_kept(self) -> None:
        for entry, handle in self._kept:
            source = f"/proc/self/fd/{handle}"
            if os.path.isdir(source):
                os.mkdir(entry, 0o755)
            else:
                os.close(os.open(entry, os.O_CREAT | os.O_WRONLY, 0o644))
            # Recursive: a kept entry may hold the sandbox's own mounts (masks, deeper binds).
            native.mount(source, entry, "", native.MS_BIND | native.MS_REC)
            native.remount_read_only(entry)

    def close(self) -> list[str]:
        """Detach the job's file systems (or wipe its directories); what could not be undone
        (empty when all went: otherwise the worker must not serve again)."""
        problems = []
        if self._proc_pending:
            self._proc_pending = False
            problems += self._detach("/proc")
        if not self.fresh:
            return [*problems, *wipe(self.workdir, self.tmpdir, self.config.wipe, self.keep)]
        while self._mounted:
            problems += self._detach(self._mounted.pop())
        return problems

    def _detach(self, path: str) -> list[str]:
        try:
            detach_down_to(path, self._base[path])
        except OSError as error:
            return [f"{path}: {error}"]
        return []


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
