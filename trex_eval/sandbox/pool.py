"""The executor pool: warm sandboxed workers that run untrusted programs, one fresh process each."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import platform
import secrets
import tempfile
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from .. import config
from ..errors import SandboxError
from ..fairness import FairGate, Grant
from ..records import ExecStatus, Execution
from ..waits import waiting
from . import instances, launch
from .cgroups import PoolGroups, remove_stale_groups
from .isolation import IsolationReport, probe_isolation
from .job import Job
from .lanes import Lanes
from .libraries import installed_versions
from .licence import LicenceReport, licence_preflight
from .licence_facts import remember_preflight, remembered_preflight
from .limits import SandboxLimits
from .outcome import TrustedLicence, build_execution, gurobipy_licence_failure
from .runtime import hooks
from .runtime.contract import STARVED_FACTOR, STARVED_SLACK_S, real_time_cap_s
from .scratch import (
    OWNER_FILE,
    SCRATCH_PREFIX,
    _owner_stamp,
    _remove_quietly,
    remove_stale_scratch,
)
from .worker import WorkerFailure, WorkerGone, WorkerProcess
from .worker_config import WorkerSettings

logger = logging.getLogger("trex_eval.sandbox")
_AS_THIS_USER = "programs run at the rlimits level, as this user, and could write it"
T = TypeVar("T")

DEFAULT_PRELOAD: tuple[str, ...] = ()
"""Imported by every worker, in this order, before it serves jobs. Empty by default: every
pre-imported library makes every fork dearer (measured, bare fork of a HiGHS program on 2 cores:
228/s with highspy alone, 143/s with OR-Tools, gurobipy, PuLP, highspy and NumPy), so workers warm
what the workload uses instead (:data:`DEFAULT_WARMABLE`)."""

DEFAULT_WARMABLE = (*hooks.WARMABLE, "numpy")
"""Libraries a worker imports itself once two of its programs imported them, so that the following
forks start with them loaded: every solver hook's ``WARM`` modules in their ``WARM_ORDER``
(:mod:`.runtime.hooks`), then NumPy. OR-Tools' linear solver is warmed before PuLP (PuLP loaded
first makes OR-Tools MathOpt solves crash with SIGSEGV, in or out of the sandbox)."""

DEFAULT_LIMITS = SandboxLimits()
_REPLY_MARGIN_S = 30.0


class SandboxPool:
    """Runs programs in warm, isolated worker processes. Thread-safe; usable from asyncio.

    Args:
        limits: per-program limits (see :class:`SandboxLimits` for defaults and breaches).
        workers: number of worker processes = programs running at once.
        isolation: ``"auto"`` (strongest available) or a level to insist on (``SandboxError`` at
            :meth:`start` if it does not work here).
        preload: modules each worker imports before serving (see :data:`DEFAULT_PRELOAD`).
        warmable: modules a worker imports once its programs use them (see :data:`DEFAULT_WARMABLE`).
        hidden: directories programs must not see (bubblewrap level): the benchmark data with
            its reference answers, run directories. The store of re-solve results
            (:func:`trex_eval.config.resolve_store_dir`) and the start facts
            (:func:`trex_eval.config.start_facts_dir`) are always added.
        extra_env: variables added to the programs' otherwise empty environment.
        highs_package: folder of the licence-free gurobipy layer that ``highs`` jobs import as
            ``gurobipy`` (default: the installed ``gurobipy_highs``, located without importing it).
        start_timeout_s: how long a worker may take to become ready.
        cgroups: give every worker a cgroup of its own where the harness may (see
            :mod:`.cgroups`; ``False``: never, jobs are then charged by sampling alone).

    The pool does nothing until :meth:`start` (or ``with``): probing isolation, checking licences
    and starting workers take a few seconds.
    """

    def __init__(
        self,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        workers: int = 2,
        isolation: Literal["auto", "bwrap", "unshare", "rlimits"] = "auto",
        preload: tuple[str, ...] = DEFAULT_PRELOAD,
        warmable: tuple[str, ...] = DEFAULT_WARMABLE,
        hidden: tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
        highs_package: Path | None = None,
        start_timeout_s: float = 180.0,
        cgroups: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError("a sandbox pool needs at least one worker")
        self.limits = limits
        self.workers = workers
        self.preload = preload
        self.warmable = warmable
        private = tuple(str(path) for path in (config.resolve_store_dir(), config.start_facts_dir()) if path)
        self.hidden = tuple(os.path.realpath(path) for path in (*hidden, *private))
        self.highs_package = highs_package if highs_package is not None else launch.highs_package()
        self._requested_isolation = isolation
        self._extra_env = dict(extra_env or {})
        self._environment = launch.sandbox_environment(self._extra_env)
        self._start_timeout_s = start_timeout_s
        self._report: IsolationReport | None = None
        self._licence: LicenceReport | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self._root: Path | None = None
        self._remove_root: weakref.finalize[..., SandboxPool] | None = None
        self._lanes: Lanes | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._gate = FairGate(workers, name="sandbox lane")
        self._ready: dict[str, Any] = {}
        self._groups: PoolGroups | None = None
        self._groups_note = "" if cgroups else "not asked for"
        self._want_groups = cgroups

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Probe isolation, pre-flight licences, start the workers; log the level in force.

        Raises:
            SandboxError: the requested isolation is unavailable or no worker could start.
        """
        if self._started:
            return
        launch.cache_runtime_bytecode()
        for private in (config.resolve_store_dir(), config.start_facts_dir()):
            if private is not None:  # a folder that is missing cannot be masked where a bound tree holds it
                with contextlib.suppress(OSError):
                    private.mkdir(mode=0o700, parents=True, exist_ok=True)
        # The licence check is a process of its own that needs nothing from the probe: it runs
        # beside the probe and the workers' start instead of after either, where no earlier
        # command of the day left its answer.
        preflight = functools.partial(licence_preflight, extra_env=self._extra_env)
        remembered = remembered_preflight(extra_env=self._extra_env)
        licence = _in_background(preflight) if remembered is None else None
        report = probe_isolation(
            prefer=self._requested_isolation,
            disk_mib=self.limits.disk_mib,
            hidden=self.hidden,
            needed=(str(instances.ensure_store()), *[str(p) for p in (self.highs_package,) if p]),
        )
        self._report = report
        if report.level == "rlimits" and (store := config.withdraw_resolve_store(_AS_THIS_USER)):
            logger.warning("sandbox: the store of re-solve results (%s) is emptied and not used", store)
        if report.level == "rlimits" and licence is None:  # a program of an earlier run may have written it
            licence = _in_background(preflight)
        for removed in remove_stale_scratch():
            logger.info("sandbox: removed the scratch directory of a harness that is gone: %s", removed)
        self._root = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        (self._root / OWNER_FILE).write_text(_owner_stamp(os.getpid()) or "", encoding="utf-8")
        # Removed by close(), or at interpreter exit for a pool nobody closed.
        self._remove_root = weakref.finalize(self, _remove_quietly, str(self._root))
        for removed in remove_stale_groups():
            logger.info("sandbox: removed the cgroup of a harness that is gone: %s", removed)
        if self._want_groups:
            self._groups, self._groups_note = PoolGroups.detect(workers=self.workers)
        if self._groups is None:
            logger.info("sandbox: no cgroup per worker (%s)", self._groups_note)
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="trex-sandbox")
        self._started = True
        settings = WorkerSettings(
            limits=self.limits,
            lanes=self.workers,
            preload=tuple(self.preload),
            warmable=tuple(self.warmable),
            highs_package=str(self.highs_package or ""),
            environment=self._environment,
        )
        self._lanes = Lanes(
            report, settings, root=self._root, groups=self._groups, start_timeout_s=self._start_timeout_s
        )
        try:
            self._lanes.start()
            self._licence = licence.result() if licence is not None else remembered
            if licence is not None and report.level != "rlimits":
                remember_preflight(licence.result(), extra_env=self._extra_env)
        except Exception:
            self.close()
            raise
        self._ready = self._lanes.ready
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
        if self._lanes is not None:
            self._lanes.close()
        elif self._groups is not None:
            self._groups.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
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
    def fair_share(self) -> dict[str, object]:
        """How jobs are kept from slowing each other (for the manifest): ``cgroups`` (``v1``,
        ``v2`` or None, with the reason there are none), and what every job is charged."""
        self._require_started()
        return {
            "cgroups": None if self._groups is None else self._groups.kind,
            "why_none": self._groups_note or None,
            "cpu": "per job, all its processes: "
            + ("the worker's cgroup counter" if self._groups else "sampled sum of its processes"),
            "wall": "wall-clock time less time starved of its fair CPU share "
            f"(stopped after {STARVED_FACTOR:g} x wall_s + {STARVED_SLACK_S:g} s whatever it was charged)",
            "processes": "pids.max per worker" if self._groups else "RLIMIT_NPROC (per uid)",
            "memory": "per job, all its processes and its tmpfs: "
            + (
                "the worker's cgroup memory limit"
                if self._groups is not None and "memory" in self._groups.roots
                else "sampled private resident memory and tmpfs use"
            ),
        }

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
                for key in (
                    "job_pid_namespace",
                    "job_uid",
                    "nproc_enforced",
                    "job_tmpfs",
                    "job_proc",
                    "random_pids",
                    "notes",
                )
            },
            "fair_share": self.fair_share,
            "limits": self.limits.model_dump(mode="json"),
            "licence": self.licence.model_dump(mode="json"),
            "workers": self.workers,
            "preload": list(self.preload),
            "warmable": list(self.warmable),
            "preload_errors": self._ready.get("preload_errors", {}),
            "versions": {"python": platform.python_version(), **installed_versions(self.highs_package)},
        }

    # ------------------------------------------------------------------ running

    def run(self, job: Job, *, limits: SandboxLimits | None = None) -> Execution:
        """Run ``job`` in a fresh sandboxed process and return what happened (blocking).

        Never raises for anything the program does. ``gurobi="auto"`` resolves to ``real`` when
        the licence pre-flight passed, else ``highs``; a ``real`` run that fails with a gurobipy
        licence error is rerun under ``highs`` when the gurobipy_highs layer is installed. ``limits``
        replaces the pool's limits for this job (except ``disk_mib``, fixed when workers start).

        Lanes are shared fairly among the tenants of :mod:`trex_eval.fairness` (a job waits for one in
        :class:`~trex_eval.fairness.FairGate` order, and under a deadline gets at most the time left to it as
        its wall limit).

        Raises:
            SandboxError: the pool is not started or closed, or the sandbox itself broke.
            DeadlinePassed: the current :func:`~trex_eval.fairness.scope`'s deadline passed before
                a lane was free.
        """
        self._require_started()
        with self._gate.hold() as grant:
            return self._run_granted(job, grant.fit(limits or self.limits))

    async def arun(self, job: Job, *, limits: SandboxLimits | None = None) -> Execution:
        """:meth:`run` without blocking the event loop: waits for its lane in asyncio, then runs
        on the pool's own threads (one per lane, so a granted job never queues behind another)."""
        self._require_started()
        grant = await self._gate.acquire()
        try:
            self._require_started()  # closed while it waited: say so, not "executor shut down"
            fitted = grant.fit(limits or self.limits)
            running = asyncio.get_running_loop().run_in_executor(
                self._executor, self._run_released, grant, job, fitted
            )
        except BaseException:
            grant.release()
            raise
        # Shielded: a caller that stops waiting must not cancel a job not yet started on its
        # thread, which alone gives the lane back.
        running.add_done_callback(lambda done: done.cancelled() or done.exception())
        with waiting("a program running in the sandbox"):
            return await asyncio.shield(running)

    def _run_released(self, grant: Grant, job: Job, limits: SandboxLimits) -> Execution:
        with grant:
            return self._run_granted(job, limits)

    def _run_granted(self, job: Job, limits: SandboxLimits) -> Execution:
        """:meth:`run` once its lane is granted."""
        gurobi = job.gurobi
        if gurobi == "auto":
            gurobi = "real" if self.licence.gurobipy_ok else "highs"
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
        return execution

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

    def _execute(self, job: Job, gurobi: str, limits: SandboxLimits) -> Execution:
        """:meth:`_execute_once`, and once more for a job the machine starved (not its fault)."""
        execution, starved = self._execute_once(job, gurobi, limits)
        if not starved:
            return execution
        again, _ = self._execute_once(job, gurobi, limits)
        return again.model_copy(
            update={"detail": _join(again.detail, f"run again after: {execution.detail}")}
        )

    def _execute_once(self, job: Job, gurobi: str, limits: SandboxLimits) -> tuple[Execution, bool]:
        report = self._require_started()
        nonce = secrets.token_hex(16)
        request = self._request(job, gurobi, limits, nonce=nonce, level=report.level)
        lanes = self._lanes
        assert lanes is not None
        for attempt in range(2):
            process = lanes.take()
            try:
                reply = process.request(request, real_time_cap_s(limits.wall_s) + _REPLY_MARGIN_S)
                if not reply.not_run:
                    break
                # The worker could not undo the previous job's traces: it ran nothing and stops.
                logger.warning("sandbox: retiring a worker: %s", str(reply.retire)[:300])
                raise WorkerGone("the worker retired before the job")
            except WorkerGone:
                # The job never started: not the program's fault. One more worker, then give up.
                lanes.replace(process)
                if self._closed or attempt:
                    raise SandboxError(
                        "sandbox workers keep dying before a job starts", where="sandbox"
                    ) from None
            except WorkerFailure as error:
                lanes.replace(process)
                if self._closed:
                    raise SandboxError("the sandbox pool was closed while the program ran") from None
                return Execution(
                    status=ExecStatus.KILLED,
                    detail=f"the sandbox worker died while running the program: {error}"[:1000],
                    isolation=report.level,
                ), False
        retired = reply.retire
        if retired and isinstance(process, WorkerProcess):
            # The job left traces the worker could not wipe: it must not serve again.
            logger.warning("sandbox: retiring a worker: %s", str(retired)[:300])
            lanes.replace(process)
        else:
            lanes.give_back(process)
        if reply.lost is not None:
            return Execution(
                status=ExecStatus.KILLED,
                detail=f"the sandbox worker died while running the program: {reply.lost}"[:1000],
                isolation=report.level,
            ), False
        if reply.error is not None:
            raise SandboxError(f"the sandbox failed to run a job: {reply.error}", where="sandbox")
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
        except Exception as error:
            # What the program wrote is read here; however odd, it is the program's failure and
            # must not stop a run. Logged: it may also be a harness bug worth a report.
            logger.warning("sandbox: a job's reply could not be read", exc_info=True)
            execution = Execution(
                status=ExecStatus.RUNTIME_ERROR,
                detail=f"the program's result records could not be read ({type(error).__name__}: {error})"[
                    :1000
                ],
                isolation=report.level,
            )
        if retired:
            note = f"the worker was replaced after this program: {retired}"[:500]
            execution = execution.model_copy(update={"detail": _join(execution.detail, note)})
        return execution, reply.killed_for == "starved"

    def _request(
        self, job: Job, gurobi: str, limits: SandboxLimits, *, nonce: str, level: str
    ) -> dict[str, Any]:
        """What a worker is sent for ``job``. At ``rlimits`` programs can write what the harness
        can: their data files are staged in a store of the pool's own (:mod:`.instances`)."""
        own = self._root / "instances" if level == "rlimits" and self._root is not None else None
        return {
            "id": nonce[:8],
            "code": job.code,
            **instances.workdir_entries(job, root=own),
            "gurobi": gurobi,
            "collect": list(job.collect),
            "nonce": nonce,
            "limits": limits.model_dump(),
        }

    def _trusted_licence(self) -> TrustedLicence | None:
        """The pre-flight's gurobipy findings: a program's own licence-failure records are claims."""
        found = self._licence.get("gurobipy") if self._licence is not None else None
        return None if found is None else TrustedLicence(ok=found.ok, size_limited=found.size_limited)


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
