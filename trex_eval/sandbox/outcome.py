"""Turn a worker's reply (``runtime.contract.JobReply``) into an
:class:`~trex_eval.records.Execution`. Pure: no I/O.

Everything in the reply except the supervision fields (exit status, signal, timings, what the
worker killed the program for) was produced inside the sandbox and is treated as untrusted:
result-channel lines without the job's nonce are ignored, and every record is validated. Its
text is cleaned by the record types themselves (:mod:`trex_eval.text`: lone surrogates and C0
controls become U+FFFD, names are cut to 200 characters), messages composed here are cut to
:data:`~trex_eval.text.MESSAGE_CHARS`, and what the record keeps is bounded in encoded bytes
(:mod:`.bounds`).

Status precedence (first match wins):

1. the worker killed the program: wall clock (less time starved of CPU) or CPU time of all its
   processes -> ``timeout``, output size -> ``output_limit``, process count -> ``killed``, real
   time past the starvation cap -> ``killed`` (the machine's load: the pool runs it once more);
   death by SIGKILL with at least 75% of the CPU limit used -> ``timeout`` (the kernel enforces
   ``RLIMIT_CPU`` with SIGKILL);
2. the program did not compile -> ``syntax_error``;
3. a licence failure was seen (gurobipy errno 10009/10010, COPT licence error), not ruled out by
   the harness's own licence pre-flight, and no solve succeeded -> ``licence_error``;
   ``import gurobipy`` found no gurobipy_highs -> ``needs_gurobi``;
4. an exception escaped the program: ``MemoryError`` -> ``memory_limit``; EFBIG/ENOSPC/EDQUOT
   -> ``output_limit``; raised inside a solver call -> ``solver_error``; else ``runtime_error``
   (an exception after a successful solve still fails the program);
5. ``sys.exit(n)``/``os._exit(n)`` with ``n != 0`` -> ``runtime_error``; death by another signal
   -> ``killed`` (``memory_limit`` when stderr shows an allocation failure);
6. a clean exit: a failed solve call and no successful one, or a last solve with status
   ``error`` -> ``solver_error``; ``expect="solve"`` without a solve, or ``"model_file"``
   without a collected file -> ``no_solve``; else ``ok``.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..records import (
    ExecStatus,
    Execution,
    SolveRecord,
    SolveStatus,
    WrittenFile,
)
from ..text import MESSAGE_CHARS, clip
from . import libraries
from .bounds import bounded_files, bounded_solves
from .channel import KEPT_BINDINGS, ChannelReport, bindings, parse_channel, solve_record, written_files
from .limits import SandboxLimits
from .printed import printed_objective
from .runtime.contract import SETUP_FAILED_EXIT, JobReply

GUROBI_LICENCE_ERRNOS = frozenset({10009, 10010})
COPT_LICENCE_RETCODE = 4
CPU_LIMIT_FRACTION = 0.75
_ALLOCATION_FAILURE = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory")


def is_licence_failure(library: object, error_type: object, errno: object, message: object) -> bool:
    """True for gurobipy's "no/expired licence" and "size limit" errors and COPT's licence error."""
    text = str(message or "")
    if library == "gurobipy" or error_type == "GurobiError":
        return errno in GUROBI_LICENCE_ERRNOS
    if library == "coptpy" or error_type == "CoptError":
        return errno == COPT_LICENCE_RETCODE or "(LICENSE)" in text
    return False


def gurobipy_licence_failure(execution: Execution) -> bool:
    """True when ``execution`` failed because of gurobipy's licence (expired or size limit)."""
    return execution.status is ExecStatus.LICENCE_ERROR and (
        execution.error_type == "GurobiError" or execution.detail.startswith(("gurobipy: ", "GurobiError: "))
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _tail(text: str, chars: int) -> str:
    return text[-chars:] if chars else ""


@dataclass(frozen=True)
class _Verdict:
    status: ExecStatus
    detail: str
    error_type: str | None = None


GUROBI_NO_LICENCE_ERRNO = 10009
GUROBI_SIZE_LIMIT_ERRNO = 10010


@dataclass(frozen=True)
class TrustedLicence:
    """What the harness's own pre-flight found about gurobipy (``sandbox.licence``): the licence
    works (``ok``) and whether it is size-limited (``None``: unknown)."""

    ok: bool
    size_limited: bool | None


def _contradicted(errno: object, trusted: TrustedLicence | None) -> bool:
    """Whether the harness's own licence check rules out a gurobipy licence failure a program's
    process reported: "no or expired licence" while the pre-flight solved a model, "too large for
    a size-limited licence" while the pre-flight found no size limit."""
    if trusted is None or not trusted.ok:
        return False
    return errno == GUROBI_NO_LICENCE_ERRNO or (
        errno == GUROBI_SIZE_LIMIT_ERRNO and trusted.size_limited is False
    )


def _licence_failures(
    report: ChannelReport, error: dict[str, Any] | None, trusted: TrustedLicence | None
) -> list[str]:
    """The licence failures a program's process reported that the harness's check leaves standing
    (the reports are claims: a program can write any record, see :func:`_contradicted`)."""
    found = [
        f"{item.get('library')}: {item.get('message')}"
        for item in report.solve_errors
        if is_licence_failure(
            item.get("library"), item.get("error_type"), item.get("errno"), item.get("message")
        )
        and not (item.get("library") == "gurobipy" and _contradicted(item.get("errno"), trusted))
    ]
    if (
        error
        and is_licence_failure(None, error.get("error_type"), error.get("errno"), error.get("message"))
        and not (error.get("error_type") == "GurobiError" and _contradicted(error.get("errno"), trusted))
    ):
        found.append(f"{error.get('error_type')}: {error.get('message')}")
    return found


# Raised by the licence-free gurobipy layer for models only real Gurobi can solve (non-convex
# quadratic, quadratic constraints, SOS, general constraints) or APIs it does not implement; the
# program is then neither right nor wrong (docs/gurobipy-highs.md).
NEEDS_GUROBI_ERRORS = frozenset({"NeedsGurobiError", "CompatNotImplementedError"})


def _needs_gurobi(report: ChannelReport, error: dict[str, Any] | None) -> str | None:
    """The gurobipy_highs layer's message when it refused a model or an API, else None."""
    found = [
        f"{item.get('error_type')}: {item.get('message')}"
        for item in report.solve_errors
        if item.get("error_type") in NEEDS_GUROBI_ERRORS
    ]
    if error and error.get("error_type") in NEEDS_GUROBI_ERRORS:
        found.append(f"{error.get('error_type')}: {error.get('message')}")
    return found[-1][:500] if found else None


def _solved(solves: Iterable[SolveRecord]) -> bool:
    return any(solve.status is not SolveStatus.ERROR for solve in solves)


def _classify(
    reply: JobReply,
    *,
    report: ChannelReport,
    solves: tuple[SolveRecord, ...],
    files: tuple[WrittenFile, ...],
    limits: SandboxLimits,
    expect: str,
    trusted: TrustedLicence | None,
    stderr: str,
) -> _Verdict:
    """The job's status and detail, by the precedence of this module's docstring."""
    end = report.end
    error = end.get("error") if end else None
    error = error if isinstance(error, dict) else None
    if (killed := _stopped(reply, limits)) is not None:
        return killed
    if end and end.get("phase") == "compile":
        return _Verdict(ExecStatus.SYNTAX_ERROR, _error_text(error), _error_type(error))
    if not _solved(solves) and (unavailable := _unavailable(report, error, trusted)) is not None:
        return unavailable
    if error:
        return _raised(error)
    if reply.signal is not None and end is None:
        return _signalled(reply.signal, stderr, limits)
    if reply.exit_code is not None and reply.exit_code != 0:
        how = "sys.exit" if end and end.get("sys_exit") else "os._exit"
        return _Verdict(ExecStatus.RUNTIME_ERROR, f"{how}({reply.exit_code})")
    return _finished(report, solves, files, expect)


def _stopped(reply: JobReply, limits: SandboxLimits) -> _Verdict | None:
    """The verdict where the worker stopped the program (``killed_for``) or the kernel's CPU
    limit did (SIGXCPU, or SIGKILL near the limit), else None."""
    killed_for = reply.killed_for
    if killed_for == "wall":
        return _Verdict(ExecStatus.TIMEOUT, f"wall-clock limit of {limits.wall_s:g} s exceeded")
    if killed_for == "output":
        return _Verdict(ExecStatus.OUTPUT_LIMIT, f"output exceeded {limits.output_bytes} bytes")
    if killed_for == "disk":
        return _Verdict(
            ExecStatus.OUTPUT_LIMIT, f"wrote more than {limits.disk_mib} MiB to the temporary file systems"
        )
    if killed_for == "processes":
        return _Verdict(ExecStatus.KILLED, f"more than {limits.max_processes} processes")
    if killed_for == "memory":
        return _Verdict(
            ExecStatus.MEMORY_LIMIT,
            f"memory limit of {limits.memory_mib} MiB exceeded (all its processes and files together)",
        )
    if killed_for == "cpu":
        return _Verdict(
            ExecStatus.TIMEOUT, f"CPU time limit of {limits.cpu_s:g} s exceeded (all its processes together)"
        )
    if killed_for == "starved":
        return _Verdict(
            ExecStatus.KILLED,
            f"stopped after {reply.wall_s:.0f} s of real time, starved of CPU by the "
            "machine's load (not the program's failure)",
        )
    number = reply.signal
    if number == signal.SIGXCPU or (number == signal.SIGKILL and _near_cpu_limit(reply.cpu_s, limits)):
        return _Verdict(ExecStatus.TIMEOUT, f"CPU time limit of {limits.cpu_s:g} s exceeded")
    return None


def _unavailable(
    report: ChannelReport, error: dict[str, Any] | None, trusted: TrustedLicence | None
) -> _Verdict | None:
    """For a program that solved nothing: the verdict where it could not run here (a licence,
    real Gurobi or a library missing), else None."""
    licence = _licence_failures(report, error, trusted)
    if licence:
        return _Verdict(ExecStatus.LICENCE_ERROR, licence[-1][:500], _error_type(error))
    refused = _needs_gurobi(report, error)
    if refused:
        return _Verdict(ExecStatus.NEEDS_GUROBI, refused, _error_type(error))
    if report.highs_missing:
        return _Verdict(
            ExecStatus.NEEDS_GUROBI, "gurobipy_highs layer requested but not installed", _error_type(error)
        )
    lacking = libraries.missing_from_error(error.get("error_type"), error.get("message")) if error else None
    if lacking is not None:
        return _Verdict(
            ExecStatus.NEEDS_LIBRARY,
            f"{lacking.describe()}: the program could not run here, which is not its failure",
            _error_type(error),
        )
    return None


def _raised(error: dict[str, Any]) -> _Verdict:
    """The verdict of an exception that escaped the program."""
    error_type = _error_type(error)
    if error.get("memory"):
        return _Verdict(ExecStatus.MEMORY_LIMIT, _error_text(error), error_type)
    if error.get("output"):
        return _Verdict(ExecStatus.OUTPUT_LIMIT, _error_text(error), error_type)
    if error.get("in_solve"):
        return _Verdict(ExecStatus.SOLVER_ERROR, _error_text(error), error_type)
    return _Verdict(ExecStatus.RUNTIME_ERROR, _error_text(error), error_type)


def _signalled(number: int, stderr: str, limits: SandboxLimits) -> _Verdict:
    """The verdict of a program a signal ended before it could write its end record."""
    if number == signal.SIGXFSZ:
        return _Verdict(ExecStatus.OUTPUT_LIMIT, f"file size limit of {limits.file_size_mib} MiB exceeded")
    if any(marker in stderr[-4000:] for marker in _ALLOCATION_FAILURE):
        return _Verdict(
            ExecStatus.MEMORY_LIMIT, f"killed by {_signal_name(number)} after an allocation failure"
        )
    return _Verdict(ExecStatus.KILLED, f"killed by {_signal_name(number)}")


def _finished(
    report: ChannelReport, solves: tuple[SolveRecord, ...], files: tuple[WrittenFile, ...], expect: str
) -> _Verdict:
    """The verdict of a program that exited cleanly: its solves and files against ``expect``."""
    clean = "" if report.end else "left through os._exit(0): results after the last solve are lost"
    failed_solves = [item for item in report.solve_errors if item.get("library")]
    if (failed_solves and not _solved(solves)) or (solves and solves[-1].status is SolveStatus.ERROR):
        last = failed_solves[-1] if failed_solves else {}
        message = last.get("message", solves[-1].raw_status if solves else "")
        return _Verdict(
            ExecStatus.SOLVER_ERROR,
            f"{last.get('error_type', 'solver')}: {message}"[:500],
            last.get("error_type"),
        )
    if expect == "solve" and not solves:
        return _Verdict(
            ExecStatus.NO_SOLVE, "the program exited without calling a hooked solver" + _and(clean)
        )
    if expect == "model_file" and not files:
        return _Verdict(
            ExecStatus.NO_SOLVE, "the program wrote no model file" + _written_hint(report) + _and(clean)
        )
    return _Verdict(ExecStatus.OK, clean)


def _near_cpu_limit(cpu_s: object, limits: SandboxLimits) -> bool:
    """Whether a SIGKILL the worker did not send is the kernel's CPU limit: rusage times are
    sampled, so a process killed at its ``RLIMIT_CPU`` can report less (8% less measured under load)."""
    return isinstance(cpu_s, float) and cpu_s >= CPU_LIMIT_FRACTION * math.ceil(limits.cpu_s)


def _and(text: str) -> str:
    return f"; {text}" if text else ""


def _written_hint(report: ChannelReport) -> str:
    return f" in its working directory (it wrote {', '.join(report.written[:3])})" if report.written else ""


def _error_type(error: dict[str, Any] | None) -> str | None:
    return str(error.get("error_type"))[:200] if error else None


def _error_text(error: dict[str, Any] | None) -> str:
    if not error:
        return ""
    return f"{error.get('error_type')}: {str(error.get('message', ''))[-500:]}"


def build_execution(
    reply: JobReply,
    *,
    nonce: str,
    limits: SandboxLimits,
    expect: str,
    isolation: str,
    trusted_licence: TrustedLicence | None = None,
) -> Execution:
    """The :class:`Execution` for one worker reply of a job that ran (verification is done
    separately); its output, records and files are read as UTF-8, undecodable bytes replaced.

    ``trusted_licence`` is the harness's own gurobipy pre-flight for a job that ran the real
    gurobipy: a licence failure it rules out is not ``licence_error`` (the program failed on
    its own: ``runtime_error`` or ``solver_error``); ``None`` takes every reported one.

    Raises:
        ValueError: the job's confinement failed before the program ran (a harness problem:
            the caller turns it into :class:`~trex_eval.errors.SandboxError`).
    """
    report = parse_channel(reply.channel.decode("utf-8", "replace"), nonce)
    # Only the worker's word counts: a program can truncate its channel and forge the record.
    if not reply.started and (
        report.setup_error is not None or (reply.exit_code == SETUP_FAILED_EXIT and not reply.killed_for)
    ):
        reason = report.setup_error or f"it exited with status {SETUP_FAILED_EXIT} before the program ran"
        raise ValueError(f"the sandbox could not confine the job: {reason}")
    record_bytes = limits.record_mib << 20
    raw_solves, cut = bounded_solves(report.solves, record_bytes // 2)
    solves = tuple(record for raw in raw_solves if (record := solve_record(raw)) is not None)
    collected, collect_cut = written_files(reply.files)
    files, files_cut = bounded_files(
        collected, record_bytes // 2, (reply.files_dropped, reply.files_dropped_bytes)
    )
    cut += collect_cut + files_cut
    if reply.channel_dropped:
        cut.append(
            f"{reply.channel_dropped} bytes of solve records left out of the middle of the "
            "result channel (over twice the record budget)"
        )
    stdout, stderr = reply.stdout.decode("utf-8", "replace"), reply.stderr.decode("utf-8", "replace")
    verdict = _classify(
        reply,
        report=report,
        solves=solves,
        files=files,
        limits=limits,
        expect=expect,
        trusted=trusted_licence,
        stderr=stderr,
    )
    end = report.end or {}
    notes = "; ".join([*cut, *(clip(note, 500) for note in report.notes[:3])])
    detail = f"{verdict.detail}; {notes}" if verdict.detail and notes else verdict.detail or notes
    return Execution(
        status=verdict.status,
        detail=clip(detail, MESSAGE_CHARS),
        error_type=verdict.error_type,
        exit_code=reply.exit_code,
        signal=reply.signal,
        solves=solves,
        written_files=files,
        printed_objective=None if solves else printed_objective(stdout),
        stdout_tail=_tail(stdout, limits.tail_chars),
        stderr_tail=_tail(stderr, limits.tail_chars),
        wall_s=reply.wall_s,
        cpu_s=reply.cpu_s,
        max_rss_mib=None if reply.max_rss_kib is None else reply.max_rss_kib / 1024.0,
        isolation=isolation,
        gurobi=report.gurobi,
        bindings=bindings(end.get("bindings"))[:KEPT_BINDINGS],
        called_sys_exit=bool(end.get("sys_exit")),
    )
