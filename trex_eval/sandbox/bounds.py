"""What of a worker's reply fits in one record: the solves, matrices and model files kept. Pure.

A job's record budget is ``SandboxLimits.record_mib``; half of it goes to the captured matrices
and half to the collected model files. Sizes are those of the stored JSON line (see
:mod:`trex_eval.text`: a cleaned character takes at most three bytes there), so that a file of
control bytes cannot grow past its share. The whole line is held to the budget once more where
it is stored (:mod:`trex_eval.budget`). Every cut returns a note for ``Execution.detail``.
"""

from __future__ import annotations

from typing import Any

from ..records import WrittenFile
from ..text import cut_to_bytes, json_bytes

KEPT_SOLVES = 20
"""Solve records kept from each end of a program's solves (the graders use the last one)."""
MATRIX_TOO_LARGE = "matrix too large"


def matrix_bytes(data: object) -> int:
    """About how many bytes a raw matrix takes in a stored record (numbers at 24 bytes)."""
    if not isinstance(data, dict):
        return 0
    size = 0
    for key, value in data.items():
        if not isinstance(value, list):
            continue
        if key in ("var_names", "row_names", "vtype"):
            size += sum(len(item) + 3 if isinstance(item, str) else 24 for item in value)
        elif key == "q_constraints":
            size += sum(
                48 + 48 * _length(row.get("linear")) + 72 * _length(row.get("quadratic"))
                if isinstance(row, dict)
                else 24
                for row in value
            )
        else:
            size += (72 if key == "q_obj" else 24) * len(value)
    return size


def _length(value: object) -> int:
    return len(value) if isinstance(value, list) else 0


def bounded_solves(raws: list[dict[str, Any]], budget_bytes: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The first and last :data:`KEPT_SOLVES` solves, with matrices only while they fit in
    ``budget_bytes`` (the last solve's first); notes on what was dropped."""
    notes = []
    if len(raws) > 2 * KEPT_SOLVES:
        notes.append(
            f"{len(raws) - 2 * KEPT_SOLVES} of {len(raws)} solve records dropped "
            f"(the first and last {KEPT_SOLVES} kept)"
        )
        raws = raws[:KEPT_SOLVES] + raws[-KEPT_SOLVES:]
    kept = list(raws)
    remaining = budget_bytes
    dropped = 0
    for index in reversed(range(len(kept))):
        size = matrix_bytes(kept[index].get("model"))
        if size > remaining:
            kept[index] = {**kept[index], "model": None, "note": MATRIX_TOO_LARGE}
            dropped += 1
        else:
            remaining -= size
    if dropped:
        notes.append(f"{dropped} matrices left out of the record ({MATRIX_TOO_LARGE})")
    return kept, notes


def bounded_files(
    files: tuple[WrittenFile, ...], budget_bytes: int, dropped: tuple[int, int] = (0, 0)
) -> tuple[tuple[WrittenFile, ...], list[str]]:
    """The newest files whose stored contents fit in ``budget_bytes`` (encoded JSON bytes); the
    newest one always, its content cut to the budget when it alone exceeds it (its ``sha256``
    stays that of the whole file); notes on what was dropped, by the worker (``dropped``: its
    count of files and of their bytes) or here."""
    kept: list[WrittenFile] = []
    total = count = extra = 0
    notes = []
    for item in reversed(files):
        size = json_bytes(item.content)
        if kept and total + size > budget_bytes:
            count += 1
            extra += size
            continue
        if size > budget_bytes:
            item = item.model_copy(update={"content": cut_to_bytes(item.content, budget_bytes)})
            notes.append(
                f"{item.name}: content cut to its first {_mib(budget_bytes)} of {_mib(size)} MiB "
                "as stored (the record budget for model files)"
            )
            size = budget_bytes
        kept.append(item)
        total += size
    count += dropped[0]
    extra += dropped[1]
    if count:
        notes.append(
            f"{count} collected files ({extra / (1 << 20):.1f} MiB) dropped: over the "
            f"{budget_bytes / (1 << 20):.0f} MiB budget for model files (the newest kept)"
        )
    return tuple(reversed(kept)), notes


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f}"
