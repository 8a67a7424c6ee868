"""ORGEval structural equivalence exactly as the reference T-Rex harness decides it
(``check_lp_equivalence_fast``), bugs included: rule ``orgeval-trex-compat@1``.

Both models are taken as gurobipy holds them after reading the LP files the harness compares
(use :func:`trex_eval.lp.parse_lp` on those files; a finite two-sided row is first turned into
Gurobi's equality-plus-range-variable form, as ``addRange`` and the LP round trip do). Then:

1. Normalise each model separately.
   a. Every row with exactly one stored entry ``a`` (``|a| >= 1e-12``) becomes a bound on its
      variable with ``t = rhs / a``: ``>=`` raises the new lower bound to ``max(., t)``, ``<=``
      lowers the new upper bound to ``min(., t)``, ``=`` does both. The new bounds start at
      ``-inf``/``+inf``, not at the variable's bounds, and overwrite them; the sign of ``a`` is
      ignored (``-x >= -5`` sets ``LB = 5``). Those rows are removed.
   b. Every remaining ``<=`` row with ``|rhs| < 1e-9`` is replaced by its negation ``>= 0``.
   c. Every ``=`` row with ``|rhs| < 1e-9`` whose coefficient sum ``s`` is negative is replaced by
      its negation ``= 0``; ``|s| < 1e-12`` leaves it alone (the reference also writes
      ``failure/<file>failure.lp`` into its working directory: not done here, noted in the
      evidence as ``zero_sum_equalities``).
2. Different numbers of variables, or of linear rows, mean "not equivalent".
3. Build the bipartite graph: variable colour ``fmt(obj), fmt(type), fmt(lb), fmt(ub)`` with type
   1 for binary, 2 for integer, 0 otherwise; row colour ``fmt(rhs), fmt(sense)`` with sense
   ``=``/``<``/``>`` as 0/-1/1; one edge per stored entry labelled ``fmt(a)``. ``fmt`` is
   :func:`format_float32`. Objective sense and constant, quadratic parts, SOS and general
   constraints are not in the graph at all.
4. Refine each graph on its own with :func:`~trex_eval.grading.structure.wl.md5_refine`.
5. Different *sets* of final colours mean "not equivalent" (class sizes are not compared).
6. Both graphs must pass :func:`~trex_eval.grading.structure.wl.sufficiency`; otherwise "not equivalent".

The verdict space is binary: equivalent is ``correct``, anything else ``wrong``. The evidence
lists the reference's info keys as checks (``var_num_check``, ``cons_num_check``, ``wl_check``,
``sufficient_check``, ``sufficient_msg.msg1``/``msg2``); :func:`compat_info` turns it back into
the reference's info dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trex_eval.grading.structure.base import CheckRule
from trex_eval.grading.structure.wl import md5_refine, sufficiency
from trex_eval.lp.senses import Sense, row_sense
from trex_eval.records import Grade, LinearModel, StructureCheck, StructureEvidence, Verdict

VERSION = "1"
RULE = f"orgeval-trex-compat@{VERSION}"
"""The canonical spec every grade of this rule records."""

_TYPE_CODE = {"B": 1.0, "I": 2.0}
_SENSE_CODE: dict[Sense, float] = {"=": 0.0, "<": -1.0, ">": 1.0}
_SINGLE_ENTRY_MIN = 1e-12
_ZERO_RHS = 1e-9
_ZERO_SUM = 1e-12


def format_float32(value: float) -> str:
    """The reference's colour-key format: ``"%.6f" % numpy.float32(value)``.

    ``-0.0`` gives ``"-0.000000"``, ``inf`` gives ``"inf"``, ``1234567.891`` gives
    ``"1234567.875000"`` (float32 precision), values beyond float32 range become ``inf``.
    """
    return _format_all([value])[0]


def _format_all(values: list[float]) -> list[str]:
    with np.errstate(over="ignore"):
        narrowed = np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float64)
    return [format(v, ".6f") for v in narrowed.tolist()]


@dataclass(slots=True)
class _Row:
    sense: Sense
    rhs: float
    cols: list[int]
    vals: list[float]


@dataclass(slots=True)
class _GurobiModel:
    """A model as the reference harness sees it through gurobipy (mutable during normalisation)."""

    obj: list[float]
    vtype: list[str]
    lb: list[float]
    ub: list[float]
    rows: list[_Row]
    zero_sum_equalities: int = 0

    @classmethod
    def of(cls, model: LinearModel) -> _GurobiModel:
        gurobi = cls(list(model.obj), list(model.vtype), list(model.lb), list(model.ub), [])
        entries: list[tuple[list[int], list[float]]] = [([], []) for _ in model.row_names]
        for i, j, value in sorted(zip(model.a_row, model.a_col, model.a_val, strict=True)):
            entries[i][0].append(j)
            entries[i][1].append(value)
        for i, (cols, vals) in enumerate(entries):
            lower, upper = model.row_lower[i], model.row_upper[i]
            sense = row_sense(lower, upper)
            if sense is None:
                # Gurobi's range form: a.x + Rg = upper with 0 <= Rg <= upper - lower.
                gurobi.obj.append(0.0)
                gurobi.vtype.append("C")
                gurobi.lb.append(0.0)
                gurobi.ub.append(upper - lower)
                gurobi.rows.append(_Row("=", upper, [*cols, len(gurobi.obj) - 1], [*vals, 1.0]))
            else:
                gurobi.rows.append(_Row(sense[0], sense[1], cols, vals))
        return gurobi

    def normalise(self) -> None:
        new_lower: dict[int, float] = {}
        new_upper: dict[int, float] = {}
        kept: list[_Row] = []
        for row in self.rows:
            if len(row.cols) != 1 or abs(row.vals[0]) < _SINGLE_ENTRY_MIN:
                kept.append(row)
                continue
            variable, bound = row.cols[0], row.rhs / row.vals[0]
            if row.sense in (">", "="):
                new_lower[variable] = max(new_lower.get(variable, -math.inf), bound)
            if row.sense in ("<", "="):
                new_upper[variable] = min(new_upper.get(variable, math.inf), bound)
        for variable, bound in new_lower.items():
            self.lb[variable] = bound
        for variable, bound in new_upper.items():
            self.ub[variable] = bound

        rows: list[_Row] = []
        negated: list[_Row] = []
        for row in kept:
            if row.sense == "<" and abs(row.rhs) < _ZERO_RHS:
                negated.append(_Row(">", 0.0, row.cols, [-v for v in row.vals]))
            else:
                rows.append(row)
        rows.extend(negated)

        final: list[_Row] = []
        flipped: list[_Row] = []
        for row in rows:
            if row.sense == "=" and abs(row.rhs) < _ZERO_RHS:
                total = sum(row.vals)
                if abs(total) < _ZERO_SUM:
                    self.zero_sum_equalities += 1
                elif total < 0:
                    flipped.append(_Row("=", 0.0, row.cols, [-v for v in row.vals]))
                    continue
            final.append(row)
        self.rows = final + flipped

    def graph(self) -> tuple[list[str], list[list[tuple[int, str]]]]:
        n = len(self.obj)
        numbers: list[float] = []
        for j in range(n):
            numbers += [self.obj[j], _TYPE_CODE.get(self.vtype[j], 0.0), self.lb[j], self.ub[j]]
        for row in self.rows:
            numbers += [row.rhs, _SENSE_CODE[row.sense]]
            numbers += row.vals
        text = _format_all(numbers)
        colours = [",".join(text[4 * j : 4 * j + 4]) for j in range(n)]
        neighbours: list[list[tuple[int, str]]] = [[] for _ in range(n + len(self.rows))]
        k = 4 * n
        for r, row in enumerate(self.rows):
            node = n + r
            colours.append(f"{text[k]},{text[k + 1]}")
            k += 2
            for col in row.cols:
                neighbours[col].append((node, text[k]))
                neighbours[node].append((col, text[k]))
                k += 1
        return colours, neighbours


def check_trex_compat(reference: LinearModel, generated: LinearModel) -> Grade:
    """Judge ``generated`` against ``reference`` exactly as the reference harness does
    (module docstring). Never raises for model content; returns ``correct`` or ``wrong``."""
    models = (_GurobiModel.of(reference), _GurobiModel.of(generated))
    for model in models:
        model.normalise()
    checks: list[StructureCheck] = []
    zero_sum = [model.zero_sum_equalities for model in models]
    if any(zero_sum):
        checks.append(
            StructureCheck(
                name="zero_sum_equalities",
                passed=True,
                detail=f"reference {zero_sum[0]}, generated {zero_sum[1]} zero-rhs equalities with "
                "coefficient sum 0 kept as they are; the reference harness would also write "
                "failure/<file>failure.lp (not done)",
            )
        )
    var_counts = [len(model.obj) for model in models]
    checks.append(_count_check("var_num_check", "variables", var_counts))
    if var_counts[0] != var_counts[1]:
        return _grade(checks, f"different numbers of variables ({var_counts[0]} vs {var_counts[1]})")
    row_counts = [len(model.rows) for model in models]
    checks.append(_count_check("cons_num_check", "linear constraints after normalisation", row_counts))
    if row_counts[0] != row_counts[1]:
        return _grade(checks, f"different numbers of linear constraints ({row_counts[0]} vs {row_counts[1]})")
    if var_counts[0] + row_counts[0] == 0:
        checks.append(
            StructureCheck(
                name="harness_error",
                passed=False,
                detail="both models are empty; the reference's wl_test_fast raises UnboundLocalError "
                "and the attempt scores 0",
            )
        )
        return _grade(checks, "both models are empty, which crashes the reference check")

    graphs = [model.graph() for model in models]
    partitions = [md5_refine(colours, neighbours) for colours, neighbours in graphs]
    colour_sets = [set(partition) for partition in partitions]
    shared = len(colour_sets[0] & colour_sets[1])
    checks.append(
        StructureCheck(
            name="wl_check",
            passed=colour_sets[0] == colour_sets[1],
            detail=f"{len(colour_sets[0])} reference colours, {len(colour_sets[1])} generated colours, "
            f"{shared} shared (sets compared, class sizes ignored)",
        )
    )
    if colour_sets[0] != colour_sets[1]:
        return _grade(checks, "the final WL colour sets differ")

    verdicts = [
        sufficiency(list(partition.values()), neighbours)
        for partition, (_, neighbours) in zip(partitions, graphs, strict=True)
    ]
    sufficient = verdicts[0][0] and verdicts[1][0]
    checks.append(
        StructureCheck(
            name="sufficient_check",
            passed=sufficient,
            detail="both graphs WL-determinable or symmetric decomposable"
            if sufficient
            else "a graph is neither WL-determinable nor symmetric decomposable",
        )
    )
    for key, (passed, message) in zip(("msg1", "msg2"), verdicts, strict=True):
        checks.append(StructureCheck(name=f"sufficient_msg.{key}", passed=passed, detail=message))
    if not sufficient:
        return _grade(checks, "the sufficiency test fails, so equal colours prove nothing")
    return _grade(checks, None)


def compat_info(grade: Grade) -> dict[str, bool | dict[str, str]]:
    """The reference harness's ``wl_verification`` info dict, rebuilt from a compat grade's
    evidence (e.g. ``{"var_num_check": True, "cons_num_check": False}``). Empty when the grade
    carries no structure evidence."""
    info: dict[str, bool | dict[str, str]] = {}
    if grade.evidence is None or grade.evidence.kind != "structure":
        return info
    messages: dict[str, str] = {}
    for check in grade.evidence.checks:
        if check.name.startswith("sufficient_msg."):
            messages[check.name.split(".", 1)[1]] = check.detail
        elif check.name in ("var_num_check", "cons_num_check", "wl_check", "sufficient_check"):
            info[check.name] = check.passed
    if "sufficient_check" in info:
        info.pop("wl_check", None)
        info["sufficient_msg"] = messages
    return info


def _count_check(name: str, what: str, counts: list[int]) -> StructureCheck:
    return StructureCheck(
        name=name, passed=counts[0] == counts[1], detail=f"{counts[0]} vs {counts[1]} {what}"
    )


def _grade(checks: list[StructureCheck], failure: str | None) -> Grade:
    evidence = StructureEvidence(checks=tuple(checks))
    if failure is None:
        messages = " / ".join(c.detail for c in checks if c.name.startswith("sufficient_msg."))
        return Grade(
            verdict=Verdict.CORRECT,
            rule=RULE,
            reason=f"Equivalent under the reference harness's ORGEval check ({messages}).",
            evidence=evidence,
        )
    return Grade(
        verdict=Verdict.WRONG,
        rule=RULE,
        reason=f"Not equivalent under the reference harness's ORGEval check: {failure}.",
        evidence=evidence,
    )


RULE_OBJECT = CheckRule(
    name="orgeval-trex-compat",
    version=VERSION,
    description="the reference ORGEval check (LP round trip, md5-WL colour sets, sufficiency)",
    check=check_trex_compat,
)
build = RULE_OBJECT.build
"""The registry factory (the rule takes no parameters)."""
