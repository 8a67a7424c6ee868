"""Which solver re-solves a claim, under what time limit, what its verdict means for the claim,
and the memo of verdicts (see the package docstring for the contract)."""

from __future__ import annotations

import functools
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..errors import TrexError
from ..fairness import DEADLINE, DeadlinePassed
from ..linear_model import CERTIFICATE
from ..records import Execution, LinearModel, SolveRecord, SolveStatus
from .base import OutOfTime, Resolve, ThreadCpuDeadline, Unsolvable
from .certificate import Certified, certify
from .lanes import verifier_lanes
from .store import through_store
from .views import ModelView, model_view, raw_key, size_problem, view_key

CACHE_MAX_ENTRIES = 20_000
"""Models with at most this many variables + nonzeros + quadratic terms have their verdict
remembered (a bigger one is rarely asked twice, and its key would cost a pass over it)."""
CACHE_SIZE = 1024
LP_RTOL = 1e-6
MIP_RTOL = 2e-4
ATOL = 1e-6
VERIFY_MIN_S = 10.0
"""CPU seconds every re-solve may take at least (reading the model, building it, solving it): the
slowest honest re-solve of the shipped benchmarks, BENCH4OPT_44/45's MILP under gurobipy, takes
~1.5 CPU s on a quiet machine and ~2.3 with 8 busy processes a core, well inside it."""
VERIFY_MAX_S = 120.0
"""CPU seconds a re-solve may take at most, however long the program ran."""
VERIFY_CPU_FACTOR = 2.0
"""A re-solve may take this many times the program's own CPU seconds (between the two bounds): a
model the program's solver needed a minute for must not be unverified for want of ten seconds."""
_CLAIMS = (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)
_COMPATIBLE = {
    SolveStatus.INFEASIBLE: (SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD),
    SolveStatus.UNBOUNDED: (SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD),
    SolveStatus.INF_OR_UNBD: (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD),
}
SOLVERS = ("gurobipy", "highs", "scip")
"""Names :func:`verify_solve` records in ``SolveRecord.verified_by`` for a re-solve."""


def model_key(model: LinearModel) -> bytes:
    """A digest of the model's numbers (sense, bounds, types, rows, matrix, quadratic parts,
    counts), without its names: two models with the same key are the same optimisation problem.
    O(size of the model), in NumPy (:func:`~.views.view_key` of its view).

    Raises:
        Unsolvable: the model is over a size cap or inconsistent (it is never re-solved).
    """
    return view_key(model_view(model))


def _resolve_view(view: ModelView, *, prefer_gurobi: bool, deadline: ThreadCpuDeadline) -> Resolve:
    """The verdict on ``view`` from a verifier process (:mod:`.lanes`), within what ``deadline``
    has left of its CPU seconds.

    Raises:
        Unsolvable: no solver takes the model, or the re-solve failed.
        OutOfTime: the budget ran out (in this thread's reading of the model, or in the verifier).
    """
    deadline.check("reading the model")
    return verifier_lanes().resolve(
        view, prefer_gurobi=prefer_gurobi, budget_s=deadline.limit_s, spent_s=deadline.spent()
    )


def gurobi_available() -> bool:
    """Whether the harness's verifier processes have a licensed gurobipy (starts one if none runs)."""
    return verifier_lanes().gurobi_available()


def resolve(model: LinearModel, *, prefer_gurobi: bool = False, budget_s: float = VERIFY_MIN_S) -> Resolve:
    """The harness's verdict on ``model`` from the first solver of the list that takes it, within
    ``budget_s`` CPU seconds for reading, building and solving together.

    Raises:
        Unsolvable: no solver takes the model (the last refusal's reason), it is over a size cap,
            or the time limit ran out before a solver could run (:class:`~.base.OutOfTime`).
    """
    deadline = ThreadCpuDeadline(budget_s)
    return _resolve_view(model_view(model, deadline), prefer_gurobi=prefer_gurobi, deadline=deadline)


def resolve_remembered(
    model: LinearModel, *, prefer_gurobi: bool = False, budget_s: float = VERIFY_MIN_S
) -> Resolve:
    """:func:`resolve`, through the verdict memo that verification uses: a model re-solved before
    (by the harness, for any sample: the same model has the same verdict) is not solved again.
    For many small edited copies of models, as a diagnosis makes.

    Raises:
        Unsolvable: as :func:`resolve`.
    """
    deadline = ThreadCpuDeadline(budget_s)
    # Not the persistent store: a diagnosis's budget is what its sample's has left, another in
    # every run, so its entries would never be met again.
    view = model_view(model, deadline)
    return _remembered(view, prefer_gurobi=prefer_gurobi, deadline=deadline, persist=False)


class _Memo:
    """An LRU of verdicts by :func:`model_key`, where a second thread asking for a model being
    solved waits for that solve instead of repeating it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.done: OrderedDict[tuple[bytes, bool], Resolve] = OrderedDict()
        self.running: dict[tuple[bytes, bool], threading.Event] = {}
        self.by_text: OrderedDict[tuple[bytes, bool], tuple[bool, Resolve]] = OrderedDict()
        """Verdicts (with the view's tolerance class) by :func:`~.views.raw_key`: a model seen
        before, word for word, skips building its view."""

    def recall(self, key: tuple[bytes, bool], *, budget_s: float = math.inf) -> tuple[bool, Resolve] | None:
        """What :meth:`note` kept for ``key``, or None; also None where its re-solve took more
        than ``budget_s`` CPU seconds (an asker with a smaller budget gets its own verdict, not
        one another sample's larger budget bought)."""
        with self.lock:
            found = self.by_text.get(key)
            if found is None or found[1].cpu_s > budget_s:
                return None
            self.by_text.move_to_end(key)
            return found

    def note(self, key: tuple[bytes, bool], integral: bool, result: Resolve) -> None:
        """Keep ``result`` for ``key`` unless it ran out of time (as :meth:`get` does)."""
        if result.status is SolveStatus.TIME_LIMIT:
            return
        with self.lock:
            self._keep(self.by_text, key, (integral, result))

    def get(
        self, key: tuple[bytes, bool], compute: Callable[[], Resolve], *, budget_s: float = math.inf
    ) -> Resolve:
        """``compute()``'s verdict for ``key``, remembered unless it ran out of time (a later
        request, with more budget, tries again); a remembered verdict whose re-solve took more
        than ``budget_s`` CPU seconds is not handed to this asker (it computes its own). A thread
        asking for a model another thread is solving waits for that solve, which its own budget
        bounds (a wait is no work: it is charged to nobody), until the asker's deadline
        (:data:`trex_eval.fairness.DEADLINE`, where one is set).

        Raises:
            DeadlinePassed: the asker's deadline passed while it waited.
        """
        while True:
            with self.lock:
                done = self.done.get(key)
                if done is not None and done.cpu_s <= budget_s:
                    self.done.move_to_end(key)
                    return done
                waiting = self.running.get(key)
                if waiting is None:
                    event = self.running[key] = threading.Event()
                    break
            due = DEADLINE.get()
            if not waiting.wait(None if due is None else max(0.0, due - time.monotonic())):
                raise DeadlinePassed("the deadline passed while it waited for another re-solve of its model")
        try:
            result = compute()
        finally:
            with self.lock:
                self.running.pop(key, None)
                event.set()
        if result.status is SolveStatus.TIME_LIMIT:
            return result
        with self.lock:
            self._keep(self.done, key, result)
        return result

    def _keep(self, table: OrderedDict[Any, Any], key: object, value: object) -> None:
        """Store ``value`` as the newest entry of ``table``, dropping its oldest beyond ``size``
        (the caller holds the lock)."""
        table[key] = value
        while len(table) > self.size:
            table.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.done.clear()
            self.by_text.clear()


_MEMO = _Memo(CACHE_SIZE)


def _entries(view: ModelView) -> int:
    """Variables + nonzeros + quadratic terms, the size that decides whether a verdict is kept."""
    rows = sum(row.values.size + len(row.quadratic) for row in view.q_rows)
    return view.n + int(view.values.size) + len(view.hessian) + rows


def _remembered(
    view: ModelView, *, prefer_gurobi: bool, deadline: ThreadCpuDeadline, persist: bool = True
) -> Resolve:
    """:func:`resolve` of ``view`` within ``deadline``, through the persistent store of re-solve
    results when ``persist`` (:mod:`.store`, every size), remembered in memory for small models
    (an :class:`~.base.Unsolvable` is neither). Keyed by ``prefer_gurobi``, not by whether
    gurobipy is licensed: that answer is fixed for the process, and asking it starts a verifier
    process that a stored result makes needless."""
    digest = view_key(view)

    def solved() -> Resolve:
        compute = functools.partial(_resolve_view, view, prefer_gurobi=prefer_gurobi, deadline=deadline)
        if not persist:
            return compute()
        return through_store(
            digest,
            prefer_gurobi=prefer_gurobi,
            gurobi_available=gurobi_available,
            budget_s=deadline.limit_s,
            compute=compute,
        )

    if _entries(view) > CACHE_MAX_ENTRIES:
        return solved()
    return _MEMO.get((digest, prefer_gurobi), solved, budget_s=deadline.limit_s)


def objectives_agree(reported: float, verified: float, *, integral: bool) -> bool:
    """The tolerance rule of the package docstring (``integral``: the MIP/quadratic tolerance)."""
    rtol = MIP_RTOL if integral else LP_RTOL
    return abs(reported - verified) <= ATOL + rtol * max(1.0, abs(verified))


def _skip_reason(solve: SolveRecord) -> str | None:
    """Why ``solve`` is not re-solved at all, or None. O(1) but for :func:`~.views.size_problem`."""
    model = solve.model
    if model is None:
        return "no matrix captured"
    # The re-solvers read neither SOS sets nor indicators: a model holding either is not re-solved
    # even where its counts (the program's word as well) say it has none.
    if model.n_sos or model.n_general_constraints or model.sos or model.indicators:
        return "model has SOS or general constraints"
    if model.n_quadratic_constraints != len(model.q_constraints):
        return "model has quadratic constraints that were not captured"
    if solve.status not in _CLAIMS:
        return f"solver status {solve.status.value}"
    return size_problem(model)


def _certified(solve: SolveRecord, model: LinearModel) -> SolveRecord | None:
    """``solve`` matched by the LP's optimality certificate (:mod:`.certificate`: the harness's
    own primal objective, proven optimal by a dual bound it computed exactly), ``verified_by``
    :data:`CERTIFICATE`; None, for the re-solve to decide, where the claim is not an optimum,
    no certificate holds or the claim does not agree with the certified value (a certificate
    only ever confirms a claim: the re-solve keeps every other verdict)."""
    if solve.status is not SolveStatus.OPTIMAL or solve.objective is None or not model.primal:
        return None
    found = certify(model)
    if not isinstance(found, Certified) or not objectives_agree(
        solve.objective, found.objective, integral=False
    ):
        return None
    return solve.model_copy(
        update={"verified_objective": found.objective, "verification": "match", "verified_by": CERTIFICATE}
    )


def verify_solve(
    solve: SolveRecord, *, budget_s: float = VERIFY_MIN_S, prefer_gurobi: bool | None = None
) -> SolveRecord:
    """``solve`` with ``verified_objective``, ``verification`` and ``verified_by`` set (see the
    package docstring). ``prefer_gurobi`` (default: when the claim is gurobipy's) re-solves with
    the harness's gurobipy first when it is licensed here. ``budget_s`` CPU seconds cover the
    whole re-solve (reading the model here, building it for the solver and the solve in a
    verifier process); a re-solve that runs out of them, or a model over a size cap, gives
    ``"skipped: <why>"``. Machine load does not use the budget up (see :mod:`.lanes`).

    A record whose ``verification`` is already set (e.g. "skipped: no matrix captured", filled in
    when the sandbox could not capture the matrix, or a verdict from an earlier pass) is
    returned unchanged.
    """
    if solve.verification is not None:
        return solve
    deadline = ThreadCpuDeadline(budget_s)
    reason = _skip_reason(solve)
    if reason is not None:
        return solve.model_copy(update={"verification": f"skipped: {reason}"})
    model = solve.model
    assert model is not None
    certified = _certified(solve, model)
    if certified is not None:
        return certified
    gurobi = solve.library == "gurobipy" if prefer_gurobi is None else prefer_gurobi
    text = raw_key(model)
    memo_key = None if text is None else (text, gurobi)
    try:
        seen = None if memo_key is None else _MEMO.recall(memo_key, budget_s=budget_s)
        if seen is None:
            view = model_view(model, deadline)
            result = _remembered(view, prefer_gurobi=gurobi, deadline=deadline)
            integral = view.integral or view.quadratic  # the MIP/quadratic tolerance
            if memo_key is not None:
                _MEMO.note(memo_key, integral, result)
        else:
            integral, result = seen
    except OutOfTime as error:
        return solve.model_copy(
            update={"verification": f"skipped: {error}"[:300], "verified_by": error.solver}
        )
    except Unsolvable as error:
        return solve.model_copy(update={"verification": f"skipped: {error}"[:300]})
    except (TrexError, DeadlinePassed):  # the harness's failure, or nobody waits: never a verdict
        raise
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
            and objectives_agree(solve.objective, result.objective, integral=integral)
        )
    else:
        agrees = result.status in _COMPATIBLE[solve.status]
    return solve.model_copy(
        update={
            "verified_objective": result.objective,
            "verification": "match" if agrees else "mismatch",
            "verified_by": result.solver,
            "verified_from_store": result.stored,
        }
    )


def verification_budget(execution: Execution) -> float:
    """CPU seconds the harness may spend on one re-solve of ``execution``'s model, reading and
    building included: :data:`VERIFY_CPU_FACTOR` times the program's own CPU seconds, at least
    :data:`VERIFY_MIN_S`, at most :data:`VERIFY_MAX_S`. CPU seconds, not wall: a loaded machine
    stretches a program's wall time, and a budget that grew with it would make the verdict
    depend on the load."""
    return min(VERIFY_MAX_S, max(VERIFY_MIN_S, VERIFY_CPU_FACTOR * (execution.cpu_s or 0.0)))


def verify_last_solve(execution: Execution, *, budget_s: float | None = None) -> Execution:
    """``execution`` with its last solve verified (the one the objective rules judge); earlier
    solves are left as they are. Unchanged when there is no solve or it was verified already.
    ``budget_s`` (CPU seconds) defaults to :func:`verification_budget`."""
    last = execution.last_solve
    if last is None or last.verification is not None:
        return execution
    budget = verification_budget(execution) if budget_s is None else budget_s
    checked = verify_solve(last, budget_s=budget)
    return execution.model_copy(update={"solves": (*execution.solves[:-1], checked)})
