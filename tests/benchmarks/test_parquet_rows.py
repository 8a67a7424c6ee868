"""Parquet rows (issue 44): a file of plain null-free columns is read without pandas, with the
very records pandas gives; any other file still through pandas, its conversions unchanged."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from trex_eval.benchmarks.rows import read_rows


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    if hasattr(left, "tolist"):
        return hasattr(right, "tolist") and left.tolist() == right.tolist()
    return type(left) is type(right) and left == right


def _rows_match_pandas(path: Path) -> None:
    expected = pd.read_parquet(path).to_dict(orient="records")
    rows = read_rows(path)
    assert [row.where for row in rows] == [f"{path}[row {i}]" for i in range(len(expected))]
    for row, record in zip(rows, expected, strict=True):
        assert row.fields.keys() == {str(key) for key in record}
        assert all(_same(row.fields[str(key)], value) for key, value in record.items())


def test_plain_columns_give_pandas_records(tmp_path: Path) -> None:
    table = pa.table(
        {
            "question": pa.array(["x + y", "two\nlines"]),
            "answer": pa.array(["3", "-0.5"], type=pa.large_string()),
            "count": pa.array([1, 2**40], type=pa.int64()),
            "small": pa.array([3, 4], type=pa.uint8()),
            "value": pa.array([1.5, -2.0]),
            "single": pa.array([0.1, 2.5], type=pa.float32()),
            "flag": pa.array([True, False]),
        }
    )
    pq.write_table(table, tmp_path / "plain.parquet")
    _rows_match_pandas(tmp_path / "plain.parquet")


def test_other_columns_keep_pandas_conversions(tmp_path: Path) -> None:
    table = pa.table(
        {
            "question": pa.array(["a", None]),
            "value": pa.array([1.0, None]),
            "tags": pa.array([["x"], ["y", "z"]]),
        }
    )
    pq.write_table(table, tmp_path / "nulls.parquet")
    _rows_match_pandas(tmp_path / "nulls.parquet")
    assert math.isnan(read_rows(tmp_path / "nulls.parquet")[1].fields["value"])
    # A stored pandas index is not a field.
    pd.DataFrame({"question": ["a", "b"]}, index=[10, 11]).to_parquet(tmp_path / "indexed.parquet")
    _rows_match_pandas(tmp_path / "indexed.parquet")


def test_loading_nl4opt_does_not_load_pandas(data_dir: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from trex_eval.benchmarks import load_benchmark\n"
        f"bench = load_benchmark('nl4opt', data_dir=Path({str(data_dir)!r}))\n"
        "print(len(bench.problems), 'pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["289", "False"]
