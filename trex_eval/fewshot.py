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

from trex_eval.errors import ConfigError
from trex_eval.records import FewShotStrategy

Strategy = FewShotStrategy

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
    strategy: Strategy = "random"
    seed: int = 42
    exclude_twins: bool = True
    near_duplicate_jaccard: float | None = 0.8


def eligible(
    problem_id: str, question: str, twin_group: str | None, pool: Sequence[PoolItem], policy: SelectionPolicy
) -> list[PoolItem]:
    """Pool items that may be shown for this problem (see module docstring)."""
    out = []
    for item in pool:
        if item.problem_id == problem_id:
            continue
        if policy.exclude_twins:
            if twin_group is not None and item.twin_group == twin_group:
                continue
            if (
                policy.near_duplicate_jaccard is not None
                and jaccard(question, item.question) >= policy.near_duplicate_jaccard
            ):
                continue
        out.append(item)
    return out


def select(
    problem_id: str,
    question: str,
    *,
    twin_group: str | None,
    pool: Sequence[PoolItem],
    policy: SelectionPolicy,
) -> list[PoolItem]:
    """Choose ``policy.k`` examples for one problem.

    Raises:
        ConfigError: fewer than ``k`` eligible examples.
    """
    if policy.k <= 0:
        return []
    candidates = eligible(problem_id, question, twin_group, pool, policy)
    if len(candidates) < policy.k:
        raise ConfigError(
            f"only {len(candidates)} eligible few-shot examples for problem '{problem_id}', "
            f"{policy.k} requested",
            hint="lower --few-shot or give a larger --few-shot-source",
        )
    if policy.strategy == "random":
        rng = random.Random(stable_int(f"{policy.seed}:{problem_id}"))
        shuffled = list(candidates)
        rng.shuffle(shuffled)
        return shuffled[: policy.k]
    scores = bm25_scores(question, [c.text for c in candidates])
    ranked = sorted(
        zip(scores, candidates, strict=True),
        key=lambda pair: (-round(pair[0], 6), stable_int(f"{policy.seed}:{problem_id}:{pair[1].problem_id}")),
    )
    return [item for _, item in ranked[: policy.k]]


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of ``query`` against each document.

    k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), document lengths floored at 1.
    """
    docs = [Counter(tokens(d)) for d in documents]
    n = len(docs)
    if n == 0:
        return []
    lengths = [max(1, sum(d.values())) for d in docs]
    avgdl = max(1.0, sum(sum(d.values()) for d in docs) / n)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    query_tf = Counter(tokens(query))
    scores = []
    for doc, dl in zip(docs, lengths, strict=True):
        score = 0.0
        for term, qtf in query_tf.items():
            tf = doc.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += qtf * idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * dl / avgdl))
        scores.append(score)
    return scores
