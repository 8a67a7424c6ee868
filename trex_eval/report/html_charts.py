"""The HTML report's charts: pass@1 per column group and per macro with CI whiskers, the ablation
deltas, the outcome breakdown (the SVG itself: :mod:`trex_eval.report.charts`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from trex_eval.report.charts import Bar, Stack, delta_chart, score_chart, stack_chart
from trex_eval.report.compare import ComparisonSet
from trex_eval.report.definitions import MACRO_LABEL
from trex_eval.report.intervals import SMALL_N
from trex_eval.report.leaderboard import Leaderboard
from trex_eval.report.markdown import SMALL_N_MARK
from trex_eval.report.summary import RunSummary


@dataclass(frozen=True)
class Chart:
    """One chart of the page: its heading and its inline SVG."""

    heading: str
    svg: Markup


def score_charts(board: Leaderboard) -> list[Chart]:
    charts = []
    for position, column in enumerate(board.columns):
        bars = []
        for row in board.rows:
            cell = row.cell(column.label)
            if cell is not None:
                flags = "; ".join(
                    text
                    for text, on in (
                        (f"{cell.environment_failures} environment failures", cell.environment_failures),
                        (f"{cell.missing_samples} missing samples", cell.missing_samples),
                        (f"n < {SMALL_N}: Wilson interval", cell.small_n),
                    )
                    if on
                )
                bars.append(
                    Bar(
                        row.label + (SMALL_N_MARK if cell.small_n else ""),
                        cell.pass_at_1,
                        cell.ci_low,
                        cell.ci_high,
                        note=f"n={cell.problems}" + (f"; {flags}" if flags else ""),
                    )
                )
        heading = f"{column.title} · rule {column.rule} · data {column.dataset_sha256[:8]}"
        charts.append(
            Chart(heading, score_chart(f"{column.label} — pass@1", bars, chart_id=f"score-{position}"))
        )
    for position, macro in enumerate(board.macro_columns):
        bars = [
            Bar(
                row.label + (SMALL_N_MARK if row.summary.macro_small_n else ""),
                row.summary.macro_pass_at_1,
                row.summary.macro_ci_low,
                row.summary.macro_ci_high,
                note="mean of the benchmarks' Wilson bounds" if row.summary.macro_small_n else "",
            )
            for row in board.rows
            if row.macro_column == macro.label and row.summary.macro_pass_at_1 is not None
        ]
        heading = f"{MACRO_LABEL} over {', '.join(macro.over)}"
        charts.append(
            Chart(heading, score_chart(f"{macro.label} — pass@1", bars, chart_id=f"macro-{position}"))
        )
    return charts


def delta_charts(result: ComparisonSet) -> list[Chart]:
    charts = []
    for position, comparison in enumerate(result.comparisons):
        bars = [
            Bar(
                pair.benchmark,
                pair.difference,
                pair.ci_low,
                pair.ci_high,
                note=f"won {pair.won}, lost {pair.lost}",
            )
            for pair in comparison.benchmarks
        ]
        if comparison.overall is not None:
            overall = comparison.overall
            bars.append(Bar("overall (macro)", overall.difference, overall.ci_low, overall.ci_high))
        title = f"{comparison.candidate_label} − {comparison.baseline_label}"
        charts.append(Chart(title, delta_chart(f"Δ pass@1: {title}", bars, chart_id=f"delta-{position}")))
    return charts


def outcome_chart(summaries: Sequence[RunSummary], labels: Sequence[str]) -> Markup:
    stacks = [
        Stack(f"{label} · {bench.benchmark}", dict(bench.outcomes))
        for summary, label in zip(summaries, labels, strict=True)
        for bench in summary.benchmarks
    ]
    return stack_chart("Outcome of every expected sample", stacks, chart_id="outcomes-chart")
