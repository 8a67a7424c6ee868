"""Read a job's result channel: the nonce-checked records the hooks wrote, validated into records.

Everything here was written inside the sandbox: lines without the job's nonce are ignored, a
field of the wrong type is dropped, a reported matrix over a re-solve cap is measured and
refused before it is validated, and what is kept is only ever a claim. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..linear_model import MAX_COLUMNS, MAX_NONZEROS, MAX_QUADRATIC_ROWS, MAX_QUADRATIC_TERMS, MAX_ROWS
from ..records import LinearModel, ModelBinding, SolveRecord, SolveStatus, WrittenFile, finite_or_none
from .runtime.contract import CollectedFile


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


def solve_record(raw: dict[str, Any]) -> SolveRecord | None:
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


def bindings(raw: object) -> tuple[ModelBinding, ...]:
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


def written_files(collected: tuple[CollectedFile, ...]) -> tuple[tuple[WrittenFile, ...], list[str]]:
    """The collected files (``sha256`` of the bytes as read; undecodable bytes become U+FFFD in
    ``content``) and a note for each one the worker cut to its budget."""
    files, notes = [], []
    for item in collected:
        files.append(
            WrittenFile(
                name=item.name,
                content=item.content.decode("utf-8", "replace"),
                sha256=hashlib.sha256(item.content).hexdigest(),
            )
        )
        if item.truncated:
            notes.append(f"{files[-1].name}: the first {len(item.content)} of {item.size} bytes collected")
    return tuple(files), notes
