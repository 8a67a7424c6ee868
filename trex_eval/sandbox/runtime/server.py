"""The warm worker's supervisor: speaks to the harness, prepares each job, watches it, reports.

Started by the harness (inside bubblewrap or ``unshare`` where available) as::

    python -I -B -X utf8 -c <bootstrap> <runtime dir> server <config JSON>

It speaks length-prefixed frames on the descriptors that were its stdin/stdout (see ``framing``);
anything the libraries print goes to its stderr, which the harness keeps as a log. After start-up
it sends one ``ready`` message, then answers each job request with one reply, until stdin closes.

Jobs are not forked from this process: it reads every job's request and reply, and a fork carries
its parent's memory, freed parts included. They are forked from the zygote (:mod:`.zygote`),
forked from here at start-up before any job, which never holds a byte of one; each job is forked
ahead of its request (the pid counter set at random first) and waits. Per job this process mounts
a fresh ``/tmp`` (holding the job's ``/proc`` where ``/proc`` leads there) and ``/dev/shm``
(:mod:`.jobfs`), writes the job's files, sends the waiting job its order, watches it
(:mod:`.supervise`), collects its output, result channel and model files, has the next job
forked, and detaches what the job wrote once the reply is sent (a worker that could not undo a
job's traces answers the next request ``not_run`` and stops). Where the job's program made a
library due for warming, the zygote imports it after that detach and before the next job is
forked, and the next request waits for it: an import must never overlap the mounting of a job's
``/tmp`` (:meth:`Server.warm`).

Start-up checks live in ``confinement``, the job's file systems in ``jobfs`` and ``workdir``,
the watching in ``supervise``, the process table in ``processes`` and warming in ``warming``.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from typing import Any

from . import framing, native
from . import workdir as workdir_files
from .channel import ResultChannel
from .confinement import (
    Confinement,
    calibrate_process_limit,
    check_job_uid,
    enter_job_namespaces,
    kept_under_job_tmpfs,
    make_host_read_only,
    mount_private_tmpfs,
    open_pid_counter,
    probe_own_proc,
    randomise_pid_counter,
    take_protocol_descriptors,
)
from .contract import PROTOCOL, JobOrder, JobReply, WorkerConfig
from .jobfs import JobFileSystems
from .memory import MemoryLimit, protect_self
from .processes import pin_proc, sweep_descendants
from .supervise import CpuCounter, DiskWatch, Watch, Watched, watch
from .warming import Demand
from .zygote import ZygoteFacts
from .zygote_client import WaitingJob, Zygote, ZygoteGone


def main(argv: list[str]) -> int:
    config = WorkerConfig.from_json(argv[0])
    proto_in, proto_out = take_protocol_descriptors()
    pin_proc()
    if config.parent_pid is not None:
        native.prctl(native.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != config.parent_pid:
            return 1
    confinement = Confinement()
    files = _confine(config, confinement, proto_in, proto_out)
    # Not under /tmp, which is mounted anew for every job.
    os.chdir("/")
    zygote = _start_zygote(config, confinement)
    framing.write_frame(proto_out, _ready_message(config, confinement, files, zygote))
    return _serve(Server(config, confinement, files, zygote), proto_in, proto_out)


def _confine(config: WorkerConfig, confinement: Confinement, proto_in: int, proto_out: int) -> JobFileSystems:
    """Make the worker's namespaces and mounts, in this order, before the zygote and any job
    exist (what could not be made is noted in ``confinement``); the jobs' file systems."""
    # First, while the worker is (mapped) root of the mount namespace it was started in.
    mount_private_tmpfs(config, confinement)
    enter_job_namespaces(config, confinement, proto_in, proto_out)
    native.prctl(native.PR_SET_CHILD_SUBREAPER, 1)
    # A job of the same uid (no job uid of its own) must not read this process's memory.
    native.prctl(native.PR_SET_DUMPABLE, 0)
    # The zygote inherits it; each job undoes it for itself (runtime.memory).
    if not protect_self():
        confinement.notes.append("out-of-memory killer may pick the worker (oom_score_adj not settable)")
    check_job_uid(config, confinement)
    if config.job_tmpfs:
        kept_under_job_tmpfs(config, confinement)
        probe_own_proc(confinement)
        open_pid_counter(confinement)
    # Last of the mounts the worker makes for itself, before the zygote and any job exist.
    make_host_read_only(config, confinement)
    files = JobFileSystems(config, keep=confinement.kept, own_proc=confinement.own_proc is not None)
    note = files.probe()
    if note:
        confinement.notes.append(note)
    return files


def _start_zygote(config: WorkerConfig, confinement: Confinement) -> Zygote:
    """The zygote, started, with the first job forked ahead."""
    facts = ZygoteFacts(
        pid_namespace_fd=confinement.pid_namespace_fd,
        job_uid=confinement.job_uid,
        own_proc=confinement.own_proc,
    )
    zygote = Zygote.start(config, facts)
    # After the zygote exists: where jobs share the worker's uid, it is one of the uid's processes.
    calibrate_process_limit(confinement)
    randomise_pid_counter(confinement)
    zygote.fork_ahead()
    return zygote


def _ready_message(
    config: WorkerConfig, confinement: Confinement, files: JobFileSystems, zygote: Zygote
) -> dict[str, Any]:
    """The ``ready`` message: the protocol this worker speaks and what its confinement achieved."""
    return {
        "ready": True,
        "protocol": PROTOCOL,
        "pid": os.getpid(),
        "euid": os.geteuid(),
        "job_pid_namespace": confinement.pid_namespace_fd is not None,
        "job_uid": confinement.job_uid,
        "read_only_host": config.read_only_host,
        "nproc_enforced": confinement.nproc_base is not None,
        "job_tmpfs": [path for path, _ in config.job_tmpfs] if files.fresh else [],
        "job_proc": confinement.own_proc,
        "random_pids": confinement.pid_counter_fd is not None,
        "preloaded": [name for name in config.preload if name not in zygote.preload_errors],
        "preload_errors": zygote.preload_errors,
        "notes": confinement.notes,
    }


def _serve(server: Server, proto_in: int, proto_out: int) -> int:
    """Answer job requests, one reply each, until stdin closes or the worker must stop."""
    problems: list[str] = []
    while True:
        try:
            request = framing.read_frame(proto_in)
        except framing.FrameError:
            return 0
        if problems:
            # Traces of the last job are left: this worker must not run another. The pool runs
            # this one on a new worker.
            reason = f"could not clean the job's directories: {'; '.join(problems)}"[:1000]
            print(f"worker retires: {reason}", file=sys.stderr, flush=True)
            framing.write_frame(
                proto_out, *JobReply(_request_id(request), not_run=True, retire=reason).encode()
            )
            return 0
        reply = server.answer(request)
        framing.write_frame(proto_out, *reply.encode())
        if reply.retire is not None:
            return 0
        del reply
        # After the reply: the harness reads it meanwhile.
        problems = server.files.close()
        # Not over a /tmp that could not be detached (the worker retires at the next request).
        if server.warm_due and not problems:
            try:
                server.warm()
            except ZygoteGone:
                return 0


def _request_id(request: dict[str, Any]) -> str:
    return str(request.get("id", ""))


class Server:
    """Runs jobs one at a time (a worker serves one job at once; the pool runs many workers)."""

    def __init__(
        self, config: WorkerConfig, confinement: Confinement, files: JobFileSystems, zygote: Zygote
    ) -> None:
        self.config = config
        self.confinement = confinement
        self.files = files
        self.zygote = zygote
        self.counter = CpuCounter(config.cpu_usage_fd, config.cpu_usage_format)
        self.memory = MemoryLimit(config.memory_fds, config.cpu_usage_format)
        cores = len(os.sched_getaffinity(0)) or os.cpu_count() or 1
        self.share_cpus = cores / max(1, config.lanes)
        self.retire: str | None = None
        """Set when the zygote is gone: why (the worker then stops after the reply)."""
        self.demand = Demand(config)
        self.warm_due: list[str] = []
        """Libraries the zygote is to import once this job's files are detached (:meth:`warm`)."""

    def answer(self, request: dict[str, Any]) -> JobReply:
        """The reply to one request: its job's, else why the job was lost or could not run;
        ``retire`` set when the worker must stop after it."""
        try:
            reply = self.run_job(request)
        except ZygoteGone as error:
            # Not the harness's failure, and maybe the job's doing: the job is reported killed.
            self.retire = f"the worker's zygote is gone: {error}"[:1000]
            reply = JobReply(_request_id(request), lost=self.retire)
        except Exception as error:
            reply = JobReply(_request_id(request), error=f"{type(error).__name__}: {error}"[:2000])
        return reply if self.retire is None else reply._replace(retire=self.retire)

    def run_job(self, request: dict[str, Any]) -> JobReply:
        """Run one job; its reply (output, channel and model files are sent raw beside it)."""
        limits = request["limits"]
        self.warm_due = []
        self.files.open()
        workdir_files.prepare(request, self.files.workdir, self.files.tmpdir, self.confinement.job_uid)
        order = self._order(request)
        disk = DiskWatch(self.config.disk_watch, self.config.disk_mib << 20)
        self.memory.hold(int(limits["memory_mib"]))
        job = self.zygote.take()
        channel = ResultChannel(job.channel_fd, request["nonce"])
        try:
            self.zygote.begin(job, order)
            watched, out_of_memory = self._watch(job, limits, disk)
            return self._collect(request, job, channel, watched, out_of_memory=out_of_memory)
        finally:
            for fd in (job.stdout_fd, job.stderr_fd):
                os.close(fd)
            channel.close()

    def warm(self) -> None:
        """Have the zygote import :attr:`warm_due`, then fork the next job (which then starts
        with them). Only between jobs, with this job's files detached: the zygote shares this
        process's mounts, and must not read a folder while a job's ``/tmp`` is mounted over it
        (:meth:`.Zygote.warm`). Raises ZygoteGone."""
        wanted, self.warm_due = self.warm_due, []
        self.zygote.warm(wanted)
        self._fork_ahead()

    def _fork_ahead(self) -> None:
        randomise_pid_counter(self.confinement)
        self.zygote.fork_ahead()

    def _order(self, request: dict[str, Any]) -> JobOrder:
        """What the job forked ahead is sent: its limits as the job applies them to itself."""
        limits = request["limits"]
        nproc = self.confinement.nproc_base
        return JobOrder(
            nonce=request["nonce"],
            cpu_s=float(limits["cpu_s"]),
            allowance_bytes=self._allowance_mib(limits) << 20,
            # No single file larger than the worker's disk either: where a job can write to the
            # host's disk (unshare, rlimits), that bounds each file it writes there.
            file_size_mib=min(int(limits["file_size_mib"]), self.config.disk_mib or 1 << 30),
            nproc_limit=None if nproc is None else nproc + int(limits["max_processes"]),
            gurobi=request["gurobi"],
        )

    def _watch(self, job: WaitingJob, limits: dict[str, Any], disk: DiskWatch) -> tuple[Watched, bool]:
        """Watch the begun job to its end; how it ended, and whether it ran out of memory."""
        try:
            watched = watch(
                job.pid,
                job.pidfd,
                limits,
                Watch(
                    outputs=(job.stdout_fd, job.stderr_fd),
                    disk=disk,
                    count_processes=self.confinement.nproc_base is None,
                    share_cpus=self.share_cpus,
                    counter=self.counter,
                    sweep=self.confinement.pid_namespace_fd is None,
                    memory_bytes=None if self.memory.enforced else int(limits["memory_mib"]) << 20,
                    tmpfs=tuple(path for path, _ in self.config.job_tmpfs) if self.files.fresh else (),
                ),
            )
            # A job killed just now may still be going: nothing of it may run on while its
            # records and files are read (in its own PID namespace the kernel kills every
            # process in it before the job's pidfd becomes readable).
            select.select([job.pidfd], [], [])
        finally:
            os.close(job.pidfd)
            out_of_memory = self.memory.release()
        return watched, out_of_memory

    def _collect(
        self,
        request: dict[str, Any],
        job: WaitingJob,
        channel: ResultChannel,
        watched: Watched,
        *,
        out_of_memory: bool,
    ) -> JobReply:
        """Read what the ended job left (output, records, model files), fork the next job, and
        the reply."""
        limits = request["limits"]
        sweep = self.confinement.pid_namespace_fd is None
        started = self.zygote.started(job)
        output_cap = int(limits["output_bytes"])
        stdout, stdout_bytes = _read_tail(job.stdout_fd, output_cap)
        stderr, stderr_bytes = _read_tail(job.stderr_fd, output_cap)
        if sweep:
            # Without a PID namespace of its own, the job's descendants are swept, once the
            # zygote has reaped the job (the sweep takes every process below this one but
            # the zygote).
            status, usage = self.zygote.reaped()
            sweep_descendants(spare=self.zygote.pid)
        # Twice the record budget: the harness keeps at most half of it for solves.
        channel_bytes, channel_dropped = channel.read_all(2 * int(limits.get("record_mib", 16)) << 20)
        files, dropped = workdir_files.collect_files(
            self.files.workdir,
            request["collect"],
            limit_bytes=int(limits["file_size_mib"]) << 20,
            budget_bytes=files_budget_bytes(limits),
        )
        if not sweep:
            # Late, so that the zygote has reaped the job meanwhile instead of being waited for.
            status, usage = self.zygote.reaped()
        # Only here, with the job reaped and no job forked ahead, is the zygote's next message
        # the warm's answer (a job that failed before this point leaves none due).
        self.warm_due = self.demand.after_job(
            str(request.get("code", "")), real_gurobipy=request.get("gurobi") == "real"
        )
        if not self.warm_due:
            # The next job is forked now, while this one's reply travels.
            self._fork_ahead()
        return JobReply(
            id=_request_id(request),
            exit_code=os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            started=started,
            killed_for=watched.killed_for or ("memory" if out_of_memory else None),
            wall_s=watched.wall_s,
            starved_s=watched.starved_s,
            cpu_received_s=watched.cpu_received_s,
            cpu_s=usage.ru_utime + usage.ru_stime,
            max_rss_kib=usage.ru_maxrss,
            stdout=stdout,
            stderr=stderr,
            stdout_bytes=stdout_bytes,
            stderr_bytes=stderr_bytes,
            channel=channel_bytes,
            channel_dropped=channel_dropped,
            files=files,
            files_dropped=dropped["files"],
            files_dropped_bytes=dropped["bytes"],
        )

    def _allowance_mib(self, limits: dict[str, Any]) -> int:
        """Address space a job may add: its ``memory_mib`` less the private tmpfs it can fill.
        ``SandboxLimits`` guarantees 256 MiB are left when the job's limits carry the pool's
        ``disk_mib``; a job given a smaller ``memory_mib`` than the workers' tmpfs still gets 256."""
        return max(int(limits["memory_mib"]) - self.config.tmpfs_mib, 256)


def files_budget_bytes(limits: dict[str, Any]) -> int:
    """Bytes of collected model files one job may bring back: half its record budget."""
    return (int(limits.get("record_mib", 16)) << 20) // 2


def _read_tail(fd: int, limit: int) -> tuple[bytes, int]:
    """The last ``limit`` bytes of a memfd, and its total size in bytes."""
    size = os.fstat(fd).st_size
    start = max(0, size - limit)
    return os.pread(fd, size - start, start), size
