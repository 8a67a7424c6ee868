"""Objective verification: the harness re-derives a claimed result from the captured model.

**The verification contract.** Everything a program's process reports is a claim: the hooks run
in that process, beside code that may patch them, subclass the models or write records of its
own, so the solver status, the objective *and* the captured model are all the program's word.
The harness accepts a claim only when it has solved the captured model itself, in a verifier
process of its own that no program touches (the "parent" below), and found the claimed result
("match"). A forged record therefore gains nothing a
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
(time limits, errors), a missing solver (pyscipopt), a model over a size cap, and solver
failures or time-outs. The graders turn a passing claim that was not matched into the verdict
``unverified``.

**Certificates before re-solves.** An optimal claim about a continuous LP whose solver's primal
point and row duals were captured is first checked by :mod:`.certificate` (in the calling
thread, exact arithmetic on the captured numbers only): when the point is feasible and the dual
bound the harness computes closes the gap to the harness's primal objective, and the claim
agrees with that objective, the claim is matched with ``verified_by="certificate"`` and no
re-solve runs. In every other case the re-solve below decides, as if no duals were captured.

**Bounded harness work.** The captured model is hostile input to the harness, so a
re-solve is bounded before it starts and while it runs:

* size caps (:mod:`.views`, each constant says why its value): :data:`MAX_COLUMNS`,
  :data:`MAX_ROWS`, :data:`MAX_NONZEROS` (matrix and quadratic rows' linear parts),
  :data:`MAX_QUADRATIC_TERMS` (objective and rows), :data:`MAX_QUADRATIC_ROWS`. They are checked
  from the record's lengths before anything is allocated; a model over one is not re-solved,
  ``"skipped: model over the re-solve cap on <what>: <size> > <CAP> = <value>"``. Every step of a
  re-solve is linear in a capped size (NumPy, or Python loops over capped lists); nothing is
  sized ``num_vars`` squared: Hessians stay sparse, and the convexity check puts only the used
  columns of one connected block at a time in a dense matrix, up to
  :data:`DENSE_CONVEXITY_LIMIT` columns (a larger block goes to SCIP, not shown convex). Two
  limits of a solver's own, measured where its time limit does not hold: a QP over more than
  :data:`HIGHS_QP_MAX_COLUMNS` columns goes to SCIP instead of HiGHS, and SCIP is not given
  more than :data:`SCIP_MAX_QUADRATIC_TERMS` quadratic terms;
* CPU time, never wall time: a re-solve's budget covers reading the model (here, counted in
  CPU seconds of the reading thread) and building it for the solver and the solve (in a verifier
  process of the harness's own, :mod:`.lanes` and :mod:`.worker`, counted in CPU seconds of that
  process, which does nothing else). The build checks the budget between steps of at most
  :data:`BUILD_STEP` entries; a build that runs past it stops, ``"skipped: <step> ran past the
  re-solve's <limit> CPU s time limit (...)"``, and a solver that runs past it is ended by the
  kernel (``RLIMIT_CPU``), ``"skipped: the re-solve ran past its budget of <limit> CPU s"``. A
  loaded machine slows a re-solve down but does not use its budget up, so a verdict is the same
  on a quiet machine and on one saturated by other work (budgets keep a margin of
  :data:`~.lanes.CPU_BUDGET_MARGIN` for what contention adds to CPU time). The verifier process
  is outside the terminal's process group (a solver's signal handler never takes a user's
  Ctrl-C) and a solver crash on a crafted model ends it, not the harness.

**Which solver.** A gurobipy claim is re-solved with gurobipy when gurobipy is licensed in the
verifier processes (the same solver: 3-100x faster than HiGHS on the B4O MILPs, and it handles every
quadratic kind); a model too large for its licence falls back to the rest of the list (under
the size-limited pip licence, before it is built: :data:`LIMITED_VARIABLES`). A convex continuous QP (up to
:data:`HIGHS_QP_MAX_COLUMNS` columns) goes to HiGHS even then (milliseconds, against
~0.2-0.35 CPU s for gurobipy's re-solve of a small QP). Otherwise
linear models and MILPs go to HiGHS, convex continuous QPs (up to :data:`HIGHS_QP_MAX_COLUMNS`
columns) to HiGHS's QP solver, and everything else quadratic (MIQP, QCP, larger QPs, non-convex
or not shown convex) to SCIP through pyscipopt.

Verdicts are remembered (LRU, :data:`CACHE_SIZE` models) under a key of the model's numbers
only, without its names: samples of one problem, and twin problems worded differently, often
build the very same matrix under other names. Two threads asking about the same model at once
solve it once. A re-solve may take twice the program's own CPU time (10-120 CPU s,
:func:`verification_budget`); a time-out is not remembered. Decisive results of verification's
re-solves are also kept across runs, keyed by the model, the re-solve code, the solvers' versions
and the budget (:mod:`.store`, ``TREX_RESOLVE_STORE``).

Verification is a stage of its own, below grading: the sandbox runs programs and never
verifies, verification re-derives values, grading judges.

Modules: :mod:`.base` (verdict, refusals, the deadlines), :mod:`.views` (size caps, the model in
arrays, its digest, convexity), :mod:`.highs`, :mod:`.gurobi`, :mod:`.scip` (one re-solver
each, run in a verifier process), :mod:`.worker` (the verifier process: which solver, under its
CPU budget), :mod:`.lanes` (the harness's side of those processes), :mod:`.store` (re-solve
results kept across runs), :mod:`.choice` (the memo and the verdict on a claim),
:mod:`.model_files` (the model files programs write, read there too).
"""

from __future__ import annotations

from ..linear_model import MAX_COLUMNS as MAX_COLUMNS
from ..linear_model import MAX_NONZEROS as MAX_NONZEROS
from ..linear_model import MAX_QUADRATIC_ROWS as MAX_QUADRATIC_ROWS
from ..linear_model import MAX_QUADRATIC_TERMS as MAX_QUADRATIC_TERMS
from ..linear_model import MAX_ROWS as MAX_ROWS
from .base import BUILD_STEP as BUILD_STEP
from .base import MIP_GAP as MIP_GAP
from .base import CpuDeadline as CpuDeadline
from .base import Deadline as Deadline
from .base import OutOfTime as OutOfTime
from .base import Resolve as Resolve
from .base import ThreadCpuDeadline as ThreadCpuDeadline
from .base import Unsolvable as Unsolvable
from .choice import _MEMO as _MEMO
from .choice import ATOL as ATOL
from .choice import CACHE_MAX_ENTRIES as CACHE_MAX_ENTRIES
from .choice import CACHE_SIZE as CACHE_SIZE
from .choice import LP_RTOL as LP_RTOL
from .choice import MIP_RTOL as MIP_RTOL
from .choice import SOLVERS as SOLVERS
from .choice import VERIFY_CPU_FACTOR as VERIFY_CPU_FACTOR
from .choice import VERIFY_MAX_S as VERIFY_MAX_S
from .choice import VERIFY_MIN_S as VERIFY_MIN_S
from .choice import _Memo as _Memo
from .choice import gurobi_available as gurobi_available
from .choice import model_key as model_key
from .choice import objectives_agree as objectives_agree
from .choice import resolve as resolve
from .choice import resolve_remembered as resolve_remembered
from .choice import verification_budget as verification_budget
from .choice import verify_last_solve as verify_last_solve
from .choice import verify_solve as verify_solve
from .gurobi import LIMITED_CONSTRAINTS as LIMITED_CONSTRAINTS
from .gurobi import LIMITED_QUADRATIC_VARIABLES as LIMITED_QUADRATIC_VARIABLES
from .gurobi import LIMITED_VARIABLES as LIMITED_VARIABLES
from .gurobi import resolve_with_gurobi as resolve_with_gurobi
from .highs import HIGHS_QP_MAX_COLUMNS as HIGHS_QP_MAX_COLUMNS
from .highs import resolve_with_highs as resolve_with_highs
from .lanes import CPU_BUDGET_MARGIN as CPU_BUDGET_MARGIN
from .lanes import ModelFileRefused as ModelFileRefused
from .lanes import VerifierLanes as VerifierLanes
from .lanes import verifier_lanes as verifier_lanes
from .model_files import read_model_file as read_model_file
from .scip import SCIP_MAX_QUADRATIC_TERMS as SCIP_MAX_QUADRATIC_TERMS
from .scip import resolve_with_scip as resolve_with_scip
from .scip import scip_available as scip_available
from .views import CONVEXITY_TOL as CONVEXITY_TOL
from .views import DENSE_CONVEXITY_LIMIT as DENSE_CONVEXITY_LIMIT
from .views import size_problem as size_problem


def warm_up() -> None:
    """Start a verifier process now (solvers imported, gurobipy's licence checked), so that the
    first claim's verification does not wait for it; a run calls it while its sandbox workers
    start. Never raises."""
    verifier_lanes().warm()
