"""The warm worker: pre-imports solver libraries, then forks one confined child per job.

Started by the harness (inside bubblewrap or ``unshare`` where available) as::

    python -I -B -X utf8 -c <bootstrap> <runtime dir> server <config JSON>

It speaks length-prefixed JSON on the descriptors that were its stdin/stdout (see ``framing``);
anything the libraries print goes to its stderr, which the harness keeps as a log. After start-up
it sends one ``ready`` message, then answers each job request with one reply, until stdin closes.

Per job it creates a working directory, forks a child that runs ``child.run`` (in a new PID
namespace when the kernel allows, so that killing the child kills everything it started),
watches the wall clock, the output size and (where ``RLIMIT_NPROC`` is not enforced) the number
of processes, then collects output, the result channel and the model files, and wipes the job's
traces before the next job.

Start-up checks live in ``confinement``, the job's directories in ``workdir``, the process table
in ``processes`` and warming in ``warming``.
"""

from __future__ import annotations

import gc
import importlib
import os
import resource
import select
import signal
import sys
import time
from typing import Any, NamedTuple

from . import child, framing, hooks, native
from . import workdir as workdir_files
from .channel import ResultChannel
from .confinement import (
    Confinement,
    calibrate_process_limit,
    check_job_uid,
    enter_job_namespaces,
    mount_private_tmpfs,
    take_protocol_descriptors,
)
from .contract import PROGRAM_FILE, WorkerConfig
from .imports import PostImportHooks
from .processes import descendants, kill_quietly, sweep_descendants
from .warming import Warmer

_TICK_S = 0.02
_DISK_SLACK = 1 << 20
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def main(argv: list[str]) -> int:
    config = WorkerConfig.from_json(argv[0])
    proto_in, proto_out = take_protocol_descriptors()
    if config.parent_pid is not None:
        native.prctl(native.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != config.parent_pid:
            return 1
    confinement = Confinement()
    # First, while the worker is (mapped) root of the mount namespace it was started in.
    mount_private_tmpfs(config, confinement)
    enter_job_namespaces(config, confinement, proto_in, proto_out)
    native.prctl(native.PR_SET_CHILD_SUBREAPER, 1)
    check_job_uid(config, confinement)
    calibrate_process_limit(confinement)
    finder = PostImportHooks(hooks.INSTALLERS)
    sys.meta_path.insert(0, finder)
    finder.install_loaded()
    preload_errors: dict[str, str] = {}
    for name in config.preload:
        try:
            importlib.import_module(name)
        except BaseException as error:
            preload_errors[name] = f"{type(error).__name__}: {error}"[:300]
            continue
        hooks.prewarm(name)
    gc.collect()
    gc.freeze()
    server = Server(config, confinement)
    warmer = Warmer(config)
    framing.write_frame(
        proto_out,
        {
            "ready": True,
            "pid": os.getpid(),
            "euid": os.geteuid(),
            "job_pid_namespace": confinement.pid_namespace_fd is not None,
            "job_uid": confinement.job_uid,
            "nproc_enforced": confinement.nproc_base is not None,
            "preloaded": [name for name in config.preload if name not in preload_errors],
            "preload_errors": preload_errors,
            "notes": confinement.notes,
        },
    )
    while True:
        try:
            request = framing.read_frame(proto_in)
        except framing.FrameError:
            return 0
        try:
            reply = server.run_job(request)
        except Exception as error:
            reply = {"id": request.get("id"), "error": f"{type(error).__name__}: {error}"[:2000]}
        if server.retire is not None:
            reply["retire"] = server.retire
        framing.write_frame(proto_out, reply)
        if server.retire is not None:
            # Traces of a job are left: this worker must not serve another (the pool starts a new one).
            return 0
        # After the reply, so the import's cost is off this job's path.
        warmer.after_job(reply, str(request.get("nonce", "")))
        # The next job is forked from this frame: it must not find this job's request (another
        # program's source) or reply (its output and records) among the worker's locals.
        del request, reply


class Supervision(NamedTuple):
    """How a job process ended: wait status, resource usage, wall seconds, and what the worker
    killed it for (``"wall"``, ``"output"``, ``"processes"``) if it did."""

    status: int
    rusage: resource.struct_rusage
    wall_s: float
    killed_for: str | None


class Server:
    """Runs jobs one at a time (a worker serves one job at once; the pool runs many workers)."""

    def __init__(self, config: WorkerConfig, confinement: Confinement) -> None:
        self.config = config
        self.confinement = confinement
        self.sequence = 0
        self.retire: str | None = None
        """Set when a job's directories could not be wiped: why (the worker then stops)."""

    def run_job(self, request: dict[str, Any]) -> dict[str, Any]:
        self.sequence += 1
        limits = request["limits"]
        workdir = os.path.join(self.config.scratch, f"job-{self.sequence}")
        tmpdir = os.path.join(self.config.scratch, f"tmp-{self.sequence}")
        channel = ResultChannel.create(request["nonce"])
        stdout_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
        stderr_fd = os.memfd_create("stderr", os.MFD_CLOEXEC)
        try:
            source = workdir_files.prepare(request, workdir, tmpdir, self.confinement.job_uid)
            plan = child.JobPlan(
                workdir=workdir,
                program_path=os.path.join(workdir, PROGRAM_FILE),
                source=source,
                channel=channel,
                stdout_fd=stdout_fd,
                stderr_fd=stderr_fd,
                env={**(self.config.job_env or {}), "HOME": workdir, "TMPDIR": tmpdir, "PWD": workdir},
                cpu_s=float(limits["cpu_s"]),
                # Read here, not in the job: the first /proc read after a fork costs ~0.3 ms.
                address_space_bytes=_address_space_bytes() + (self._allowance_mib(limits) << 20),
                # No single file larger than the worker's disk either: where a job can write to
                # the host's disk (unshare, rlimits), that bounds each file it writes there.
                file_size_mib=min(int(limits["file_size_mib"]), self.config.disk_mib or 1 << 30),
                nofile=1024,
                nproc_limit=(
                    None
                    if self.confinement.nproc_base is None
                    else self.confinement.nproc_base + int(limits["max_processes"])
                ),
                job_uid=self.confinement.job_uid,
                gurobi=request["gurobi"],
                highs_package=self.config.highs_package,
                warmable=tuple(self.config.warmable),
                worker_pid=os.getpid(),
            )
            pid = self._fork(plan)
            outcome = self._supervise(pid, limits, (stdout_fd, stderr_fd))
            if self.confinement.pid_namespace_fd is None:
                sweep_descendants()
            stdout, stdout_bytes = _read_tail(stdout_fd, int(limits["output_bytes"]))
            stderr, stderr_bytes = _read_tail(stderr_fd, int(limits["output_bytes"]))
            # Twice the record budget: the harness keeps at most half of it for solves.
            channel_text, channel_dropped = channel.read_all(2 * int(limits.get("record_mib", 16)) << 20)
            files, dropped = workdir_files.collect_files(
                workdir,
                request["collect"],
                limit_bytes=int(limits["file_size_mib"]) << 20,
                budget_bytes=files_budget_bytes(limits),
            )
            return {
                "id": request.get("id"),
                "exit_code": os.waitstatus_to_exitcode(outcome.status)
                if os.WIFEXITED(outcome.status)
                else None,
                "signal": os.WTERMSIG(outcome.status) if os.WIFSIGNALED(outcome.status) else None,
                "killed_for": outcome.killed_for,
                "wall_s": outcome.wall_s,
                "cpu_s": outcome.rusage.ru_utime + outcome.rusage.ru_stime,
                "max_rss_kib": outcome.rusage.ru_maxrss,
                "stdout": stdout,
                "stdout_bytes": stdout_bytes,
                "stderr": stderr,
                "stderr_bytes": stderr_bytes,
                "channel": channel_text,
                "channel_dropped": channel_dropped,
                "files": files,
                "files_dropped": dropped,
                "workdir": workdir,
            }
        finally:
            for fd in (stdout_fd, stderr_fd):
                os.close(fd)
            channel.close()
            try:
                problems = workdir_files.wipe(
                    workdir, tmpdir, self.config.wipe, (*self.config.keep, *self.confinement.kept)
                )
            except Exception as error:
                problems = [f"{type(error).__name__}: {error}"]
            if problems:
                self.retire = f"could not clean the job's directories: {'; '.join(problems)}"[:1000]

    def _allowance_mib(self, limits: dict[str, Any]) -> int:
        """Address space a job may add: its ``memory_mib`` less the private tmpfs it can fill.
        ``SandboxLimits`` guarantees 256 MiB are left when the job's limits carry the pool's
        ``disk_mib``; a job given a smaller ``memory_mib`` than the workers' tmpfs still gets 256."""
        return max(int(limits["memory_mib"]) - self.config.tmpfs_mib, 256)

    def _fork(self, plan: child.JobPlan) -> int:
        namespace_fd = self.confinement.pid_namespace_fd
        sys.stdout.flush()
        sys.stderr.flush()
        if namespace_fd is not None:
            native.unshare(native.CLONE_NEWPID)
        try:
            with child.job_environment(plan.env):
                pid = os.fork()
                if pid == 0:
                    try:
                        child.run(plan)
                    finally:
                        # Whatever escapes the job must not unwind into the worker's loop.
                        os._exit(child.SETUP_FAILED_EXIT)
        finally:
            if namespace_fd is not None:
                native.setns(namespace_fd, native.CLONE_NEWPID)
        return pid

    def _supervise(self, pid: int, limits: dict[str, Any], outputs: tuple[int, int]) -> Supervision:
        start = time.monotonic()
        deadline = start + float(limits["wall_s"])
        output_cap = int(limits["output_bytes"])
        max_processes = int(limits["max_processes"])
        poll_processes = self.confinement.nproc_base is None
        disk = DiskWatch(self.config.disk_watch, self.config.disk_mib << 20)
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        killed_for: str | None = None
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    killed_for = "wall"
                elif poller.poll(min(remaining, _TICK_S) * 1000):
                    break
                elif sum(os.fstat(fd).st_size for fd in outputs) > output_cap:
                    killed_for = "output"
                elif poll_processes and len(descendants(pid)) + 1 > max_processes:
                    killed_for = "processes"
                elif disk.exceeded():
                    killed_for = "disk"
                if killed_for:
                    self._kill(pidfd, pid)
                    break
            _, status, rusage = os.wait4(pid, 0)
        finally:
            os.close(pidfd)
        return Supervision(status, rusage, time.monotonic() - start, killed_for)

    def _kill(self, pidfd: int, pid: int) -> None:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        if self.confinement.pid_namespace_fd is None:
            for victim in descendants(pid):
                kill_quietly(victim)


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


def files_budget_bytes(limits: dict[str, Any]) -> int:
    """Bytes of collected model files one job may bring back: half its record budget."""
    return (int(limits.get("record_mib", 16)) << 20) // 2


def _address_space_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        pages = int(handle.read().split()[0])
    return pages * _PAGE_SIZE


def _read_tail(fd: int, limit: int) -> tuple[str, int]:
    """The last ``limit`` bytes of a memfd as text, and its total size in bytes."""
    size = os.fstat(fd).st_size
    start = max(0, size - limit)
    return os.pread(fd, size - start, start).decode("utf-8", "replace"), size
