"""Reports over run directories: run summaries, leaderboards, paired ablation comparisons, and a
self-contained HTML page. Every module reads runs through :mod:`trex_eval.store` and computes
with :mod:`trex_eval.metrics`; only the ``write_*`` functions and the ``load_*`` /
``*_from_dirs`` readers touch files.

::

    runs = load_runs([Path("results/a"), Path("results/b")])
    board = build_leaderboard([summarize_results(run) for run in runs])
    write_leaderboard_csv(board, Path("results/leaderboard.csv"))
    print(render_leaderboard_markdown(board, published=load_published(path)))
    print(render_comparison_markdown(compare_runs(runs, baseline=0)))
    write_html_report(Path("report.html"), runs, baseline=0)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trex_eval.report.compare import (
        Comparison,
        ComparisonSet,
        PairedBenchmark,
        PairedOverall,
        compare_runs,
        select_baseline,
    )
    from trex_eval.report.compare_table import comparison_frame, write_comparison_csv
    from trex_eval.report.html import HtmlOptions, render_html_report, write_html_report
    from trex_eval.report.intervals import IntervalSettings
    from trex_eval.report.leaderboard import (
        ColumnGroup,
        Leaderboard,
        build_leaderboard,
        leaderboard_frame,
        leaderboard_from_dirs,
        write_leaderboard_csv,
    )
    from trex_eval.report.markdown import (
        macro_parts,
        render_comparison_markdown,
        render_leaderboard_markdown,
        render_summary_markdown,
        score_parts,
    )
    from trex_eval.report.outcomes import Outcome, classify
    from trex_eval.report.published import PublishedScore, load_published, shipped_published_csv
    from trex_eval.report.runs import RunResults, arrange, load_run, load_runs
    from trex_eval.report.summary import (
        BenchmarkSummary,
        RunSummary,
        summarize,
        summarize_results,
        summary_json,
    )

# Exports load on first use: ``report.compare`` and ``report.leaderboard`` import pandas (about half
# a second), which the commands that only need ``report.published`` or ``report.runs`` (``run``,
# ``audit``) should not pay for.
_EXPORTS: dict[str, str] = {
    "BenchmarkSummary": "trex_eval.report.summary",
    "ColumnGroup": "trex_eval.report.leaderboard",
    "Comparison": "trex_eval.report.compare",
    "ComparisonSet": "trex_eval.report.compare",
    "HtmlOptions": "trex_eval.report.html",
    "IntervalSettings": "trex_eval.report.intervals",
    "Leaderboard": "trex_eval.report.leaderboard",
    "Outcome": "trex_eval.report.outcomes",
    "PairedBenchmark": "trex_eval.report.compare",
    "PairedOverall": "trex_eval.report.compare",
    "PublishedScore": "trex_eval.report.published",
    "RunResults": "trex_eval.report.runs",
    "RunSummary": "trex_eval.report.summary",
    "arrange": "trex_eval.report.runs",
    "build_leaderboard": "trex_eval.report.leaderboard",
    "classify": "trex_eval.report.outcomes",
    "compare_runs": "trex_eval.report.compare",
    "comparison_frame": "trex_eval.report.compare_table",
    "leaderboard_frame": "trex_eval.report.leaderboard",
    "leaderboard_from_dirs": "trex_eval.report.leaderboard",
    "load_published": "trex_eval.report.published",
    "load_run": "trex_eval.report.runs",
    "load_runs": "trex_eval.report.runs",
    "macro_parts": "trex_eval.report.markdown",
    "render_comparison_markdown": "trex_eval.report.markdown",
    "render_html_report": "trex_eval.report.html",
    "render_leaderboard_markdown": "trex_eval.report.markdown",
    "render_summary_markdown": "trex_eval.report.markdown",
    "score_parts": "trex_eval.report.markdown",
    "select_baseline": "trex_eval.report.compare",
    "shipped_published_csv": "trex_eval.report.published",
    "summarize": "trex_eval.report.summary",
    "summarize_results": "trex_eval.report.summary",
    "summary_json": "trex_eval.report.summary",
    "write_comparison_csv": "trex_eval.report.compare_table",
    "write_html_report": "trex_eval.report.html",
    "write_leaderboard_csv": "trex_eval.report.leaderboard",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BenchmarkSummary",
    "ColumnGroup",
    "Comparison",
    "ComparisonSet",
    "HtmlOptions",
    "IntervalSettings",
    "Leaderboard",
    "Outcome",
    "PairedBenchmark",
    "PairedOverall",
    "PublishedScore",
    "RunResults",
    "RunSummary",
    "arrange",
    "build_leaderboard",
    "classify",
    "compare_runs",
    "comparison_frame",
    "leaderboard_frame",
    "leaderboard_from_dirs",
    "load_published",
    "load_run",
    "load_runs",
    "macro_parts",
    "render_comparison_markdown",
    "render_html_report",
    "render_leaderboard_markdown",
    "render_summary_markdown",
    "score_parts",
    "select_baseline",
    "shipped_published_csv",
    "summarize",
    "summarize_results",
    "summary_json",
    "write_comparison_csv",
    "write_html_report",
    "write_leaderboard_csv",
]
