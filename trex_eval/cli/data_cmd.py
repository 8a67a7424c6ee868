"""`trex-eval data ...`: download, locate and verify the benchmark data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trex_eval.cli._common import DataDirOption, err, out
from trex_eval.errors import TrexError

app = typer.Typer(help="Download, locate and verify the benchmark data.", no_args_is_help=True)


@app.command("pull")
def data_pull(
    dest: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--dest", help="Install here instead of the user cache.", show_default=False),
    ] = None,
    url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--url", help="Archive URL override (a mirror of the pinned upstream archive)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-download even if a verified copy exists.")
    ] = False,
) -> None:
    """Download the pinned SLAI-T-Rex data (sha256-checked, installed atomically)."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from trex_eval.benchmarks import data

    manifest = data.load_manifest()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
    ) as progress:
        task = progress.add_task(f"SLAI-T-Rex @ {manifest.commit[:12]}", total=None)

        def report(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        path = data.pull(dest, url=url, force=force, progress=report)
    out.print(f"benchmark data ready: {path} ({len(manifest.files)} files verified)")


@app.command("where")
def data_where(data_dir: DataDirOption = None) -> None:
    """Print the data directory in force (--data-dir, else $TREX_DATA_DIR, else the user cache)."""
    from trex_eval.benchmarks import data

    out.print(str(data.resolve_data_dir(data_dir)))


@app.command("verify")
def data_verify(data_dir: DataDirOption = None) -> None:
    """Check every data file against the pinned sha256 manifest; lists all missing/corrupt files."""
    from trex_eval.benchmarks import data

    root = data.resolve_data_dir(data_dir)
    report = data.verify_data_dir(root)
    for rel in report.missing:
        err.print(f"missing: {rel}")
    for rel in report.corrupt:
        err.print(f"corrupt: {rel}")
    if not report.ok:
        raise TrexError(
            f"{len(report.missing)} missing and {len(report.corrupt)} corrupt "
            f"of {report.checked} files in {root}",
            hint="run `trex-eval data pull --force` to reinstall",
        )
    out.print(f"ok: {report.checked} files verified in {root}")
