"""Write a :class:`~trex_eval.records.LinearModel` as an LP file in Gurobi's dialect.

The text reads back, with :func:`~trex_eval.lp.parse_lp` or ``gurobipy.read()``, into the same
model: ``parse_lp(write_lp(m)) == m`` for every model ``parse_lp`` produces. To get there:

* every variable is listed in the objective in model order (``0 x`` when its coefficient is
  zero), so the reader numbers the variables as the model does;
* numbers are written with Python's shortest round-trip ``repr`` (``1e+100`` stands for an
  infinite objective coefficient); matrix entries appear in column order;
* a non-zero objective constant is written as Gurobi writes it: ``+ c Constant`` in the objective
  and ``Constant = 1`` in ``Bounds`` (a model that already has a variable called ``Constant``
  cannot carry a constant through LP text, with Gurobi or here);
* as in Gurobi's writer, whitespace and ``:`` in names become ``_``; an empty variable name is
  written ``C<index>`` and an empty row name ``R<index>``; names that repeat collapse into one
  variable on reading, exactly as they do through Gurobi;
* a row with both sides finite and different (a range) is written as Gurobi writes one:
  ``name: a.x + Rg<name> = upper`` with a new variable ``0 <= Rg<name> <= upper - lower``
  appended after the model's variables; a row with no finite side is written ``>= -1e+100``.

Held quadratic constraints (``name: a.x + [ q x * y ] sense rhs``, after the rows), indicators
(``name: b = v -> a.x sense rhs``) and SOS sets (an ``SOS`` section) are written too; a model
that counts parts it does not hold, or a two-sided quadratic or indicator row, cannot be
written: that raises :class:`~trex_eval.errors.GradingError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from trex_eval.errors import GradingError
from trex_eval.lp.senses import row_sense
from trex_eval.records import LinearModel

_LINE_WIDTH = 100
_UNSAFE_NAME = re.compile(r"[\s:]")


def write_lp(model: LinearModel) -> str:
    """Render ``model`` as Gurobi-dialect LP text (see the module docstring for the contract).

    Raises:
        GradingError: the model has quadratic constraints, general constraints or SOS.
    """
    if (
        model.n_quadratic_constraints > len(model.q_constraints)
        or model.n_general_constraints > len(model.indicators)
        or model.n_sos > len(model.sos)
    ):
        raise GradingError(
            "cannot write an LP file for a model whose quadratic constraints, general constraints "
            "or SOS are only counted, not held",
            hint="write such models with the solver that built them",
        )
    names = [_safe(name, f"C{j}") for j, name in enumerate(model.var_names)]
    lines = ["\\ LP format - written by trex-eval", "Maximize" if model.sense == "max" else "Minimize"]
    lines.extend(_wrapped(" ", list(_objective_terms(model, names))))
    lines.append("Subject To")
    ranges: list[tuple[str, float]] = []
    for i, terms in enumerate(_row_terms(model, names)):
        row_name = _safe(model.row_names[i], f"R{i}")
        lower, upper = model.row_lower[i], model.row_upper[i]
        sense = row_sense(lower, upper)
        if sense is None:
            range_name = f"Rg{row_name}"
            terms.append(f"+ {range_name}")
            ranges.append((range_name, upper - lower))
            lines.extend(_wrapped(f" {row_name}:", [*terms, "=", _number(upper)]))
        else:
            operator = {"<": "<=", ">": ">=", "=": "="}[sense[0]]
            rhs = "-1e+100" if sense[1] == -math.inf else _number(sense[1])
            lines.extend(_wrapped(f" {row_name}:", [*terms, operator, rhs]))
    for k, constraint in enumerate(model.q_constraints):
        terms = [_term(a, names[j], first=n == 0) for n, (j, a) in enumerate(constraint.linear)]
        terms.append("+ [" if terms else "[")
        for n, (i, j, q) in enumerate(constraint.quadratic):
            product = f"{names[i]} ^2" if i == j else f"{names[i]} * {names[j]}"
            terms.append(_term(q, product, first=n == 0))
        terms.append("]")
        lines.extend(_wrapped(f" qc{k}:", [*terms, *_one_sided(constraint.lower, constraint.upper)]))
    for k, indicator in enumerate(model.indicators):
        terms = [_term(a, names[j], first=n == 0) for n, (j, a) in enumerate(indicator.linear)]
        head = [names[indicator.binary], "=", str(indicator.value), "->"]
        lines.extend(_wrapped(f" ind{k}:", [*head, *terms, *_one_sided(indicator.lower, indicator.upper)]))
    lines.append("Bounds")
    for j, name in enumerate(names):
        bound = _bound_line(name, model.lb[j], model.ub[j], model.vtype[j])
        if bound:
            lines.append(f" {bound}")
    for range_name, width in ranges:
        lines.append(f" {range_name} <= {_number(width)}")
    if model.objective_constant != 0.0:
        lines.append(" Constant = 1")
    for header, kinds in (("Binaries", "B"), ("Generals", "IN"), ("Semi-continuous", "SN")):
        members = [names[j] for j, kind in enumerate(model.vtype) if kind in kinds]
        if members:
            lines.append(header)
            lines.extend(_wrapped(" ", members))
    if model.sos:
        lines.append("SOS")
        for k, sos in enumerate(model.sos):
            members = [f"{names[j]}:{_number(w)}" for j, w in sos.members]
            lines.extend(_wrapped(f" sos{k}: S{sos.type} ::", members))
    lines.append("End")
    return "\n".join(lines) + "\n"


def _one_sided(lower: float, upper: float) -> list[str]:
    sense = row_sense(lower, upper)
    if sense is None:
        raise GradingError("cannot write a two-sided quadratic or indicator constraint in LP text")
    operator = {"<": "<=", ">": ">=", "=": "="}[sense[0]]
    return [operator, "-1e+100" if sense[1] == -math.inf else _number(sense[1])]


def _safe(name: str, fallback: str) -> str:
    return _UNSAFE_NAME.sub("_", name) if name else fallback


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _term(coefficient: float, name: str, *, first: bool) -> str:
    if coefficient >= 1e100:
        magnitude, negative = "1e+100 ", False
    elif coefficient <= -1e100:
        magnitude, negative = "1e+100 ", True
    else:
        negative = math.copysign(1.0, coefficient) < 0
        magnitude = "" if abs(coefficient) == 1.0 else f"{_number(abs(coefficient))} "
    sign = "- " if negative else ("" if first else "+ ")
    return f"{sign}{magnitude}{name}"


def _objective_terms(model: LinearModel, names: list[str]) -> Iterator[str]:
    for j, name in enumerate(names):
        yield _term(model.obj[j], name, first=j == 0)
    if model.objective_constant != 0.0:
        yield _term(model.objective_constant, "Constant", first=not names)
    if model.q_obj:
        yield "+ [" if names or model.objective_constant != 0.0 else "["
        for k, (i, j, q) in enumerate(model.q_obj):
            product = f"{names[i]} ^2" if i == j else f"{names[i]} * {names[j]}"
            # The reader halves the bracket ("/ 2"); doubling first is exact in binary floating point.
            yield _term(2.0 * q, product, first=k == 0)
        yield "] / 2"


def _row_terms(model: LinearModel, names: list[str]) -> list[list[str]]:
    rows: list[list[str]] = [[] for _ in model.row_names]
    for i, j, value in sorted(zip(model.a_row, model.a_col, model.a_val, strict=True)):
        rows[i].append(_term(value, names[j], first=not rows[i]))
    return rows


def _bound_line(name: str, lower: float, upper: float, vtype: str) -> str:
    default_upper = 1.0 if vtype == "B" else math.inf
    lower_is_default = lower == 0.0 and math.copysign(1.0, lower) > 0
    upper_is_default = upper == default_upper
    if lower_is_default and upper_is_default:
        return ""
    if lower == -math.inf and upper == math.inf:
        return f"{name} free"
    if lower == upper:
        return f"{name} = {_number(lower)}"
    if upper_is_default:
        return f"{name} >= {_number(lower)}"
    if lower_is_default:
        return f"{name} <= {_number(upper)}"
    return f"{_number(lower)} <= {name} <= {_number(upper)}"


def _wrapped(prefix: str, tokens: list[str]) -> list[str]:
    lines: list[str] = []
    current = prefix
    for token in tokens:
        if len(current) + 1 + len(token) > _LINE_WIDTH and current.strip():
            lines.append(current)
            current = "  "
        current = f"{current} {token}" if current else token
    if current.strip() or not lines:
        lines.append(current)
    return lines
