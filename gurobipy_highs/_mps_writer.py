"""Write a :class:`~._snapshot.Snapshot` in Gurobi's free-ish MPS layout (as gurobipy 13).

Fields are padded to 8 characters and separated by two spaces; integer columns sit between
``INTORG``/``INTEND`` markers; the objective constant is the negated ``RHS`` of ``OBJ``; a column
with no entry at all gets an explicit ``OBJ 0``; ``QUADOBJ`` lists each product once with the
MPS convention of an implicit 1/2. When a name contains a space, Gurobi replaces all names of
that kind: rows become ``c<i>``, columns ``<vtype><j>(<nonzeros in the column>)``. An integer
column without an upper bound always states its lower bound (``LI``). Quadratic constraints,
SOS and general constraints are not written (``CompatNotImplementedError``).
"""

from __future__ import annotations

import math

from ._errors import CompatNotImplementedError
from ._numfmt import gurobi_mps_number as gurobi_number
from ._snapshot import Snapshot

_ROW_TYPE = {"<": "L", ">": "G", "=": "E"}


def _field(text: str) -> str:
    return text.ljust(8)


def write_mps(snap: Snapshot) -> str:
    """The MPS file text for ``snap`` (ends with a newline)."""
    if snap.qrows or snap.sos or snap.general:
        raise CompatNotImplementedError(
            "Model.write() to MPS for quadratic constraints, SOS or general constraints",
            "write an .lp file instead",
        )
    var_names = list(snap.var_names)
    row_names = [row.name for row in snap.rows]
    if any(" " in name for name in var_names):
        nonzeros = [0] * snap.num_vars
        for row in snap.rows:
            for col in row.cols:
                nonzeros[col] += 1
        var_names = [f"{vtype}{j}({nonzeros[j]})" for j, vtype in enumerate(snap.vtype)]
    if any(" " in name for name in row_names):
        row_names = [f"c{i}" for i in range(len(row_names))]
    lines = [f"NAME {snap.name}"]
    if snap.sense < 0:
        lines.append("OBJSENSE MAX")
    lines.append("ROWS")
    lines.append(" N  OBJ")
    lines.extend(
        f" {_ROW_TYPE[row.sense]}  {_field(name)}" for row, name in zip(snap.rows, row_names, strict=True)
    )
    lines.append("COLUMNS")
    entries: list[list[tuple[str, float]]] = [[] for _ in snap.var_names]
    for j, coeff in enumerate(snap.obj):
        if coeff != 0.0:
            entries[j].append(("OBJ", coeff))
    for row, row_name in zip(snap.rows, row_names, strict=True):
        for col, value in zip(row.cols, row.vals, strict=True):
            entries[col].append((row_name, value))
    in_integer_block = False
    for j, name in enumerate(var_names):
        integer = snap.vtype[j] in ("I", "B", "N")
        if integer != in_integer_block:
            marker = "'INTORG'" if integer else "'INTEND'"
            lines.append(f"    MARKER    'MARKER'                 {marker}")
            in_integer_block = integer
        column = entries[j] or [("OBJ", 0.0)]
        lines.extend(f"    {_field(name)}  {_field(row)}  {gurobi_number(value)}" for row, value in column)
    if in_integer_block:
        lines.append("    MARKER    'MARKER'                 'INTEND'")
    lines.append("RHS")
    if snap.obj_constant != 0.0:
        lines.append(f"    RHS1      OBJ       {gurobi_number(-snap.obj_constant)}")
    lines.extend(
        f"    RHS1      {_field(name)}  {gurobi_number(row.rhs)}"
        for row, name in zip(snap.rows, row_names, strict=True)
        if row.rhs != 0.0
    )
    bounds = [line for j in range(snap.num_vars) for line in _bound_lines(snap, j, var_names[j])]
    lines.append("BOUNDS")
    lines.extend(bounds)
    if snap.q_obj:
        lines.append("QUADOBJ")
        for i, j, q in snap.q_obj:
            value = 2.0 * q if i == j else q
            lines.append(f"    {_field(var_names[i])}  {_field(var_names[j])}  {gurobi_number(value)}")
    lines.append("ENDATA")
    return "\n".join(lines) + "\n"


def _bound_lines(snap: Snapshot, j: int, name: str) -> list[str]:
    vtype = snap.vtype[j]
    lb, ub = snap.lb[j], snap.ub[j]

    def line(kind: str, value: float | None = None) -> str:
        text = f" {kind} BND1      {_field(name)}"
        return text if value is None else f"{text}  {gurobi_number(value)}"

    if vtype == "B":
        fixed = [line("FX", lb)] if lb == ub else []
        return [*fixed, line("BV")]
    if math.isinf(lb) and math.isinf(ub):
        return [line("FR")]
    if lb == ub:
        return [line("FX", lb)]
    out: list[str] = []
    if math.isinf(lb):
        out.append(line("MI"))
    elif vtype == "I" and math.isinf(ub):
        # stated even when 0: some MPS readers take a bound-less integer column as binary
        out.append(line("LI", lb))
    elif lb != 0.0:
        out.append(line("LO", lb))
    if vtype in ("S", "N"):
        out.append(line("SC", ub))
    elif not math.isinf(ub):
        out.append(line("UP", ub))
    return out
