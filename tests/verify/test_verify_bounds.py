"""Bounded parent work: a captured model cannot make the harness's re-solve stall or allocate
without bound (issue 28). Real solvers throughout; the bounds below catch a stall or a dense
``num_vars``-squared allocation, they are not speed targets."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from trex_eval import verify
from trex_eval.records import LinearModel, QuadraticConstraint, SolveRecord, SolveStatus
from trex_eval.verify import Deadline, Resolve, verify_solve
from trex_eval.verify.highs import hessian_lower_csc
from trex_eval.verify.views import Terms, convex_objective, model_view

INF = math.inf
MIB = 1 << 20
STALL_S = 5.0
"""A re-solve that takes longer than this stalled (the attack took +16 s before the fix)."""
PEAK_BYTES = 100 * MIB
"""A re-solve that allocates more than this built something dense (the attack built 1.5 GiB)."""


def columns(n: int, **fields: object) -> LinearModel:
    """min sum(x) over n columns in [0, 1], no rows; ``fields`` override. Built without
    validation (the fields are well-formed), so that a test of a cap is not a test of pydantic."""
    base: dict[str, object] = {
        "sense": "min",
        "var_names": ("",) * n,
        "obj": (1.0,) * n,
        "lb": (0.0,) * n,
        "ub": (1.0,) * n,
        "vtype": ("C",) * n,
        "row_names": (),
        "row_lower": (),
        "row_upper": (),
        "a_row": (),
        "a_col": (),
        "a_val": (),
    }
    base.update(fields)
    return LinearModel.model_construct(**base)


def claim(model: LinearModel, objective: float | None, library: str = "test") -> SolveRecord:
    return SolveRecord(
        library=library, status=SolveStatus.OPTIMAL, raw_status="", objective=objective, model=model
    )


@contextmanager
def bounded(peak_bytes: int = PEAK_BYTES, wall_s: float = STALL_S) -> Iterator[None]:
    """The block allocates at most ``peak_bytes`` (Python and NumPy, by tracemalloc) and ends
    within ``wall_s`` seconds."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    assert peak < peak_bytes, f"peak {peak / MIB:.0f} MiB"
    assert elapsed < wall_s, f"{elapsed:.1f} s"


# min x0^2 - x0 + sum(x_j, j > 0) on [0, 1]^n with sum(x) >= 0: x0 = 1/2, the rest 0: -1/4.
def one_hessian_entry(n: int) -> LinearModel:
    return columns(
        n,
        obj=(-1.0,) + (1.0,) * (n - 1),
        q_obj=((0, 0, 1.0),),
        row_names=("r",),
        row_lower=(0.0,),
        row_upper=(INF,),
        a_row=(0,) * n,
        a_col=tuple(range(n)),
        a_val=(1.0,) * n,
    )


_ATTACK = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from test_verify_bounds import claim, one_hessian_entry
from trex_eval import verify
attack = one_hessian_entry(14_000)
verify.gurobi_available()  # the licence probe and the solvers' imports are the harness's, not the re-solve's
verify.verify_solve(claim(one_hessian_entry(2), -0.25), prefer_gurobi=False)
verify.verify_solve(claim(one_hessian_entry(5001), -0.25), prefer_gurobi=False)
for library in ("test", "gurobipy"):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    checked = verify.verify_solve(claim(attack, -0.25, library), budget_s=60.0)
    elapsed = time.monotonic() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) << 10
    print(json.dumps([library, checked.verification, checked.verified_objective, elapsed, grown]))
"""


def test_the_14000_column_qp_with_one_hessian_entry_is_resolved_without_a_dense_hessian() -> None:
    """The attack of issue 28, in a fresh interpreter so that its peak resident set is its own
    (the old re-solve took +16 s and +1.5 GiB on it, in a dense 14,000 x 14,000 Hessian)."""
    done = subprocess.run(
        [sys.executable, "-c", _ATTACK, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    for line in done.stdout.splitlines():
        library, verification, objective, elapsed, grown = json.loads(line)
        assert verification == "match", (library, verification)
        assert objective == pytest.approx(-0.25, abs=1e-6)
        assert elapsed < STALL_S, (library, elapsed)
        assert grown < PEAK_BYTES, (library, grown / MIB)


def test_a_qp_reaches_highs_with_a_sparse_hessian() -> None:
    # The largest QP HiGHS is given: a dense Hessian of it would be 200 MB.
    qp = one_hessian_entry(verify.HIGHS_QP_MAX_COLUMNS)

    with bounded():
        checked = verify_solve(claim(qp, -0.25), budget_s=60.0, prefer_gurobi=False)

    assert (checked.verification, checked.verified_by) == ("match", "highs")


def test_the_hessian_is_built_from_its_terms_with_duplicates_summed() -> None:
    # 1 x0 x1 + 2 x1 x0 + 3 x1^2 + 1 x1^2 over 3 columns: H = [[0, 3, 0], [3, 8, 0], [0, 0, 0]].
    terms = Terms(np.array([0, 1, 1, 1]), np.array([1, 0, 1, 1]), np.array([1.0, 2.0, 3.0, 1.0]))

    starts, rows, values = hessian_lower_csc(terms, 3)

    assert (starts.tolist(), rows.tolist(), values.tolist()) == ([0, 1, 2, 2], [1, 1], [3.0, 8.0])
    cancelled = Terms(np.array([0, 1]), np.array([1, 0]), np.array([1.0, -1.0]))
    assert hessian_lower_csc(cancelled, 2)[2].size == 0


def _objective(n: int, terms: list[tuple[int, int, float]], sense: str = "min") -> LinearModel:
    return columns(n, sense=sense, q_obj=tuple(terms))


def _dense_convex(n: int, terms: list[tuple[int, int, float]], sense: str) -> bool:
    matrix = np.zeros((n, n))
    for i, j, q in terms:
        matrix[i, j] += q / 2.0
        matrix[j, i] += q / 2.0
    eigenvalues = np.linalg.eigvalsh(-matrix if sense == "max" else matrix)
    return bool(eigenvalues.min() >= -1e-9 * max(1.0, float(np.abs(eigenvalues).max())))


@pytest.mark.parametrize("seed", range(12))
def test_the_block_convexity_check_agrees_with_dense_eigenvalues(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    terms = [(int(i), int(i), float(rng.uniform(0.1, 2.0))) for i in rng.choice(n, 12, replace=False)]
    for _ in range(int(rng.integers(0, 10))):
        i, j = (int(v) for v in rng.choice(n, 2, replace=False))
        terms.append((i, j, float(rng.normal())))
    terms += [(i, j, 0.5 * q) for i, j, q in terms[: int(rng.integers(0, 4))]]  # duplicates
    sense = "max" if seed % 3 == 0 else "min"
    if sense == "max":
        terms = [(i, j, -q) for i, j, q in terms]
    model = _objective(n, terms, sense)

    assert convex_objective(model_view(model), Deadline(10.0)) == _dense_convex(n, terms, sense)


def test_the_convexity_check_looks_at_blocks_of_used_columns_only() -> None:
    n = 200_000 // 2
    # 3,000 separable squares and one convex 2x2 block at the far ends: no block is larger than 2.
    separable = [(j, j, 1.0) for j in range(0, 6000, 2)] + [(0, n - 1, 1.0), (n - 1, n - 1, 1.0)]
    # One block of limit + 1 columns, convex (diagonally dominant): refused for its size alone.
    chain = [(j, j + 1, 1.0) for j in range(verify.DENSE_CONVEXITY_LIMIT)]
    chain += [(j, j, 2.0) for j in range(verify.DENSE_CONVEXITY_LIMIT + 1)]

    with bounded():
        assert convex_objective(model_view(_objective(n, separable)), Deadline(10.0))
        assert not convex_objective(model_view(_objective(n, [*separable, (2, 2, -2.0)])), Deadline(10.0))
        assert not convex_objective(model_view(_objective(n, chain)), Deadline(10.0))


def _quadratic_rows(count: int, **fields: object) -> dict[str, object]:
    row = QuadraticConstraint.model_validate({"lower": -INF, "upper": 1.0, **fields})
    return {"q_constraints": (row,) * count, "n_quadratic_constraints": count}


@pytest.mark.parametrize(
    ("model", "cap"),
    [
        (lambda: columns(verify.MAX_COLUMNS + 1), "columns"),
        (
            lambda: columns(
                1,
                row_names=("",) * (verify.MAX_ROWS + 1),
                row_lower=(0.0,) * (verify.MAX_ROWS + 1),
                row_upper=(1.0,) * (verify.MAX_ROWS + 1),
            ),
            "rows",
        ),
        (
            lambda: columns(
                1,
                row_names=("",),
                row_lower=(0.0,),
                row_upper=(1.0,),
                a_row=(0,) * (verify.MAX_NONZEROS + 1),
                a_col=(0,) * (verify.MAX_NONZEROS + 1),
                a_val=(1.0,) * (verify.MAX_NONZEROS + 1),
            ),
            "nonzeros",
        ),
        (lambda: columns(1, q_obj=((0, 0, 1.0),) * (verify.MAX_QUADRATIC_TERMS + 1)), "quadratic terms"),
        (lambda: columns(1, **_quadratic_rows(verify.MAX_QUADRATIC_ROWS + 1)), "quadratic rows"),
        # The rows' parts count with the matrix and the objective.
        (
            lambda: columns(1, **_quadratic_rows(2, linear=((0, 1.0),) * (verify.MAX_NONZEROS // 2 + 1))),
            "nonzeros",
        ),
        (
            lambda: columns(
                1,
                q_obj=((0, 0, 1.0),) * (verify.MAX_QUADRATIC_TERMS // 2),
                **_quadratic_rows(1, quadratic=((0, 0, 1.0),) * (verify.MAX_QUADRATIC_TERMS // 2 + 1)),
            ),
            "quadratic terms",
        ),
    ],
    ids=["columns", "rows", "nonzeros", "quadratic-terms", "quadratic-rows", "row-linear", "row-quadratic"],
)
def test_a_model_over_a_cap_is_skipped_with_the_cap_named(model: Callable[[], LinearModel], cap: str) -> None:
    over = model()

    with bounded(wall_s=1.0):
        checked = verify_solve(claim(over, 1.0))

    names = {"columns": "MAX_COLUMNS", "rows": "MAX_ROWS", "nonzeros": "MAX_NONZEROS"}
    names |= {"quadratic terms": "MAX_QUADRATIC_TERMS", "quadratic rows": "MAX_QUADRATIC_ROWS"}
    assert checked.verification is not None
    assert checked.verification.startswith(f"skipped: model over the re-solve cap on {cap}: ")
    assert names[cap] in checked.verification and checked.verified_by is None


def test_a_model_at_the_caps_is_not_refused_for_its_size() -> None:
    at_caps = columns(verify.MAX_COLUMNS)

    assert verify.size_problem(at_caps) is None
    checked = verify_solve(claim(at_caps, 0.0), prefer_gurobi=False)
    assert (checked.verification, checked.verified_by) == ("match", "highs")


def test_a_slow_build_stops_at_the_time_limit_instead_of_finishing() -> None:
    # A MIQP over 100,000 columns and 100,000 rows: SCIP's build alone takes seconds.
    n = verify.MAX_COLUMNS
    large = one_hessian_entry(n).model_copy(
        update={
            "vtype": ("I",) * n,
            "row_names": ("",) * n,
            "row_lower": (-INF,) * n,
            "row_upper": (1.0,) * n,
            "a_row": tuple(range(n)),
            "a_col": tuple(range(n)),
            "a_val": (1.0,) * n,
        }
    )

    with bounded(peak_bytes=200 * MIB):
        checked = verify_solve(claim(large, -0.25), budget_s=0.5, prefer_gurobi=False)

    assert checked.verification is not None and checked.verified_by == "scip"
    assert checked.verification.startswith("skipped: building the scip model (")  # some step of it
    assert "ran past the re-solve" in checked.verification
    assert "0.5 CPU s time limit" in checked.verification


def test_a_build_that_leaves_the_solver_no_time_is_skipped() -> None:
    checked = verify_solve(claim(columns(3), 0.0), budget_s=1e-9, prefer_gurobi=False)

    assert checked.verification is not None
    assert checked.verification.startswith("skipped: ")
    assert "ran past the re-solve's 1e-09 CPU s time limit" in checked.verification


def test_a_wait_for_another_threads_solve_takes_its_verdict() -> None:
    """A wait is no work of the waiting sample's: it is not charged to its budget (a budget of
    CPU seconds could not tell a wait from a solve anyway) and ends when the other solve does."""
    memo = verify._Memo(4)
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow() -> Resolve:
        calls.append("slow")
        started.set()
        release.wait(10.0)
        return Resolve(SolveStatus.OPTIMAL, 1.0, "test")

    first = threading.Thread(target=lambda: memo.get((b"k", False), slow))
    first.start()
    try:
        assert started.wait(5.0)
        waited: list[Resolve] = []
        second = threading.Thread(target=lambda: waited.append(memo.get((b"k", False), slow)))
        second.start()
        second.join(0.2)
        assert second.is_alive()  # still waiting for the first solve
    finally:
        release.set()
        first.join(5.0)
        second.join(5.0)
    assert [verdict.objective for verdict in waited] == [1.0] and calls == ["slow"]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"a_row": (0,), "a_col": (-1,), "a_val": (1.0,), "row_names": ("r",)}, "matrix index out of range"),
        ({"q_obj": ((0, 5, 1.0),)}, "matrix index out of range"),
        ({"obj": (1.0,)}, "inconsistent matrix dimensions"),
    ],
    ids=["negative-column", "quadratic-column", "lengths"],
)
def test_an_inconsistent_model_is_skipped_not_read_around(fields: dict[str, object], reason: str) -> None:
    base = columns(2, row_lower=(-INF,), row_upper=(1.0,)) if "row_names" in fields else columns(2)
    model = base.model_copy(update=fields)

    assert verify_solve(claim(model, 0.0), prefer_gurobi=False).verification == f"skipped: {reason}"


def test_sos_sets_without_a_count_are_not_ignored() -> None:
    from trex_eval.records import SOSConstraint

    model = columns(2, sos=(SOSConstraint(type=1, members=((0, 1.0), (1, 2.0))),))

    assert verify_solve(claim(model, 0.0)).verification == "skipped: model has SOS or general constraints"


def test_scip_is_not_given_more_quadratic_terms_than_it_can_presolve_in_time() -> None:
    # An integer model (so not HiGHS) with one term over SCIP's limit.
    terms = tuple((j % 50, j // 50, 1.0) for j in range(verify.SCIP_MAX_QUADRATIC_TERMS + 1))
    model = columns(1000, vtype=("I",) * 1000, q_obj=terms)

    checked = verify_solve(claim(model, 0.0), prefer_gurobi=False)

    assert checked.verification is not None and "SCIP_MAX_QUADRATIC_TERMS" in checked.verification


def test_a_size_limited_gurobipy_refuses_a_large_model_before_building_it() -> None:
    from trex_eval.verify import gurobi

    if not (gurobi.gurobi_available() and gurobi._gurobi_limited):
        pytest.skip("gurobipy is not licensed here, or its licence is not size-limited")
    large = columns(verify.LIMITED_VARIABLES + 1)

    with pytest.raises(verify.Unsolvable, match="size-limited licence"):
        verify.resolve_with_gurobi(large)
    checked = verify_solve(claim(large, 0.0, library="gurobipy"))
    assert (checked.verification, checked.verified_by) == ("match", "highs")
