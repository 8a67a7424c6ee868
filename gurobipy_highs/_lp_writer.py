"""Write a :class:`~._snapshot.Snapshot` in Gurobi's LP dialect, byte for byte as gurobipy 13.

Layout (all measured against gurobipy 13.0.3):

* ``\\ Model <name>`` (only for a named model), then Gurobi's "LP format" comment line;
* ``Minimize``/``Maximize`` and the objective: linear terms in column order, ``0 <var>`` for
  each variable that appears in no linear or quadratic term (so the file declares it),
  ``<c> Constant`` for the objective constant, then ``[ ... ] / 2`` with doubled quadratic
  coefficients; ``x ^2`` for squares and ``x * y`` for products;
* ``Subject To``: linear rows, quadratic rows (``[ ... ]`` without ``/ 2``), indicator rows
  (``b = 1 -> row``); unnamed rows are ``R<i>``, ``qc<i>``, ``GC<i>``;
* ``Bounds`` (always present), ``Binaries``, ``Generals``, ``Semi-continuous``, ``SOS``,
  ``General Constraints``, ``End``.

Lines are wrapped the way Gurobi wraps them: a token that would make the line longer than 75
characters starts a continuation line indented by two spaces (a row's name counts as content,
the objective's leading indentation does not). Spaces and colons in names become underscores.
Numbers use :func:`~._numfmt.gurobi_number`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ._numfmt import gurobi_number
from ._snapshot import GeneralRow, Snapshot

_LINE_LIMIT = 75
#: Gurobi declares the ``Constant`` column in ``Bounds`` only for constants above this size
#: (smaller ones still appear in the objective).
_CONSTANT_DECLARED = 1e-10
_SENSE_TEXT = {"<": "<=", ">": ">=", "=": "="}


def lp_name(name: str) -> str:
    """``name`` as the LP writer prints it (spaces and colons replaced by underscores)."""
    return name.replace(" ", "_").replace(":", "_")


class _Wrapper:
    """Accumulates tokens into lines with Gurobi's wrapping rule.

    A token starts a new line (indented by two spaces, four in SOS sets) when the line would otherwise exceed
    :data:`_LINE_LIMIT` characters — one less for a right-hand side, one more on the first line
    of the objective (measured: gurobipy counts that line's two-space indent as one).
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._line = ""
        self._content = False
        self._slack = 0
        self._indent = "  "

    def start(self, header: str, *, header_is_content: bool, slack: int = 0, indent: str = "  ") -> None:
        self._line = header
        self._content = header_is_content
        self._slack = slack
        self._indent = indent

    def add(self, token: str, *, limit: int = _LINE_LIMIT) -> None:
        if self._content and len(self._line) + len(token) > limit + self._slack:
            self.lines.append(self._line)
            self._line = self._indent + token
            self._slack = 0
        else:
            self._line += token
        self._content = True

    def add_rhs(self, token: str) -> None:
        """A closing token (right-hand side, closing bracket): one character less room."""
        self.add(token, limit=_LINE_LIMIT - 1)

    def finish(self, suffix: str = "") -> None:
        self.lines.append(self._line + suffix)
        self._line = ""
        self._content = False
        self._slack = 0

    def raw(self, line: str) -> None:
        self.lines.append(line)


def _term(coeff: float, name: str, *, first: bool) -> str:
    text = gurobi_number(abs(coeff))
    body = name if text == "1" else f"{text} {name}"
    if coeff < 0 or (coeff == 0.0 and math.copysign(1.0, coeff) < 0):
        return f" - {body}"
    return f" {body}" if first else f" + {body}"


def _linear_terms(out: _Wrapper, terms: Iterable[tuple[float, str]], *, first: bool) -> bool:
    for coeff, name in terms:
        out.add(_term(coeff, name, first=first))
        first = False
    return first


def _quad_terms(
    out: _Wrapper,
    quad: Sequence[tuple[int, int, float]],
    names: Sequence[str],
    *,
    first: bool,
    opening: str = " [",
) -> None:
    out.add(opening if first else " + [")
    for k, (i, j, q) in enumerate(quad):
        product = f"{names[i]} ^2" if i == j else f"{names[i]} * {names[j]}"
        out.add(_term(q, product, first=k == 0))


def _rhs(sense: str, rhs: float) -> str:
    return f" {_SENSE_TEXT[sense]} {gurobi_number(rhs)}"


def write_lp(snap: Snapshot) -> str:
    """The LP file text for ``snap`` (ends with a newline)."""
    names = [lp_name(n) for n in snap.var_names]
    out = _Wrapper()
    if snap.name:
        out.raw(f"\\ Model {snap.name}")
    out.raw("\\ LP format - for model browsing. Use MPS format to capture full model detail.")
    out.raw("Maximize" if snap.sense < 0 else "Minimize")
    _objective(out, snap, names)
    out.raw("Subject To")
    for row in snap.rows:
        out.start(f" {lp_name(row.name)}:", header_is_content=True)
        _linear_terms(out, ((v, names[c]) for c, v in zip(row.cols, row.vals, strict=True)), first=True)
        out.add_rhs(_rhs(row.sense, row.rhs))
        out.finish()
    for qrow in snap.qrows:
        out.start(f" {lp_name(qrow.name)}:", header_is_content=True)
        first = _linear_terms(
            out, ((v, names[c]) for c, v in zip(qrow.cols, qrow.vals, strict=True)), first=True
        )
        if qrow.quad:
            _quad_terms(out, qrow.quad, names, first=first)
            out.add(" ]")
        out.add_rhs(_rhs(qrow.sense, qrow.rhs))
        out.finish()
    for general in snap.general:
        if general.kind == "indicator":
            _indicator(out, general, names)
    out.raw("Bounds")
    _bounds(out, snap, names)
    _name_section(out, "Binaries", [names[j] for j, t in enumerate(snap.vtype) if t == "B"])
    _name_section(out, "Generals", [names[j] for j, t in enumerate(snap.vtype) if t in ("I", "N")])
    _name_section(out, "Semi-continuous", [names[j] for j, t in enumerate(snap.vtype) if t in ("S", "N")])
    if snap.sos:
        out.raw("SOS")
        for k, sos in enumerate(snap.sos):
            out.start(f" s{k}:  S{sos.sos_type} ::", header_is_content=True, indent="    ")
            for c, w in zip(sos.cols, sos.weights, strict=True):
                out.add(f" {names[c]}:{gurobi_number(w)}")
            out.finish()
    functions = [g for g in snap.general if g.kind != "indicator"]
    if functions:
        out.raw("General Constraints")
        for general in functions:
            _general(out, general, names)
    out.raw("End")
    return "\n".join(out.lines) + "\n"


def _objective(out: _Wrapper, snap: Snapshot, names: Sequence[str]) -> None:
    used = [False] * snap.num_vars
    for row in snap.rows:
        for c in row.cols:
            used[c] = True
    for qrow in snap.qrows:
        for c in qrow.cols:
            used[c] = True
        for i, j, _q in qrow.quad:
            used[i] = used[j] = True
    for i, j, _q in snap.q_obj:
        used[i] = used[j] = True
    out.start(" ", header_is_content=False, slack=1)
    first = True
    for j, coeff in enumerate(snap.obj):
        if coeff != 0.0:
            out.add(_term(coeff, names[j], first=first))
            first = False
        elif not used[j]:
            out.add(f" 0 {names[j]}" if first else f" + 0 {names[j]}")
            first = False
    if snap.obj_constant != 0.0:
        # gurobipy signs the constant even when it comes first
        out.add(_term(snap.obj_constant, "Constant", first=False))
        first = False
    if snap.q_obj:
        # an objective that starts with its quadratic part opens the bracket without indent
        _quad_terms(out, [(i, j, 2.0 * q) for i, j, q in snap.q_obj], names, first=first, opening="[")
        out.add_rhs(" ] / 2")
        out.finish(" ")
    else:
        out.finish()


def _indicator(out: _Wrapper, general: GeneralRow, names: Sequence[str]) -> None:
    data = general.data
    binvar = data["binvar"]
    cols = data["cols"]
    vals = data["vals"]
    sense = data["sense"]
    rhs = data["rhs"]
    assert isinstance(binvar, int) and isinstance(cols, tuple) and isinstance(vals, tuple)
    assert isinstance(sense, str) and isinstance(rhs, float)
    out.start(
        f" {lp_name(general.name)}: {names[binvar]} = {1 if data['binval'] else 0} ->", header_is_content=True
    )
    _linear_terms(out, ((v, names[c]) for c, v in zip(cols, vals, strict=True)), first=True)
    out.add_rhs(_rhs(sense, rhs))
    out.finish()


def _bounds(out: _Wrapper, snap: Snapshot, names: Sequence[str]) -> None:
    for j, name in enumerate(names):
        lb, ub = snap.lb[j], snap.ub[j]
        if snap.vtype[j] == "B" and lb == 0.0 and ub == 1.0:
            continue
        free_below, free_above = math.isinf(lb), math.isinf(ub)
        if free_below and free_above:
            out.raw(f" {name} free")
        elif lb == ub:
            out.raw(f" {name} = {gurobi_number(lb)}")
        elif free_below:
            out.raw(f" -infinity <= {name} <= {gurobi_number(ub)}")
        elif free_above:
            if lb != 0.0:
                out.raw(f" {name} >= {gurobi_number(lb)}")
        elif lb == 0.0:
            out.raw(f" {name} <= {gurobi_number(ub)}")
        else:
            out.raw(f" {gurobi_number(lb)} <= {name} <= {gurobi_number(ub)}")
    if abs(snap.obj_constant) > _CONSTANT_DECLARED:
        out.raw(" Constant = 1")


def _name_section(out: _Wrapper, title: str, members: Sequence[str]) -> None:
    if not members:
        return
    out.raw(title)
    line = ""
    for name in members:
        if line and len(line) + 1 + len(name) > _LINE_LIMIT:
            out.raw(line)
            line = ""
        line += " " + name
    out.raw(line)


def _general(out: _Wrapper, general: GeneralRow, names: Sequence[str]) -> None:
    """One function constraint, e.g. ``mx: z = MAX ( x , y , 3 )``, wrapped like a row."""
    data = general.data
    head = f" {lp_name(general.name)}:"
    cols = data.get("cols", ())
    assert isinstance(cols, tuple)
    operands = [names[c] for c in cols]
    resvar = data.get("resvar")
    if isinstance(resvar, int):
        head += f" {names[resvar]} ="
    constant = data.get("constant")
    if general.kind in ("max", "min") and isinstance(constant, float) and not math.isinf(constant):
        operands.append(gurobi_number(constant))
    if general.kind == "norm":
        which = data["constant"] if "which" not in data else data["which"]
        assert isinstance(which, float)
        label = "Inf" if math.isinf(which) or which >= 1e100 else gurobi_number(which)
        head += f" NORM ( {label} ) ("
    elif general.kind == "pwl":
        xvar, yvar = data["xvar"], data["yvar"]
        xpts, ypts = data["xpts"], data["ypts"]
        assert isinstance(xvar, int) and isinstance(yvar, int)
        assert isinstance(xpts, tuple) and isinstance(ypts, tuple)
        # points are separated by a space written before the line-break decision, so a broken
        # line keeps its trailing space and the next one starts with just the indent
        line = f"{head} {names[yvar]} = PWL ( {names[xvar]} ) : "
        for k, (x, y) in enumerate(zip(xpts, ypts, strict=True)):
            point = f"({gurobi_number(x)}, {gurobi_number(y)})"
            if len(line) + len(point) + 1 > _LINE_LIMIT:
                out.raw(line)
                line = "  "
            line += point if k == len(xpts) - 1 else point + " "
        out.raw(line)
        return
    elif general.kind in ("max", "min", "abs", "and", "or"):
        head += f" {general.kind.upper()} ("
    else:
        raise ValueError(f"unknown general constraint kind {general.kind!r}")
    out.start(head, header_is_content=True)
    variables, constants = operands[: len(cols)], operands[len(cols) :]
    tokens = [f" {name} ," if k < len(variables) - 1 else f" {name}" for k, name in enumerate(variables)]
    tokens.extend(f" , {value}" for value in constants)
    for token in tokens:
        out.add(token)
    out.finish(" )")  # the closing parenthesis is never considered for a line break
