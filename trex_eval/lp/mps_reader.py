"""Read an MPS file (free or fixed format, as gurobipy and HiGHS write them) into a
:class:`~trex_eval.records.LinearModel` with ``gurobipy.read()`` (13.0.3) semantics.

Fields are separated by whitespace, so fixed-format files whose names contain spaces are not
supported. Section headers start in column 1; ``*`` starts a comment line. Rules, as measured
against Gurobi:

* ``OBJSENSE`` takes ``MIN|MINIMIZE|MAX|MAXIMIZE`` on the same or the next line; ``OBJNAME``
  picks the objective among the ``N`` rows, otherwise the first ``N`` row is the objective and
  the other ``N`` rows are ignored together with their entries.
* Rows are numbered in ``ROWS`` order; entries and right-hand sides for an unknown row are
  ignored, and a repeated row name declares another row that gets no entries.
* Variables are numbered in ``COLUMNS`` order. Between ``'MARKER' 'INTORG'`` and
  ``'MARKER' 'INTEND'`` columns are integer, and an integer column that gets no ``BOUNDS``
  entry at all has upper bound 1. A repeated (column, row) entry keeps the first value;
  entries with ``|a| < 1e-13`` are dropped (objective coefficients are kept).
* ``RHS`` lines need a set name; the objective row's right-hand side ``r`` gives the objective
  constant ``-r`` (``-0.0`` when absent, as Gurobi reports it).
* ``RANGES`` turn a row into an equality with an extra column ``MPS_Rg<row>`` in ``[0, |R|]``
  appended after all columns (coefficient ``-1`` for ``G`` rows, ``+1`` otherwise), exactly as
  Gurobi does; the right-hand side becomes the row's upper end (the lower end for ``G``).
* ``BOUNDS`` types ``UP LO FX FR MI PL BV LI UI SC``; an ``UP``/``UI`` below zero on a column
  whose lower bound was never set makes the lower bound ``-inf``; ``BV`` clamps the current
  bounds into ``[0, 1]``; ``SC`` makes an integer column semi-integer; bounds on unknown columns
  are ignored. Integer bounds are not rounded.
* ``QUADOBJ`` lists the upper triangle of ``Q`` in ``0.5 x'Qx``; ``QMATRIX`` lists all of it.
  Rows named by ``QCMATRIX`` are quadratic constraints (held in ``q_constraints``, in ``ROWS``
  order: the row's entries, its sense and right-hand side, and the ``x'Qx`` terms the section
  lists) and rows named by ``INDICATORS`` are indicator constraints (held in ``indicators``, in
  section order): both leave the linear rows. ``SOS`` sets are held in ``sos``; ``GENCONS``
  entries (a ``TYPE [parameter] name`` line each) are only counted. Rows after
  ``LAZYCONS``/``USERCUTS`` are ordinary rows.

Malformed input raises :class:`~trex_eval.errors.GradingError` with ``where="MPS line <n>"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trex_eval.errors import GradingError
from trex_eval.lp.builder import (
    INF,
    MPS_KEEP,
    ModelBuilder,
    PendingIndicator,
    PendingQuadratic,
    clamp_lower,
    clamp_upper,
    clamp_value,
)
from trex_eval.lp.senses import Sense, row_bounds
from trex_eval.records import LinearModel

_ROW_TYPES: dict[str, Sense | None] = {"N": None, "L": "<", "G": ">", "E": "="}
_GENERAL_CONSTRAINT_TYPES = frozenset(
    {"MAX", "MIN", "ABS", "AND", "OR", "NORM", "PWL", "POLY", "EXP", "EXPA", "LOG", "LOGA", "POW", "SIN"}
    | {"COS", "TAN", "LOGISTIC", "NL"}
)
_SECTIONS = frozenset(
    {"NAME", "OBJSENSE", "OBJNAME", "ROWS", "LAZYCONS", "USERCUTS", "COLUMNS", "RHS", "RANGES"}
    | {"BOUNDS", "SOS", "QUADOBJ", "QMATRIX", "QSECTION", "QCMATRIX", "INDICATORS", "GENCONS", "ENDATA"}
)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(slots=True)
class _Row:
    name: str
    sense: Sense | None
    rhs: float = 0.0
    range_value: float | None = None
    entries: dict[int, float] = field(default_factory=dict)
    linear: bool = True
    quadratic: list[tuple[int, int, float]] | None = None


def parse_mps(text: str) -> LinearModel:
    """Parse MPS text into a :class:`LinearModel` (see the module docstring for the rules).

    Raises:
        GradingError: the text is not a readable MPS file; ``where`` names the line.
    """
    return _MpsReader().read(text)


class _MpsReader:
    def __init__(self) -> None:
        self._model = ModelBuilder()
        self._rows: list[_Row] = []
        self._row_by_name: dict[str, _Row] = {}
        self._objective: str | None = None
        self._objective_name: str | None = None
        self._objective_rhs = 0.0
        self._objective_columns: set[int] = set()
        self._integer_columns: set[int] = set()
        self._bounded: set[int] = set()
        self._lower_set: set[int] = set()
        self._integer_marker = False
        self._quadratic_row: _Row | None = None
        self._indicators: list[tuple[_Row, int, int]] = []
        self._line = 0

    def _error(self, message: str) -> GradingError:
        return GradingError(message, where=f"MPS line {self._line}")

    def read(self, text: str) -> LinearModel:
        section = ""
        for number, raw in enumerate(text.splitlines(), start=1):
            self._line = number
            if not raw.strip() or raw.startswith("*"):
                continue
            fields = raw.split()
            if not raw[0].isspace():
                keyword = fields[0].upper()
                if keyword not in _SECTIONS:
                    raise self._error(f"expected an MPS section header, found {fields[0]!r}")
                section = keyword
                if keyword == "ENDATA":
                    break
                self._header(keyword, fields[1:])
                continue
            self._data(section, fields)
        return self._build()

    def _header(self, keyword: str, rest: list[str]) -> None:
        if keyword == "OBJSENSE" and rest:
            self._objective_sense(rest[0])
        elif keyword == "OBJNAME" and rest:
            self._objective_name = rest[0]
        elif keyword == "QCMATRIX":
            if not rest:
                raise self._error("expected a row name after QCMATRIX")
            row = self._row(rest[0])
            row.linear = False
            if row.quadratic is None:
                row.quadratic = []
            self._quadratic_row = row
            self._model.n_quadratic_constraints += 1

    def _objective_sense(self, word: str) -> None:
        sense = word.upper()
        if sense in ("MAX", "MAXIMIZE"):
            self._model.sense = "max"
        elif sense in ("MIN", "MINIMIZE"):
            self._model.sense = "min"
        else:
            raise self._error(f"expected MIN or MAX after OBJSENSE, found {word!r}")

    def _data(self, section: str, fields: list[str]) -> None:
        if section == "OBJSENSE":
            self._objective_sense(fields[0])
        elif section == "OBJNAME":
            self._objective_name = fields[0]
        elif section in ("ROWS", "LAZYCONS", "USERCUTS"):
            self._declare_row(fields)
        elif section == "COLUMNS":
            self._column_line(fields)
        elif section in ("RHS", "RANGES"):
            self._rhs_line(fields, ranges=section == "RANGES")
        elif section == "BOUNDS":
            self._bound_line(fields)
        elif section == "QUADOBJ":
            self._quadratic_line(fields, full_matrix=False)
        elif section in ("QMATRIX", "QSECTION"):
            self._quadratic_line(fields, full_matrix=True)
        elif section == "INDICATORS":
            if len(fields) < 4 or fields[0].upper() != "IF":
                raise self._error("expected 'IF row column value' in INDICATORS")
            row = self._row(fields[1])
            if row.linear:
                row.linear = False
                self._model.n_general_constraints += 1
                binary = self._model.find(fields[2])
                if binary is None:
                    raise self._error(f"unknown column {fields[2]!r} in INDICATORS")
                self._indicators.append((row, binary, 1 if self._number(fields[3]) else 0))
        elif section == "SOS":
            if fields[0].upper() in ("S1", "S2"):
                self._model.n_sos += 1
                self._model.sos.append((1 if fields[0].upper() == "S1" else 2, []))
            elif len(fields) == 2 and self._model.sos:
                member = self._model.find(fields[0])
                if member is None:
                    raise self._error(f"unknown column {fields[0]!r} in SOS")
                self._model.sos[-1][1].append((member, self._number(fields[1])))
        elif section == "GENCONS":
            # A header is "TYPE [parameter] name"; data lines of NL blocks also start with
            # function names (SIN -1 3) but end with a number.
            header = fields[0].upper() in _GENERAL_CONSTRAINT_TYPES and len(fields) in (2, 3)
            if header and not _is_number(fields[-1]):
                self._model.n_general_constraints += 1
        elif section == "QCMATRIX":
            self._quadratic_constraint_line(fields)
        elif section == "NAME":
            pass
        else:
            raise self._error(f"unexpected data line before any section: {' '.join(fields)!r}")

    def _declare_row(self, fields: list[str]) -> None:
        if len(fields) != 2 or fields[0].upper() not in _ROW_TYPES:
            raise self._error("expected a row type (N, L, G, E) and a row name")
        sense = _ROW_TYPES[fields[0].upper()]
        row = _Row(fields[1], sense)
        self._rows.append(row)
        # A repeated row name declares another (empty) row; entries go to the first one.
        self._row_by_name.setdefault(row.name, row)
        if sense is None and self._objective is None:
            self._objective = row.name

    def _row(self, name: str) -> _Row:
        row = self._row_by_name.get(name)
        if row is None:
            raise self._error(f"unknown row {name!r}")
        return row

    def _is_objective(self, name: str) -> bool:
        return name == (self._objective_name or self._objective)

    def _column_line(self, fields: list[str]) -> None:
        if len(fields) >= 3 and fields[1].strip("'\"").upper() == "MARKER":
            marker = fields[2].strip("'\"").upper()
            if marker not in ("INTORG", "INTEND"):
                raise self._error(f"expected 'INTORG' or 'INTEND' in a MARKER line, found {fields[2]!r}")
            self._integer_marker = marker == "INTORG"
            return
        if len(fields) not in (3, 5):
            raise self._error("expected 'column row value [row value]'")
        index = self._model.var(fields[0])
        if self._integer_marker:
            self._model.vtype[index] = "I"
            self._integer_columns.add(index)
        for k in range(1, len(fields), 2):
            value = self._number(fields[k + 1])
            row = self._row_by_name.get(fields[k])
            if row is None:
                continue
            # Gurobi keeps the first of repeated (column, row) entries, the objective's included.
            if self._is_objective(row.name):
                if index not in self._objective_columns:
                    self._objective_columns.add(index)
                    self._model.add_objective(index, value)
            elif row.sense is not None:
                row.entries.setdefault(index, value)

    def _rhs_line(self, fields: list[str], *, ranges: bool) -> None:
        if len(fields) not in (3, 5):
            raise self._error("expected 'set_name row value [row value]'")
        for k in range(1, len(fields), 2):
            value = self._number(fields[k + 1])
            row = self._row_by_name.get(fields[k])
            if row is None:
                continue
            if ranges:
                if row.sense is not None:
                    row.range_value = value
            elif self._is_objective(row.name):
                self._objective_rhs = value
            else:
                row.rhs = value

    def _bound_line(self, fields: list[str]) -> None:
        kind = fields[0].upper()
        needs_value = kind not in ("FR", "MI", "PL", "BV")
        expected = (4, 3) if needs_value else (3, 2)
        if len(fields) not in expected:
            raise self._error(f"expected '{kind} [set_name] column{' value' if needs_value else ''}'")
        column = fields[2] if len(fields) == expected[0] else fields[1]
        index = self._model.find(column)
        if index is None:
            return
        value = self._number(fields[-1]) if needs_value else 0.0
        model = self._model
        self._bounded.add(index)
        if kind in ("UP", "UI"):
            model.ub[index] = clamp_upper(value)
            if value < 0 and index not in self._lower_set:
                model.lb[index] = -INF
        elif kind in ("LO", "LI"):
            model.lb[index] = clamp_lower(value)
            self._lower_set.add(index)
        elif kind == "FX":
            model.lb[index] = clamp_lower(value)
            model.ub[index] = clamp_upper(value)
            self._lower_set.add(index)
        elif kind == "FR":
            model.lb[index], model.ub[index] = -INF, INF
            self._lower_set.add(index)
        elif kind == "MI":
            model.lb[index] = -INF
            self._lower_set.add(index)
        elif kind == "PL":
            model.ub[index] = INF
        elif kind == "BV":
            model.vtype[index] = "B"
            model.lb[index] = max(0.0, model.lb[index])
            model.ub[index] = min(1.0, model.ub[index])
        elif kind == "SC":
            model.vtype[index] = "S" if model.vtype[index] == "C" else "N"
            model.ub[index] = clamp_upper(value)
        else:
            raise self._error(f"unknown bound type {fields[0]!r}")
        if kind in ("LI", "UI"):
            model.vtype[index] = "I"

    def _quadratic_line(self, fields: list[str], *, full_matrix: bool) -> None:
        if len(fields) != 3:
            raise self._error("expected 'column column value'")
        first, second = self._model.find(fields[0]), self._model.find(fields[1])
        if first is None or second is None:
            raise self._error(f"unknown column in {' '.join(fields)!r}")
        value = self._number(fields[2])
        # Objective is 0.5 x'Qx: a diagonal entry, or an entry of the full matrix, counts half.
        coefficient = value / 2.0 if full_matrix or first == second else value
        self._model.quadratic_objective.append((first, second, coefficient))

    def _quadratic_constraint_line(self, fields: list[str]) -> None:
        if len(fields) != 3 or self._quadratic_row is None or self._quadratic_row.quadratic is None:
            raise self._error("expected 'column column value' after 'QCMATRIX row'")
        first, second = self._model.find(fields[0]), self._model.find(fields[1])
        if first is None or second is None:
            raise self._error(f"unknown column in {' '.join(fields)!r}")
        # QCMATRIX lists the full matrix of x'Qx: an off-diagonal product appears twice.
        self._quadratic_row.quadratic.append((first, second, self._number(fields[2])))

    def _number(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise self._error(f"expected a number, found {text!r}") from None

    def _build(self) -> LinearModel:
        model = self._model
        for index in self._integer_columns - self._bounded:
            if model.vtype[index] == "I":
                model.ub[index] = 1.0
        model.objective_constant = -self._objective_rhs
        ranged: list[tuple[_Row, int]] = []
        for row in self._rows:
            if row.sense is not None and row.quadratic is not None:
                model.quadratic_constraints.append(
                    PendingQuadratic(
                        list(row.entries.items()), row.quadratic, *row_bounds(row.sense, clamp_value(row.rhs))
                    )
                )
            if row.sense is None or not row.linear:
                continue
            terms = list(row.entries.items())
            if row.range_value is None:
                model.add_row(row.name, terms, *row_bounds(row.sense, clamp_value(row.rhs)))
                continue
            position = model.add_row(row.name, terms, 0.0, 0.0)
            ranged.append((row, position))
        for row, position in ranged:
            self._add_range_column(row, position)
        for row, binary, value in self._indicators:
            if row.sense is not None:
                bounds = row_bounds(row.sense, clamp_value(row.rhs))
                model.indicators.append(PendingIndicator(binary, value, list(row.entries.items()), *bounds))
        return model.build(keep_entry=MPS_KEEP, drop_constant_column=False)

    def _add_range_column(self, row: _Row, position: int) -> None:
        model = self._model
        width = abs(row.range_value or 0.0)
        index = model.var(f"MPS_Rg{row.name}")
        model.ub[index] = clamp_upper(width)
        pending = model.rows[position]
        if row.sense == ">":
            pending.terms.append((index, -1.0))
            rhs = row.rhs
        else:
            pending.terms.append((index, 1.0))
            positive_equality = row.sense == "=" and (row.range_value or 0.0) > 0
            rhs = row.rhs + width if positive_equality else row.rhs
        pending.lower = pending.upper = clamp_value(rhs)
