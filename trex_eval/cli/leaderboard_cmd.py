"""`trex-eval leaderboard`: one row per run, over finished run directories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trex_eval.cli._common import echo_text, err, out
from trex_eval.cli.options import FilesOutOption, MarkdownOption, PublishedOption
from trex_eval.cli.run_dirs import (
    RunDirs,
    print_details_command,
    published_scores,
    run_dirs,
    write_outputs,
)


def leaderboard(
    runs: RunDirs,
    files: FilesOutOption = [],  # noqa: B006 - typer needs a literal default
    md: MarkdownOption = False,
    published: PublishedOption = True,
    html: Annotated[
        Optional[Path],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
        typer.Option("--html", hidden=True, help="Old spelling of --out FILE.html."),
    ] = None,
) -> None:
    """One row per run, score + 95% CI + n per benchmark, and the macro average.

    Runs graded under different rules or data versions never share a column: the benchmark is split
    into one column per variant, and a warning names the runs in each. Writes files only when asked:
    --out board.csv (one row per run, one column group per benchmark), board.md, report.html.
    """
    from trex_eval.report import (
        leaderboard_from_dirs,
        load_runs,
        render_leaderboard_markdown,
        write_html_report,
        write_leaderboard_csv,
    )
    from trex_eval.report.terminal import leaderboard_table

    paths = run_dirs(runs)
    board = leaderboard_from_dirs(paths)
    reported = published_scores(published)
    markdown = render_leaderboard_markdown(board, published=reported)
    if md:
        echo_text(markdown)
    else:
        out.print(leaderboard_table(board))
    for warning in board.warnings:
        err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    targets = [*files, *([html] if html is not None else [])]
    write_outputs(
        targets,
        {
            ".csv": ("leaderboard CSV", lambda path: write_leaderboard_csv(board, path)),
            ".md": ("leaderboard Markdown", lambda path: _write_text(path, markdown)),
            ".html": (
                "HTML report",
                lambda path: write_html_report(path, load_runs(paths), baseline=0, published=reported),
            ),
        },
    )
    if not md and not any(path.suffix.lower() in (".md", ".html") for path in targets):
        print_details_command("definitions and run details", file_name="leaderboard.md")


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
