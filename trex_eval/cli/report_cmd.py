"""`trex-eval leaderboard | compare | report`: tables and pages over finished run directories."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from trex_eval.cli._common import echo_text, err, out

if TYPE_CHECKING:
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
    published folder and earlier reports), each skipped path named on stderr; a folder holding run
    directories (a several-rule re-grade) stands for them.

    Raises:
        ConfigError: none of ``paths`` is a run directory.
    """
    from trex_eval.errors import ConfigError
    from trex_eval.store import MANIFEST

    runs: list[Path] = []
    expanded: set[Path] = set()
    for path in paths:
        if (path / MANIFEST).is_file():
            runs.append(path)
        elif path.is_dir():
            # A several-rule re-grade (`grade RUN --rule A --rule B`): one run directory per rule.
            inner = sorted(child for child in path.iterdir() if (child / MANIFEST).is_file())
            if inner:
                runs.extend(inner)
                expanded.add(path)
    for path in paths:
        if path not in runs and path not in expanded:
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
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--out", "-o", help="Also write the CSV here (one row per run, one column group per benchmark)."
        ),
    ] = None,
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
    into one column per variant, and a warning names the runs in each. Writes files only when asked
    (--out CSV, --html).
    """
    from trex_eval.report import (
        leaderboard_from_dirs,
        load_runs,
        render_leaderboard_markdown,
        write_html_report,
        write_leaderboard_csv,
    )
    from trex_eval.report.terminal import leaderboard_table

    runs = _run_dirs(runs)
    board = leaderboard_from_dirs(runs)
    reported = _published(published)
    if md:
        echo_text(render_leaderboard_markdown(board, published=reported))
    else:
        out.print(leaderboard_table(board))
    for warning in board.warnings:
        err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if csv_out is not None:
        write_leaderboard_csv(board, csv_out)
        _wrote("leaderboard CSV", csv_out)
    if html is not None:
        write_html_report(html, load_runs(runs), baseline=0, published=reported)
        _wrote("HTML report", html)
    elif not md:
        out.print("[dim]definitions and run details: --md, or --html FILE[/dim]")


def _wrote(what: str, path: Path) -> None:
    out.print(f"{what}: {escape(str(path))}", highlight=False, soft_wrap=True)


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
        typer.Option(
            "--out", "-o", help="Also write the comparison as CSV, and as Markdown beside it (.md)."
        ),
    ] = None,
    md: Annotated[
        bool,
        typer.Option("--md", help="Print the full Markdown (definitions, flipped problems) instead."),
    ] = False,
    common: Annotated[
        bool,
        typer.Option(
            "--common", help="Pair runs of different selections (--limit) on the problems both hold."
        ),
    ] = False,
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
    from trex_eval.report.terminal import comparison_table, repaired_comparison_table, warnings_of

    loaded = load_runs(_run_dirs(runs))
    index = select_baseline(loaded, baseline) if baseline is not None else 0
    result = compare_runs(loaded, baseline=index, common=common)
    markdown = render_comparison_markdown(result)
    if md:
        echo_text(markdown)
    else:
        out.print(comparison_table(result))
        repaired = repaired_comparison_table(result)
        if repaired is not None:
            out.print(repaired)
        for warning in warnings_of(result):
            err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if csv_out is not None:
        write_comparison_csv(result, csv_out)
        _wrote("comparison CSV", csv_out)
        markdown_path = csv_out.with_suffix(".md")
        markdown_path.write_text(markdown, encoding="utf-8")
        _wrote("full comparison", markdown_path)
    elif not md:
        out.print("[dim]flipped problems and definitions: --md, or --out FILE.csv (writes FILE.md too)[/dim]")


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
    _wrote("HTML report", html)
