"""Confidence-interval settings shared by every report, and the stratified bootstrap of a macro
mean. Pure (numpy only).

Per-benchmark intervals come from :func:`trex_eval.metrics.bootstrap_ci` and
:func:`trex_eval.metrics.paired_bootstrap_diff`. A macro mean (the unweighted mean of
per-benchmark means) needs a *stratified* bootstrap: each benchmark's problems are resampled
within that benchmark, so every resample keeps every benchmark and its size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
from pydantic import Field

from trex_eval.metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, Interval
from trex_eval.records import Record

_CHUNK = 1_000


class IntervalSettings(Record):
    """How every confidence interval in a report is computed: a percentile bootstrap over
    problems with ``resamples`` resamples from a generator seeded with ``seed`` (defaults:
    95 %, 10 000, 0), so the same runs always print the same intervals."""

    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    resamples: int = Field(default=DEFAULT_RESAMPLES, ge=1)
    seed: int = DEFAULT_SEED

    def describe(self) -> str:
        """One phrase naming the interval, e.g. ``"95% percentile bootstrap over problems
        (10000 resamples, seed 0)"``."""
        return (
            f"{self.confidence:.0%} percentile bootstrap over problems "
            f"({self.resamples} resamples, seed {self.seed})"
        )

    def short(self) -> str:
        """The interval in a few words for terminal captions: ``"95% bootstrap"``."""
        return f"{self.confidence:.0%} bootstrap"


SMALL_N = 30
"""Below this many problems a percentile bootstrap understates the uncertainty (all-correct or
all-wrong samples give ``[0, 0]`` or ``[1, 1]``): per-benchmark intervals use :func:`wilson_ci`."""


def wilson_ci(score: float, n: int, *, confidence: float) -> Interval:
    """Wilson score interval of a proportion ``score`` observed over ``n`` problems: never of zero
    width (5 of 5 correct at 95 % gives ``[0.566, 1.0]``), and inside ``[0, 1]``.

    Raises:
        ValueError: ``n < 1`` or ``score`` outside ``[0, 1]``.
    """
    if n < 1 or not 0.0 <= score <= 1.0:
        raise ValueError(f"Wilson interval of score {score} over {n} problems")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    denominator = 1.0 + z * z / n
    centre = (score + z * z / (2 * n)) / denominator
    half = z * math.sqrt(score * (1.0 - score) / n + z * z / (4 * n * n)) / denominator
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def stratified_bootstrap_ci(groups: Sequence[Sequence[float]], *, settings: IntervalSettings) -> Interval:
    """Percentile-bootstrap interval of the mean of group means (a macro mean).

    Each resample draws, for every group in order, ``len(group)`` values with replacement from
    that group alone, and averages the group means with equal weight. With a single group this
    is exactly :func:`trex_eval.metrics.bootstrap_ci` (same generator, same draws).

    Raises:
        ValueError: no groups, or an empty group.
    """
    if not groups:
        raise ValueError("stratified bootstrap of no groups")
    arrays = [np.asarray(group, dtype=np.float64) for group in groups]
    if any(array.ndim != 1 or array.size == 0 for array in arrays):
        raise ValueError("every group needs at least one value")
    generator = np.random.default_rng(settings.seed)
    means: npt.NDArray[np.float64] = np.zeros(settings.resamples, dtype=np.float64)
    # Same chunking as trex_eval.metrics: memory stays bounded and one group draws identically.
    for start in range(0, settings.resamples, _CHUNK):
        stop = min(start + _CHUNK, settings.resamples)
        for array in arrays:
            indices = generator.integers(0, array.size, size=(stop - start, array.size))
            means[start:stop] += array[indices].mean(axis=1)
    means /= len(arrays)
    tail = (1.0 - settings.confidence) / 2.0
    low, high = (float(q) for q in np.quantile(means, [tail, 1.0 - tail]))
    return Interval(low, high)
