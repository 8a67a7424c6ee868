"""A model server run as a child process of the harness: start, health-check, log, stop.

The ``vllm`` and ``local`` backends both serve their model from a separate process and talk to
it over loopback HTTP. Keeping inference out of the harness process is what lets the sandbox fork
its warm workers safely (no CUDA context, no native thread pools in the forking process), and a
crash of the inference engine becomes a :class:`~trex_eval.errors.BackendError` instead of the
end of the run.

The server is started in its own session (process group), so that :meth:`ServerProcess.stop`
also ends the engine processes it spawned. Its stdout and stderr go to a log file; when start-up
fails, the error quotes the last lines of that log and names the file.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from trex_eval import config, waits
from trex_eval.errors import BackendError

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ServerLaunch:
    """How to start one server process and how to tell that it is ready.

    Attributes:
        label: what the server is, for messages (``"vLLM"``, ``"llama.cpp server"``).
        argv: the command line; ``argv[0]`` is an executable path or a name looked up on PATH.
        port: the TCP port the command makes the server listen on, on ``host``.
        host: the address the server binds; loopback by default.
        ready_paths: GET paths that must all answer 200, in order, before the server counts as
            ready (``/health`` first: it is cheap and turns 200 only once the model is loaded).
        startup_timeout_s: seconds to wait for readiness before the process group is killed and
            :class:`BackendError` is raised.
        stop_grace_s: seconds between SIGTERM and SIGKILL when stopping.
        log_file: where stdout and stderr go (appended); ``None``: a new file in the temp dir.
        env: environment of the server process; ``None`` inherits the harness's environment.
    """

    label: str
    argv: tuple[str, ...]
    port: int
    host: str = LOOPBACK
    ready_paths: tuple[str, ...] = ("/health", "/v1/models")
    startup_timeout_s: float = 300.0
    stop_grace_s: float = 15.0
    log_file: Path | None = None
    env: Mapping[str, str] | None = None


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now.

    Another process may take it before the server binds it; the server then fails to start and
    the error quotes its log, so the race costs a clear message, never a wrong connection.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


class ServerProcess:
    """One managed server process. Not reusable: ``start`` once, ``stop`` any number of times."""

    _POLL_S = 0.25
    _PROBE_TIMEOUT_S = 5.0
    _LOG_TAIL_LINES = 40

    def __init__(self, launch: ServerLaunch) -> None:
        self.launch = launch
        self._own_log = launch.log_file is None
        self.log_path = launch.log_file or _new_log_name(launch.label)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the server (no trailing slash, no ``/v1``)."""
        return f"http://{self.launch.host}:{self.launch.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def start(self) -> None:
        """Spawn the server and wait until every ready path answers 200.

        Raises:
            BackendError: the executable cannot be started, the process exits during start-up, or
                it is not ready within ``startup_timeout_s``; the message quotes the log tail. The
                process group is killed before raising.
        """
        if self._process is not None:
            raise BackendError(f"{self.launch.label} was already started (pid {self._process.pid})")
        if shutil.which(self.launch.argv[0]) is None:
            raise BackendError(
                f"cannot start {self.launch.label}: {self.launch.argv[0]}: no such executable file"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # A log of our own is created only now, exclusively (no other process's file or link in the
        # temp dir is appended to), so a server never started leaves no file behind.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if self._own_log else 0)
        with open(os.open(self.log_path, flags, 0o600), "ab") as log:
            try:
                self._process = subprocess.Popen(
                    _dying_with_this_process(self.launch.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=dict(self.launch.env) if self.launch.env is not None else config.environment(),
                    start_new_session=True,
                )
            except OSError as error:
                raise BackendError(
                    f"cannot start {self.launch.label}: {self.launch.argv[0]}: {error.strerror or error}"
                ) from error
        _LIVE.add(self)
        _register_exit_hook()
        try:
            with waits.waiting(f"the {self.launch.label} to start (log: {self.log_path})"):
                await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> int | None:
        """End the whole process group: SIGTERM, then SIGKILL after ``stop_grace_s``. Idempotent.

        Returns the server's exit status (negative: killed by that signal), or ``None`` if it was
        never started.
        """
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            deadline = time.monotonic() + self.launch.stop_grace_s
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        # The leader may have exited while engine workers in its group still run.
        _signal_group(process.pid, signal.SIGKILL)
        returncode = await asyncio.to_thread(process.wait)
        _LIVE.discard(self)
        if self._own_log:  # an empty log of our own says nothing: not left behind in the temp dir
            with contextlib.suppress(OSError):
                if self.log_path.stat().st_size == 0:
                    self.log_path.unlink()
        return returncode

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server log (empty if there is no log yet)."""
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - 64 * 1024))
                text = handle.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.launch.startup_timeout_s
        pending = list(self.launch.ready_paths)
        last_answer = "no answer yet"
        # trust_env=False: an HTTP(S)_PROXY from the environment must not capture loopback probes.
        async with httpx.AsyncClient(
            base_url=self.base_url, timeout=self._PROBE_TIMEOUT_S, trust_env=False
        ) as client:
            while pending:
                returncode = self._process.poll()
                if returncode is not None:
                    raise self._failure(f"exited with status {returncode} during start-up")
                if time.monotonic() > deadline:
                    raise self._failure(
                        f"was not ready after {self.launch.startup_timeout_s:g} s "
                        f"(GET {pending[0]}: {last_answer})"
                    )
                try:
                    response = await client.get(pending[0])
                except httpx.HTTPError as error:
                    last_answer = type(error).__name__
                else:
                    if response.status_code == 200:
                        pending.pop(0)
                        continue
                    last_answer = f"HTTP {response.status_code}"
                await asyncio.sleep(self._POLL_S)

    def _failure(self, what: str) -> BackendError:
        tail = self.log_tail()
        quoted = "\n".join(f"    | {line}" for line in tail.splitlines()) or "    | (empty log)"
        return BackendError(
            f"{self.launch.label} {what}; last lines of its log:\n{quoted}",
            where=str(self.log_path),
            hint=f"command: {' '.join(self.launch.argv)}",
        )


def _signal_group(pid: int, signum: signal.Signals) -> None:
    # The server is a session leader, so its pid is also its process-group id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _new_log_name(label: str) -> Path:
    """A fresh name in the temp dir; the file is created exclusively when the server starts."""
    slug = "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-") or "server"
    return Path(tempfile.gettempdir()) / f"trex-{slug}-{secrets.token_hex(6)}.log"


# Servers still running when the interpreter exits (a crash between start() and close()) are
# killed so that no model server outlives the harness and keeps its port and memory.
_LIVE: weakref.WeakSet[ServerProcess] = weakref.WeakSet()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_kill_live_servers)
        _exit_hook_registered = True


def _kill_live_servers() -> None:
    for server in list(_LIVE):
        if server.pid is not None:
            _signal_group(server.pid, signal.SIGKILL)


def _dying_with_this_process(argv: Sequence[str]) -> list[str]:
    """``argv`` behind ``setpriv --pdeathsig KILL`` when util-linux has it: a harness killed with
    SIGKILL (or by the OOM killer) runs no clean-up, and a vLLM server left behind would keep the
    GPU. (The server is started from the event loop's thread, which lives as long as the run.)"""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)
