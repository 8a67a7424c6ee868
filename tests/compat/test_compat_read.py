"""``gurobipy.read`` in the layer: LP and MPS files parsed by HiGHS, built into a ``Model``.

The in-process tests use files real gurobipy 13.0.3 wrote (the oracle is in the test process);
the slow one reads the LP files of the B4O ORGEval reference programs under real gurobipy and
under the layer and compares what each solves.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from types import ModuleType

import pytest
from compat_runner import ProgramJob, objectives_match, orgeval_jobs, run_programs

import gurobipy_highs as gp
from gurobipy_highs import GRB

pytestmark = pytest.mark.timeout(600)

_LICENCE_LINE = re.compile(r"^Restricted license.*\n", re.MULTILINE)


def _write_with_gurobipy(real: ModuleType, folder: Path) -> None:
    """A model with the names programs give (``x[0]``, ``flow[a,b]``, ``x-y``), an objective
    constant, integer, binary, semi-continuous and free columns and a range, written by gurobipy."""
    model = real.Model("names")
    model.Params.OutputFlag = 0
    x = model.addVars(3, ub=[4, 5, 6], name="x")
    flow = model.addVars([("a", "b"), ("b", "c")], vtype="I", ub=3, name="flow")
    odd = model.addVar(vtype="B", name="x-y")
    semi = model.addVar(vtype="S", lb=2, ub=9, name="sc")
    free = model.addVar(lb=-real.GRB.INFINITY, ub=2, name="free")
    model.addConstrs((x[i] + flow["a", "b"] <= 6 + i for i in range(3)), name="cap")
    model.addConstr(x[1] + semi + free == 5, name="tie[0]")
    model.addRange(x[2] + flow["b", "c"] + odd, 1, 8, name="rg")
    model.setObjective(
        3 * x[0] + 2 * flow.sum() + 5 * odd - semi + 0.5 * free + x.sum() + 7, real.GRB.MAXIMIZE
    )
    for extension in ("lp", "mps"):
        model.write(str(folder / f"names.{extension}"))
    model.optimize()
    (folder / "optimum.txt").write_text(repr(model.ObjVal))


def _described(model: object) -> list[object]:
    assert isinstance(model, gp.Model)
    return [(v.VarName, v.LB, v.UB, v.VType, v.Obj) for v in model.getVars()] + [
        (c.ConstrName, c.Sense, c.RHS, str(model.getRow(c))) for c in model.getConstrs()
    ]


def test_gurobipy_written_files_read_back_with_their_names(real_gurobipy: ModuleType, tmp_path: Path) -> None:
    _write_with_gurobipy(real_gurobipy, tmp_path)
    optimum = float((tmp_path / "optimum.txt").read_text())
    for extension in ("lp", "mps"):
        path = tmp_path / f"names.{extension}"
        reference = real_gurobipy.read(str(path))
        model = gp.read(str(path))
        model.Params.OutputFlag = 0
        assert [v.VarName for v in model.getVars()] == [v.VarName for v in reference.getVars()]
        assert [c.ConstrName for c in model.getConstrs()] == [c.ConstrName for c in reference.getConstrs()]
        assert [(v.LB, v.UB, v.VType, v.Obj) for v in model.getVars()] == [
            (v.LB, v.UB, v.VType, v.Obj) for v in reference.getVars()
        ]
        assert (model.ModelName, model.ObjCon, model.ModelSense) == (
            reference.ModelName,
            reference.ObjCon,
            reference.ModelSense,
        )
        model.optimize()
        assert model.Status == GRB.OPTIMAL and model.ObjVal == pytest.approx(optimum, rel=1e-9)


def test_compressed_files_and_the_layers_own_files(tmp_path: Path) -> None:
    model = gp.Model("own")
    model.Params.OutputFlag = 0
    a, b = model.addVar(lb=-1, ub=3, name="a[0]"), model.addVar(ub=2, name="b")
    model.addConstr(a + b >= 1, name="k")
    model.setObjective(a * a + 2 * a * b + 3 * b * b - a + 1.5)
    model.write(str(tmp_path / "qp.lp.gz"))
    model.write(str(tmp_path / "qp.mps.bz2"))
    model.optimize()
    for name in ("qp.lp.gz", "qp.mps.bz2"):
        read = gp.read(str(tmp_path / name))
        read.Params.OutputFlag = 0
        assert _described(read) == _described(model), name
        assert read.IsQP == 1 and read.ObjCon == 1.5
        read.optimize()
        assert read.ObjVal == pytest.approx(model.ObjVal, abs=1e-9)
    assert gzip.decompress((tmp_path / "qp.lp.gz").read_bytes()).startswith(b"\\ Model own")


def test_what_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(gp.GurobiError, match=r"Unable to open file '.*missing\.lp' for input"):
        gp.read(str(tmp_path / "missing.lp"))
    with pytest.raises(gp.CompatNotImplementedError, match=r"'\.ilp' files"):
        gp.read(str(tmp_path / "model.ilp"))
    sections = {
        "indicator constraints": "Maximize\n x + b\nSubject To\n c: b = 1 -> x <= 1\nBinaries\n b\nEnd\n",
        "general constraints": (
            "Maximize\n x\nSubject To\n c: x <= 4\nGeneral Constraints\n g: r = MAX ( x , 1 )\nEnd\n"
        ),
        "SOS constraints": "Maximize\n x + y\nSubject To\n c: x + y <= 4\nSOS\n s0: S1 :: x:1 y:2\nEnd\n",
        "quadratic constraints": "Maximize\n x + y\nSubject To\n qc: [ x ^2 + y ^2 ] <= 9\nEnd\n",
        "a malformed file": "Minimize\n obj: x +\nSubject To\n c: x >= = 1\nEnd\n",
    }
    for what, text in sections.items():
        path = tmp_path / "bad.lp"
        path.write_text(text)
        with pytest.raises(gp.NeedsGurobiError) as caught:
            gp.read(str(path))
        expected = "could not parse it" if what == "a malformed file" else f"cannot read its {what}"
        assert expected in str(caught.value) and str(path) in str(caught.value), what


@pytest.mark.slow
def test_orgeval_lp_files_read_and_solve_as_under_gurobipy(data_dir: Path, real_gurobipy: ModuleType) -> None:
    """The LP files of the first 100 ORGEval reference programs (written by real gurobipy), read
    and solved by each side: the same counts read, the same optimum. Non-convex models (32, 33)
    and quadratic constraints (56, 57) are ``needs_gurobi``; on models without a solution HiGHS
    and Gurobi may name the status differently (INFEASIBLE / INF_OR_UNBD / UNBOUNDED), never one
    with a solution and one without."""
    jobs = orgeval_jobs(data_dir)[:100]
    written = run_programs(jobs, flavour="real")
    code = (
        "import gurobipy as gp\ngp.setParam('OutputFlag', 0)\nm = gp.read('model.lp')\nm.optimize()\n"
        "print(m.NumVars, m.NumConstrs, m.NumIntVars, m.NumBinVars, m.ModelSense, m.ObjCon)\n"
    )
    reads = [ProgramJob(job.key, code, {"model.lp": written[job.key].written["model.lp"]}) for job in jobs]
    real, layer = run_programs(reads, flavour="real"), run_programs(reads, flavour="highs")
    matched, refused = 0, set()
    for job in reads:
        reference, got = real[job.key], layer[job.key]
        assert reference.error_type is None, (job.key, reference.error)
        if got.needs_gurobi:
            refused.add(job.key)
            continue
        assert got.error_type is None, (job.key, got.error)
        assert got.stdout == _LICENCE_LINE.sub("", reference.stdout), job.key  # the counts read
        if reference.status == GRB.OPTIMAL:
            assert got.status == GRB.OPTIMAL and got.objval is not None and reference.objval is not None
            assert objectives_match(got.objval, reference.objval), (job.key, reference.objval, got.objval)
            matched += 1
        else:
            assert {reference.status, got.status} <= {GRB.INFEASIBLE, GRB.INF_OR_UNBD, GRB.UNBOUNDED}, job.key
    assert refused == {f"BENCH4OPT_{k}" for k in (32, 33, 56, 57)}
    assert matched >= 50  # 56 of the 100 have an optimum (measured); the rest have none
