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
lazily: each benchmark embeds one blob (see :func:`.drilldown.encode_blob`) in a ``<script
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

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2
from pydantic import Field

from trex_eval.errors import ConfigError
from trex_eval.records import Record
from trex_eval.report.charts import OUTCOME_COLOURS
from trex_eval.report.compare import ComparisonSet, compare_runs
from trex_eval.report.definitions import DEFINITIONS, MACRO_LABEL
from trex_eval.report.diagnoses import diagnosis_section
from trex_eval.report.drilldown import drilldown
from trex_eval.report.html_charts import delta_charts, outcome_chart, score_charts
from trex_eval.report.intervals import SMALL_N, IntervalSettings
from trex_eval.report.leaderboard import (
    ColumnGroup,
    Leaderboard,
    LeaderboardRow,
    MacroColumn,
    build_leaderboard,
)
from trex_eval.report.markdown import ENVIRONMENT_MARK, MISSING_MARK, SMALL_N_MARK
from trex_eval.report.published import PublishedScore
from trex_eval.report.runs import RunResults
from trex_eval.report.size_buckets import size_sections
from trex_eval.report.summary import (
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
class _RuleGroup:
    """The leaderboard rows that share one macro column, hence the same column groups (the same
    rules, data and selections): one table of their own, macro first. ``heading`` is empty when the
    board has a single group."""

    heading: str
    macro: MacroColumn | None
    columns: tuple[ColumnGroup, ...]
    rows: tuple[LeaderboardRow, ...]


def render_html_report(
    runs: Sequence[RunResults],
    *,
    baseline: int | None = 0,
    published: Sequence[PublishedScore] = (),
    options: HtmlOptions | None = None,
    common: bool = False,
) -> str:
    """The report of ``runs`` as one HTML document (see the module docstring).

    ``baseline`` indexes the run the ablation section compares the others with (``None``: no
    ablation section; it is also left out for a single run). A run that cannot be paired with
    the baseline problem by problem (other data or another ``--limit``) is left out of the
    section, which says why; ``common`` pairs such runs on the problems they share instead
    (``compare --common``).

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
            comparisons = compare_runs(
                runs, baseline=baseline, interval=settings.interval, common=common, skip_unpairable=True
            )
        except ConfigError as error:
            comparison_error = error.message
    repaired = [(row.label, bench) for row in board.rows for bench in row.summary.benchmarks if bench.repair]
    environment = _environment()
    environment.filters["pct"] = percent
    environment.filters["pp"] = _pp
    environment.filters["pvalue"] = lambda value: f"{value:.3g}"
    environment.tests["same_label"] = lambda step: step.source == step.target
    template = environment.get_template("report.html.j2")
    return template.render(
        title=settings.title,
        board=board,
        groups=_rule_groups(board),
        size_sections=size_sections(board),
        published=published,
        repaired=repaired,
        repaired_rounds=max((bench.repair.rounds for _, bench in repaired if bench.repair), default=0),
        score_charts=score_charts(board),
        comparisons=comparisons,
        comparison_error=comparison_error,
        delta_charts=delta_charts(comparisons) if comparisons else [],
        outcome_chart=outcome_chart(summaries, labels),
        diagnoses=diagnosis_section(summaries, labels),
        drill=drilldown(
            runs,
            labels,
            detail_limit=settings.detail_limit,
            text_limit=settings.text_limit,
            body=environment.get_template("problem.html.j2"),
        ),
        colours={outcome.value: colour for outcome, colour in OUTCOME_COLOURS.items()},
        definitions=DEFINITIONS,
        macro_label=MACRO_LABEL,
        interval=settings.interval.describe(),
        environment_mark=ENVIRONMENT_MARK,
        missing_mark=MISSING_MARK,
        small_n_mark=SMALL_N_MARK,
        small_n=SMALL_N,
    )


def write_html_report(
    path: Path,
    runs: Sequence[RunResults],
    *,
    baseline: int | None = 0,
    published: Sequence[PublishedScore] = (),
    options: HtmlOptions | None = None,
    common: bool = False,
) -> None:
    """Render :func:`render_html_report` into ``path`` (UTF-8), creating parent folders."""
    html = render_html_report(runs, baseline=baseline, published=published, options=options, common=common)
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


def _pp(value: float) -> str:
    return f"{value * 100:+.2f}"
