"""`trex-eval compare`: paired ablation comparison of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trex_eval.cli._common import echo_text, err, out
from trex_eval.cli.options import (
    DEFAULT_WORKERS,
    BaselineOption,
    FilesOutOption,
    MarkdownOption,
    NoProgressOption,
    PublishedOption,
    WorkersOption,
    workers_count,
)
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
_PANEL_PROTOCOLS = "Protocols on one run"
ProtocolsOption = Annotated[
    list[str],
    typer.Option(
        "--protocol",
        help="Grade ONE run's completions under each protocol named (repeat; the first is the "
        "baseline; options as in `run --protocol`, e.g. default+preload=pulp+after-solve) and list "
        "the samples whose verdict differs, each side's verdict, rule@version and reason, with "
        "counts per benchmark.",
        rich_help_panel=_PANEL_PROTOCOLS,
        show_default=False,
    ),
]
RegradeDirOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option(
        "--regrade-dir",
        help="Where --protocol writes one re-graded run directory per protocol "
        "(default results/<run>-protocols-<time>).",
        rich_help_panel=_PANEL_PROTOCOLS,
        show_default=False,
    ),
]


def compare(
    runs: RunDirs,
    baseline: BaselineOption = None,
    files: FilesOutOption = [],  # noqa: B006 - typer needs a literal default
    md: MarkdownOption = False,
    common: CommonOption = False,
    published: PublishedOption = True,
    protocols: ProtocolsOption = [],  # noqa: B006
    regrade_dir: RegradeDirOption = None,
    workers: WorkersOption = DEFAULT_WORKERS,
    no_progress: NoProgressOption = False,
) -> None:
    """Paired ablation comparison (e.g. base vs SFT vs CPT+SFT): per benchmark and overall, the
    difference with a paired bootstrap CI, exact McNemar p-value, problems won/lost and the flips.

    Writes files only when asked: --out delta.csv, delta.md (definitions and flipped problems),
    report.html.

    With --protocol (twice or more), one run's completions are re-graded under each protocol
    (--regrade-dir) and compared item by item instead: the samples whose verdict differs, each
    side's verdict, rule@version and reason, and counts per benchmark; --out takes .md and .csv.

    Example: trex-eval compare results/RUN --protocol default --protocol default+preload=pulp+after-solve
    """
    _check_mode(protocols=bool(protocols), baseline=baseline, common=common, regrade_dir=regrade_dir)
    if protocols:
        from trex_eval.cli.compare_protocols import compare_protocols

        compare_protocols(
            runs,
            protocols=protocols,
            into=regrade_dir,
            workers=workers_count(workers),
            files=files,
            md=md,
            show_progress=not no_progress,
        )
        return
    _compare_runs(runs, baseline=baseline, files=files, md=md, common=common, published=published)


def _check_mode(*, protocols: bool, baseline: str | None, common: bool, regrade_dir: Path | None) -> None:
    """Refuse options of the other mode rather than ignore them.

    Raises:
        ConfigError: --baseline or --common with --protocol; --regrade-dir without it.
    """
    from trex_eval.errors import ConfigError

    if protocols and (baseline is not None or common):
        raise ConfigError(
            "--baseline and --common pair several runs; --protocol compares one run under several protocols",
            hint="with --protocol the first protocol is the baseline; drop --baseline/--common",
        )
    if not protocols and regrade_dir is not None:
        raise ConfigError(
            "--regrade-dir is where --protocol writes its re-graded runs",
            hint="add --protocol A --protocol B, or drop --regrade-dir",
        )


def _compare_runs(
    runs: list[Path], *, baseline: str | None, files: list[Path], md: bool, common: bool, published: bool
) -> None:
    """The paired comparison of several runs (see :func:`compare`)."""
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
