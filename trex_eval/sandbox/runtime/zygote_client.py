"""The supervisor's handle on its zygote (:mod:`.zygote`): start it, have it fork the next job
ahead of time, start that job with its order, learn how it ended, have it warm libraries."""

from __future__ import annotations

import json
import os
import resource
import socket
import struct
import sys

from . import native
from .contract import JobOrder, WorkerConfig
from .processes import proc_read
from .zygote import FORK, FORKED, MESSAGE_BYTES, REAPED, WARMED, ZygoteFacts, serve


class ZygoteGone(Exception):
    """The zygote died or broke the protocol (the worker must stop: the pool starts a new one)."""


class WaitingJob:
    """A job forked ahead of its request: its pidfd, its pid as the supervisor sees it, the socket
    its order goes to, and the memfds that are the program's standard output and error and the
    job's result channel (the descriptors are the caller's to close once the job ended)."""

    def __init__(
        self, pidfd: int, *, pid: int, sock: socket.socket, outputs: tuple[int, int], channel_fd: int
    ) -> None:
        self.pidfd = pidfd
        self.pid = pid
        self.sock = sock
        self.stdout_fd, self.stderr_fd = outputs
        self.channel_fd = channel_fd


class Zygote:
    """See the module docstring. Not thread-safe (the supervisor runs one job at a time)."""

    def __init__(self, sock: socket.socket, pid: int, preload_errors: dict[str, str]) -> None:
        self.sock = sock
        self.pid = pid
        self.preload_errors = preload_errors
        self.warm_failed: list[str] = []
        self._asked = False

    @classmethod
    def start(cls, config: WorkerConfig, facts: ZygoteFacts) -> Zygote:
        """Fork the zygote now (before any job: it holds nothing but start-up state) and wait
        until it has imported ``config.preload`` (the first job is forked on the first
        :meth:`fork_ahead` or :meth:`take`). The zygote keeps none of this process's descriptors
        but its socket (and the PID namespace handle)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            mine.close()
            serve(theirs, config, facts)
        theirs.close()
        ready = mine.recv(MESSAGE_BYTES)
        if not ready:
            raise ZygoteGone("the zygote exited during start-up")
        zygote = cls(mine, pid, dict(json.loads(ready).get("preload_errors", {})))
        return zygote

    def fork_ahead(self) -> None:
        """Ask for the next job to be forked now (it then waits for :meth:`take`). The caller sets
        the pid counter at random first; at most one job is forked ahead."""
        if self._asked:
            return
        try:
            self.sock.sendall(FORK)
        except OSError as error:
            raise ZygoteGone(f"the zygote stopped answering: {error}") from None
        self._asked = True

    def take(self) -> WaitingJob:
        """The job forked ahead (asking for it first if need be), waiting for its order."""
        self.fork_ahead()
        _, fds = self._next(FORKED, descriptors=5)
        self._asked = False
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            raise ZygoteGone("the zygote forked a job without handing it over")
        pidfd, job_sock, stdout_fd, stderr_fd, channel_fd = fds
        try:
            pid = _pidfd_pid(pidfd)
        except ZygoteGone:
            for fd in fds:
                os.close(fd)
            raise
        return WaitingJob(
            pidfd,
            pid=pid,
            sock=socket.socket(fileno=job_sock),
            outputs=(stdout_fd, stderr_fd),
            channel_fd=channel_fd,
        )

    def begin(self, job: WaitingJob, order: JobOrder) -> None:
        """Send ``job`` its order: it runs."""
        try:
            job.sock.send(order.encode())
        except OSError as error:
            job.sock.close()
            raise ZygoteGone(f"a job forked ahead is gone: {error}") from None

    @staticmethod
    def started(job: WaitingJob) -> bool:
        """After ``job`` ended: whether it said it was confined and about to run the program
        (``child.JobStart.started_fd``). Closes the job's socket."""
        try:
            return job.sock.recv(8, socket.MSG_DONTWAIT) == b"S"
        except OSError:
            return False
        finally:
            job.sock.close()

    def reaped(self) -> tuple[int, resource.struct_rusage]:
        """The wait status and resource usage of the job the zygote reaped last (blocking)."""
        data, _ = self._next(REAPED)
        if len(data) != 4 + native.RUSAGE_BYTES:
            raise ZygoteGone("the zygote did not report how the job ended")
        status = int.from_bytes(data[:4], sys.byteorder, signed=True)
        longs = struct.unpack(f"{native.RUSAGE_BYTES // 8}q", data[4:])
        usage = resource.struct_rusage((longs[0] + longs[1] / 1e6, longs[2] + longs[3] / 1e6, *longs[4:]))
        return status, usage

    def warm(self, modules: list[str]) -> None:
        """Have the zygote import ``modules`` (warmable names only), and wait until it has: those
        that failed are added to :attr:`warm_failed`. Call it with no job forked ahead (the
        zygote answers orders in turn) and the worker's own ``/tmp`` in place: the zygote shares
        the worker's mounts, and an import that reads a package's folder while a job's ``/tmp``
        is being mounted over it finds it empty, and keeps that listing for every later fork
        (import's directory cache: ``No module named 'gurobipy._batch'`` in every later job)."""
        try:
            self.sock.sendall(json.dumps({"op": "warm", "modules": modules}).encode())
        except OSError as error:
            raise ZygoteGone(f"the zygote stopped answering: {error}") from None
        self._next(WARMED)

    def _next(self, tag: bytes, *, descriptors: int = 0) -> tuple[bytes, list[int]]:
        """The body of the next message tagged ``tag`` (warm answers met on the way are noted)."""
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(
                    self.sock, MESSAGE_BYTES, descriptors, socket.MSG_CMSG_CLOEXEC
                )
            except OSError as error:
                raise ZygoteGone(f"the zygote stopped answering: {error}") from None
            if not data:
                raise ZygoteGone("the zygote exited")
            if data[:1] == WARMED:
                self.warm_failed += [str(name) for name in json.loads(data[1:]).get("failed", [])]
                if tag != WARMED:
                    continue
            if data[:1] != tag:
                for fd in fds:
                    os.close(fd)
                raise ZygoteGone(f"unexpected message from the zygote: {data[:40]!r}")
            return data[1:], fds


def _pidfd_pid(pidfd: int) -> int:
    """The pid a pidfd refers to, in this process's PID namespace (its ``fdinfo``)."""
    for line in (proc_read(f"self/fdinfo/{pidfd}") or b"").splitlines():
        if line.startswith(b"Pid:"):
            return int(line.split()[1])
    raise ZygoteGone("a job's pidfd names no process")
