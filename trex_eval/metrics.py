"""Benchmark metrics computed from stored per-sample outcomes. Pure (numpy only, no I/O).

Conventions shared by every function here:

* A benchmark's outcomes are one sequence per **problem**, holding that problem's samples in
  **sample order** (sample ``i`` was generated with seed ``seed + i``). The denominator is
  always the number of problems given: a problem without samples is an error, never skipped.
* ``pass@1`` is the mean over problems of the fraction of correct samples; with one sample per
  problem it is plain accuracy.
* ``pass@k`` is the unbiased estimator of Chen et al. (2021) from ``n ≥ k`` samples of which
  ``c`` are correct: ``1 − C(n−c, k) / C(n, k)``.
* ``acc@k`` is the reference T-Rex harness's metric (reference-harness §6.2): a problem counts
  if **any of its first k** samples is correct. The harness stops sampling at the first success,
  so a problem may hold fewer than ``k`` samples only if one of them is correct.
* ``maj@k`` votes over the objective values of the first ``k`` samples.
* Benchmark averages are **macro** means (each benchmark weighs the same), never pooled over
  problems; confidence intervals are percentile bootstraps over problems.

Invalid arguments (``k`` out of range, empty inputs, mismatched lengths) raise ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
_BOOTSTRAP_CHUNK = 1_000


# --------------------------------------------------------------------------- pass@k family


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased probability that at least one of ``k`` samples drawn without replacement from
    ``n`` (of which ``c`` are correct) is correct: ``1 − C(n−c, k) / C(n, k)``.

    Computed as ``1 − Π_{i=n−c+1}^{n} (1 − k/i)``, which never forms the huge binomials.

    Raises:
        ValueError: unless ``0 ≤ c ≤ n`` and ``1 ≤ k ≤ n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (got n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def mean_pass_at_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """Mean over problems of :func:`pass_at_k` from each problem's samples.

    Raises:
        ValueError: no problems, or a problem with fewer than ``k`` samples.
    """
    _require_problems(outcomes)
    return math.fsum(pass_at_k(len(samples), sum(samples), k) for samples in outcomes) / len(outcomes)


def pass_at_1(outcomes: Sequence[Sequence[bool]]) -> float:
    """Mean over problems of the fraction of correct samples (``mean_pass_at_k(outcomes, 1)``)."""
    return mean_pass_at_k(outcomes, 1)


def acc_at_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """The reference harness's acc@k: the fraction of problems with a correct sample among their
    first ``k`` (samples in sample order, as generated with seeds ``42 + i``).

    Raises:
        ValueError: no problems, ``k < 1``, or a problem holding fewer than ``k`` samples none
            of which is correct (early stopping only ever ends a problem at a success).
    """
    _require_problems(outcomes)
    if k < 1:
        raise ValueError(f"acc@k needs k >= 1 (got {k})")
    solved = 0
    for index, samples in enumerate(outcomes):
        first = list(samples[:k])
        if any(first):
            solved += 1
        elif len(first) < k:
            raise ValueError(f"problem {index}: {len(first)} samples, none correct; acc@{k} needs {k}")
    return solved / len(outcomes)


# --------------------------------------------------------------------------- majority vote


def majority_value(values: Sequence[float | None], *, rtol: float = 1e-4, atol: float = 1e-6) -> float | None:
    """The objective value most samples agree on, or ``None`` when no sample gave a finite value.

    Values are clustered greedily in sample order: a value joins the first cluster whose first
    member ``r`` it matches (``|v − r| ≤ atol + rtol·|r|``, the ``strict`` rule's test), else it
    starts a new cluster. The largest cluster wins; among equally large clusters the one started
    earliest wins. The result is the winning cluster's first member (an observed value).
    ``None`` and non-finite values abstain.
    """
    clusters: list[tuple[float, int]] = []
    for value in values:
        if value is None or not math.isfinite(value):
            continue
        for index, (first, size) in enumerate(clusters):
            if abs(value - first) <= atol + rtol * abs(first):
                clusters[index] = (first, size + 1)
                break
        else:
            clusters.append((value, 1))
    if not clusters:
        return None
    best = max(range(len(clusters)), key=lambda index: (clusters[index][1], -index))
    return clusters[best][0]


def maj_at_k(
    values: Sequence[Sequence[float | None]],
    references: Sequence[float],
    k: int,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-6,
) -> float:
    """Fraction of problems whose :func:`majority_value` over the first ``k`` samples matches the
    reference: ``|maj − ref| ≤ atol + rtol·|ref|`` (defaults: the ``strict`` rule). A problem
    where every sample abstains counts as wrong.

    Raises:
        ValueError: no problems, ``k < 1``, or ``values`` and ``references`` differ in length.
    """
    _require_problems(values)
    if k < 1:
        raise ValueError(f"maj@k needs k >= 1 (got {k})")
    if len(values) != len(references):
        raise ValueError(f"{len(values)} problems but {len(references)} references")
    hits = 0
    for samples, reference in zip(values, references, strict=True):
        winner = majority_value(samples[:k], rtol=rtol, atol=atol)
        if winner is not None and abs(winner - reference) <= atol + rtol * abs(reference):
            hits += 1
    return hits / len(values)


# --------------------------------------------------------------------------- aggregation


def macro_average(per_benchmark: Mapping[str, float]) -> float:
    """Macro mean: the unweighted mean of per-benchmark scores (each benchmark weighs the same,
    whatever its number of problems). Reports label it "macro average".

    Raises:
        ValueError: ``per_benchmark`` is empty.
    """
    if not per_benchmark:
        raise ValueError("macro average of no benchmarks")
    return math.fsum(per_benchmark.values()) / len(per_benchmark)


# --------------------------------------------------------------------------- uncertainty


class Interval(NamedTuple):
    """A confidence interval ``[low, high]``."""

    low: float
    high: float


class PairedDifference(NamedTuple):
    """Mean of ``a − b`` over problems with its bootstrap confidence interval."""

    difference: float
    low: float
    high: float


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Percentile-bootstrap confidence interval of the mean of per-problem ``values``.

    Problems are resampled with replacement ``n_resamples`` times (default 10 000) from a
    ``numpy`` generator seeded with ``seed`` (default 0), so the interval is reproducible; the
    bounds are the ``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles (linear
    interpolation) of the resampled means.

    Raises:
        ValueError: empty ``values``, ``confidence`` outside (0, 1) or ``n_resamples < 1``.
    """
    data = _as_array(values)
    means = _bootstrap_means(data, confidence=confidence, n_resamples=n_resamples, seed=seed)
    low, high = _percentiles(means, confidence)
    return Interval(low, high)


def paired_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedDifference:
    """Mean of ``a − b`` with a paired percentile-bootstrap interval: problems are resampled
    jointly, so ``a[i]`` and ``b[i]`` (the same problem under two systems) stay together.

    Raises:
        ValueError: ``a`` and ``b`` differ in length, are empty, or the bootstrap settings are
            invalid (see :func:`bootstrap_ci`).
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} vs {len(b)})")
    differences = _as_array(a) - _as_array(b)
    means = _bootstrap_means(differences, confidence=confidence, n_resamples=n_resamples, seed=seed)
    low, high = _percentiles(means, confidence)
    return PairedDifference(float(differences.mean()), low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value for paired binary outcomes.

    ``b`` and ``c`` count the discordant problems (solved by the first system only, by the
    second only). Under the null hypothesis ``b ~ Binomial(b + c, 1/2)``; the p-value is
    ``min(1, 2·P(X ≤ min(b, c)))``, computed in exact integer arithmetic. ``b = c = 0`` gives 1.

    Raises:
        ValueError: a negative count.
    """
    if b < 0 or c < 0:
        raise ValueError(f"McNemar counts must be >= 0 (got b={b}, c={c})")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / (1 << n))


# --------------------------------------------------------------------------- helpers


def _require_problems(outcomes: Sequence[Sequence[object]]) -> None:
    if not outcomes:
        raise ValueError("no problems")
    empty = [index for index, samples in enumerate(outcomes) if not samples]
    if empty:
        raise ValueError(f"problems without samples: {empty[:10]}")


def _as_array(values: Sequence[float]) -> npt.NDArray[np.float64]:
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1 or data.size == 0:
        raise ValueError("expected a non-empty one-dimensional sequence of numbers")
    return data


def _bootstrap_means(
    data: npt.NDArray[np.float64], *, confidence: float, n_resamples: int, seed: int
) -> npt.NDArray[np.float64]:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1) (got {confidence})")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1 (got {n_resamples})")
    generator = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    # Chunks bound memory at _BOOTSTRAP_CHUNK x len(data) indices whatever n_resamples is.
    for start in range(0, n_resamples, _BOOTSTRAP_CHUNK):
        stop = min(start + _BOOTSTRAP_CHUNK, n_resamples)
        indices = generator.integers(0, data.size, size=(stop - start, data.size))
        means[start:stop] = data[indices].mean(axis=1)
    return means


def _percentiles(means: npt.NDArray[np.float64], confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = (float(q) for q in np.quantile(means, [tail, 1.0 - tail]))
    return low, high
