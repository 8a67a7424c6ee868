"""`trex-eval import`: an inspect_ai log of a trex-eval task as a run directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from trex_eval.cli._common import out

_LogArgument = Annotated[
    Path,
    typer.Argument(
        help="An inspect log (.eval or .json) of `inspect eval trex_eval/...`.", show_default=False
    ),
]
_OutOption = Annotated[
    Path,
    typer.Option("--out", "-o", help="Run directory to write (must not hold a run).", show_default=False),
]


def import_log(log: _LogArgument, out_dir: _OutOption) -> None:
    """Turn an inspect log of a trex-eval task into a run directory that leaderboard, compare,
    report and grade read like any run. Nothing is graded again: each sample keeps the program,
    execution and grade trex-eval's judge gave it under inspect (docs/inspect.md). Needs the
    integrations extra (pip install 'trex-eval[integrations]').
    """
    from trex_eval.integrations.inspect.importer import import_log as write_run

    imported = write_run(log, out=out_dir, command=tuple(sys.argv))
    counts = ", ".join(f"{name}: {n}" for name, n in imported.samples.items()) or "none"
    out.print(f"imported {log} into {imported.out} (samples {counts})", markup=False, highlight=False)
    if imported.unscored:
        out.print(
            f"{imported.unscored} sample(s) inspect did not score are stored as api_error",
            markup=False,
            highlight=False,
        )
    out.print(f"next: trex-eval leaderboard {imported.out}", markup=False, highlight=False)
