"""The captured model as the re-solvers read it: size caps checked before anything is allocated,
then one consistent view in NumPy arrays (:class:`ModelView`), its digest (:func:`view_key`)
and the convexity check of its quadratic objective.

The model is the program's word and may be built to exhaust the harness, so every step here is
linear in a size that a cap bounds, and nothing is ever sized by ``num_vars`` squared: a
quadratic objective is kept as its ``(i, j, q)`` terms and only the columns it uses are ever
put in a dense matrix, per connected block, up to :data:`DENSE_CONVEXITY_LIMIT` columns.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..linear_model import MAX_COLUMNS, MAX_NONZEROS, MAX_QUADRATIC_ROWS, MAX_QUADRATIC_TERMS, MAX_ROWS
from ..records import LinearModel, SolveStatus
from .base import BUILD_STEP, Deadline, Resolve, Unsolvable

DENSE_CONVEXITY_LIMIT = 2000
"""Columns of the largest connected block of a quadratic objective that is checked for convexity
(dense eigenvalues of that block: 32 MiB and ~0.4 s at the limit). An objective with a larger
block counts as not shown convex and goes to SCIP, which solves non-convex models too."""
CONVEXITY_TOL = 1e-9
"""Relative eigenvalue slack under which a quadratic objective still counts as convex."""
_CONVEXITY_BATCH_BYTES = 32 << 20
"""Dense blocks of one size are checked in batches of at most this many bytes."""

_CAPS = (
    ("columns", "MAX_COLUMNS", MAX_COLUMNS),
    ("rows", "MAX_ROWS", MAX_ROWS),
    ("quadratic rows", "MAX_QUADRATIC_ROWS", MAX_QUADRATIC_ROWS),
    ("nonzeros", "MAX_NONZEROS", MAX_NONZEROS),
    ("quadratic terms", "MAX_QUADRATIC_TERMS", MAX_QUADRATIC_TERMS),
)


def size_problem(model: LinearModel) -> str | None:
    """Why ``model`` is not re-solved for its size, or None: its field lengths disagree, or it is
    over one of the caps (the reason names the cap and the size). O(quadratic rows), which
    :data:`MAX_QUADRATIC_ROWS` bounds before the rows are walked."""
    n, m = model.num_vars, model.num_rows
    entries = {len(model.a_row), len(model.a_col), len(model.a_val)}
    columns = {len(model.obj), len(model.lb), len(model.ub), len(model.vtype)}
    if columns != {n} or {len(model.row_lower), len(model.row_upper)} != {m} or len(entries) != 1:
        return "inconsistent matrix dimensions"
    sizes = {"columns": n, "rows": m, "quadratic rows": len(model.q_constraints)}
    for what, name, cap in _CAPS:
        if what == "nonzeros":
            sizes[what] = len(model.a_val) + sum(len(row.linear) for row in model.q_constraints)
        elif what == "quadratic terms":
            sizes[what] = len(model.q_obj) + sum(len(row.quadratic) for row in model.q_constraints)
        if sizes[what] > cap:
            return f"model over the re-solve cap on {what}: {sizes[what]:,} > {name} = {cap:,}"
    return None


@dataclass(frozen=True)
class Terms:
    """Quadratic terms ``q[k] * x[i[k]] * x[j[k]]`` (int64, int64, float64), zeros dropped."""

    i: np.ndarray
    j: np.ndarray
    q: np.ndarray

    def __len__(self) -> int:
        return int(self.q.size)


@dataclass(frozen=True)
class QuadraticRowView:
    """``lower <= sum(linear) + sum(quadratic) <= upper``; ``columns``/``values`` the linear part."""

    lower: float
    upper: float
    columns: np.ndarray
    values: np.ndarray
    quadratic: Terms


@dataclass(frozen=True)
class ModelView:
    """A :class:`~trex_eval.records.LinearModel` checked and in arrays: an infinite bound is no
    bound on its side (:func:`_sides`), binaries clipped to [0, 1] (a binary declared with
    ub = inf is still 0/1), the matrix in CSR with duplicates summed, zero quadratic terms
    dropped (a program adding ``0 * x * x`` to a linear model must not push it to a slower
    solver, or out of reach of verification)."""

    sense: str
    constant: float
    n: int
    m: int
    vtype: str
    obj: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    starts: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    hessian: Terms
    q_rows: tuple[QuadraticRowView, ...]

    @property
    def integral(self) -> bool:
        return any(kind in self.vtype for kind in "IBSN")

    @property
    def quadratic(self) -> bool:
        return bool(len(self.hessian)) or bool(self.q_rows)


def _indices(values: object, bound: int) -> np.ndarray:
    """``values`` as int64, each in ``[0, bound)``; through float64 so that an index too large for
    int64 is reported, not wrapped (and a negative one is not read from the end).

    Raises:
        Unsolvable: an index is out of range.
    """
    try:
        found = np.asarray(values, dtype=np.float64)
    except (OverflowError, ValueError, TypeError):
        raise Unsolvable("matrix index out of range") from None
    if found.size and not (found.min() >= 0 and found.max() < bound):
        raise Unsolvable("matrix index out of range")
    return found.astype(np.int64)


def _sides(lower: tuple[float, ...], upper: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Bounds as float64 with an infinite side read as no bound whatever its sign (a lower bound
    of +inf, an upper one of -inf): as :func:`~.base.row_sides` reads them for gurobipy and SCIP,
    where HiGHS would refuse the row or column."""
    low, high = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    return np.where(low == np.inf, -np.inf, low), np.where(high == -np.inf, np.inf, high)


def _terms(terms: tuple[tuple[int, int, float], ...], n: int) -> Terms:
    table = np.asarray(terms, dtype=np.float64).reshape(-1, 3) if terms else np.zeros((0, 3))
    keep = table[:, 2] != 0.0
    table = table[keep]
    i, j = _indices(table[:, 0], n), _indices(table[:, 1], n)
    return Terms(i, j, np.ascontiguousarray(table[:, 2]))


def model_view(model: LinearModel, deadline: Deadline | None = None) -> ModelView:
    """The view of ``model`` the re-solvers build from. O(size of the model), in NumPy but for
    the quadratic rows (a Python loop over at most :data:`MAX_QUADRATIC_ROWS`).

    Raises:
        Unsolvable: the model is over a size cap, inconsistent, or indexes out of range.
        OutOfTime: ``deadline`` passed while the quadratic rows were read.
    """
    problem = size_problem(model)
    if problem is not None:
        raise Unsolvable(problem)
    n, m = model.num_vars, model.num_rows
    rows, cols = _indices(model.a_row, m), _indices(model.a_col, n)
    width = max(n, 1)
    unique, inverse = np.unique(rows * width + cols, return_inverse=True)
    summed = np.bincount(
        inverse.ravel(), weights=np.asarray(model.a_val, dtype=np.float64), minlength=unique.size
    )
    starts = np.searchsorted(unique // width, np.arange(m + 1)).astype(np.int32)
    vtype = "".join(model.vtype)
    binary = np.frombuffer(vtype.encode("ascii"), dtype=np.uint8) == ord("B")
    lower, upper = _sides(model.lb, model.ub)
    row_lower, row_upper = _sides(model.row_lower, model.row_upper)
    q_rows = []
    for index, row in enumerate(model.q_constraints):
        if deadline is not None and index % 64 == 0:
            deadline.check("reading the quadratic rows")
        q_rows.append(
            QuadraticRowView(
                float(row.lower),
                float(row.upper),
                _indices([j for j, _ in row.linear], n),
                np.fromiter((v for _, v in row.linear), dtype=np.float64, count=len(row.linear)),
                _terms(row.quadratic, n),
            )
        )
    return ModelView(
        sense=model.sense,
        constant=float(model.objective_constant),
        n=n,
        m=m,
        vtype=vtype,
        obj=np.asarray(model.obj, dtype=np.float64),
        lower=np.where(binary, np.maximum(lower, 0.0), lower),
        upper=np.where(binary, np.minimum(upper, 1.0), upper),
        row_lower=row_lower,
        row_upper=row_upper,
        starts=starts,
        columns=(unique % width).astype(np.int32),
        values=summed,
        hessian=_terms(model.q_obj, n),
        q_rows=tuple(q_rows),
    )


def empty_verdict(view: ModelView, solver: str) -> Resolve:
    """The verdict on a view without columns: its constant where every row admits 0, else
    infeasible (HiGHS reports an empty model without its objective constant). O(rows)."""
    feasible = bool(np.all(view.row_lower <= 0.0) and np.all(view.row_upper >= 0.0))
    feasible = feasible and all(row.lower <= 0.0 <= row.upper for row in view.q_rows)
    if feasible:
        return Resolve(SolveStatus.OPTIMAL, view.constant, "empty model", solver)
    return Resolve(SolveStatus.INFEASIBLE, None, "empty model", solver)


RAW_KEY_MAX_ENTRIES = 4_000
"""Models up to this many variables + nonzeros + quadratic terms are also remembered by their
captured text (:func:`raw_key`), which spares a repeated model its view (~0.3 ms for a tiny one)."""


def raw_key(model: LinearModel) -> bytes | None:
    """A digest of the exact captured values a view is built from (``repr`` of a float is exact),
    names left out; None for a model over :data:`RAW_KEY_MAX_ENTRIES` (its view is cheaper to key
    than its text). Two models with one key build one view. O(size), no NumPy."""
    quadratic = sum(len(row.linear) + len(row.quadratic) for row in model.q_constraints)
    if len(model.obj) + len(model.a_val) + len(model.q_obj) + quadratic > RAW_KEY_MAX_ENTRIES:
        return None
    rows = tuple((row.lower, row.upper, row.linear, row.quadratic) for row in model.q_constraints)
    text = repr(
        (
            model.sense,
            model.objective_constant,
            model.obj,
            model.lb,
            model.ub,
            model.vtype,
            model.row_lower,
            model.row_upper,
            model.a_row,
            model.a_col,
            model.a_val,
            model.q_obj,
            rows,
        )
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def view_key(view: ModelView) -> bytes:
    """A digest of everything a re-solve reads (sense, constant, sizes, types, bounds, the summed
    matrix, the quadratic terms), without names: two views with one key are one problem. O(size
    of the view), hashed from the arrays' bytes (no Python walk over the terms)."""
    digest = hashlib.sha256()
    digest.update(
        f"{view.sense}|{view.constant!r}|{view.n}|{view.m}|{len(view.q_rows)}|{view.vtype}|".encode()
    )
    arrays = [view.obj, view.lower, view.upper, view.row_lower, view.row_upper, view.starts, view.columns]
    arrays += [view.values, view.hessian.i, view.hessian.j, view.hessian.q]
    for row in view.q_rows:
        arrays += [
            np.array([row.lower, row.upper]),
            row.columns,
            row.values,
            row.quadratic.i,
            row.quadratic.j,
        ]
        arrays.append(row.quadratic.q)
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.size}|".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


# --------------------------------------------------------------------------- convexity


def _blocks(first: list[int], second: list[int], size: int, deadline: Deadline) -> np.ndarray:
    """The connected block of each of ``size`` columns joined by the pairs ``first[k]``,
    ``second[k]`` (union-find with path halving: O(pairs), the deadline checked every
    :data:`~.base.BUILD_STEP` pairs); a block is named by one of its columns."""
    parent = list(range(size))
    for k, (a, b) in enumerate(zip(first, second, strict=True)):
        if k % BUILD_STEP == 0:
            deadline.check("the convexity check")
        while parent[a] != a:
            parent[a] = a = parent[parent[a]]
        while parent[b] != b:
            parent[b] = b = parent[parent[b]]
        if a != b:
            parent[max(a, b)] = min(a, b)
    roots = np.asarray(parent, dtype=np.int64)
    while True:  # flatten: every column names its root
        jumped = roots[roots]
        if np.array_equal(jumped, roots):
            return roots
        roots = jumped


def convex_objective(view: ModelView, deadline: Deadline) -> bool:
    """Whether the quadratic objective is convex in the model's sense (PSD for min, NSD for max):
    every eigenvalue of its symmetric matrix ``S`` (``x'Sx = sum(q x_i x_j)``) at least
    ``-CONVEXITY_TOL * max(1, max |eigenvalue|)``.

    Only the columns the terms use are looked at, block by connected block (S is block diagonal
    over them): a one-column block's eigenvalue is its diagonal; larger blocks are batched by
    size into dense eigenvalue problems of at most :data:`_CONVEXITY_BATCH_BYTES`. A block over
    :data:`DENSE_CONVEXITY_LIMIT` columns makes the answer False (not shown convex) without
    being built.

    Raises:
        OutOfTime: ``deadline`` passed during the check.
    """
    terms = view.hessian
    if not len(terms):
        return True
    used, local = np.unique(np.concatenate([terms.i, terms.j]), return_inverse=True)
    a, b = local[: len(terms)], local[len(terms) :]
    sign = -1.0 if view.sense == "max" else 1.0
    q = sign * terms.q
    off = a != b
    blocks = _blocks(a[off].tolist(), b[off].tolist(), used.size, deadline)
    _, block, sizes = np.unique(blocks, return_inverse=True, return_counts=True)
    if sizes.max() > DENSE_CONVEXITY_LIMIT:
        return False
    # Each column's place in its block: columns sorted by block, minus where the block starts.
    by_block = np.argsort(block, kind="stable")
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    place = np.empty(used.size, dtype=np.int64)
    place[by_block] = np.arange(used.size) - first[block[by_block]]
    diagonal = np.bincount(a[~off], weights=q[~off], minlength=used.size)
    eigenvalues = [diagonal[sizes[block] == 1]]
    # Blocks ranked by size, and the terms by their block's rank: a batch of blocks of one size
    # is then a run of ranks, and its terms one slice.
    order = np.argsort(sizes, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    term_rank = rank[block[a]]
    by_rank = np.argsort(term_rank, kind="stable")
    ranked_sizes, sorted_ranks = sizes[order], term_rank[by_rank]
    at = int(np.searchsorted(ranked_sizes, 2))
    while at < order.size:
        deadline.check("the convexity check")
        size = int(ranked_sizes[at])
        same = int(np.searchsorted(ranked_sizes, size, side="right"))
        stop = min(same, at + max(1, _CONVEXITY_BATCH_BYTES // (8 * size * size)))
        low, high = np.searchsorted(sorted_ranks, [at, stop])
        mine = by_rank[low:high]
        dense = np.zeros((stop - at, size, size))
        slot, pa, pb, half = term_rank[mine] - at, place[a[mine]], place[b[mine]], q[mine] / 2.0
        np.add.at(dense, (slot, pa, pb), half)
        np.add.at(dense, (slot, pb, pa), half)
        eigenvalues.append(np.linalg.eigvalsh(dense).ravel())
        at = stop
    found = np.concatenate(eigenvalues)
    scale = max(1.0, float(np.max(np.abs(found))))
    return bool(found.min() >= -CONVEXITY_TOL * scale)
