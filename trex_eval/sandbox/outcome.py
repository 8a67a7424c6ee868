"""Turn a worker's raw reply into an :class:`~trex_eval.records.Execution`. Pure: no I/O.

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

import hashlib
import json
import math
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..records import (
    ExecStatus,
    Execution,
    LinearModel,
    ModelBinding,
    SolveRecord,
    SolveStatus,
    WrittenFile,
    finite_or_none,
)
from ..text import MESSAGE_CHARS, clip
from . import libraries
from .bounds import bounded_files, bounded_solves
from .limits import SandboxLimits
from .printed import printed_objective
from .runtime.contract import SETUP_FAILED_EXIT
from .verify.views import MAX_COLUMNS, MAX_NONZEROS, MAX_QUADRATIC_ROWS, MAX_QUADRATIC_TERMS, MAX_ROWS

GUROBI_LICENCE_ERRNOS = frozenset({10009, 10010})
COPT_LICENCE_RETCODE = 4
CPU_LIMIT_FRACTION = 0.75
_ALLOCATION_FAILURE = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory")


@dataclass
class ChannelReport:
    """The nonce-checked records of one job's result channel, by kind."""

    started: bool = False
    setup_error: str | None = None
    solves: list[dict[str, Any]] = field(default_factory=list)
    solve_errors: list[dict[str, Any]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    gurobi: str | None = None
    highs_missing: bool = False
    notes: list[str] = field(default_factory=list)
    end: dict[str, Any] | None = None


_ERROR_FIELDS: dict[str, tuple[type, ...]] = {
    "library": (str,),
    "error_type": (str,),
    "errno": (int,),
    "message": (str,),
    "memory": (bool,),
    "output": (bool,),
    "in_solve": (bool,),
}
"""The fields of an error (a ``solve_error`` record, an ``end`` record's ``error``) and their
types: records are the program's to write, so a field of another type is dropped, never met."""


def _typed_error(value: object) -> dict[str, Any] | None:
    """``value`` as an error record: a dict holding only the fields of :data:`_ERROR_FIELDS`
    with the right types (``errno`` an int, not a bool), or None if it is not a dict at all."""
    if not isinstance(value, dict):
        return None
    kept = {
        key: found
        for key, kinds in _ERROR_FIELDS.items()
        if isinstance(found := value.get(key), kinds) and not (key == "errno" and isinstance(found, bool))
    }
    return {**{key: item for key, item in value.items() if key not in _ERROR_FIELDS}, **kept}


def parse_channel(text: str, nonce: str) -> ChannelReport:
    """Collect the records carrying ``nonce`` (malformed or foreign lines are skipped; errors are
    typed by :func:`_typed_error`)."""
    report = ChannelReport()
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict) or record.get("nonce") != nonce:
            continue
        kind = record.get("kind")
        if kind == "start":
            report.started = True
        elif kind == "setup_failed":
            report.setup_error = str(record.get("error"))
        elif kind == "solve":
            report.solves.append(record)
        elif kind == "solve_error":
            typed = _typed_error(record)
            if typed is not None:
                report.solve_errors.append(typed)
        elif kind == "model_written":
            report.written.append(str(record.get("path")))
        elif kind == "gurobipy":
            if record.get("highs_missing"):
                report.highs_missing = True
            elif isinstance(record.get("implementation"), str):
                report.gurobi = record["implementation"]
        elif kind == "note":
            report.notes.append(str(record.get("message")))
        elif kind == "end" and report.end is None:
            report.end = {**record, "error": _typed_error(record.get("error"))}
    return report


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


_RAW_CAPS = (
    ("obj", "columns", MAX_COLUMNS),
    ("row_lower", "rows", MAX_ROWS),
    ("a_val", "nonzeros", MAX_NONZEROS),
    ("q_obj", "quadratic terms", MAX_QUADRATIC_TERMS),
    ("q_constraints", "quadratic rows", MAX_QUADRATIC_ROWS),
)
"""Lists of a reported matrix measured before it is validated: one over the re-solve's cap of its
kind could never be verified, and validating it would only cost the harness time and memory
(a default record cannot hold one; a raised ``record_mib`` could)."""


def _over_caps(data: dict[str, Any]) -> str | None:
    for key, what, cap in _RAW_CAPS:
        found = data.get(key)
        if isinstance(found, list) and len(found) > cap:
            return f"matrix not kept: {len(found)} {what}, over the re-solve's cap of {cap}"
    return None


def _linear_model(data: object) -> tuple[LinearModel | None, str | None]:
    """A validated, internally consistent matrix, or None and why not."""
    if data is None:
        return None, None
    if isinstance(data, dict) and (oversized := _over_caps(data)) is not None:
        return None, oversized
    try:
        model = LinearModel.model_validate(data)
    except ValidationError as error:
        return None, f"malformed matrix ({error.error_count()} validation errors)"
    n, m = model.num_vars, model.num_rows
    columns = (len(model.obj), len(model.lb), len(model.ub), len(model.vtype))
    rows = (len(model.row_lower), len(model.row_upper))
    entries = {len(model.a_row), len(model.a_col), len(model.a_val)}
    if set(columns) != {n} or set(rows) != {m} or len(entries) != 1:
        return None, "inconsistent matrix dimensions"
    if any(not 0 <= i < m for i in model.a_row) or any(not 0 <= j < n for j in model.a_col):
        return None, "matrix index out of range"
    if any(not (0 <= i < n and 0 <= j < n) for i, j, _ in model.q_obj):
        return None, "quadratic objective index out of range"
    for row in model.q_constraints:
        if any(not 0 <= j < n for j, _ in row.linear) or any(
            not (0 <= i < n and 0 <= j < n) for i, j, _ in row.quadratic
        ):
            return None, "quadratic constraint index out of range"
    return model, None


KEPT_BINDINGS = 200


def _solve_record(raw: dict[str, Any]) -> SolveRecord | None:
    model, problem = _linear_model(raw.get("model"))
    note = problem or raw.get("note")
    try:
        status = SolveStatus(raw.get("status"))
    except ValueError:
        status = SolveStatus.UNKNOWN
    objective = raw.get("objective")
    try:
        return SolveRecord(
            library=str(raw.get("library"))[:100],
            status=status,
            raw_status=str(raw.get("raw_status") or "")[:200],
            objective=finite_or_none(objective) if isinstance(objective, (int, float)) else None,
            sense=raw.get("sense") if raw.get("sense") in ("min", "max") else None,
            num_vars=raw.get("num_vars") if isinstance(raw.get("num_vars"), int) else None,
            num_constraints=raw.get("num_constraints")
            if isinstance(raw.get("num_constraints"), int)
            else None,
            model=model,
            verification=None if model is not None else f"skipped: {note or 'no matrix captured'}"[:300],
        )
    except ValidationError:
        return None


def _bindings(raw: object) -> tuple[ModelBinding, ...]:
    found = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        try:
            status = SolveStatus(item["status"]) if item.get("status") else None
        except ValueError:
            status = SolveStatus.UNKNOWN
        objective = item.get("objective")
        try:
            found.append(
                ModelBinding(
                    name=str(item.get("name"))[:200],
                    library=str(item.get("library"))[:200],
                    has_optimize=bool(item.get("has_optimize")),
                    has_objval=bool(item.get("has_objval")),
                    status=status,
                    raw_status=None if item.get("raw_status") is None else str(item["raw_status"])[:200],
                    objective=finite_or_none(objective) if isinstance(objective, (int, float)) else None,
                )
            )
        except ValidationError:
            continue
    return tuple(found)


def _written_files(raw: object) -> tuple[tuple[WrittenFile, ...], list[str]]:
    """The collected files (``sha256`` of the bytes as read; undecodable bytes become U+FFFD in
    ``content``) and a note for each one the worker cut to its budget."""
    files, notes = [], []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        data = str(item.get("content", "")).encode("utf-8", "surrogateescape")
        files.append(
            WrittenFile(
                name=str(item.get("name")),
                content=data.decode("utf-8", "replace"),
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
        if item.get("truncated") is True:
            notes.append(f"{files[-1].name}: the first {len(data)} of {item.get('size')} bytes collected")
    return tuple(files), notes


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
    reply: dict[str, Any],
    report: ChannelReport,
    solves: tuple[SolveRecord, ...],
    files: tuple[WrittenFile, ...],
    limits: SandboxLimits,
    expect: str,
    trusted: TrustedLicence | None = None,
) -> _Verdict:
    killed_for = reply.get("killed_for")
    number = reply.get("signal")
    exit_code = reply.get("exit_code")
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
            f"stopped after {reply.get('wall_s', 0.0):.0f} s of real time, starved of CPU by the "
            "machine's load (not the program's failure)",
        )
    if number == signal.SIGXCPU or (number == signal.SIGKILL and _near_cpu_limit(reply.get("cpu_s"), limits)):
        return _Verdict(ExecStatus.TIMEOUT, f"CPU time limit of {limits.cpu_s:g} s exceeded")
    end = report.end
    error = end.get("error") if end else None
    error = error if isinstance(error, dict) else None
    if end and end.get("phase") == "compile":
        return _Verdict(ExecStatus.SYNTAX_ERROR, _error_text(error), _error_type(error))
    licence = _licence_failures(report, error, trusted)
    if licence and not _solved(solves):
        return _Verdict(ExecStatus.LICENCE_ERROR, licence[-1][:500], _error_type(error))
    refused = _needs_gurobi(report, error)
    if refused and not _solved(solves):
        return _Verdict(ExecStatus.NEEDS_GUROBI, refused, _error_type(error))
    if report.highs_missing and not _solved(solves):
        return _Verdict(
            ExecStatus.NEEDS_GUROBI, "gurobipy_highs layer requested but not installed", _error_type(error)
        )
    lacking = libraries.missing_from_error(error.get("error_type"), error.get("message")) if error else None
    if lacking is not None and not _solved(solves):
        return _Verdict(
            ExecStatus.NEEDS_LIBRARY,
            f"{lacking.describe()}: the program could not run here, which is not its failure",
            _error_type(error),
        )
    if error:
        error_type = _error_type(error)
        if error.get("memory"):
            return _Verdict(ExecStatus.MEMORY_LIMIT, _error_text(error), error_type)
        if error.get("output"):
            return _Verdict(ExecStatus.OUTPUT_LIMIT, _error_text(error), error_type)
        if error.get("in_solve"):
            return _Verdict(ExecStatus.SOLVER_ERROR, _error_text(error), error_type)
        return _Verdict(ExecStatus.RUNTIME_ERROR, _error_text(error), error_type)
    if number is not None and end is None:
        stderr = str(reply.get("stderr", ""))[-4000:]
        if number == signal.SIGXFSZ:
            return _Verdict(
                ExecStatus.OUTPUT_LIMIT, f"file size limit of {limits.file_size_mib} MiB exceeded"
            )
        if any(marker in stderr for marker in _ALLOCATION_FAILURE):
            return _Verdict(
                ExecStatus.MEMORY_LIMIT, f"killed by {_signal_name(number)} after an allocation failure"
            )
        return _Verdict(ExecStatus.KILLED, f"killed by {_signal_name(number)}")
    if isinstance(exit_code, int) and exit_code != 0:
        how = "sys.exit" if end and end.get("sys_exit") else "os._exit"
        return _Verdict(ExecStatus.RUNTIME_ERROR, f"{how}({exit_code})")
    clean = "" if end else "left through os._exit(0): results after the last solve are lost"
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
    reply: dict[str, Any],
    *,
    nonce: str,
    limits: SandboxLimits,
    expect: str,
    isolation: str,
    trusted_licence: TrustedLicence | None = None,
) -> Execution:
    """The :class:`Execution` for one worker reply (verification is done separately).

    ``trusted_licence`` is the harness's own gurobipy pre-flight for a job that ran the real
    gurobipy: a licence failure it rules out is not ``licence_error`` (the program failed on
    its own: ``runtime_error`` or ``solver_error``); ``None`` takes every reported one.

    Raises:
        ValueError: the job's confinement failed before the program ran (a harness problem:
            the caller turns it into :class:`~trex_eval.errors.SandboxError`).
    """
    report = parse_channel(str(reply.get("channel", "")), nonce)
    # Only the worker's word counts: a program can truncate its channel and forge the record.
    if reply.get("started") is False and (
        report.setup_error is not None
        or (reply.get("exit_code") == SETUP_FAILED_EXIT and not reply.get("killed_for"))
    ):
        reason = report.setup_error or f"it exited with status {SETUP_FAILED_EXIT} before the program ran"
        raise ValueError(f"the sandbox could not confine the job: {reason}")
    record_bytes = limits.record_mib << 20
    raw_solves, cut = bounded_solves(report.solves, record_bytes // 2)
    solves = tuple(record for raw in raw_solves if (record := _solve_record(raw)) is not None)
    collected, collect_cut = _written_files(reply.get("files"))
    files, files_cut = bounded_files(collected, record_bytes // 2, reply.get("files_dropped"))
    cut += collect_cut + files_cut
    if int(reply.get("channel_dropped") or 0):
        cut.append(
            f"{int(reply['channel_dropped'])} bytes of solve records left out of the middle of the "
            "result channel (over twice the record budget)"
        )
    verdict = _classify(reply, report, solves, files, limits, expect, trusted_licence)
    stdout = str(reply.get("stdout", ""))
    end = report.end or {}
    max_rss = reply.get("max_rss_kib")
    notes = "; ".join([*cut, *(clip(note, 500) for note in report.notes[:3])])
    detail = f"{verdict.detail}; {notes}" if verdict.detail and notes else verdict.detail or notes
    return Execution(
        status=verdict.status,
        detail=clip(detail, MESSAGE_CHARS),
        error_type=verdict.error_type,
        exit_code=reply.get("exit_code"),
        signal=reply.get("signal"),
        solves=solves,
        written_files=files,
        printed_objective=None if solves else printed_objective(stdout),
        stdout_tail=_tail(stdout, limits.tail_chars),
        stderr_tail=_tail(str(reply.get("stderr", "")), limits.tail_chars),
        wall_s=float(reply.get("wall_s", 0.0)),
        cpu_s=reply.get("cpu_s"),
        max_rss_mib=None if max_rss is None else max_rss / 1024.0,
        isolation=isolation,
        gurobi=report.gurobi,
        bindings=_bindings(end.get("bindings"))[:KEPT_BINDINGS],
        called_sys_exit=bool(end.get("sys_exit")),
    )
