"""The private result channel from a job to its worker.

An anonymous in-memory file (``memfd``) created by the zygote before it forks the job, opened
append-only and close-on-exec, so solver subprocesses do not inherit it and records written by
several processes of the job do not interleave. Each record is one JSON line carrying the job's
nonce; the harness ignores lines without it. The nonce only makes forging *expensive* (a program
would have to dig it out of the runtime's memory); the real defence against a forged objective is
the harness's own re-solve of the captured matrix.
"""

from __future__ import annotations

import fcntl
import json
import os
from json.encoder import encode_basestring_ascii
from typing import Any

MAX_CHANNEL_BYTES = 256 << 20
# What json.dumps(record, separators=(",", ":"), default=repr) writes, without making an encoder
# for every record (in a job, each object made touches pages it shares with its zygote).
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=repr)


class ResultChannel:
    """Append-only JSON-lines stream of job records, shared by the worker and the job.

    Args:
        fd: descriptor of the memfd (the worker's and the job's copies share one file).
        nonce: per-job secret written into every record.
    """

    def __init__(self, fd: int, nonce: str) -> None:
        self.fd = fd
        self.nonce = nonce

    @staticmethod
    def create_fd() -> int:
        """The descriptor of a fresh, empty channel (close-on-exec, append-only)."""
        fd = os.memfd_create("trex-result", os.MFD_CLOEXEC)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        return fd

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        """Append one record; never raises (a full or closed channel loses the record, and the
        harness then sees an incomplete report, which it treats as the program's failure)."""
        record = {"nonce": self.nonce, "kind": kind, "pid": os.getpid(), **payload}
        try:
            line = _ENCODER.encode(record) + "\n"
            os.write(self.fd, line.encode("utf-8", "surrogatepass"))
        except (OSError, ValueError, TypeError, RecursionError):
            pass

    def emit_start(self) -> None:
        """Append the ``start`` record: what ``emit("start", {})`` writes, made without the
        encoder (the job writes it before the program, where every object it makes costs)."""
        line = f'{{"nonce":{encode_basestring_ascii(self.nonce)},"kind":"start","pid":{os.getpid()}}}\n'
        try:
            os.write(self.fd, line.encode())
        except OSError:
            return  # lost, as in emit (a context manager here would touch more shared pages)

    def read_all(self, limit_bytes: int = MAX_CHANNEL_BYTES) -> tuple[bytes, int]:
        """Everything written so far (bytes, sent to the harness as they are), for the worker, and
        the number of bytes left out.

        At most ``limit_bytes`` (capped at ``MAX_CHANNEL_BYTES``) are returned: over that, the
        first and the last half of the limit, each cut at a record boundary, so the start record,
        the first solves, the last solves and the end record survive and the harness never reads
        more than the record budget needs.
        """
        size = os.fstat(self.fd).st_size
        limit = min(limit_bytes, MAX_CHANNEL_BYTES)
        if size <= limit:
            return os.pread(self.fd, size, 0), 0
        half = limit // 2
        head = os.pread(self.fd, half, 0)
        head = head[: head.rfind(b"\n") + 1]
        tail = os.pread(self.fd, half, size - half)
        tail = tail[tail.find(b"\n") + 1 :]
        return head + tail, size - len(head) - len(tail)

    def close(self) -> None:
        os.close(self.fd)
