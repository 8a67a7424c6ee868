"""The compact tables commands end with on a terminal (rich renderables). Pure: records in,
tables out; the full Markdown and HTML, with their definitions, live in files.

Every table has one row per benchmark (``benchmark, n, pass@1, CI``; ``Δ`` where two runs are
compared) and fits 80 columns: runs and candidates are section rows, not columns. A cell's marks
are those of the Markdown tables (``†`` environment failures, ``‡`` missing samples) plus ``*``
for a small-n interval (fewer than :data:`~trex_eval.report.summary.SMALL_N` problems: Wilson).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from trex_eval.report.compare import ComparisonSet
from trex_eval.report.leaderboard import Leaderboard
from trex_eval.report.markdown import ENVIRONMENT_MARK, MISSING_MARK, SMALL_N_MARK
from trex_eval.report.markdown import cell_marks as _marks
from trex_eval.report.summary import RunSummary, percent


def _table(caption: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=caption, caption_justify="left")
    # Names fold, never end in an ellipsis: a benchmark or rule cut short cannot be told apart.
    table.add_column("benchmark", overflow="fold", min_width=9)
    table.add_column("n", justify="right")
    return table


def _macro_mark(summary: RunSummary) -> str:
    return SMALL_N_MARK if summary.macro_small_n else ""


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{percent(low)}, {percent(high)}]"


def _caption(interval: str, marks: set[str]) -> str:
    parts = [f"pass@1 in %; CI: {interval}"]
    if ENVIRONMENT_MARK in marks:
        parts.append(f"{ENVIRONMENT_MARK} environment failures")
    if MISSING_MARK in marks:
        parts.append(f"{MISSING_MARK} missing samples (failures)")
    if SMALL_N_MARK in marks:
        parts.append(f"{SMALL_N_MARK} n < 30: Wilson interval (macro: mean of the Wilson bounds)")
    return "; ".join(parts)


def summary_table(summary: RunSummary) -> Table:
    """One run: a row per benchmark, then the macro mean."""
    marks = {mark for bench in summary.benchmarks for mark in _marks(bench)}
    table = _table(_caption(summary.interval.short(), marks))
    table.add_column("pass@1", justify="right")
    table.add_column("CI", justify="right", no_wrap=True)
    table.add_column("rule", overflow="fold")
    for bench in summary.benchmarks:
        table.add_row(
            escape(bench.benchmark),
            str(bench.problems),
            escape(percent(bench.pass_at_1) + _marks(bench)),
            _interval(bench.ci_low, bench.ci_high),
            escape(bench.rule),
        )
    if len(summary.benchmarks) > 1:
        table.add_section()
        table.add_row(
            "[bold]macro[/bold]",
            "",
            f"[bold]{percent(summary.macro_pass_at_1)}{_macro_mark(summary)}[/bold]",
            _interval(summary.macro_ci_low, summary.macro_ci_high),
            "",
        )
    return table


def leaderboard_table(board: Leaderboard) -> Table:
    """Every run of a leaderboard in rank order: a section row per run (rank and label), a row per
    benchmark it holds, and its macro row. With split macro columns (runs covering different
    benchmarks) ranks count within each macro group, and the section row names the benchmarks the
    group's runs cover ("#1 of runs over nl4opt+optibench")."""
    marks = {mark for row in board.rows for bench in row.summary.benchmarks for mark in _marks(bench)}
    table = _table(_caption(board.interval.short(), marks))
    table.columns[0].max_width = 44
    table.columns[0].overflow = "fold"
    table.columns[0].no_wrap = False
    table.add_column("pass@1", justify="right")
    table.add_column("CI", justify="right", no_wrap=True)
    split = len(board.macro_columns) > 1
    over = {macro.label: macro.over for macro in board.macro_columns}
    for position, row in enumerate(board.rows):
        if position:
            table.add_section()
        # Ranks count within runs over the same benchmarks: say which, not an opaque "macro[2]".
        group = f" of runs over {'+'.join(over[row.macro_column])}" if split and row.macro_column else ""
        table.add_row(f"[bold]#{row.rank}{escape(group)}  {escape(row.label)}[/bold]", "", "", "")
        for column in board.columns:
            bench = row.cell(column.label)
            if bench is not None:
                table.add_row(
                    escape(f"  {column.label}"),
                    str(bench.problems),
                    escape(percent(bench.pass_at_1) + _marks(bench)),
                    _interval(bench.ci_low, bench.ci_high),
                )
        summary = row.summary
        # The macro row is what ranks: shown even over one benchmark, unless it would repeat the
        # only row of a board that has a single column.
        if len(summary.benchmarks) > 1 or len(board.columns) > 1:
            table.add_row(
                "  macro",
                "",
                f"[bold]{percent(summary.macro_pass_at_1)}{_macro_mark(summary)}[/bold]",
                _interval(summary.macro_ci_low, summary.macro_ci_high),
            )
    return table


def rules_table(summaries: Sequence[RunSummary], labels: Sequence[str]) -> Table:
    """The same completions graded under several rules (``grade --rule A --rule B``): a row per
    benchmark, a column per pass (``labels``), pass@1 with its interval beneath."""
    marks = {mark for summary in summaries for bench in summary.benchmarks for mark in _marks(bench)}
    table = _table(_caption(summaries[0].interval.short(), marks))
    for label in labels:
        table.add_column(escape(label), justify="right", no_wrap=True)
    for index, first in enumerate(summaries[0].benchmarks):
        cells = []
        for summary in summaries:
            bench = summary.benchmarks[index]
            cells.append(
                f"{escape(percent(bench.pass_at_1) + _marks(bench))}\n"
                f"[dim]{_interval(bench.ci_low, bench.ci_high)}\n{escape(bench.rule)}[/dim]"
            )
        table.add_row(escape(first.benchmark), str(first.problems), *cells)
    return table


def comparison_table(result: ComparisonSet) -> Table:
    """Every candidate against the baseline: a section row per candidate, a row per benchmark with
    both scores, Δ in points with its paired interval, won/lost and the McNemar p-value."""
    table = _table(
        f"Δ: candidate − baseline ({escape(result.baseline_label)}), percentage points, paired "
        f"{result.interval.short()}; W/L: won/lost, problems only the candidate / only the baseline got "
        "right (first sample); p: exact McNemar"
    )
    # Numbers never shrink: on a narrow terminal a long run label in the first column wraps
    # instead; on a wide one it takes the room it needs (no cap beyond the terminal's width).
    first = table.columns[0]
    widest = max((len(pair.benchmark) + 2 for c in result.comparisons for pair in c.benchmarks), default=8)
    first.no_wrap, first.overflow = False, "fold"
    first.min_width, first.max_width = max(widest, len("benchmark")), None
    table.add_column("base", justify="right", no_wrap=True)
    table.add_column("cand", justify="right", no_wrap=True)
    table.add_column("Δ [CI]", justify="right", no_wrap=True)
    table.add_column("W/L", justify="right", no_wrap=True)
    table.add_column("p", justify="right", no_wrap=True)
    for position, comparison in enumerate(result.comparisons):
        if position:
            table.add_section()
        table.add_row(f"[bold]{escape(comparison.candidate_label)}[/bold]", "", "", "", "", "", "")
        for pair in comparison.benchmarks:
            table.add_row(
                escape(f"  {pair.benchmark}"),
                str(pair.problems),
                percent(pair.baseline_pass_at_1),
                percent(pair.candidate_pass_at_1),
                _delta(pair.difference, pair.ci_low, pair.ci_high),
                f"{pair.won}/{pair.lost}",
                f"{pair.mcnemar_p:.1g}",
            )
        overall = comparison.overall
        if overall is not None and len(comparison.benchmarks) > 1:
            table.add_row(
                "  macro",
                str(overall.problems),
                percent(overall.baseline_macro),
                percent(overall.candidate_macro),
                _delta(overall.difference, overall.ci_low, overall.ci_high),
                f"{overall.won}/{overall.lost}",
                f"{overall.mcnemar_p:.1g}",
            )
    return table


def repaired_comparison_table(result: ComparisonSet) -> Table | None:
    """Scores after repair rounds (``run --repair N``): a section row per candidate, a row per
    repaired pair with each run's pass@1 round by round and Δ after the last round of each;
    ``None`` when no compared run repaired."""
    grouped = [
        (comparison, [(pair, pair.repaired) for pair in comparison.benchmarks if pair.repaired is not None])
        for comparison in result.comparisons
    ]
    repaired = [(comparison, pairs) for comparison, pairs in grouped if pairs]
    if not repaired:
        return None
    table = _table(
        "after repair (run --repair N): pass@1 round by round, r0 first; Δ: candidate − baseline "
        f"after the last round of each, paired {result.interval.short()}"
    )
    first = table.columns[0]
    first.no_wrap, first.overflow = False, "fold"
    widest = max(len(pair.benchmark) + 2 for _, pairs in repaired for pair, _ in pairs)
    first.min_width = first.max_width = widest
    table.add_column("base r0→rN", justify="right", no_wrap=True)
    table.add_column("cand r0→rN", justify="right", no_wrap=True)
    table.add_column("Δ [CI]", justify="right", no_wrap=True)
    for position, (comparison, pairs) in enumerate(repaired):
        if position:
            table.add_section()
        table.add_row(f"[bold]{escape(comparison.candidate_label)}[/bold]", "", "", "", "")
        for pair, scores in pairs:
            table.add_row(
                escape(f"  {pair.benchmark}"),
                str(pair.problems),
                "→".join(percent(score) for score in scores.baseline_rounds),
                "→".join(percent(score) for score in scores.candidate_rounds),
                _delta(scores.difference, scores.ci_low, scores.ci_high),
            )
    return table


def transitions_table(result: ComparisonSet) -> Table | None:
    """Each candidate's samples whose label changed from the baseline's (``correct``, a diagnosis
    category, else the verdict), per benchmark, most frequent first; ``None`` when none changed."""
    rows = [
        (comparison.candidate_label, pair.benchmark, move)
        for comparison in result.comparisons
        for pair in comparison.benchmarks
        for move in pair.transitions
        if move.source != move.target
    ]
    if not rows:
        return None
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        caption="transitions: baseline label → candidate label (correct, diagnosis, else verdict)",
        caption_justify="left",
    )
    table.add_column("candidate · benchmark", overflow="fold")
    table.add_column("baseline", no_wrap=True)
    table.add_column("candidate", no_wrap=True)
    table.add_column("samples", justify="right", no_wrap=True)
    for label, benchmark, move in rows:
        table.add_row(escape(f"{label} {benchmark}"), move.source, move.target, str(move.count))
    return table


def warnings_of(result: ComparisonSet) -> Sequence[str]:
    """The comparison's warnings, each once."""
    return list(dict.fromkeys(w for comparison in result.comparisons for w in comparison.warnings))


def _delta(difference: float, low: float, high: float) -> str:
    return f"{difference * 100:+.1f} [{low * 100:+.1f}, {high * 100:+.1f}]"


_WEAKER = {
    "unshare": "programs could read the host file system",
    "rlimits": "programs could read the host file system and reach the network",
}


def _session_level(session: Mapping[str, Any]) -> str | None:
    """The isolation level one session's programs ran at (None: it ran none)."""
    sandbox = session.get("sandbox")
    isolation = sandbox.get("isolation") if isinstance(sandbox, Mapping) else None
    level = isolation.get("level") if isinstance(isolation, Mapping) else None
    return str(level) if level else None


def isolation_line(provenance: Mapping[str, Any]) -> str:
    """One line for the end of ``run``, ``grade`` and ``audit``: the sandbox isolation level this
    session's programs ran at, from a run manifest's ``provenance`` (``sandbox.isolation.level``),
    what a level below ``bwrap`` let them do, and the earlier sessions' levels where they differ."""
    level = _session_level(provenance)
    if level is None:
        sandbox = provenance.get("sandbox")
        reused = sandbox.get("executions_reused_from") if isinstance(sandbox, Mapping) else None
        text = "sandbox isolation: no program ran this session" + (
            f" (executions reused from {reused})" if reused else ""
        )
    else:
        text = f"sandbox isolation: {level}" + (f" ({_WEAKER[level]})" if level in _WEAKER else "")
    earlier_sessions = provenance.get("earlier_sessions")
    earlier = {
        found
        for session in (earlier_sessions if isinstance(earlier_sessions, list) else [])
        if isinstance(session, Mapping) and (found := _session_level(session)) is not None
    }
    if earlier - {level}:
        text += f"; earlier sessions: {', '.join(sorted(earlier))}"
    return text
