"""LP optimality certificates (issue 44): real captured models of B4O-Feasible reference programs,
run in the real sandbox, are certified from their solver's primal and dual values and agree with
the harness's re-solve; forged duals and suboptimal points are never certified; a model without
duals, or whose certificate fails, is re-solved."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_verify import textbook

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.linear_model import CERTIFICATE
from trex_eval.protocols.plan import plan_for
from trex_eval.records import Completion, LinearModel, SolveRecord, SolveStatus
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool
from trex_eval.verify import objectives_agree, resolve, verify_solve
from trex_eval.verify.certificate import GAP_TOL, Certified, NoCertificate, certify

INF = math.inf
LP_ROWS = ("BENCH4OPT_2", "BENCH4OPT_8", "BENCH4OPT_10", "BENCH4OPT_36", "BENCH4OPT_64")
"""Pure LPs among B4O-Feasible's reference programs: BENCH4OPT_10's basic columns have reduced
costs of ~1e-15 of the wrong sign on infinite bounds (the repair's case), BENCH4OPT_36 has an
objective constant, BENCH4OPT_64 mixes <= and >= rows."""

PULP_LP = """
import pulp
p = pulp.LpProblem("textbook", pulp.LpMaximize)
x = pulp.LpVariable("x", lowBound=0)
y = pulp.LpVariable("y", lowBound=0)
p += 5 * x + 4 * y
p += 6 * x + 4 * y <= 24, "wood"
p += x + 2 * y <= 6, "labour"
p.solve(pulp.PULP_CBC_CMD(msg=0))
print(pulp.value(p.objective))
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(limits=SandboxLimits(wall_s=60.0, cpu_s=60.0), workers=2) as started:
        yield started


@pytest.fixture(scope="module")
def captured(pool: SandboxPool, data_dir: Path) -> dict[tuple[str, str], SolveRecord]:
    """The last solve of each :data:`LP_ROWS` reference program under real gurobipy and under
    the licence-free gurobipy_highs layer, as the sandbox captured it."""
    bench = load_benchmark("b4o-feasible", data_dir=data_dir)
    plan = plan_for(bench)
    found = {}
    for problem in (p for p in bench.problems if p.id in LP_ROWS):
        text = reference_completion_text(problem)
        program = plan.extract(Completion(problem_id=problem.id, sample_index=0, text=text))
        assert program.code is not None
        for mode in ("real", "highs"):
            job = plan.job(problem, program).model_copy(update={"gurobi": mode})
            solve = pool.run(job).last_solve
            assert solve is not None and solve.model is not None, (problem.id, mode)
            found[problem.id, mode] = solve
    assert len(found) == 2 * len(LP_ROWS)
    return found


def _optimum(model: LinearModel) -> float:
    """The harness's re-solve of ``model`` (HiGHS or gurobipy, in a verifier process)."""
    result = resolve(model.model_copy(update={"primal": (), "row_duals": ()}))
    assert result.status is SolveStatus.OPTIMAL and result.objective is not None
    return result.objective


def test_real_captured_lps_are_certified_and_agree_with_the_re_solve(
    captured: dict[tuple[str, str], SolveRecord],
) -> None:
    for key, solve in captured.items():
        model = solve.model
        assert model is not None and len(model.primal) == model.num_vars, key
        assert len(model.row_duals) == model.num_rows, key

        found = certify(model)

        assert isinstance(found, Certified), (key, found)
        assert objectives_agree(found.objective, _optimum(model), integral=False), key
        checked = verify_solve(solve)
        assert checked.verification == "match" and checked.verified_by == CERTIFICATE, key
        assert checked.verified_objective == found.objective


def test_pulp_duals_are_captured_and_certified(pool: SandboxPool) -> None:
    solve = pool.run(Job(code=PULP_LP, gurobi="highs")).last_solve

    assert solve is not None and solve.model is not None and solve.model.row_duals
    found = certify(solve.model)
    assert isinstance(found, Certified) and found.objective == pytest.approx(21.0, abs=1e-9)


def _textbook(**changes: object) -> LinearModel:
    """test_verify's textbook LP (optimum 21 at (3, 1.5)) with its optimal point and duals
    (0.75, 0.5) (gurobipy's signs for a maximisation)."""
    return textbook(**{"primal": (3.0, 1.5), "row_duals": (0.75, 0.5), **changes})


def _tiny_cost(ub: float) -> LinearModel:
    """min -1e-9·x over 0 <= x <= ub: optimum -1e-9·ub, and -inf for ub = inf."""
    return LinearModel.model_validate(
        {
            "sense": "min",
            "var_names": ("x",),
            "obj": (-1e-9,),
            "lb": (0.0,),
            "ub": (ub,),
            "vtype": ("C",),
            "row_names": ("r",),
            "row_lower": (-INF,),
            "row_upper": (INF,),
            "a_row": (0,),
            "a_col": (0,),
            "a_val": (1.0,),
            "primal": (0.0,),
            "row_duals": (0.0,),
        }
    )


FORGERIES = {
    "suboptimal point, true duals": _textbook(primal=(3.0, 1.0)),
    "suboptimal vertex with its own duals": _textbook(primal=(4.0, 0.0), row_duals=(5 / 6, 0.0)),
    "infeasible point above the optimum": _textbook(primal=(3.0, 1.6)),
    "duals halved": _textbook(row_duals=(0.375, 0.25)),
    "zero duals": _textbook(row_duals=(0.0, 0.0)),
    "duals nearly right, 1e-7 off": _textbook(primal=(3.0, 1.4), row_duals=(0.75 + 1e-7, 0.5)),
    "infeasible point with a dropped row's dual": _textbook(primal=(4.0, 1.0), row_duals=(0.75, 0.0)),
    "near-feasible dual on a huge bound": _tiny_cost(1e12),
    "near-feasible dual on an infinite bound": _tiny_cost(INF),
    "duals too small, the slack hidden in a huge bound": _textbook(
        ub=(1e15, 1e15), row_upper=(INF, 6.0), primal=(6.0, 0.0), row_duals=(0.0, 4.0 / 2.0)
    ),
    "duals of the wrong length": _textbook(row_duals=(0.75,)),
    "a non-finite dual": _textbook(row_duals=(0.75, INF)),
    "integer model": _textbook(vtype=("I", "C")),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forgeries_are_never_certified(name: str) -> None:
    assert isinstance(certify(FORGERIES[name]), NoCertificate)


def test_honest_textbook_and_its_negated_duals_are_certified() -> None:
    for duals in ((0.75, 0.5), (-0.75, -0.5)):  # both sign conventions of the libraries
        found = certify(_textbook(row_duals=duals))
        assert isinstance(found, Certified) and found.objective == 21.0 and found.bound == 21.0


def test_perturbed_real_points_and_duals_never_certify_a_wrong_value(
    captured: dict[tuple[str, str], SolveRecord],
) -> None:
    chance = random.Random(44)
    for key, solve in captured.items():
        model = solve.model
        assert model is not None
        optimum = _optimum(model)
        for _ in range(20):
            primal = list(model.primal)
            duals = list(model.row_duals)
            j = chance.randrange(len(primal))
            primal[j] += chance.choice((-1, 1)) * max(1e-3, abs(primal[j]) * 1e-2)
            if duals:
                i = chance.randrange(len(duals))
                duals[i] *= chance.choice((0.5, 1.5, -1.0))
            found = certify(model.model_copy(update={"primal": tuple(primal), "row_duals": tuple(duals)}))
            if isinstance(found, Certified):  # only an alternative optimum may pass
                assert abs(found.objective - optimum) <= 2 * GAP_TOL * max(1.0, abs(optimum)), key


def test_a_model_without_duals_or_with_a_failed_certificate_is_re_solved(
    captured: dict[tuple[str, str], SolveRecord],
) -> None:
    solve = captured["BENCH4OPT_8", "real"]
    model = solve.model
    assert model is not None
    bare = solve.model_copy(update={"model": model.model_copy(update={"primal": (), "row_duals": ()})})
    forged = solve.model_copy(
        update={"model": model.model_copy(update={"row_duals": (0.0,) * model.num_rows})}
    )

    for claim in (bare, forged):
        checked = verify_solve(claim)
        assert checked.verification == "match", checked.verification  # an honest claim still passes
        assert checked.verified_by in ("gurobipy", "highs")


def test_a_claim_the_certificate_contradicts_goes_to_the_re_solve() -> None:
    claim = SolveRecord(
        library="gurobipy", status=SolveStatus.OPTIMAL, raw_status="", objective=22.0, model=_textbook()
    )

    checked = verify_solve(claim)

    assert checked.verification == "mismatch" and checked.verified_by != CERTIFICATE
    assert checked.verified_objective == pytest.approx(21.0)
