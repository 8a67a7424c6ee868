"""The gurobipy_highs layer against real gurobipy: same printed API results, same files, same optima.

Every expectation here comes from running the same program under real gurobipy 13.0.3.
"""

from __future__ import annotations

import re
from types import ModuleType

import pytest
from api_snippets import HEADER, SNIPPETS
from compat_runner import ProgramJob, ProgramRun, objectives_match, run_programs
from random_models import random_program, random_solve_program

pytestmark = pytest.mark.timeout(600)

_LICENCE_LINE = re.compile(r"^Restricted license.*\n", re.MULTILINE)
_NUMBER = re.compile(r"^-?\d+(\.\d*)?(e[-+]\d+)?$")


def _both(jobs: list[ProgramJob]) -> tuple[dict[str, ProgramRun], dict[str, ProgramRun]]:
    real = run_programs(jobs, flavour="real")
    compat = run_programs(jobs, flavour="highs")
    assert all(not run.highs for run in real.values()), "the reference side must use real gurobipy"
    assert all(run.highs for run in compat.values()), "the other side must import gurobipy_highs"
    return real, compat


def _transcript(run: ProgramRun) -> str:
    return _LICENCE_LINE.sub("", run.stdout) + f"\nended with: {run.error_type}: {run.error}"


def test_api_snippets_print_the_same(real_gurobipy: ModuleType) -> None:
    jobs = [ProgramJob(key=name, code=HEADER + body) for name, body in SNIPPETS.items()]
    real, compat = _both(jobs)
    for job in jobs:
        assert real[job.key].error_type is None, f"{job.key} fails under real gurobipy: {real[job.key].error}"
        assert _transcript(compat[job.key]) == _transcript(real[job.key]), job.key


@pytest.mark.slow
def test_random_models_write_identical_lp_and_mps_files(real_gurobipy: ModuleType) -> None:
    jobs = [ProgramJob(f"lin{s}", random_program(s, nonlinear=False)) for s in range(120)]
    jobs += [
        ProgramJob(f"qp{s}", random_program(s, nonlinear=False, quadratic_objective=True)) for s in range(60)
    ]
    jobs += [ProgramJob(f"nl{s}", random_program(s, nonlinear=True)) for s in range(120)]
    real, compat = _both(jobs)
    for job in jobs:
        assert real[job.key].error_type is None, real[job.key].error
        assert compat[job.key].error_type is None, compat[job.key].error
        assert set(compat[job.key].written) == set(real[job.key].written), job.key
        for name, text in real[job.key].written.items():
            assert compat[job.key].written[name] == text, f"{job.key}/{name}\n{job.code}"


def _tokens(text: str) -> list[str]:
    return text.split()


def test_merged_duplicate_terms_agree_to_the_last_bits(real_gurobipy: ModuleType) -> None:
    """Gurobi sums repeated terms of one variable in its own (unstable) order, so a merged
    coefficient may differ from a left-to-right sum in the last bit; everything else is exact."""
    body = (
        "import random\nrng = random.Random({seed})\nm = gp.Model('dup')\n"
        "v = [m.addVar(name=f'v{{i}}') for i in range(6)]\n"
        "for r in range(8):\n"
        "    row = gp.quicksum(rng.uniform(-9, 9) * v[rng.randrange(6)] for _ in range(12))\n"
        "    m.addConstr(row <= r, name=f'c{{r}}')\n"
        "m.setObjective(gp.quicksum(rng.uniform(-9, 9) * v[rng.randrange(6)] for _ in range(15)))\n"
        "m.write('model.lp')\n"
    )
    jobs = [ProgramJob(f"dup{s}", HEADER + body.format(seed=s)) for s in range(40)]
    real, compat = _both(jobs)
    for job in jobs:
        left, right = _tokens(real[job.key].written["model.lp"]), _tokens(compat[job.key].written["model.lp"])
        assert len(left) == len(right), job.key
        for a, b in zip(left, right, strict=True):
            if a != b:
                assert _NUMBER.match(a) and _NUMBER.match(b), (job.key, a, b)
                assert abs(float(a) - float(b)) <= 1e-14 * abs(float(a)), (job.key, a, b)


@pytest.mark.slow
def test_random_models_solve_to_the_same_optimum(real_gurobipy: ModuleType) -> None:
    jobs = [ProgramJob(f"solve{s}", random_solve_program(s)) for s in range(150)]
    real, compat = _both(jobs)
    outcomes = {"matched": 0, "needs_gurobi": 0, "both_infeasible": 0}
    for job in jobs:
        ref, got = real[job.key], compat[job.key]
        assert ref.error_type is None, ref.error
        if got.needs_gurobi:
            assert "# kind: nonconvex_qp" in job.code, f"{job.key}: only non-convex models may need Gurobi"
            outcomes["needs_gurobi"] += 1
        elif ref.status == 2:
            assert got.status == 2 and got.objval is not None and ref.objval is not None, job.key
            assert objectives_match(got.objval, ref.objval), (job.key, ref.objval, got.objval)
            outcomes["matched"] += 1
        else:
            assert ref.status in (3, 4) and got.status in (3, 4), (job.key, ref.status, got.status)
            assert got.objval is None
            outcomes["both_infeasible"] += 1
    assert (
        outcomes["matched"] >= 90 and outcomes["needs_gurobi"] >= 20 and outcomes["both_infeasible"] >= 5
    ), outcomes
