"""The HTML report: one self-contained file (inline CSS and SVG, a little inline script, no
network assets) rendered with jinja2 from ``templates/report.html.j2`` (problem bodies:
``templates/problem.html.j2``).

Sections: the measured leaderboard (one table per rule group, see :func:`_rule_groups`) and the
"reported, not re-run" table; one bar chart per column group and for the macro average, with CI
whiskers; the ablation deltas of every run against the baseline (chart, table, flipped problems);
the outcome breakdown per run and benchmark; a per-problem drill-down; run provenance; definitions.

The drill-down lists every selected problem the runs stored. Plain HTML holds, per problem, its id,
each run's verdict badge (a failure's reason as the badge's tooltip), the "runs disagree" / "any
failure" filter flags, and per benchmark the rule each run graded it with. The rest is loaded
lazily: each benchmark embeds one blob (see :func:`encode_blob`) in a ``<script
type="application/octet-stream">`` element, base64 of gzip of the JSON object ``{"bodies": [...],
"texts": [...]}``. When a problem is opened, the page decompresses its benchmark's blob in the
browser (``DecompressionStream('gzip')``, once per benchmark) and inserts ``bodies[i]``, the
problem's body rendered (and escaped) here from ``templates/problem.html.j2``: each run's samples
with verdict, rule, execution status and reason. Inside a body, an element with ``data-t="T0 S0 T1
S1 ..."`` gets one collapsible ``<pre>`` per index pair into ``texts`` (title, text), set as text,
never as markup: the prompt, completion, extracted program, stdout and stderr tails. ``texts``
holds each distinct text once (a prompt every run shares is stored once) ordered by kind, then
problem, then run, so that one benchmark's prompts, and the programs and outputs of different runs,
sit next to each other for the compressor.

Texts are embedded for at most :attr:`HtmlOptions.detail_limit` problems per benchmark (default:
all), chosen in this order: problems on which the runs disagree, problems any run failed, the
rest. Each text keeps at most :attr:`HtmlOptions.text_limit` characters (its head and tail, with
the number of omitted characters in between). Measured with ``--model reference`` over all four
full benchmarks (1627 problems): one run makes a 1.26 MB page (0.6 MB of it the compressed
prompts); a further run adds 0.28 MB (a trex-compat run: other programs, other B4O prompts) or
0.17 MB (the same prompts). Runs with long completions add about their compressed size more.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import jinja2
from markupsafe import Markup
from pydantic import Field

from trex_eval.errors import ConfigError
from trex_eval.records import Record, SampleRecord
from trex_eval.report.charts import OUTCOME_COLOURS, Bar, Stack, delta_chart, score_chart, stack_chart
from trex_eval.report.compare import ComparisonSet, compare_runs
from trex_eval.report.intervals import IntervalSettings
from trex_eval.report.leaderboard import (
    ColumnGroup,
    Leaderboard,
    LeaderboardRow,
    MacroColumn,
    build_leaderboard,
)
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
    ``detail_limit``: problems per benchmark whose full texts are embedded (default ``None``: all).
    ``interval``: how every confidence interval is computed.
    """

    title: str = "trex-eval report"
    text_limit: int = Field(default=4000, ge=200)
    detail_limit: int | None = Field(default=None, ge=0)
    interval: IntervalSettings = IntervalSettings()


@dataclass(frozen=True)
class _Chart:
    heading: str
    svg: Markup


@dataclass(frozen=True)
class _RuleGroup:
    """The leaderboard rows that share one macro column, hence the same column groups (the same
    rules, data and selections): one table of their own, macro first. ``heading`` is empty when the
    board has a single group."""

    heading: str
    macro: MacroColumn | None
    columns: tuple[ColumnGroup, ...]
    rows: tuple[LeaderboardRow, ...]


TextPair = tuple[str, str]
"""A drill-down text as the page shows it: its title and the text."""


@dataclass(frozen=True)
class _SampleView:
    """One stored sample: its verdict and the rule and reason that decided it, always; its texts
    (completion, program, stdout, stderr) only when the problem is among those whose texts the
    report embeds."""

    index: int
    outcome: Outcome
    verdict: str
    rule: str
    reason: str
    execution: str
    texts: tuple[TextPair, ...] = ()


@dataclass(frozen=True)
class _RunCell:
    """One run's verdict on one problem; ``outcome`` is ``None`` when the run did not select it.
    ``prompt``: this run's prompt, when the runs saw different ones."""

    run: str
    badge: str
    outcome: Outcome | None
    samples: tuple[_SampleView, ...]
    prompt: tuple[TextPair, ...] = ()

    @property
    def hint(self) -> str:
        """The reason of the first sample that is not correct (the badge's tooltip), or ``""``."""
        return next((sample.reason for sample in self.samples if sample.outcome is not Outcome.CORRECT), "")


@dataclass(frozen=True)
class _ProblemView:
    """One problem across runs; ``prompt`` is set when every run saw the same prompt."""

    problem_id: str
    cells: tuple[_RunCell, ...]
    disagree: bool
    failed: bool
    detailed: bool = False
    prompt: tuple[TextPair, ...] = ()


# The kinds of drill-down text, in the order the text blob stores them (similar texts together).
_TITLE, _PROMPT, _CODE, _OUTPUT = range(4)


@dataclass
class _TextTable:
    """The distinct texts of one benchmark's drill-down. :meth:`add` every text while building the
    views, then :meth:`strings` orders them by (kind, first use) without repeats, and
    :meth:`refs` turns the texts an element shows into its ``data-t`` attribute."""

    _added: dict[str, tuple[int, int]] = field(default_factory=dict)
    _index: dict[str, int] | None = None

    def add(self, kind: int, text: str) -> str:
        self._added.setdefault(text, (kind, len(self._added)))
        return text

    def pair(self, kind: int, title: str, text: str) -> TextPair:
        return (self.add(_TITLE, title), self.add(kind, text))

    def strings(self) -> list[str]:
        ordered = sorted(self._added, key=self._added.__getitem__)
        self._index = {text: position for position, text in enumerate(ordered)}
        return ordered

    def refs(self, pairs: Sequence[TextPair]) -> str:
        if self._index is None:
            raise RuntimeError("call strings() before refs()")
        return " ".join(f"{self._index[title]} {self._index[text]}" for title, text in pairs)


@dataclass(frozen=True)
class _BenchmarkDrill:
    """One benchmark's drill-down: the problems (their summary lines are plain HTML), the rule each
    run graded it with, and the blob holding every problem's body and texts."""

    name: str
    title: str
    problems: tuple[_ProblemView, ...]
    unseen_note: str
    rules_note: str
    blob: str


def encode_blob(bodies: Sequence[str], texts: Sequence[str]) -> str:
    """A benchmark's drill-down blob: the JSON object ``{"bodies": [...], "texts": [...]}``
    (compact, UTF-8), gzip-compressed (level 9, no timestamp: the same content always gives the
    same bytes) and base64-encoded. ``bodies[i]`` is the HTML of the benchmark's ``i``-th problem
    (``data-body="i"``); ``texts`` the distinct drill-down texts that its ``data-t`` pairs index.
    The page reverses it with ``atob``, ``DecompressionStream('gzip')`` and ``JSON.parse``."""
    payload = {"bodies": list(bodies), "texts": list(texts)}
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


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
    repaired = [(row.label, bench) for row in board.rows for bench in row.summary.benchmarks if bench.repair]
    environment = _environment()
    environment.filters["pct"] = percent
    environment.filters["pp"] = _pp
    environment.filters["pvalue"] = lambda value: f"{value:.3g}"
    template = environment.get_template("report.html.j2")
    return template.render(
        title=settings.title,
        board=board,
        groups=_rule_groups(board),
        published=published,
        repaired=repaired,
        repaired_rounds=max((bench.repair.rounds for _, bench in repaired if bench.repair), default=0),
        score_charts=_score_charts(board),
        comparisons=comparisons,
        comparison_error=comparison_error,
        delta_charts=_delta_charts(comparisons) if comparisons else [],
        outcome_chart=_outcome_chart(summaries, labels),
        drill=_drilldown(runs, labels, settings, _environment().get_template("problem.html.j2")),
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


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _rule_groups(board: Leaderboard) -> list[_RuleGroup]:
    """One table per macro column, in the board's order (most column groups first), each with the
    column groups its macro averages; runs that stored no benchmark come last, in a group of their
    own. With many runs graded under different rules or variants, each table stays as narrow as
    one rule set, and the macro sits next to the run's name."""
    by_label = {column.label: column for column in board.columns}
    groups = []
    for macro in board.macro_columns:
        rows = tuple(row for row in board.rows if row.macro_column == macro.label)
        columns = tuple(by_label[label] for label in macro.over)
        rules = ", ".join(dict.fromkeys(column.rule for column in columns))
        heading = f"{macro.label} · rules {rules}"
        groups.append(_RuleGroup(heading, macro, columns, rows))
    empty = tuple(row for row in board.rows if row.macro_column is None)
    if empty:
        groups.append(_RuleGroup("runs without stored benchmarks", None, (), empty))
    if len(groups) == 1:
        groups[0] = replace(groups[0], heading="")
    return groups


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
    runs: Sequence[RunResults], labels: Sequence[str], options: HtmlOptions, body: jinja2.Template
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
        table = _TextTable()
        problems = tuple(
            _with_details(view, columns, options.text_limit, table) if view.problem_id in detailed else view
            for view in views
        )
        strings = table.strings()
        bodies = [body.render(problem=problem, refs=table.refs) for problem in problems]
        unseen = [f"{label}: {bench.unseen}" for label, bench in holders if bench.unseen]
        rules = [(label, rule) for label, bench in holders for rule in _rules(bench)]
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
                rules_note=Markup("Rules: ")
                + Markup(", ").join(
                    Markup("{} <code>{}</code>").format(label, rule) for label, rule in rules
                ),
                blob=encode_blob(bodies, strings),
            )
        )
    return drills


def _rules(bench: BenchmarkResults) -> list[str]:
    return sorted({record.grade.rule for problem in bench.problems for record in problem.samples if record})


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
                cells.append(_RunCell(column.label, "not selected", None, ()))
            else:
                cells.append(_RunCell(column.label, "not stored", Outcome.MISSING, ()))
                firsts.append(False)
                failed = True
            continue
        outcomes = problem.outcomes
        correct = sum(problem.correct)
        width = len(problem.samples)
        badge = outcomes[0].label if width == 1 else f"{correct}/{width} correct"
        shown = Outcome.CORRECT if correct == width else outcomes[0]
        samples = tuple(_sample_view(index, record) for index, record in enumerate(problem.samples) if record)
        cells.append(_RunCell(column.label, badge, shown, samples))
        firsts.append(problem.first_correct)
        failed = failed or correct < width
    return _ProblemView(problem_id, tuple(cells), disagree=len(set(firsts)) > 1, failed=failed)


def _choose_detailed(views: Sequence[_ProblemView], limit: int | None) -> set[str]:
    if limit is None:
        return {view.problem_id for view in views}
    ranked = sorted(range(len(views)), key=lambda i: (not views[i].disagree, not views[i].failed, i))
    return {views[i].problem_id for i in ranked[:limit]}


def _with_details(
    view: _ProblemView, columns: Sequence[_Holder], limit: int, table: _TextTable
) -> _ProblemView:
    """``view`` with its texts, registered in ``table``: the prompts first (all runs of a problem
    together), then each run's samples."""
    prompts: list[str | None] = []
    for column in columns:
        problem = column.grid.get(view.problem_id)
        stored = [record for record in problem.samples if record is not None] if problem else []
        prompts.append(_clip(_prompt_text(stored[0]), limit) if stored else None)
    seen = {prompt for prompt in prompts if prompt is not None}
    # One prompt for every run (same prompt set and template): show it once, above the runs.
    shared = next(iter(seen)) if len(seen) == 1 else None
    cells = []
    for cell, column, prompt in zip(view.cells, columns, prompts, strict=True):
        problem = column.grid.get(view.problem_id)
        samples = (
            tuple(
                _with_texts(_sample_view(index, record), record, limit, table)
                for index, record in enumerate(problem.samples)
                if record
            )
            if problem
            else ()
        )
        own = () if shared is not None or prompt is None else (table.pair(_PROMPT, "prompt", prompt),)
        cells.append(replace(cell, samples=samples, prompt=own))
    common = () if shared is None else (table.pair(_PROMPT, "prompt (the same for every run)", shared),)
    return replace(view, cells=tuple(cells), prompt=common, detailed=True)


def _sample_view(index: int, record: SampleRecord) -> _SampleView:
    """The sample's verdict, rule, execution status and reason (no texts)."""
    execution = record.execution
    status = execution.status.value
    if execution.wall_s:
        status += f", {execution.wall_s:.2f} s"
    if execution.gurobi:
        status += f", {execution.gurobi}"
    return _SampleView(
        index=index,
        outcome=classify(record),
        verdict=record.grade.verdict.value,
        rule=record.grade.rule,
        reason=record.grade.reason,
        execution=status,
    )


def _with_texts(view: _SampleView, record: SampleRecord, limit: int, table: _TextTable) -> _SampleView:
    """``view`` with the sample's texts, each clipped to ``limit`` characters, in ``table``."""
    completion = record.completion
    text = completion.text if completion.error is None else f"[request failed] {completion.error}"
    if completion.reasoning:
        text = f"[reasoning]\n{completion.reasoning}\n\n[answer]\n{text}"
    execution = record.execution
    program = f"extracted program ({record.program.extractor}: {record.program.reason})"
    return replace(
        view,
        texts=(
            table.pair(_CODE, "completion", _clip(text, limit)),
            table.pair(_CODE, program, _clip(record.program.code or "", limit) or "(no code)"),
            table.pair(_OUTPUT, "stdout (tail)", _clip(execution.stdout_tail, limit) or "(empty)"),
            table.pair(_OUTPUT, "stderr (tail)", _clip(execution.stderr_tail, limit) or "(empty)"),
        ),
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
