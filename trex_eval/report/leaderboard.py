"""Leaderboards: one row per run, one column group per benchmark *as graded*. Pure except for
:func:`leaderboard_from_dirs` (reads run directories) and :func:`write_leaderboard_csv`.

**Mixing policy: split, and say so.** A column group is keyed by (benchmark, benchmark version,
grading rule spec, dataset sha256, number of problems selected). Runs that graded a benchmark
under another rule, on other data or on another selection (``--limit``) never share a column: the
benchmark is split into one column group per key, each labelled with what differs
(``nl4opt[trex-compat@1]``, ``nl4opt[data 9c339c23]``, ``nl4opt[n=5]``), and a warning names the
runs in each. The macro average follows the same rule: rows whose macro covers different
column groups get different macro columns (``macro[1]``, ``macro[2]``: most column groups first),
each defined by the groups it averages. Nothing is refused, so a leaderboard of mixed runs still
prints, but no number ever sits under a header it does not match.

Rows are sorted by macro column (the one covering most column groups first), then by macro
score (best first), then by model and run id; ``rank`` counts within a macro column.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from trex_eval.errors import ConfigError
from trex_eval.records import DiagnosisCategory, Record
from trex_eval.report.intervals import IntervalSettings
from trex_eval.report.runs import load_runs
from trex_eval.report.size_buckets import bucket_columns
from trex_eval.report.summary import BenchmarkSummary, RunSummary, distinct_labels, summarize_results

MACRO = "macro"

if TYPE_CHECKING:
    import pandas as pd


class ColumnKey(NamedTuple):
    """What makes two runs' numbers for a benchmark comparable: the same benchmark version, rule,
    data and selection of problems (a ``--limit 5`` smoke run never shares a full run's column)."""

    benchmark: str
    version: int
    rule: str
    dataset_sha256: str
    problems: int


class ColumnGroup(Record):
    """One benchmark as graded by one rule on one data version: a column group of the table.
    ``label`` is the benchmark name, qualified only when the benchmark is split."""

    label: str
    benchmark: str
    title: str
    version: int
    rule: str
    rule_description: str
    dataset_sha256: str
    problems: int

    @property
    def key(self) -> ColumnKey:
        return ColumnKey(self.benchmark, self.version, self.rule, self.dataset_sha256, self.problems)


class MacroColumn(Record):
    """A macro-average column: the :data:`~trex_eval.report.definitions.MACRO_LABEL` over the column
    groups named in ``over``."""

    label: str
    over: tuple[str, ...]


class LeaderboardRow(Record):
    """One run: its label (unique in the board), its summary, its rank within its macro column, and
    which column group each of its benchmarks fills (``cells``: column label -> index into
    ``summary.benchmarks``)."""

    rank: int
    label: str
    summary: RunSummary
    cells: dict[str, int]
    macro_column: str | None

    def cell(self, label: str) -> BenchmarkSummary | None:
        index = self.cells.get(label)
        return None if index is None else self.summary.benchmarks[index]


class Leaderboard(Record):
    """Rows in display order, column groups sorted by (benchmark, rule, data), and the warnings
    that say which runs were split apart or carry flagged numbers."""

    columns: tuple[ColumnGroup, ...]
    macro_columns: tuple[MacroColumn, ...]
    rows: tuple[LeaderboardRow, ...]
    interval: IntervalSettings
    warnings: tuple[str, ...]


def build_leaderboard(summaries: Sequence[RunSummary]) -> Leaderboard:
    """Arrange run summaries into a leaderboard (mixing policy in the module docstring).

    Raises:
        ConfigError: no summaries, the same run twice, or summaries whose confidence intervals
            were computed differently (confidence, resamples or seed), which one table cannot label.
    """
    if not summaries:
        raise ConfigError("a leaderboard needs at least one run")
    run_ids = [summary.run.run_id for summary in summaries]
    duplicates = sorted({run_id for run_id in run_ids if run_ids.count(run_id) > 1})
    if duplicates:
        raise ConfigError(f"run(s) given more than once: {', '.join(duplicates)}")
    settings = {summary.interval for summary in summaries}
    if len(settings) > 1:
        raise ConfigError(
            "the runs' confidence intervals were computed with different settings: "
            + "; ".join(sorted(setting.describe() for setting in settings)),
            hint="summarize every run with the same IntervalSettings",
        )
    columns = _column_groups(summaries)
    label_of = {column.key: column.label for column in columns}
    cells_of = [
        {label_of[_key(bench)]: index for index, bench in enumerate(summary.benchmarks)}
        for summary in summaries
    ]
    macro_columns = _macro_columns(cells_of, columns)
    macro_of = {column.over: column.label for column in macro_columns}
    order = {column.label: position for position, column in enumerate(macro_columns)}
    labels = distinct_labels([summary.run for summary in summaries])

    def sort_key(index: int) -> tuple[int, float, str, str]:
        summary = summaries[index]
        macro = summary.macro_pass_at_1
        column = _macro_label(cells_of[index], columns, macro_of)
        return (
            order.get(column, len(order)) if column else len(order),
            -(macro if macro is not None else -1.0),
            labels[index],
            summary.run.run_id,
        )

    rows: list[LeaderboardRow] = []
    rank_in: dict[str | None, int] = defaultdict(int)
    for index in sorted(range(len(summaries)), key=sort_key):
        column = _macro_label(cells_of[index], columns, macro_of)
        rank_in[column] += 1
        rows.append(
            LeaderboardRow(
                rank=rank_in[column],
                label=labels[index],
                summary=summaries[index],
                cells=cells_of[index],
                macro_column=column,
            )
        )
    return Leaderboard(
        columns=columns,
        macro_columns=macro_columns,
        rows=tuple(rows),
        interval=next(iter(settings)),
        warnings=tuple(_warnings(rows, columns, macro_columns)),
    )


def leaderboard_from_dirs(
    run_dirs: Sequence[Path], *, interval: IntervalSettings | None = None
) -> Leaderboard:
    """Load, summarize and arrange run directories.

    Raises:
        StoreError: a directory is not a readable run (see :func:`~trex_eval.report.runs.load_run`).
        ConfigError: as :func:`build_leaderboard`.
    """
    return build_leaderboard([summarize_results(run, interval=interval) for run in load_runs(run_dirs)])


# --------------------------------------------------------------------------- CSV


def leaderboard_frame(board: Leaderboard) -> pd.DataFrame:
    """The leaderboard as a wide table, one row per run, with stable column names.

    Run columns: ``rank, macro_column, run_id, model, label, backend, served_model, protocol,
    prompt_set, few_shot, samples, limit, created_at, finished_at, run_dir``. Then per column group
    ``G`` (its label): ``G.pass@1_pct, G.ciNN_low_pct, G.ciNN_high_pct`` (``NN`` = the confidence in
    percent), ``G.n`` (problems selected), ``G.rule, G.dataset_sha256, G.template_sha256,
    G.extractor, G.api_errors, G.environment_failures, G.missing_samples, G.unverified_samples``
    (passing claims the harness could not verify, not counted in pass@1), and
    ``G.diagnosis.<category>`` for every :class:`~trex_eval.records.DiagnosisCategory` (failing
    samples diagnosed so; 0 also where the run was not diagnosed), and for a benchmark with size
    buckets ``G.size.<bucket>.pass@1_pct`` and ``G.size.<bucket>.n``; empty where the run did not
    fill the group. Then per macro column ``M``: ``M.pass@1_pct, M.ciNN_low_pct,
    M.ciNN_high_pct, M.over`` (the column groups averaged, ``+``-separated), ``M.interval``
    (``bootstrap``, or ``wilson-mean`` where a benchmark has fewer than 30 problems). Scores are
    percentages at full float precision.
    """
    import pandas as pd  # ~0.3 s of start-up that only the tables need

    ci = f"ci{board.interval.confidence * 100:g}"
    records: list[dict[str, object]] = []
    for row in board.rows:
        run = row.summary.run
        record: dict[str, object] = {
            "rank": row.rank,
            "macro_column": row.macro_column,
            "run_id": run.run_id,
            "model": run.model,
            "label": row.label,
            "backend": run.backend,
            "served_model": run.served_model or None,
            "protocol": run.protocol,
            "prompt_set": run.prompt_set,
            "few_shot": run.few_shot,
            "samples": run.samples,
            "limit": run.limit,
            "created_at": run.created_at,
            "finished_at": run.finished_at,
            "run_dir": run.path,
        }
        for column in board.columns:
            cell = row.cell(column.label)
            prefix = column.label
            record[f"{prefix}.pass@1_pct"] = _pct(cell.pass_at_1) if cell else None
            record[f"{prefix}.{ci}_low_pct"] = _pct(cell.ci_low) if cell else None
            record[f"{prefix}.{ci}_high_pct"] = _pct(cell.ci_high) if cell else None
            record[f"{prefix}.n"] = cell.problems if cell else None
            record[f"{prefix}.rule"] = cell.rule if cell else None
            record[f"{prefix}.dataset_sha256"] = cell.dataset_sha256 if cell else None
            record[f"{prefix}.template_sha256"] = cell.template_sha256 if cell else None
            record[f"{prefix}.extractor"] = cell.extractor if cell else None
            record[f"{prefix}.api_errors"] = cell.api_errors if cell else None
            record[f"{prefix}.environment_failures"] = cell.environment_failures if cell else None
            record[f"{prefix}.missing_samples"] = cell.missing_samples if cell else None
            record[f"{prefix}.unverified_samples"] = cell.unverified_samples if cell else None
            for category in DiagnosisCategory:
                count = cell.diagnoses.get(category.value, 0) if cell else None
                record[f"{prefix}.diagnosis.{category.value}"] = count
            record.update(bucket_columns(prefix, cell))
        for macro in board.macro_columns:
            mine = row.macro_column == macro.label
            summary = row.summary
            record[f"{macro.label}.pass@1_pct"] = _pct(summary.macro_pass_at_1) if mine else None
            record[f"{macro.label}.{ci}_low_pct"] = _pct(summary.macro_ci_low) if mine else None
            record[f"{macro.label}.{ci}_high_pct"] = _pct(summary.macro_ci_high) if mine else None
            record[f"{macro.label}.over"] = "+".join(macro.over) if mine else None
            record[f"{macro.label}.interval"] = summary.macro_interval_method if mine else None
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    integer_columns = [
        name
        for name in frame.columns
        if name.endswith((".n", "_errors", "_failures", "_samples")) or ".diagnosis." in name
    ]
    for name in [*integer_columns, "limit"]:
        frame[name] = frame[name].astype("Int64")
    return frame


def write_leaderboard_csv(board: Leaderboard, path: Path) -> None:
    """Write :func:`leaderboard_frame` as UTF-8 CSV (header row, no index), creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    leaderboard_frame(board).to_csv(path, index=False)


# --------------------------------------------------------------------------- helpers


def _key(bench: BenchmarkSummary) -> ColumnKey:
    return ColumnKey(bench.benchmark, bench.version, bench.rule, bench.dataset_sha256, bench.problems)


def _pct(value: float | None) -> float | None:
    return None if value is None else value * 100.0


def _column_groups(summaries: Sequence[RunSummary]) -> tuple[ColumnGroup, ...]:
    first: dict[ColumnKey, BenchmarkSummary] = {}
    for summary in summaries:
        for bench in summary.benchmarks:
            first.setdefault(_key(bench), bench)
    by_name: dict[str, list[ColumnKey]] = defaultdict(list)
    for key in sorted(first):
        by_name[key.benchmark].append(key)
    groups = []
    for name, keys in by_name.items():
        for key in keys:
            bench = first[key]
            groups.append(
                ColumnGroup(
                    label=_split_label(key, keys) if len(keys) > 1 else name,
                    benchmark=name,
                    title=bench.title,
                    version=key.version,
                    rule=key.rule,
                    rule_description=bench.rule_description,
                    dataset_sha256=key.dataset_sha256,
                    problems=key.problems,
                )
            )
    return tuple(groups)


def _split_label(key: ColumnKey, siblings: Sequence[ColumnKey]) -> str:
    """``name[...]`` naming only the parts in which this key differs from its siblings."""
    parts = []
    if len({sibling.version for sibling in siblings}) > 1:
        parts.append(f"v{key.version}")
    if len({sibling.rule for sibling in siblings}) > 1:
        parts.append(key.rule)
    if len({sibling.dataset_sha256 for sibling in siblings}) > 1:
        parts.append(f"data {key.dataset_sha256[:8]}")
    if len({sibling.problems for sibling in siblings}) > 1:
        parts.append(f"n={key.problems}")
    return f"{key.benchmark}[{', '.join(parts)}]"


def _macro_columns(
    cells_of: Sequence[dict[str, int]], columns: Sequence[ColumnGroup]
) -> tuple[MacroColumn, ...]:
    order = [column.label for column in columns]
    sets = {tuple(label for label in order if label in cells) for cells in cells_of if cells}
    ranked = sorted(sets, key=lambda over: (-len(over), over))
    if len(ranked) == 1:
        return (MacroColumn(label=MACRO, over=ranked[0]),)
    return tuple(
        MacroColumn(label=f"{MACRO}[{number}]", over=over) for number, over in enumerate(ranked, start=1)
    )


def _macro_label(
    cells: dict[str, int], columns: Sequence[ColumnGroup], macro_of: dict[tuple[str, ...], str]
) -> str | None:
    if not cells:
        return None
    return macro_of[tuple(column.label for column in columns if column.label in cells)]


def _warnings(
    rows: Sequence[LeaderboardRow], columns: Sequence[ColumnGroup], macro_columns: Sequence[MacroColumn]
) -> list[str]:
    warnings = []
    split: dict[str, list[ColumnGroup]] = defaultdict(list)
    for column in columns:
        split[column.benchmark].append(column)
    for name, groups in split.items():
        if len(groups) < 2:
            continue
        described = "; ".join(
            f"{group.label} (rule {group.rule}, data {group.dataset_sha256[:12]}, n={group.problems}): "
            + ", ".join(row.summary.run.run_id for row in rows if group.label in row.cells)
            for group in groups
        )
        warnings.append(
            f"{name} is split into {len(groups)} columns because the runs graded it under different rules, "
            f"data versions or problem selections: {described}"
        )
    if len(macro_columns) > 1:
        warnings.append(
            "the macro average is split because runs cover different column groups: "
            + "; ".join(f"{macro.label} averages {', '.join(macro.over)}" for macro in macro_columns)
        )
    for row in rows:
        warnings.extend(f"{row.summary.run.run_id}: {note}" for note in row.summary.notes)
    return warnings
