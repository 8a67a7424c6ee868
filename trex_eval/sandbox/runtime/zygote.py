"""The zygote: the process every job of a worker is forked from, and which never holds a job's bytes.

A forked job starts with a copy of its parent's memory, and freed memory is not cleared: a job
forked from the process that read the previous job's request and reply could dig the previous
program's source, output and result records out of its own heap (it did, and copied an objective
from them). So the worker is two processes. The supervisor (:mod:`.server`) speaks to the harness,
writes each job's files, watches the job and reads everything it produced. The zygote, forked from
the supervisor at start-up before any job exists, imports and warms the solver libraries and forks
the jobs; it is their parent and reaps them.

A job is forked *before* its request arrives (while the previous job's reply travels, or, where
the previous program made a library due for warming, right after the zygote imported it, between
jobs: the zygote must never read a folder while a job's ``/tmp`` is being mounted), and waits:
the supervisor sends it its order (limits, nonce, gurobipy mode) directly, on a socket of its own,
when the job comes. What reaches the zygote, on a ``SOCK_SEQPACKET`` socket from the supervisor, is
"fork the next job" and names of libraries to warm from ``WorkerConfig.warmable``; what it sends
back is the waiting job's pidfd, socket, output files and result channel (made empty before the
fork, so the job's own end needs no descriptor passed), and the job's wait status and resource
usage once it ended, which the kernel writes straight into buffers that are zeroed once sent
(:func:`.native.wait4_into`). The program's text is read by the job itself from its working
directory. The only job-dependent numbers the zygote ever sees are the pids of its children, and
the supervisor makes those random (``/proc/sys/kernel/ns_last_pid``, where it may write it).

Before it forks, the zygote claims the free chunks its imports left in the C allocator's lists
(:mod:`.heap`): a job's allocations then come from fresh pages instead of writing into chunks
scattered over pages it shares with the zygote (each such write copies a page).

Messages from the zygote start with a tag: ``F`` (forked: the job's pidfd, socket, stdout and
stderr memfds and result channel travel as ``SCM_RIGHTS``), ``R`` (reaped: the raw status, 4
bytes, and ``struct rusage``), ``W`` (warmed: JSON ``{"failed": [...]}``). The first message is
the JSON ready message. The zygote exits when its socket closes; a waiting job dies with it.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any, NoReturn

from . import child, heap, hooks, native, warming
from .channel import ResultChannel
from .contract import JOB_DIR, PROGRAM_FILE, SETUP_FAILED_EXIT, TMP_DIR, JobOrder, WorkerConfig
from .imports import PostImportHooks

MESSAGE_BYTES = 1 << 16
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
FORKED, REAPED, WARMED = b"F", b"R", b"W"
FORK = b"fork"
"""The supervisor's order to fork the next job (every other order is JSON)."""


class ZygoteFacts:
    """What the supervisor found at start-up that the zygote's forks need."""

    def __init__(self, *, pid_namespace_fd: int | None, job_uid: int | None, own_proc: str | None) -> None:
        self.pid_namespace_fd = pid_namespace_fd
        self.job_uid = job_uid
        self.own_proc = own_proc
        """Mount options of the ``/proc`` each job mounts over the worker's for itself, or None
        where the worker found that jobs cannot (they then see the worker's ``/proc``)."""


def serve(sock: socket.socket, config: WorkerConfig, facts: ZygoteFacts) -> NoReturn:
    """The zygote's life (in a process just forked from the supervisor): never returns."""
    try:
        _close_all_but(sock.fileno(), facts.pid_namespace_fd)
        os.chdir("/")
        # A job of the same uid (no job uid of its own) must not read this process's memory.
        native.prctl(native.PR_SET_DUMPABLE, 0)
        _job_defaults()
        os.environ.clear()
        os.environ.update(
            {
                **(config.job_env or {}),
                "HOME": _workdir(config),
                "TMPDIR": _tmpdir(config),
                "PWD": _workdir(config),
            }
        )
        errors = _preload(config)
        # After the imports, and again after each warm: no library's import decides them.
        child.inherited_limits()
        sock.sendall(json.dumps({"preload_errors": errors}).encode())
        _loop(sock, config, facts)
    finally:
        os._exit(0)


def _job_defaults() -> None:
    """What every job needs of its process and inherits from here (once, not in every job:
    each Python step in a forked job writes to pages it shares with the zygote, each write a
    fault): default dispositions of the signals a harness may have ignored or caught, and
    ``/dev/null`` as standard input."""
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGALRM):
        signal.signal(number, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _workdir(config: WorkerConfig) -> str:
    return os.path.join(config.scratch, JOB_DIR)


def _tmpdir(config: WorkerConfig) -> str:
    return os.path.join(config.scratch, TMP_DIR)


def _close_all_but(*keep: int | None) -> None:
    kept = sorted({fd for fd in keep if fd is not None})
    start = 3
    for fd in kept:
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, 1 << 20)


def _preload(config: WorkerConfig) -> dict[str, str]:
    finder = PostImportHooks(hooks.INSTALLERS)
    sys.meta_path.insert(0, finder)
    finder.install_loaded()
    errors: dict[str, str] = {}
    for name in config.preload:
        try:
            importlib.import_module(name)
        except BaseException as error:
            errors[name] = f"{type(error).__name__}: {error}"[:300]
            continue
        hooks.prewarm(name)
    gc.collect()
    gc.freeze()
    heap.claim_free_chunks()
    return errors


def _loop(sock: socket.socket, config: WorkerConfig, facts: ZygoteFacts) -> None:
    """Serve the supervisor's orders and reap the one job alive at a time (waiting or running)."""
    status = ctypes.c_int(0)
    usage = (ctypes.c_char * native.RUSAGE_BYTES)()
    # Opened once, while /proc is the worker's: a job's /proc is mounted where /proc leads.
    statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    workdir = _workdir(config)
    plan = child.JobPlan(
        workdir=workdir,
        program_path=os.path.join(workdir, PROGRAM_FILE),
        job_uid=facts.job_uid,
        highs_package=config.highs_package,
        own_proc=None if facts.own_proc is None else os.fsencode(facts.own_proc),
    )
    job: tuple[int, int] | None = None  # (pid, pidfd) of the job forked last, until reaped
    while True:
        watched = [sock.fileno()] if job is None else [sock.fileno(), job[1]]
        ready, _, _ = select.select(watched, [], [])
        if job is not None and job[1] in ready:
            native.wait4_into(job[0], status, usage)
            os.close(job[1])
            job = None
            sock.sendmsg([REAPED, status, usage])
            ctypes.memset(ctypes.byref(status), 0, ctypes.sizeof(status))
            ctypes.memset(usage, 0, native.RUSAGE_BYTES)
        if sock.fileno() not in ready:
            continue
        try:
            data = sock.recv(MESSAGE_BYTES)
        except OSError:
            return
        if not data:
            return
        if data == FORK:
            if job is None:
                job = _fork(sock, plan, facts, statm=statm)
            continue
        order: dict[str, Any] = json.loads(data)
        if order.get("op") == "warm":
            failed = warming.warm([str(name) for name in order.get("modules", ())], config.warmable)
            heap.claim_free_chunks()
            child.inherited_limits()
            sock.sendall(WARMED + json.dumps({"failed": failed}).encode())


def _fork(sock: socket.socket, plan: child.JobPlan, facts: ZygoteFacts, *, statm: int) -> tuple[int, int]:
    """Fork the next job, waiting for its order; hand its pidfd, socket, output files and result
    channel to the supervisor. ``statm``: a descriptor on this process's ``/proc/self/statm``.

    The output files and the channel are made here, empty, so that the job receives nothing but
    its order's bytes (descriptors through ``SCM_RIGHTS`` cost the job a page-touching
    ``recv_fds``); this process closes its copies before it forks the next job."""
    inherited_bytes = int(os.pread(statm, 256, 0).split()[0]) * _PAGE_SIZE
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # A bare descriptor for the job: a socket object's methods touched ~34 shared pages in it.
    job_fd = mine.detach()
    outputs = (os.memfd_create("stdout", os.MFD_CLOEXEC), os.memfd_create("stderr", os.MFD_CLOEXEC))
    channel_fd = ResultChannel.create_fd()
    sys.stdout.flush()
    sys.stderr.flush()
    zygote_pid = os.getpid()
    pid = native.fork_into_pid_namespace(facts.pid_namespace_fd)
    if pid == 0:
        try:
            _wait_for_order(
                job_fd,
                plan,
                outputs=outputs,
                channel_fd=channel_fd,
                zygote_pid=zygote_pid,
                inherited_bytes=inherited_bytes,
            )
        finally:
            # Whatever escapes the job must not unwind into the zygote's loop.
            os._exit(SETUP_FAILED_EXIT)
    os.close(job_fd)
    handed = [theirs.fileno(), *outputs, channel_fd]
    try:
        pidfd = os.pidfd_open(pid)
        socket.send_fds(sock, [FORKED], [pidfd, *handed])
    finally:
        theirs.close()
        for fd in handed[1:]:
            os.close(fd)
    return pid, pidfd


def _wait_for_order(
    sock_fd: int,
    plan: child.JobPlan,
    *,
    outputs: tuple[int, int],
    channel_fd: int,
    zygote_pid: int,
    inherited_bytes: int,
) -> NoReturn:
    """In the forked job: confine what needs no order, wait for the order on ``sock_fd``, then
    run the job (``inherited_bytes``: the zygote's address space at the fork). Exits when the
    supervisor's end of the socket closes, or with the zygote."""
    try:
        child.prepare(zygote_pid, stdout_fd=outputs[0], stderr_fd=outputs[1], keep=(sock_fd, channel_fd))
    except OSError:
        os._exit(SETUP_FAILED_EXIT)
    data = os.read(sock_fd, MESSAGE_BYTES)
    if not data:
        os._exit(SETUP_FAILED_EXIT)
    order = JobOrder.decode(data)
    child.run(
        plan,
        child.JobStart(
            order,
            inherited_bytes + order.allowance_bytes,
            ResultChannel(channel_fd, order.nonce),
            sock_fd,
        ),
    )
