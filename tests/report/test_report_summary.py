"""Run summaries of pipeline-made runs: denominators, verdict counts, the compat table, pass@k /
acc@k / maj@k against enumeration, and intervals against scipy. Expected numbers come from how the
runs were constructed (``pipeline_runs``), never from the code under test."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pipeline_runs as pr
import pytest
from records_factory import entry, manifest, sample
from scipy.stats import binomtest, bootstrap

from trex_eval.errors import StoreError
from trex_eval.metrics import bootstrap_ci
from trex_eval.records import Verdict
from trex_eval.report import (
    IntervalSettings,
    Outcome,
    RunResults,
    RunSummary,
    arrange,
    render_summary_markdown,
    summarize,
    summarize_results,
    summary_json,
)
from trex_eval.report.intervals import stratified_bootstrap_ci, wilson_ci
from trex_eval.store import REWARD_LOG_BACKEND, RunStore


def _broken_count(benchmark: str) -> int:
    return len(pr.BREAKAGES[benchmark])


class TestPipelineRuns:
    def test_reference_run_scores_everything(self, reference: RunResults) -> None:
        summary = summarize_results(reference)
        assert [bench.benchmark for bench in summary.benchmarks] == list(pr.BENCHMARKS)
        wilson = binomtest(pr.LIMIT, pr.LIMIT).proportion_ci(method="wilson")
        for bench in summary.benchmarks:
            # Ten problems all correct: a small-n Wilson interval, never the certain-looking [1, 1].
            assert (bench.problems, bench.pass_at_1, bench.ci_high) == (pr.LIMIT, 1.0, 1.0)
            assert (
                bench.small_n and bench.ci_low == pytest.approx(wilson.low, rel=1e-9) and bench.ci_low < 0.75
            )
            assert bench.outcomes[Outcome.CORRECT] == pr.LIMIT
        assert summary.macro_pass_at_1 == 1.0
        assert summary.notes == ()

    def test_broken_run_counts_every_failure_in_the_denominator(self, broken: RunResults) -> None:
        summary = summarize_results(broken)
        for bench in summary.benchmarks:
            broken_here = _broken_count(bench.benchmark)
            assert bench.problems == pr.LIMIT
            assert bench.pass_at_1 == pytest.approx((pr.LIMIT - broken_here) / pr.LIMIT)
            assert bench.correct_samples == pr.LIMIT - broken_here
            expected = {verdict: 0 for verdict in Verdict}
            expected[Verdict.CORRECT] = pr.LIMIT - broken_here
            for breakage in pr.BREAKAGES[bench.benchmark].values():
                expected[pr.EXPECTED_VERDICT[breakage]] += 1
            assert bench.verdicts == expected
        macro = np.mean([(pr.LIMIT - _broken_count(name)) / pr.LIMIT for name in pr.BENCHMARKS])
        assert summary.macro_pass_at_1 == pytest.approx(macro)
        assert summary.macro_over == pr.BENCHMARKS

    def test_outcome_classes_of_the_broken_nl4opt(self, broken: RunResults) -> None:
        nl4opt = summarize_results(broken).benchmarks[0]
        assert {outcome: count for outcome, count in nl4opt.outcomes.items() if count} == {
            Outcome.CORRECT: 3,
            Outcome.WRONG: 1,
            Outcome.INFEASIBLE: 1,
            Outcome.SYNTAX: 1,
            Outcome.RUNTIME: 1,
            Outcome.LIMIT: 1,
            Outcome.NO_CODE: 1,
            Outcome.API_ERROR: 1,
        }
        assert nl4opt.api_errors == 1

    def test_environment_failures_are_flagged_not_hidden(self, broken: RunResults) -> None:
        summary = summarize_results(broken)
        optibench = next(bench for bench in summary.benchmarks if bench.benchmark == "optibench")
        assert optibench.environment_failures == 1
        assert optibench.pass_at_1 == pytest.approx(0.8)  # still a failure: the denominator stays 10
        assert optibench.flagged
        assert any(
            "optibench: 1 sample(s) failed because of the environment" in note for note in summary.notes
        )
        markdown = render_summary_markdown(summary)
        assert "80.00†" in markdown

    def test_compat_rows_follow_the_reference_summary_format(self, broken: RunResults) -> None:
        summary = summarize_results(broken)
        rows = {bench.compat.dataset: bench.compat for bench in summary.benchmarks}
        assert set(rows) == {"nl4opt", "optibench", "bench4opt-feasible", "bench4opt"}
        # code pass = an optimal objective: the correct answers plus the wrong-but-optimal ones
        assert (
            rows["nl4opt"].score_count,
            rows["nl4opt"].code_pass_count,
            rows["nl4opt"].api_error_count,
        ) == (
            3,
            4,
            1,
        )
        assert (rows["optibench"].score_count, rows["optibench"].code_pass_count) == (8, 9)
        assert (rows["bench4opt-feasible"].score_count, rows["bench4opt-feasible"].code_pass_count) == (9, 9)
        assert (rows["bench4opt"].score_count, rows["bench4opt"].code_pass_count) == (8, 8)
        markdown = render_summary_markdown(summary)
        assert (
            "| Dataset | Model | Score | Code pass | API errors | Count |\n|---|---|---:|---:|---:|---:|"
            in markdown
        )
        assert "| nl4opt | broken | 30.00% (3/10) | 40.00% (4/10) | 1 | 10 |" in markdown

    def test_runner_wrote_this_summary(self, broken_dir: Path, broken: RunResults) -> None:
        written = json.loads((broken_dir / "summary.json").read_text(encoding="utf-8"))
        recomputed = summary_json(summarize_results(broken))
        assert written["benchmarks"] == recomputed["benchmarks"]
        assert written["macro_pass_at_1"] == recomputed["macro_pass_at_1"]
        assert "| Rank | Model |" in (broken_dir / "summary.md").read_text(encoding="utf-8")

    def test_summary_json_round_trips(self, broken: RunResults) -> None:
        summary = summarize_results(broken)
        data = json.loads(json.dumps(summary_json(summary)))
        assert RunSummary.model_validate(data) == summary
        assert data["benchmarks"][0]["verdicts"]["syntax_error"] == 1
        assert set(data["definitions"]) >= {"pass@1", "macro", "compat", "missing"}

    def test_markdown_names_each_rule(self, broken: RunResults) -> None:
        summary = summarize_results(broken)
        markdown = render_summary_markdown(summary)
        for bench in summary.benchmarks:
            assert f"- **{bench.benchmark}**: `{bench.rule}` — {bench.rule_description}" in markdown
        assert "macro mean of per-benchmark pass@1" in markdown


class TestSampling:
    """SAMPLE_PATTERNS: correct = the reference answer (None), everything else fails."""

    def _correct(self) -> list[list[bool]]:
        return [[breakage is None for breakage in pattern] for pattern in pr.SAMPLE_PATTERNS.values()]

    def test_pass_at_k_matches_subset_enumeration(self, sampled: RunResults) -> None:
        bench = summarize_results(sampled).benchmarks[0]
        assert bench.samples_per_problem == pr.SAMPLES
        assert sorted(bench.pass_at_k) == [2, 4]
        for k, value in bench.pass_at_k.items():
            per_problem = []
            for row in self._correct():
                subsets = list(itertools.combinations(range(pr.SAMPLES), k))
                per_problem.append(sum(any(row[i] for i in subset) for subset in subsets) / len(subsets))
            assert value == pytest.approx(sum(per_problem) / len(per_problem))
        assert bench.pass_at_1 == pytest.approx(np.mean([sum(row) / pr.SAMPLES for row in self._correct()]))

    def test_acc_at_k_is_any_of_the_first_k(self, sampled: RunResults) -> None:
        bench = summarize_results(sampled).benchmarks[0]
        rows = self._correct()
        assert bench.acc_at_k == {k: sum(any(row[:k]) for row in rows) / len(rows) for k in (2, 4)}
        assert bench.acc_at_k == {2: 3 / 5, 4: 4 / 5}  # by hand from SAMPLE_PATTERNS

    def test_maj_at_k_by_hand(self, sampled: RunResults) -> None:
        # votes per problem (v = reference, w = wrong, - = abstains), first k:
        # 0: v v v v -> v    1: w v | w w -> w    2: w w | w v -> w    3: - w | - - -> w    4: v w | v - -> v
        bench = summarize_results(sampled).benchmarks[0]
        assert bench.maj_at_k == {2: 2 / 5, 4: 2 / 5}
        assert bench.maj_note == ""

    def test_compat_score_is_acc_at_samples(self, sampled: RunResults) -> None:
        bench = summarize_results(sampled).benchmarks[0]
        assert bench.compat.score_count == 4
        markdown = render_summary_markdown(summarize_results(sampled))
        assert "## Sampling metrics" in markdown and "| pass@4 |" not in markdown.split("## Sampling")[0]


class TestIntervals:
    def test_small_n_interval_is_wilson_and_large_n_the_bootstrap(self, broken_dir: Path) -> None:
        """Recompute per-problem correctness straight from samples.jsonl: ten problems get scipy's
        Wilson interval; the same scores repeated to 40 problems get the percentile bootstrap."""
        lines = [json.loads(line) for line in (broken_dir / "samples.jsonl").read_text().splitlines()]
        nl4opt_lines = sorted(
            (line for line in lines if line["benchmark"] == "nl4opt"),
            key=lambda line: int(line["problem_id"]),
        )
        scores = [1.0 if line["grade"]["verdict"] == "correct" else 0.0 for line in nl4opt_lines]
        assert scores == [0.0] * 7 + [1.0] * 3  # problems 0-6 broken, in id order
        store = RunStore(broken_dir)
        nl4opt = summarize(store.read_manifest(), store.iter_samples()).benchmarks[0]
        wilson = binomtest(3, pr.LIMIT).proportion_ci(confidence_level=0.95, method="wilson")
        assert nl4opt.small_n and nl4opt.interval_method == "wilson"
        assert (nl4opt.ci_low, nl4opt.ci_high) == pytest.approx((wilson.low, wilson.high), rel=1e-9)
        many = scores * 4
        forty = manifest("forty", [entry("toy", problems=40)])
        records = [
            sample(
                "toy", str(i), verdict=Verdict.CORRECT if score else Verdict.WRONG, predicted=1.0 + 1 - score
            )
            for i, score in enumerate(many)
        ]
        toy = summarize(forty, records).benchmarks[0]
        assert not toy.small_n and (toy.ci_low, toy.ci_high) == bootstrap_ci(many)
        assert (toy.ci_low, toy.ci_high) != wilson_ci(0.3, 40, confidence=0.95)
        scipy = bootstrap((np.array(many),), np.mean, n_resamples=10_000, method="percentile", random_state=1)
        low, high = toy.ci_low, toy.ci_high
        step = 1 / len(many)  # resampled means of forty 0/1 values move in steps of 0.025
        assert low == pytest.approx(scipy.confidence_interval.low, abs=step)
        assert high == pytest.approx(scipy.confidence_interval.high, abs=step)

    def test_stratified_macro_interval_matches_scipy(self) -> None:
        rng = np.random.default_rng(7)
        groups = [
            rng.binomial(1, p, size=n).astype(float)
            for p, n in ((0.3, 289), (0.6, 600), (0.8, 344), (0.5, 394))
        ]
        ours = stratified_bootstrap_ci(groups, settings=IntervalSettings(resamples=20_000))

        def macro(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
            return np.mean([sample.mean(axis=axis) for sample in samples], axis=0)

        theirs = bootstrap(
            tuple(groups), macro, n_resamples=20_000, method="percentile", paired=False, random_state=3
        ).confidence_interval
        assert ours.low == pytest.approx(theirs.low, abs=0.004)
        assert ours.high == pytest.approx(theirs.high, abs=0.004)

    def test_one_group_is_the_plain_bootstrap(self) -> None:
        values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75]
        assert stratified_bootstrap_ci([values], settings=IntervalSettings()) == bootstrap_ci(values)


class TestDenominators:
    def test_missing_samples_and_unseen_problems_count_as_failures(self) -> None:
        run = manifest("lossy", [entry("toy", problems=4)], samples=2)
        samples = [sample("toy", "1", 0), sample("toy", "1", 1), sample("toy", "10", 0)]  # "2" never stored
        summary = summarize(run, samples)
        bench = summary.benchmarks[0]
        assert bench.problems == 4
        assert bench.pass_at_1 == pytest.approx((1 + 0.5 + 0 + 0) / 4)
        assert (bench.stored_samples, bench.missing_samples) == (3, 5)
        assert bench.outcomes[Outcome.MISSING] == 5
        assert any("5 of 8 expected sample(s) are missing" in note for note in summary.notes)
        assert "‡" in render_summary_markdown(summary)

    @pytest.mark.parametrize(
        ("backend", "path", "says", "never"),
        [
            (
                "openai",
                Path("results/lossy"),
                "continue the run to fill them: `trex-eval run --resume results/lossy`",
                "",
            ),
            ("replay", None, "the graded completions hold none for them", "resume"),
            # A serve epoch: the trainer fills its slots, nothing resumes it (issue 46).
            (
                REWARD_LOG_BACKEND,
                Path("log/epoch-0001"),
                "set --per-problem to the trainer's group size",
                "--resume",
            ),
        ],
    )
    def test_the_missing_samples_note_says_what_fills_them_for_what_wrote_the_run(
        self, backend: str, path: Path | None, says: str, never: str
    ) -> None:
        run = manifest("lossy", [entry("toy", problems=2)], samples=2)
        model = run.settings.model.model_copy(update={"backend": backend})
        run = run.model_copy(update={"settings": run.settings.model_copy(update={"model": model})})
        summary = summarize(run, [sample("toy", "1", 0), sample("toy", "2", 0)], path=path)
        (note,) = (note for note in summary.notes if "2 of 4 expected sample(s) are missing" in note)
        assert says in note
        assert not never or never not in note

    def test_problems_are_in_natural_id_order(self) -> None:
        run = manifest("order", [entry("toy", problems=3)])
        arranged = arrange(run, [sample("toy", "P10"), sample("toy", "P9"), sample("toy", "P2")])
        assert [problem.problem_id for problem in arranged.benchmarks[0].problems] == ["P2", "P9", "P10"]

    @pytest.mark.parametrize(
        ("records", "message"),
        [
            ([sample("other", "1")], "does not list"),
            ([sample("toy", "1", 2)], "index 2"),
            ([sample("toy", "1"), sample("toy", "2"), sample("toy", "3")], "3 distinct problems, but 2"),
        ],
    )
    def test_samples_that_do_not_belong_are_refused(self, records: list, message: str) -> None:
        with pytest.raises(StoreError, match=message):
            summarize(manifest("bad", [entry("toy", problems=2)], samples=2), records)

    def test_maj_is_not_computed_without_an_optimal_reference(self) -> None:
        from trex_eval.records import ObjectiveEvidence, SolveStatus

        record = sample("toy", "1", 0, verdict=Verdict.WRONG, predicted=1.0)
        infeasible = ObjectiveEvidence(
            predicted=None,
            predicted_status=SolveStatus.OPTIMAL,
            reference=None,
            reference_status=SolveStatus.INFEASIBLE,
        )
        record = record.model_copy(update={"grade": record.grade.model_copy(update={"evidence": infeasible})})
        bench = summarize(manifest("m", [entry("toy", problems=1)], samples=2), [record]).benchmarks[0]
        assert bench.maj_at_k == {} and "no optimum" in bench.maj_note
