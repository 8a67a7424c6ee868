"""General constraints rewritten as linear rows for HiGHS, exactly, where bounds allow.

:func:`reformulate` turns the general constraints of a :class:`~._snapshot.Snapshot` into rows
and new binary columns appended after the model's own (rows likewise after its rows):

* **indicator** ``b = v -> a'x (sense) rhs``: big-M rows ``a'x - rhs <= M (1 - b)`` (or ``M b``
  for ``v = 0``; ``>=`` mirrored, ``=`` both), ``M`` the largest violation ``a'x`` can reach
  within the variables' bounds;
* **max_** ``r = max(x_1..x_n, c)``: ``r >= x_i``, ``r >= c``, one binary ``z_i`` per operand
  with ``sum z = 1`` and ``r <= x_i + (U - lb x_i)(1 - z_i)``, ``U`` the largest operand bound;
  **min_** mirrored;
* **abs_** ``r = |x|``: ``r = x`` or ``r = -x`` when the sign of ``x`` is fixed by its bounds,
  else ``r >= x``, ``r >= -x``, ``r <= x + 2|lb|(1 - z)``, ``r <= -x + 2 ub z``;
* **and_**/**or_** over binaries: the exact linear rows (``r <= b_i``, ``r >= sum b - n + 1``;
  ``r >= b_i``, ``r <= sum b``) — no big-M.

As Gurobi does, the indicator variable and the operands and result of ``and_``/``or_`` are
binary whatever type they were declared with (bounds clipped to [0, 1]). A big-M that a bound
makes infinite raises :class:`NeedsGurobiError` (so does ``norm`` and PWL, not reformulated).
Because a big-M row holds only up to the solver's integrality tolerance, :func:`violations`
re-checks a solution against the original constraints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ._errors import GurobiError, NeedsGurobiError
from ._snapshot import GeneralRow, LinearRow, Snapshot

#: General constraint kinds rewritten here; the others stay and are refused by the solver check.
REFORMULATED = frozenset({"indicator", "max", "min", "abs", "and", "or"})


@dataclass
class _Builder:
    """The growing model: extra columns and rows on top of the snapshot's."""

    snap: Snapshot
    lb: list[float]
    ub: list[float]
    vtype: list[str]
    names: list[str]
    rows: list[LinearRow] = field(default_factory=list)

    def binary(self, name: str) -> int:
        self.lb.append(0.0)
        self.ub.append(1.0)
        self.vtype.append("B")
        self.names.append(name)
        return len(self.names) - 1

    def make_binary(self, col: int) -> None:
        self.lb[col] = max(self.lb[col], 0.0)
        self.ub[col] = min(self.ub[col], 1.0)
        if self.vtype[col] == "C":
            self.vtype[col] = "B"

    def row(self, name: str, terms: list[tuple[int, float]], sense: str, rhs: float) -> None:
        merged: dict[int, float] = {}
        for col, coeff in terms:
            merged[col] = merged.get(col, 0.0) + coeff
        cols = tuple(sorted(c for c, v in merged.items() if v != 0.0))
        self.rows.append(LinearRow(name, sense, rhs, cols, tuple(merged[c] for c in cols)))

    def activity_range(self, cols: tuple[int, ...], vals: tuple[float, ...]) -> tuple[float, float]:
        low = high = 0.0
        for col, coeff in zip(cols, vals, strict=True):
            ends = (coeff * self.lb[col], coeff * self.ub[col])  # merged rows: coeff != 0
            low += min(ends)
            high += max(ends)
        return low, high


def _infinite(general: GeneralRow, what: str) -> NeedsGurobiError:
    return NeedsGurobiError(
        f"{general.kind} general constraint {general.name} over {what} with an infinite bound "
        "(no exact big-M reformulation)"
    )


def _cols(general: GeneralRow) -> tuple[int, ...]:
    cols = general.data.get("cols", ())
    assert isinstance(cols, tuple)
    return cols


def _int(general: GeneralRow, key: str) -> int:
    value = general.data[key]
    assert isinstance(value, int)
    return value


def _indicator(b: _Builder, general: GeneralRow) -> None:
    binvar = _int(general, "binvar")
    b.make_binary(binvar)
    cols = _cols(general)
    vals = general.data["vals"]
    rhs, sense, when_one = general.data["rhs"], general.data["sense"], general.data["binval"]
    assert isinstance(vals, tuple) and isinstance(rhs, float) and isinstance(sense, str)
    low, high = b.activity_range(cols, vals)
    terms = list(zip(cols, vals, strict=True))
    for direction in ("<", ">") if sense == "=" else (sense,):
        slack = high - rhs if direction == "<" else rhs - low
        if slack <= 0.0:
            continue  # the row holds whatever b is
        if math.isinf(slack):
            raise _infinite(general, "a linear expression")
        # '<': a'x - rhs <= M (1 - b) for b = 1, <= M b for b = 0; '>' mirrored
        sign = 1.0 if direction == "<" else -1.0
        if when_one:
            b.row(general.name, [*terms, (binvar, sign * slack)], direction, rhs + sign * slack)
        else:
            b.row(general.name, [*terms, (binvar, -sign * slack)], direction, rhs)


def _extremum(b: _Builder, general: GeneralRow) -> None:
    """``max``: ``r = max(x_i, c)``; ``min`` is the mirror image (``sign = -1``)."""
    is_max = general.kind == "max"
    sign = 1.0 if is_max else -1.0
    result = _int(general, "resvar")
    cols = tuple(dict.fromkeys(_cols(general)))
    constant = general.data.get("constant")
    assert constant is None or isinstance(constant, float)
    if not cols and constant is None:
        raise GurobiError(10003, f'Empty general constraint "{general.name}" with infinite constant')
    # work in "max" orientation: values y = sign * x
    operands: list[tuple[int | None, float, float]] = []  # (col or None, lower y, upper y)
    for operand in cols:
        ends = (sign * b.lb[operand], sign * b.ub[operand])
        operands.append((operand, min(ends), max(ends)))
    if constant is not None:
        operands.append((None, sign * constant, sign * constant))
    for which, low, _high in operands:  # r >= every operand
        if which is None:
            b.row(general.name, [(result, sign)], ">", low)
        else:
            b.row(general.name, [(result, sign), (which, -sign)], ">", 0.0)
    if len(operands) == 1:
        only = operands[0][0]
        terms = [(result, sign)] if only is None else [(result, sign), (only, -sign)]
        b.row(general.name, terms, "<", operands[0][1] if only is None else 0.0)
        return
    top = max(high for _col, _low, high in operands)
    picks: list[tuple[int, float]] = []
    for k, (which, low, _high) in enumerate(operands):
        big_m = top - low
        if math.isinf(big_m):
            raise _infinite(general, "variables")
        z = b.binary(f"{general.name}_pick{k}")
        picks.append((z, 1.0))
        # sign*r <= y_k + M (1 - z_k)
        if which is None:
            b.row(general.name, [(result, sign), (z, big_m)], "<", low + big_m)
        else:
            b.row(general.name, [(result, sign), (which, -sign), (z, big_m)], "<", big_m)
    b.row(general.name, picks, "=", 1.0)


def _absolute(b: _Builder, general: GeneralRow) -> None:
    result, arg = _int(general, "resvar"), _cols(general)[0]
    low, high = b.lb[arg], b.ub[arg]
    if low >= 0.0:
        b.row(general.name, [(result, 1.0), (arg, -1.0)], "=", 0.0)
        return
    if high <= 0.0:
        b.row(general.name, [(result, 1.0), (arg, 1.0)], "=", 0.0)
        return
    if math.isinf(low) or math.isinf(high):
        raise _infinite(general, "a variable")
    z = b.binary(f"{general.name}_sign")  # z = 1: x >= 0
    b.row(general.name, [(result, 1.0), (arg, -1.0)], ">", 0.0)
    b.row(general.name, [(result, 1.0), (arg, 1.0)], ">", 0.0)
    b.row(general.name, [(result, 1.0), (arg, -1.0), (z, -2.0 * low)], "<", -2.0 * low)
    b.row(general.name, [(result, 1.0), (arg, 1.0), (z, -2.0 * high)], "<", 0.0)


def _logical(b: _Builder, general: GeneralRow) -> None:
    result = _int(general, "resvar")
    cols = tuple(dict.fromkeys(_cols(general)))
    for col in (result, *cols):
        b.make_binary(col)
    if general.kind == "and":
        for col in cols:
            b.row(general.name, [(result, 1.0), (col, -1.0)], "<", 0.0)
        b.row(general.name, [(result, 1.0)] + [(c, -1.0) for c in cols], ">", 1.0 - len(cols))
    else:
        for col in cols:
            b.row(general.name, [(result, 1.0), (col, -1.0)], ">", 0.0)
        b.row(general.name, [(result, 1.0)] + [(c, -1.0) for c in cols], "<", 0.0)


def reformulate(snap: Snapshot) -> Snapshot:
    """``snap`` with its indicator, max, min, abs, and and or constraints as linear rows (new
    binary columns after the original ones); other general constraints are kept as they are."""
    if not any(g.kind in REFORMULATED for g in snap.general):
        return snap
    b = _Builder(snap, list(snap.lb), list(snap.ub), list(snap.vtype), list(snap.var_names))
    kept: list[GeneralRow] = []
    for general in snap.general:
        if general.kind == "indicator":
            _indicator(b, general)
        elif general.kind in ("max", "min"):
            _extremum(b, general)
        elif general.kind == "abs":
            _absolute(b, general)
        elif general.kind in ("and", "or"):
            _logical(b, general)
        else:
            kept.append(general)
    extra = len(b.names) - snap.num_vars
    return replace(
        snap,
        var_names=tuple(b.names),
        lb=tuple(b.lb),
        ub=tuple(b.ub),
        vtype=tuple(b.vtype),
        obj=snap.obj + (0.0,) * extra,
        rows=snap.rows + tuple(b.rows),
        general=tuple(kept),
    )


def violations(snap: Snapshot, x: list[float], tol: float) -> list[str]:
    """Names of the general constraints of ``snap`` that solution ``x`` breaks by more than
    ``tol`` (scaled by the magnitudes involved), binaries read as rounded."""
    broken: list[str] = []
    for general in snap.general:
        if general.kind in REFORMULATED and not _holds(general, x, tol):
            broken.append(general.name)
    return broken


def _holds(general: GeneralRow, x: list[float], tol: float) -> bool:
    cols = _cols(general)
    if general.kind == "indicator":
        if (round(x[_int(general, "binvar")]) == 1) != bool(general.data["binval"]):
            return True
        vals = general.data["vals"]
        rhs, sense = general.data["rhs"], general.data["sense"]
        assert isinstance(vals, tuple) and isinstance(rhs, float)
        activity = sum(v * x[c] for c, v in zip(cols, vals, strict=True))
        scale = float(tol * max(1.0, abs(rhs), *(abs(v * x[c]) for c, v in zip(cols, vals, strict=True))))
        gap = float(activity - rhs)
        if sense == "<":
            return gap <= scale
        return gap >= -scale if sense == ">" else abs(gap) <= scale
    result = x[_int(general, "resvar")]
    values = [x[c] for c in cols]
    if general.kind in ("and", "or"):
        bits = [round(v) for v in values]
        want = float(all(bits) if general.kind == "and" else any(bits))
        return round(result) == want
    if general.kind == "abs":
        want = abs(values[0])
    else:
        constant = general.data.get("constant")
        pool = values + ([constant] if isinstance(constant, float) else [])
        want = max(pool) if general.kind == "max" else min(pool)
    return abs(result - want) <= tol * max(1.0, abs(want))
