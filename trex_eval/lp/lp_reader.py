"""Read an LP file in Gurobi's dialect into a :class:`~trex_eval.records.LinearModel`.

The result is what ``gurobipy.read()`` (13.0.3) builds from the same text, field for field;
:mod:`trex_eval.lp.builder` states the numeric rules. The grammar, as Gurobi accepts it:

* ``\\`` starts a comment anywhere on a line. Tokens are separated by whitespace, and only by
  whitespace: ``x+y`` is one variable name, names may contain ``[ ] , ( ) . :`` and the like.
  A leading ``+``/``-`` is split off a token (``-x`` is ``- x``).
* Section headers (case-insensitive) are recognised anywhere in the token stream:
  ``Minimize|Minimum|Min``, ``Maximize|Maximum|Max``, ``Subject To|Such That|st|s.t.``,
  ``Lazy Constraints [level]``, ``User Cuts``, ``Bounds|Bound``,
  ``General|Generals|Gen|Integer|Integers``, ``Binary|Binaries|Bin``,
  ``Semi-continuous|Semis|Semi``, ``SOS``, ``General Constraints``, ``End`` (text after ``End``
  is ignored; a missing ``End`` is fine). Sections come in this order (the integrality sections
  in any order among themselves, and any section may repeat); an out-of-order header is an error.
  Inside ``General Constraints`` only ``End`` is a header, so ``MAX``/``MIN`` are functions there.
* A term is ``[signs] [number] name``. A number that is not followed by a name *is* the name
  (``x + 5 >= 3`` has a variable called ``5``, as in Gurobi); there are no constant terms: the
  objective constant travels as the pseudo-variable ``Constant``, fixed to 1 in ``Bounds`` and
  in no row, which becomes ``objective_constant``.
* A constraint is ``[name:] expression sense rhs`` with sense ``<= < >= > = ==`` (``=<`` and
  ``=>`` are rejected, as by Gurobi) and may span lines; an empty expression is allowed. An
  unnamed row is ``R<row index>``. ``[ ... ]`` holds quadratic terms (``a x * y``, ``a x ^2``);
  an objective bracket followed by ``/ 2`` is halved, one without is taken as written, any other
  divisor is an error. A constraint with a quadratic part is counted in
  ``n_quadratic_constraints``, held in ``q_constraints`` (brackets taken as written) and is
  not a row. ``b = 0|1 -> expression sense rhs`` is an indicator, counted in
  ``n_general_constraints`` and held in ``indicators``.
* Lazy constraints and user cuts are ordinary rows (Gurobi reads them into the model).
* Bounds: ``x free``, ``x op v``, ``v op x``, ``v op x op w`` (the first value is the lower and
  the last the upper bound, whatever the operators say), with ``op`` any token of ``< > =``
  starting with ``<``, ``>`` or ``=`` (``=<`` means ``=`` here) and ``v`` a number or
  ``[+-]inf[inity]`` with any sign in the same token. A variable first named in ``Bounds`` or a
  type section is created there.
* ``Generals`` makes variables integer (a semi-continuous one becomes plain integer) and,
  unless the variable is fixed, rounds fractional bounds inward with a ``1e-5`` slack;
  ``Binaries`` makes them binary and clamps the rounded bounds into ``[0, 1]``;
  ``Semi-continuous`` turns ``C`` into ``S`` and ``I``/``B`` into ``N``.
* ``SOS`` and ``General Constraints`` statements are counted (``n_sos``,
  ``n_general_constraints``); the variables they name are created in order of appearance. SOS
  sets (``name: S1|S2 :: x:w ...``) are also held in ``sos``; general constraints are not.

Anything else raises :class:`~trex_eval.errors.GradingError` whose ``where`` is
``"LP line <n>"`` and whose message says what was expected and what was found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from trex_eval.errors import GradingError
from trex_eval.lp.builder import (
    INF,
    LP_KEEP,
    ModelBuilder,
    PendingIndicator,
    PendingQuadratic,
    clamp_lower,
    clamp_upper,
    clamp_value,
    round_integer_lower,
    round_integer_upper,
)
from trex_eval.lp.senses import Sense, row_bounds
from trex_eval.records import LinearModel

_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INFINITY_WORDS = frozenset({"inf", "infinity"})
_ROW_SENSES: dict[str, Sense] = {"<=": "<", "<": "<", ">=": ">", ">": ">", "=": "=", "==": "="}
_REJECTED_SENSES = frozenset({"=<", "=>"})
_OPERATORS = frozenset({"+", "-", "[", "]", "*", "^", "^2", "/", ":", "::", "->"})
_GENERAL_CONSTRAINT_PUNCTUATION = frozenset({"(", ")", ",", ":", "^", "+", "-", "*", "->"})


class _Section(Enum):
    OBJECTIVE = "objective"
    CONSTRAINTS = "constraints"
    LAZY = "lazy constraints"
    BOUNDS = "bounds"
    GENERALS = "generals"
    BINARIES = "binaries"
    SEMI_CONTINUOUS = "semi-continuous"
    SOS = "SOS"
    GENERAL_CONSTRAINTS = "general constraints"
    END = "end"


# A header may not go back to a section of lower rank; the integrality sections share a rank,
# so they may interleave and repeat.
_RANK = {
    _Section.OBJECTIVE: 0,
    _Section.CONSTRAINTS: 1,
    _Section.LAZY: 2,
    _Section.BOUNDS: 3,
    _Section.GENERALS: 4,
    _Section.BINARIES: 4,
    _Section.SEMI_CONTINUOUS: 4,
    _Section.SOS: 5,
    _Section.GENERAL_CONSTRAINTS: 6,
    _Section.END: 7,
}


@dataclass(frozen=True, slots=True)
class _Header:
    section: _Section
    maximize: bool
    width: int


def _headers(section: _Section, *words: str, maximize: bool = False) -> dict[str, _Header]:
    return {word: _Header(section, maximize, 1) for word in words}


_ONE_WORD_HEADERS: dict[str, _Header] = {
    **_headers(_Section.OBJECTIVE, "minimize", "minimum", "min"),
    **_headers(_Section.OBJECTIVE, "maximize", "maximum", "max", maximize=True),
    **_headers(_Section.CONSTRAINTS, "st", "s.t."),
    **_headers(_Section.BOUNDS, "bounds", "bound"),
    **_headers(_Section.GENERALS, "general", "generals", "gen", "integer", "integers"),
    **_headers(_Section.BINARIES, "binary", "binaries", "bin"),
    **_headers(_Section.SEMI_CONTINUOUS, "semi-continuous", "semis", "semi"),
    **_headers(_Section.SOS, "sos"),
    **_headers(_Section.END, "end"),
}
_TWO_WORD_HEADERS: dict[tuple[str, str], _Header] = {
    ("subject", "to"): _Header(_Section.CONSTRAINTS, False, 2),
    ("such", "that"): _Header(_Section.CONSTRAINTS, False, 2),
    ("lazy", "constraints"): _Header(_Section.LAZY, False, 2),
    ("user", "cuts"): _Header(_Section.LAZY, False, 2),
    ("general", "constraints"): _Header(_Section.GENERAL_CONSTRAINTS, False, 2),
}
_TWO_WORD_STARTS = frozenset(first for first, _ in _TWO_WORD_HEADERS)


def parse_lp(text: str) -> LinearModel:
    """Parse LP text (Gurobi dialect) into a :class:`LinearModel` with ``gurobipy.read()``
    semantics (see the module docstring).

    Raises:
        GradingError: the text is not a readable LP file; ``where`` names the line.
    """
    return _LpReader(*_tokenize(text)).read()


def _tokenize(text: str) -> tuple[list[str], list[int], list[_Header | None]]:
    """Whitespace tokens (comments removed), their line numbers and, per token, the header it
    starts, if any."""
    tokens: list[str] = []
    lines: list[int] = []
    headers: list[_Header | None] = []
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.split("\\", 1)[0]
        parts = line.split()
        for k, part in enumerate(parts):
            tokens.append(part)
            lines.append(number)
            word = part.lower()
            header = _ONE_WORD_HEADERS.get(word)
            if word in _TWO_WORD_STARTS and k + 1 < len(parts) and f"{part} {parts[k + 1]}" in line:
                # Gurobi matches two-word headers with exactly one space between the words.
                header = _TWO_WORD_HEADERS.get((word, parts[k + 1].lower()), header)
            headers.append(header)
    return tokens, lines, headers


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


class _LpReader:
    def __init__(self, tokens: list[str], lines: list[int], headers: list[_Header | None]) -> None:
        self._tokens = tokens
        self._lines = lines
        self._headers = headers
        self._count = len(tokens)
        self._pos = 0
        self._section: _Section | None = None
        self._model = ModelBuilder()

    # ------------------------------------------------------------------ token stream

    def _error(self, expected: str, position: int | None = None) -> GradingError:
        """Error for the token at ``position`` (default: the current one)."""
        at = self._pos if position is None else position
        if at >= self._count:
            last = self._lines[-1] if self._lines else 1
            return GradingError(f"expected {expected}, found the end of the file", where=f"LP line {last}")
        return GradingError(
            f"expected {expected}, found {self._tokens[at]!r}", where=f"LP line {self._lines[at]}"
        )

    def _header_at(self, pos: int) -> _Header | None:
        if pos >= self._count:
            return None
        if self._section is _Section.GENERAL_CONSTRAINTS:
            # Inside general constraints MAX, MIN, ... are functions: only End ends the section.
            return _ONE_WORD_HEADERS["end"] if self._tokens[pos].lower() == "end" else None
        return self._headers[pos]

    def _at_boundary(self) -> bool:
        """True at the end of the tokens or at a section header."""
        return self._header_at(self._pos) is not None or self._pos >= self._count

    def _peek(self) -> str | None:
        return None if self._at_boundary() else self._tokens[self._pos]

    def _next(self, expected: str) -> str:
        if self._at_boundary():
            raise self._error(expected)
        self._pos += 1
        return self._tokens[self._pos - 1]

    @staticmethod
    def _is_name(text: str) -> bool:
        return text not in _OPERATORS and text[0] not in "+-<>=" and text not in _ROW_SENSES

    # ------------------------------------------------------------------ driver

    def read(self) -> LinearModel:
        while self._pos < self._count:
            header = self._header_at(self._pos)
            if header is not None:
                self._enter(header)
                if self._section is _Section.END:
                    break
                continue
            if self._section is None:
                raise self._error("a section header such as 'Minimize' or 'Subject To'")
            self._statement(self._section)
        return self._model.build(keep_entry=LP_KEEP, drop_constant_column=True)

    def _enter(self, header: _Header) -> None:
        start = self._pos
        if self._section is not None and _RANK[header.section] < _RANK[self._section]:
            raise GradingError(
                f"section header {self._tokens[start]!r} may not follow the {self._section.value} section",
                where=f"LP line {self._lines[start]}",
            )
        self._pos += header.width
        self._section = header.section
        if header.section is _Section.OBJECTIVE:
            self._model.sense = "max" if header.maximize else "min"
        pos = self._pos
        on_header_line = pos < self._count and self._lines[pos] == self._lines[start]
        if header.section is _Section.LAZY and on_header_line and self._tokens[pos].isdigit():
            self._pos += 1

    def _statement(self, section: _Section) -> None:
        if section is _Section.OBJECTIVE:
            self._objective()
        elif section in (_Section.CONSTRAINTS, _Section.LAZY):
            self._constraint()
        elif section is _Section.BOUNDS:
            self._bound()
        elif section is _Section.GENERALS:
            self._mark_integer(self._model.var(self._next("a variable name")))
        elif section is _Section.BINARIES:
            self._mark_binary(self._model.var(self._next("a variable name")))
        elif section is _Section.SEMI_CONTINUOUS:
            self._mark_semi_continuous(self._model.var(self._next("a variable name")))
        elif section is _Section.SOS:
            self._sos_token()
        elif section is _Section.GENERAL_CONSTRAINTS:
            self._general_constraints()

    # ------------------------------------------------------------------ expressions

    def _optional_label(self) -> str | None:
        text = self._tokens[self._pos]
        if ":" in text and text not in (":", "::"):
            label, rest = text.split(":", 1)
            if rest:
                # "c1:x" names the row and starts its expression with x.
                self._tokens[self._pos] = rest
            else:
                self._pos += 1
            return label
        if self._pos + 1 < self._count and self._tokens[self._pos + 1].startswith(":"):
            following = self._tokens[self._pos + 1]
            if following in (":", "::"):
                self._pos += 2
            else:
                self._pos += 1
                self._tokens[self._pos] = following[1:]
            return text
        return None

    def _signs(self, *, required: bool, expected: str = "a term") -> tuple[float, str]:
        """Consume sign tokens (or a sign glued to the next body) and return the sign and the
        body text of the term that follows."""
        sign = 1.0
        seen = False
        while True:
            text = self._next(expected)
            body = text.lstrip("+-")
            if len(body) < len(text):
                seen = True
                if text.count("-", 0, len(text) - len(body)) % 2:
                    sign = -sign
            if body:
                if required and not seen:
                    raise self._error("'+' or '-' between terms", self._pos - 1)
                return sign, body

    def _expression(
        self, *, allow_quadratic: bool, objective: bool
    ) -> tuple[list[tuple[int, float]], list[tuple[int, int, float]], bool]:
        """Parse terms up to a sense, '->', a header or the end. Returns the linear terms, the
        quadratic terms (coefficients as written) and whether a bracket was present."""
        linear: list[tuple[int, float]] = []
        quadratic: list[tuple[int, int, float]] = []
        has_bracket = False
        first = True
        while True:
            text = self._peek()
            if text is None or text in _ROW_SENSES or text in _REJECTED_SENSES or text == "->":
                break
            sign, body = self._signs(required=not first)
            first = False
            if body == "[":
                if not allow_quadratic:
                    raise self._error("a linear term", self._pos - 1)
                has_bracket = True
                bracket: list[tuple[int, int, float]] = []
                self._quadratic_bracket(sign, bracket)
                # Gurobi halves an objective bracket only when "/ 2" follows it.
                factor = 0.5 if objective and self._halving() else 1.0
                quadratic.extend((i, j, q * factor) for i, j, q in bracket)
                continue
            coefficient, name = self._coefficient_and_name(body)
            linear.append((self._model.var(name), sign * coefficient))
        return linear, quadratic, has_bracket

    def _coefficient_and_name(self, body: str) -> tuple[float, str]:
        if _is_number(body):
            following = self._peek()
            if following is not None and self._is_name(following):
                self._pos += 1
                return float(body), following
        if not self._is_name(body) or "^" in body:
            raise self._error("a variable name", self._pos - 1)
        return 1.0, body

    def _quadratic_bracket(self, sign: float, out: list[tuple[int, int, float]]) -> None:
        first = True
        while True:
            if self._peek() == "]":
                self._pos += 1
                return
            term_sign, body = self._signs(required=not first)
            first = False
            coefficient, name = self._coefficient_and_name(body)
            left = self._model.var(name)
            operator = self._next("'*' or '^2' in a quadratic term")
            if operator == "*":
                right = self._model.var(self._next("a variable name after '*'"))
            elif operator == "^2" or (operator == "^" and self._next("'2' after '^'") == "2"):
                right = left
            else:
                raise self._error("'*' or '^2' in a quadratic term", self._pos - 1)
            out.append((left, right, sign * term_sign * coefficient))

    def _halving(self) -> bool:
        text = self._peek()
        if text == "/2":
            self._pos += 1
            return True
        if text != "/":
            return False
        self._pos += 1
        if self._next("'2' after '/' (a quadratic objective is written '[ ... ] / 2')") != "2":
            raise self._error("'2' after '/' (a quadratic objective is written '[ ... ] / 2')", self._pos - 1)
        return True

    def _value(self, expected: str, *, glued_sign: bool = False) -> float:
        """A number or ``[+-]inf[inity]``; with ``glued_sign`` (bounds) a sign must be part of
        the same token, as Gurobi requires there."""
        if glued_sign and self._peek() in ("+", "-"):
            raise self._error(expected + " (write the sign next to the number)")
        sign, body = self._signs(required=False, expected=expected)
        if body.lower() in _INFINITY_WORDS:
            return sign * INF
        if not _is_number(body):
            raise self._error(expected, self._pos - 1)
        return sign * float(body)

    # ------------------------------------------------------------------ sections

    def _objective(self) -> None:
        self._optional_label()
        linear, quadratic, _ = self._expression(allow_quadratic=True, objective=True)
        for index, coefficient in linear:
            self._model.add_objective(index, coefficient)
        self._model.quadratic_objective.extend(quadratic)
        if not self._at_boundary():
            raise self._error("'+' or '-' or the next section header")

    def _constraint(self) -> None:
        label = self._optional_label()
        linear, quadratic, has_bracket = self._expression(allow_quadratic=True, objective=False)
        sense, rhs = self._sense_and_rhs()
        if self._peek() == "->":
            self._pos += 1
            if has_bracket or len(linear) != 1 or sense != "=" or rhs not in (0.0, 1.0):
                raise self._error("an indicator written as 'binary_variable = 0|1 -> ...'")
            terms, _, _ = self._expression(allow_quadratic=False, objective=False)
            implied, implied_rhs = self._sense_and_rhs()
            self._model.n_general_constraints += 1
            self._model.indicators.append(
                PendingIndicator(linear[0][0], int(rhs), terms, *row_bounds(implied, implied_rhs))
            )
        elif has_bracket:
            self._model.n_quadratic_constraints += 1
            self._model.quadratic_constraints.append(
                PendingQuadratic(linear, quadratic, *row_bounds(sense, rhs))
            )
        else:
            self._model.add_row(label, linear, *row_bounds(sense, rhs))

    def _sense_and_rhs(self) -> tuple[Sense, float]:
        sense = _ROW_SENSES.get(self._next("a constraint sense (<=, >=, =)"))
        if sense is None:
            raise self._error("a constraint sense (<=, >=, =)", self._pos - 1)
        return sense, clamp_value(self._value("a number as the right-hand side"))

    def _bound(self) -> None:
        text = self._tokens[self._pos]
        body = text.lstrip("+-")
        if text != body or _is_number(body) or body.lower() in _INFINITY_WORDS:
            first = self._value("a bound value", glued_sign=True)
            operator = self._bound_operator()
            index = self._model.var(self._next("a variable name"))
            following = self._peek()
            if following is not None and following[0] in "<>=" and set(following) <= set("<>="):
                self._bound_operator()
                self._set_bounds(index, first, self._value("a bound value", glued_sign=True))
            elif operator == "<":
                self._set_bounds(index, first, None)
            elif operator == ">":
                self._set_bounds(index, None, first)
            else:
                self._set_bounds(index, first, first)
            return
        index = self._model.var(self._next("a variable name"))
        if (self._peek() or "").lower() == "free":
            self._pos += 1
            self._set_bounds(index, -INF, INF)
            return
        operator = self._bound_operator()
        value = self._value("a bound value", glued_sign=True)
        if operator == "<":
            self._set_bounds(index, None, value)
        elif operator == ">":
            self._set_bounds(index, value, None)
        else:
            self._set_bounds(index, value, value)

    def _bound_operator(self) -> str:
        text = self._next("a bound operator (<=, >=, =) or 'free'")
        if text[0] not in "<>=" or not set(text) <= set("<>="):
            raise self._error("a bound operator (<=, >=, =) or 'free'", self._pos - 1)
        return text[0]

    def _set_bounds(self, index: int, lower: float | None, upper: float | None) -> None:
        if lower is not None:
            self._model.lb[index] = clamp_lower(lower)
        if upper is not None:
            self._model.ub[index] = clamp_upper(upper)

    def _mark_integer(self, index: int) -> None:
        model = self._model
        model.vtype[index] = "I"
        if model.lb[index] != model.ub[index]:
            model.lb[index] = round_integer_lower(model.lb[index])
            model.ub[index] = round_integer_upper(model.ub[index])

    def _mark_binary(self, index: int) -> None:
        model = self._model
        model.vtype[index] = "B"
        model.lb[index] = max(0.0, round_integer_lower(model.lb[index]))
        model.ub[index] = min(1.0, round_integer_upper(model.ub[index]))

    def _mark_semi_continuous(self, index: int) -> None:
        current = self._model.vtype[index]
        self._model.vtype[index] = "S" if current in ("C", "S") else "N"

    def _sos_token(self) -> None:
        text = self._next("an SOS entry")
        if text == "::":
            self._model.n_sos += 1
            kind = self._tokens[self._pos - 2].upper() if self._pos >= 2 else ""
            self._model.sos.append((2 if kind == "S2" else 1, []))
        elif ":" in text and not text.endswith(":"):
            name, weight = text.rsplit(":", 1)
            if not _is_number(weight.lstrip("+-")):
                raise self._error("an SOS member written as 'variable:weight'", self._pos - 1)
            index = self._model.var(name)
            if self._model.sos:
                self._model.sos[-1][1].append((index, float(weight)))

    def _general_constraints(self) -> None:
        """Consume the whole ``General Constraints`` section, counting statements by their
        ``=`` and creating the variables they name in order of appearance."""
        in_nonlinear = False
        expect_function = False
        previous = ""
        while not self._at_boundary():
            text = self._tokens[self._pos]
            self._pos += 1
            if text == "->":
                raise self._error("a general constraint (indicators belong in 'Subject To')", self._pos - 1)
            if text == "=":
                self._model.n_general_constraints += 1
                in_nonlinear = False
                expect_function = True
                if self._is_general_constraint_name(previous):
                    self._model.var(previous)
            elif expect_function:
                expect_function = False
                in_nonlinear = text.upper() == "NL"
            elif in_nonlinear:
                if previous.upper() == "VARIABLE" and text == ",":
                    self._model.var(self._next("a variable name in a nonlinear expression"))
            elif self._is_general_constraint_name(text):
                self._model.var(text)
            previous = text

    @staticmethod
    def _is_general_constraint_name(text: str) -> bool:
        if not text or text in _GENERAL_CONSTRAINT_PUNCTUATION or text.endswith(":") or text in _ROW_SENSES:
            return False
        stripped = text.strip("(),")
        return bool(stripped) and not _is_number(stripped.lstrip("+-"))
