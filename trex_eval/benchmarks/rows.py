"""Reading benchmark rows from JSON, JSONL, CSV and Parquet files (or a folder of them).

Each row comes back with a human locator (``file:line`` for text formats, ``file[row]`` for
Parquet and JSON arrays) so that every loader error can say where the bad row is. A row that
cannot be read as a record (a JSONL line that is not a JSON object, a CSV line with more values
than the header has columns) comes back too, with ``error`` set and no fields: one bad line is
that row's problem, not the whole file's.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.errors import BenchmarkError

SUPPORTED_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


@dataclass(frozen=True)
class Row:
    """One source row: its fields, its 0-based position over all files, and where it came from.

    ``error`` says why the row could not be read as a record (``fields`` is then empty).
    """

    fields: dict[str, Any]
    position: int
    where: str
    error: str | None = None


@dataclass(frozen=True)
class _Record:
    fields: dict[str, Any]
    where: str
    error: str | None = None


def read_rows(path: Path, *, file_format: str | None = None) -> list[Row]:
    """All rows of ``path`` (a supported file, or a folder whose supported files are read in
    name order). ``file_format`` (``jsonl``, ``json``, ``csv``, ``parquet``) overrides the
    suffix: several upstream ``.json`` files are JSON Lines.

    Raises:
        BenchmarkError: unreadable file, unsupported suffix, a JSON file that is not valid JSON or
            not an array of records. Unreadable single rows are returned with ``Row.error`` set.
    """
    files = sorted(p for p in path.iterdir() if p.suffix in SUPPORTED_SUFFIXES) if path.is_dir() else [path]
    if not files:
        raise BenchmarkError(f"no {', '.join(SUPPORTED_SUFFIXES)} files in folder", where=str(path))
    rows: list[Row] = []
    for file in files:
        for record in _read_file(file, file_format):
            rows.append(Row(record.fields, position=len(rows), where=record.where, error=record.error))
    return rows


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting ``prob_9`` before ``prob_10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part)


def read_problem_folders(path: Path, *, pattern: str, files: dict[str, str]) -> tuple[list[Row], list[Path]]:
    """One row per sub-folder of ``path`` matching ``pattern`` (natural name order).

    ``files`` maps a field name to a file in each sub-folder: its text is that field; a ``.json``
    file holding an object also gives one field ``<field>.<key>`` per key. The sub-folder name is
    field ``folder``. A sub-folder lacking a file gets a row with ``error`` set. Returns the rows
    and every file read (for the benchmark's digest).

    Raises:
        BenchmarkError: ``path`` is not a folder, or no sub-folder matches.
    """
    if not path.is_dir():
        raise BenchmarkError("expected a folder of problem folders", where=str(path))
    folders = sorted((p for p in path.glob(pattern) if p.is_dir()), key=lambda p: natural_key(p.name))
    if not folders:
        raise BenchmarkError(f"no sub-folder matches {pattern!r}", where=str(path))
    rows: list[Row] = []
    read: list[Path] = []
    for folder in folders:
        fields: dict[str, Any] = {"folder": folder.name}
        error = None
        for name, file_name in files.items():
            file = folder / file_name
            if not file.is_file():
                error = f"missing {file_name}"
                break
            text = file.read_text(encoding="utf-8")
            read.append(file)
            fields[name] = text
            if file.suffix == ".json":
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as exc:
                    error = f"{file_name}: invalid JSON: {exc.msg}"
                    break
                if isinstance(value, dict):
                    fields.update({f"{name}.{key}": item for key, item in value.items()})
        rows.append(Row({} if error else fields, position=len(rows), where=str(folder), error=error))
    return rows, read


def _read_file(path: Path, file_format: str | None = None) -> Iterator[_Record]:
    if not path.is_file():
        raise BenchmarkError("file not found", where=str(path))
    suffix = f".{file_format}" if file_format else path.suffix.lower()
    if suffix == ".jsonl":
        yield from _read_jsonl(path)
    elif suffix == ".json":
        yield from _read_json(path)
    elif suffix == ".csv":
        yield from _read_csv(path)
    elif suffix == ".parquet":
        for i, record in enumerate(_parquet_records(path)):
            yield _Record({str(k): v for k, v in record.items()}, f"{path}[row {i}]")
    else:
        raise BenchmarkError(
            f"unsupported file type '{path.suffix}'", where=str(path), hint=f"use one of {SUPPORTED_SUFFIXES}"
        )


def _parquet_records(path: Path) -> list[dict[Any, Any]]:
    """The records of a Parquet file as pandas gives them (``to_dict(orient="records")``). A file
    of null-free text, integer, float and boolean columns (every shipped one) is read by pyarrow
    alone, whose records are the same there, without loading pandas (a quarter of a second of
    every run); any other through pandas, whose conversions (NaN for a missing value, arrays for
    lists, a stored index left out) its rows have always had."""
    import pyarrow.parquet as pq
    import pyarrow.types as kinds

    try:
        table = pq.ParquetFile(path).read()
        plain = table.schema.pandas_metadata is None and all(
            column.null_count == 0
            and (
                kinds.is_string(column.type)
                or kinds.is_large_string(column.type)
                or kinds.is_integer(column.type)
                or kinds.is_float32(column.type)
                or kinds.is_float64(column.type)
                or kinds.is_boolean(column.type)
            )
            for column in table.columns
        )
        if plain:
            records: list[dict[Any, Any]] = table.to_pylist()
            return records
        import pandas as pd

        records = pd.read_parquet(path).to_dict(orient="records")
        return records
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise BenchmarkError(f"cannot read Parquet: {exc}", where=str(path)) from exc


def _read_csv(path: Path) -> Iterator[_Record]:
    # utf-8-sig: a byte-order mark (OptiMind's CSVs have one) is not part of the first column name.
    with path.open(newline="", encoding="utf-8-sig") as handle:
        # Header is line 1; csv quoting may span lines, so use the reader's own counter.
        reader = csv.DictReader(handle)
        for record in reader:
            where = f"{path}:{reader.line_num}"
            extra = record.pop(None, None)
            if extra is not None:
                columns = len(reader.fieldnames or ())
                yield _Record({}, where, f"{columns + len(extra)} values for {columns} header columns")
            else:
                yield _Record(dict(record), where)


def _read_jsonl(path: Path) -> Iterator[_Record]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                value = json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                yield _Record({}, where, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            if isinstance(value, dict):
                yield _Record(value, where)
            else:
                yield _Record({}, where, f"expected a JSON object, found {_json_type(value)}")


def _read_json(path: Path) -> Iterator[_Record]:
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
        if isinstance(item, dict):
            yield _Record(item, f"{path}[{i}]")
        else:
            yield _Record({}, f"{path}[{i}]", f"expected a JSON object, found {_json_type(item)}")


def _json_type(value: object) -> str:
    """JSON's name for the type of a decoded value (``array``, ``string``, ...)."""
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
