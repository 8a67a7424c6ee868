"""The HiGHS re-solve: LPs, MILPs and convex continuous QPs, built from NumPy arrays (no Python
loop over the model's entries)."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Any

import numpy as np

from ..records import LinearModel, SolveStatus
from .base import MIP_GAP, Deadline, Resolve, Unsolvable
from .views import ModelView, Terms, empty_verdict, model_view

HIGHS_QP_MAX_COLUMNS = 5000
"""Columns of the largest QP given to HiGHS; a convex QP over more goes to SCIP. HiGHS 1.16's QP
solver spends time quadratic in the column count before its first iteration, where its time
limit is not checked (measured with one Hessian entry and no iterations: 7,000 columns 0.4 s,
14,000 columns 1.3 s, 40,000 columns 10 s under a 2 s limit); SCIP solved the 14,000-column one
in 0.4 s. At this limit HiGHS's part is ~0.2 s; honest QPs here have hundreds of columns."""

_HIGHS_STATUS = {
    "kOptimal": SolveStatus.OPTIMAL,
    "kInfeasible": SolveStatus.INFEASIBLE,
    "kUnbounded": SolveStatus.UNBOUNDED,
    "kUnboundedOrInfeasible": SolveStatus.INF_OR_UNBD,
    "kTimeLimit": SolveStatus.TIME_LIMIT,
    "kModelEmpty": SolveStatus.OPTIMAL,
}
_VTYPE = np.zeros(128, dtype=np.uint8)
"""HiGHS's integrality code by ASCII type letter: C 0, I and B 1, S 2 (semi-continuous), N 3."""
_VTYPE[[ord("I"), ord("B"), ord("S"), ord("N")]] = (1, 1, 2, 3)

THREADS: int | None = None
"""Threads every HiGHS solve of this process is given (None: HiGHS's default). A verifier process
sets 1 before its first solve (HiGHS sizes one scheduler per process at its first solve and then
refuses a solve asking for another count, so only a process that solves nothing else may set it)."""

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


def hessian_lower_csc(terms: Terms, n: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lower triangle of ``scale * H``, column by column (CSC: starts, rows, values; int32,
    int32, float64), for HiGHS's ``c'x + x'Hx / 2`` form of ``sum(q x_i x_j)``: a diagonal term
    gives ``H_ii = 2q``, an off-diagonal one ``H_ij = H_ji = q``. Duplicates and mirrored pairs
    are summed; entries that cancel are dropped. O(terms log terms + n), never n x n."""
    column = np.minimum(terms.i, terms.j)
    row = np.maximum(terms.i, terms.j)
    value = scale * np.where(terms.i == terms.j, 2.0 * terms.q, terms.q)
    width = max(n, 1)
    unique, inverse = np.unique(column * width + row, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=value, minlength=unique.size)
    kept = summed != 0.0
    unique, summed = unique[kept], summed[kept]
    starts = np.searchsorted(unique // width, np.arange(n + 1)).astype(np.int32)
    return starts, (unique % width).astype(np.int32), summed


def _ok(status: Any, what: str) -> None:
    """Refuse the model where HiGHS refused a part of it (it would otherwise solve without it)."""
    if getattr(status, "name", str(status)) not in ("kOk", "kWarning"):
        raise Unsolvable(f"HiGHS refused the model's {what} ({getattr(status, 'name', status)})")


def resolve_with_highs(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` (linear, or with a convex quadratic objective over continuous variables)
    with HiGHS: relative MIP gap :data:`~.base.MIP_GAP`, ``time_limit_s`` seconds for building
    and solving together (:func:`solve_highs`).

    Raises:
        Unsolvable: quadratic constraints, a quadratic objective with integer variables or over
            more than :data:`HIGHS_QP_MAX_COLUMNS` columns, a model over a size cap
            (:mod:`.views`), or the time limit spent before the solve.
    """
    deadline = Deadline(time_limit_s)
    return solve_highs(model_view(model, deadline), deadline)


def solve_highs(view: ModelView, deadline: Deadline) -> Resolve:
    """:func:`resolve_with_highs` on a view, the solver given what ``deadline`` has left.

    The ``threads`` option is :data:`THREADS` (left alone by default: HiGHS sizes one scheduler per
    process at its first solve and then refuses (``kNotset``) any solve asking for another thread
    count, and a library caller's process may have solved with HiGHS elsewhere).
    """
    quadratic = bool(len(view.hessian))
    if view.q_rows or (quadratic and view.integral):
        raise Unsolvable("HiGHS solves neither quadratic constraints nor MIQPs")
    if quadratic and view.n > HIGHS_QP_MAX_COLUMNS:
        raise Unsolvable(f"QP over {view.n:,} columns, more than HiGHS takes ({HIGHS_QP_MAX_COLUMNS:,})")
    if view.n == 0:
        return empty_verdict(view, "highs")
    highs = _new_highs()
    highspy = importlib.import_module("highspy")
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("mip_rel_gap", MIP_GAP)
    if THREADS is not None:
        highs.setOptionValue("threads", THREADS)
    n = view.n
    # A maximised QP is passed as the minimisation of its negation (HiGHS's QP solver minimises).
    flip = -1.0 if quadratic and view.sense == "max" else 1.0
    no_entries = np.zeros(n + 1, dtype=np.int32)
    _ok(
        highs.addCols(n, flip * view.obj, view.lower, view.upper, 0, no_entries, no_entries[:0], np.zeros(0)),
        "columns",
    )
    _ok(
        highs.addRows(
            view.m,
            view.row_lower,
            view.row_upper,
            int(view.values.size),
            view.starts,
            view.columns,
            view.values,
        ),
        "rows",
    )
    if view.integral:
        kinds = _VTYPE[np.frombuffer(view.vtype.encode("ascii"), dtype=np.uint8)]
        _ok(highs.changeColsIntegrality(n, np.arange(n, dtype=np.int32), kinds), "integrality")
    highs.changeObjectiveOffset(flip * view.constant)
    if quadratic:
        starts, rows, values = hessian_lower_csc(view.hessian, n, flip)
        if values.size:
            _ok(
                highs.passHessian(
                    n, int(values.size), highspy.HessianFormat.kTriangular, starts, rows, values
                ),
                "Hessian",
            )
    elif view.sense == "max":
        highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    highs.setOptionValue("time_limit", deadline.solver_limit("highs"))
    highs.run()
    raw = str(getattr(highs.getModelStatus(), "name", highs.getModelStatus()))
    status = _HIGHS_STATUS.get(raw, SolveStatus.ERROR)
    objective = highs.getInfo().objective_function_value if status is SolveStatus.OPTIMAL else None
    return Resolve(status, None if objective is None else flip * float(objective), raw, "highs")
