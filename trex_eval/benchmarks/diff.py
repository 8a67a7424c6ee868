"""``trex-eval benchmarks diff A B``: how two versions of a benchmark differ, problem by problem.

Problems are matched by id when both versions have ids of the same kind (every id of one found
among the other's, and most id pairs share their text), else by whitespace-normalised question
text (a hash lookup). Problems left unmatched are then aligned in file order, between text-matched
anchors: inside a block, an unmatched pair whose questions are similar enough (difflib ratio >=
``similarity``) is the same problem reworded; then any still-unmatched problem of A is paired with
the most similar unmatched one of B above the threshold (versions that moved a reworded problem to
the end). What remains is removed (only in A) or added (only in B). A matched pair whose
references differ is relabelled. Pure: it compares two loaded benchmarks.

The similarity pairing is bounded. The exact ratio (quadratic in the questions' lengths, tens of
milliseconds for IndustryOR's even computed as :func:`.similarity.sequence_ratio` does) is
computed only for pairs whose upper bounds (difflib's ``real_quick_ratio`` and ``quick_ratio``,
then the longest common subsequence's :func:`.similarity.lcs_bound`) reach the threshold and,
among more than
:data:`CANDIDATES` unmatched problems of a side, only for each problem's :data:`CANDIDATES` most
word-alike ones (token-set Jaccard, and at least half the best one's): at most
``CANDIDATES * (a + b)`` ratios per round instead of ``a * b``. A problem whose candidates were all
taken is offered the next ones in another round. Identical questions score 1.0 without a ratio.
"""

from __future__ import annotations

import difflib
import functools
import heapq
import itertools
import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from trex_eval.benchmarks.loading import Benchmark
from trex_eval.benchmarks.similarity import lcs_bound, sequence_ratio
from trex_eval.records import ObjectiveReference, Problem, StructureReference

SIMILARITY = 0.5
"""Default: questions at least this similar (difflib ratio) are one problem reworded."""

CANDIDATES = 2
"""Among more unmatched problems than this, each problem is scored (exact ratio) against at most
this many of the other side: its most word-alike ones."""

_ALIKE = 0.8
"""A candidate's token-set Jaccard must be at least this fraction of the problem's best one."""

Progress = Callable[[int, int], None]
"""Called with (ratios computed, ratios planned so far) as the similarity scoring proceeds; the
planned count grows by round."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Pair:
    """Problem ``a`` of version A and ``b`` of version B, judged to be the same problem."""

    a: Problem
    b: Problem
    reworded: bool
    relabelled: bool
    similarity: float


@dataclass(frozen=True)
class BenchmarkDiff:
    """The matched pairs, and the problems found in one version only."""

    a: str
    b: str
    matched_by: str
    pairs: tuple[Pair, ...]
    removed: tuple[Problem, ...]
    added: tuple[Problem, ...]

    @property
    def reworded(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.reworded)

    @property
    def relabelled(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.relabelled)

    def counts(self) -> dict[str, int]:
        """Problems of each version, matched, identical, reworded, relabelled, removed and added."""
        return {
            "a": len(self.pairs) + len(self.removed),
            "b": len(self.pairs) + len(self.added),
            "matched": len(self.pairs),
            "unchanged": sum(1 for p in self.pairs if not p.reworded and not p.relabelled),
            "reworded": len(self.reworded),
            "relabelled": len(self.relabelled),
            "removed": len(self.removed),
            "added": len(self.added),
        }


def normalise(question: str) -> str:
    """The question with every run of whitespace made one space, ends stripped."""
    return " ".join(question.split())


def label_text(problem: Problem) -> str:
    """A problem's reference as its label reads (``optimal 3050.0``, ``inf_or_unbd (-99999)``)."""
    reference = problem.reference
    if isinstance(reference, StructureReference):
        return f"lp {reference.lp_sha256[:12]}"
    if reference.value is None:
        return f"{reference.status.value} ({reference.label})"
    return reference.label


def same_reference(a: Problem, b: Problem, *, rel_tol: float = 1e-9) -> bool:
    """Whether two problems' references agree: same status and, for optimal ones, values equal
    within ``rel_tol`` (``"3000"`` and ``"3000.0"`` are one label)."""
    ra, rb = a.reference, b.reference
    if isinstance(ra, StructureReference) or isinstance(rb, StructureReference):
        return (
            isinstance(ra, StructureReference)
            and isinstance(rb, StructureReference)
            and (ra.lp_sha256 == rb.lp_sha256)
        )
    assert isinstance(ra, ObjectiveReference) and isinstance(rb, ObjectiveReference)
    if ra.status is not rb.status:
        return False
    if ra.value is None or rb.value is None:
        return ra.value is rb.value
    return math.isclose(ra.value, rb.value, rel_tol=rel_tol, abs_tol=rel_tol)


def diff(
    a: Benchmark, b: Benchmark, *, similarity: float = SIMILARITY, progress: Progress | None = None
) -> BenchmarkDiff:
    """Compare version ``a`` with version ``b`` (see the module docstring); ``progress`` is told
    how the similarity scoring proceeds (the part that takes seconds on long questions)."""
    pa, pb = list(a.problems), list(b.problems)
    scorer = _Scorer([normalise(p.question) for p in pa], [normalise(p.question) for p in pb], progress)
    by_id = _ids_comparable(a, b)
    pairs: dict[int, tuple[int, float]] = {}
    if by_id:
        index_b = {p.id: j for j, p in enumerate(pb)}
        id_pairs = [(i, index_b[p.id]) for i, p in enumerate(pa) if p.id in index_b]
        # Ids that do not name the same problems (two copies numbered in different orders):
        # most id pairs then share little text, and the text is the better key.
        ratios = _ratios_unless_mostly_below(scorer, id_pairs, similarity)
        if ratios is None:
            by_id = False
        else:
            pairs = {i: (j, ratio) for (i, j), ratio in zip(id_pairs, ratios, strict=True)}
    if not by_id:
        texts_b: dict[str, list[int]] = {}
        for j, text in enumerate(scorer.texts_b):
            texts_b.setdefault(text, []).append(j)
        for i, text in enumerate(scorer.texts_a):
            candidates = texts_b.get(text)
            if candidates:
                pairs[i] = (candidates.pop(0), 1.0)
        _pair_reworded(scorer, pairs, similarity)
    matched_b = {j for j, _ in pairs.values()}
    result = tuple(
        Pair(
            a=pa[i],
            b=pb[j],
            reworded=scorer.texts_a[i] != scorer.texts_b[j],
            relabelled=not same_reference(pa[i], pb[j]),
            similarity=ratio,
        )
        for i, (j, ratio) in sorted(pairs.items())
    )
    return BenchmarkDiff(
        a=a.name,
        b=b.name,
        matched_by="id" if by_id else "question text",
        pairs=result,
        removed=tuple(p for i, p in enumerate(pa) if i not in pairs),
        added=tuple(p for j, p in enumerate(pb) if j not in matched_b),
    )


def _ids_comparable(a: Benchmark, b: Benchmark) -> bool:
    """Both versions name their problems (not row numbers) and one's ids are among the other's."""
    if a.spec.fields.id is None or b.spec.fields.id is None:
        return False
    ids_a, ids_b = {p.id for p in a.problems}, {p.id for p in b.problems}
    return ids_a <= ids_b or ids_b <= ids_a


@dataclass
class _Scorer:
    """The exact ratios of question pairs (A's text first, as ``SequenceMatcher(None, a, b)``),
    each computed once, and the cheap measures that decide which are worth computing."""

    texts_a: list[str]
    texts_b: list[str]
    progress: Progress | None
    done: int = 0
    planned: int = 0
    _ratios: dict[tuple[int, int], float] = field(default_factory=dict)
    _matchers: dict[int, difflib.SequenceMatcher[str]] = field(default_factory=dict)
    _words: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict)
    offered: set[tuple[int, int]] = field(default_factory=set)
    """Pairs already offered as candidates (a later round offers others)."""

    def _matcher(self, i: int, j: int) -> difflib.SequenceMatcher[str]:
        # seq2 is the side SequenceMatcher indexes: set once per B question, reused for every A.
        matcher = self._matchers.get(j)
        if matcher is None:
            matcher = self._matchers[j] = difflib.SequenceMatcher(None, autojunk=False)
            matcher.set_seq2(self.texts_b[j])
        matcher.set_seq1(self.texts_a[i])
        return matcher

    def ratio(self, i: int, j: int) -> float:
        """The exact ratio (1.0 for identical questions, without computing it)."""
        if (i, j) not in self._ratios:
            if self.texts_a[i] == self.texts_b[j]:
                self._ratios[i, j] = 1.0
            else:
                self._ratios[i, j] = sequence_ratio(self.texts_a[i], self.texts_b[j])
                self.done += 1
                if self.progress is not None:
                    self.progress(self.done, max(self.planned, self.done))
        return self._ratios[i, j]

    def known(self, i: int, j: int) -> bool:
        """Whether the pair needs no more exact ratio (computed, or identical questions)."""
        return (i, j) in self._ratios or self.texts_a[i] == self.texts_b[j]

    def below(self, i: int, j: int, similarity: float) -> bool:
        """Whether the ratio is certainly under ``similarity``, without computing one."""
        if self.known(i, j):
            return self.ratio(i, j) < similarity
        return self.below_by_bounds(i, j, similarity)

    def below_by_bounds(self, i: int, j: int, similarity: float) -> bool:
        """Whether the quick ratios or the longest common subsequence, which bound the ratio
        from above, are under ``similarity``: such a pair needs no exact (quadratic) ratio."""
        matcher = self._matcher(i, j)
        return (
            matcher.real_quick_ratio() < similarity
            or matcher.quick_ratio() < similarity
            or lcs_bound(self.texts_a[i], self.texts_b[j]) < similarity
        )

    def words(self, side: str, k: int) -> frozenset[str]:
        if (side, k) not in self._words:
            text = self.texts_a[k] if side == "a" else self.texts_b[k]
            self._words[side, k] = frozenset(_WORD.findall(text.casefold()))
        return self._words[side, k]

    def jaccard(self, i: int, j: int) -> float:
        wa, wb = self.words("a", i), self.words("b", j)
        union = len(wa | wb)
        return len(wa & wb) / union if union else 1.0


def _ratios_unless_mostly_below(
    scorer: _Scorer, id_pairs: Sequence[tuple[int, int]], similarity: float
) -> list[float] | None:
    """The ratio of every id pair, or ``None`` when their median is under ``similarity``.

    Pairs certainly under the threshold (by their quick bounds, then by their exact ratio) are
    counted as they are found: once more than half are, the median is under it, and the rest
    need no exact ratio.
    """
    must_be_under = len(id_pairs) // 2 + 1
    certain = [scorer.below(i, j, similarity) for i, j in id_pairs]
    under = sum(certain)
    scorer.planned += len(id_pairs) - under
    for (i, j), known_under in zip(id_pairs, certain, strict=True):
        if under >= must_be_under:
            return None
        if not known_under and scorer.ratio(i, j) < similarity:
            under += 1
    if under >= must_be_under:
        return None
    scorer.planned += sum(certain)
    ratios = [scorer.ratio(i, j) for i, j in id_pairs]
    return ratios if not ratios or statistics.median(ratios) >= similarity else None


def _pair_reworded(scorer: _Scorer, pairs: dict[int, tuple[int, float]], similarity: float) -> None:
    """Pair unmatched problems whose questions are similar: first in file order, then anywhere."""
    free_a = [i for i in range(len(scorer.texts_a)) if i not in pairs]
    taken_b = {j for j, _ in pairs.values()}
    free_b = [j for j in range(len(scorer.texts_b)) if j not in taken_b]
    # In file order: between two text-matched anchors, the unmatched rows of A and B are aligned.
    anchors = sorted((i, j) for i, (j, _) in pairs.items())
    bounds = [(-1, -1), *anchors, (len(scorer.texts_a), len(scorer.texts_b))]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        block_a = [i for i in free_a if i0 < i < i1 and i not in pairs]
        block_b = [j for j in free_b if j0 < j < j1 and j not in taken_b]
        _greedy(scorer, block_a, block_b, pairs, taken_b, similarity)
    rest_a = [i for i in free_a if i not in pairs]
    rest_b = [j for j in free_b if j not in taken_b]
    _greedy(scorer, rest_a, rest_b, pairs, taken_b, similarity)


def _greedy(
    scorer: _Scorer,
    block_a: Sequence[int],
    block_b: Sequence[int],
    pairs: dict[int, tuple[int, float]],
    taken_b: set[int],
    similarity: float,
) -> None:
    """Pair the most similar questions first, in rounds. A round scores its problems'
    candidates and pairs greedily; a problem left free whose candidate another took is offered
    its next candidates in another round, until one pairs nothing. With every pair a candidate
    (small blocks) one round decides all."""
    active_a, active_b = list(block_a), list(block_b)
    while active_a or active_b:
        free_a = [i for i in block_a if i not in pairs]
        free_b = [j for j in block_b if j not in taken_b]
        chosen = _candidates(
            scorer,
            [i for i in active_a if i not in pairs],
            [j for j in active_b if j not in taken_b],
            free_a,
            free_b,
        )
        scored = [(scorer.ratio(i, j), i, j) for i, j in chosen if not scorer.below(i, j, similarity)]
        for ratio, i, j in sorted(scored, key=lambda item: (-item[0], item[1], item[2])):
            if ratio >= similarity and i not in pairs and j not in taken_b:
                pairs[i] = (j, ratio)
                taken_b.add(j)
        # Those left free whose candidate went to another problem try their next ones.
        active_a = sorted({i for i, j in chosen if i not in pairs and j in taken_b})
        active_b = sorted({j for i, j in chosen if j not in taken_b and i in pairs})


def _candidates(
    scorer: _Scorer,
    sources_a: Sequence[int],
    sources_b: Sequence[int],
    free_a: Sequence[int],
    free_b: Sequence[int],
) -> list[tuple[int, int]]:
    """The pairs worth an exact ratio, less those offered before: for each source problem, its
    :data:`CANDIDATES` most word-alike free problems of the other side (all of them when that
    few; see the module docstring)."""
    chosen: set[tuple[int, int]] = set()
    # At most the smaller side's count of pairs can form: a side more than twice as large
    # (rows removed, or added, in bulk) does not choose, it is chosen from.
    if len(free_a) > 2 * len(free_b):
        sources_a = ()
    elif len(free_b) > 2 * len(free_a):
        sources_b = ()
    for i in sources_a:
        chosen.update((i, j) for j in _most_alike(free_b, functools.partial(scorer.jaccard, i)))
    for j in sources_b:
        chosen.update((i, j) for i in _most_alike(free_a, functools.partial(scorer.jaccard, j=j)))
    # A pair offered before (in its block, or an earlier round) was decided then.
    chosen -= scorer.offered
    scorer.offered |= chosen
    scorer.planned += sum(1 for pair in chosen if not scorer.known(*pair))
    return sorted(chosen)


def _most_alike(others: Sequence[int], score: Callable[[int], float]) -> list[int]:
    """All of ``others`` when at most :data:`CANDIDATES`, else the :data:`CANDIDATES`
    highest-scoring (ties: the earlier) less those under :data:`_ALIKE` times the best score."""
    if len(others) <= CANDIDATES:
        return list(others)
    scores = {m: score(m) for m in others}
    best = heapq.nsmallest(CANDIDATES, others, key=lambda m: (-scores[m], m))
    return [m for m in best if scores[m] >= scores[best[0]] * _ALIKE]


def render(result: BenchmarkDiff, *, show: int | None = None) -> str:
    """The diff as Markdown: counts, then the removed, added, reworded and relabelled problems
    (``show``: at most that many of each list; ``None``: all)."""

    def ident(problem: Problem) -> str:
        return f"{problem.id}" if problem.id == str(problem.index) else f"{problem.id} (row {problem.index})"

    counts = result.counts()
    lines = [
        f"# {result.a} vs {result.b} (matched by {result.matched_by})",
        "",
        "| " + " | ".join(counts) + " |",
        "|" + "---:|" * len(counts),
        "| " + " | ".join(str(v) for v in counts.values()) + " |",
    ]
    sections: list[tuple[str, list[str]]] = [
        (f"removed (only in {result.a})", [f"- {ident(p)}: {label_text(p)}" for p in result.removed]),
        (f"added (only in {result.b})", [f"- {ident(p)}: {label_text(p)}" for p in result.added]),
        (
            "reworded",
            [
                f"- {ident(p.a)} -> {ident(p.b)} (similarity {p.similarity:.3f})"
                + (f"; label {label_text(p.a)} -> {label_text(p.b)}" if p.relabelled else "")
                for p in result.reworded
            ],
        ),
        (
            "relabelled",
            [
                f"- {ident(p.a)} -> {ident(p.b)}: {label_text(p.a)} -> {label_text(p.b)}"
                for p in result.relabelled
            ],
        ),
    ]
    for title, items in sections:
        lines += ["", f"## {title}: {len(items)}"]
        shown = items if show is None else items[:show]
        lines += shown
        if len(shown) < len(items):
            lines.append(f"- ... and {len(items) - len(shown)} more")
    return "\n".join(lines) + "\n"
