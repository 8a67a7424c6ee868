"""`trex-eval leaderboard | compare | report`: tables and pages over finished run directories."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from trex_eval.cli._common import echo_text, err, out

if TYPE_CHECKING:
    from trex_eval.report.leaderboard import Leaderboard
    from trex_eval.report.published import PublishedScore

RunDirs = Annotated[
    list[Path],
    typer.Argument(
        help="Run directories (results/<run-id>); other paths a glob brings along (files, folders "
        "without a manifest.json) are skipped with a note.",
        show_default=False,
    ),
]


def _run_dirs(paths: list[Path]) -> list[Path]:
    """The run directories among ``paths`` (a shell glob such as ``results/*`` also brings the
    shipped CSVs and earlier reports), each skipped path named on stderr.

    Raises:
        ConfigError: none of ``paths`` is a run directory.
    """
    from trex_eval.errors import ConfigError
    from trex_eval.store import MANIFEST

    runs = [path for path in paths if (path / MANIFEST).is_file()]
    for path in paths:
        if path not in runs:
            what = "a file" if path.is_file() else "no such path" if not path.exists() else f"no {MANIFEST}"
            err.print(f"note: skipping {path}: not a run directory ({what})", markup=False, highlight=False)
    if not runs:
        raise ConfigError(
            "none of the given paths is a run directory",
            hint="pass the directories `trex-eval run` wrote (results/<run-id>, or its --out)",
        )
    return runs


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
    md: Annotated[
        bool,
        typer.Option(
            "--md", help="Print the Markdown table (with definitions) instead of the terminal table."
        ),
    ] = False,
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

    runs = _run_dirs(runs)
    board = leaderboard_from_dirs(runs)
    csv_out.parent.mkdir(parents=True, exist_ok=True)
    write_leaderboard_csv(board, csv_out)
    reported = _published(published)
    if md:
        echo_text(render_leaderboard_markdown(board, published=reported))
    else:
        _print_board(board)
    for warning in board.warnings:
        err.print(f"warning: {warning}", highlight=False)
    if html is not None:
        write_html_report(html, load_runs(runs), baseline=0, published=reported)
        out.print(f"HTML report: {html}")
    out.print(f"leaderboard CSV: {csv_out}")


def _print_board(board: Leaderboard) -> None:
    """The leaderboard for a terminal: a table when it fits the width, else one block per run."""
    from trex_eval.report import macro_parts, score_parts

    headers = [(column.label, column.rule) for column in board.columns]
    headers += [(macro.label, "") for macro in board.macro_columns]
    rows = [
        (
            row,
            [score_parts(row.cell(column.label)) for column in board.columns]
            + [macro_parts(row, macro.label) for macro in board.macro_columns],
        )
        for row in board.rows
    ]
    caption = f"pass@1 % [{board.interval.describe()}]"
    # A cell needs about "[100.00, 100.00]" plus padding; a narrower column wraps into noise.
    label_width = max((len(row.label) for row in board.rows), default=3)
    needed = 6 + label_width + sum(max(16, len(label), len(rule)) + 2 for label, rule in headers)
    if needed <= out.width:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=caption)
        table.add_column("#", justify="right")
        table.add_column("run", no_wrap=True, style="bold")
        for label, rule in headers:
            table.add_column(f"{escape(label)}\n[dim]{escape(rule)}[/dim]", justify="right")
        for row, parts in rows:
            table.add_row(str(row.rank), escape(row.label), *(_cell(score, rest) for score, rest in parts))
        out.print(table)
        return
    names = [label if "[" in label or not rule else f"{label} ({rule})" for label, rule in headers]
    width = min(max(len(name) for name in names), max(12, out.width - 40))
    for row, parts in rows:
        out.print(f"{row.rank}  [bold]{escape(row.label)}[/bold]")
        for name, (score, rest) in zip(names, parts, strict=True):
            if score == "–":
                continue
            if len(name) > width:
                out.print(f"   {escape(name)}", highlight=False)
                name = ""
            # Padded before escaping: the markup escapes are not printed.
            out.print(escape(f"   {name:<{width}} {score:>7}  {rest}"), highlight=False)
    out.print(f"[dim]{escape(caption)}[/dim]")


def _cell(score: str, rest: str) -> str:
    """Score, then interval and n on lines of their own (dim), so columns stay narrow."""
    interval, _, n = rest.partition(" n=")
    lines = [escape(score)] + [
        f"[dim]{escape(part)}[/dim]" for part in (interval, f"n={n}" if n else "") if part
    ]
    return "\n".join(lines)


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

    loaded = load_runs(_run_dirs(runs))
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

    loaded = load_runs(_run_dirs(runs))
    index = select_baseline(loaded, baseline) if baseline is not None else 0
    html.parent.mkdir(parents=True, exist_ok=True)
    write_html_report(html, loaded, baseline=index, published=_published(published))
    out.print(f"HTML report: {html}")
