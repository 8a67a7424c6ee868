"""What the table commands (``leaderboard``, ``compare``, ``report``) read and write: the run
directories among the paths given, and ``--out`` files by suffix."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from trex_eval.cli._common import err, out
from trex_eval.errors import ConfigError

if TYPE_CHECKING:
    from trex_eval.report.published import PublishedScore

RunDirs = Annotated[
    list[Path],
    typer.Argument(
        help="Run directories (results/<run-id>); other paths a glob brings along (files, folders "
        "without a manifest.json, audits) are skipped with a note.",
        show_default=False,
    ),
]

_AUDIT_CSV = "audit.csv"
"""Written into an audit's run directory (:mod:`trex_eval.run.audit`): its model is the
benchmarks' own references, not a model to rank."""


def run_dirs(paths: list[Path]) -> list[Path]:
    """The run directories among ``paths`` (a shell glob such as ``results/*`` also brings the
    published folder, audits and earlier reports), each skipped path named on stderr; a folder
    holding run directories (a several-rule re-grade) stands for them.

    Raises:
        ConfigError: none of ``paths`` is a run directory.
    """
    from trex_eval.store import MANIFEST

    runs: list[Path] = []
    expanded: set[Path] = set()
    skipped: dict[Path, str] = {}
    for path in paths:
        if (path / MANIFEST).is_file():
            if (path / _AUDIT_CSV).is_file():
                skipped[path] = "an audit of the benchmarks' reference solutions: see its audit.md"
            else:
                runs.append(path)
        elif path.is_dir():
            # A several-rule re-grade (`grade RUN --rule A --rule B`): one run directory per rule.
            inner = sorted(child for child in path.iterdir() if (child / MANIFEST).is_file())
            if inner:
                runs.extend(inner)
                expanded.add(path)
    for path in paths:
        if path in skipped:
            _skip(path, skipped[path])
        elif path not in runs and path not in expanded:
            _skip(
                path,
                "a file" if path.is_file() else "no such path" if not path.exists() else f"no {MANIFEST}",
            )
    if not runs:
        raise ConfigError(
            "none of the given paths is a run directory",
            hint="pass the directories `trex-eval run` wrote (results/<run-id>, or its --out)",
        )
    return runs


def _skip(path: Path, why: str) -> None:
    err.print(f"note: skipping {path}: not a run directory ({why})", markup=False, highlight=False)


def write_outputs(files: list[Path], writers: Mapping[str, tuple[str, Callable[[Path], None]]]) -> None:
    """Write each of ``files`` with the writer its suffix names (``writers``: suffix -> (what,
    write)), saying where each went.

    Raises:
        ConfigError: a suffix no writer takes (before anything is written).
    """
    for path in files:
        if path.suffix.lower() not in writers:
            raise ConfigError(
                f"cannot tell what to write to {path}: its suffix is not {', '.join(writers)}",
                hint="name the file by its format, e.g. board.csv, board.md or report.html",
            )
    for path in files:
        what, write = writers[path.suffix.lower()]
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
        out.print(f"{what}: {escape(str(path))}", highlight=False, soft_wrap=True)


def print_details_command(what: str, *, file_name: str) -> None:
    """Close a table whose details (``what``) only a file holds with the command that writes
    them: this command line again with ``--out file_name`` (in the working directory), whole on
    one line so that it can be copied."""
    command = shlex.join(["trex-eval", *sys.argv[1:], "--out", file_name])
    text = f"{what}: {command}  (or --md prints them)"
    out.print(text, style="dim", markup=False, highlight=False, soft_wrap=True)


def published_scores(include: bool) -> tuple[PublishedScore, ...]:
    """The committed published numbers shown beside the runs (none with ``--no-published``)."""
    from trex_eval.report import load_published, shipped_published_csv

    path = shipped_published_csv() if include else None
    return load_published(path) if path is not None else ()
