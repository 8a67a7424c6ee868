"""ORGEval structural equivalence with the reference harness's defects fixed: rule
``orgeval-fixed@1``, the default for structure-graded benchmarks until ``orgeval-exact@1``
(:mod:`.exact`) decided every item it leaves ``not_determinable``; kept for comparison with
results graded by it.

Algorithm (compare :mod:`trex_eval.protocols.trex_compat.structure`):

1. **Scope.** A model with a quadratic objective, quadratic constraints, general constraints
   or SOS is outside what the graph represents: the verdict is ``not_determinable``, never
   ``correct``.
2. **Canonical form** (:func:`~trex_eval.grading.structure.canonical.canonicalise`): objective
   sense normalised to minimisation, binaries as ``[0, 1]`` integers with rounded bounds,
   single-entry rows turned into sign-correct bounds intersected with the existing ones, other
   rows divided by their largest ``|a|``, unused zero-cost variables dropped.
3. **Scalar checks.** Both models must agree on being trivially infeasible (a violated row
   without entries) and on the objective constant (relative tolerance ``1e-9``); otherwise
   ``wrong``.
4. **Numeric keys.** Every magnitude in either model (coefficients, bounds, row sides,
   objective) is sorted once and consecutive values within ``max(1e-12, 1e-9 * v)`` are
   merged into one key; magnitudes up to ``1e-12`` are zero. A value's key is its sign and its
   magnitude's cluster, so ``x + y >= 4`` built as ``0.1*3 ...`` and ``0.3 ...`` compare equal,
   while 3 and 3.0000004 (float32 collisions in the reference) stay apart. Both models share the
   table, so there are no boundary effects between them.
5. **Orientation.** A ``<=`` row becomes ``>=`` by negation. An equality or a range keeps the
   orientation whose side keys have a positive midpoint (``b > 0`` for ``a.x = b``); when the
   midpoint key is zero (``x - y = 0``, ``-5 <= a.x <= 5``) the orientation is left open and is
   chosen during refinement from the neighbours' colours (the lexicographically smaller of the
   two signed neighbour multisets; if they are equal the row is symmetric and its variables see
   the coefficient's magnitude only).
6. **Colour refinement** on the disjoint union of both bipartite graphs (variable colour: type,
   objective, bounds; row colour: kind and sides; edge label: signed coefficient key), with colour
   ids assigned by sorting the distinct signatures, so the colouring does not depend on variable
   or row order. It stops when the number of classes stops growing.
7. **Comparison.** The two graphs must have the same multiset of final colours (class sizes
   included, counted separately per graph); otherwise ``wrong``.
8. **Sufficiency.** Equal colourings prove isomorphism only if each graph is WL-determinable or
   symmetric decomposable (:func:`~trex_eval.grading.structure.wl.sufficiency`); otherwise the verdict is
   ``not_determinable``, not ``wrong``.

Cost: ``O((n + m + nnz) log)`` per refinement round; the 394 ORGEval reference LPs against
themselves and against perturbed copies take a few seconds in all (``scripts/bench_structure.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain

from trex_eval.grading.structure.base import CheckRule
from trex_eval.grading.structure.canonical import CanonicalModel, canonicalise
from trex_eval.grading.structure.keys import INFINITE_KEY as _INFINITE_KEY
from trex_eval.grading.structure.keys import RELATIVE_TOLERANCE as RELATIVE_TOLERANCE
from trex_eval.grading.structure.keys import ZERO_TOLERANCE as ZERO_TOLERANCE
from trex_eval.grading.structure.keys import NumericKeys as _NumericKeys
from trex_eval.grading.structure.keys import orientation as _orientation
from trex_eval.grading.structure.wl import sufficiency
from trex_eval.records import Grade, LinearModel, StructureCheck, StructureEvidence, Verdict

VERSION = "1"
RULE = f"orgeval-fixed@{VERSION}"
"""The canonical spec every grade of this rule records."""

_SYMMETRIC_EDGE = 1 << 41


@dataclass(slots=True)
class _Graph:
    """Both models' bipartite graphs in one node space (first model's nodes first)."""

    colours: list[tuple[int, ...]]
    neighbours: list[list[tuple[int, int]]]
    open_rows: list[int]
    sizes: tuple[int, int]


def check_fixed(reference: LinearModel, generated: LinearModel) -> Grade:
    """Judge whether ``generated`` is the same linear model as ``reference`` up to renaming,
    reordering and the normalisations in the module docstring.

    Returns ``correct``, ``wrong`` or ``not_determinable`` (rule ``orgeval-fixed@1``); never raises
    for model content.
    """
    checks: list[StructureCheck] = []
    nonlinear = [_nonlinear_parts(model) for model in (reference, generated)]
    checks.append(
        StructureCheck(
            name="linear",
            passed=not any(nonlinear),
            detail=f"reference: {nonlinear[0] or 'linear'}; generated: {nonlinear[1] or 'linear'}",
        )
    )
    if any(nonlinear):
        return _grade(
            Verdict.NOT_DETERMINABLE,
            checks,
            "the models have quadratic, SOS or general-constraint parts, which the graph does not represent",
        )
    canonical = (canonicalise(reference), canonicalise(generated))
    checks.append(
        StructureCheck(
            name="canonical_form",
            passed=True,
            detail="; ".join(
                f"{side}: {model.sense}imisation, {form.dropped_rows} rows turned into bounds or dropped, "
                f"{form.dropped_variables} unused variables dropped"
                for side, model, form in zip(
                    ("reference", "generated"), (reference, generated), canonical, strict=True
                )
            ),
        )
    )
    failure = _scalar_failure(canonical, checks)
    if failure is not None:
        return _grade(Verdict.WRONG, checks, failure)

    keys = _NumericKeys(_magnitudes(canonical))
    graph = _build_graph(canonical, keys)
    classes = _refine(graph)
    first, second = graph.sizes
    counts = (Counter(classes[:first]), Counter(classes[first:]))
    differing = sum(((counts[0] - counts[1]) + (counts[1] - counts[0])).values())
    checks.append(
        StructureCheck(
            name="colour_classes",
            passed=differing == 0,
            detail=f"{len(counts[0])} reference classes, {len(counts[1])} generated classes, "
            f"{differing} nodes in classes that do not match",
        )
    )
    if differing:
        return _grade(Verdict.WRONG, checks, "the refined colour classes differ (sizes included)")

    results = []
    for offset, size in ((0, first), (first, second)):
        members: dict[int, list[int]] = {}
        for node in range(offset, offset + size):
            members.setdefault(classes[node], []).append(node)
        results.append(sufficiency(list(members.values()), graph.neighbours))
    sufficient = results[0][0] and results[1][0]
    checks.append(
        StructureCheck(
            name="sufficiency",
            passed=sufficient,
            detail=f"reference: {results[0][1]}; generated: {results[1][1]}",
        )
    )
    if not sufficient:
        return _grade(
            Verdict.NOT_DETERMINABLE,
            checks,
            "the colourings agree but the graph has symmetries colour refinement cannot resolve",
        )
    return _grade(Verdict.CORRECT, checks, None)


def _nonlinear_parts(model: LinearModel) -> str:
    parts = []
    if model.q_obj:
        parts.append(f"{len(model.q_obj)} quadratic objective terms")
    if model.n_quadratic_constraints:
        parts.append(f"{model.n_quadratic_constraints} quadratic constraints")
    if model.n_general_constraints:
        parts.append(f"{model.n_general_constraints} general constraints")
    if model.n_sos:
        parts.append(f"{model.n_sos} SOS")
    return ", ".join(parts)


def _same_number(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= max(ZERO_TOLERANCE, RELATIVE_TOLERANCE * max(abs(a), abs(b)))


def _scalar_failure(
    canonical: tuple[CanonicalModel, CanonicalModel], checks: list[StructureCheck]
) -> str | None:
    reference, generated = canonical
    checks.append(
        StructureCheck(
            name="trivially_infeasible",
            passed=reference.trivially_infeasible == generated.trivially_infeasible,
            detail=f"reference {reference.trivially_infeasible}, generated {generated.trivially_infeasible}",
        )
    )
    if reference.trivially_infeasible != generated.trivially_infeasible:
        return "only one model has a violated constraint without variables"
    constants = (reference.objective_constant, generated.objective_constant)
    checks.append(
        StructureCheck(
            name="objective_constant",
            passed=_same_number(*constants),
            detail=f"{constants[0]!r} vs {constants[1]!r} (after turning maximisation into minimisation)",
        )
    )
    if not _same_number(*constants):
        return f"objective constants differ ({constants[0]!r} vs {constants[1]!r})"
    for name, what, sizes in (
        ("variable_count", "variables in use", (len(reference.obj), len(generated.obj))),
        ("row_count", "rows left after normalisation", (len(reference.rows), len(generated.rows))),
    ):
        checks.append(
            StructureCheck(name=name, passed=sizes[0] == sizes[1], detail=f"{sizes[0]} vs {sizes[1]} {what}")
        )
        if sizes[0] != sizes[1]:
            return f"different numbers of {what} ({sizes[0]} vs {sizes[1]})"
    return None


def _magnitudes(canonical: tuple[CanonicalModel, CanonicalModel]) -> list[float]:
    values: list[float] = []
    for model in canonical:
        values.extend(abs(v) for v in model.obj)
        values.extend(abs(v) for v in model.lb)
        values.extend(abs(v) for v in model.ub)
        for row in model.rows:
            values.extend(abs(v) for v in row.vals)
            values.append(abs(row.lower))
            values.append(abs(row.upper))
    return values


def _build_graph(canonical: tuple[CanonicalModel, CanonicalModel], keys: _NumericKeys) -> _Graph:
    colours: list[tuple[int, ...]] = []
    neighbours: list[list[tuple[int, int]]] = []
    open_rows: list[int] = []
    sizes: list[int] = []
    for model in canonical:
        offset = len(colours)
        for j, kind in enumerate(model.vtype):
            colours.append((0, "CISN".index(kind), keys(model.obj[j]), keys(model.lb[j]), keys(model.ub[j])))
            neighbours.append([])
        for row in model.rows:
            node = len(colours)
            orientation, lower, upper = _orientation(keys(row.lower), keys(row.upper))
            row_kind = 1 if lower == upper else (2 if upper == _INFINITE_KEY else 3)
            colours.append((1, row_kind, lower, upper))
            neighbours.append([])
            if orientation == 0:
                open_rows.append(node)
            sign = -1 if orientation < 0 else 1
            for col, value in zip(row.cols, row.vals, strict=True):
                label = sign * keys(value)
                neighbours[node].append((offset + col, label))
                neighbours[offset + col].append((node, label))
        sizes.append(len(colours) - offset)
    return _Graph(colours, neighbours, open_rows, (sizes[0], sizes[1]))


def _refine(graph: _Graph) -> list[int]:
    """Stable colour classes (canonical integer ids) of every node in ``graph``."""
    colour = _canonical_ids(graph.colours)
    count = len(set(colour))
    while True:
        orientation: dict[int, int] = {}
        open_views: dict[int, list[tuple[int, int]]] = {}
        for row in graph.open_rows:
            plus = sorted((colour[u], label) for u, label in graph.neighbours[row])
            minus = sorted((colour[u], -label) for u, label in graph.neighbours[row])
            orientation[row] = (plus < minus) - (minus < plus)
            open_views[row] = min(plus, minus)
        signatures: list[tuple[int, ...]] = []
        for node, adjacent in enumerate(graph.neighbours):
            view = open_views.get(node)
            if view is None:
                view = sorted((colour[u], _seen_label(orientation.get(u), label)) for u, label in adjacent)
            signatures.append((colour[node], *chain.from_iterable(view)))
        colour = _canonical_ids(signatures)
        refined = len(set(colour))
        if refined == count:
            return colour
        count = refined


def _seen_label(orientation: int | None, label: int) -> int:
    """The edge label as a variable sees it: oriented by an open row's current orientation, or
    reduced to its magnitude when that row is symmetric."""
    if orientation is None or orientation > 0:
        return label
    if orientation < 0:
        return -label
    return _SYMMETRIC_EDGE + abs(label)


def _canonical_ids(signatures: list[tuple[int, ...]]) -> list[int]:
    """Replace each signature by its rank among the distinct signatures, so ids depend only on
    what the signatures say, never on node order."""
    ordered = {signature: k for k, signature in enumerate(sorted(set(signatures)))}
    return [ordered[signature] for signature in signatures]


def _grade(verdict: Verdict, checks: list[StructureCheck], failure: str | None) -> Grade:
    evidence = StructureEvidence(checks=tuple(checks))
    if verdict is Verdict.CORRECT:
        reason = "The models are the same linear program up to renaming, reordering and row scaling."
    elif verdict is Verdict.WRONG:
        reason = f"The models differ: {failure}."
    else:
        reason = f"Equivalence cannot be decided: {failure}."
    return Grade(verdict=verdict, rule=RULE, reason=reason, evidence=evidence)


RULE_OBJECT = CheckRule(
    name="orgeval-fixed",
    version=VERSION,
    description="structural equivalence incl. sense, constant, bounds, integrality, class sizes",
    check=check_fixed,
)
build = RULE_OBJECT.build
"""The registry factory (the rule takes no parameters)."""
