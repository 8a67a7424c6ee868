"""How ``run``, ``grade`` and ``audit`` end: the exit codes, the last lines, and what to do after
an interruption.

Exit codes (the same for every command):

* 0: done;
* 1: trex-eval itself failed: a bug (the traceback is printed), or the machine (a full disk, an I/O
  error: the message says what and how to continue);
* 2: a user error (bad flag, file, data or setting), or a dry run that found the run cannot start;
* 3: the run finished but is not a measurement (every model request failed, or more than 10 %);
* 130: interrupted (Ctrl-C or SIGTERM: 143); finished samples are kept, ``--resume`` continues.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer
from rich.markup import escape

from trex_eval.cli._common import MACHINE_ERRNOS, err, os_error_parts, out

if TYPE_CHECKING:
    from trex_eval.run.pipeline import RunResult
    from trex_eval.run.spec import RunOptions, RunSpec

EXIT_HARNESS_FAILURE = 1
"""Exit code of a failure of the harness or of the machine it runs on (a full disk, an I/O error),
not of the input: the same command may succeed once the machine is fixed."""
EXIT_USER_ERROR = 2
EXIT_NOT_A_MEASUREMENT = 3
"""Exit code of a run or grade that finished but measured nothing trustworthy: every model request
failed, or more than ``MAX_API_ERROR_RATE`` of them (the cause is printed on stderr)."""
EXIT_INTERRUPTED = 130

_T = TypeVar("_T")


def run_interruptibly(spec: RunSpec, options: RunOptions) -> RunResult:
    """:func:`trex_eval.run.pipeline.run`, saying how to continue when the user presses Ctrl-C or
    the process gets SIGTERM."""
    from trex_eval.run import pipeline as runner

    if options.out is None:
        # Chosen here rather than in the pipeline so that an interrupted run can name its directory.
        options = replace(options, out=Path("results") / runner.default_run_id(spec))
    return interruptibly(lambda: runner.run(spec, options), options.out)


def interruptibly(work: Callable[[], _T], where: Path | None) -> _T:
    """``work()``; on Ctrl-C or SIGTERM, say what was kept and how to continue, then exit (130,
    143); when the machine refuses a write to the run directory (a full disk), the same and exit 1."""
    from trex_eval.store import MANIFEST, StoreWriteError

    try:
        return work()
    except StoreWriteError as error:
        machine_failure(error.message, hint=error.hint, run_dir=error.root)
    except OSError as error:
        if error.errno not in MACHINE_ERRNOS or where is None or not (where / MANIFEST).is_file():
            raise
        what, hint = os_error_parts(error)
        machine_failure(what, hint=hint, run_dir=where)
    except KeyboardInterrupt:
        _resume_hint("interrupted", where)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except SystemExit as exit_:
        if exit_.code == 128 + signal.SIGTERM:
            _resume_hint("terminated (SIGTERM)", where)
        raise


_said: list[str] = []
"""What this process said of an interruption already (so the entry point does not say it twice)."""


def interruption_said() -> bool:
    """Whether :func:`interruptibly` has told the user of an interruption."""
    return bool(_said)


def interruption_told(what: str) -> None:
    """Note that a command told the user of its interruption (``what``) in its own words, so
    that the entry point does not add its own line (``serve``: a drain cut short)."""
    _said.append(what)


def machine_failure(message: str, *, hint: str | None, run_dir: Path) -> NoReturn:
    """Say that the machine stopped the run in ``run_dir`` (``message``, what to fix: ``hint``)
    and the command that continues it once fixed; exit 1 (the input is not at fault)."""
    resume = f"`trex-eval run --resume {run_dir}`"
    todo = f"{hint}, then continue with {resume}" if hint else f"continue with {resume}"
    err.print(
        f"[bold red]error:[/] {escape(message)}\n  -> {escape(todo)}\n"
        "finished samples are kept; the run continues where it stopped",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_HARNESS_FAILURE)


def _resume_hint(what: str, where: Path | None) -> None:
    from trex_eval.store import MANIFEST

    _said.append(what)
    if where is not None and (where / MANIFEST).is_file():
        err.print(
            f"{what}: finished samples are kept; continue with `trex-eval run --resume {where}`",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        err.print(f"{what} before the run stored anything", markup=False, highlight=False)


def note(text: str) -> None:
    err.print(f"note: {text}", markup=False, highlight=False, soft_wrap=True)


def warn(text: str) -> None:
    err.print(f"[bold yellow]warning:[/] {escape(text)}", highlight=False, soft_wrap=True)


def report_result(result: RunResult, *, what: str = "full summary") -> None:
    """The end of ``run`` and ``grade``: the compact table, what this session did and what the
    run holds, where the full summary is, and exit code 3 with the cause on stderr when the run
    is not a measurement."""
    from trex_eval.report.terminal import summary_table
    from trex_eval.store import SUMMARY_MD

    for text in result.notes:
        note(text)
    out.print(summary_table(result.summary))
    for bench in result.summary.benchmarks:  # the repair protocol's scores, apart from the zero-shot table
        if bench.repair is not None:
            rounds = " → ".join(
                f"r{k} {value * 100:.2f}%" for k, value in sorted(bench.repair.pass_at_1.items())
            )
            out.print(f"{bench.benchmark} pass@1 by repair round: {rounds}", highlight=False, soft_wrap=True)
    for bench in result.summary.benchmarks:
        if bench.unverified_samples:
            note(
                f"{bench.benchmark}: {bench.unverified_samples} passing claim(s) the harness could not "
                f"verify, not counted as correct (verdict unverified; each one's reason in "
                f"{result.run_dir / 'samples.jsonl'} says why)"
            )
    out.print(
        f"{what}: {result.run_dir / SUMMARY_MD}  ({session_counts(result)})", highlight=False, soft_wrap=True
    )
    print_isolation(result.run_dir)
    if result.failure is not None:
        err.print(f"[bold red]error:[/] {escape(result.failure)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_NOT_A_MEASUREMENT)


def isolation_text(run_dir: Path) -> str:
    """The line saying at which sandbox isolation level the session's programs ran (from the run
    manifest, where the session recorded it)."""
    from trex_eval.report.terminal import isolation_line
    from trex_eval.store import RunStore

    return isolation_line(RunStore(run_dir).read_manifest().provenance or {})


def print_isolation(*run_dirs: Path) -> None:
    """:func:`isolation_text` of each run directory, each distinct line once."""
    for line in dict.fromkeys(isolation_text(run_dir) for run_dir in run_dirs):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def session_counts(result: RunResult) -> str:
    """What this session did, and what the run holds, in words that keep apart completions asked
    of a model, completions read from a file, and samples that had none."""
    from trex_eval.records import Verdict

    benches = result.summary.benchmarks
    stored = sum(bench.stored_samples for bench in benches)
    without = sum(bench.verdicts.get(Verdict.MISSING, 0) for bench in benches)
    source = "read from the completions file" if result.replayed else "generated"
    parts = [f"{result.generated_now} {source}", f"{result.graded_now} graded"]
    if result.reused_now:
        parts.append(f"{result.reused_now} stored executions reused, {result.executed_now} programs run")
    text = "this session: " + ", ".join(parts)
    if stored != result.graded_now or without:
        text += f"; the run holds {stored} graded samples"
        if without:
            text += f", {without} of them without a completion (graded missing)"
    return text
