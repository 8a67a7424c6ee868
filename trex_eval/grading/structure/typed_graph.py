"""The typed graph of a model for ``orgeval-exact``: every part of the model that changes its
feasible set or objective is a node or an edge, so that two models are the same up to renaming,
reordering and the normalisations of :mod:`~trex_eval.grading.structure.canonical` exactly when
their graphs are isomorphic (colours and edge labels respected). Pure.

Nodes (the first entry of a node's colour is its kind):

* **variable** ``(VAR, type, objective, lower, upper)`` after canonicalisation (minimisation,
  binaries as ``[0, 1]`` integers, single-entry rows folded into sign-correct bounds);
* **linear row** ``(ROW, kind, lower, upper)``, divided by its largest ``|a|`` and oriented
  (``<=`` rows negated into ``>=``; equalities and ranges by the sign of their midpoint);
  one edge per entry, labelled with the oriented coefficient's key;
* **quadratic row** ``(QROW, kind, lower, upper)``, scaled and oriented the same way over its
  linear and quadratic coefficients; an edge to each variable of its linear part and to the
  monomial node of each quadratic term, labelled with the coefficient's key;
* **monomial** ``(MONOMIAL, square, objective)``, one per product ``x_i x_j`` used anywhere,
  carrying its quadratic objective coefficient; ``FACTOR`` edges to ``x_i`` and ``x_j`` (one
  ``SQUARE`` edge for ``x_i^2``);
* **SOS set** ``(SOS, type)`` with ``MEMBER`` edges; a type-2 set also has one **link** node
  ``(LINK,)`` per pair of members adjacent in weight order (``ADJACENT`` edges to both members,
  ``OWNER`` to the set): the weights themselves do not change the feasible set, their order
  does, and reversing it does not;
* **indicator** ``(INDICATOR, value, kind, lower, upper)``, a row as above plus a ``BINARY``
  edge to its indicator variable.

A row whose orientation is open (both sides finite with a zero midpoint: ``a.x = 0``,
``-5 <= a.x <= 5``) is the same row negated, so it becomes two nodes of one colour joined by a
``PAIR`` edge, one with the coefficients and one with their negations: the graph is then the
same whichever orientation the model wrote, and an isomorphism maps the pair to a pair.

Numbers are compared through shared :class:`~trex_eval.grading.structure.keys.NumericKeys`
(relative ``1e-9``), built over both models at once.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from trex_eval.grading.structure.canonical import CanonicalModel, canonicalise
from trex_eval.grading.structure.keys import INFINITE_KEY, NumericKeys, orientation
from trex_eval.records import LinearModel

VAR, ROW, QROW, MONOMIAL, SOS, LINK, INDICATOR = range(7)
"""Node kinds, the first entry of every node colour."""

_SPECIAL = 1 << 42
FACTOR, SQUARE, MEMBER, ADJACENT, OWNER, BINARY, PAIR = (_SPECIAL + k for k in range(7))
"""Edge labels that are not coefficients (above every numeric key)."""


@dataclass(frozen=True, slots=True)
class Terms:
    """``lower <= sum(linear) + sum(quadratic) <= upper``, scaled so the largest ``|coefficient|``
    is 1 (columns are canonical indices)."""

    linear: tuple[tuple[int, float], ...]
    quadratic: tuple[tuple[int, int, float], ...]
    lower: float
    upper: float


@dataclass(frozen=True, slots=True)
class TypedForm:
    """A model in canonical form, non-linear parts included."""

    linear: CanonicalModel
    quadratic_objective: tuple[tuple[int, int, float], ...]
    quadratic_rows: tuple[Terms, ...]
    sos: tuple[tuple[int, tuple[int, ...]], ...]
    """``(type, members)``, members of a type-2 set in weight order."""
    indicators: tuple[tuple[int, int, Terms], ...]
    """``(binary column, value, implied row)``."""
    trivially_infeasible: bool


def unheld_parts(model: LinearModel) -> str:
    """The parts ``model`` counts but does not hold (empty when it holds everything), e.g. a
    captured matrix whose hook could not read its quadratic constraints, or general
    constraints other than indicators."""
    missing = []
    for count, held, what in (
        (model.n_quadratic_constraints, len(model.q_constraints), "quadratic constraints"),
        (model.n_sos, len(model.sos), "SOS sets"),
        (model.n_general_constraints, len(model.indicators), "general constraints"),
    ):
        if count > held:
            missing.append(f"{count - held} {what}")
    return ", ".join(missing)


def typed_form(model: LinearModel) -> TypedForm:
    """Canonical form of ``model`` with its quadratic, SOS and indicator parts (module docstring).

    A quadratic constraint without quadratic terms is a linear row and is treated as one.
    """
    model = _linear_quadratic_rows_as_rows(model)
    used = _columns_outside_rows(model)
    linear = canonicalise(model, used=used)
    position = {original: new for new, original in enumerate(linear.original_index)}
    flip = -1.0 if model.sense == "max" else 1.0
    infeasible = linear.trivially_infeasible
    quadratic_rows = []
    for constraint in model.q_constraints:
        terms = _scaled(
            [(position[j], a) for j, a in constraint.linear],
            [(position[i], position[j], q) for i, j, q in constraint.quadratic],
            constraint.lower,
            constraint.upper,
        )
        if terms is None:
            infeasible = infeasible or not constraint.lower <= 0.0 <= constraint.upper
        elif math.isfinite(terms.lower) or math.isfinite(terms.upper):
            quadratic_rows.append(terms)
    sos = []
    for sos_set in model.sos:
        ordered = sorted(sos_set.members, key=lambda member: (member[1], position[member[0]]))
        sos.append((sos_set.type, tuple(position[j] for j, _ in ordered)))
    indicators = []
    for indicator in model.indicators:
        implied = _scaled(
            [(position[j], a) for j, a in indicator.linear], [], indicator.lower, indicator.upper
        ) or Terms((), (), indicator.lower, indicator.upper)
        indicators.append((position[indicator.binary], indicator.value, implied))
    return TypedForm(
        linear=linear,
        quadratic_objective=tuple((position[i], position[j], flip * q) for i, j, q in model.q_obj),
        quadratic_rows=tuple(quadratic_rows),
        sos=tuple(sos),
        indicators=tuple(indicators),
        trivially_infeasible=infeasible,
    )


def _linear_quadratic_rows_as_rows(model: LinearModel) -> LinearModel:
    linear_only = [c for c in model.q_constraints if not c.quadratic]
    if not linear_only:
        return model
    a_row, a_col, a_val = list(model.a_row), list(model.a_col), list(model.a_val)
    for k, constraint in enumerate(linear_only):
        for j, a in constraint.linear:
            a_row.append(model.num_rows + k)
            a_col.append(j)
            a_val.append(a)
    return model.model_copy(
        update={
            "row_names": model.row_names + tuple(f"q{k}" for k in range(len(linear_only))),
            "row_lower": model.row_lower + tuple(c.lower for c in linear_only),
            "row_upper": model.row_upper + tuple(c.upper for c in linear_only),
            "a_row": tuple(a_row),
            "a_col": tuple(a_col),
            "a_val": tuple(a_val),
            "q_constraints": tuple(c for c in model.q_constraints if c.quadratic),
        }
    )


def _columns_outside_rows(model: LinearModel) -> frozenset[int]:
    used: set[int] = set()
    used.update(k for i, j, _ in model.q_obj for k in (i, j))
    for constraint in model.q_constraints:
        used.update(j for j, _ in constraint.linear)
        used.update(k for i, j, _ in constraint.quadratic for k in (i, j))
    for sos_set in model.sos:
        used.update(j for j, _ in sos_set.members)
    for indicator in model.indicators:
        used.add(indicator.binary)
        used.update(j for j, _ in indicator.linear)
    return frozenset(used)


def _scaled(
    linear: list[tuple[int, float]], quadratic: list[tuple[int, int, float]], lower: float, upper: float
) -> Terms | None:
    """Merged, zero-free terms divided by their largest magnitude; ``None`` without terms."""
    lin: dict[int, float] = {}
    for j, a in linear:
        lin[j] = lin.get(j, 0.0) + a
    quad: dict[tuple[int, int], float] = {}
    for i, j, q in quadratic:
        key = (min(i, j), max(i, j))
        quad[key] = quad.get(key, 0.0) + q
    lin = {j: a for j, a in lin.items() if a != 0.0}
    quad = {k: q for k, q in quad.items() if q != 0.0}
    if not lin and not quad:
        return None
    scale = max(abs(v) for v in (*lin.values(), *quad.values()))
    return Terms(
        linear=tuple((j, lin[j] / scale) for j in sorted(lin)),
        quadratic=tuple((i, j, quad[i, j] / scale) for i, j in sorted(quad)),
        lower=lower / scale,
        upper=upper / scale,
    )


def magnitudes(forms: tuple[TypedForm, TypedForm]) -> list[float]:
    """Every magnitude that becomes a numeric key, in both forms."""
    values: list[float] = []
    for form in forms:
        model = form.linear
        values.extend(abs(v) for v in (*model.obj, *model.lb, *model.ub))
        for row in model.rows:
            values.extend(abs(v) for v in (*row.vals, row.lower, row.upper))
        values.extend(abs(q) for _, _, q in form.quadratic_objective)
        implied = [terms for _, _, terms in form.indicators]
        for terms in (*form.quadratic_rows, *implied):
            values.extend(abs(a) for _, a in terms.linear)
            values.extend(abs(q) for _, _, q in terms.quadratic)
            values.extend((abs(terms.lower), abs(terms.upper)))
    return values


@dataclass(slots=True)
class Graph:
    """Nodes with colour tuples and undirected labelled edges (each in both adjacency lists)."""

    colours: list[tuple[int, ...]] = field(default_factory=list)
    adjacency: list[list[tuple[int, int]]] = field(default_factory=list)
    open_pairs: int = 0

    def node(self, colour: tuple[int, ...]) -> int:
        self.colours.append(colour)
        self.adjacency.append([])
        return len(self.colours) - 1

    def edge(self, u: int, v: int, label: int) -> None:
        self.adjacency[u].append((v, label))
        self.adjacency[v].append((u, label))

    def constraint(
        self,
        prefix: tuple[int, ...],
        sides: tuple[int, int],
        terms: list[tuple[int, int]],
        fixed: tuple[tuple[int, int], ...] = (),
    ) -> None:
        """A row-like node: oriented, or a ``PAIR`` of both orientations when open."""
        sign, lower, upper = orientation(*sides)
        kind = 1 if lower == upper else (2 if upper == INFINITE_KEY else 3)
        colour = (*prefix, kind, lower, upper)
        nodes = [(self.node(colour), 1 if sign >= 0 else -1)]
        if sign == 0:
            nodes.append((self.node(colour), -1))
            self.edge(nodes[0][0], nodes[1][0], PAIR)
            self.open_pairs += 1
        for node, factor in nodes:
            for target, key in terms:
                self.edge(node, target, factor * key)
            for target, label in fixed:
                self.edge(node, target, label)


def build_graph(form: TypedForm, keys: NumericKeys) -> Graph:
    """The typed graph of one model (module docstring); variables are nodes ``0 .. n-1``."""
    graph = Graph()
    model = form.linear
    for j, kind in enumerate(model.vtype):
        graph.node((VAR, "CISN".index(kind), keys(model.obj[j]), keys(model.lb[j]), keys(model.ub[j])))
    for row in model.rows:
        graph.constraint(
            (ROW,),
            (keys(row.lower), keys(row.upper)),
            [(col, keys(value)) for col, value in zip(row.cols, row.vals, strict=True)],
        )
    objective = {(i, j): q for i, j, q in form.quadratic_objective}
    products = set(objective)
    products.update((i, j) for terms in form.quadratic_rows for i, j, _ in terms.quadratic)
    monomial: dict[tuple[int, int], int] = {}
    for i, j in sorted(products):
        node = graph.node((MONOMIAL, int(i == j), keys(objective.get((i, j), 0.0))))
        monomial[i, j] = node
        if i == j:
            graph.edge(node, i, SQUARE)
        else:
            graph.edge(node, i, FACTOR)
            graph.edge(node, j, FACTOR)
    for terms in form.quadratic_rows:
        graph.constraint(
            (QROW,),
            (keys(terms.lower), keys(terms.upper)),
            [(j, keys(a)) for j, a in terms.linear]
            + [(monomial[i, j], keys(q)) for i, j, q in terms.quadratic],
        )
    for sos_type, members in form.sos:
        owner = graph.node((SOS, sos_type))
        for member in members:
            graph.edge(owner, member, MEMBER)
        if sos_type == 2:
            for left, right in itertools.pairwise(members):
                link = graph.node((LINK,))
                graph.edge(link, left, ADJACENT)
                graph.edge(link, right, ADJACENT)
                graph.edge(link, owner, OWNER)
    for binary, value, implied in form.indicators:
        graph.constraint(
            (INDICATOR, value),
            (keys(implied.lower), keys(implied.upper)),
            [(j, keys(a)) for j, a in implied.linear],
            fixed=((binary, BINARY),),
        )
    return graph
