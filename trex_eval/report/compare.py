"""Paired comparisons of runs on the same problems (base vs SFT vs CPT+SFT ablations). Pure
except for :func:`write_comparison_csv`.

Every candidate run is compared with one baseline run, benchmark by benchmark and overall:

* **difference** of pass@1 (candidate − baseline, per-problem scores paired), with a paired
  percentile-bootstrap interval (:func:`~trex_eval.metrics.paired_bootstrap_diff`); overall, the
  difference of macro means with a paired bootstrap stratified by benchmark;
* **won / lost**: problems whose first sample (seed 42, the reference harness's 1-pass attempt)
  only the candidate / only the baseline got right; with one sample per problem these are simply
  the problems that flipped. The exact McNemar p-value
  (:func:`~trex_eval.metrics.mcnemar_exact`) tests won against lost; overall it is pooled over
  all problems of all compared benchmarks. ``gained`` and ``dropped`` list the flipped problem ids.

Pairing rules: a benchmark is compared only when both runs hold it; both must have graded the
same data (dataset sha256 and benchmark version) over the same number of selected problems, or
:class:`~trex_eval.errors.ConfigError` is raised naming the runs and the difference. The two runs
may use different grading rules (comparing rules on the same completions is a legitimate
ablation): both rules are printed and a warning says so. Problems neither run stored count as
failed in both (concordant); a problem only one run stored counts as failed in the other.

**Repair runs** (``run --repair N``) are compared on their zero-shot answers (round 0) like any
run, so the main difference is never a mix of repaired and zero-shot scores. Beside it, when
either run repaired, :class:`RepairedPair` holds each run's pass@1 after every round and the
paired difference after the last round of each (a zero-shot run's last round is its only one):
the "does repair pay" ablation, in columns of its own.

``common=True`` (``compare --common``) pairs runs of different selections (``--limit 20``
against a full run) on the problems both stored: each shared benchmark is cut down to those
problems, and a warning says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trex_eval.errors import ConfigError
from trex_eval.metrics import macro_average, mcnemar_exact, paired_bootstrap_diff
from trex_eval.records import Record
from trex_eval.report.diagnoses import Transition, transitions
from trex_eval.report.intervals import IntervalSettings, stratified_bootstrap_ci
from trex_eval.report.runs import BenchmarkResults, RunResults, natural_key
from trex_eval.report.summary import RunIdentity, distinct_labels, identify

if TYPE_CHECKING:
    pass


class RepairedPair(Record):
    """Scores after repair rounds (fractions). ``baseline_rounds[k]`` / ``candidate_rounds[k]``
    is pass@1 with each sample graded by its last round up to ``k`` (one entry for a zero-shot
    run); ``difference`` = candidate − baseline after the last round of each, paired over
    problems, with its interval ``[ci_low, ci_high]``."""

    baseline_rounds: tuple[float, ...]
    candidate_rounds: tuple[float, ...]
    difference: float
    ci_low: float
    ci_high: float


class PairedBenchmark(Record):
    """One benchmark, candidate against baseline. Scores and differences are fractions;
    ``difference`` = candidate − baseline pass@1 with its interval ``[ci_low, ci_high]``.
    ``won + lost + both + neither == problems``."""

    benchmark: str
    title: str
    dataset_sha256: str
    baseline_rule: str
    candidate_rule: str
    problems: int
    baseline_pass_at_1: float
    candidate_pass_at_1: float
    difference: float
    ci_low: float
    ci_high: float
    won: int
    lost: int
    both: int
    neither: int
    mcnemar_p: float
    gained: tuple[str, ...]
    dropped: tuple[str, ...]
    repaired: RepairedPair | None = None
    """Scores after repair (``None`` unless either run was made with ``--repair``)."""
    transitions: tuple[Transition, ...] = ()
    """Each sample's label, baseline → candidate (``correct``, its diagnosis category, else its
    verdict), counted; most frequent first (:func:`~trex_eval.report.diagnoses.transitions`)."""


class PairedOverall(Record):
    """All compared benchmarks together: macro means (each benchmark weighs the same) and their
    difference with a benchmark-stratified paired interval; counts and McNemar pooled over problems."""

    benchmarks: tuple[str, ...]
    problems: int
    baseline_macro: float
    candidate_macro: float
    difference: float
    ci_low: float
    ci_high: float
    won: int
    lost: int
    both: int
    neither: int
    mcnemar_p: float


class Comparison(Record):
    """One candidate run against the baseline; ``overall`` is ``None`` when no benchmark pairs.
    The labels name the runs uniquely among those compared."""

    baseline: RunIdentity
    candidate: RunIdentity
    baseline_label: str
    candidate_label: str
    benchmarks: tuple[PairedBenchmark, ...]
    overall: PairedOverall | None
    warnings: tuple[str, ...]


class ComparisonSet(Record):
    """Every candidate against one baseline, with the interval settings used throughout;
    ``unpaired`` says which runs could not be paired with the baseline and why (only with
    ``compare_runs(skip_unpairable=True)``)."""

    baseline: RunIdentity
    baseline_label: str
    comparisons: tuple[Comparison, ...]
    interval: IntervalSettings
    unpaired: tuple[str, ...] = ()


def select_baseline(runs: Sequence[RunResults], reference: str | Path) -> int:
    """Index of the run that ``reference`` names: a run directory (as given or resolved) or a run id.

    Raises:
        ConfigError: no run, or more than one, matches.
    """
    text = str(reference)
    wanted = Path(reference).resolve()
    matches = [
        index
        for index, run in enumerate(runs)
        if run.run_id == text
        or (run.path is not None and (str(run.path) == text or run.path.resolve() == wanted))
    ]
    if len(matches) != 1:
        given = ", ".join(str(run.path or run.run_id) for run in runs)
        found = "no run" if not matches else "several runs"
        raise ConfigError(f"baseline {text!r} matches {found}", hint=f"name one of: {given}")
    return matches[0]


def compare_runs(
    runs: Sequence[RunResults],
    *,
    baseline: int = 0,
    interval: IntervalSettings | None = None,
    common: bool = False,
    skip_unpairable: bool = False,
) -> ComparisonSet:
    """Compare every run with ``runs[baseline]`` (rules in the module docstring).
    ``skip_unpairable`` leaves out a run whose data or selection differs from the baseline's
    (named in :attr:`ComparisonSet.unpaired` with the reason) instead of raising.

    Raises:
        ConfigError: fewer than two runs, ``baseline`` out of range, a run given twice, a
            shared benchmark whose data or problem selection differs between two runs (unless
            ``skip_unpairable``), or no run left to compare.
    """
    if len(runs) < 2:
        raise ConfigError("a comparison needs at least two runs")
    if not 0 <= baseline < len(runs):
        raise ConfigError(f"baseline index {baseline} is out of range for {len(runs)} runs")
    run_ids = [run.run_id for run in runs]
    if len(set(run_ids)) != len(run_ids):
        raise ConfigError(f"a run is given more than once: {', '.join(run_ids)}")
    settings = interval or IntervalSettings()
    labels = distinct_labels([identify(run) for run in runs])
    comparisons: list[Comparison] = []
    unpaired: list[str] = []
    for index, run in enumerate(runs):
        if index == baseline:
            continue
        try:
            comparisons.append(
                _compare_pair(
                    runs[baseline],
                    run,
                    labels=(labels[baseline], labels[index]),
                    interval=settings,
                    common=common,
                )
            )
        except ConfigError as error:
            if not skip_unpairable:
                raise
            unpaired.append(f"{labels[index]}: {error.message}")
    if not comparisons:
        raise ConfigError(f"no run can be paired with the baseline: {'; '.join(unpaired)}")
    return ComparisonSet(
        baseline=identify(runs[baseline]),
        baseline_label=labels[baseline],
        comparisons=tuple(comparisons),
        interval=settings,
        unpaired=tuple(unpaired),
    )


def _compare_pair(
    baseline: RunResults,
    candidate: RunResults,
    *,
    labels: tuple[str, str],
    interval: IntervalSettings,
    common: bool = False,
) -> Comparison:
    names = [bench.name for bench in baseline.benchmarks if _has(candidate, bench.name)]
    warnings = []
    if common:
        baseline, candidate, cut = _on_common_problems(baseline, candidate, names)
        warnings += cut
    _check_pairable(baseline, candidate, names)
    for run, other in ((baseline, candidate), (candidate, baseline)):
        skipped = [bench.name for bench in run.benchmarks if not _has(other, bench.name)]
        if skipped:
            warnings.append(f"not compared, only in run {run.run_id}: {', '.join(skipped)}")
    pairs = []
    differences: list[list[float]] = []
    for name in names:
        paired, diffs = _pair(
            baseline.benchmark(name),
            candidate.benchmark(name),
            interval,
            rounds=(baseline.manifest.settings.repair, candidate.manifest.settings.repair),
        )
        pairs.append(paired)
        differences.append(diffs)
        if paired.baseline_rule != paired.candidate_rule:
            warnings.append(
                f"{name}: graded under different rules (baseline {paired.baseline_rule}, "
                f"candidate {paired.candidate_rule}); the difference includes the change of rule"
            )
    return Comparison(
        baseline=identify(baseline),
        candidate=identify(candidate),
        baseline_label=labels[0],
        candidate_label=labels[1],
        benchmarks=tuple(pairs),
        overall=_overall(pairs, differences, interval) if pairs else None,
        warnings=tuple(warnings),
    )


# --------------------------------------------------------------------------- helpers


def _on_common_problems(
    baseline: RunResults, candidate: RunResults, names: Sequence[str]
) -> tuple[RunResults, RunResults, list[str]]:
    """Both runs cut down, for each benchmark whose selections differ, to the problems both stored."""
    cut: dict[str, tuple[BenchmarkResults, BenchmarkResults]] = {}
    warnings = []
    for name in names:
        a, b = baseline.benchmark(name), candidate.benchmark(name)
        if a.selected == b.selected and a.entry.problem_ids == b.entry.problem_ids:
            continue
        shared = {p.problem_id for p in a.problems} & {p.problem_id for p in b.problems}
        if not shared:
            raise ConfigError(f"{name}: the runs {baseline.run_id} and {candidate.run_id} share no problem")
        cut[name] = (_only(a, shared), _only(b, shared))
        warnings.append(
            f"{name}: compared on the {len(shared)} problems both runs hold (--common; "
            f"{a.selected} and {b.selected} were selected)"
        )

    def rebuilt(run: RunResults, side: int) -> RunResults:
        benchmarks = tuple(cut[bench.name][side] if bench.name in cut else bench for bench in run.benchmarks)
        return dataclasses.replace(run, benchmarks=benchmarks)

    return rebuilt(baseline, 0), rebuilt(candidate, 1), warnings


def _only(bench: BenchmarkResults, ids: set[str]) -> BenchmarkResults:
    problems = tuple(problem for problem in bench.problems if problem.problem_id in ids)
    entry = bench.entry.model_copy(update={"problems": len(problems), "problem_ids": None})
    return dataclasses.replace(bench, entry=entry, problems=problems, unseen=0)


def _has(run: RunResults, name: str) -> bool:
    return any(bench.name == name for bench in run.benchmarks)


def _check_pairable(baseline: RunResults, candidate: RunResults, names: Sequence[str]) -> None:
    problems = []
    for name in names:
        a, b = baseline.benchmark(name).entry, candidate.benchmark(name).entry
        if (a.sha256, a.version) != (b.sha256, b.version):
            problems.append(
                f"{name}: different data (run {baseline.run_id}: v{a.version} sha256 {a.sha256[:12]}, "
                f"run {candidate.run_id}: v{b.version} sha256 {b.sha256[:12]})"
            )
        elif a.problems != b.problems:
            problems.append(
                f"{name}: different problem selections (run {baseline.run_id}: {a.problems} problems, "
                f"run {candidate.run_id}: {b.problems})"
            )
    if problems:
        raise ConfigError(
            "the runs cannot be paired problem by problem: " + "; ".join(problems),
            hint="compare runs made on the same data with the same --limit, or pass --common to "
            "compare them on the problems both hold",
        )


def _pair(
    baseline: BenchmarkResults,
    candidate: BenchmarkResults,
    interval: IntervalSettings,
    *,
    rounds: tuple[int, int] = (0, 0),
) -> tuple[PairedBenchmark, list[float]]:
    base = {problem.problem_id: problem for problem in baseline.problems}
    cand = {problem.problem_id: problem for problem in candidate.problems}
    ids = sorted(base.keys() | cand.keys(), key=natural_key)
    total = baseline.selected
    if len(ids) > total:
        raise ConfigError(
            f"{baseline.name}: the two runs stored {len(ids)} distinct problems between them, "
            f"but each selected {total}: they selected different problems",
            hint="compare runs made on the same data with the same --limit, or pass --common to "
            "compare them on the problems both hold",
        )
    padding = total - len(ids)
    base_scores = [base[i].score if i in base else 0.0 for i in ids] + [0.0] * padding
    cand_scores = [cand[i].score if i in cand else 0.0 for i in ids] + [0.0] * padding
    base_first = {i: i in base and base[i].first_correct for i in ids}
    cand_first = {i: i in cand and cand[i].first_correct for i in ids}
    gained = tuple(i for i in ids if cand_first[i] and not base_first[i])
    dropped = tuple(i for i in ids if base_first[i] and not cand_first[i])
    both = sum(cand_first[i] and base_first[i] for i in ids)
    difference = paired_bootstrap_diff(
        cand_scores,
        base_scores,
        confidence=interval.confidence,
        n_resamples=interval.resamples,
        seed=interval.seed,
    )
    paired = PairedBenchmark(
        benchmark=baseline.name,
        title=baseline.entry.title,
        dataset_sha256=baseline.entry.sha256,
        baseline_rule=baseline.entry.rule,
        candidate_rule=candidate.entry.rule,
        problems=total,
        baseline_pass_at_1=sum(base_scores) / total,
        candidate_pass_at_1=sum(cand_scores) / total,
        difference=difference.difference,
        ci_low=difference.low,
        ci_high=difference.high,
        won=len(gained),
        lost=len(dropped),
        both=both,
        neither=total - len(gained) - len(dropped) - both,
        mcnemar_p=mcnemar_exact(len(gained), len(dropped)),
        gained=gained,
        dropped=dropped,
        repaired=_repaired(baseline, candidate, ids, padding, rounds, interval) if any(rounds) else None,
        transitions=transitions(baseline, candidate),
    )
    return paired, [c - b for c, b in zip(cand_scores, base_scores, strict=True)]


def _scores_after(bench: BenchmarkResults, ids: Sequence[str], padding: int, round_index: int) -> list[float]:
    """Per-problem pass fractions with each sample graded by its last round up to ``round_index``
    (a missing sample or problem counts as failed)."""
    problems = {problem.problem_id: problem for problem in bench.problems}
    scores = []
    for problem_id in ids:
        problem = problems.get(problem_id)
        if problem is None:
            scores.append(0.0)
            continue
        passed = [record is not None and record.grade_after(round_index).passed for record in problem.samples]
        scores.append(sum(passed) / len(passed))
    return scores + [0.0] * padding


def _repaired(
    baseline: BenchmarkResults,
    candidate: BenchmarkResults,
    ids: Sequence[str],
    padding: int,
    rounds: tuple[int, int],
    interval: IntervalSettings,
) -> RepairedPair:
    base = [_scores_after(baseline, ids, padding, k) for k in range(rounds[0] + 1)]
    cand = [_scores_after(candidate, ids, padding, k) for k in range(rounds[1] + 1)]
    difference = paired_bootstrap_diff(
        cand[-1],
        base[-1],
        confidence=interval.confidence,
        n_resamples=interval.resamples,
        seed=interval.seed,
    )
    return RepairedPair(
        baseline_rounds=tuple(sum(scores) / len(scores) for scores in base),
        candidate_rounds=tuple(sum(scores) / len(scores) for scores in cand),
        difference=difference.difference,
        ci_low=difference.low,
        ci_high=difference.high,
    )


def _overall(
    pairs: Sequence[PairedBenchmark], differences: Sequence[Sequence[float]], interval: IntervalSettings
) -> PairedOverall:
    baseline_macro = macro_average({pair.benchmark: pair.baseline_pass_at_1 for pair in pairs})
    candidate_macro = macro_average({pair.benchmark: pair.candidate_pass_at_1 for pair in pairs})
    low, high = stratified_bootstrap_ci(differences, settings=interval)
    won = sum(pair.won for pair in pairs)
    lost = sum(pair.lost for pair in pairs)
    both = sum(pair.both for pair in pairs)
    problems = sum(pair.problems for pair in pairs)
    return PairedOverall(
        benchmarks=tuple(pair.benchmark for pair in pairs),
        problems=problems,
        baseline_macro=baseline_macro,
        candidate_macro=candidate_macro,
        difference=candidate_macro - baseline_macro,
        ci_low=low,
        ci_high=high,
        won=won,
        lost=lost,
        both=both,
        neither=problems - won - lost - both,
        mcnemar_p=mcnemar_exact(won, lost),
    )
