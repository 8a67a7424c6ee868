"""The harness's handle on one warm worker process: start it, exchange frames, stop it.

Worker processes must be started from a thread that outlives them: bubblewrap's
``--die-with-parent`` and ``setpriv --pdeathsig`` fire when the *thread* that forked them exits.
:class:`Spawner` is that thread.
"""

from __future__ import annotations

import contextlib
import os
import queue
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from .cgroups import Lane
from .runtime import framing
from .runtime.contract import PROTOCOL, JobReply

T = TypeVar("T")


class WorkerFailure(Exception):
    """The worker died, hung, or broke the protocol (the job it ran gets status ``killed``, and
    the worker is replaced)."""


class WorkerGone(WorkerFailure):
    """The worker was already dead when a job was handed to it: the job never ran."""


class WorkerProcess:
    """One running worker. Not thread-safe: the pool lends it to one caller at a time."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path, lane: Lane | None = None) -> None:
        self.process = process
        self.log_path = log_path
        self.lane = lane
        """The worker's cgroup (see :mod:`.cgroups`), or None."""
        self.ready: dict[str, Any] = {}
        self._buffer = bytearray()
        assert process.stdin is not None and process.stdout is not None
        self._in = process.stdin.fileno()
        self._out = process.stdout.fileno()
        os.set_blocking(self._out, False)

    @classmethod
    def spawn(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        log_path: Path,
        pass_fds: tuple[int, ...] = (),
        lane: Lane | None = None,
    ) -> WorkerProcess:
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=dict(env),
                close_fds=True,
                pass_fds=pass_fds,
                start_new_session=True,
            )
        return cls(process, log_path, lane)

    def await_ready(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the worker's ``ready`` message (WorkerFailure on death, garbage, timeout, or
        a worker that speaks another protocol than this harness: see ``contract.PROTOCOL``)."""
        message = self._read_frame(time.monotonic() + timeout_s)
        if not message.get("ready"):
            raise WorkerFailure(f"unexpected first message from worker: {str(message)[:200]}")
        if message.get("protocol") != PROTOCOL:
            raise WorkerFailure(
                f"the worker speaks protocol {str(message.get('protocol'))[:20]}, this harness "
                f"{PROTOCOL}: trex-eval was changed on disk while it ran; start it again (a run's "
                "--resume keeps what was graded)"
            )
        self.ready = message
        return message

    def request(self, message: dict[str, Any], timeout_s: float) -> JobReply:
        """Send one job and wait for its reply: WorkerFailure on death, after ``timeout_s``, or
        for a reply that is malformed (:meth:`JobReply.decode`) or answers another request."""
        if self.process.poll() is not None:
            raise WorkerGone(f"worker exited with status {self.process.returncode} before the job")
        data = memoryview(framing.encode(message))
        try:
            while data:
                data = data[os.write(self._in, data) :]
        except OSError as error:
            raise WorkerGone(f"worker stopped accepting jobs: {error}") from None
        found = self._read_frame(time.monotonic() + timeout_s)
        try:
            reply = JobReply.decode(found)
        except ValueError as error:
            raise WorkerFailure(f"its reply is malformed: {error}") from None
        if reply.id != message.get("id"):
            raise WorkerFailure(f"its reply answers request {reply.id[:20]!r}, not {message.get('id')!r}")
        return reply

    def _read_frame(self, deadline: float) -> dict[str, Any]:
        with selectors.DefaultSelector() as selector:
            selector.register(self._out, selectors.EVENT_READ)
            while True:
                if len(self._buffer) >= framing.HEADER_BYTES:
                    try:
                        length = framing.body_length(bytes(self._buffer[: framing.HEADER_BYTES]))
                    except framing.FrameError as error:
                        raise WorkerFailure(str(error)) from None
                    end = framing.HEADER_BYTES + length
                    if len(self._buffer) >= end:
                        body = bytes(self._buffer[framing.HEADER_BYTES : end])
                        del self._buffer[:end]
                        try:
                            return framing.decode_body(body)
                        except framing.FrameError as error:
                            raise WorkerFailure(str(error)) from None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WorkerFailure("worker did not answer in time")
                if not selector.select(remaining):
                    continue
                try:
                    chunk = os.read(self._out, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise WorkerFailure(f"worker exited ({self._exit_description()}); log: {self.log_tail()}")
                self._buffer += chunk

    def _exit_description(self) -> str:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"exit status {code}"

    def log_tail(self, chars: int = 600) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill the worker (with bubblewrap or unshare, everything inside dies with it)."""
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=5.0)

    def release(self) -> None:
        """Close the pipes to a killed worker (only once nobody waits on them: a blocked reader
        would not notice the close and would wait for its deadline)."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class Spawner:
    """A long-lived thread that runs callables (worker starts) and hands back their results."""

    def __init__(self) -> None:
        self._tasks: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="trex-sandbox-spawner", daemon=True)
        self._thread.start()

    def submit(self, task: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._tasks.put((task, future))
        return future

    def _loop(self) -> None:
        while True:
            item = self._tasks.get()
            if item is None:
                return
            task, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(task())
            except BaseException as error:
                future.set_exception(error)

    def close(self) -> None:
        self._tasks.put(None)
        self._thread.join(timeout=10.0)
