"""The summary of one run: per-benchmark scores with intervals, verdict counts, the reference
harness's own table, and the macro average. Pure: builds records from records.

::

    summary = summarize(store.read_manifest(), store.iter_samples())
    store.write_summary(summary_json(summary), render_summary_markdown(summary))

Every number is defined once, in :data:`DEFINITIONS`, and the JSON and Markdown forms carry
those definitions with them. Scores are fractions in ``[0, 1]`` here and in ``summary.json``;
tables print them as percentages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from trex_eval.metrics import (
    acc_at_k,
    bootstrap_ci,
    macro_average,
    maj_at_k,
    mean_pass_at_k,
    pass_at_1,
)
from trex_eval.protocols import DEFAULT_PROTOCOL, Protocol, SummaryRow, get_protocol
from trex_eval.records import (
    GraderKind,
    ObjectiveEvidence,
    Record,
    SampleRecord,
    SolveStatus,
    Verdict,
)
from trex_eval.report.definitions import DEFINITIONS
from trex_eval.report.diagnoses import diagnosis_counts
from trex_eval.report.intervals import SMALL_N, IntervalSettings, stratified_bootstrap_ci, wilson_ci
from trex_eval.report.outcomes import Outcome
from trex_eval.report.repair_summary import RepairSummary, repair_summary
from trex_eval.report.runs import BenchmarkResults, ProblemSamples, RunResults, arrange
from trex_eval.report.size_buckets import BucketScore, bucket_scores
from trex_eval.store import REWARD_LOG_BACKEND, RunManifest, RunSettings

_POWERS_OF_TWO = (2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_PROMPT_SET = "t-rex"


class BenchmarkSummary(Record):
    """Scores and counts of one benchmark in one run (see :data:`DEFINITIONS`).

    Identity fields are copied from the run manifest's ``BenchmarkEntry``: ``rule`` is the
    canonical grading rule spec and ``dataset_sha256`` the benchmark data digest; two runs'
    numbers are comparable only when both match. Fractions are in ``[0, 1]``. ``pass_at_k``,
    ``acc_at_k`` and ``maj_at_k`` map ``k`` to the score and are empty with one sample per
    problem; ``maj_at_k`` is also empty for structure-graded benchmarks and when a reference has
    no optimum (``maj_note`` says why).
    """

    benchmark: str
    title: str
    version: int
    dataset_sha256: str
    grader: GraderKind
    rule: str
    rule_description: str
    extractor: str
    prompt_set: str
    template_sha256: str
    problems: int
    samples_per_problem: int
    stored_samples: int
    missing_samples: int
    correct_samples: int
    unverified_samples: int = 0
    """Samples whose claim would pass but the harness could not verify (verdict ``unverified``):
    reported beside ``correct_samples``, never counted in it."""
    pass_at_1: float
    ci_low: float
    ci_high: float
    pass_at_k: dict[int, float]
    acc_at_k: dict[int, float]
    maj_at_k: dict[int, float]
    maj_note: str = ""
    interval_method: str = "bootstrap"
    verdicts: dict[Verdict, int]
    outcomes: dict[Outcome, int]
    api_errors: int
    environment_failures: int
    compat: SummaryRow
    repair: RepairSummary | None = None
    """The repair protocol's scores (``None`` for a run without ``--repair``)."""
    diagnoses: dict[str, int] = Field(default_factory=dict)
    """Failing samples per diagnosis category (``DiagnosisCategory`` values; empty when none was
    diagnosed)."""
    buckets: tuple[BucketScore, ...] = ()
    """pass@1 per size bucket, smallest first (:mod:`trex_eval.report.size_buckets`; empty for a
    benchmark without buckets)."""

    @property
    def small_n(self) -> bool:
        """True when the interval is a small-n Wilson interval (fewer than ``SMALL_N`` problems)."""
        return self.interval_method == "wilson"

    @property
    def flagged(self) -> bool:
        """True when environment failures or missing samples lower this score."""
        return self.environment_failures > 0 or self.missing_samples > 0


class RunIdentity(Record):
    """Who and what a run measured: the fields that label a row in every table. ``model`` is the
    preset name, ``backend`` its backend, ``served_model`` the model it served or loaded."""

    run_id: str
    model: str
    backend: str
    served_model: str
    protocol: str
    prompt_set: str
    samples: int
    few_shot: int
    limit: int | None
    created_at: str
    finished_at: str | None
    path: str | None = None
    repair: int = 0
    """Repair rounds of the run (``run --repair N``; 0: zero-shot)."""

    @property
    def served_name(self) -> str:
        """The served model name (what the reference harness prints), else the preset name."""
        return self.served_model or self.model

    @property
    def display(self) -> str:
        """The model preset, qualified by what makes this run differ from a plain zero-shot run."""
        parts = [self.model]
        if self.protocol != DEFAULT_PROTOCOL:
            parts.append(self.protocol)
        if self.prompt_set != DEFAULT_PROMPT_SET:
            parts.append(f"prompts {self.prompt_set}")
        if self.few_shot:
            parts.append(f"{self.few_shot}-shot")
        if self.samples > 1:
            parts.append(f"{self.samples} samples")
        if self.repair:
            parts.append(f"repair {self.repair}")
        return " · ".join(parts)


class RunSummary(Record):
    """Everything a run's ``summary.json`` holds. ``macro_pass_at_1`` is the :data:`MACRO_LABEL`
    over ``macro_over`` (every benchmark of the run) with a stratified bootstrap interval;
    ``notes`` lists what lowers or qualifies the numbers (environment failures, missing samples)."""

    run: RunIdentity
    interval: IntervalSettings
    benchmarks: tuple[BenchmarkSummary, ...]
    macro_pass_at_1: float | None
    macro_ci_low: float | None
    macro_ci_high: float | None
    macro_over: tuple[str, ...]
    notes: tuple[str, ...]
    definitions: dict[str, str]
    macro_interval_method: str = "bootstrap"
    """How the macro interval was computed: ``bootstrap`` (stratified by benchmark) or, where any
    benchmark has fewer than ``SMALL_N`` problems, ``wilson-mean`` (the mean of the benchmarks'
    Wilson bounds; marked * like the benchmarks it comes from)."""
    torn_lines: int = 0
    """Lines of the completions file graded that were cut off and skipped (their samples are
    missing); see ``trex-eval grade --allow-torn-line``."""

    @property
    def macro_small_n(self) -> bool:
        """True when the macro interval is the small-n ``wilson-mean`` (printed with *)."""
        return self.macro_interval_method == "wilson-mean"


def summarize(
    manifest: RunManifest,
    samples: Iterable[SampleRecord],
    *,
    interval: IntervalSettings | None = None,
    path: Path | None = None,
) -> RunSummary:
    """Summary of the run ``manifest`` describes, from its graded ``samples`` (last write per key);
    ``path``, the run directory, is named in the notes that say how to continue the run.

    Raises:
        StoreError: the samples do not belong to the manifest (see :func:`~trex_eval.report.runs.arrange`).
    """
    return summarize_results(arrange(manifest, samples, path=path), interval=interval)


def summarize_results(results: RunResults, *, interval: IntervalSettings | None = None) -> RunSummary:
    """Summary of an arranged run (the form leaderboards and reports already hold)."""
    settings = interval or IntervalSettings()
    protocol = get_protocol(results.manifest.settings.protocol)
    run_settings = results.manifest.settings
    torn = _torn_lines(results.manifest)
    benchmarks = tuple(
        _summarize_benchmark(bench, settings, protocol, run_settings) for bench in results.benchmarks
    )
    macro: float | None = None
    low: float | None = None
    high: float | None = None
    method = "bootstrap"
    if benchmarks:
        macro = macro_average({bench.benchmark: bench.pass_at_1 for bench in benchmarks})
        if any(bench.small_n for bench in benchmarks):
            # A bootstrap over a benchmark of few problems looks falsely certain, here as in its cell.
            method = "wilson-mean"
            low = sum(bench.ci_low for bench in benchmarks) / len(benchmarks)
            high = sum(bench.ci_high for bench in benchmarks) / len(benchmarks)
        else:
            low, high = stratified_bootstrap_ci(
                [bench.problem_scores() for bench in results.benchmarks], settings=settings
            )
    return RunSummary(
        run=identify(results),
        interval=settings,
        benchmarks=benchmarks,
        macro_pass_at_1=macro,
        macro_ci_low=low,
        macro_ci_high=high,
        macro_over=tuple(bench.benchmark for bench in benchmarks),
        macro_interval_method=method,
        notes=tuple(note for bench in benchmarks for note in _notes(bench, results)) + _torn_notes(torn),
        definitions=dict(DEFINITIONS),
        torn_lines=torn,
    )


def _torn_lines(manifest: RunManifest) -> int:
    """Cut-off lines the replay backend skipped in the completions file (its provenance)."""
    backend = manifest.provenance.get("backend")
    return int(bool(isinstance(backend, dict) and backend.get("skipped_torn_line")))


def _torn_notes(torn: int) -> tuple[str, ...]:
    if not torn:
        return ()
    return (
        f"{torn} line of the completions file was cut off and skipped: a sample that only it held counts "
        "as missing (none does where earlier lines hold its problem's samples), and a problem whose id "
        "could not be read from it is left out",
    )


def _prompt_sets(settings: RunSettings) -> str:
    """The prompt set asked for; with ``t-rex``, also the sets that benchmarks without upstream
    templates fell back to (``t-rex + neutral``)."""
    if settings.prompt_set != DEFAULT_PROMPT_SET:
        return settings.prompt_set
    fallbacks = sorted({b.prompt_set for b in settings.benchmarks} - {settings.prompt_set})
    return " + ".join([settings.prompt_set, *fallbacks])


def identify(results: RunResults) -> RunIdentity:
    """The :class:`RunIdentity` of an arranged run."""
    manifest = results.manifest
    settings = manifest.settings
    return RunIdentity(
        run_id=manifest.run_id,
        model=settings.model.name,
        backend=settings.model.backend,
        served_model=settings.model.model,
        protocol=settings.protocol,
        prompt_set=_prompt_sets(settings),
        samples=settings.samples,
        few_shot=settings.few_shot,
        limit=settings.limit,
        created_at=manifest.created_at,
        finished_at=manifest.finished_at,
        path=str(results.path) if results.path is not None else None,
        repair=settings.repair,
    )


def percent(value: float | None) -> str:
    """A rate as a percentage with two decimals (``"71.81"``), or ``"–"`` when there is none."""
    return "–" if value is None else f"{value * 100:.2f}"


def distinct_labels(runs: Sequence[RunIdentity]) -> list[str]:
    """A label per run, unique among ``runs`` (whose run ids are unique): its
    :attr:`RunIdentity.display`, qualified where two runs would read the same by their served
    models when those tell them apart, else by their run ids."""
    labels = [run.display for run in runs]
    details: tuple[Callable[[RunIdentity], str], ...] = (lambda run: run.served_model, lambda run: run.run_id)
    for detail in details:
        for label in {label for label in labels if labels.count(label) > 1}:
            members = [index for index, other in enumerate(labels) if other == label]
            values = [detail(runs[index]) for index in members]
            if all(values) and len(set(values)) == len(values):
                for index, value in zip(members, values, strict=True):
                    labels[index] = f"{label} ({value})"
    return labels


def summary_json(summary: RunSummary) -> dict[str, Any]:
    """``summary`` as plain JSON data (enum keys as their values, ``k`` keys as strings)."""
    return summary.model_dump(mode="json")


def render_summary_markdown(summary: RunSummary) -> str:
    """``summary.md`` of one run; see :func:`trex_eval.report.markdown.render_summary_markdown`."""
    # The Markdown tables live with the leaderboard's, which import this module: import late.
    from trex_eval.report import markdown

    return markdown.render_summary_markdown(summary)


# --------------------------------------------------------------------------- per benchmark


def _summarize_benchmark(
    bench: BenchmarkResults, settings: IntervalSettings, protocol: Protocol, run: RunSettings
) -> BenchmarkSummary:
    entry = bench.entry
    width = bench.samples_per_problem
    correctness = bench.correctness()
    scores = bench.problem_scores()
    method = "wilson" if len(scores) < SMALL_N else "bootstrap"
    if method == "wilson":
        low, high = wilson_ci(pass_at_1(correctness), len(scores), confidence=settings.confidence)
    else:
        low, high = bootstrap_ci(
            scores, confidence=settings.confidence, n_resamples=settings.resamples, seed=settings.seed
        )
    ks = _ks(width)
    maj, maj_note = _majority(bench, ks)
    verdicts = bench.verdict_counts()
    return BenchmarkSummary(
        benchmark=entry.name,
        title=entry.title,
        version=entry.version,
        dataset_sha256=entry.sha256,
        grader=entry.grader,
        rule=entry.rule,
        rule_description=entry.rule_description,
        extractor=entry.extractor,
        prompt_set=entry.prompt_set,
        template_sha256=entry.template_sha256,
        problems=bench.selected,
        samples_per_problem=width,
        stored_samples=bench.stored_samples,
        missing_samples=bench.missing_samples,
        correct_samples=sum(sum(row) for row in correctness),
        unverified_samples=verdicts[Verdict.UNVERIFIED],
        pass_at_1=pass_at_1(correctness),
        ci_low=low,
        ci_high=high,
        pass_at_k={k: mean_pass_at_k(correctness, k) for k in ks},
        acc_at_k={k: acc_at_k(correctness, k) for k in ks},
        maj_at_k=maj,
        maj_note=maj_note,
        interval_method=method,
        verdicts=verdicts,
        outcomes=bench.outcome_counts(),
        api_errors=verdicts[Verdict.API_ERROR],
        environment_failures=sum(
            count for verdict, count in verdicts.items() if verdict.is_environment_failure
        ),
        compat=protocol.summary_row(
            entry.name, [problem.samples for problem in bench.problems], selected=bench.selected
        ),
        repair=repair_summary(bench, run) if run.repair else None,
        diagnoses=diagnosis_counts(bench.records()),
        buckets=bucket_scores(bench),
    )


def _ks(width: int) -> tuple[int, ...]:
    """The k reported for pass@k / acc@k / maj@k: powers of two below ``width``, and ``width``."""
    if width < 2:
        return ()
    return tuple(sorted({k for k in _POWERS_OF_TWO if k < width} | {width}))


def _majority(bench: BenchmarkResults, ks: tuple[int, ...]) -> tuple[dict[int, float], str]:
    if not ks:
        return {}, ""
    if bench.entry.grader is not GraderKind.OBJECTIVE:
        return {}, "maj@k needs objective values; this benchmark is graded on model structure"
    evidence = {problem.problem_id: _objective_evidence(problem) for problem in bench.problems}
    without_optimum = [
        problem_id
        for problem_id, found in evidence.items()
        if found is not None
        and (found.reference_status is not SolveStatus.OPTIMAL or found.reference is None)
    ]
    if without_optimum:
        return {}, f"maj@k not computed: the reference of problem {without_optimum[0]} has no optimum"
    votes = [[_vote(record) for record in problem.samples] for problem in bench.problems]
    # A problem without objective evidence has only abstaining votes and counts as wrong whatever
    # reference stands in for its unknown one; so do the problems the run never stored.
    references = [
        found.reference if found is not None and found.reference is not None else 0.0
        for found in evidence.values()
    ]
    votes.extend([None] * bench.samples_per_problem for _ in range(bench.unseen))
    references.extend(0.0 for _ in range(bench.unseen))
    return {k: maj_at_k(votes, references, k) for k in ks}, ""


def _objective_evidence(problem: ProblemSamples) -> ObjectiveEvidence | None:
    """The objective evidence of the problem's first sample that has any (all share the reference)."""
    for record in problem.samples:
        if record is not None and isinstance(record.grade.evidence, ObjectiveEvidence):
            return record.grade.evidence
    return None


def _vote(record: SampleRecord | None) -> float | None:
    """A sample's objective for the majority vote: only a solve that ended optimal (or a printed
    value the rule accepted) and that the harness's re-solve did not contradict votes."""
    if record is None:
        return None
    evidence = record.grade.evidence
    if not isinstance(evidence, ObjectiveEvidence) or evidence.predicted is None:
        return None
    if evidence.predicted_status not in (SolveStatus.OPTIMAL, None):
        return None
    solve = record.execution.last_solve
    if solve is not None and solve.verification == "mismatch":
        return None
    return evidence.predicted


def _notes(bench: BenchmarkSummary, run: RunResults) -> list[str]:
    notes = []
    if bench.environment_failures:
        notes.append(
            f"{bench.benchmark}: {bench.environment_failures} sample(s) failed because of the "
            "environment (licence error, gurobipy unavailable, a solver library missing from the "
            "install, not run); they count as failures but say nothing about the model"
        )
    if bench.missing_samples:
        notes.append(
            f"{bench.benchmark}: {bench.missing_samples} of {bench.problems * bench.samples_per_problem} "
            f"expected sample(s) are missing and count as failures ({_why_missing(run)})"
        )
    if bench.unverified_samples:
        notes.append(
            f"{bench.benchmark}: {bench.unverified_samples} sample(s) claimed a passing answer the "
            "harness could not verify (verdict unverified; each reason says why); not counted as correct"
        )
    return notes


def _why_missing(run: RunResults) -> str:
    """Why a run's samples are missing and what fills them, by what wrote the run: a reward
    server's epoch (filled by the trainer's rollouts, never resumed), a grade of recorded
    completions (they hold none for those samples), else a run that stopped (resume it)."""
    settings = run.manifest.settings
    if settings.model.backend == REWARD_LOG_BACKEND:
        return (
            "rollout slots of this epoch no rollout filled: the trainer sent fewer rollouts of those "
            f"problems than `serve --per-problem` ({settings.samples}), or the server stopped first; "
            "an epoch is not resumed, set --per-problem to the trainer's group size to fill each epoch"
        )
    if settings.model.backend == "replay":
        return "the graded completions hold none for them: grade a file or run that holds them"
    where = run.path if run.path is not None else "RUN_DIR (this run's directory)"
    return f"continue the run to fill them: `trex-eval run --resume {where}`"
