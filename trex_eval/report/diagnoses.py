"""Why samples failed, in reports: diagnosis counts per benchmark (``summary.json``/``summary.md``)
and, between two runs over the same problems, the transitions of each sample's category (what a
training step fixed and what it broke). Pure.

A sample's *label* (:func:`label`) is ``correct`` when it passed, its diagnosis category when it
has one, else its verdict (``unverified``, ``api_error``, ... and failures graded before
diagnoses existed) and ``missing`` for a sample not stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trex_eval.records import DiagnosisCategory, Record, SampleRecord
from trex_eval.report.runs import BenchmarkResults, natural_key

if TYPE_CHECKING:
    from trex_eval.report.summary import RunSummary

CORRECT = "correct"
MISSING = "missing"
CRASHED_AFTER_SOLVE = DiagnosisCategory.CRASHED_AFTER_SOLVE.value


class Transition(Record):
    """``count`` samples labelled ``source`` in the baseline and ``target`` in the candidate;
    ``problems`` are their problem ids, each once, in natural order."""

    source: str
    target: str
    count: int
    problems: tuple[str, ...] = ()


def label(record: SampleRecord | None) -> str:
    """The sample's label (see the module docstring)."""
    if record is None:
        return MISSING
    if record.grade.passed:
        return CORRECT
    diagnosis = record.grade.diagnosis
    return diagnosis.category.value if diagnosis is not None else record.grade.verdict.value


def diagnosis_counts(records: Iterable[SampleRecord]) -> dict[str, int]:
    """Failing samples per diagnosis category (those without a diagnosis are not counted), most
    frequent first."""
    counts = Counter(r.grade.diagnosis.category.value for r in records if r.grade.diagnosis is not None)
    return dict(counts.most_common())


def transitions(baseline: BenchmarkResults, candidate: BenchmarkResults) -> tuple[Transition, ...]:
    """Label pairs of the samples both runs hold positions for (same problem id, same sample
    index, over the problems either stored), most frequent first (ties by name)."""
    base = {p.problem_id: p.samples for p in baseline.problems}
    cand = {p.problem_id: p.samples for p in candidate.problems}
    counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[str]] = {}
    for problem_id in base.keys() | cand.keys():
        left, right = base.get(problem_id, ()), cand.get(problem_id, ())
        for index in range(max(len(left), len(right))):
            before = left[index] if index < len(left) else None
            after = right[index] if index < len(right) else None
            pair = (label(before), label(after))
            counts[pair] += 1
            where.setdefault(pair, set()).add(problem_id)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(
        Transition(source=s, target=t, count=n, problems=tuple(sorted(where[(s, t)], key=natural_key)))
        for (s, t), n in ordered
    )


def crash_note(counts: Iterable[dict[str, int]]) -> str | None:
    """``"N more would pass without the crash ..."``: the samples diagnosed
    ``crashed_after_solve`` over ``counts`` (one mapping per benchmark), or ``None`` when none was."""
    crashed = sum(c.get(CRASHED_AFTER_SOLVE, 0) for c in counts)
    if not crashed:
        return None
    samples = "sample" if crashed == 1 else "samples"
    return (
        f"{crashed} more {samples} would pass without the crash ({CRASHED_AFTER_SOLVE}: solved "
        "correctly, then raised; the protocol option after-solve grades them on their solve)."
    )


def crash_lines(runs: Sequence[tuple[str, Sequence[dict[str, int]]]]) -> list[str]:
    """One Markdown bullet per run (``runs``: label, its benchmarks' diagnosis counts) with
    samples diagnosed ``crashed_after_solve``: ``- label: N more samples would pass ...``; empty
    when no run has one (a leaderboard's note under its table)."""
    lines = []
    for run_label, counts in runs:
        note = crash_note(counts)
        if note:
            lines.append(f"- {run_label}: {note}")
    return lines


def diagnosis_table(rows: Sequence[tuple[str, dict[str, int]]]) -> list[str]:
    """A Markdown table of failing samples per category, one column per benchmark (``rows``:
    benchmark name, its counts), followed by :func:`crash_note` where a sample crashed after a
    correct solve; empty when no sample was diagnosed."""
    categories = sorted(
        {c for _, counts in rows for c in counts}, key=lambda c: (-sum(r.get(c, 0) for _, r in rows), c)
    )
    if not categories:
        return []
    lines = [
        "| Category | " + " | ".join(name for name, _ in rows) + " |",
        "| --- | " + " | ".join("---:" for _ in rows) + " |",
    ]
    lines += [
        "| " + " | ".join([c, *(str(counts.get(c, 0)) for _, counts in rows)]) + " |" for c in categories
    ]
    note = crash_note(counts for _, counts in rows)
    return [*lines, "", note] if note else lines


def transition_table(found: Sequence[Transition], *, changed_only: bool = True) -> list[str]:
    """A Markdown table ``baseline → candidate | samples``; with ``changed_only``, the pairs whose
    label changed (empty when none did)."""
    shown = [t for t in found if t.source != t.target or not changed_only]
    if not shown:
        return []
    lines = ["| Baseline | Candidate | Samples |", "| --- | --- | ---: |"]
    lines += [f"| {t.source} | {t.target} | {t.count} |" for t in shown]
    return lines


@dataclass(frozen=True)
class DiagnosisTable:
    """The HTML report's "why samples failed" section: ``categories`` (most frequent first over
    all runs), per run its label, its counts per category over all its benchmarks (``totals``, in
    ``categories`` order) and per benchmark (``rows``: benchmark, counts in that order)."""

    categories: tuple[str, ...]
    runs: tuple[tuple[str, tuple[int, ...], tuple[tuple[str, tuple[int, ...]], ...]], ...]


def diagnosis_section(summaries: Sequence[RunSummary], labels: Sequence[str]) -> DiagnosisTable:
    """The section's numbers from the runs' summaries (empty ``categories`` when nothing was
    diagnosed)."""
    overall: Counter[str] = Counter()
    for summary in summaries:
        for bench in summary.benchmarks:
            overall.update(bench.diagnoses)
    categories = tuple(name for name, _ in sorted(overall.items(), key=lambda item: (-item[1], item[0])))
    runs = []
    for label_text, summary in zip(labels, summaries, strict=True):
        rows = tuple(
            (bench.benchmark, tuple(bench.diagnoses.get(name, 0) for name in categories))
            for bench in summary.benchmarks
        )
        totals = tuple(sum(counts[i] for _, counts in rows) for i in range(len(categories)))
        runs.append((label_text, totals, rows))
    return DiagnosisTable(categories, tuple(runs))
