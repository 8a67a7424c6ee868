"""Scores cut by instance size (MIPLIB-NL, issue 49): pass@1 per size bucket of a benchmark whose
rows name one (:mod:`trex_eval.benchmarks.scale`; the run's manifest records each problem's
bucket, ``BenchmarkEntry.size_buckets``), and the sections that show them beside the leaderboard
(rendered by :mod:`.markdown` and :mod:`.html`).

A bucket's pass@1 is the mean, over the bucket's selected problems with stored samples, of each
problem's fraction of correct samples -- the benchmark's pass@1 restricted to the bucket. Each
table header names the benchmark's rule, which states its budget (``budgeted@1:cpu=600,...``).
Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from trex_eval.records import Record

if TYPE_CHECKING:
    from trex_eval.report.leaderboard import Leaderboard
    from trex_eval.report.runs import BenchmarkResults
    from trex_eval.report.summary import BenchmarkSummary


class BucketScore(Record):
    """One size bucket of one benchmark in one run: ``problems`` graded in it, ``pass_at_1`` in
    ``[0, 1]`` (``None`` when none was)."""

    name: str
    problems: int
    pass_at_1: float | None


def bucket_scores(bench: BenchmarkResults) -> tuple[BucketScore, ...]:
    """``bench``'s pass@1 per size bucket, smallest first; empty without buckets."""
    buckets = bench.entry.size_buckets
    if buckets is None:
        return ()
    tally: dict[str, list[float]] = {name: [] for name in buckets.names}
    for problem in bench.problems:
        name = buckets.of.get(problem.problem_id)
        if name in tally:
            tally[name].append(problem.score)
    return tuple(
        BucketScore(name=name, problems=len(scores), pass_at_1=sum(scores) / len(scores) if scores else None)
        for name, scores in tally.items()
    )


class SizeSection(Record):
    """One benchmark's table by size: ``title`` (benchmark and rule), bucket ``names``, and per run
    its label and one cell per bucket (``pass@1 % (n=N)``, or ``- (n=0)``)."""

    title: str
    names: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


def size_sections(board: Leaderboard) -> list[SizeSection]:
    """For each column group whose benchmark has size buckets, every run's pass@1 per bucket;
    empty when no column group has buckets."""
    sections = []
    for column in board.columns:
        cells = [(row.label, row.cell(column.label)) for row in board.rows]
        filled = [(label, cell) for label, cell in cells if cell is not None and cell.buckets]
        if filled:
            names = tuple(bucket.name for bucket in filled[0][1].buckets)
            rows = tuple((label, tuple(_bucket_cells(cell, names))) for label, cell in filled)
            sections.append(
                SizeSection(title=f"{column.label} by size ({column.rule})", names=names, rows=rows)
            )
    return sections


def bucket_columns(prefix: str, cell: BenchmarkSummary | None) -> dict[str, object]:
    """The leaderboard CSV's bucket columns of one cell: ``<prefix>.size.<bucket>.pass@1_pct`` and
    ``.n`` for each bucket (none for a benchmark without buckets)."""
    found: dict[str, object] = {}
    for bucket in cell.buckets if cell is not None else ():
        score = None if bucket.pass_at_1 is None else bucket.pass_at_1 * 100.0
        found[f"{prefix}.size.{bucket.name}.pass@1_pct"] = score
        found[f"{prefix}.size.{bucket.name}.n"] = bucket.problems
    return found


def _bucket_cells(cell: BenchmarkSummary, names: Sequence[str]) -> list[str]:
    scores = {bucket.name: bucket for bucket in cell.buckets}
    out = []
    for name in names:
        bucket = scores.get(name)
        if bucket is None or bucket.pass_at_1 is None:
            out.append(f"- (n={0 if bucket is None else bucket.problems})")
        else:
            out.append(f"{bucket.pass_at_1 * 100:.2f} (n={bucket.problems})")
    return out
