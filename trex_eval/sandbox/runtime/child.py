"""What a forked job process does: confine itself, run the program as ``__main__``, report.

The process is forked from the worker's zygote (so the solver libraries are already imported and
hooked, and nothing of an earlier job is in its memory: see :mod:`.zygote`) and, where the kernel
allows, is the first process of a fresh PID namespace, with a ``/proc`` of its own: when it exits
or is killed, every process it started dies with it, ``setsid`` or not.

Records written to the result channel, in order: ``start``; any number of ``solve``,
``solve_error``, ``model_written``, ``gurobipy`` and ``note`` records (also from the program's own
child processes); finally ``end`` from the main process. A program that leaves through
``os._exit`` or a signal has no ``end`` record, and the harness says so.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import math
import os
import resource
import signal
import sys
import traceback
import types
from typing import Any, NamedTuple, NoReturn

from . import hooks, native, syscalls
from .capture import RECORDER, describe_failure
from .channel import ResultChannel
from .contract import SETUP_FAILED_EXIT, JobOrder
from .imports import GurobipySwitch
from .memory import expose_self

_MIB = 1 << 20
_NOFILE = 1024
_PROC_FLAGS = native.MS_NOSUID | native.MS_NODEV | native.MS_NOEXEC
_OUTPUT_ERRNOS = (errno.EFBIG, errno.ENOSPC, errno.EDQUOT)


class JobPlan(NamedTuple):
    """What every job of a worker needs and no job's order changes, built by the zygote once
    before its first fork (a job forked ahead then builds no object of its own for it: each
    object it makes or touches copies pages it shares with the zygote).

    Attributes:
        workdir: the job's working directory (holds the program and its files once it runs).
        program_path: the program file inside ``workdir`` (``__file__`` of the program), which
            the job reads itself: its text never passes through the zygote.
        job_uid: unprivileged uid (and gid) to switch to, or None to keep the worker's.
        highs_package: folder of the gurobipy_highs layer (``gurobi == "highs"`` jobs).
        own_proc: mount options (encoded, see :func:`own_proc`) of the ``/proc`` the job mounts
            for itself over the worker's (it then sees only its own processes, numbered from 1,
            and none of the machine's counters), or None to keep the worker's.
    """

    workdir: str
    program_path: str
    job_uid: int | None
    highs_package: str
    own_proc: bytes | None = None


class JobStart(NamedTuple):
    """What one job gets when its request comes, besides the plan.

    Attributes:
        order: the supervisor's order (limits, nonce, gurobipy mode).
        address_space_bytes: the ``RLIMIT_AS`` to set: the zygote's address space at the fork
            plus the order's allowance (what the job inherits is not charged to it).
        channel: the result channel (the job keeps its descriptor).
        started_fd: a socket to the supervisor on which the job says ``S`` once it is confined
            and has read its program, and which it closes before the program runs: the
            supervisor's proof that the program ran (its result channel is the program's to
            rewrite, a ``setup_failed`` record included).
    """

    order: JobOrder
    address_space_bytes: int
    channel: ResultChannel
    started_fd: int


def _set_limit(which: int, soft: int, hard: int | None = None) -> None:
    resource.setrlimit(which, (soft, soft if hard is None else hard))


def inherited_limits() -> None:
    """The limits and flags every job has, set once in the zygote, which every job inherits: no
    core files, 1024 descriptors, and no privileges gained through ``execve`` (which the
    seccomp filter also needs)."""
    _set_limit(resource.RLIMIT_CORE, 0)
    _set_limit(resource.RLIMIT_NOFILE, min(_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    native.prctl(native.PR_SET_NO_NEW_PRIVS, 1)


def prepare(worker_pid: int, *, stdout_fd: int, stderr_fd: int, keep: tuple[int, int]) -> None:
    """The part of confinement that needs no order, done by a job forked ahead while it waits for
    one: the program's standard output and error (``stdout_fd``/``stderr_fd`` become fd 1 and 2),
    every other descriptor but the two in ``keep`` closed, its own session and death with
    ``worker_pid`` (its forking zygote, from which it also inherits default signal dispositions,
    ``/dev/null`` as stdin and :func:`inherited_limits`). Raises OSError on failure."""
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    # Not sorted(): each builtin a job calls touches pages it shares with the zygote.
    low, high = keep if keep[0] < keep[1] else (keep[1], keep[0])
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, 1 << 20)
    os.setsid()
    native.prctl(native.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() not in (worker_pid, 0):
        os._exit(SETUP_FAILED_EXIT)


def confine(plan: JobPlan, start: JobStart) -> None:
    """Turn this process, :func:`prepare` d, into the job's sandboxed process (raises on
    failure)."""
    # Before anything reads /proc by name: until then it may lead into an empty directory of the
    # job's new /tmp (WorkerConfig.proc_dir), or into the /proc of the job before.
    if plan.own_proc is not None:
        own_proc(plan.own_proc)
    # The worker made itself the out-of-memory killer's last pick; a job is its first.
    expose_self()
    os.chdir(plan.workdir)
    order = start.order
    _set_limit(resource.RLIMIT_AS, start.address_space_bytes)
    # Soft = hard: the job is the init of its PID namespace, and an init ignores SIGXCPU (the
    # soft-limit signal); the hard limit's SIGKILL is forced.
    _set_limit(resource.RLIMIT_CPU, max(1, math.ceil(order.cpu_s)))
    _set_limit(resource.RLIMIT_FSIZE, order.file_size_mib * _MIB)
    if order.nproc_limit is not None:
        _set_limit(resource.RLIMIT_NPROC, order.nproc_limit)
    if plan.job_uid is not None:
        os.setgroups([])
        os.setresgid(plan.job_uid, plan.job_uid, plan.job_uid)
        os.setresuid(plan.job_uid, plan.job_uid, plan.job_uid)
    else:
        with contextlib.suppress(OSError):
            native.drop_capabilities()
    if syscalls.SUPPORTED:
        syscalls.install()
    # The environment is already the job's: the zygote holds it (the same for every job).


def own_proc(options: bytes) -> None:
    """Mount a ``/proc`` of this process's PID namespace where ``/proc`` leads (``options``, encoded:
    e.g. ``b"subset=pid"``, which leaves out the machine-wide files, such as ``/proc/stat``'s count
    of every process ever forked, through which one job could signal a later one). In the worker's
    mount namespace, not one of the job's own (copying the mount table for every job cost 0.45 ms):
    the supervisor reads its own ``/proc`` through a descriptor and detaches this one after the job
    (``jobfs``); the program itself can mount nothing (seccomp).

    Raises:
        OSError: the kernel refused (the worker checked at start-up that it does not).
    """
    native.mount_encoded(b"proc", b"/proc", b"proc", _PROC_FLAGS, options or None)


def run(plan: JobPlan, start: JobStart) -> NoReturn:
    """Confine, run the program, report; never returns (the process exits)."""
    channel = start.channel
    try:
        confine(plan, start)
        source = _read_program(plan.program_path)
        os.write(start.started_fd, b"S")
        os.close(start.started_fd)
    except BaseException as error:
        channel.emit("setup_failed", {"error": describe_failure(error)})
        os._exit(SETUP_FAILED_EXIT)
    RECORDER.attach(channel)
    channel.emit_start()
    switch = GurobipySwitch(start.order.gurobi, plan.highs_package, hooks.GUROBIPY_INSTALLER)
    switch.activate()
    main_pid = os.getpid()
    namespace, end = _execute(plan, source)
    if os.getpid() != main_pid:
        # A fork of the program unwound to here: it is not the program's end.
        _flush()
        os._exit(end["exit_code"])
    end["bindings"] = _bindings(namespace)
    _flush()
    channel.emit("end", end)
    os._exit(end["exit_code"])


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _exception_fields(error: BaseException) -> dict[str, Any]:
    message = str(error)
    return {
        "error_type": type(error).__name__,
        "message": message[-2000:],
        "errno": code if isinstance(code := getattr(error, "errno", None), int) else None,
        "memory": isinstance(error, MemoryError) or "bad_alloc" in message,
        "output": isinstance(error, OSError) and error.errno in _OUTPUT_ERRNOS,
        "in_solve": error is RECORDER.last_error,
    }


def _read_program(path: str) -> str:
    """The program's text as the supervisor wrote it (lone surrogates of a model's text kept)."""
    # os-level reads: a file object would touch dozens of the zygote's pages in the job.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "surrogatepass")


def _execute(plan: JobPlan, source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    main = types.ModuleType("__main__")
    main.__file__ = plan.program_path
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.argv = [plan.program_path]
    sys.path.insert(0, plan.workdir)
    namespace = main.__dict__
    end: dict[str, Any] = {"phase": "run", "exit_code": 0, "sys_exit": False, "error": None}
    try:
        code = compile(source, plan.program_path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        traceback.print_exception(type(error), error, None)
        end.update(phase="compile", exit_code=1, error=_exception_fields(error))
        return namespace, end
    try:
        exec(code, namespace)
    except SystemExit as error:
        end["sys_exit"] = True
        end["exit_code"] = _exit_status(error.code)
    except BaseException as error:
        # Start the traceback at the program's own frame, as the interpreter would for a script.
        trace = error.__traceback__.tb_next if error.__traceback__ is not None else None
        traceback.print_exception(type(error), error, trace)
        end.update(exit_code=1, error=_exception_fields(error))
    return namespace, end


def _exit_status(code: object) -> int:
    """What the interpreter would exit with for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _bindings(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """Module-level names bound to solver models, plus ``model`` and ``m`` whatever they hold.

    ``has_optimize``/``has_objval`` are ``hasattr`` exactly as the reference wrapper evaluates
    them (an exception other than AttributeError counts as False and is noted in raw_status).
    """
    found = []
    for name, value in list(namespace.items()):
        always = name in ("model", "m")
        if not always and (name.startswith("__") or isinstance(value, (types.ModuleType, type))):
            continue
        described = hooks.read_binding(value)
        if described is None and not always:
            continue
        if described is None:
            described = {
                "library": f"{type(value).__module__}.{type(value).__qualname__}",
                "status": None,
                "raw_status": None,
                "objective": None,
            }
        has_objval, note = _reference_hasattr(value, "ObjVal")
        has_optimize, _ = _reference_hasattr(value, "optimize")
        if note:
            described["raw_status"] = note
        found.append({"name": name, **described, "has_optimize": has_optimize, "has_objval": has_objval})
    return found


def _reference_hasattr(value: object, attribute: str) -> tuple[bool, str | None]:
    try:
        return hasattr(value, attribute), None
    except Exception as error:
        return False, f"hasattr({attribute}) raised {type(error).__name__}: {error}"[:200]
