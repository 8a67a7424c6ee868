"""Two gradings of the same completions, item by item (``trex-eval compare RUN --protocol A
--protocol B``). Pure except for :func:`write_protocol_diff_csv`.

:func:`diff_protocols` pairs every sample (benchmark, problem id, sample index) of a baseline run
with the same sample of a candidate run graded from the same completions -- typically two
re-grades of one run under different protocols -- and keeps the samples whose verdict differs,
with each side's verdict, rule (``name@version``) and reason. Per benchmark it counts the samples
compared, those whose verdict differs, each side's passes, the samples only the candidate passes
(``gained``) and those only the baseline passes (``lost``). A sample one run never stored reads
as the verdict ``missing`` (a failure), as everywhere in the reports.

Each side is named by its protocol's canonical text (``default+preload@1=pulp+after-solve@1``,
as the manifest records it), so that a table says exactly which conventions moved which items.
"""

from __future__ import annotations

import csv
from pathlib import Path

from rich import box
from rich.markup import escape
from rich.table import Table

from trex_eval.errors import ConfigError
from trex_eval.records import Record, SampleRecord
from trex_eval.report.runs import BenchmarkResults, RunResults

MISSING = "missing"
"""The verdict shown for a sample a run never stored."""

CSV_COLUMNS = (
    "benchmark",
    "problem_id",
    "sample_index",
    "baseline_protocol",
    "baseline_verdict",
    "baseline_rule",
    "baseline_reason",
    "candidate_protocol",
    "candidate_verdict",
    "candidate_rule",
    "candidate_reason",
)


class GradeSide(Record):
    """One run's grade of a sample: its verdict (``missing`` where the run stored none), whether it
    passed, the rule's ``name@version`` spec (``None`` where missing) and the reason."""

    verdict: str
    passed: bool
    rule: str | None
    reason: str


class DifferingSample(Record):
    """A sample whose verdict differs between the two runs."""

    benchmark: str
    problem_id: str
    sample_index: int
    baseline: GradeSide
    candidate: GradeSide


class BenchmarkDiff(Record):
    """One benchmark's counts over ``samples`` paired samples: ``differing`` have another verdict,
    ``gained`` pass only under the candidate, ``lost`` only under the baseline. ``rules`` are the
    manifest's rule of each side."""

    benchmark: str
    samples: int
    differing: int
    baseline_passed: int
    candidate_passed: int
    gained: int
    lost: int
    baseline_rule: str
    candidate_rule: str


class ProtocolDiff(Record):
    """The candidate run against the baseline run, sample by sample; ``items`` in benchmark order
    (the baseline's), then natural problem order, then sample index."""

    baseline_protocol: str
    candidate_protocol: str
    baseline_run: str
    candidate_run: str
    benchmarks: tuple[BenchmarkDiff, ...]
    items: tuple[DifferingSample, ...]


def diff_protocols(baseline: RunResults, candidate: RunResults) -> ProtocolDiff:
    """The item-by-item difference of two runs of the same completions (see the module docstring).

    Raises:
        ConfigError: the runs do not hold the same benchmarks, data (sha256), problems and samples
            per problem, or a sample's completion text differs between them (they are not
            gradings of the same completions); the message names the runs and the first difference.
    """
    names = [bench.entry.name for bench in baseline.benchmarks]
    other = {bench.entry.name: bench for bench in candidate.benchmarks}
    if sorted(names) != sorted(other):
        raise _not_same(baseline, candidate, f"benchmarks {sorted(names)} vs {sorted(other)}")
    benchmarks: list[BenchmarkDiff] = []
    items: list[DifferingSample] = []
    for mine in baseline.benchmarks:
        theirs = other[mine.entry.name]
        _check_same_selection(baseline, candidate, mine, theirs)
        found = _differing(baseline, candidate, mine, theirs)
        items.extend(found)
        benchmarks.append(_counts(mine, theirs, differing=len(found)))
    return ProtocolDiff(
        baseline_protocol=baseline.manifest.settings.protocol,
        candidate_protocol=candidate.manifest.settings.protocol,
        baseline_run=_where(baseline),
        candidate_run=_where(candidate),
        benchmarks=tuple(benchmarks),
        items=tuple(items),
    )


def _where(run: RunResults) -> str:
    return str(run.path) if run.path is not None else run.manifest.run_id


def _not_same(baseline: RunResults, candidate: RunResults, what: str) -> ConfigError:
    return ConfigError(
        f"{_where(baseline)} and {_where(candidate)} are not gradings of the same completions: {what}",
        hint="compare protocols on re-grades of one run: trex-eval compare RUN --protocol A --protocol B",
    )


def _check_same_selection(
    baseline: RunResults, candidate: RunResults, mine: BenchmarkResults, theirs: BenchmarkResults
) -> None:
    name = mine.entry.name
    if mine.entry.sha256 != theirs.entry.sha256:
        raise _not_same(baseline, candidate, f"{name} graded other data (sha256 differs)")
    if [p.problem_id for p in mine.problems] != [p.problem_id for p in theirs.problems]:
        raise _not_same(baseline, candidate, f"{name} selected other problems")
    if mine.samples_per_problem != theirs.samples_per_problem:
        raise _not_same(
            baseline,
            candidate,
            f"{name} has {mine.samples_per_problem} vs {theirs.samples_per_problem} samples per problem",
        )


def _differing(
    baseline: RunResults, candidate: RunResults, mine: BenchmarkResults, theirs: BenchmarkResults
) -> list[DifferingSample]:
    found = []
    for left, right in zip(mine.problems, theirs.problems, strict=True):
        for index, (a, b) in enumerate(zip(left.samples, right.samples, strict=True)):
            if a is not None and b is not None and a.completion.text != b.completion.text:
                raise _not_same(
                    baseline,
                    candidate,
                    f"{mine.entry.name} {left.problem_id} sample {index} has another completion",
                )
            one, two = _side(a), _side(b)
            if one.verdict != two.verdict:
                found.append(
                    DifferingSample(
                        benchmark=mine.entry.name,
                        problem_id=left.problem_id,
                        sample_index=index,
                        baseline=one,
                        candidate=two,
                    )
                )
    return found


def _side(record: SampleRecord | None) -> GradeSide:
    if record is None:
        return GradeSide(verdict=MISSING, passed=False, rule=None, reason="the run stored no sample")
    grade = record.grade
    return GradeSide(verdict=grade.verdict.value, passed=grade.passed, rule=grade.rule, reason=grade.reason)


def _counts(mine: BenchmarkResults, theirs: BenchmarkResults, *, differing: int) -> BenchmarkDiff:
    left = [ok for problem in mine.problems for ok in problem.correct]
    right = [ok for problem in theirs.problems for ok in problem.correct]
    return BenchmarkDiff(
        benchmark=mine.entry.name,
        samples=len(left),
        differing=differing,
        baseline_passed=sum(left),
        candidate_passed=sum(right),
        gained=sum(b and not a for a, b in zip(left, right, strict=True)),
        lost=sum(a and not b for a, b in zip(left, right, strict=True)),
        baseline_rule=mine.entry.rule,
        candidate_rule=theirs.entry.rule,
    )


# ---------------------------------------------------------------------------------- rendering


def protocol_diff_header(diff: ProtocolDiff) -> str:
    """Two lines naming each side by its protocol's canonical text and its run directory."""
    return (
        f"baseline:  {diff.baseline_protocol}  ({diff.baseline_run})\n"
        f"candidate: {diff.candidate_protocol}  ({diff.candidate_run})"
    )


def protocol_counts_table(diff: ProtocolDiff) -> Table:
    """Per benchmark: samples, verdicts that differ, each side's passes, gained and lost."""
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title=escape(f"{diff.baseline_protocol}  →  {diff.candidate_protocol}"),
        caption="differ: samples whose verdict differs; gained / lost: pass only under the candidate"
        " / only under the baseline",
        caption_justify="left",
    )
    table.add_column("benchmark", no_wrap=True)
    for name in ("samples", "differ", "baseline pass", "candidate pass", "gained", "lost"):
        table.add_column(name, justify="right", no_wrap=True)
    for bench in diff.benchmarks:
        table.add_row(
            escape(bench.benchmark),
            str(bench.samples),
            str(bench.differing),
            str(bench.baseline_passed),
            str(bench.candidate_passed),
            f"+{bench.gained}",
            f"-{bench.lost}",
        )
    return table


def protocol_items_table(diff: ProtocolDiff) -> Table | None:
    """One row per sample whose verdict differs (``None`` when none does): each side's verdict,
    rule and reason."""
    if not diff.items:
        return None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_lines=True)
    table.add_column("benchmark · problem · sample", overflow="fold")
    table.add_column(escape(f"baseline: {diff.baseline_protocol}"), overflow="fold", ratio=1)
    table.add_column(escape(f"candidate: {diff.candidate_protocol}"), overflow="fold", ratio=1)
    for item in diff.items:
        table.add_row(
            escape(f"{item.benchmark} {item.problem_id} #{item.sample_index}"),
            escape(_cell(item.baseline)),
            escape(_cell(item.candidate)),
        )
    return table


def _cell(side: GradeSide) -> str:
    rule = f" ({side.rule})" if side.rule else ""
    return f"{side.verdict}{rule}: {side.reason}"


def render_protocol_diff_markdown(diffs: list[ProtocolDiff]) -> str:
    """Markdown of each candidate against the baseline: the header, the counts, the items."""
    parts: list[str] = []
    for diff in diffs:
        parts += [
            f"## `{diff.baseline_protocol}` → `{diff.candidate_protocol}`",
            "",
            f"- baseline: `{diff.baseline_protocol}` ({diff.baseline_run})",
            f"- candidate: `{diff.candidate_protocol}` ({diff.candidate_run})",
            "",
            "| benchmark | samples | differ | baseline pass | candidate pass | gained | lost | rules |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for b in diff.benchmarks:
            rules = (
                b.baseline_rule
                if b.baseline_rule == b.candidate_rule
                else f"{b.baseline_rule} → {b.candidate_rule}"
            )
            parts.append(
                f"| {b.benchmark} | {b.samples} | {b.differing} | {b.baseline_passed} | "
                f"{b.candidate_passed} | +{b.gained} | -{b.lost} | {_md(rules)} |"
            )
        parts.append("")
        if not diff.items:
            parts += ["No sample's verdict differs.", ""]
            continue
        parts += ["| benchmark | problem | sample | baseline | candidate |", "|---|---|---:|---|---|"]
        for item in diff.items:
            parts.append(
                f"| {item.benchmark} | {_md(item.problem_id)} | {item.sample_index} | "
                f"{_md(_cell(item.baseline))} | {_md(_cell(item.candidate))} |"
            )
        parts.append("")
    return "\n".join(parts)


def _md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def write_protocol_diff_csv(diffs: list[ProtocolDiff], path: Path) -> None:
    """One UTF-8 CSV row per differing sample of every candidate (:data:`CSV_COLUMNS`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as sink:
        writer = csv.writer(sink)
        writer.writerow(CSV_COLUMNS)
        for diff in diffs:
            for item in diff.items:
                baseline, candidate = item.baseline, item.candidate
                writer.writerow(
                    (
                        *(item.benchmark, item.problem_id, item.sample_index),
                        *(diff.baseline_protocol, baseline.verdict, baseline.rule or "", baseline.reason),
                        *(diff.candidate_protocol, candidate.verdict, candidate.rule or "", candidate.reason),
                    )
                )
