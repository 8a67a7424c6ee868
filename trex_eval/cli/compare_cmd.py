"""`trex-eval compare`: paired ablation comparison of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trex_eval.cli._common import echo_text, err, out
from trex_eval.cli.options import BaselineOption, FilesOutOption, MarkdownOption, PublishedOption
from trex_eval.cli.run_dirs import (
    RunDirs,
    print_details_command,
    published_scores,
    run_dirs,
    write_outputs,
)

CommonOption = Annotated[
    bool,
    typer.Option(
        "--common",
        help="Pair runs of different selections (--limit, other problem ids) on the problems they share.",
        metavar="",
    ),
]


def compare(
    runs: RunDirs,
    baseline: BaselineOption = None,
    files: FilesOutOption = [],  # noqa: B006 - typer needs a literal default
    md: MarkdownOption = False,
    common: CommonOption = False,
    published: PublishedOption = True,
) -> None:
    """Paired ablation comparison (e.g. base vs SFT vs CPT+SFT): per benchmark and overall, the
    difference with a paired bootstrap CI, exact McNemar p-value, problems won/lost and the flips.

    Writes files only when asked: --out delta.csv, delta.md (definitions and flipped problems),
    report.html.
    """
    from trex_eval.report import (
        compare_runs,
        load_runs,
        render_comparison_markdown,
        select_baseline,
        write_comparison_csv,
        write_html_report,
    )
    from trex_eval.report.terminal import (
        comparison_table,
        repaired_comparison_table,
        transitions_table,
        warnings_of,
    )

    loaded = load_runs(run_dirs(runs))
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
        moved = transitions_table(result)
        if moved is not None:
            out.print(moved)
        for warning in warnings_of(result):
            err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    write_outputs(
        files,
        {
            ".csv": ("comparison CSV", lambda path: write_comparison_csv(result, path)),
            ".md": ("full comparison", lambda path: _write_text(path, markdown)),
            ".html": (
                "HTML report",
                lambda path: write_html_report(
                    path,
                    loaded,
                    baseline=index,
                    published=published_scores(published),
                    common=common,
                ),
            ),
        },
    )
    if not md and not any(path.suffix.lower() in (".md", ".html") for path in files):
        print_details_command("flipped problems and definitions", file_name="comparison.md")


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
