"""Metrics against independent calculations: brute-force subset enumeration and exact binomials
for pass@k, scipy/statsmodels for McNemar, the exact binomial bootstrap distribution of a mean
of 0/1 outcomes, and hand-worked small cases."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom, binomtest
from statsmodels.stats.contingency_tables import mcnemar

from trex_eval.metrics import (
    acc_at_k,
    bootstrap_ci,
    macro_average,
    maj_at_k,
    majority_value,
    mcnemar_exact,
    mean_pass_at_k,
    paired_bootstrap_diff,
    pass_at_1,
    pass_at_k,
)

T, F = True, False


class TestPassAtK:
    @pytest.mark.parametrize("n", range(1, 8))
    def test_matches_subset_enumeration(self, n: int) -> None:
        for c in range(n + 1):
            samples = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                hits = sum(any(samples[i] for i in subset) for subset in subsets)
                assert pass_at_k(n, c, k) == pytest.approx(hits / len(subsets), abs=1e-12)

    def test_matches_exact_binomials_for_large_n(self) -> None:
        for n, c, k in [(200, 3, 10), (200, 150, 16), (1000, 1, 100), (1000, 999, 1)]:
            exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
            assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12)

    def test_hand_worked(self) -> None:
        assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 − C(3,2)/C(4,2) = 1 − 3/6
        assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 − C(3,2)/C(5,2) = 1 − 3/10
        assert pass_at_k(10, 0, 5) == 0.0
        assert pass_at_k(10, 6, 5) == 1.0  # n − c < k: every draw holds a correct sample

    @pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 1, 0), (4, 1, 5)])
    def test_invalid(self, n: int, c: int, k: int) -> None:
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)

    def test_pass_at_1_is_the_mean_of_per_problem_fractions(self) -> None:
        assert pass_at_1([[T, F], [T, T, T, F]]) == pytest.approx((1 / 2 + 3 / 4) / 2)
        assert pass_at_1([[T], [F], [T]]) == pytest.approx(2 / 3)

    def test_mean_pass_at_k(self) -> None:
        outcomes = [[T, F, F, F], [F, F, F, F], [T, T, F, F]]
        expected = (pass_at_k(4, 1, 2) + 0.0 + pass_at_k(4, 2, 2)) / 3  # (0.5 + 0 + 5/6) / 3
        assert mean_pass_at_k(outcomes, 2) == pytest.approx(expected)
        assert expected == pytest.approx((0.5 + 5 / 6) / 3)

    def test_every_problem_counts(self) -> None:
        with pytest.raises(ValueError, match="without samples"):
            pass_at_1([[T], []])
        with pytest.raises(ValueError, match="no problems"):
            pass_at_1([])
        with pytest.raises(ValueError):
            mean_pass_at_k([[T, F]], 3)


class TestAccAtK:
    def test_any_of_the_first_k(self) -> None:
        outcomes = [[F, F, T, F], [T], [F, F, F, F]]
        assert acc_at_k(outcomes, 4) == pytest.approx(2 / 3)
        assert acc_at_k(outcomes, 2) == pytest.approx(1 / 3)
        assert acc_at_k(outcomes, 1) == pytest.approx(1 / 3)

    def test_early_stop_leaves_fewer_samples_only_after_a_success(self) -> None:
        assert acc_at_k([[F, T]], 16) == 1.0
        with pytest.raises(ValueError, match="none correct"):
            acc_at_k([[F, F]], 4)

    def test_k_must_be_positive(self) -> None:
        with pytest.raises(ValueError):
            acc_at_k([[T]], 0)


class TestMajority:
    def test_largest_cluster_wins(self) -> None:
        assert majority_value([1.0, 2.0, 1.00001, 2.0, 2.0]) == 2.0

    def test_tolerance_aware_clustering(self) -> None:
        # |100.005 − 100| = 0.005 ≤ 1e-6 + 1e-4·100: one cluster of two, represented by 100.0.
        assert majority_value([200.0, 100.0, 100.005]) == 100.0

    def test_tie_goes_to_the_earliest_cluster(self) -> None:
        assert majority_value([3.0, 5.0, 5.0, 3.0]) == 3.0

    def test_abstentions(self) -> None:
        assert majority_value([None, math.nan, 7.0, None]) == 7.0
        assert majority_value([None, math.inf]) is None

    def test_maj_at_k(self) -> None:
        values: list[list[float | None]] = [[8.0, 8.0, 5.0], [5.0, 5.0, 8.0], [None, None, 9.0], [None] * 3]
        references = [8.0, 8.0, 9.0, 1.0]
        assert maj_at_k(values, references, 3) == pytest.approx(2 / 4)
        assert maj_at_k(values, references, 1) == pytest.approx(1 / 4)

    def test_maj_at_k_lengths(self) -> None:
        with pytest.raises(ValueError, match="references"):
            maj_at_k([[1.0]], [1.0, 2.0], 1)


class TestAggregation:
    def test_macro_average_weighs_benchmarks_equally(self) -> None:
        # 1/2 on a 10-problem benchmark and 1.0 on a 1000-problem one: macro 0.75 (pooled ≈ 0.995).
        assert macro_average({"small": 0.5, "large": 1.0}) == pytest.approx(0.75)

    def test_macro_average_of_nothing(self) -> None:
        with pytest.raises(ValueError):
            macro_average({})


class TestBootstrap:
    def test_matches_the_exact_binomial_bootstrap_distribution(self) -> None:
        # For 0/1 outcomes with mean p, the resampled mean is exactly Binomial(n, p) / n.
        n, correct = 200, 60
        values = [1.0] * correct + [0.0] * (n - correct)
        low, high = bootstrap_ci(values, n_resamples=20_000, seed=7)
        exact_low = binom.ppf(0.025, n, correct / n) / n
        exact_high = binom.ppf(0.975, n, correct / n) / n
        assert abs(low - exact_low) <= 1 / n + 1e-12
        assert abs(high - exact_high) <= 1 / n + 1e-12

    def test_reproducible_and_seeded(self) -> None:
        values = list(np.linspace(0.0, 1.0, 37))
        assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
        assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)

    def test_degenerate_and_invalid(self) -> None:
        assert bootstrap_ci([0.5] * 10) == (0.5, 0.5)
        with pytest.raises(ValueError):
            bootstrap_ci([])
        with pytest.raises(ValueError):
            bootstrap_ci([1.0], confidence=1.0)
        with pytest.raises(ValueError):
            bootstrap_ci([1.0], n_resamples=0)

    def test_paired_difference(self) -> None:
        rng = np.random.default_rng(11)
        a = (rng.random(400) < 0.6).astype(float)
        b = (rng.random(400) < 0.5).astype(float)
        result = paired_bootstrap_diff(list(a), list(b), n_resamples=20_000)
        differences = a - b
        assert result.difference == pytest.approx(differences.mean())
        # Normal approximation of the mean of the per-problem differences.
        half_width = 1.959964 * differences.std(ddof=0) / math.sqrt(differences.size)
        assert result.low == pytest.approx(differences.mean() - half_width, abs=0.01)
        assert result.high == pytest.approx(differences.mean() + half_width, abs=0.01)

    def test_paired_identical_systems(self) -> None:
        assert tuple(paired_bootstrap_diff([1.0, 0.0, 1.0], [1.0, 0.0, 1.0])) == (0.0, 0.0, 0.0)

    def test_paired_lengths(self) -> None:
        with pytest.raises(ValueError, match="length"):
            paired_bootstrap_diff([1.0], [1.0, 0.0])


class TestMcNemar:
    @pytest.mark.parametrize(("b", "c"), [(0, 5), (5, 0), (3, 4), (10, 2), (1, 30), (25, 25), (60, 41)])
    def test_matches_scipy_and_statsmodels(self, b: int, c: int) -> None:
        expected = binomtest(min(b, c), b + c, 0.5).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)
        table = [[7, b], [c, 9]]
        assert mcnemar_exact(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)

    def test_hand_worked(self) -> None:
        assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
        assert mcnemar_exact(0, 0) == 1.0

    def test_large_counts_stay_exact(self) -> None:
        assert mcnemar_exact(1000, 1100) == pytest.approx(binomtest(1000, 2100, 0.5).pvalue, rel=1e-9)

    def test_negative(self) -> None:
        with pytest.raises(ValueError):
            mcnemar_exact(-1, 2)
