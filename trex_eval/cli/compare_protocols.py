"""`trex-eval compare RUN --protocol A --protocol B`: one run's completions graded under each
protocol, side by side, item by item.

Each protocol re-grades the run into a directory of its own (``DIR/<protocol>/``, as ``trex-eval
grade RUN --protocol P --out DIR/<protocol>`` would: stored executions reused where the protocol
runs the same job), then every later protocol is compared with the first, sample by sample
(:mod:`trex_eval.report.protocol_diff`).
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from trex_eval.cli._common import data_dir_for, echo_text, err, out
from trex_eval.cli.finish import EXIT_NOT_A_MEASUREMENT, note, run_interruptibly, warn
from trex_eval.cli.options import protocol_name
from trex_eval.cli.run_dirs import write_outputs
from trex_eval.errors import ConfigError

if TYPE_CHECKING:
    from trex_eval.report.protocol_diff import ProtocolDiff


def compare_protocols(
    runs: list[Path],
    *,
    protocols: list[str],
    into: Path | None,
    workers: int,
    files: list[Path],
    md: bool,
    show_progress: bool,
) -> None:
    """Re-grade the one run of ``runs`` under each of ``protocols`` into ``into`` (default
    ``results/<run>-protocols-<time>``) and print, for each protocol after the first, the samples
    whose verdict differs from the first's and the counts per benchmark. ``files`` take ``.md``
    (the tables) and ``.csv`` (one row per differing sample).

    Raises:
        ConfigError: not exactly one run directory; fewer than two distinct protocols; an unknown
            protocol or option (before anything is graded); an output suffix other than .md/.csv.
        typer.Exit: 3 when a re-grade is not a measurement (its cause on stderr).
    """
    run = _one_run(runs)
    texts = _protocols(protocols)
    _check_suffixes(files)
    root = into or _default_root(run)
    graded = [
        _regrade(run, text, out_dir=root / _slug(text), workers=workers, show_progress=show_progress)
        for text in texts
    ]
    from trex_eval.report import load_run
    from trex_eval.report.protocol_diff import (
        diff_protocols,
        render_protocol_diff_markdown,
        write_protocol_diff_csv,
    )

    loaded = [load_run(path) for path in graded]
    diffs = [diff_protocols(loaded[0], candidate) for candidate in loaded[1:]]
    markdown = render_protocol_diff_markdown(diffs)
    if md:
        echo_text(markdown)
    else:
        _print_tables(diffs)
    write_outputs(
        files,
        {
            ".md": ("item-by-item comparison", lambda path: _write_text(path, markdown)),
            ".csv": ("differing samples CSV", lambda path: write_protocol_diff_csv(diffs, path)),
        },
    )
    paired = " ".join(str(path) for path in graded)
    (err if md else out).print(  # --md keeps stdout to the Markdown
        f"re-graded runs: {escape(str(root))}; paired statistics: trex-eval compare {escape(paired)}",
        style="dim",
        highlight=False,
        soft_wrap=True,
    )


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _one_run(runs: list[Path]) -> Path:
    from trex_eval.store import MANIFEST

    if len(runs) != 1 or not (runs[0] / MANIFEST).is_file():
        given = ", ".join(str(path) for path in runs) or "none"
        raise ConfigError(
            f"--protocol compares one run's completions under several protocols: give exactly one run "
            f"directory (given: {given})",
            hint="trex-eval compare results/RUN --protocol default --protocol default+after-solve",
        )
    return runs[0]


def _protocols(protocols: list[str]) -> list[str]:
    """The canonical texts, in the order given, each once.

    Raises:
        ConfigError: an unknown protocol or option; fewer than two distinct protocols.
    """
    texts = list(dict.fromkeys(protocol_name(text) for text in protocols))
    if len(texts) < 2:
        raise ConfigError(
            f"--protocol names {len(texts)} distinct protocol(s) ({', '.join(texts)}): "
            "a comparison needs two",
            hint="repeat --protocol, the first being the baseline: "
            "--protocol default --protocol default+after-solve",
        )
    return texts


def _check_suffixes(files: list[Path]) -> None:
    for path in files:
        if path.suffix.lower() not in (".md", ".csv"):
            raise ConfigError(
                f"cannot tell what to write to {path}: with --protocol, compare writes .md or .csv",
                hint="name the file by its format, e.g. protocols.md or differing.csv",
            )


def _default_root(run: Path) -> Path:
    stamp = f"{dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    return Path("results") / f"{_slug(run.name)}-protocols-{stamp}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@=.+-]+", "_", text).strip("_") or "protocol"


def _regrade(run: Path, protocol: str, *, out_dir: Path, workers: int, show_progress: bool) -> Path:
    """Re-grade ``run`` under ``protocol`` into ``out_dir`` (one pass, the run's own rules).

    Raises:
        typer.Exit: 3 when the re-grade is not a measurement.
    """
    from trex_eval.run import regrade
    from trex_eval.store import RunStore

    names = [bench.requested for bench in RunStore(run).read_manifest().settings.benchmarks]
    plan = regrade.plan_regrade(
        run,
        data_dir=data_dir_for(names, None),
        rules=(),
        protocol=protocol,
        fields=regrade.CompletionFields(),
        workers=workers,
        out=out_dir,
        command=tuple(sys.argv),
        show_progress=show_progress,
    )
    if plan.protocol_line is not None:
        note(plan.protocol_line)
    for text in plan.notes:
        warn(text)
    ((spec, options),) = plan.passes
    result = run_interruptibly(spec, options)
    if result.failure is not None:
        err.print(f"[bold red]error:[/] {escape(result.failure)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_NOT_A_MEASUREMENT)
    return result.run_dir


def _print_tables(diffs: list[ProtocolDiff]) -> None:
    from trex_eval.report.protocol_diff import (
        protocol_counts_table,
        protocol_diff_header,
        protocol_items_table,
    )

    for diff in diffs:
        out.print(escape(protocol_diff_header(diff)), highlight=False, soft_wrap=True)
        out.print(protocol_counts_table(diff))
        items = protocol_items_table(diff)
        out.print(items if items is not None else "no sample's verdict differs", highlight=False)
