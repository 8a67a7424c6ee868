"""Solve a :class:`~._snapshot.Snapshot` with HiGHS and report it in Gurobi's terms.

What HiGHS solves exactly: LPs, MILPs (integer, binary, semi-continuous, semi-integer columns)
and convex continuous QPs. Everything else raises :class:`NeedsGurobiError` before HiGHS runs:
quadratic constraints, SOS, general constraints, a quadratic objective with integer columns, and
a quadratic objective that is not convex in the optimisation sense (positive semidefinite for
``MINIMIZE``, negative semidefinite for ``MAXIMIZE``; tolerance 1e-9 relative to the largest
eigenvalue magnitude).

A maximisation is solved as ``min -f``; objective, bound, duals (``Pi``) and reduced costs
(``RC``) are turned back to the original sense, with gurobipy's sign conventions. ``numpy`` and
``highspy`` are imported on first use, so building and writing models never loads them.

HiGHS's QP solver regularises the Hessian with an absolute ``1e-7`` and tests optimality with
absolute tolerances, so a convex QP whose objective is tiny (a portfolio variance with
covariances of 1e-4 to 1e-6) cycles without progress ("excessively small Hessian values") or
stops at a visibly wrong optimum. A QP's objective is therefore solved multiplied by a power of
two (:func:`objective_scale`; exact in binary floating point, the minimiser is unchanged) and its
value, bound, duals and reduced costs are divided back. The QP solver also runs under an
iteration limit of the layer's own (:func:`qp_iteration_limit`): a QP that still stalls raises
``NeedsGurobiError`` instead of running until the time limit.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from . import _grb as G
from ._errors import NeedsGurobiError
from ._params import HIGHS_OPTIONS, ParamSet
from ._snapshot import Snapshot

#: Relative tolerance of the convexity test on the objective Hessian.
CONVEXITY_TOL = 1e-9

#: HiGHS's largest upper bound of a semi-continuous or semi-integer column (``kMaxSemiVariableUpper``
#: in HiGHS): beyond it HiGHS solves with a substituted bound and may report a feasible model
#: infeasible, or status NUMERIC.
MAX_SEMI_UPPER = 1e5

#: The layer's QP iteration limit is ``QP_ITERATIONS_BASE + QP_ITERATIONS_PER_ITEM * (cols + rows)``:
#: healthy active-set solves take about one iteration per column or row (a 20-asset portfolio:
#: 30-45), a stalled one hundreds of thousands per second.
QP_ITERATIONS_BASE = 10_000
QP_ITERATIONS_PER_ITEM = 100

_GUROBI_MIP_GAP_ABS = 1e-10


@dataclass
class SolveOutcome:
    """What one ``optimize`` produced. Solution lists are per column/row; ``None`` when absent."""

    status: int
    runtime_s: float = 0.0
    objval: float | None = None
    objbound: float | None = None
    mip_gap: float | None = None
    x: list[float] | None = None
    rc: list[float] | None = None
    pi: list[float] | None = None
    slack: list[float] | None = None
    iterations: float = 0.0
    barrier_iterations: int = 0
    nodes: float = 0.0
    solver: str = "HiGHS"
    notes: list[str] = field(default_factory=list)
    #: Each objective's value at the solution, for multi-objective models.
    objn: list[float] | None = None


def check_solvable(snap: Snapshot, params: ParamSet) -> None:
    """Raise if HiGHS cannot give the answer Gurobi would (see the module docstring)."""
    if snap.qrows:
        raise NeedsGurobiError(f"{len(snap.qrows)} quadratic constraint(s)")
    if snap.sos:
        raise NeedsGurobiError(f"{len(snap.sos)} SOS constraint(s)")
    if snap.general:
        kinds = sorted({g.kind for g in snap.general})
        raise NeedsGurobiError(f"{len(snap.general)} general constraint(s) ({', '.join(kinds)})")
    for j, vtype in enumerate(snap.vtype):
        if vtype in ("S", "N") and math.isinf(snap.ub[j]):
            raise NeedsGurobiError(f"semi-continuous variable {snap.var_names[j]} without an upper bound")
        if vtype in ("S", "N") and snap.ub[j] > MAX_SEMI_UPPER:
            raise NeedsGurobiError(
                f"semi-continuous variable {snap.var_names[j]} with upper bound {snap.ub[j]:g} "
                f"(HiGHS takes semi-continuous upper bounds up to {MAX_SEMI_UPPER:g})"
            )
    if snap.q_obj:
        if any(t != "C" for t in snap.vtype):
            raise NeedsGurobiError("quadratic objective with integer variables (MIQP)")
        if not objective_is_convex(snap):
            raise NeedsGurobiError("non-convex quadratic objective")


def params_default(name: str) -> object:
    return ParamSet().get(name)


def objective_is_convex(snap: Snapshot) -> bool:
    """Whether the quadratic objective is convex for its sense (min: PSD, max: NSD)."""
    import numpy as np

    cols = sorted({c for i, j, _q in snap.q_obj for c in (i, j)})
    where = {c: k for k, c in enumerate(cols)}
    hessian = np.zeros((len(cols), len(cols)))
    for i, j, q in snap.q_obj:
        a, b = where[i], where[j]
        if a == b:
            hessian[a, a] += 2.0 * q
        else:
            hessian[a, b] += q
            hessian[b, a] += q
    if snap.sense < 0:
        hessian = -hessian
    eigenvalues = np.linalg.eigvalsh(hessian)
    scale = max(1.0, float(np.max(np.abs(eigenvalues))))
    return bool(eigenvalues.min() >= -CONVEXITY_TOL * scale)


_FIRST_INSTANCE = True


def _highspy() -> Any:
    """The ``highspy`` module, imported on first use (typed loosely: it ships no stubs)."""
    import highspy

    return highspy


def _new_highs(quiet: bool) -> Any:
    """A ``highspy.Highs``; the one-off banner HiGHS prints at first creation is hidden when quiet."""
    global _FIRST_INSTANCE
    highspy = _highspy()
    if not (quiet and _FIRST_INSTANCE):
        _FIRST_INSTANCE = False
        return highspy.Highs()
    _FIRST_INSTANCE = False
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as sink:
            os.dup2(sink.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _bound(value: float) -> float:
    """Gurobi treats right-hand sides beyond 1e100 as infinite."""
    if value >= G.INFINITY:
        return math.inf
    if value <= -G.INFINITY:
        return -math.inf
    return value


def solve(snap: Snapshot, params: ParamSet, overrides: dict[str, float] | None = None) -> SolveOutcome:
    """Solve ``snap`` under ``params`` (and HiGHS options ``overrides``); call
    :func:`check_solvable` first. Raises ``NeedsGurobiError`` when HiGHS's QP solver reaches
    the layer's own iteration limit (:func:`qp_iteration_limit`)."""
    started = time.perf_counter()
    if snap.num_vars == 0:
        return _solve_without_columns(snap, started)
    quiet = not params.logging_on()
    highs = _new_highs(quiet)
    highs.setOptionValue("output_flag", not quiet)
    _apply_options(highs, params)
    limit = qp_iteration_limit(snap) if snap.q_obj else 0
    if limit:
        highs.setOptionValue("qp_iteration_limit", limit)
    for option, setting in (overrides or {}).items():
        highs.setOptionValue(option, setting)
    # HiGHS minimises: every objective coefficient is multiplied by `factor` (the sense, times a
    # power of two for a QP) and every objective-scaled result divided by it
    factor = (-1.0 if snap.sense < 0 else 1.0) * objective_scale(snap)
    highs.passModel(_highs_lp(snap, factor))
    if snap.q_obj:
        highs.passHessian(_hessian(snap, factor))
    highs.run()
    if limit and highs.getInfo().qp_iteration_count >= limit:
        raise NeedsGurobiError(
            f"HiGHS's QP solver made no progress in {limit} iterations on this convex quadratic "
            "objective (it stalls on badly scaled Hessians)"
        )
    return _outcome(highs, snap, factor, started)


def objective_scale(snap: Snapshot) -> float:
    """The power of two a QP's objective is multiplied by for HiGHS (1.0 for an LP or MILP): it
    brings the largest Hessian entry or linear cost to between 2**-0.5 and 2**0.5."""
    if not snap.q_obj:
        return 1.0
    largest = max(max(abs(2.0 * q) for _i, _j, q in snap.q_obj), max((abs(c) for c in snap.obj), default=0.0))
    if largest == 0.0 or not math.isfinite(largest):
        return 1.0
    return float(2.0 ** -round(math.log2(largest)))


def qp_iteration_limit(snap: Snapshot) -> int:
    """The QP iteration limit the layer gives HiGHS (see :data:`QP_ITERATIONS_BASE`)."""
    return QP_ITERATIONS_BASE + QP_ITERATIONS_PER_ITEM * (snap.num_vars + len(snap.rows))


def _highs_lp(snap: Snapshot, factor: float) -> Any:
    """The linear part of ``snap`` as a ``HighsLp``, objective multiplied by ``factor``."""
    import numpy as np

    highspy = _highspy()
    lp = highspy.HighsLp()
    lp.num_col_ = snap.num_vars
    lp.num_row_ = len(snap.rows)
    lp.col_cost_ = np.array(snap.obj, dtype=np.float64) * factor
    lp.offset_ = snap.obj_constant * factor
    lower = [_bound(v) for v in snap.lb]
    upper = [_bound(v) for v in snap.ub]
    kinds = {
        "C": highspy.HighsVarType.kContinuous,
        "B": highspy.HighsVarType.kInteger,
        "I": highspy.HighsVarType.kInteger,
        "S": highspy.HighsVarType.kSemiContinuous,
        "N": highspy.HighsVarType.kSemiInteger,
    }
    for j, vtype in enumerate(snap.vtype):
        if vtype == "B":
            lower[j], upper[j] = max(lower[j], 0.0), min(upper[j], 1.0)
    lp.col_lower_ = np.array(lower, dtype=np.float64)
    lp.col_upper_ = np.array(upper, dtype=np.float64)
    row_lower: list[float] = []
    row_upper: list[float] = []
    starts: list[int] = [0]
    index: list[int] = []
    value: list[float] = []
    for row in snap.rows:
        rhs = _bound(row.rhs)
        row_lower.append(-math.inf if row.sense == "<" else rhs)
        row_upper.append(math.inf if row.sense == ">" else rhs)
        index.extend(row.cols)
        value.extend(row.vals)
        starts.append(len(index))
    lp.row_lower_ = np.array(row_lower, dtype=np.float64)
    lp.row_upper_ = np.array(row_upper, dtype=np.float64)
    if snap.rows:
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(value, dtype=np.float64)
        lp.a_matrix_.num_row_ = len(snap.rows)
        lp.a_matrix_.num_col_ = snap.num_vars
    if snap.is_mip:
        lp.integrality_ = [kinds[vtype] for vtype in snap.vtype]
    return lp


def _apply_options(highs: Any, params: ParamSet) -> None:
    highs.setOptionValue("mip_abs_gap", _GUROBI_MIP_GAP_ABS)
    for gurobi_name, highs_name in HIGHS_OPTIONS.items():
        value = params.get(gurobi_name)
        if value == params_default(gurobi_name):
            continue
        if isinstance(value, float) and math.isinf(value):
            continue
        highs.setOptionValue(highs_name, value)
    if params.get("Presolve") == 0:
        highs.setOptionValue("presolve", "off")
    method = params.get("Method")
    if method in (0, 1):
        highs.setOptionValue("solver", "simplex")
        highs.setOptionValue("simplex_strategy", 4 if method == 0 else 1)
    elif method == 2:
        highs.setOptionValue("solver", "ipm")
    log_file = params.get("LogFile")
    if log_file:
        highs.setOptionValue("log_file", str(log_file))


def _hessian(snap: Snapshot, factor: float) -> Any:
    """HiGHS Hessian (lower triangle, column-wise) of ``factor * sum(q x_i x_j)``: HiGHS minimises
    ``c'x + 1/2 x'Hx``, so diagonal entries are ``2q`` and off-diagonal entries ``q``."""
    import numpy as np

    highspy = _highspy()
    by_column: dict[int, dict[int, float]] = {}
    for i, j, q in snap.q_obj:
        column = by_column.setdefault(min(i, j), {})
        row = max(i, j)
        column[row] = column.get(row, 0.0) + factor * (2.0 * q if i == j else q)
    hessian = highspy.HighsHessian()
    hessian.dim_ = snap.num_vars
    hessian.format_ = highspy.HessianFormat.kTriangular
    starts: list[int] = [0]
    index: list[int] = []
    value: list[float] = []
    for col in range(snap.num_vars):
        for row, entry in sorted(by_column.get(col, {}).items()):
            index.append(row)
            value.append(entry)
        starts.append(len(index))
    hessian.start_ = np.array(starts, dtype=np.int32)
    hessian.index_ = np.array(index, dtype=np.int32)
    hessian.value_ = np.array(value, dtype=np.float64)
    return hessian


def _outcome(highs: Any, snap: Snapshot, factor: float, started: float) -> SolveOutcome:
    highspy = _highspy()
    model_status = highs.getModelStatus()
    info = highs.getInfo()
    has_solution = info.primal_solution_status == highspy.kSolutionStatusFeasible
    status = _status(model_status, has_solution)
    outcome = SolveOutcome(
        status=status,
        runtime_s=time.perf_counter() - started,
        iterations=float(info.simplex_iteration_count + info.qp_iteration_count),
        barrier_iterations=int(info.ipm_iteration_count),
        nodes=float(max(info.mip_node_count, 0)),
    )
    if not has_solution or status in (G.INFEASIBLE, G.INF_OR_UNBD, G.UNBOUNDED):
        return outcome
    solution = highs.getSolution()
    outcome.objval = float(highs.getObjectiveValue()) / factor
    outcome.x = [float(v) for v in solution.col_value]
    activity = [float(v) for v in solution.row_value]
    outcome.slack = [row.rhs - a for row, a in zip(snap.rows, activity, strict=True)]
    if snap.is_mip:
        bound = float(info.mip_dual_bound)
        outcome.objbound = bound / factor if math.isfinite(bound) else outcome.objval
        outcome.mip_gap = float(info.mip_gap) if math.isfinite(info.mip_gap) else math.inf
    else:
        outcome.objbound = outcome.objval
        if solution.dual_valid:
            outcome.pi = [float(v) / factor for v in solution.row_dual]
            outcome.rc = [float(v) / factor for v in solution.col_dual]
    return outcome


def _status(model_status: Any, has_solution: bool) -> int:
    S = _highspy().HighsModelStatus
    table = {
        S.kOptimal: G.OPTIMAL,
        S.kInfeasible: G.INFEASIBLE,
        S.kUnboundedOrInfeasible: G.INF_OR_UNBD,
        S.kUnbounded: G.UNBOUNDED,
        S.kTimeLimit: G.TIME_LIMIT,
        S.kIterationLimit: G.ITERATION_LIMIT,
        S.kSolutionLimit: G.SOLUTION_LIMIT,
        S.kInterrupt: G.INTERRUPTED,
        S.kMemoryLimit: G.MEM_LIMIT,
        S.kObjectiveBound: G.USER_OBJ_LIMIT,
        S.kObjectiveTarget: G.USER_OBJ_LIMIT,
    }
    if model_status in table:
        return table[model_status]
    return G.SUBOPTIMAL if has_solution else G.NUMERIC


def _solve_without_columns(snap: Snapshot, started: float) -> SolveOutcome:
    """A model without variables: optimal at the objective constant unless a row is violated."""
    for row in snap.rows:
        violated = (
            (row.sense == "<" and row.rhs < 0.0)
            or (row.sense == ">" and row.rhs > 0.0)
            or (row.sense == "=" and row.rhs != 0.0)
        )
        if violated:
            return SolveOutcome(status=G.INFEASIBLE, runtime_s=time.perf_counter() - started)
    return SolveOutcome(
        status=G.OPTIMAL,
        runtime_s=time.perf_counter() - started,
        objval=snap.obj_constant,
        objbound=snap.obj_constant,
        x=[],
        rc=[],
        pi=[0.0] * len(snap.rows),
        slack=[row.rhs for row in snap.rows],
    )
