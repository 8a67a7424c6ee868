"""``trex-eval benchmarks diff A B``: how two versions of a benchmark differ, problem by problem.

Problems are matched by id when both versions have ids of the same kind (every id of one found
among the other's, and most id pairs share their text), else by whitespace-normalised question
text. Problems left unmatched are then aligned in file order, between text-matched anchors: inside a
block, an unmatched pair whose questions are similar enough (ratio >= ``similarity``)
is the same problem reworded; then any still-unmatched problem of A is paired with the most
similar unmatched one of B above the threshold (versions that moved a reworded problem to the
end). What remains is removed (only in A) or added (only in B). A matched pair whose references
differ is relabelled. Pure: it compares two loaded benchmarks.
"""

from __future__ import annotations

import difflib
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from trex_eval.benchmarks.loading import Benchmark
from trex_eval.records import ObjectiveReference, Problem, StructureReference

SIMILARITY = 0.5
"""Default: questions at least this similar (difflib ratio) are one problem reworded."""


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


def diff(a: Benchmark, b: Benchmark, *, similarity: float = SIMILARITY) -> BenchmarkDiff:
    """Compare version ``a`` with version ``b`` (see the module docstring)."""
    pa, pb = list(a.problems), list(b.problems)
    by_id = _ids_comparable(a, b)
    pairs: dict[int, tuple[int, float]] = {}
    if by_id:
        index_b = {p.id: j for j, p in enumerate(pb)}
        for i, problem in enumerate(pa):
            if problem.id in index_b:
                j = index_b[problem.id]
                pairs[i] = (j, _ratio(problem, pb[j]))
        # Ids that do not name the same problems (two copies numbered in different orders):
        # most id pairs then share little text, and the text is the better key.
        if pairs and statistics.median(ratio for _, ratio in pairs.values()) < similarity:
            by_id, pairs = False, {}
    if not by_id:
        texts_b: dict[str, list[int]] = {}
        for j, problem in enumerate(pb):
            texts_b.setdefault(normalise(problem.question), []).append(j)
        for i, problem in enumerate(pa):
            candidates = texts_b.get(normalise(problem.question))
            if candidates:
                pairs[i] = (candidates.pop(0), 1.0)
        _pair_reworded(pa, pb, pairs, similarity)
    matched_b = {j for j, _ in pairs.values()}
    result = tuple(
        Pair(
            a=pa[i],
            b=pb[j],
            reworded=normalise(pa[i].question) != normalise(pb[j].question),
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


def _ratio(a: Problem, b: Problem) -> float:
    return difflib.SequenceMatcher(None, normalise(a.question), normalise(b.question), autojunk=False).ratio()


def _pair_reworded(
    pa: Sequence[Problem], pb: Sequence[Problem], pairs: dict[int, tuple[int, float]], similarity: float
) -> None:
    """Pair unmatched problems whose questions are similar: first in file order, then anywhere."""
    free_a = [i for i in range(len(pa)) if i not in pairs]
    taken_b = {j for j, _ in pairs.values()}
    free_b = [j for j in range(len(pb)) if j not in taken_b]
    # In file order: between two text-matched anchors, the unmatched rows of A and B are aligned.
    anchors = sorted((i, j) for i, (j, _) in pairs.items())
    bounds = [(-1, -1), *anchors, (len(pa), len(pb))]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        block_a = [i for i in free_a if i0 < i < i1 and i not in pairs]
        block_b = [j for j in free_b if j0 < j < j1 and j not in taken_b]
        _greedy(pa, pb, block_a, block_b, pairs, taken_b, similarity)
    rest_a = [i for i in free_a if i not in pairs]
    rest_b = [j for j in free_b if j not in taken_b]
    _greedy(pa, pb, rest_a, rest_b, pairs, taken_b, similarity)


def _greedy(
    pa: Sequence[Problem],
    pb: Sequence[Problem],
    block_a: Sequence[int],
    block_b: Sequence[int],
    pairs: dict[int, tuple[int, float]],
    taken_b: set[int],
    similarity: float,
) -> None:
    texts_a = {i: normalise(pa[i].question) for i in block_a}
    candidates: list[tuple[float, int, int]] = []
    for j in block_b:
        # seq2 is the side SequenceMatcher indexes: set once per B question, reused for every A.
        matcher = difflib.SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(normalise(pb[j].question))
        for i in block_a:
            matcher.set_seq1(texts_a[i])
            # Both quick ratios bound ratio() from above: a pair they put under the threshold
            # could never be chosen, so the exact (quadratic) ratio is computed only for the rest.
            if matcher.real_quick_ratio() < similarity or matcher.quick_ratio() < similarity:
                continue
            ratio = matcher.ratio()
            if ratio >= similarity:
                candidates.append((ratio, i, j))
    for ratio, i, j in sorted(candidates, key=lambda item: (-item[0], item[1], item[2])):
        if i in pairs or j in taken_b:
            continue
        pairs[i] = (j, ratio)
        taken_b.add(j)


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
