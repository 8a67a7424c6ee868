"""The pool's worker processes: started (each in a cgroup of its own where there are cgroups),
lent to one job at a time, replaced when they die or leave traces, stopped at close."""

from __future__ import annotations

import functools
import logging
import queue
import secrets
import threading
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from . import launch
from .cgroups import Lane, LaneDescriptors, PoolGroups
from .isolation import IsolationReport
from .worker import Spawner, WorkerFailure, WorkerProcess
from .worker_config import WorkerSettings, worker_config

logger = logging.getLogger("trex_eval.sandbox")


class Broken:
    """Placed in the idle queue when a worker cannot be replaced or the pool is closed; each caller
    that draws it puts it back for the next and fails loudly."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Lanes:
    """``settings.lanes`` workers under ``report``'s isolation, started by :meth:`start`.

    ``root`` is the pool's host scratch directory (worker logs; scratch at ``rlimits``);
    ``groups`` the pool's cgroups, or None. Thread-safe.
    """

    def __init__(
        self,
        report: IsolationReport,
        settings: WorkerSettings,
        *,
        root: Path,
        groups: PoolGroups | None,
        start_timeout_s: float,
    ) -> None:
        self.report = report
        self.settings = settings
        self.root = root
        self.groups = groups
        self.start_timeout_s = start_timeout_s
        self.ready: dict[str, Any] = {}
        self._idle: queue.Queue[WorkerProcess | Broken] = queue.Queue()
        self._live: set[WorkerProcess] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._sequence = 0
        self._spawner = Spawner()

    def start(self) -> None:
        """Start every worker and wait until each is ready (SandboxError if one is not)."""
        starting = [
            self._spawner.submit(functools.partial(self._spawn, index))
            for index in range(self.settings.lanes)
        ]
        processes = [future.result() for future in starting]
        for process in processes:
            self.ready = self._await_ready(process)
        for process in processes:
            self._idle.put(process)

    def take(self) -> WorkerProcess:
        """An idle worker, waiting for one (SandboxError when none can ever come)."""
        process = self._idle.get()
        if isinstance(process, Broken):
            self._idle.put(process)
            raise SandboxError(f"the sandbox cannot serve the job: {process.reason}", where="sandbox")
        return process

    def give_back(self, process: WorkerProcess) -> None:
        self._idle.put(process)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop every worker and remove their cgroups. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live = list(self._live)
            self._live.clear()
        for process in live:
            process.kill()
        while True:
            try:
                idle = self._idle.get_nowait()
            except queue.Empty:
                break
            if isinstance(idle, WorkerProcess):
                idle.release()
        # Threads already waiting for a worker must wake up and fail, not wait forever; each one
        # puts the marker back for the next.
        self._idle.put(Broken("the sandbox pool is closed"))
        self._spawner.close()
        if self.groups is not None:
            self.groups.close()

    def replace(self, dead: WorkerProcess) -> None:
        """Kill ``dead`` and start a replacement in the background; if that fails, mark the pool broken."""
        dead.kill()
        dead.release()
        if self.groups is not None and dead.lane is not None:
            self.groups.remove(dead.lane)
        with self._lock:
            self._live.discard(dead)
            if self._closed:
                return
            self._sequence += 1
            index = self.settings.lanes + self._sequence

        def respawn() -> None:
            try:
                process = self._spawner.submit(lambda: self._spawn(index)).result()
                self._await_ready(process)
            except Exception as error:
                self._idle.put(Broken(str(error)))
                return
            self._idle.put(process)

        threading.Thread(target=respawn, name="trex-sandbox-respawn", daemon=True).start()

    # ------------------------------------------------------------------ internals

    def _spawn(self, index: int) -> WorkerProcess:
        lane, descriptors, prefix = self._lane(index)
        try:
            config = worker_config(
                self.report,
                self.settings,
                scratch=lambda: str(self._make_scratch(index)),
                lane=lane,
                descriptors=descriptors,
            )
            process = WorkerProcess.spawn(
                [*prefix, *self.report.command, *launch.runtime_command("server", config.to_json())],
                env=self.settings.environment,
                log_path=self.root / f"worker-{index}.log",
                pass_fds=() if descriptors is None else descriptors.all,
                lane=lane,
            )
        finally:
            if descriptors is not None:
                descriptors.close()
        with self._lock:
            if self._closed:
                process.kill()
                raise SandboxError("the sandbox pool is closed")
            self._live.add(process)
        return process

    def _make_scratch(self, index: int) -> Path:
        scratch = self.root / f"worker-{index}-{secrets.token_hex(4)}"
        scratch.mkdir(mode=0o700)
        return scratch

    def _lane(self, index: int) -> tuple[Lane | None, LaneDescriptors | None, list[str]]:
        """A cgroup for worker ``index`` where the pool has them: the lane, the descriptors the
        worker inherits on its files, and the command prefix that starts the worker in it."""
        shell = launch.find_tool("sh")
        if self.groups is None or shell is None:
            return None, None, []
        try:
            lane = self.groups.lane(index)
            descriptors = lane.open_descriptors()
        except OSError as error:
            logger.warning("sandbox: worker %d runs without a cgroup of its own: %s", index, error)
            return None, None, []
        return lane, descriptors, lane.command_prefix(shell)

    def _await_ready(self, process: WorkerProcess) -> dict[str, Any]:
        try:
            ready = process.await_ready(self.start_timeout_s)
        except WorkerFailure as error:
            raise SandboxError(f"a sandbox worker failed to start: {error}", where="sandbox") from None
        if process.lane is not None:
            try:
                process.lane.limit_processes(self.settings.limits.max_processes)
            except (OSError, ValueError) as error:
                logger.warning("sandbox: no pids.max for a worker: %s", error)
        return ready
