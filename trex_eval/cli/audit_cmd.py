"""`trex-eval audit`: grade each benchmark's own reference solutions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from trex_eval.cli._common import data_dir_or_pull, echo_text, out
from trex_eval.cli.finish import print_isolation
from trex_eval.cli.options import (
    DEFAULT_GUROBI,
    DEFAULT_WORKERS,
    PANEL_OUTPUT,
    BenchmarksOption,
    DataDirOption,
    GurobiOption,
    MarkdownOption,
    MemoryOption,
    NoProgressOption,
    ProtocolOption,
    RayActorsOption,
    RayAddressOption,
    RuleOption,
    RunOutOption,
    TimeoutOption,
    WorkersOption,
    gurobi_policy,
    protocol_name,
    ray_options,
    sandbox_limits,
    split_list,
    split_rules,
    workers_count,
)
from trex_eval.protocols import DEFAULT_PROTOCOL

if TYPE_CHECKING:
    from trex_eval.run.audit import AuditResult


def audit(
    benchmarks: BenchmarksOption = [],  # noqa: B006 - typer needs a literal default
    protocol: ProtocolOption = DEFAULT_PROTOCOL,
    rule: RuleOption = [],  # noqa: B006
    gurobi: GurobiOption = DEFAULT_GUROBI,
    workers: WorkersOption = DEFAULT_WORKERS,
    ray_address: RayAddressOption = None,
    ray_actors: RayActorsOption = None,
    wall_s: TimeoutOption = None,
    memory_mib: MemoryOption = None,
    out_dir: RunOutOption = None,
    csv_path: Annotated[
        Optional[Path],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
        typer.Option(
            "--csv",
            help="Also write the per-item CSV here (it is always in the run directory).",
            rich_help_panel=PANEL_OUTPUT,
            show_default=False,
        ),
    ] = None,
    publish: Annotated[
        bool,
        typer.Option(
            "--publish",
            help="Also write the CSV to results/published/audit-<protocol or rule>.csv (committed audits).",
            rich_help_panel=PANEL_OUTPUT,
            metavar="",
        ),
    ] = False,
    md: MarkdownOption = False,
    no_progress: NoProgressOption = False,
    data_dir: DataDirOption = None,
    positional: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(hidden=True, help="Old spelling of -b/--benchmarks.", show_default=False),
    ] = None,
) -> None:
    """Grade each benchmark's own reference solutions: every failure is a data or grading problem to check.

    Benchmarks: those of the T-Rex suite that ship reference programs, unless -b names others.
    Writes a run directory holding audit.csv and audit.md (an audit is never listed on a
    leaderboard); results/published/ changes only with --publish.
    """
    from trex_eval.benchmarks.suites import expand as expand_suites
    from trex_eval.run import audit as audit_mod

    names = expand_suites(split_list([*benchmarks, *(positional or [])]))
    result = audit_mod.audit(
        names or None,
        data_dir=data_dir_or_pull(data_dir),
        protocol=protocol_name(protocol),
        rules=split_rules(rule),
        csv_path=csv_path,
        gurobi=gurobi_policy(gurobi),
        workers=workers_count(workers),
        limits=sandbox_limits(wall_s, memory_mib),
        show_progress=not no_progress,
        out=out_dir,
        publish=publish,
        ray=ray_options(ray_address, ray_actors),
    )
    if md:
        echo_text(result.markdown)
    else:
        _print_tables(result)
    out.print(
        f"audit: {result.run_dir / 'audit.md'}; per-item CSV: {result.csv_path}",
        highlight=False,
        soft_wrap=True,
    )
    for path in result.published:
        out.print(f"also written: {path}", highlight=False, soft_wrap=True)
    print_isolation(result.run_dir)


def _print_tables(result: AuditResult) -> None:
    """One row per benchmark, then each miss without a documented data issue (the ones to look at)."""
    from trex_eval.records import Verdict

    summary = Table(title="Reference-solution audit", title_justify="left")
    for column, justify in (
        ("benchmark", "left"),
        ("rule", "left"),
        ("correct", "right"),
        ("total", "right"),
    ):
        summary.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    summary.add_column("other verdicts")
    by_bench: dict[str, list[dict[str, str]]] = {}
    for row in result.rows:
        by_bench.setdefault(row["benchmark"], []).append(row)
    for name, items in by_bench.items():
        verdicts = Counter(r["verdict"] for r in items)
        correct = verdicts.pop(Verdict.CORRECT.value, 0)
        other = ", ".join(f"{v} {n}" for v, n in verdicts.most_common()) or "-"
        summary.add_row(name, items[0]["rule"], str(correct), str(len(items)), other)
    out.print(summary)
    unexplained = [r for r in result.rows if r["verdict"] != Verdict.CORRECT.value and not r["known_issue"]]
    if unexplained:
        misses = Table(title="Misses without a documented data issue", title_justify="left")
        for column in ("benchmark", "id", "verdict", "reason"):
            misses.add_column(column, overflow="fold")
        for row in unexplained:
            misses.add_row(row["benchmark"], row["id"], row["verdict"], row["reason"])
        out.print(misses)
