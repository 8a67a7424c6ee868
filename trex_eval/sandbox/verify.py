"""Objective verification: re-solve a captured matrix with HiGHS in the harness process.

The sandbox reports what the program's solver said; this module checks it against the harness's
own solve of the same matrix, so a program cannot get a forged objective accepted (by patching
the hooks, subclassing the model or writing fake records): the reported status and objective
must agree with what HiGHS finds for the reported model.

Agreement ("match"):

* reported ``optimal``: HiGHS finds an optimum and
  ``|reported - verified| <= 1e-6 + rtol * max(1, |verified|)``, with ``rtol`` = 1e-6 for LPs and
  2e-4 for models with integer variables (solvers stop at a relative MIP gap of ~1e-4);
* reported ``infeasible`` / ``unbounded`` / ``inf_or_unbd``: HiGHS reaches a compatible verdict.

Anything else is a "mismatch". Models that are not linear (quadratic, SOS, general constraints),
statuses without a claim (time limits, errors) and HiGHS failures give "skipped: <why>".
HiGHS's verdicts on small models are remembered (LRU, 1024 models): samples of one problem often
produce the same matrix. The harness process imports highspy (its banner is kept off stdout).
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..records import LinearModel, SolveRecord, SolveStatus

CACHE_MAX_ENTRIES = 20_000
"""Models with at most this many nonzeros + variables have their HiGHS verdict remembered."""
LP_RTOL = 1e-6
MIP_RTOL = 2e-4
ATOL = 1e-6
_CLAIMS = (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)
_COMPATIBLE = {
    SolveStatus.INFEASIBLE: (SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD),
    SolveStatus.UNBOUNDED: (SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD),
    SolveStatus.INF_OR_UNBD: (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD),
}


@dataclass(frozen=True)
class Resolve:
    """HiGHS's verdict on a matrix: normalised status, objective, and its raw status name."""

    status: SolveStatus
    objective: float | None
    raw_status: str


def _skip_reason(solve: SolveRecord) -> str | None:
    if solve.model is None:
        return "no matrix captured"
    if not solve.model.is_linear:
        return "model has quadratic, SOS or general constraints"
    if solve.status not in _CLAIMS:
        return f"solver status {solve.status.value}"
    return None


def _is_integral(model: LinearModel) -> bool:
    return any(kind in "IBSN" for kind in model.vtype)


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


def resolve_with_highs(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` with HiGHS (relative MIP gap 1e-6, ``time_limit_s`` seconds).

    The ``threads`` option is left alone on purpose: HiGHS sizes one scheduler per process at its
    first solve and then refuses (``kNotset``) any solve asking for another thread count, and the
    harness process may already have solved with HiGHS elsewhere (SciPy, the reference backend).
    """
    if model.num_vars == 0:
        # Nothing to solve (HiGHS reports an empty model without its objective constant).
        feasible = all(low <= 0.0 <= high for low, high in zip(model.row_lower, model.row_upper, strict=True))
        if feasible:
            return Resolve(SolveStatus.OPTIMAL, model.objective_constant, "empty model")
        return Resolve(SolveStatus.INFEASIBLE, None, "empty model")
    highs = _new_highs()
    highspy = importlib.import_module("highspy")
    for option, value in (
        ("output_flag", False),
        ("time_limit", float(time_limit_s)),
        ("mip_rel_gap", 1e-6),
    ):
        highs.setOptionValue(option, value)
    n, m = model.num_vars, model.num_rows
    lower = np.asarray(model.lb, dtype=np.float64)
    upper = np.asarray(model.ub, dtype=np.float64)
    binary = np.asarray([kind == "B" for kind in model.vtype], dtype=bool)
    lower = np.where(binary, np.maximum(lower, 0.0), lower)
    upper = np.where(binary, np.minimum(upper, 1.0), upper)
    highs.addCols(
        n,
        np.asarray(model.obj, dtype=np.float64),
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
    highs.changeObjectiveOffset(model.objective_constant)
    if model.sense == "max":
        highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    highs.run()
    raw = str(getattr(highs.getModelStatus(), "name", highs.getModelStatus()))
    status = _HIGHS_STATUS.get(raw, SolveStatus.ERROR)
    objective = highs.getInfo().objective_function_value if status is SolveStatus.OPTIMAL else None
    return Resolve(status, None if objective is None else float(objective), raw)


def objectives_agree(reported: float, verified: float, *, integral: bool) -> bool:
    """The tolerance rule of the module docstring."""
    rtol = MIP_RTOL if integral else LP_RTOL
    return abs(reported - verified) <= ATOL + rtol * max(1.0, abs(verified))


@functools.lru_cache(maxsize=1024)
def _remembered_resolve(model: LinearModel, time_limit_s: float) -> Resolve:
    return resolve_with_highs(model, time_limit_s=time_limit_s)


def _resolve(model: LinearModel, time_limit_s: float) -> Resolve:
    """HiGHS's verdict, remembered for small models: repeated samples of one problem often
    produce the very same matrix."""
    if len(model.a_val) + model.num_vars <= CACHE_MAX_ENTRIES:
        return _remembered_resolve(model, time_limit_s)
    return resolve_with_highs(model, time_limit_s=time_limit_s)


def verify_solve(solve: SolveRecord, *, time_limit_s: float = 10.0) -> SolveRecord:
    """``solve`` with ``verified_objective`` and ``verification`` set (see module docstring).

    A record whose ``verification`` is already set (e.g. "skipped: no matrix captured", filled in
    when the sandbox could not capture the matrix) is returned unchanged.
    """
    if solve.verification is not None:
        return solve
    reason = _skip_reason(solve)
    if reason is not None:
        return solve.model_copy(update={"verification": f"skipped: {reason}"})
    assert solve.model is not None
    try:
        result = _resolve(solve.model, time_limit_s)
    except Exception as error:
        return solve.model_copy(
            update={"verification": f"skipped: HiGHS failed ({type(error).__name__}: {error})"[:300]}
        )
    if result.status in (SolveStatus.TIME_LIMIT, SolveStatus.ERROR):
        return solve.model_copy(update={"verification": f"skipped: HiGHS {result.raw_status}"})
    if solve.status is SolveStatus.OPTIMAL:
        agrees = (
            result.status is SolveStatus.OPTIMAL
            and solve.objective is not None
            and result.objective is not None
            and math.isfinite(result.objective)
            and objectives_agree(solve.objective, result.objective, integral=_is_integral(solve.model))
        )
    else:
        agrees = result.status in _COMPATIBLE[solve.status]
    return solve.model_copy(
        update={"verified_objective": result.objective, "verification": "match" if agrees else "mismatch"}
    )
