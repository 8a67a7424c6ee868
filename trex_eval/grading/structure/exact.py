"""ORGEval structural equivalence decided exactly: rule ``orgeval-exact@2``, the default for
structure-graded benchmarks.

Two models are equivalent when one is the other up to renaming and reordering of variables and
constraints and the normalisations of the canonical form; the rule decides that as an
isomorphism question on their typed graphs (:mod:`~trex_eval.grading.structure.typed_graph`),
which hold quadratic objective and constraint terms, SOS sets and indicator constraints too.

1. **Held parts.** A model that counts parts it does not hold (a captured matrix whose
   quadratic constraints the hook could not read; general constraints other than indicators)
   cannot be compared: ``not_determinable``, naming what is missing.
2. **Canonical form and scalar checks** as in ``orgeval-fixed``: minimisation, sign-correct
   bounds from single-entry rows, rows divided by their largest ``|a|``; both models must agree
   on being trivially infeasible, on the objective constant (relative ``1e-9``) and on the
   numbers of variables, linear rows, quadratic rows, SOS sets and indicators (``wrong``
   otherwise).
3. **Colour refinement** on the disjoint union of both graphs, colour ids assigned by sorting
   the signatures (independent of node order). Different class sizes prove the graphs
   non-isomorphic: ``wrong``.
4. **Exact decision.** Where refinement leaves every class a single node per graph, the
   colour-preserving bijection is checked edge by edge. Where it leaves ties, an
   individualisation-refinement search decides: individualise the first node of the smallest
   tied class of the reference against each candidate of the generated graph, refine, recurse;
   a branch whose class sizes differ is pruned, and a leaf (all classes single) counts only
   when its bijection is checked to be an isomorphism. Finding one is ``correct``; exhausting
   the search is ``wrong``. The search is complete and every ``correct`` is checked, so the
   only undecided outcome is the time budget (:data:`TIME_BUDGET_S` CPU seconds of the grading
   thread per pair, measured from the start of the check): its breach is ``not_determinable``
   with the number of branches tried.

Versions: ``@2`` counts the budget in CPU seconds of the thread that checks, which machine load
does not use up; ``@1`` counted wall-clock seconds, so a loaded machine could turn a decided pair
``not_determinable``. On a quiet machine the two decide alike.

Without symmetries no search runs; ``scripts/bench_structure.py`` measures the cost.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from trex_eval.grading.structure.base import CheckRule
from trex_eval.grading.structure.keys import RELATIVE_TOLERANCE, ZERO_TOLERANCE, NumericKeys
from trex_eval.grading.structure.typed_graph import (
    TypedForm,
    build_graph,
    magnitudes,
    typed_form,
    unheld_parts,
)
from trex_eval.records import Grade, LinearModel, StructureCheck, StructureEvidence, Verdict

VERSION = "2"
RULE = f"orgeval-exact@{VERSION}"
"""The canonical spec every grade of this rule records."""

TIME_BUDGET_S = 2.0
"""CPU seconds of the checking thread one check may spend (canonical form, refinement and search
together) before it answers ``not_determinable``: a count machine load does not stretch, so the
verdict is the same on a loaded machine. The shipped B4O-ORGEval pairs take milliseconds."""


class _OutOfTime(Exception):
    pass


@dataclass(slots=True)
class _Union:
    """Both graphs in one node space: the reference's nodes ``0 .. split-1``, then the
    generated model's."""

    adjacency: list[list[tuple[int, int]]]
    split: int
    deadline: float
    branches: int = 0
    refinements: int = 0


def check_exact(reference: LinearModel, generated: LinearModel, *, budget_s: float = TIME_BUDGET_S) -> Grade:
    """Judge whether ``generated`` is ``reference`` up to renaming, reordering and the
    canonical form's normalisations, exactly (module docstring).

    Returns ``correct``, ``wrong`` or ``not_determinable`` (parts not held, or ``budget_s``
    CPU seconds of the calling thread exceeded); never raises for model content.
    """
    deadline = time.thread_time() + budget_s
    checks: list[StructureCheck] = []
    unheld = [unheld_parts(model) for model in (reference, generated)]
    checks.append(
        StructureCheck(
            name="held_parts",
            passed=not any(unheld),
            detail=f"reference: {unheld[0] or 'all held'}; generated: {unheld[1] or 'all held'}",
        )
    )
    if any(unheld):
        side = "reference" if unheld[0] else "generated"
        return _grade(
            Verdict.NOT_DETERMINABLE,
            checks,
            f"the {side} model counts parts it does not hold ({unheld[0] or unheld[1]})",
        )
    forms = (typed_form(reference), typed_form(generated))
    failure = _scalar_failure(forms, checks)
    if failure is not None:
        return _grade(Verdict.WRONG, checks, failure)

    keys = NumericKeys(magnitudes(forms))
    graphs = (build_graph(forms[0], keys), build_graph(forms[1], keys))
    sizes = (len(graphs[0].colours), len(graphs[1].colours))
    checks.append(
        StructureCheck(
            name="graph",
            passed=sizes[0] == sizes[1],
            detail=f"{sizes[0]} vs {sizes[1]} nodes ({graphs[0].open_pairs} vs {graphs[1].open_pairs} "
            "rows without a natural orientation, as node pairs)",
        )
    )
    if sizes[0] != sizes[1]:
        return _grade(
            Verdict.WRONG, checks, f"the typed graphs differ in size ({sizes[0]} vs {sizes[1]} nodes)"
        )
    union = _Union(
        adjacency=graphs[0].adjacency + [_shifted(edges, sizes[0]) for edges in graphs[1].adjacency],
        split=sizes[0],
        deadline=deadline,
    )
    colour = _refine(union, _canonical_ids([*graphs[0].colours, *graphs[1].colours]))
    differing = _differing(union, colour)
    ties = sum(1 for n in Counter(colour[: union.split]).values() if n > 1)
    checks.append(
        StructureCheck(
            name="colour_classes",
            passed=differing == 0,
            detail=f"{len(set(colour[: union.split]))} classes, {ties} of them tied; "
            f"{differing} nodes in classes that do not match",
        )
    )
    if differing:
        return _grade(Verdict.WRONG, checks, "the refined colour classes differ (sizes included)")
    return _isomorphism_grade(union, colour, checks, budget_s=budget_s)


def _isomorphism_grade(
    union: _Union, colour: list[int], checks: list[StructureCheck], *, budget_s: float
) -> Grade:
    """The last check, the isomorphism search below ``colour`` (matching colour classes), and
    the grade it settles: ``correct`` (found), ``wrong`` (none exists) or ``not_determinable``
    (the ``budget_s`` CPU seconds spent first). Appends the check to ``checks``."""
    try:
        found = _search(union, colour)
    except _OutOfTime:
        checks.append(
            StructureCheck(
                name="isomorphism",
                passed=False,
                detail=f"time budget of {budget_s:g} CPU s spent after {union.branches} branches",
            )
        )
        return _grade(
            Verdict.NOT_DETERMINABLE,
            checks,
            f"the isomorphism search ran out of its {budget_s:g} CPU s budget "
            f"after {union.branches} branches",
        )
    how = "checked edge by edge" if union.branches == 0 else f"search over {union.branches} branches"
    checks.append(
        StructureCheck(
            name="isomorphism",
            passed=found,
            detail=f"{'an isomorphism found' if found else 'no isomorphism exists'} ({how})",
        )
    )
    if not found:
        return _grade(Verdict.WRONG, checks, f"no isomorphism respects the colours ({how})")
    return _grade(Verdict.CORRECT, checks, None)


def _shifted(edges: list[tuple[int, int]], offset: int) -> list[tuple[int, int]]:
    return [(node + offset, label) for node, label in edges]


def _same_number(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= max(ZERO_TOLERANCE, RELATIVE_TOLERANCE * max(abs(a), abs(b)))


def _scalar_failure(forms: tuple[TypedForm, TypedForm], checks: list[StructureCheck]) -> str | None:
    reference, generated = forms
    infeasible = (reference.trivially_infeasible, generated.trivially_infeasible)
    checks.append(
        StructureCheck(
            name="trivially_infeasible",
            passed=infeasible[0] == infeasible[1],
            detail=f"reference {infeasible[0]}, generated {infeasible[1]}",
        )
    )
    if infeasible[0] != infeasible[1]:
        return "only one model has a violated constraint without variables"
    constants = (reference.linear.objective_constant, generated.linear.objective_constant)
    checks.append(
        StructureCheck(
            name="objective_constant",
            passed=_same_number(*constants),
            detail=f"{constants[0]!r} vs {constants[1]!r} (after turning maximisation into minimisation)",
        )
    )
    if not _same_number(*constants):
        return f"objective constants differ ({constants[0]!r} vs {constants[1]!r})"
    counters: tuple[tuple[str, str, Callable[[TypedForm], int]], ...] = (
        ("variable_count", "variables in use", lambda f: len(f.linear.obj)),
        ("row_count", "linear rows left after normalisation", lambda f: len(f.linear.rows)),
        ("quadratic_row_count", "quadratic constraints", lambda f: len(f.quadratic_rows)),
        ("quadratic_objective_terms", "quadratic objective terms", lambda f: len(f.quadratic_objective)),
        ("sos_count", "SOS sets", lambda f: len(f.sos)),
        ("indicator_count", "indicator constraints", lambda f: len(f.indicators)),
    )
    for name, what, count in counters:
        sizes = (count(reference), count(generated))
        if name not in ("variable_count", "row_count") and sizes == (0, 0):
            continue
        checks.append(
            StructureCheck(name=name, passed=sizes[0] == sizes[1], detail=f"{sizes[0]} vs {sizes[1]} {what}")
        )
        if sizes[0] != sizes[1]:
            return f"different numbers of {what} ({sizes[0]} vs {sizes[1]})"
    return None


def _canonical_ids(signatures: list[tuple[int, ...]]) -> list[int]:
    """Each signature's rank among the distinct signatures: ids that depend only on what the
    signatures say, never on node order."""
    ordered = {signature: k for k, signature in enumerate(sorted(set(signatures)))}
    return [ordered[signature] for signature in signatures]


def _refine(union: _Union, colour: list[int]) -> list[int]:
    """The coarsest stable refinement of ``colour`` (canonical ids)."""
    count = len(set(colour))
    adjacency = union.adjacency
    while True:
        union.refinements += 1
        signatures = [
            (colour[node], *sorted((colour[u] << 44) + label for u, label in adjacent))
            for node, adjacent in enumerate(adjacency)
        ]
        colour = _canonical_ids(signatures)
        refined = len(set(colour))
        if refined == count:
            return colour
        count = refined


def _refine_from(union: _Union, colour: list[int], changed: set[int]) -> list[int]:
    """An equitable refinement of ``colour`` after the nodes in ``changed`` got new colours.

    Only classes with a node next to a changed node are split, in order of class id; the part
    with the smallest signature keeps the id, the others get new ids in signature order. Every
    step depends on colours only, so the result is invariant under isomorphism (the same
    individualisation on both sides gives corresponding colourings), which is all the search
    needs; the work is proportional to the part of the graph that changes.
    """
    colour = list(colour)
    adjacency = union.adjacency
    members: dict[int, list[int]] = {}
    for node, c in enumerate(colour):
        members.setdefault(c, []).append(node)
    fresh = max(colour) + 1
    while changed:
        union.refinements += 1
        touched = sorted({colour[u] for node in changed for u, _ in adjacency[node]})
        changed = set()
        for c in touched:
            nodes = members[c]
            if len(nodes) == 1:
                continue
            groups: dict[tuple[int, ...], list[int]] = {}
            for node in nodes:
                signature = tuple(sorted((colour[u] << 44) + label for u, label in adjacency[node]))
                groups.setdefault(signature, []).append(node)
            if len(groups) == 1:
                continue
            ordered = sorted(groups)
            members[c] = groups[ordered[0]]
            for signature in ordered[1:]:
                members[fresh] = groups[signature]
                for node in groups[signature]:
                    colour[node] = fresh
                    changed.add(node)
                fresh += 1
    return colour


def _differing(union: _Union, colour: list[int]) -> int:
    first, second = Counter(colour[: union.split]), Counter(colour[union.split :])
    return sum(((first - second) + (second - first)).values())


def _search(union: _Union, colour: list[int]) -> bool:
    """Whether a colour-respecting isomorphism exists below ``colour`` (a stable colouring with
    equal class sizes), by depth-first individualisation-refinement (explicit stack)."""
    stack = [(colour, _branches(union, colour))]
    while stack:
        if time.thread_time() > union.deadline:
            raise _OutOfTime
        current, candidates = stack[-1]
        if candidates is None:
            if _is_isomorphism(union, current):
                return True
            stack.pop()
            continue
        if not candidates[1]:
            stack.pop()
            continue
        node, others = candidates
        other = others.pop()
        union.branches += 1
        trial = list(current)
        fresh = max(current) + 1
        trial[node] = trial[other] = fresh
        refined = _refine_from(union, trial, {node, other})
        if _differing(union, refined) == 0:
            stack.append((refined, _branches(union, refined)))
    return False


def _branches(union: _Union, colour: list[int]) -> tuple[int, list[int]] | None:
    """``None`` when every class is a single node per graph; otherwise the reference node to
    individualise (first of the smallest tied class) and its candidates (reversed, so
    ``pop()`` tries them in node order)."""
    members: dict[int, list[int]] = {}
    for node in range(union.split):
        members.setdefault(colour[node], []).append(node)
    tied = [(len(nodes), c) for c, nodes in members.items() if len(nodes) > 1]
    if not tied:
        return None
    _, chosen = min(tied)
    candidates = [node for node in range(union.split, len(colour)) if colour[node] == chosen]
    return members[chosen][0], candidates[::-1]


def _is_isomorphism(union: _Union, colour: list[int]) -> bool:
    """Whether the bijection that pairs nodes of equal colour maps every labelled edge of the
    reference onto one of the generated graph (multiplicities included)."""
    split = union.split
    image = {colour[node]: node for node in range(split, len(colour))}
    mapping = [image[colour[node]] for node in range(split)]
    for node in range(split):
        mapped = Counter((mapping[u], label) for u, label in union.adjacency[node])
        if mapped != Counter(union.adjacency[mapping[node]]):
            return False
    return True


def _grade(verdict: Verdict, checks: list[StructureCheck], failure: str | None) -> Grade:
    evidence = StructureEvidence(checks=tuple(checks))
    if verdict is Verdict.CORRECT:
        reason = (
            "The models are the same program up to renaming, reordering and row scaling "
            "(an isomorphism of their typed graphs, checked)."
        )
    elif verdict is Verdict.WRONG:
        reason = f"The models differ: {failure}."
    else:
        reason = f"Equivalence cannot be decided: {failure}."
    return Grade(verdict=verdict, rule=RULE, reason=reason, evidence=evidence)


RULE_OBJECT = CheckRule(
    name="orgeval-exact",
    version=VERSION,
    description="exact structural equivalence: quadratic, SOS and indicator parts in the graph, "
    "isomorphism search",
    check=check_exact,
)
build = RULE_OBJECT.build
"""The registry factory (the rule takes no parameters)."""
