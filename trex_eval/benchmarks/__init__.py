"""The input stage: benchmark definitions and their data.

:mod:`.spec` (the YAML schema), :mod:`.loading` (YAML + data -> :class:`Benchmark` of Problems),
:mod:`.rows` (CSV/JSON/JSONL rows), :mod:`.answers` (label text -> references), :mod:`.user`
(bring-your-own benchmarks: validate, scaffold), :mod:`.data` (the pinned data download) and
:mod:`.assets` (where the shipped files live).
"""

from __future__ import annotations

from trex_eval.benchmarks.loading import (
    Benchmark,
    RowError,
    known_spec_paths,
    load_benchmark,
    load_spec,
    reads_data_dir,
    resolve_spec_path,
    shipped_spec_paths,
    user_benchmarks_dir,
    user_spec_paths,
)
from trex_eval.benchmarks.spec import BenchmarkSpec, GraderSpec

__all__ = [
    "Benchmark",
    "BenchmarkSpec",
    "GraderSpec",
    "RowError",
    "known_spec_paths",
    "load_benchmark",
    "load_spec",
    "reads_data_dir",
    "resolve_spec_path",
    "shipped_spec_paths",
    "user_benchmarks_dir",
    "user_spec_paths",
]
