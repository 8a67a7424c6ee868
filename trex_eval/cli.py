"""Command-line interface (typer). Thin: parse flags, call the library, print.

Every user error is a :class:`~trex_eval.errors.TrexError`: printed as one clear message on
stderr, exit code 2, no traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from trex_eval import __version__
from trex_eval.errors import TrexError

app = typer.Typer(
    name="trex-eval",
    help=(
        "Evaluate LLMs on Operations Research benchmarks (NL4OPT, OptiBench, Bench4Opt): render prompts, "
        "generate, extract the solver program, run it in a sandbox, grade, and publish leaderboards."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)
data_app = typer.Typer(help="Download, locate and verify the benchmark data.", no_args_is_help=True)
benchmarks_app = typer.Typer(help="List and inspect benchmarks.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(benchmarks_app, name="benchmarks")

out = Console()
err = Console(stderr=True)

DataDirOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional at runtime on 3.10
    typer.Option(
        "--data-dir",
        help="Benchmark data root (holds data/ and evaluation/). Default: $TREX_DATA_DIR, then the user cache.",
        show_default=False,
    ),
]


def _version(value: bool) -> None:
    if value:
        out.print(f"trex-eval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """trex-eval: zero-shot OR benchmark harness."""


# --------------------------------------------------------------------------- data


@data_app.command("pull")
def data_pull(
    dest: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--dest", help="Install here instead of the user cache.", show_default=False),
    ] = None,
    url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--url", help="Archive URL override (a mirror of the pinned upstream archive)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-download even if a verified copy exists.")] = False,
) -> None:
    """Download the pinned SLAI-T-Rex data (sha256-checked, installed atomically)."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from trex_eval import data

    manifest = data.load_manifest()
    with Progress(
        "[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=err
    ) as progress:
        task = progress.add_task(f"SLAI-T-Rex @ {manifest.commit[:12]}", total=None)

        def report(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        path = data.pull(dest, url=url, force=force, progress=report)
    out.print(f"benchmark data ready: {path} ({len(manifest.files)} files verified)")


@data_app.command("where")
def data_where(data_dir: DataDirOption = None) -> None:
    """Print the data directory in force (and where it came from)."""
    from trex_eval import data

    out.print(str(data.resolve_data_dir(data_dir)))


@data_app.command("verify")
def data_verify(data_dir: DataDirOption = None) -> None:
    """Check every data file against the pinned sha256 manifest; lists all missing/corrupt files."""
    from trex_eval import data

    root = data.resolve_data_dir(data_dir)
    report = data.verify_data_dir(root)
    for rel in report.missing:
        err.print(f"missing: {rel}")
    for rel in report.corrupt:
        err.print(f"corrupt: {rel}")
    if not report.ok:
        raise TrexError(
            f"{len(report.missing)} missing and {len(report.corrupt)} corrupt of {report.checked} files in {root}",
            hint="run `trex-eval data pull --force` to reinstall",
        )
    out.print(f"ok: {report.checked} files verified in {root}")


# --------------------------------------------------------------------------- benchmarks


@benchmarks_app.command("list")
def benchmarks_list(data_dir: DataDirOption = None) -> None:
    """Name, rows, grader, default rule and prompt sets of every known benchmark."""
    from trex_eval import benchmark, data, prompting

    try:
        root: Path | None = data.resolve_data_dir(data_dir)
    except TrexError:
        root = None
    table = Table("name", "title", "rows", "grader", "rule", "compat rule", "prompt sets")
    sets = prompting.prompt_set_names()
    for name, path in benchmark.shipped_spec_paths().items():
        spec = benchmark.load_spec(path)
        rows = str(spec.source.rows) if spec.source.rows is not None else "?"
        if root is not None:
            rows = str(len(benchmark.load_benchmark(name, data_dir=root)))
        available = [s for s in sets if s != prompting.UPSTREAM_SET or spec.prompt.upstream is not None]
        table.add_row(
            name, spec.title, rows, spec.grader.kind.value, spec.grader.rule, spec.grader.compat_rule, ", ".join(available)
        )
    out.print(table)
    if root is None:
        err.print("(no data directory found: row counts are the expected ones; run `trex-eval data pull`)")


@benchmarks_app.command("show")
def benchmarks_show(
    name: Annotated[str, typer.Argument(help="Benchmark name or path to a benchmark YAML.")],
    problem_id: Annotated[str, typer.Argument(help="Problem id (e.g. 0, BENCH4OPT_2).")],
    prompt: Annotated[bool, typer.Option("--prompt", help="Also render the prompt messages.")] = False,
    prompt_set: Annotated[str, typer.Option("--prompt-set", help="Prompt set to render.")] = "t-rex",
    data_dir: DataDirOption = None,
) -> None:
    """Show one problem: question, reference, instance files; optionally its rendered prompt."""
    from trex_eval import benchmark, data, prompting

    bench = benchmark.load_benchmark(name, data_dir=data.resolve_data_dir(data_dir))
    problem = bench.get(problem_id)
    out.rule(f"{bench.name} / {problem.id} (row {problem.index})")
    out.print(problem.question, markup=False)
    out.rule("reference")
    out.print(problem.reference.model_dump_json(indent=2), markup=False)
    for fname, content in problem.instance_files.items():
        out.rule(f"instance file {fname} ({len(content)} chars)")
        out.print(content[:2000] + ("\n..." if len(content) > 2000 else ""), markup=False)
    if problem.twin_group:
        twins = [p.id for p in bench.problems if p.twin_group == problem.twin_group and p.id != problem.id]
        out.print(f"twin wordings: {', '.join(twins) or '-'}")
    if prompt:
        rendered = prompting.PromptRenderer(bench, prompt_set).render(problem)
        for message in rendered.messages:
            out.rule(f"prompt [{prompt_set}] {message.role}")
            out.print(message.content, markup=False)


def main() -> None:
    """Console-script entry point: run the app, turning harness errors into exit code 2."""
    try:
        app()
    except TrexError as exc:
        err.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
