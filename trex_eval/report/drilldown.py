"""The HTML report's per-problem drill-down: for each benchmark, every selected problem the runs
stored, each run's verdict badge, and one compressed blob holding the problems' bodies and texts
(see :mod:`trex_eval.report.html` for the page side and the blob's format)."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import jinja2
from markupsafe import Markup

from trex_eval.records import SampleRecord
from trex_eval.report.outcomes import Outcome, classify
from trex_eval.report.runs import BenchmarkResults, RunResults, natural_key

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
    diagnosis: str = ""
    """Why it failed: the diagnosis category, its detail and evidence (empty when none)."""
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
class BenchmarkDrill:
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


def drilldown(
    runs: Sequence[RunResults],
    labels: Sequence[str],
    *,
    detail_limit: int | None,
    text_limit: int,
    body: jinja2.Template,
) -> list[BenchmarkDrill]:
    """One drill-down per benchmark any run holds (see :mod:`trex_eval.report.html`): texts for at
    most ``detail_limit`` problems per benchmark, each text at most ``text_limit`` characters;
    ``body`` renders a problem's body."""
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
        detailed = _choose_detailed(views, detail_limit)
        table = _TextTable()
        problems = tuple(
            _with_details(view, columns, text_limit, table) if view.problem_id in detailed else view
            for view in views
        )
        strings = table.strings()
        bodies = [body.render(problem=problem, refs=table.refs) for problem in problems]
        unseen = [f"{label}: {bench.unseen}" for label, bench in holders if bench.unseen]
        rules = [(label, rule) for label, bench in holders for rule in _rules(bench)]
        drills.append(
            BenchmarkDrill(
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
        diagnosis=_diagnosis_text(record),
    )


def _diagnosis_text(record: SampleRecord) -> str:
    found = record.grade.diagnosis
    if found is None:
        return ""
    text = found.category.value + (f": {found.detail}" if found.detail else "")
    if found.evidence:
        text += " (" + ", ".join(f"{key} {value:g}" for key, value in found.evidence.items()) + ")"
    return text


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
