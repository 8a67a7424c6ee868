"""Markdown renderings of summaries, leaderboards and comparisons. Pure: records in, text out.

Every table is followed by the lines that define its numbers (metric, interval, denominator,
rule per column), so a table copied on its own still says what it shows. Scores print as
percentages with two decimals, differences as signed percentage points.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from trex_eval.report.compare import Comparison, ComparisonSet, PairedBenchmark, RepairedPair
from trex_eval.report.definitions import DEFINITIONS, MACRO_LABEL
from trex_eval.report.diagnoses import crash_lines, diagnosis_table, transition_table
from trex_eval.report.intervals import SMALL_N
from trex_eval.report.leaderboard import Leaderboard, LeaderboardRow, build_leaderboard
from trex_eval.report.outcomes import Outcome
from trex_eval.report.published import PublishedScore
from trex_eval.report.size_buckets import size_sections
from trex_eval.report.summary import BenchmarkSummary, RunSummary, percent

ENVIRONMENT_MARK = "†"
MISSING_MARK = "‡"
SMALL_N_MARK = "*"
"""Marks a small-n interval: fewer than ``SMALL_N`` problems, Wilson score interval."""


def render_leaderboard_markdown(board: Leaderboard, *, published: Sequence[PublishedScore] = ()) -> str:
    """The measured leaderboard, its column definitions, warnings, run provenance and, when
    ``published`` is given, a separate "reported, not re-run" table."""
    lines = ["# Leaderboard", "", *score_table(board), "", *_definitions(board)]
    crashed = crash_lines([(row.label, [b.diagnoses for b in row.summary.benchmarks]) for row in board.rows])
    if crashed:
        lines += ["", *crashed]
    repaired = [(row.label, bench) for row in board.rows for bench in row.summary.benchmarks if bench.repair]
    if repaired:
        lines += [
            "",
            "## Repaired scores (`--repair N`; not zero-shot, never mixed with the table above)",
            "",
        ]
        lines += repair_table(repaired)
    sized = _size_tables(board)
    if sized:
        lines += ["", *sized]
    lines += ["", "## Runs", "", *_runs_table(board)]
    if published:
        lines += ["", *published_table(published)]
    return "\n".join(lines) + "\n"


def render_summary_markdown(summary: RunSummary) -> str:
    """``summary.md`` of one run: the leaderboard-format table, one line per benchmark naming its
    rule, sampling metrics (several samples only), the verdict breakdown, the reference harness's
    table, notes and definitions."""
    run = summary.run
    board = build_leaderboard([summary])
    facts = [f"Run `{run.run_id}`", f"backend {run.backend}"]
    if run.served_model:
        facts.append(f"served model `{run.served_model}`")
    facts += [
        f"protocol {run.protocol}",
        f"prompt set {run.prompt_set}",
        f"{run.samples} sample(s) per problem",
    ]
    if run.few_shot:
        facts.append(f"{run.few_shot}-shot")
    if run.limit:
        facts.append(f"first {run.limit} problems per benchmark")
    lines = [f"# Run summary: {run.display}", "", " · ".join(facts), ""]
    lines += [*score_table(board), "", *_definitions(board)]
    if any(bench.pass_at_k for bench in summary.benchmarks):
        lines += ["", "## Sampling metrics", "", *_sampling_table(summary.benchmarks)]
    if any(bench.repair for bench in summary.benchmarks):
        lines += ["", f"## Repair rounds (`--repair {run.repair}`)", ""]
        lines += repair_table([(run.display, bench) for bench in summary.benchmarks])
    lines += ["", "## Outcomes", "", *_outcome_table(summary.benchmarks)]
    diagnosed = diagnosis_table([(bench.benchmark, bench.diagnoses) for bench in summary.benchmarks])
    if diagnosed:
        lines += ["", "## Why samples failed (diagnoses)", "", *diagnosed, "", DEFINITIONS["diagnoses"] + "."]
    lines += ["", "## Reference-harness table (T-Rex summary.md format)", "", *compat_table([summary])]
    lines += ["", f"Reference-harness columns: {DEFINITIONS['compat']}."]
    lines += [
        "",
        "## Definitions",
        "",
        *(f"- **{name}**: {text}" for name, text in summary.definitions.items()),
    ]
    return "\n".join(lines) + "\n"


def render_comparison_markdown(result: ComparisonSet) -> str:
    """Every candidate against the baseline: per-benchmark and overall differences with intervals,
    won/lost counts, McNemar p-values, the flipped problems, and the definitions."""
    baseline = result.baseline
    interval = result.interval
    lines = [
        f"# Comparison against {result.baseline_label} (run `{baseline.run_id}`)",
        "",
        f"Δ: candidate − baseline pass@1 in percentage points; [low, high]: paired {interval.describe()}. "
        "Won / lost: problems whose first sample (seed 42) only the candidate / only the baseline got right; "
        "p: exact two-sided McNemar test of won against lost. Overall: Δ of the "
        f"{MACRO_LABEL}s (bootstrap stratified by benchmark); won, lost and p pooled over all problems. "
        "n: problems selected.",
    ]
    for comparison in result.comparisons:
        lines += ["", *_comparison_section(comparison)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- shared tables


def score_table(board: Leaderboard) -> list[str]:
    """The leaderboard table: one row per run, ``pass@1 % [CI] n=N`` per column group and macro."""
    header = ["Rank", "Model", "Protocol", "Prompt set", "Samples"]
    header += [column.label for column in board.columns]
    header += [macro.label for macro in board.macro_columns]
    align = ["---:", "---", "---", "---", "---:"] + ["---:"] * (len(header) - 5)
    lines = [_row(header), _row(align)]
    for row in board.rows:
        run = row.summary.run
        cells = [str(row.rank), row.label, run.protocol, run.prompt_set, str(run.samples)]
        cells += [_score_cell(row.cell(column.label)) for column in board.columns]
        cells += [_macro_cell(row, macro.label) for macro in board.macro_columns]
        lines.append(_row(cells))
    return lines


def repair_table(rows: Sequence[tuple[str, BenchmarkSummary]]) -> list[str]:
    """Round-by-round scores of repair runs, one line per (label, benchmark): pass@1@rK for every
    round, the share repaired at each round, requests and tokens per solved sample, then the repair
    rate by round-0 failure kind. Benchmarks without repair are left out."""
    shown = [(label, bench, bench.repair) for label, bench in rows if bench.repair is not None]
    most = max((repair.rounds for _, _, repair in shown), default=0)
    header = ["Run", "Benchmark", "n", *(f"pass@1@r{k}" for k in range(most + 1))]
    header += [f"repaired@r{k}" for k in range(1, most + 1)]
    header += ["Requests / solved", "Tokens / solved", "Feedback"]
    lines = [_row(header), _row(["---", "---"] + ["---:"] * (len(header) - 3) + ["---"])]
    failures = []
    for label, bench, repair in shown:
        cells = [label, bench.benchmark, str(bench.problems)]
        cells += [percent(repair.pass_at_1.get(k)) for k in range(most + 1)]
        cells += [
            f"{percent(repair.repaired[k])} ({repair.asked[k]} asked)" if k in repair.repaired else "–"
            for k in range(1, most + 1)
        ]
        cells += [_ratio(repair.requests_per_solved), _ratio(repair.tokens_per_solved), repair.feedback]
        lines.append(_row(cells))
        if repair.by_failure:
            rates = ", ".join(
                f"{kind} {counts.repaired}/{counts.samples}" for kind, counts in repair.by_failure.items()
            )
            failures.append(f"- {label} · {bench.benchmark}: {rates}")
    lines += ["", "All scores in %; r0 is the zero-shot pass@1."]
    lines += [f"- **{name}**: {DEFINITIONS[name]}" for name in ("pass@1@rK", "repaired@rK", "per_solved")]
    if failures:
        lines += ["", f"Repaired / fed back, by round-0 failure ({DEFINITIONS['repair_by_failure']}):", ""]
        lines += failures
    return lines


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def compat_table(summaries: Iterable[RunSummary]) -> list[str]:
    """The reference harness's ``summary.md`` table, rows as its ``run_eval.py`` prints them."""
    lines = ["| Dataset | Model | Score | Code pass | API errors | Count |", "|---|---|---:|---:|---:|---:|"]
    for summary in summaries:
        for bench in summary.benchmarks:
            row = bench.compat
            score = row.score_count / row.count * 100 if row.count else 0.0
            code = row.code_pass_count / row.count * 100 if row.count else 0.0
            lines.append(
                f"| {row.dataset} | {summary.run.served_name} "
                f"| {score:.2f}% ({row.score_count}/{row.count}) "
                f"| {code:.2f}% ({row.code_pass_count}/{row.count}) "
                f"| {row.api_error_count} | {row.count} |"
            )
    return lines


def published_table(published: Sequence[PublishedScore]) -> list[str]:
    """The "reported, not re-run" table: published scores with their metric, source and caveats."""
    lines = [
        "## Reported, not re-run",
        "",
        "Published elsewhere and copied here as reported; trex-eval did not measure these numbers, and their "
        "grading rules and averaging are whatever the source used. They are not comparable cell by cell with "
        "the measured table.",
        "",
        _row(["Model", "Benchmark", "Score %", "Metric", "Rule", "Source", "Note"]),
        _row(["---", "---", "---:", "---", "---", "---", "---"]),
    ]
    for score in published:
        source = f"[{score.source}]({score.url})" if score.url else score.source
        lines.append(
            _row(
                [
                    score.model,
                    score.benchmark,
                    f"{score.score_pct:.2f}",
                    score.metric,
                    score.rule or "not stated",
                    source,
                    score.note,
                ]
            )
        )
    return lines


# --------------------------------------------------------------------------- pieces


def _definitions(board: Leaderboard) -> list[str]:
    lines = [
        f"Cells: pass@1 in % — {DEFINITIONS['pass@1']}; [low, high]: {board.interval.describe()}; "
        f"n: {DEFINITIONS['n']}. {ENVIRONMENT_MARK}: includes environment failures (licence, gurobipy "
        f"unavailable, a solver library missing from the install, not run), which count as failures; "
        f"{MISSING_MARK}: includes missing samples, counted "
        f"as failures; {SMALL_N_MARK}: fewer than {SMALL_N} problems, Wilson score interval (a macro "
        "marked so: the mean of its benchmarks' Wilson bounds).",
        "",
        "Columns:",
        "",
    ]
    for column in board.columns:
        description = f" — {column.rule_description}" if column.rule_description else ""
        lines.append(
            f"- **{column.label}**: {column.title} (v{column.version}); rule `{column.rule}`{description}; "
            f"data sha256 `{column.dataset_sha256[:12]}`"
        )
    for macro in board.macro_columns:
        lines.append(f"- **{macro.label}**: {MACRO_LABEL} over {', '.join(macro.over)}")
    if board.warnings:
        lines += ["", "Warnings:", "", *(f"- {warning}" for warning in board.warnings)]
    return lines


def _runs_table(board: Leaderboard) -> list[str]:
    header = ["Model", "Run id", "Backend", "Served model", "Created", "Prompt templates (sha256)"]
    lines = [_row(header), _row(["---"] * len(header))]
    for row in board.rows:
        run = row.summary.run
        templates = ", ".join(
            f"{bench.benchmark} `{bench.template_sha256[:12]}`" for bench in row.summary.benchmarks
        )
        lines.append(
            _row(
                [
                    row.label,
                    f"`{run.run_id}`",
                    run.backend,
                    f"`{run.served_model}`",
                    run.created_at,
                    templates,
                ]
            )
        )
    return lines


def _sampling_table(benchmarks: Sequence[BenchmarkSummary]) -> list[str]:
    ks = sorted({k for bench in benchmarks for k in bench.pass_at_k})
    header = ["Benchmark", "pass@1"]
    header += [f"pass@{k}" for k in ks] + [f"acc@{k}" for k in ks] + [f"maj@{k}" for k in ks]
    lines = [_row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
    notes = []
    for bench in benchmarks:
        cells = [bench.benchmark, percent(bench.pass_at_1)]
        cells += [percent(bench.pass_at_k.get(k)) for k in ks]
        cells += [percent(bench.acc_at_k.get(k)) for k in ks]
        cells += [percent(bench.maj_at_k.get(k)) for k in ks]
        lines.append(_row(cells))
        if bench.maj_note:
            notes.append(f"- {bench.benchmark}: {bench.maj_note}")
    definitions = [f"- **{name}**: {DEFINITIONS[name]}" for name in ("pass@k", "acc@k", "maj@k")]
    return [*lines, "", "All in %.", *definitions, *notes]


def _outcome_table(benchmarks: Sequence[BenchmarkSummary]) -> list[str]:
    shown = [outcome for outcome in Outcome if any(bench.outcomes[outcome] for bench in benchmarks)]
    header = ["Benchmark", *(outcome.label for outcome in shown), "Samples expected"]
    lines = [_row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
    for bench in benchmarks:
        cells = [bench.benchmark, *(str(bench.outcomes[outcome]) for outcome in shown)]
        lines.append(_row([*cells, str(bench.problems * bench.samples_per_problem)]))
    lines += ["", "Rules that decided:", ""]
    lines += [
        f"- **{bench.benchmark}**: `{bench.rule}`"
        + (f" — {bench.rule_description}" if bench.rule_description else "")
        for bench in benchmarks
    ]
    return lines


def _comparison_section(comparison: Comparison) -> list[str]:
    """One candidate against the baseline: the paired table (a row per benchmark, then the pooled
    macro row), the scores after repair where any run repaired, the flipped problems, the outcome
    transitions and the comparison's warnings."""
    candidate = comparison.candidate
    header = ["Benchmark", "n", "Baseline %", "Candidate %", "Δ pp [CI]", "Won", "Lost", "McNemar p", "Rule"]
    lines = [
        f"## {comparison.candidate_label} (run `{candidate.run_id}`) vs {comparison.baseline_label}",
        "",
        _row(header),
        _row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"]),
    ]
    lines += [_paired_row(pair) for pair in comparison.benchmarks]
    overall = comparison.overall
    if overall is not None:
        lines.append(
            _row(
                [
                    "**overall** (macro)",
                    str(overall.problems),
                    percent(overall.baseline_macro),
                    percent(overall.candidate_macro),
                    _delta(overall.difference, overall.ci_low, overall.ci_high),
                    str(overall.won),
                    str(overall.lost),
                    _p(overall.mcnemar_p),
                    "pooled",
                ]
            )
        )
    flipped = []
    for pair in comparison.benchmarks:
        if pair.gained:
            flipped.append(f"- {pair.benchmark} gained ({len(pair.gained)}): {', '.join(pair.gained)}")
        if pair.dropped:
            flipped.append(f"- {pair.benchmark} dropped ({len(pair.dropped)}): {', '.join(pair.dropped)}")
    repaired = [(pair.benchmark, pair.repaired) for pair in comparison.benchmarks if pair.repaired]
    if repaired:
        lines += _repaired_comparison(repaired)
    lines += ["", "Flipped problems (first sample):", ""] + (flipped or ["- none"])
    for pair in comparison.benchmarks:
        table = transition_table(pair.transitions)
        if table:
            lines += ["", f"Transitions, {pair.benchmark} ({DEFINITIONS['transitions']}):", "", *table]
    if comparison.warnings:
        lines += ["", "Warnings:", "", *(f"- {warning}" for warning in comparison.warnings)]
    return lines


def _paired_row(pair: PairedBenchmark) -> str:
    """A benchmark's row of the paired table; the rule cell names both rules where they differ."""
    rule = (
        pair.baseline_rule
        if pair.baseline_rule == pair.candidate_rule
        else (f"{pair.baseline_rule} → {pair.candidate_rule}")
    )
    return _row(
        [
            pair.benchmark,
            str(pair.problems),
            percent(pair.baseline_pass_at_1),
            percent(pair.candidate_pass_at_1),
            _delta(pair.difference, pair.ci_low, pair.ci_high),
            str(pair.won),
            str(pair.lost),
            _p(pair.mcnemar_p),
            f"`{rule}`",
        ]
    )


def _repaired_comparison(repaired: Sequence[tuple[str, RepairedPair]]) -> list[str]:
    """The scores after repair, one row per (benchmark, scores), and what their Δ means."""
    lines = [
        "",
        "Scores after repair (`--repair N`; the table above compares the zero-shot answers, round 0):",
        "",
        _row(["Benchmark", "Baseline pass@1 r0 → rN", "Candidate pass@1 r0 → rN", "Δ pp after repair [CI]"]),
        _row(["---", "---", "---", "---:"]),
    ]
    for name, scores in repaired:
        lines.append(
            _row(
                [
                    name,
                    " → ".join(percent(score) for score in scores.baseline_rounds),
                    " → ".join(percent(score) for score in scores.candidate_rounds),
                    _delta(scores.difference, scores.ci_low, scores.ci_high),
                ]
            )
        )
    return [
        *lines,
        "",
        "Δ after repair: candidate − baseline, each graded by its last round (a zero-shot run by "
        "its only one), paired over problems.",
    ]


def cell_marks(bench: BenchmarkSummary) -> str:
    """The marks after a benchmark's pass@1: environment failures, missing samples, small n."""
    return (
        (ENVIRONMENT_MARK if bench.environment_failures else "")
        + (MISSING_MARK if bench.missing_samples else "")
        + (SMALL_N_MARK if bench.small_n else "")
    )


def score_parts(bench: BenchmarkSummary | None) -> tuple[str, str]:
    """A leaderboard cell in two parts: ``pass@1`` with its marks (``†`` environment failures,
    ``‡`` missing samples), and ``[low, high] n=N``; ``("–", "")`` for no such benchmark."""
    if bench is None:
        return "–", ""
    return (
        f"{percent(bench.pass_at_1)}{cell_marks(bench)}",
        f"[{percent(bench.ci_low)}, {percent(bench.ci_high)}] n={bench.problems}",
    )


def macro_parts(row: LeaderboardRow, label: str) -> tuple[str, str]:
    """The macro cell of ``row`` in column ``label``, in the two parts of :func:`score_parts`."""
    summary = row.summary
    if row.macro_column != label or summary.macro_pass_at_1 is None:
        return "–", ""
    low, high = summary.macro_ci_low, summary.macro_ci_high
    interval = f"[{percent(low)}, {percent(high)}]" if low is not None and high is not None else ""
    return percent(summary.macro_pass_at_1) + (SMALL_N_MARK if summary.macro_small_n else ""), interval


def _score_cell(bench: BenchmarkSummary | None) -> str:
    return " ".join(part for part in score_parts(bench) if part)


def _macro_cell(row: LeaderboardRow, label: str) -> str:
    return " ".join(part for part in macro_parts(row, label) if part)


def _delta(difference: float, low: float, high: float) -> str:
    return f"{difference * 100:+.2f} [{low * 100:+.2f}, {high * 100:+.2f}]"


def _p(value: float) -> str:
    return f"{value:.3g}"


def _size_tables(board: Leaderboard) -> list[str]:
    """ "By instance size": one table per benchmark with size buckets
    (:func:`~trex_eval.report.size_buckets.size_sections`); empty when there is none."""
    lines: list[str] = []
    for section in size_sections(board):
        lines += [f"### {section.title}", ""]
        lines += [_row(["Model", *section.names]), _row(["---", *["---:"] * len(section.names)])]
        lines += [_row([label, *cells]) for label, cells in section.rows]
        lines.append("")
    return ["## By instance size", "", *lines] if lines else []


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"
