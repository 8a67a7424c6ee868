"""The question similarity of ``benchmarks diff``: the fast ratio is difflib's to the last bit, on
random strings built to tie and on real reworded benchmark questions, and the LCS bound is the
longest common subsequence, never under the ratio."""

from __future__ import annotations

import difflib
import random
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.diff import normalise
from trex_eval.benchmarks.similarity import SMALL_CELLS, lcs_bound, sequence_ratio


def _difflib(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _lcs(a: str, b: str) -> int:
    row = [0] * (len(b) + 1)
    for char in a:
        diagonal = 0
        for j, other in enumerate(b, start=1):
            diagonal, row[j] = row[j], diagonal + 1 if char == other else max(row[j], row[j - 1])
    return row[-1]


def _random_text(rng: random.Random, length: int) -> str:
    # Few letters: many equally long blocks, so the tie-breaking of difflib is exercised.
    return "".join(rng.choice("ab c") for _ in range(length))


def test_the_ratio_is_difflibs_on_strings_long_enough_for_the_array_path() -> None:
    rng = random.Random(7)
    for _ in range(60):
        a, b = _random_text(rng, rng.randint(200, 700)), _random_text(rng, rng.randint(200, 700))
        assert len(a) * len(b) >= SMALL_CELLS
        if rng.random() < 0.5:  # a reworded copy: long shared blocks, edits between them
            cut = rng.randint(0, len(a))
            b = a[:cut] + _random_text(rng, 30) + a[cut + 15 :]
        assert sequence_ratio(a, b) == _difflib(a, b)


def test_the_ratio_is_difflibs_on_reworded_benchmark_questions(data_dir: Path) -> None:
    a = [normalise(p.question) for p in load_benchmark("industryor", data_dir=data_dir).problems]
    b = [normalise(p.question) for p in load_benchmark("industryor@sirl-fixedv2", data_dir=data_dir).problems]
    pairs = [(a[i], b[j]) for i in range(0, 40, 4) for j in (i, i + 1)]
    assert sum(len(x) * len(y) >= SMALL_CELLS for x, y in pairs) >= 15
    for x, y in pairs:
        assert sequence_ratio(x, y) == _difflib(x, y)


@pytest.mark.parametrize(("a", "b"), [("", ""), ("", "abc"), ("abc", "abc"), ("abcbdab", "bdcaba")])
def test_the_lcs_bound_of_edge_cases(a: str, b: str) -> None:
    expected = 1.0 if not a and not b else 2 * _lcs(a, b) / (len(a) + len(b))
    assert lcs_bound(a, b) == expected


def test_the_lcs_bound_is_the_lcs_and_never_under_the_ratio() -> None:
    rng = random.Random(3)
    for _ in range(300):
        a, b = _random_text(rng, rng.randint(0, 60)), _random_text(rng, rng.randint(0, 60))
        assert lcs_bound(a, b) == (2 * _lcs(a, b) / (len(a) + len(b)) if a or b else 1.0)
        assert lcs_bound(a, b) >= _difflib(a, b)
