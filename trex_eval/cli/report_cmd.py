"""`trex-eval leaderboard | compare | report`: tables and pages over finished run directories."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from trex_eval.cli._common import echo_text, err, out

if TYPE_CHECKING:
    from trex_eval.report.published import PublishedScore

RunDirs = Annotated[
    list[Path], typer.Argument(help="Run directories (results/<run-id>).", show_default=False)
]


def register(app: typer.Typer) -> None:
    app.command("leaderboard")(leaderboard)
    app.command("compare")(compare)
    app.command("report")(report)


def _published(include: bool) -> tuple[PublishedScore, ...]:
    from trex_eval.report import load_published, shipped_published_csv

    path = shipped_published_csv() if include else None
    return load_published(path) if path is not None else ()


def leaderboard(
    runs: RunDirs,
    csv_out: Annotated[
        Path,
        typer.Option("--out", "-o", help="CSV to write (one row per run, one column group per benchmark)."),
    ] = Path("results/leaderboard.csv"),
    md: Annotated[bool, typer.Option("--md", help="Also print the Markdown table.")] = False,
    html: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--html", help="Also write the self-contained HTML report here."),
    ] = None,
    published: Annotated[
        bool, typer.Option("--published/--no-published", help="Show reported (not re-run) numbers beside.")
    ] = True,
) -> None:
    """One row per run, score + 95% CI + n per benchmark, and the macro average.

    Runs graded under different rules or data versions never share a column: the benchmark is split
    into one column per variant, and a warning names the runs in each.
    """
    from trex_eval.report import (
        leaderboard_from_dirs,
        load_runs,
        render_leaderboard_markdown,
        write_html_report,
        write_leaderboard_csv,
    )

    board = leaderboard_from_dirs(runs)
    csv_out.parent.mkdir(parents=True, exist_ok=True)
    write_leaderboard_csv(board, csv_out)
    reported = _published(published)
    if md:
        echo_text(render_leaderboard_markdown(board, published=reported))
    for warning in board.warnings:
        err.print(f"warning: {warning}", highlight=False)
    if html is not None:
        write_html_report(html, load_runs(runs), baseline=0, published=reported)
        out.print(f"HTML report: {html}")
    out.print(f"leaderboard CSV: {csv_out}")


def compare(
    runs: RunDirs,
    baseline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--baseline", help="The run the others are compared with (a path or run id; default: the first)."
        ),
    ] = None,
    csv_out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", "-o", help="Also write the comparison as CSV."),
    ] = None,
) -> None:
    """Paired ablation comparison (e.g. base vs SFT vs CPT+SFT): per benchmark and overall, the
    difference with a paired bootstrap CI, exact McNemar p-value, problems won/lost and the flips."""
    from trex_eval.report import (
        compare_runs,
        load_runs,
        render_comparison_markdown,
        select_baseline,
        write_comparison_csv,
    )

    loaded = load_runs(runs)
    index = select_baseline(loaded, baseline) if baseline is not None else 0
    result = compare_runs(loaded, baseline=index)
    echo_text(render_comparison_markdown(result))
    if csv_out is not None:
        csv_out.parent.mkdir(parents=True, exist_ok=True)
        write_comparison_csv(result, csv_out)
        out.print(f"comparison CSV: {csv_out}")


def report(
    runs: RunDirs,
    html: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write.")] = Path(
        "results/report.html"
    ),
    baseline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--baseline", help="Baseline run for the ablation charts (default: the first)."),
    ] = None,
    published: Annotated[
        bool, typer.Option("--published/--no-published", help="Show reported (not re-run) numbers beside.")
    ] = True,
) -> None:
    """One self-contained HTML page: leaderboard, charts with CI whiskers, ablation deltas, verdict
    breakdown and a per-problem drill-down (prompt, completion, program, output, verdict, rule)."""
    from trex_eval.report import load_runs, select_baseline, write_html_report

    loaded = load_runs(runs)
    index = select_baseline(loaded, baseline) if baseline is not None else 0
    html.parent.mkdir(parents=True, exist_ok=True)
    write_html_report(html, loaded, baseline=index, published=_published(published))
    out.print(f"HTML report: {html}")
