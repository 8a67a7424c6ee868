"""`trex-eval data ...`: download, locate and verify the benchmark data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trex_eval.cli._common import err, out
from trex_eval.cli.options import DataDirOption
from trex_eval.errors import TrexError

app = typer.Typer(help="Download, locate and verify the benchmark data.", no_args_is_help=True)


# The options of `data pull`.
_DestOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option("--dest", help="Install the T-Rex data here instead of the user cache.", show_default=False),
]
_UrlOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--url",
        help="SLAI-T-Rex archive URL override (a mirror of the pinned upstream archive); the field's "
        "repositories take --mirror.",
    ),
]
_SourcesDestOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--sources-dest",
        help="Install the field's benchmark repositories here (one owner+name folder each). "
        "Default: $TREX_SOURCES_DIR, else the user cache.",
        show_default=False,
    ),
]
_MirrorOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--mirror",
        help="Fetch the field's repositories from MIRROR/<owner>/<name>/tar.gz/<commit> "
        "(http://, https:// or file://) instead of GitHub.",
        show_default=False,
    ),
]
_SourcesOption = Annotated[
    bool,
    typer.Option(
        "--sources/--no-sources",
        help="Also fetch the field's benchmarks (MAMO, IndustryOR, OptMATH, ...), each repository at "
        "its pinned commit.",
    ),
]
_TrexOption = Annotated[
    bool, typer.Option("--trex/--no-trex", help="Fetch the SLAI-T-Rex data (the default suite).")
]
_ForceOption = Annotated[bool, typer.Option("--force", help="Re-download even if a verified copy exists.")]


@app.command("pull")
def data_pull(
    dest: _DestOption = None,
    url: _UrlOption = None,
    sources_dest: _SourcesDestOption = None,
    mirror: _MirrorOption = None,
    sources: _SourcesOption = True,
    trex: _TrexOption = True,
    force: _ForceOption = False,
) -> None:
    """Download the pinned benchmark data, every file sha256-checked and installed atomically: the
    SLAI-T-Rex data, and each public repository the field's benchmarks come from, at the commit
    `data_manifest.json` pins. A copy that already verifies is kept (--force re-downloads)."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from trex_eval import config
    from trex_eval.benchmarks import data

    if not trex and not sources:
        raise TrexError("nothing to fetch: --no-trex and --no-sources", hint="drop one of them")
    manifest = data.load_manifest()
    pins = data.load_sources()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
    ) as progress:

        def bar(title: str) -> data.ProgressCallback:
            task = progress.add_task(title, total=None)
            return lambda done, total: progress.update(task, completed=done, total=total)

        if trex:
            path = data.pull(dest, url=url, force=force, progress=bar(f"SLAI-T-Rex @ {manifest.commit[:12]}"))
        installed: dict[str, Path] = {}
        if sources:
            env = config.getenv("TREX_SOURCES_DIR")
            root = sources_dest or (Path(env) if env else data.default_sources_dir())
            # One repository at a time, each with its own bar.
            for repo in sorted(pins):
                installed |= data.pull_sources(
                    root,
                    repositories=[repo],
                    mirror=mirror,
                    force=force,
                    progress=bar(f"{repo} @ {pins[repo].commit[:12]}"),
                )
    if trex:
        out.print(f"benchmark data ready: {path} ({len(manifest.files)} files verified)")
    for repo, folder in installed.items():
        out.print(f"{repo} @ {pins[repo].commit[:12]}: {folder} ({len(pins[repo].files)} files verified)")


@app.command("where")
def data_where(data_dir: DataDirOption = None) -> None:
    """Print the data directory in force: --data-dir, else $TREX_DATA_DIR, else
    ../shared/benchmarks/t-rex beside the source checkout trex-eval runs from, else the user cache."""
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
