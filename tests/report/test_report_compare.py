"""Paired comparisons of pipeline-made runs (reference vs deliberately broken completions): flipped
problems from the construction, McNemar against statsmodels, the paired bootstrap against scipy."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pipeline_runs as pr
import pytest
from records_factory import entry, manifest, sample
from scipy.stats import bootstrap
from statsmodels.stats.contingency_tables import mcnemar

from trex_eval.errors import ConfigError
from trex_eval.records import Verdict
from trex_eval.report import (
    ComparisonSet,
    IntervalSettings,
    RunResults,
    arrange,
    compare_runs,
    comparison_frame,
    load_run,
    render_comparison_markdown,
    select_baseline,
    write_comparison_csv,
)
from trex_eval.report.intervals import stratified_bootstrap_ci


@pytest.fixture(scope="module")
def result(broken: RunResults, reference: RunResults) -> ComparisonSet:
    return compare_runs([broken, reference], baseline=0)


def _statsmodels_p(won: int, lost: int, both: int, neither: int) -> float:
    table = [[both, lost], [won, neither]]  # rows: candidate right / wrong; columns: baseline right / wrong
    return float(mcnemar(table, exact=True).pvalue)


class TestReferenceAgainstBroken:
    def test_flipped_problems_are_exactly_the_broken_ones(self, result: ComparisonSet) -> None:
        (comparison,) = result.comparisons
        assert comparison.baseline.run_id == "broken" and comparison.candidate.run_id == "reference"
        for pair in comparison.benchmarks:
            broken_ids = set(pr.BREAKAGES[pair.benchmark])
            assert set(pair.gained) == broken_ids and pair.dropped == ()
            assert (pair.won, pair.lost, pair.both, pair.neither) == (
                len(broken_ids),
                0,
                pr.LIMIT - len(broken_ids),
                0,
            )
            assert pair.difference == pytest.approx(len(broken_ids) / pr.LIMIT)
        assert comparison.benchmarks[0].gained == ("0", "1", "2", "3", "4", "5", "6")  # natural id order

    def test_mcnemar_matches_statsmodels(self, result: ComparisonSet) -> None:
        (comparison,) = result.comparisons
        for pair in comparison.benchmarks:
            assert pair.mcnemar_p == pytest.approx(
                _statsmodels_p(pair.won, pair.lost, pair.both, pair.neither)
            )
        overall = comparison.overall
        assert overall is not None
        assert (overall.won, overall.lost, overall.problems) == (12, 0, 40)
        assert overall.mcnemar_p == pytest.approx(_statsmodels_p(12, 0, 28, 0))
        assert overall.mcnemar_p == pytest.approx(2 / 2**12)  # two-sided exact binomial tail, by hand

    def test_paired_interval_matches_scipy(self, broken: RunResults, reference: RunResults) -> None:
        result = compare_runs([broken, reference], interval=IntervalSettings(resamples=20_000))
        pair = result.comparisons[0].benchmarks[0]
        base = np.array(broken.benchmark("nl4opt").problem_scores())
        cand = np.array(reference.benchmark("nl4opt").problem_scores())
        theirs = bootstrap(
            (cand, base),
            lambda c, b, axis=-1: (c - b).mean(axis=axis),
            paired=True,
            n_resamples=20_000,
            method="percentile",
            random_state=5,
        ).confidence_interval
        step = 1 / pr.LIMIT
        assert pair.ci_low == pytest.approx(theirs.low, abs=step)
        assert pair.ci_high == pytest.approx(theirs.high, abs=step)
        assert pair.ci_low <= pair.difference <= pair.ci_high

    def test_overall_is_the_macro_difference_with_a_stratified_interval(
        self, result: ComparisonSet, broken: RunResults, reference: RunResults
    ) -> None:
        overall = result.comparisons[0].overall
        assert overall is not None
        assert overall.difference == pytest.approx(1.0 - 0.7)
        differences = [
            list(
                np.subtract(
                    reference.benchmark(name).problem_scores(), broken.benchmark(name).problem_scores()
                )
            )
            for name in pr.BENCHMARKS
        ]
        assert (overall.ci_low, overall.ci_high) == stratified_bootstrap_ci(
            differences, settings=IntervalSettings()
        )

    def test_markdown_and_csv(self, result: ComparisonSet, tmp_path: Path) -> None:
        markdown = render_comparison_markdown(result)
        assert "| nl4opt | 10 | 30.00 | 100.00 | +70.00 [" in markdown
        assert "- nl4opt gained (7): 0, 1, 2, 3, 4, 5, 6" in markdown
        assert "| **overall** (macro) | 40 | 70.00 | 100.00 | +30.00 [" in markdown
        path = tmp_path / "compare.csv"
        write_comparison_csv(result, path)
        read = pd.read_csv(path, dtype={"gained_ids": str, "dropped_ids": str})
        frame = comparison_frame(result)
        assert list(read.columns) == list(frame.columns)
        assert list(read["benchmark"]) == [*pr.BENCHMARKS, "overall"]
        nl4opt = read.iloc[0]
        assert (
            nl4opt["diff_pp"] == pytest.approx(70.0)
            and nl4opt["won"] == 7
            and nl4opt["gained_ids"] == "0 1 2 3 4 5 6"
        )
        assert read.iloc[-1]["mcnemar_p"] == pytest.approx(2 / 2**12)
        for column in ("diff_pp", "ci95_low_pp", "ci95_high_pp", "mcnemar_p"):
            assert list(read[column]) == list(frame[column])


def test_three_runs_against_one_baseline(broken: RunResults, reference: RunResults, compat_dir: Path) -> None:
    """base / SFT / CPT+SFT shape: every other run against the baseline, each labelled uniquely."""
    compat = load_run(compat_dir)
    result = compare_runs([reference, broken, compat], baseline=1)
    assert result.baseline_label == "broken"
    assert [c.candidate_label for c in result.comparisons] == ["reference", "reference · trex-compat"]
    markdown = render_comparison_markdown(result)
    assert markdown.count("\n## ") == 2
    compat_rules = {bench.name: bench.rule for bench in compat.manifest.settings.benchmarks}
    for pair in result.comparisons[1].benchmarks:
        assert pair.candidate_rule == compat_rules[pair.benchmark]
    assert len(comparison_frame(result)) == 2 * (len(pr.BENCHMARKS) + 1)


class TestPairingRules:
    def test_other_selections_are_refused(self) -> None:
        a = arrange(manifest("a", [entry("toy", problems=2)]), [sample("toy", "1")])
        b = arrange(manifest("b", [entry("toy", problems=3)]), [sample("toy", "1")])
        with pytest.raises(ConfigError, match="different problem selections"):
            compare_runs([a, b])

    def test_other_data_is_refused(self) -> None:
        a = arrange(manifest("a", [entry("toy", problems=2, sha256="c" * 64)]), [])
        b = arrange(manifest("b", [entry("toy", problems=2, sha256="d" * 64)]), [])
        with pytest.raises(ConfigError, match="different data"):
            compare_runs([a, b])

    def test_other_rules_are_compared_with_a_warning(self) -> None:
        a = arrange(manifest("a", [entry("toy", problems=3)]), [sample("toy", "1"), sample("toy", "2")])
        b = arrange(
            manifest("b", [entry("toy", problems=3, rule="trex-compat@1")]),
            [sample("toy", "1", verdict=Verdict.WRONG), sample("toy", "3")],
        )
        (comparison,) = compare_runs([a, b]).comparisons
        (pair,) = comparison.benchmarks
        # 1: a only; 2: a only (b never stored it); 3: b only (a never stored it)
        assert (pair.won, pair.lost, pair.gained, pair.dropped) == (1, 2, ("3",), ("1", "2"))
        assert (pair.baseline_rule, pair.candidate_rule) == ("strict@3", "trex-compat@1")
        assert any("different rules" in warning for warning in comparison.warnings)

    def test_unseen_problems_are_concordant_failures(self) -> None:
        a = arrange(manifest("a", [entry("toy", problems=5)]), [sample("toy", "1")])
        b = arrange(manifest("b", [entry("toy", problems=5)]), [sample("toy", "1")])
        (pair,) = compare_runs([a, b]).comparisons[0].benchmarks
        assert (pair.both, pair.neither, pair.problems, pair.mcnemar_p) == (1, 4, 5, 1.0)

    def test_benchmarks_in_one_run_only_are_named(self) -> None:
        a = arrange(manifest("a", [entry("toy", problems=1), entry("extra", problems=1)]), [])
        b = arrange(manifest("b", [entry("toy", problems=1)]), [])
        comparison = compare_runs([a, b]).comparisons[0]
        assert [pair.benchmark for pair in comparison.benchmarks] == ["toy"]
        assert "not compared, only in run a: extra" in comparison.warnings

    def test_baseline_selection(self, broken: RunResults, reference: RunResults) -> None:
        runs = [broken, reference]
        assert select_baseline(runs, "reference") == 1
        assert reference.path is not None and select_baseline(runs, reference.path) == 1
        with pytest.raises(ConfigError, match="matches no run"):
            select_baseline(runs, "nowhere")
        with pytest.raises(ConfigError, match="at least two"):
            compare_runs([broken])
        with pytest.raises(ConfigError, match="out of range"):
            compare_runs(runs, baseline=2)


@pytest.mark.parametrize("width", [80, 200])
def test_the_terminal_table_uses_the_terminal_width(result: ComparisonSet, width: int) -> None:
    from rich.console import Console

    from trex_eval.report.terminal import comparison_table

    label = "deepseek-v4-flash-or · trex-compat · prompts or-r1 · 4-shot · 8 samples"  # a long label
    (comparison,) = result.comparisons
    labelled = result.model_copy(
        update={"comparisons": (comparison.model_copy(update={"candidate_label": label}),)}
    )
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(comparison_table(labelled))
    lines = console.export_text().splitlines()
    header = next(line for line in lines if "Δ [CI]" in line)
    assert "benchmark" in header  # the header never breaks inside a word ("benchmar" / "k")
    if width == 200:  # a wide terminal keeps the run's label on one line
        assert any(label in line for line in lines)
    assert max(len(line) for line in lines) <= width
