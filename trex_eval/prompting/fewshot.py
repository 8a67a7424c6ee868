"""Deterministic few-shot selection that never shows the model its own problem.

Strategies (both reproduce the reference harness's arithmetic, reference-harness.md §6.3):

``random``
    Shuffle the eligible pool with ``random.Random(stable_int(f"{seed}:{problem_id}"))`` and take
    the first ``k``.
``similar``
    BM25 (k1 = 1.2, b = 0.75) of the current question against each candidate's text, ties broken
    by ``stable_int(f"{seed}:{problem_id}:{example_id}")``.

Eligibility is where trex-eval differs on purpose: the reference excludes only the item's own id,
so the *other wording of the same instance* (its ORGEval twin: same data, same reference LP) is
among the 5 "similar" shots for 374/394 items. Here a candidate is excluded when it is the item
itself, shares its ``twin_group``, or is a near-duplicate question (token Jaccard >=
``near_duplicate_jaccard``, default 0.8: OptiBench has 140 such pairs). ``exclude_twins=False``
exists only to reproduce the reference's leak in tests. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trex_eval.errors import ConfigError
from trex_eval.records import FewShotStrategy

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*|\d+(?:\.\d+)?")
_STOP_WORDS = frozenset(
    "a an and are as at be by for from in is it of on or that the this to with".split()  # noqa: SIM905
)
_K1 = 1.2
_B = 0.75


@dataclass(frozen=True)
class PoolItem:
    """A candidate example.

    ``text`` is what similarity is computed against (the reference uses the candidate's rendered
    prompt); ``question`` is used for the near-duplicate test; ``user``/``assistant`` are shown.
    """

    problem_id: str
    question: str
    text: str
    user: str
    assistant: str
    twin_group: str | None = None


def stable_int(text: str) -> int:
    """First 64 bits of sha256(text) as an int (the reference's seed derivation)."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16)


def tokens(text: str) -> list[str]:
    """Lower-cased word/number tokens longer than one character, stop words removed."""
    return [t for t in (m.lower() for m in _TOKEN.findall(text)) if len(t) > 1 and t not in _STOP_WORDS]


_CODE_META = (
    re.compile(r"#\s*Domain:\s*(.*)"),
    re.compile(r"#\s*Problem type:\s*(.*)"),
    re.compile(r"#\s*Variant description:\s*(.*)"),
)


def retrieval_text(question: str, reference_code: str | None) -> str:
    """Text a candidate is ranked by: its question plus the ``# Domain:``, ``# Problem type:`` and
    ``# Variant description:`` header comments of its reference code (empty when absent), space
    separated, as the reference harness builds it."""
    parts = [question]
    for pattern in _CODE_META:
        match = pattern.search(reference_code or "")
        parts.append(match.group(1).strip() if match else "")
    return " ".join(parts)


def jaccard(a: str, b: str) -> float:
    ta, tb = set(tokens(a)), set(tokens(b))
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


@dataclass(frozen=True)
class SelectionPolicy:
    """How examples are chosen. ``seed`` defaults to the T-Rex seed 42."""

    k: int
    strategy: FewShotStrategy = "random"
    seed: int = 42
    exclude_twins: bool = True
    near_duplicate_jaccard: float | None = 0.8


class FewShotPool:
    """Pool items with their token statistics computed once.

    Selection runs once per problem over the same pool; tokenising every candidate per problem made
    a 394-item benchmark take minutes. Statistics of the full pool are kept, and the candidates a
    problem may not see are subtracted per query, so the scores equal BM25 over the eligible set
    exactly (as the reference computes it).
    """

    def __init__(self, items: Sequence[PoolItem]) -> None:
        self.items = tuple(items)
        self._terms = [Counter(tokens(item.text)) for item in self.items]
        self._lengths = np.array([sum(terms.values()) for terms in self._terms], dtype=np.int64)
        self._columns: dict[str, np.ndarray] = {}
        self._question_sets = [frozenset(tokens(item.question)) for item in self.items]
        self._df: Counter[str] = Counter()
        for terms in self._terms:
            self._df.update(terms.keys())

    def __len__(self) -> int:
        return len(self.items)

    def eligible(
        self, problem_id: str, question: str, twin_group: str | None, policy: SelectionPolicy
    ) -> list[int]:
        """Indices of the items that may be shown for this problem (see module docstring)."""
        asked = frozenset(tokens(question))
        out = []
        for index, item in enumerate(self.items):
            if item.problem_id == problem_id:
                continue
            if policy.exclude_twins:
                if twin_group is not None and item.twin_group == twin_group:
                    continue
                if policy.near_duplicate_jaccard is not None and _near_duplicate(
                    asked, self._question_sets[index], policy.near_duplicate_jaccard
                ):
                    continue
            out.append(index)
        return out

    def bm25(self, query: str, candidates: Sequence[int]) -> list[float]:
        """BM25 of ``query`` against the candidate items, with N, df and avgdl of the candidates only."""
        if not candidates:
            return []
        index = np.fromiter(candidates, dtype=np.intp, count=len(candidates))
        left_out = np.ones(len(self.items), dtype=bool)
        left_out[index] = False
        n = len(candidates)
        avgdl = max(1.0, float(self._lengths[~left_out].sum()) / n)
        dl = np.maximum(self._lengths[index], 1).astype(np.float64)
        scores = np.zeros(n)
        # Term by term in query order, with the same operation order as the scalar formula, so
        # the scores are bit-identical to the reference's loop.
        for term, qtf in Counter(tokens(query)).items():
            column = self._tf_column(term)
            if column is None:
                continue
            df = self._df[term] - int(np.count_nonzero(column[left_out]))
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = column[index]
            present = tf > 0
            terms = qtf * idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * dl / avgdl))
            scores[present] += terms[present]
        return [float(x) for x in scores]

    def _tf_column(self, term: str) -> np.ndarray | None:
        if term not in self._df:
            return None
        column = self._columns.get(term)
        if column is None:
            column = np.array([terms.get(term, 0) for terms in self._terms], dtype=np.float64)
            self._columns[term] = column
        return column


def _near_duplicate(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    """Whether the token Jaccard index of ``a`` and ``b`` is at least ``threshold``."""
    small, large = sorted((len(a), len(b)))
    if large == 0:
        return True
    if small < threshold * large:  # |a ∩ b| / |a ∪ b| <= small / large
        return False
    common = len(a & b)
    return common >= threshold * (small + large - common)


def select(
    problem_id: str,
    question: str,
    *,
    twin_group: str | None,
    pool: FewShotPool,
    policy: SelectionPolicy,
) -> list[PoolItem]:
    """Choose ``policy.k`` examples for one problem.

    Raises:
        ConfigError: fewer than ``k`` eligible examples.
    """
    if policy.k <= 0:
        return []
    candidates = pool.eligible(problem_id, question, twin_group, policy)
    if len(candidates) < policy.k:
        raise ConfigError(
            f"only {len(candidates)} eligible few-shot examples for problem '{problem_id}', "
            f"{policy.k} requested",
            hint="lower --few-shot or give a larger --few-shot-source",
        )
    items = [pool.items[i] for i in candidates]
    if policy.strategy == "random":
        rng = random.Random(stable_int(f"{policy.seed}:{problem_id}"))
        rng.shuffle(items)
        return items[: policy.k]
    scores = pool.bm25(question, candidates)
    ranked = sorted(
        zip(scores, items, strict=True),
        key=lambda pair: (-round(pair[0], 6), stable_int(f"{policy.seed}:{problem_id}:{pair[1].problem_id}")),
    )
    return [item for _, item in ranked[: policy.k]]


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of ``query`` against each document.

    k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), document lengths floored at 1.
    """
    pool = FewShotPool([PoolItem(str(i), "", text, "", "") for i, text in enumerate(documents)])
    return pool.bm25(query, range(len(documents)))
