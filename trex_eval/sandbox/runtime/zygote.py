"""The zygote: the process every job of a worker is forked from, and which never holds a job's bytes.

A forked job starts with a copy of its parent's memory, and freed memory is not cleared: a job
forked from the process that read the previous job's request and reply could dig the previous
program's source, output and result records out of its own heap (it did, and copied an objective
from them). So the worker is two processes. The supervisor (:mod:`.server`) speaks to the harness,
writes each job's files, watches the job and reads everything it produced. The zygote, forked from
the supervisor at start-up before any job exists, imports and warms the solver libraries and then,
for each job, receives a fork order and forks; it is the job's parent and reaps it.

What reaches the zygote, on a ``SOCK_SEQPACKET`` socket from the supervisor, is the harness's own:
the job's limits, nonce and gurobipy mode, the descriptors of its output files and result channel
(``SCM_RIGHTS``), and names of libraries to warm from ``WorkerConfig.warmable``. What it sends back
is the job's pidfd and its wait status and resource usage, which the kernel writes straight into
buffers that are zeroed once sent (:func:`.native.wait4_into`). The program's text is read by the
job itself from its working directory. The only job-dependent numbers the zygote ever sees are the
pids of its children, and the supervisor makes those random (``/proc/sys/kernel/ns_last_pid``,
where it may write it).

Messages (JSON unless said): ``{"op": "fork", ...}`` with 3 descriptors -> ``b"forked"`` with the
job's pidfd, then the raw status (4 bytes) and ``struct rusage``; ``{"op": "warm", "modules": [...]}``
-> ``{"failed": [...]}``. The zygote exits when the socket closes.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import resource
import socket
import struct
import sys
from typing import Any, NoReturn

from . import child, hooks, native, warming
from .channel import ResultChannel
from .contract import JOB_DIR, PROGRAM_FILE, TMP_DIR, WorkerConfig
from .imports import PostImportHooks
from .processes import proc_read

_MESSAGE_BYTES = 1 << 16
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


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
        sock.sendall(json.dumps({"preload_errors": errors}).encode())
        _loop(sock, config, facts)
    finally:
        os._exit(0)


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
    return errors


def _loop(sock: socket.socket, config: WorkerConfig, facts: ZygoteFacts) -> None:
    status = ctypes.c_int(0)
    usage = (ctypes.c_char * native.RUSAGE_BYTES)()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MESSAGE_BYTES, 3)
        except OSError:
            return
        if not data:
            return
        order: dict[str, Any] = json.loads(data)
        if order.get("op") == "warm":
            for fd in fds:
                os.close(fd)
            failed = warming.warm([str(name) for name in order.get("modules", ())], config.warmable)
            sock.sendall(json.dumps({"failed": failed}).encode())
            continue
        try:
            pid = _fork(order, fds, config, facts)
        finally:
            for fd in fds:
                os.close(fd)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(sock, [b"forked"], [pidfd])
        finally:
            os.close(pidfd)
        native.wait4_into(pid, status, usage)
        sock.sendmsg([status, usage])
        ctypes.memset(ctypes.byref(status), 0, ctypes.sizeof(status))
        ctypes.memset(usage, 0, native.RUSAGE_BYTES)
        del order, pid


def _fork(order: dict[str, Any], fds: list[int], config: WorkerConfig, facts: ZygoteFacts) -> int:
    stdout_fd, stderr_fd, channel_fd = fds
    workdir = _workdir(config)
    plan = child.JobPlan(
        workdir=workdir,
        program_path=os.path.join(workdir, PROGRAM_FILE),
        channel=ResultChannel(channel_fd, str(order["nonce"])),
        stdout_fd=stdout_fd,
        stderr_fd=stderr_fd,
        cpu_s=float(order["cpu_s"]),
        # What the job inherits is not charged to it: the zygote's own size plus its allowance.
        address_space_bytes=_address_space_bytes() + int(order["allowance_bytes"]),
        file_size_mib=int(order["file_size_mib"]),
        nofile=1024,
        nproc_limit=None if order.get("nproc_limit") is None else int(order["nproc_limit"]),
        job_uid=facts.job_uid,
        gurobi=str(order["gurobi"]),
        highs_package=config.highs_package,
        worker_pid=os.getpid(),
        own_proc=facts.own_proc,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    pid = native.fork_into_pid_namespace(facts.pid_namespace_fd)
    if pid == 0:
        try:
            child.run(plan)
        finally:
            # Whatever escapes the job must not unwind into the zygote's loop.
            os._exit(child.SETUP_FAILED_EXIT)
    return pid


def _address_space_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        pages = int(handle.read().split()[0])
    return pages * _PAGE_SIZE


class ZygoteGone(Exception):
    """The zygote died or broke the protocol (the worker must stop: the pool starts a new one)."""


class Zygote:
    """The supervisor's handle on its zygote (see the module docstring)."""

    def __init__(self, sock: socket.socket, pid: int, preload_errors: dict[str, str]) -> None:
        self.sock = sock
        self.pid = pid
        self.preload_errors = preload_errors

    @classmethod
    def start(cls, config: WorkerConfig, facts: ZygoteFacts) -> Zygote:
        """Fork the zygote now (before any job: it holds nothing but start-up state) and wait
        until it has imported ``config.preload``. The zygote keeps none of this process's
        descriptors but its socket (and the PID namespace handle)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            mine.close()
            serve(theirs, config, facts)
        theirs.close()
        ready = mine.recv(_MESSAGE_BYTES)
        if not ready:
            raise ZygoteGone("the zygote exited during start-up")
        return cls(mine, pid, dict(json.loads(ready).get("preload_errors", {})))

    def fork(self, order: dict[str, Any], fds: list[int]) -> tuple[int, int]:
        """Have the zygote fork a job: its pidfd (the caller's to close) and its pid (as this
        process sees it)."""
        try:
            socket.send_fds(self.sock, [json.dumps({"op": "fork", **order}).encode()], fds)
            data, received, _, _ = socket.recv_fds(self.sock, _MESSAGE_BYTES, 1)
        except OSError as error:
            raise ZygoteGone(f"the zygote stopped answering: {error}") from None
        if data != b"forked" or len(received) != 1:
            for fd in received:
                os.close(fd)
            raise ZygoteGone(f"unexpected answer from the zygote: {data[:100]!r}")
        pidfd = received[0]
        return pidfd, _pidfd_pid(pidfd)

    def reaped(self) -> tuple[int, resource.struct_rusage]:
        """The wait status and resource usage of the job the zygote just reaped (blocking)."""
        try:
            data = self.sock.recv(_MESSAGE_BYTES)
        except OSError as error:
            raise ZygoteGone(f"the zygote stopped answering: {error}") from None
        if len(data) != 4 + native.RUSAGE_BYTES:
            raise ZygoteGone("the zygote did not report how the job ended")
        status = int.from_bytes(data[:4], sys.byteorder, signed=True)
        longs = struct.unpack(f"{native.RUSAGE_BYTES // 8}q", data[4:])
        usage = resource.struct_rusage((longs[0] + longs[1] / 1e6, longs[2] + longs[3] / 1e6, *longs[4:]))
        return status, usage

    def warm(self, modules: list[str]) -> list[str]:
        """Have the zygote import ``modules`` (warmable names only); those that failed."""
        try:
            self.sock.sendall(json.dumps({"op": "warm", "modules": modules}).encode())
            answer = self.sock.recv(_MESSAGE_BYTES)
        except OSError as error:
            raise ZygoteGone(f"the zygote stopped answering: {error}") from None
        if not answer:
            raise ZygoteGone("the zygote exited while warming")
        return [str(name) for name in json.loads(answer).get("failed", [])]


def _pidfd_pid(pidfd: int) -> int:
    """The pid a pidfd refers to, in this process's PID namespace (its ``fdinfo``)."""
    for line in (proc_read(f"self/fdinfo/{pidfd}") or b"").splitlines():
        if line.startswith(b"Pid:"):
            return int(line.split()[1])
    raise ZygoteGone("a job's pidfd names no process")
