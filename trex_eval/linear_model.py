"""The solver-neutral form of a model a program built, as the sandbox hooks capture it.

:class:`LinearModel` (with its quadratic, SOS and indicator parts) is what a hook reads out of a
solver object in the program's process and what the parent re-solves to derive the graded value;
it is a claim until the parent has re-solved it (see :mod:`trex_eval.verify`).
"""

from __future__ import annotations

from typing import Literal

from trex_eval.text import Names
from trex_eval.vocabulary import Record

# The re-solve caps: the largest model the harness reads into a verifier (its capture in the sandbox
# and the re-solve both hold a model to them; see trex_eval.verify.views for how they are checked).
MAX_COLUMNS = 100_000
"""Columns a re-solve takes. Every Python-level re-solver makes one object per column, and SCIP
is the dearest: ~3 KiB a column (a QP over 100,000 columns with one quadratic term took 310 MiB
and 2.9 s in SCIP; an LP at the caps takes HiGHS ~150 MiB). A default 16 MiB record can hold
~106,000 columns at the most (outcome.py counts 79 bytes a column at the least), so the cap
refuses nothing a default record holds but a model made of little else than columns, and bounds
what a raised ``record_mib`` or a hand-made record can ask."""
MAX_ROWS = 100_000
"""Linear rows a re-solve takes: each is one Python-level constraint (or two, for a range) in
gurobipy and SCIP. A default record holds ~164,000 empty rows at the most (51 bytes a row)."""
MAX_NONZEROS = 500_000
"""Linear coefficients (the matrix and the quadratic rows' linear parts) a re-solve takes: each
is a Python-level term in gurobipy and SCIP (~2 µs and ~600 bytes in SCIP: ~300 MiB at the
cap). A default record holds ~116,000 at the most (72 bytes each)."""
MAX_QUADRATIC_TERMS = 100_000
"""Quadratic terms (objective and rows together) a re-solve takes: each is a product expression
in SCIP (several Python objects, ~2.5 KiB: ~250 MiB at the cap) and a step of the convexity
check's block search. A default record holds ~116,000 at the most."""
MAX_QUADRATIC_ROWS = 10_000
"""Quadratic constraints a re-solve takes: each is a Python-level expression and constraint with
a fixed overhead of its own in every solver, and the size check walks this list. Honest models
hold a handful (a ball, a risk budget); a default record could hold ~170,000 empty ones."""
CERTIFICATE = "certificate"
"""``SolveRecord.verified_by`` of a claim the harness matched with an LP's optimality certificate
(the solver's primal and dual values, :attr:`LinearModel.primal` and :attr:`LinearModel.row_duals`,
checked exactly: :mod:`trex_eval.verify.certificate`) instead of a re-solve; its evidence's
``source`` is ``"certified"``."""
VariableType = Literal["C", "I", "B", "S", "N"]
"""Continuous, integer, binary, semi-continuous, semi-integer."""


class QuadraticConstraint(Record):
    """One quadratic constraint ``lower <= sum(linear) + sum(q * x_i * x_j) <= upper`` of a
    :class:`LinearModel`: ``linear`` holds ``(column, coefficient)`` pairs, ``quadratic`` holds
    ``(i, j, q)`` terms (no 1/2 factor, duplicates summed by readers)."""

    lower: float
    upper: float
    linear: tuple[tuple[int, float], ...] = ()
    quadratic: tuple[tuple[int, int, float], ...] = ()


class SOSConstraint(Record):
    """One SOS set of a :class:`LinearModel`: ``type`` 1 (at most one member non-zero) or 2 (at
    most two, adjacent in weight order); ``members`` holds ``(column, weight)`` pairs."""

    type: Literal[1, 2]
    members: tuple[tuple[int, float], ...]


class IndicatorConstraint(Record):
    """``x[binary] = value -> lower <= sum(linear) <= upper``, one indicator constraint of a
    :class:`LinearModel` (``linear`` holds ``(column, coefficient)`` pairs, duplicates summed)."""

    binary: int
    value: Literal[0, 1]
    lower: float
    upper: float
    linear: tuple[tuple[int, float], ...] = ()


class LinearModel(Record):
    """Solver-neutral matrix form of a (mixed-integer) linear model, with flags for the parts
    that are not linear.

    Rows are ``row_lower <= A x <= row_upper`` (equal bounds = equality, an infinite side =
    one-sided). ``A`` is given in coordinate form (``a_row[k], a_col[k], a_val[k]``); duplicates
    are summed by readers. ``vtype`` is ``C`` continuous, ``I`` integer, ``B`` binary, ``S``
    semi-continuous, ``N`` semi-integer. Quadratic objective terms are ``(i, j, q)`` with the
    objective containing ``q * x_i * x_j`` (no 1/2 factor). ``n_quadratic_constraints``,
    ``n_general_constraints`` and ``n_sos`` count parts that the matrix does not hold;
    ``q_constraints`` holds the quadratic constraints themselves where the hook could read them
    (all of them or none: a model whose count exceeds the list cannot be verified); likewise
    ``sos`` (counted in ``n_sos``) and ``indicators`` (counted in ``n_general_constraints``, which
    also counts general constraints no field holds).

    ``primal`` and ``row_duals`` are the solver's values at the optimum it reported (one per
    column and one per row, both or neither; continuous LPs only, where the hook could read
    them): the candidate certificate of optimality the harness checks before it re-solves
    (:mod:`trex_eval.verify.certificate`). Like everything here they are the program's word; the
    model's digests leave them out.
    """

    sense: Literal["min", "max"]
    objective_constant: float = 0.0
    var_names: Names
    obj: tuple[float, ...]
    lb: tuple[float, ...]
    ub: tuple[float, ...]
    vtype: tuple[VariableType, ...]
    row_names: Names
    row_lower: tuple[float, ...]
    row_upper: tuple[float, ...]
    a_row: tuple[int, ...]
    a_col: tuple[int, ...]
    a_val: tuple[float, ...]
    q_obj: tuple[tuple[int, int, float], ...] = ()
    n_quadratic_constraints: int = 0
    n_general_constraints: int = 0
    n_sos: int = 0
    q_constraints: tuple[QuadraticConstraint, ...] = ()
    sos: tuple[SOSConstraint, ...] = ()
    indicators: tuple[IndicatorConstraint, ...] = ()
    primal: tuple[float, ...] = ()
    row_duals: tuple[float, ...] = ()

    @property
    def num_vars(self) -> int:
        return len(self.var_names)

    @property
    def num_rows(self) -> int:
        return len(self.row_names)

    @property
    def is_linear(self) -> bool:
        """True when the model has no quadratic, general or SOS parts."""
        return not (self.q_obj or self.n_quadratic_constraints or self.n_general_constraints or self.n_sos)
