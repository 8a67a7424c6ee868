"""scripts/gurobipy_coverage.py: counting the gurobipy names programs use, and the report."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gurobipy_coverage.py"

PROGRAM = """
import gurobipy as gp
from gurobipy import GRB, quicksum
m = gp.Model("p")
x = m.addVars(3, vtype=GRB.INTEGER, name="x")
m.setParam("TimeLimit", 10)
m.Params.Cutoff = 5
m.addConstr(quicksum(x[i] for i in range(3)) <= 2)
m.setObjective(x.sum(), GRB.MAXIMIZE)
m.optimize()
if m.status == GRB.Status.OPTIMAL:
    print(m.ObjVal, [v.x for v in m.getVars()], m.getAttr(GRB.Attr.X, x))
m.feasRelaxS(0, False, False, True)
"""


@pytest.fixture(scope="module")
def coverage() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gurobipy_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_scan_counts_every_kind_of_name(coverage: ModuleType) -> None:
    usage = coverage.scan(
        iter([("p1", PROGRAM), ("p2", "print('no solver here')"), ("p3", "import gurobipy\nx = (")])
    )
    assert (usage.scanned, usage.unparsable) == (2, 1)
    assert usage.counts["module"] == {"GRB": 1, "quicksum": 1, "Model": 1}
    assert usage.counts["method"] == {
        "addVars": 1, "setParam": 1, "addConstr": 1, "setObjective": 1, "sum": 1,
        "optimize": 1, "getVars": 1, "getAttr": 1, "feasRelaxS": 1,
    }  # fmt: skip
    assert usage.counts["attribute"] == {"Status": 1, "ObjVal": 1, "X": 2}
    assert usage.counts["parameter"] == {"TimeLimit": 1, "Cutoff": 1}
    assert usage.counts["constant"] == {"GRB.INTEGER": 1, "GRB.MAXIMIZE": 1, "GRB.Status.OPTIMAL": 1}


def test_support_verdicts(coverage: ModuleType) -> None:
    assert coverage.support("method", "addVars") == "yes"
    assert coverage.support("method", "feasRelaxS") == "NotImplementedError"
    assert coverage.support("method", "computeIIS") == "yes"
    assert coverage.support("module", "quicksum") == "yes"
    assert coverage.support("module", "MVar") == "yes"
    assert coverage.support("module", "NLExpr") == "NotImplementedError"
    assert coverage.support("attribute", "ObjVal") == "yes"
    assert coverage.support("attribute", "IISConstr") == "yes"
    assert coverage.support("attribute", "IISSOS") == "NotImplementedError"
    assert coverage.support("parameter", "TimeLimit") == "yes (HiGHS `time_limit`)"
    assert coverage.support("parameter", "Cutoff").startswith("yes (an optimum worse than the cutoff")
    assert coverage.support("method", "getAttr") == "yes"  # a method of a Model mixin
    assert coverage.support("parameter", "Heuristics").startswith("accepted")
    assert coverage.support("constant", "GRB.Status.OPTIMAL") == "yes (real value)"


def test_stored_run_programs_are_read_from_samples_jsonl(coverage: ModuleType, tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    records = [{"program": {"code": PROGRAM}}, {"program": {"code": None}}]
    samples.write_text("\n".join(json.dumps(r) for r in records) + "\n{torn")
    assert [code for _, code in coverage.run_programs([samples])] == [PROGRAM]


def test_report_and_doc_section(coverage: ModuleType, tmp_path: Path) -> None:
    usage = coverage.scan(iter([("p1", PROGRAM)]))
    text = coverage.report(usage, ["test"])
    assert "| `feasRelaxS` | 1 | 1 | NotImplementedError |" in text
    assert text.rstrip().endswith("Programs using only supported names: 0 of 1.")
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{coverage.BEGIN}\nold\n{coverage.END}\noutro\n")
    coverage.update_doc(doc, text)
    assert doc.read_text() == f"intro\n{coverage.BEGIN}\n{text}{coverage.END}\noutro\n"
