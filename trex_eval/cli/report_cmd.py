"""`trex-eval report`: one self-contained HTML page over finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trex_eval.cli.compare_cmd import CommonOption
from trex_eval.cli.options import BaselineOption, PublishedOption
from trex_eval.cli.run_dirs import RunDirs, published_scores, run_dirs, write_outputs


def report(
    runs: RunDirs,
    html: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write.")] = Path(
        "results/report.html"
    ),
    baseline: BaselineOption = None,
    common: CommonOption = False,
    published: PublishedOption = True,
) -> None:
    """One self-contained HTML page: leaderboard, charts with CI whiskers, ablation deltas, verdict
    breakdown and a per-problem drill-down (prompt, completion, program, output, verdict, rule)."""
    from trex_eval.report import load_runs, select_baseline, write_html_report

    loaded = load_runs(run_dirs(runs))
    index = select_baseline(loaded, baseline) if baseline is not None else 0
    reported = published_scores(published)

    def write(path: Path) -> None:
        write_html_report(path, loaded, baseline=index, published=reported, common=common)

    write_outputs([html], {".html": ("HTML report", write), ".htm": ("HTML report", write)})
