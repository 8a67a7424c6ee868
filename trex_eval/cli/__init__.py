"""Command-line interface (typer). Thin: parse flags, call the library, print.

Every user error is a :class:`~trex_eval.errors.TrexError`: printed as one clear message on
stderr, exit code 2, no traceback. A failure of the machine (a full disk, an I/O error) is printed
the same way with exit code 1 (README, "Exit codes").
"""

from __future__ import annotations

import inspect
import signal
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperOption

from trex_eval import __version__
from trex_eval.cli import (
    audit_cmd,
    benchmarks_cmd,
    catalogue_cmd,
    compare_cmd,
    data_cmd,
    export_cmd,
    grade_cmd,
    import_cmd,
    leaderboard_cmd,
    report_cmd,
    run_cmd,
    serve_cmd,
)
from trex_eval.cli._common import MACHINE_ERRNOS, describe_os_error, err, out
from trex_eval.cli.finish import EXIT_HARNESS_FAILURE, EXIT_INTERRUPTED, EXIT_USER_ERROR, interruption_said
from trex_eval.errors import TrexError

app = typer.Typer(
    name="trex-eval",
    help=(
        "Evaluate LLMs on Operations Research benchmarks (NL4OPT, OptiBench, Bench4Opt): render prompts, "
        "generate, extract the solver program, run it in a sandbox, grade, and publish leaderboards.\n\n"
        "Start with `trex-eval run --model reference` (a self-test, no GPU or key needed), then "
        "`trex-eval run --model NAME` with a preset from `trex-eval models`."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Inherited by every subcommand's context.
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(data_cmd.app, name="data")
app.add_typer(benchmarks_cmd.app, name="benchmarks")
app.command("run")(run_cmd.run)
app.command("grade")(grade_cmd.grade)
app.command("audit")(audit_cmd.audit)
catalogue_cmd.register(app)
app.command("leaderboard")(leaderboard_cmd.leaderboard)
app.command("compare")(compare_cmd.compare)
app.command("report")(report_cmd.report)
app.command("serve")(serve_cmd.serve)
app.command("export-rl")(export_cmd.export_rl)
app.command("import")(import_cmd.import_log)


def _type_of_valued_options(self: TyperOption, ctx: Any) -> str | None:
    """An option's type in the help, for options that take a value: typer writes one for every
    option, so flags (``--dry-run``) read as if they took a ``<bool>``."""
    return None if self.is_flag else _typer_type_label(self, ctx)


_typer_type_label = TyperOption.display_type_rich
TyperOption.display_type_rich = _type_of_valued_options  # type: ignore[method-assign]


def _reflow(doc: str | None) -> str | None:
    """A docstring with each paragraph on one line: typer's help keeps the source's line breaks,
    which would wrap every command's help at the width of the source code, not the terminal."""
    if not doc:
        return doc
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in paragraph.splitlines()) for paragraph in paragraphs)


def _reflow_commands(typer_app: typer.Typer) -> None:
    for command in typer_app.registered_commands:
        if command.callback is not None:
            command.callback.__doc__ = _reflow(command.callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_commands(group.typer_instance)


_reflow_commands(app)


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


def _terminate(signum: int, frame: object) -> None:
    # A plain SIGTERM would skip every clean-up: the vLLM/llama.cpp servers and sandbox workers the
    # run started, and the last manifest write. Unwinding as an exit runs them.
    raise SystemExit(128 + signum)


def main() -> None:
    """Console-script entry point: run the app, turning harness errors into exit code 2."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        app()
    except SystemExit as exit_:
        # Ctrl-C before a command's work began (typer exits 130 without a word): say it.
        if exit_.code == EXIT_INTERRUPTED and not interruption_said():
            err.print("interrupted before anything was stored", markup=False, highlight=False)
        raise
    except TrexError as exc:
        from trex_eval.store import StoreWriteError

        # The message is plain text: brackets in it (`pip install 'trex-eval[vllm]'`) are not markup.
        err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(EXIT_HARNESS_FAILURE if isinstance(exc, StoreWriteError) else EXIT_USER_ERROR)
    except OSError as exc:
        # A path the user gave cannot be read or written (permissions, a missing folder): bad input;
        # a full disk or an I/O error is the machine's failure.
        message = escape(describe_os_error(exc))
        err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(EXIT_HARNESS_FAILURE if exc.errno in MACHINE_ERRNOS else EXIT_USER_ERROR)
