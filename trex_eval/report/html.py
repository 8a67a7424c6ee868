"""The HTML report: one self-contained file (inline CSS and SVG, a few lines of inline script, no
network assets) rendered with jinja2 from ``templates/report.html.j2``.

Sections: the measured leaderboard (same cells as the Markdown table) and the "reported, not
re-run" table; one bar chart per column group and for the macro average, with CI whiskers; the
ablation deltas of every run against the baseline (chart, table, flipped problems); the outcome
breakdown per run and benchmark; a per-problem drill-down; run provenance; definitions.

The drill-down lists every selected problem the runs stored, with each run's verdict and the
rule and reason that decided it. Full texts (prompt, completion, extracted program, stdout and
stderr tails) are embedded for at most :attr:`HtmlOptions.detail_limit` problems per benchmark,
chosen in this order: problems on which the runs disagree, problems any run failed, the rest.
Each text keeps at most :attr:`HtmlOptions.text_limit` characters (its head and tail, with the
number of omitted characters in between). With the defaults a run over all four full benchmarks
adds about 5 MB to the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2
from markupsafe import Markup
from pydantic import Field

from trex_eval.errors import ConfigError
from trex_eval.records import Record, SampleRecord
from trex_eval.report.charts import OUTCOME_COLOURS, Bar, Stack, delta_chart, score_chart, stack_chart
from trex_eval.report.compare import ComparisonSet, compare_runs
from trex_eval.report.intervals import IntervalSettings
from trex_eval.report.leaderboard import Leaderboard, build_leaderboard
from trex_eval.report.markdown import ENVIRONMENT_MARK, MISSING_MARK
from trex_eval.report.outcomes import Outcome, classify
from trex_eval.report.published import PublishedScore
from trex_eval.report.runs import BenchmarkResults, RunResults, natural_key
from trex_eval.report.summary import (
    DEFINITIONS,
    MACRO_LABEL,
    RunSummary,
    distinct_labels,
    percent,
    summarize_results,
)

_TEMPLATES = Path(__file__).resolve().parent / "templates"


class HtmlOptions(Record):
    """Presentation settings of :func:`render_html_report`.

    ``text_limit``: characters kept of each drill-down text (default 4000: the first quarter and
    the last three quarters; the model's final code and the program's last output are at the end).
    ``detail_limit``: problems per benchmark whose full texts are embedded (default 200; ``None``
    embeds all). ``interval``: how every confidence interval is computed.
    """

    title: str = "trex-eval report"
    text_limit: int = Field(default=4000, ge=200)
    detail_limit: int | None = Field(default=200, ge=0)
    interval: IntervalSettings = IntervalSettings()


@dataclass(frozen=True)
class _Chart:
    heading: str
    svg: Markup


@dataclass(frozen=True)
class _SampleView:
    """One stored sample: its verdict and the rule and reason that decided it, always; its texts
    only when ``has_texts`` (the problem is among those whose texts the report embeds)."""

    index: int
    outcome: Outcome
    verdict: str
    rule: str
    reason: str
    execution: str
    program_reason: str
    has_texts: bool
    completion: str = ""
    program: str = ""
    stdout: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class _RunCell:
    """One run's verdict on one problem; ``outcome`` is ``None`` when the run did not select it."""

    run: str
    badge: str
    outcome: Outcome | None
    samples: tuple[_SampleView, ...]
    prompt: str


@dataclass(frozen=True)
class _ProblemView:
    """One problem across runs; ``prompt`` is set when every run saw the same prompt."""

    problem_id: str
    cells: tuple[_RunCell, ...]
    prompt: str
    disagree: bool
    failed: bool
    detailed: bool


@dataclass(frozen=True)
class _BenchmarkDrill:
    name: str
    title: str
    problems: tuple[_ProblemView, ...]
    unseen_note: str


def render_html_report(
    runs: Sequence[RunResults],
    *,
    baseline: int | None = 0,
    published: Sequence[PublishedScore] = (),
    options: HtmlOptions | None = None,
) -> str:
    """The report of ``runs`` as one HTML document (see the module docstring).

    ``baseline`` indexes the run the ablation section compares the others with (``None``: no
    ablation section; it is also left out for a single run). When the runs cannot be paired
    problem by problem (other data or another ``--limit``), the section says why instead.

    Raises:
        ConfigError: no runs, a run given twice, ``baseline`` out of range, or runs whose
            intervals cannot share one table (see :func:`~trex_eval.report.leaderboard.build_leaderboard`).
    """
    if not runs:
        raise ConfigError("a report needs at least one run")
    settings = options or HtmlOptions()
    if baseline is not None and not 0 <= baseline < len(runs):
        raise ConfigError(f"baseline index {baseline} is out of range for {len(runs)} runs")
    summaries = [summarize_results(run, interval=settings.interval) for run in runs]
    board = build_leaderboard(summaries)
    labels = distinct_labels([summary.run for summary in summaries])
    comparisons: ComparisonSet | None = None
    comparison_error = ""
    if baseline is not None and len(runs) > 1:
        try:
            comparisons = compare_runs(runs, baseline=baseline, interval=settings.interval)
        except ConfigError as error:
            comparison_error = error.message
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["pct"] = percent
    environment.filters["pp"] = _pp
    environment.filters["pvalue"] = lambda value: f"{value:.3g}"
    template = environment.get_template("report.html.j2")
    return template.render(
        title=settings.title,
        board=board,
        published=published,
        score_charts=_score_charts(board),
        comparisons=comparisons,
        comparison_error=comparison_error,
        delta_charts=_delta_charts(comparisons) if comparisons else [],
        outcome_chart=_outcome_chart(summaries, labels),
        drill=_drilldown(runs, labels, settings),
        colours={outcome.value: colour for outcome, colour in OUTCOME_COLOURS.items()},
        definitions=DEFINITIONS,
        macro_label=MACRO_LABEL,
        interval=settings.interval.describe(),
        environment_mark=ENVIRONMENT_MARK,
        missing_mark=MISSING_MARK,
    )


def write_html_report(
    path: Path,
    runs: Sequence[RunResults],
    *,
    baseline: int | None = 0,
    published: Sequence[PublishedScore] = (),
    options: HtmlOptions | None = None,
) -> None:
    """Render :func:`render_html_report` into ``path`` (UTF-8), creating parent folders."""
    html = render_html_report(runs, baseline=baseline, published=published, options=options)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")


# --------------------------------------------------------------------------- charts


def _score_charts(board: Leaderboard) -> list[_Chart]:
    charts = []
    for position, column in enumerate(board.columns):
        bars = []
        for row in board.rows:
            cell = row.cell(column.label)
            if cell is not None:
                flags = "; ".join(
                    text
                    for text, on in (
                        (f"{cell.environment_failures} environment failures", cell.environment_failures),
                        (f"{cell.missing_samples} missing samples", cell.missing_samples),
                    )
                    if on
                )
                bars.append(
                    Bar(
                        row.label,
                        cell.pass_at_1,
                        cell.ci_low,
                        cell.ci_high,
                        note=f"n={cell.problems}" + (f"; {flags}" if flags else ""),
                    )
                )
        heading = f"{column.title} · rule {column.rule} · data {column.dataset_sha256[:8]}"
        charts.append(
            _Chart(heading, score_chart(f"{column.label} — pass@1", bars, chart_id=f"score-{position}"))
        )
    for position, macro in enumerate(board.macro_columns):
        bars = [
            Bar(
                row.label,
                row.summary.macro_pass_at_1,
                row.summary.macro_ci_low,
                row.summary.macro_ci_high,
            )
            for row in board.rows
            if row.macro_column == macro.label and row.summary.macro_pass_at_1 is not None
        ]
        heading = f"{MACRO_LABEL} over {', '.join(macro.over)}"
        charts.append(
            _Chart(heading, score_chart(f"{macro.label} — pass@1", bars, chart_id=f"macro-{position}"))
        )
    return charts


def _delta_charts(result: ComparisonSet) -> list[_Chart]:
    charts = []
    for position, comparison in enumerate(result.comparisons):
        bars = [
            Bar(
                pair.benchmark,
                pair.difference,
                pair.ci_low,
                pair.ci_high,
                note=f"won {pair.won}, lost {pair.lost}",
            )
            for pair in comparison.benchmarks
        ]
        if comparison.overall is not None:
            overall = comparison.overall
            bars.append(Bar("overall (macro)", overall.difference, overall.ci_low, overall.ci_high))
        title = f"{comparison.candidate_label} − {comparison.baseline_label}"
        charts.append(_Chart(title, delta_chart(f"Δ pass@1: {title}", bars, chart_id=f"delta-{position}")))
    return charts


def _outcome_chart(summaries: Sequence[RunSummary], labels: Sequence[str]) -> Markup:
    stacks = [
        Stack(f"{label} · {bench.benchmark}", dict(bench.outcomes))
        for summary, label in zip(summaries, labels, strict=True)
        for bench in summary.benchmarks
    ]
    return stack_chart("Outcome of every expected sample", stacks, chart_id="outcomes")


# --------------------------------------------------------------------------- drill-down


def _drilldown(
    runs: Sequence[RunResults], labels: Sequence[str], options: HtmlOptions
) -> list[_BenchmarkDrill]:
    names: list[str] = []
    for run in runs:
        names += [bench.name for bench in run.benchmarks if bench.name not in names]
    drills = []
    for name in names:
        holders = [
            (label, run.benchmark(name)) for label, run in zip(labels, runs, strict=True) if _holds(run, name)
        ]
        columns = [_Holder(label, bench) for label, bench in holders]
        ids = sorted({problem_id for column in columns for problem_id in column.grid}, key=natural_key)
        views = [_problem_view(problem_id, columns) for problem_id in ids]
        detailed = _choose_detailed(views, options.detail_limit)
        problems = tuple(
            _with_details(view, columns, options.text_limit) if view.problem_id in detailed else view
            for view in views
        )
        unseen = [f"{label}: {bench.unseen}" for label, bench in holders if bench.unseen]
        drills.append(
            _BenchmarkDrill(
                name=name,
                title=holders[0][1].entry.title,
                problems=problems,
                unseen_note=(
                    "Selected problems never stored (counted as failures, ids unknown): " + ", ".join(unseen)
                    if unseen
                    else ""
                ),
            )
        )
    return drills


class _Holder:
    """One run's side of a benchmark drill-down: its label and problems by id. A run that stored
    every problem it selected did not select an absent id; otherwise the id may be a lost one."""

    def __init__(self, label: str, bench: BenchmarkResults) -> None:
        self.label = label
        self.grid = {problem.problem_id: problem for problem in bench.problems}
        self.complete = bench.unseen == 0


def _holds(run: RunResults, name: str) -> bool:
    return any(bench.name == name for bench in run.benchmarks)


def _problem_view(problem_id: str, columns: Sequence[_Holder]) -> _ProblemView:
    cells = []
    firsts = []
    failed = False
    for column in columns:
        problem = column.grid.get(problem_id)
        if problem is None:
            if column.complete:
                cells.append(_RunCell(column.label, "not selected", None, (), ""))
            else:
                cells.append(_RunCell(column.label, "not stored", Outcome.MISSING, (), ""))
                firsts.append(False)
                failed = True
            continue
        outcomes = problem.outcomes
        correct = sum(problem.correct)
        width = len(problem.samples)
        badge = outcomes[0].label if width == 1 else f"{correct}/{width} correct"
        shown = Outcome.CORRECT if correct == width else outcomes[0]
        samples = tuple(_sample_view(index, record) for index, record in enumerate(problem.samples) if record)
        cells.append(_RunCell(column.label, badge, shown, samples, ""))
        firsts.append(problem.first_correct)
        failed = failed or correct < width
    return _ProblemView(
        problem_id, tuple(cells), prompt="", disagree=len(set(firsts)) > 1, failed=failed, detailed=False
    )


def _choose_detailed(views: Sequence[_ProblemView], limit: int | None) -> set[str]:
    if limit is None:
        return {view.problem_id for view in views}
    ranked = sorted(range(len(views)), key=lambda i: (not views[i].disagree, not views[i].failed, i))
    return {views[i].problem_id for i in ranked[:limit]}


def _with_details(view: _ProblemView, columns: Sequence[_Holder], limit: int) -> _ProblemView:
    prompts: list[str | None] = []
    samples: list[tuple[_SampleView, ...]] = []
    for column in columns:
        problem = column.grid.get(view.problem_id)
        stored = [record for record in problem.samples if record is not None] if problem else []
        prompts.append(_clip(_prompt_text(stored[0]), limit) if stored else None)
        samples.append(
            tuple(
                _sample_view(index, record, text_limit=limit)
                for index, record in enumerate(problem.samples)
                if record
            )
            if problem
            else ()
        )
    seen = {prompt for prompt in prompts if prompt is not None}
    # One prompt for every run (same prompt set and template): show it once, above the runs.
    shared = next(iter(seen)) if len(seen) == 1 else ""
    cells = tuple(
        replace(cell, samples=mine, prompt="" if shared else (prompt or ""))
        for cell, mine, prompt in zip(view.cells, samples, prompts, strict=True)
    )
    return replace(view, cells=cells, prompt=shared, detailed=True)


def _sample_view(index: int, record: SampleRecord, *, text_limit: int | None = None) -> _SampleView:
    """The sample's verdict, rule and reason; with ``text_limit``, also its texts clipped to it."""
    execution = record.execution
    status = execution.status.value
    if execution.wall_s:
        status += f", {execution.wall_s:.2f} s"
    if execution.gurobi:
        status += f", {execution.gurobi}"
    view = _SampleView(
        index=index,
        outcome=classify(record),
        verdict=record.grade.verdict.value,
        rule=record.grade.rule,
        reason=record.grade.reason,
        execution=status,
        program_reason=f"{record.program.extractor}: {record.program.reason}",
        has_texts=text_limit is not None,
    )
    if text_limit is None:
        return view
    completion = record.completion
    text = completion.text if completion.error is None else f"[request failed] {completion.error}"
    if completion.reasoning:
        text = f"[reasoning]\n{completion.reasoning}\n\n[answer]\n{text}"
    return replace(
        view,
        completion=_clip(text, text_limit),
        program=_clip(record.program.code or "", text_limit),
        stdout=_clip(execution.stdout_tail, text_limit),
        stderr=_clip(execution.stderr_tail, text_limit),
    )


def _prompt_text(record: SampleRecord) -> str:
    return "\n\n".join(f"[{message.role}]\n{message.content}" for message in record.prompt.messages)


def _clip(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its first quarter and last three quarters
    around a line saying how many characters were left out."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - head - tail} characters omitted …]\n{text[-tail:]}"


def _pp(value: float) -> str:
    return f"{value * 100:+.2f}"
