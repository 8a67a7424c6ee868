"""Objective verification: the harness re-derives a claimed result from the captured model.

**The verification contract.** Everything a program's process reports is a claim: the hooks run
in that process, beside code that may patch them, subclass the models or write records of its
own, so the solver status, the objective *and* the captured model are all the program's word.
The harness accepts a claim only when it has solved the captured model itself, in the parent
process, and found the claimed result ("match"). A forged record therefore gains nothing a
program could not get by honestly building that model: a claim about no model, about a model the
parent cannot solve, or about a model whose optimum differs, never matches.

Agreement ("match"):

* claimed ``optimal``: the parent finds an optimum and
  ``|claimed - verified| <= 1e-6 + rtol * max(1, |verified|)``, with ``rtol`` = 1e-6 for LPs and
  2e-4 for models with integer variables or quadratic parts (MIP solvers stop at a relative
  gap of ~1e-4; quadratic solvers are accurate to their feasibility tolerance);
* claimed ``infeasible`` / ``unbounded`` / ``inf_or_unbd``: the parent reaches a compatible
  verdict.

Anything else is a "mismatch". What the parent cannot decide gives ``"skipped: <why>"``:
SOS and general constraints (not captured as data), quadratic constraints the hook could not
read, semi-continuous variables in a quadratic model without gurobipy, statuses without a claim
(time limits, errors), a missing solver (pyscipopt) and solver failures or time-outs. The graders
turn a passing claim that was not matched into the verdict ``unverified``.

**Which solver.** A gurobipy claim is re-solved with gurobipy in the parent when gurobipy is
licensed there (the same solver: 3-100x faster than HiGHS on the B4O MILPs, and it handles every
quadratic kind); a model too large for its licence falls back to the rest of the list. Otherwise
linear models and MILPs go to HiGHS, convex continuous QPs to HiGHS's QP
solver, and everything else quadratic (MIQP, QCP, non-convex) to SCIP through pyscipopt.

Verdicts are remembered (LRU, :data:`CACHE_SIZE` models) under a key of the model's numbers
only, without its names: samples of one problem, and twin problems worded differently, often
build the very same matrix under other names. Two threads asking about the same model at once
solve it once. A re-solve may take twice the program's own wall time (10-120 s,
:func:`verification_time_limit`); a time-out is not remembered.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import operator
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..records import Execution, LinearModel, SolveRecord, SolveStatus

CACHE_MAX_ENTRIES = 20_000
"""Models with at most this many nonzeros + variables have their verdict remembered."""
CACHE_SIZE = 1024
LP_RTOL = 1e-6
MIP_RTOL = 2e-4
ATOL = 1e-6
MIP_GAP = 1e-6
"""Relative MIP gap of the parent's re-solves: the parent's objective is then within 1e-6 of the
true optimum, far inside the agreement tolerance (a 1e-4 gap changed no verdict here and did not
rescue the MILPs that time out, LogiOR prob_015 and prob_019)."""
CONVEXITY_TOL = 1e-9
"""Relative eigenvalue slack under which a quadratic objective still counts as convex."""
DENSE_CONVEXITY_LIMIT = 2000
"""Quadratic objectives over more variables than this are not checked for convexity (dense
eigenvalues): they go to SCIP."""
_CLAIMS = (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)
_COMPATIBLE = {
    SolveStatus.INFEASIBLE: (SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD),
    SolveStatus.UNBOUNDED: (SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD),
    SolveStatus.INF_OR_UNBD: (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD),
}
SOLVERS = ("gurobipy", "highs", "scip")
"""Names :func:`verify_solve` records in ``SolveRecord.verified_by``."""


@dataclass(frozen=True)
class Resolve:
    """The parent's verdict on a model: normalised status, objective, raw status, solver name."""

    status: SolveStatus
    objective: float | None
    raw_status: str
    solver: str = "highs"


class Unsolvable(Exception):
    """The parent has no solver for this model; the message says why (a "skipped" reason)."""


# --------------------------------------------------------------------------- model views


def _quadratic_objective(model: LinearModel) -> list[tuple[int, int, float]]:
    # Zero terms are dropped: a program adding ``0 * x * x`` to a linear model must not push it
    # to a slower solver, or out of reach of verification.
    return [(i, j, q) for i, j, q in model.q_obj if q != 0.0]


def _quadratic_rows(
    model: LinearModel,
) -> list[tuple[float, float, list[tuple[int, float]], list[tuple[int, int, float]]]]:
    return [
        (row.lower, row.upper, list(row.linear), [(i, j, q) for i, j, q in row.quadratic if q != 0.0])
        for row in model.q_constraints
    ]


def _is_integral(model: LinearModel) -> bool:
    return any(kind in "IBSN" for kind in model.vtype)


def _is_quadratic(model: LinearModel) -> bool:
    return bool(_quadratic_objective(model)) or bool(model.q_constraints)


def _rtol(model: LinearModel) -> float:
    return MIP_RTOL if _is_integral(model) or _is_quadratic(model) else LP_RTOL


def _skip_reason(solve: SolveRecord) -> str | None:
    model = solve.model
    if model is None:
        return "no matrix captured"
    if model.n_sos or model.n_general_constraints:
        return "model has SOS or general constraints"
    if model.n_quadratic_constraints != len(model.q_constraints):
        return "model has quadratic constraints that were not captured"
    if solve.status not in _CLAIMS:
        return f"solver status {solve.status.value}"
    return None


def _row_major(model: LinearModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays (starts, columns, values) with duplicate entries summed."""
    rows = np.asarray(model.a_row, dtype=np.int64)
    cols = np.asarray(model.a_col, dtype=np.int64)
    vals = np.asarray(model.a_val, dtype=np.float64)
    keys = rows * max(model.num_vars, 1) + cols
    unique, inverse = np.unique(keys, return_inverse=True)
    summed = np.zeros(unique.size, dtype=np.float64)
    np.add.at(summed, inverse, vals)
    unique_rows = unique // max(model.num_vars, 1)
    starts = np.searchsorted(unique_rows, np.arange(model.num_rows + 1)).astype(np.int32)
    return starts, (unique % max(model.num_vars, 1)).astype(np.int32), summed


def _bounds(model: LinearModel) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds with binaries clipped to [0, 1] (a binary declared with ub = inf is still 0/1)."""
    lower = np.asarray(model.lb, dtype=np.float64)
    upper = np.asarray(model.ub, dtype=np.float64)
    binary = np.asarray([kind == "B" for kind in model.vtype], dtype=bool)
    return np.where(binary, np.maximum(lower, 0.0), lower), np.where(binary, np.minimum(upper, 1.0), upper)


def _symmetric(terms: list[tuple[int, int, float]], n: int) -> np.ndarray:
    """Dense symmetric ``S`` with ``x'Sx = sum(q * x_i * x_j)``."""
    matrix = np.zeros((n, n))
    for i, j, q in terms:
        if i == j:
            matrix[i, i] += q
        else:
            matrix[i, j] += q / 2.0
            matrix[j, i] += q / 2.0
    return matrix


def _convex_objective(model: LinearModel) -> bool:
    """Whether the quadratic objective is convex in the model's sense (PSD for min, NSD for max)."""
    terms = _quadratic_objective(model)
    used = sorted({i for i, _, _ in terms} | {j for _, j, _ in terms})
    if len(used) > DENSE_CONVEXITY_LIMIT:
        return False
    position = {column: k for k, column in enumerate(used)}
    matrix = _symmetric([(position[i], position[j], q) for i, j, q in terms], len(used))
    if model.sense == "max":
        matrix = -matrix
    eigenvalues = np.linalg.eigvalsh(matrix)
    scale = max(1.0, float(np.max(np.abs(eigenvalues))))
    return bool(eigenvalues.min() >= -CONVEXITY_TOL * scale)


def model_key(model: LinearModel) -> bytes:
    """A digest of the model's numbers (sense, bounds, types, rows, matrix, quadratic parts,
    counts), without its names: two models with the same key are the same optimisation problem."""
    digest = hashlib.sha256()
    digest.update(f"{model.sense}|{model.objective_constant!r}|{model.num_vars}|{model.num_rows}|".encode())
    digest.update(f"{model.n_quadratic_constraints}|{model.n_general_constraints}|{model.n_sos}|".encode())
    digest.update("".join(model.vtype).encode())
    for values in (model.obj, model.lb, model.ub, model.row_lower, model.row_upper, model.a_val):
        digest.update(np.asarray(values, dtype=np.float64).tobytes())
        digest.update(b"|")
    for values in (model.a_row, model.a_col):
        digest.update(np.asarray(values, dtype=np.int64).tobytes())
        digest.update(b"|")
    digest.update(repr(model.q_obj).encode())
    for row in model.q_constraints:
        digest.update(repr((row.lower, row.upper, row.linear, row.quadratic)).encode())
    digest.update(repr((model.sos, model.indicators)).encode())
    return digest.digest()


# --------------------------------------------------------------------------- HiGHS

_HIGHS_STATUS = {
    "kOptimal": SolveStatus.OPTIMAL,
    "kInfeasible": SolveStatus.INFEASIBLE,
    "kUnbounded": SolveStatus.UNBOUNDED,
    "kUnboundedOrInfeasible": SolveStatus.INF_OR_UNBD,
    "kTimeLimit": SolveStatus.TIME_LIMIT,
    "kModelEmpty": SolveStatus.OPTIMAL,
}
_VTYPE = {"C": 0, "I": 1, "B": 1, "S": 2, "N": 3}

_BANNER_LOCK = threading.Lock()
_banner_shown = False


def _new_highs() -> Any:
    """A ``highspy.Highs``; the first one in the process is made with file descriptor 1 pointed at
    /dev/null, because HiGHS prints its copyright banner to stdout from C++ once per process, which
    would land in the middle of the harness's own output (summaries are piped into files)."""
    global _banner_shown
    highspy = importlib.import_module("highspy")
    with _BANNER_LOCK:
        if _banner_shown:
            return highspy.Highs()
        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            highs = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _banner_shown = True
        return highs


def _empty(model: LinearModel, solver: str) -> Resolve:
    # Nothing to solve (HiGHS reports an empty model without its objective constant).
    feasible = all(low <= 0.0 <= high for low, high in zip(model.row_lower, model.row_upper, strict=True))
    feasible = feasible and all(row.lower <= 0.0 <= row.upper for row in model.q_constraints)
    if feasible:
        return Resolve(SolveStatus.OPTIMAL, model.objective_constant, "empty model", solver)
    return Resolve(SolveStatus.INFEASIBLE, None, "empty model", solver)


def resolve_with_highs(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` (linear, or with a convex quadratic objective over continuous variables)
    with HiGHS: relative MIP gap :data:`MIP_GAP`, ``time_limit_s`` seconds.

    The ``threads`` option is left alone on purpose: HiGHS sizes one scheduler per process at its
    first solve and then refuses (``kNotset``) any solve asking for another thread count, and the
    harness process may already have solved with HiGHS elsewhere (SciPy, the reference backend).

    Raises:
        Unsolvable: quadratic constraints, or a quadratic objective with integer variables.
    """
    quadratic = _quadratic_objective(model)
    if model.q_constraints or (quadratic and _is_integral(model)):
        raise Unsolvable("HiGHS solves neither quadratic constraints nor MIQPs")
    if model.num_vars == 0:
        return _empty(model, "highs")
    highs = _new_highs()
    highspy = importlib.import_module("highspy")
    for option, value in (
        ("output_flag", False),
        ("time_limit", float(time_limit_s)),
        ("mip_rel_gap", MIP_GAP),
    ):
        highs.setOptionValue(option, value)
    n, m = model.num_vars, model.num_rows
    # A maximised QP is passed as the minimisation of its negation (HiGHS's QP solver minimises).
    flip = -1.0 if quadratic and model.sense == "max" else 1.0
    lower, upper = _bounds(model)
    highs.addCols(
        n,
        flip * np.asarray(model.obj, dtype=np.float64),
        lower,
        upper,
        0,
        np.zeros(n + 1, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.float64),
    )
    starts, columns, values = _row_major(model)
    highs.addRows(
        m,
        np.asarray(model.row_lower, dtype=np.float64),
        np.asarray(model.row_upper, dtype=np.float64),
        int(values.size),
        starts,
        columns,
        values,
    )
    if _is_integral(model):
        kinds = np.asarray([_VTYPE.get(kind, 0) for kind in model.vtype], dtype=np.uint8)
        highs.changeColsIntegrality(n, np.arange(n, dtype=np.int32), kinds)
    highs.changeObjectiveOffset(flip * model.objective_constant)
    if quadratic:
        _pass_hessian(highs, highspy, flip * 2.0 * _symmetric(quadratic, n))
    elif model.sense == "max":
        highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    highs.run()
    raw = str(getattr(highs.getModelStatus(), "name", highs.getModelStatus()))
    status = _HIGHS_STATUS.get(raw, SolveStatus.ERROR)
    objective = highs.getInfo().objective_function_value if status is SolveStatus.OPTIMAL else None
    return Resolve(status, None if objective is None else flip * float(objective), raw, "highs")


def _pass_hessian(highs: Any, highspy: Any, hessian: np.ndarray) -> None:
    """HiGHS minimises ``c'x + x'Hx / 2`` and takes H's lower triangle column by column."""
    starts, rows, values = [0], [], []
    for column in range(hessian.shape[0]):
        for row in range(column, hessian.shape[0]):
            if hessian[row, column] != 0.0:
                rows.append(row)
                values.append(hessian[row, column])
        starts.append(len(rows))
    highs.passHessian(
        hessian.shape[0],
        len(values),
        highspy.HessianFormat.kTriangular,
        np.asarray(starts, dtype=np.int32),
        np.asarray(rows, dtype=np.int32),
        np.asarray(values, dtype=np.float64),
    )


# --------------------------------------------------------------------------- gurobipy

_GUROBI_STATUS = {
    2: SolveStatus.OPTIMAL,
    3: SolveStatus.INFEASIBLE,
    4: SolveStatus.INF_OR_UNBD,
    5: SolveStatus.UNBOUNDED,
    9: SolveStatus.TIME_LIMIT,
}
_gurobi_lock = threading.Lock()
_gurobi_usable: bool | None = None
_gurobi_envs = threading.local()


def _gurobi_env(gp: Any) -> Any:
    """This thread's gurobipy environment, started once: starting one checks the licence (~0.5 ms,
    more than a small LP's solve), and an environment must not serve two threads at once."""
    env = getattr(_gurobi_envs, "env", None)
    if env is None:
        env = gp.Env(params={"OutputFlag": 0})
        _gurobi_envs.env = env
    return env


def gurobi_available() -> bool:
    """Whether gurobipy is installed and licensed in the harness process (checked once: import,
    an environment, one tiny solve)."""
    global _gurobi_usable
    with _gurobi_lock:
        if _gurobi_usable is None:
            try:
                gp = importlib.import_module("gurobipy")
                with gp.Env(params={"OutputFlag": 0}) as env, gp.Model(env=env) as probe:
                    probe.addVar(lb=0.0, ub=1.0, obj=1.0)
                    probe.optimize()
                    _gurobi_usable = int(probe.Status) == 2
            except Exception:
                _gurobi_usable = False
        return _gurobi_usable


def warm_up() -> None:
    """Load the harness's own gurobipy and check its licence now (:func:`gurobi_available`), so
    that the first claim's verification does not wait for them; a run calls it while its sandbox
    workers start. Never raises."""
    gurobi_available()


def resolve_with_gurobi(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` (linear, quadratic, convex or not) with the harness's own gurobipy: one
    thread, relative MIP gap :data:`MIP_GAP`, ``time_limit_s`` seconds.

    Raises:
        Unsolvable: gurobipy is missing or refuses the model (e.g. too large for its licence).
    """
    if model.num_vars == 0:
        return _empty(model, "gurobipy")
    try:
        gp = importlib.import_module("gurobipy")
        with gp.Model(env=_gurobi_env(gp)) as solver:
            solver.Params.Threads = 1
            solver.Params.TimeLimit = float(time_limit_s)
            solver.Params.MIPGap = MIP_GAP
            lower, upper = _bounds(model)
            # Term by term through gurobipy's own expressions: its matrix API wants SciPy, whose
            # import (~0.2 s, NumPy's test and f2py modules with it) would be paid by every run.
            x = list(
                solver.addVars(
                    model.num_vars,
                    lb=lower.tolist(),
                    ub=upper.tolist(),
                    obj=[float(value) for value in model.obj],
                    vtype=list(model.vtype),
                ).values()
            )
            starts, columns, values = _row_major(model)
            for row in range(model.num_rows):
                span = slice(int(starts[row]), int(starts[row + 1]))
                expression = gp.LinExpr(values[span].tolist(), [x[j] for j in columns[span].tolist()])
                _gurobi_range(solver, expression, model.row_lower[row], model.row_upper[row])
            quadratic = _quadratic_objective(model)
            if quadratic:
                objective = gp.QuadExpr(gp.LinExpr([float(value) for value in model.obj], x))
                rows, cols, coefs = zip(*quadratic, strict=True)
                objective.addTerms(list(coefs), [x[i] for i in rows], [x[j] for j in cols])
                solver.setObjective(objective)
            for low, high, linear, terms in _quadratic_rows(model):
                expression = gp.QuadExpr(gp.LinExpr([v for _, v in linear], [x[j] for j, _ in linear]))
                if terms:
                    expression.addTerms(
                        [q for _, _, q in terms], [x[i] for i, _, _ in terms], [x[j] for _, j, _ in terms]
                    )
                for sense, bound in (("<", high), (">", low)):
                    if math.isfinite(bound):
                        solver.addQConstr(expression, sense, bound)
            solver.ObjCon = model.objective_constant
            solver.ModelSense = -1 if model.sense == "max" else 1
            if _is_quadratic(model):
                solver.Params.NonConvex = 2
            solver.optimize()
            code = int(solver.Status)
            status = _GUROBI_STATUS.get(code, SolveStatus.ERROR)
            objective = float(solver.ObjVal) if status is SolveStatus.OPTIMAL else None
            return Resolve(status, objective, f"status {code}", "gurobipy")
    except Unsolvable:
        raise
    except Exception as error:
        if type(error).__name__ == "GurobiError" or isinstance(error, ImportError):
            raise Unsolvable(f"gurobipy refused the model ({error})"[:200]) from None
        raise


def _row_sides(low: float, high: float) -> list[tuple[str, float]]:
    """The constraints a row ``low <= a'x <= high`` becomes, as (sense, value) pairs: one ``=``
    where its bounds meet at a finite value, else a ``<`` and a ``>`` for each finite side. An
    equality at an infinite value (a capture's ``= 1e20``) is a free row, as HiGHS reads it, not
    an infeasible equation."""
    if low == high and math.isfinite(low):
        return [("=", low)]
    return [(sense, value) for sense, value in (("<", high), (">", low)) if math.isfinite(value)]


def _gurobi_range(solver: Any, expression: Any, low: float, high: float) -> None:
    for sense, value in _row_sides(low, high):
        solver.addLConstr(expression, sense, value)


# --------------------------------------------------------------------------- SCIP

_SCIP_STATUS = {
    "optimal": SolveStatus.OPTIMAL,
    "infeasible": SolveStatus.INFEASIBLE,
    "unbounded": SolveStatus.UNBOUNDED,
    "inforunbd": SolveStatus.INF_OR_UNBD,
    "timelimit": SolveStatus.TIME_LIMIT,
}


def scip_available() -> bool:
    """Whether pyscipopt (SCIP) is installed in the harness process."""
    return importlib.util.find_spec("pyscipopt") is not None


def resolve_with_scip(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` (MIQP, QCP, non-convex quadratic; linear too) to global optimality with
    SCIP, ``time_limit_s`` seconds. A quadratic objective becomes an epigraph variable (SCIP's
    objective is linear).

    Raises:
        Unsolvable: pyscipopt is missing, or the model has semi-continuous variables.
    """
    if not scip_available():
        raise Unsolvable("needs pyscipopt (pip install 'trex-eval[solvers]')")
    if any(kind in "SN" for kind in model.vtype):
        raise Unsolvable("semi-continuous variables in a model only SCIP could solve")
    if model.num_vars == 0:
        return _empty(model, "scip")
    scip = importlib.import_module("pyscipopt")
    solver = scip.Model()
    solver.hideOutput()
    solver.setParam("limits/time", float(time_limit_s))
    lower, upper = _bounds(model)
    kinds = {"C": "C", "I": "I", "B": "B"}
    x = [
        solver.addVar(
            lb=None if math.isinf(low) else float(low),
            ub=None if math.isinf(high) else float(high),
            vtype=kinds[kind],
        )
        for low, high, kind in zip(lower, upper, model.vtype, strict=True)
    ]
    starts, columns, values = _row_major(model)
    for row in range(model.num_rows):
        span = range(int(starts[row]), int(starts[row + 1]))
        expression = scip.quicksum(float(values[k]) * x[int(columns[k])] for k in span)
        _add_range(solver, expression, model.row_lower[row], model.row_upper[row])
    for low, high, linear, terms in _quadratic_rows(model):
        expression = scip.quicksum(value * x[j] for j, value in linear) + scip.quicksum(
            q * x[i] * x[j] for i, j, q in terms
        )
        _add_range(solver, expression, low, high)
    linear_objective = scip.quicksum(value * x[j] for j, value in enumerate(model.obj) if value)
    quadratic = _quadratic_objective(model)
    if quadratic:
        epigraph = solver.addVar(lb=None, ub=None)
        expression = linear_objective + scip.quicksum(q * x[i] * x[j] for i, j, q in quadratic)
        solver.addCons(epigraph >= expression if model.sense == "min" else epigraph <= expression)
        solver.setObjective(epigraph, "minimize" if model.sense == "min" else "maximize")
    else:
        solver.setObjective(linear_objective, "minimize" if model.sense == "min" else "maximize")
    solver.optimize()
    raw = str(solver.getStatus())
    status = _SCIP_STATUS.get(raw, SolveStatus.ERROR)
    objective = (
        float(solver.getObjVal()) + model.objective_constant if status is SolveStatus.OPTIMAL else None
    )
    return Resolve(status, objective, raw, "scip")


_SCIP_SIDES = {"=": operator.eq, "<": operator.le, ">": operator.ge}


def _add_range(solver: Any, expression: Any, low: float, high: float) -> None:
    for sense, value in _row_sides(low, high):
        solver.addCons(_SCIP_SIDES[sense](expression, value))


# --------------------------------------------------------------------------- choosing and remembering


def _plan(model: LinearModel, *, prefer_gurobi: bool) -> list[tuple[str, Callable[..., Resolve]]]:
    """The solvers to try for ``model``, in order (see the module docstring)."""
    chosen: list[tuple[str, Callable[..., Resolve]]] = []
    if prefer_gurobi and gurobi_available():
        chosen.append(("gurobipy", resolve_with_gurobi))
    quadratic = _quadratic_objective(model)
    if not model.q_constraints and (not quadratic or (not _is_integral(model) and _convex_objective(model))):
        chosen.append(("highs", resolve_with_highs))
    else:
        chosen.append(("scip", resolve_with_scip))
    return chosen


def resolve(model: LinearModel, *, prefer_gurobi: bool = False, time_limit_s: float = 10.0) -> Resolve:
    """The parent's verdict on ``model`` from the first solver of the list that takes it.

    Raises:
        Unsolvable: no solver takes the model (the last refusal's reason).
    """
    refusal = "no solver"
    for _, solve in _plan(model, prefer_gurobi=prefer_gurobi):
        try:
            return solve(model, time_limit_s=time_limit_s)
        except Unsolvable as error:
            refusal = str(error)
    raise Unsolvable(refusal)


class _Memo:
    """An LRU of verdicts by :func:`model_key`, where a second thread asking for a model being
    solved waits for that solve instead of repeating it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.done: OrderedDict[tuple[bytes, bool], Resolve] = OrderedDict()
        self.running: dict[tuple[bytes, bool], threading.Event] = {}

    def get(self, key: tuple[bytes, bool], compute: Callable[[], Resolve]) -> Resolve:
        """``compute()``'s verdict for ``key``, remembered unless it ran out of time (a later
        request, with more time, tries again)."""
        while True:
            with self.lock:
                if key in self.done:
                    self.done.move_to_end(key)
                    return self.done[key]
                waiting = self.running.get(key)
                if waiting is None:
                    event = self.running[key] = threading.Event()
                    break
            waiting.wait()
        try:
            result = compute()
        finally:
            with self.lock:
                self.running.pop(key, None)
                event.set()
        if result.status is SolveStatus.TIME_LIMIT:
            return result
        with self.lock:
            self.done[key] = result
            while len(self.done) > self.size:
                self.done.popitem(last=False)
        return result

    def clear(self) -> None:
        with self.lock:
            self.done.clear()


_MEMO = _Memo(CACHE_SIZE)


def _remembered(model: LinearModel, *, prefer_gurobi: bool, time_limit_s: float) -> Resolve:
    """:func:`resolve`, remembered for small models (an :class:`Unsolvable` is not remembered)."""
    if len(model.a_val) + model.num_vars > CACHE_MAX_ENTRIES:
        return resolve(model, prefer_gurobi=prefer_gurobi, time_limit_s=time_limit_s)
    key = (model_key(model), prefer_gurobi and gurobi_available())
    return _MEMO.get(key, lambda: resolve(model, prefer_gurobi=prefer_gurobi, time_limit_s=time_limit_s))


def objectives_agree(reported: float, verified: float, *, integral: bool) -> bool:
    """The tolerance rule of the module docstring (``integral``: the MIP/quadratic tolerance)."""
    rtol = MIP_RTOL if integral else LP_RTOL
    return abs(reported - verified) <= ATOL + rtol * max(1.0, abs(verified))


def verify_solve(
    solve: SolveRecord, *, time_limit_s: float = 10.0, prefer_gurobi: bool | None = None
) -> SolveRecord:
    """``solve`` with ``verified_objective``, ``verification`` and ``verified_by`` set (see the
    module docstring). ``prefer_gurobi`` (default: when the claim is gurobipy's) re-solves with
    the harness's gurobipy first when it is licensed here.

    A record whose ``verification`` is already set (e.g. "skipped: no matrix captured", filled in
    when the sandbox could not capture the matrix, or a verdict from an earlier pass) is
    returned unchanged.
    """
    if solve.verification is not None:
        return solve
    reason = _skip_reason(solve)
    if reason is not None:
        return solve.model_copy(update={"verification": f"skipped: {reason}"})
    model = solve.model
    assert model is not None
    gurobi = solve.library == "gurobipy" if prefer_gurobi is None else prefer_gurobi
    try:
        result = _remembered(model, prefer_gurobi=gurobi, time_limit_s=time_limit_s)
    except Unsolvable as error:
        return solve.model_copy(update={"verification": f"skipped: {error}"[:300]})
    except Exception as error:
        return solve.model_copy(
            update={"verification": f"skipped: re-solve failed ({type(error).__name__}: {error})"[:300]}
        )
    if result.status in (SolveStatus.TIME_LIMIT, SolveStatus.ERROR):
        return solve.model_copy(
            update={
                "verification": f"skipped: {result.solver} {result.raw_status}",
                "verified_by": result.solver,
            }
        )
    if solve.status is SolveStatus.OPTIMAL:
        agrees = (
            result.status is SolveStatus.OPTIMAL
            and solve.objective is not None
            and result.objective is not None
            and math.isfinite(result.objective)
            and objectives_agree(solve.objective, result.objective, integral=_rtol(model) == MIP_RTOL)
        )
    else:
        agrees = result.status in _COMPATIBLE[solve.status]
    return solve.model_copy(
        update={
            "verified_objective": result.objective,
            "verification": "match" if agrees else "mismatch",
            "verified_by": result.solver,
        }
    )


VERIFY_MIN_S = 10.0
VERIFY_MAX_S = 120.0
VERIFY_WALL_FACTOR = 2.0


def verification_time_limit(execution: Execution) -> float:
    """Seconds the parent may spend on one re-solve: twice the program's own wall time, at least
    :data:`VERIFY_MIN_S`, at most :data:`VERIFY_MAX_S` (a model the program's solver needed a
    minute for must not be unverified for want of ten seconds)."""
    return min(VERIFY_MAX_S, max(VERIFY_MIN_S, VERIFY_WALL_FACTOR * execution.wall_s))


def verify_last_solve(execution: Execution, *, time_limit_s: float | None = None) -> Execution:
    """``execution`` with its last solve verified (the one the objective rules judge); earlier
    solves are left as they are. Unchanged when there is no solve or it was verified already.
    ``time_limit_s`` defaults to :func:`verification_time_limit`."""
    last = execution.last_solve
    if last is None or last.verification is not None:
        return execution
    limit = verification_time_limit(execution) if time_limit_s is None else time_limit_s
    checked = verify_solve(last, time_limit_s=limit)
    return execution.model_copy(update={"solves": (*execution.solves[:-1], checked)})
