"""Reading benchmark rows from JSON, JSONL, CSV and Parquet files (or a folder of them).

Each row comes back with a human locator (``file:line`` for text formats, ``file[row]`` for
Parquet and JSON arrays) so that every loader error can say where the bad row is.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.errors import BenchmarkError

SUPPORTED_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


@dataclass(frozen=True)
class Row:
    """One source row: its fields, its 0-based position over all files, and where it came from."""

    fields: dict[str, Any]
    position: int
    where: str


def read_rows(path: Path) -> list[Row]:
    """All rows of ``path`` (a supported file, or a folder whose supported files are read in
    name order).

    Raises:
        BenchmarkError: unreadable file, unsupported suffix, a line that is not a JSON object.
    """
    files = sorted(p for p in path.iterdir() if p.suffix in SUPPORTED_SUFFIXES) if path.is_dir() else [path]
    if not files:
        raise BenchmarkError(f"no {', '.join(SUPPORTED_SUFFIXES)} files in folder", where=str(path))
    rows: list[Row] = []
    for file in files:
        for fields, where in _read_file(file):
            rows.append(Row(fields=fields, position=len(rows), where=where))
    return rows


def _read_file(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    if not path.is_file():
        raise BenchmarkError("file not found", where=str(path))
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from _read_jsonl(path)
    elif suffix == ".json":
        yield from _read_json(path)
    elif suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            # Header is line 1; csv quoting may span lines, so use the reader's own counter.
            reader = csv.DictReader(handle)
            for record in reader:
                yield dict(record), f"{path}:{reader.line_num}"
    elif suffix == ".parquet":
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise BenchmarkError(f"cannot read Parquet: {exc}", where=str(path)) from exc
        for i, record in enumerate(frame.to_dict(orient="records")):
            yield {str(k): v for k, v in record.items()}, f"{path}[row {i}]"
    else:
        raise BenchmarkError(
            f"unsupported file type '{path.suffix}'", where=str(path), hint=f"use one of {SUPPORTED_SUFFIXES}"
        )


def _read_jsonl(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchmarkError(f"invalid JSON: {exc.msg} (column {exc.colno})", where=f"{path}:{number}") from exc
            if not isinstance(value, dict):
                raise BenchmarkError("each line must be a JSON object", where=f"{path}:{number}")
            yield value, f"{path}:{number}"


def _read_json(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"invalid JSON: {exc.msg}", where=f"{path}:{exc.lineno}") from exc
    if isinstance(value, dict):
        # A few data sets wrap the list: {"data": [...]} or {"id": {...}, ...}.
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            value = lists[0]
        elif all(isinstance(v, dict) for v in value.values()):
            value = [{"id": key, **item} for key, item in value.items()]
    if not isinstance(value, list):
        raise BenchmarkError("expected a JSON array of objects", where=str(path))
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise BenchmarkError("array items must be JSON objects", where=f"{path}[{i}]")
        yield item, f"{path}[{i}]"
