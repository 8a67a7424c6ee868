"""Per-run resource limits of the sandbox (a value object; every field has a documented default)."""

from __future__ import annotations

from pydantic import Field

from ..records import Record


class SandboxLimits(Record):
    """Limits applied to every program; each breach becomes an :class:`~trex_eval.records.ExecStatus`.

    Attributes:
        wall_s: wall-clock seconds from the fork of the program to its exit (default 60). On
            breach the program and everything it started are killed: ``timeout``.
        cpu_s: CPU seconds per process (``RLIMIT_CPU``, rounded up to whole seconds; default 60).
            On breach the kernel kills the process with SIGKILL: ``timeout``.
        memory_mib: address space the program may add on top of the warm worker's (``RLIMIT_AS``
            = the worker's size at fork + this; default 2048). On breach allocations fail, which
            Python raises as ``MemoryError``: ``memory_limit``. Keep it >= 1024: some BLAS
            builds hang at start-up below ~512 MiB.
        file_size_mib: largest file the program may write, its output included (``RLIMIT_FSIZE``;
            default 64). On breach the write fails with EFBIG: ``output_limit``.
        max_processes: processes the program may have at once, itself included (default 64).
            Enforced by ``RLIMIT_NPROC`` in a user namespace or under a dedicated uid, else by
            polling; on breach ``fork`` fails with EAGAIN (the program usually dies of it:
            ``runtime_error``) or, when polled, the program is killed: ``killed``.
        output_bytes: stdout + stderr bytes kept and allowed (default 1,000,000). On breach the
            program is killed: ``output_limit``.
        tail_chars: characters of stdout and of stderr kept in the record (default 4000).
        disk_mib: size of the private ``/tmp`` (working directory included) under bubblewrap
            (default 512; other isolation levels have no disk quota). On breach writes fail with
            ENOSPC: ``output_limit``.
    """

    wall_s: float = Field(default=60.0, gt=0)
    cpu_s: float = Field(default=60.0, gt=0)
    memory_mib: int = Field(default=2048, ge=64)
    file_size_mib: int = Field(default=64, ge=1)
    max_processes: int = Field(default=64, ge=1)
    output_bytes: int = Field(default=1_000_000, ge=1)
    tail_chars: int = Field(default=4000, ge=0)
    disk_mib: int = Field(default=512, ge=16)
