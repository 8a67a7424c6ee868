"""OptMATH's conversion fallback as an opt-in option of the ``optmath`` rule
(``optmath:fallback=true``; optsuite/OptMATH eval/executor.py, ``execute_with_fallback``): its
rewrites in its order, the spec naming the option wherever the rule is named, and real runs over
OptMATH's own NL4OPT copy in the real sandbox, where a miss passes only through a rewrite that
the grade's reason names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.grading import get_rule
from trex_eval.grading.objective.base import ConvertingRule
from trex_eval.records import ObjectiveReference, SampleRecord, Verdict
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

BENCHMARK = "nl4opt-245@optmath"


def gurobipy(body: str) -> str:
    """A gurobipy program around ``body`` (which builds on ``model`` and variable ``x``)."""
    return (
        "import gurobipy as gp\n"
        "from gurobipy import GRB\n\n"
        'model = gp.Model("optmath-test")\n'
        "model.Params.OutputFlag = 0\n"
        f"{body}\n"
        "model.optimize()\n"
        "print(model.ObjVal)\n"
    )


def test_the_rewrites_are_optmaths_in_its_order_and_only_when_asked() -> None:
    rule = get_rule("optmath:fallback=true")
    assert isinstance(rule, ConvertingRule)
    assert rule.spec == "optmath@3:fallback=true" and get_rule(rule.spec) == rule
    assert "conversion fallback on" in rule.description
    assert "(source: optsuite/OptMATH@b797149 eval/executor.py" in rule.description
    code = (
        "x = model.addVar(vtype=GRB.CONTINUOUS)\nmodel.addConstr(x > 1)\n"
        "model.setObjective(x, GRB.MAXIMIZE)\n"
    )
    found = {c.name: c.code for c in rule.conversions(code)}
    # GRB.INTEGER -> CONTINUOUS and MINIMIZE -> MAXIMIZE change nothing here: skipped, as upstream.
    assert list(found) == [
        "variable types to integer",
        "strict inequalities to non-strict",
        "objective sense to minimise",
    ]
    assert found["variable types to integer"] == code.replace("GRB.CONTINUOUS", "GRB.INTEGER")
    assert found["strict inequalities to non-strict"] == code.replace(" > ", " >= ")
    assert found["objective sense to minimise"] == code.replace("GRB.MAXIMIZE", "GRB.MINIMIZE")
    plain = get_rule("optmath")
    assert plain.spec == "optmath@3" and isinstance(plain, ConvertingRule) and plain.conversions(code) == ()
    with pytest.raises(ConfigError, match="has no conversion fallback"):
        get_rule("sirl:fallback=true")


def _run(tmp_path: Path, data_dir: Path, completions: dict[str, str], rule: str) -> dict[str, SampleRecord]:
    recorded = tmp_path / f"{rule}.jsonl"
    recorded.write_text(
        "".join(
            json.dumps({"problem_id": k, "completion": f"```python\n{v}```\n"}) + "\n"
            for k, v in completions.items()
        )
    )
    model = BackendSpec(name="recorded", backend="replay", options={"path": str(recorded)})
    spec = RunSpec(
        model=model, benchmarks=(BENCHMARK,), rules=(rule,), problem_ids={BENCHMARK: tuple(completions)}
    )
    result = pipeline.run(
        spec, RunOptions(data_dir=data_dir, out=tmp_path / f"run-{rule}", show_progress=False)
    )
    store = RunStore(result.run_dir)
    (entry,) = store.read_manifest().settings.benchmarks
    assert entry.rule == get_rule(rule).spec
    (summary,) = result.summary.benchmarks
    assert summary.rule == get_rule(rule).spec
    return {r.problem_id: r for r in store.iter_samples()}


def test_a_miss_passes_only_through_a_named_rewrite(tmp_path: Path, data_dir: Path) -> None:
    refs = {
        p.id: p.reference
        for p in load_benchmark(BENCHMARK, data_dir=data_dir).problems
        if isinstance(p.reference, ObjectiveReference)
    }
    v = {k: refs[k].value for k in ("0", "1", "3", "5", "6")}
    assert all(value is not None for value in v.values())
    completions = {
        # Right as written: no rewrite is tried.
        "0": gurobipy(
            f"x = model.addVar()\nmodel.addConstr(x >= {v['0']!r})\nmodel.setObjective(x, GRB.MINIMIZE)"
        ),
        # The sense swapped: x in [v, 2v] maximised gives 2v; the minimise rewrite gives v.
        "1": gurobipy(
            f"x = model.addVar(ub={2 * v['1']!r})\nmodel.addConstr(x >= {v['1']!r})\n"
            "model.setObjective(x, GRB.MAXIMIZE)"
        ),
        # A continuous variable where the answer is integral: 6.5 rounds (half to even) to 6, not 7.
        "3": gurobipy(
            f"x = model.addVar(vtype=GRB.CONTINUOUS)\nmodel.addConstr(x >= {v['3'] - 0.5!r})\n"
            "model.setObjective(x, GRB.MINIMIZE)"
        ),
        # A strict inequality, which gurobipy refuses: a runtime error the rewrite to >= repairs.
        "5": gurobipy(
            f"x = model.addVar()\nmodel.addConstr(x > {v['5']!r})\nmodel.setObjective(x, GRB.MINIMIZE)"
        ),
        # Wrong, with nothing to rewrite: stays wrong.
        "6": gurobipy(f"x = model.addVar()\nmodel.addConstr(x >= {2 * v['6']!r})\nmodel.setObjective(x, 1)"),
    }
    plain = _run(tmp_path, data_dir, completions, "optmath")
    fallback = _run(tmp_path, data_dir, completions, "optmath:fallback=true")
    assert v["3"] == 7.0  # the label this completion is built around (the data file's)
    verdicts = {k: (plain[k].grade.verdict, fallback[k].grade.verdict) for k in completions}
    assert verdicts == {
        "0": (Verdict.CORRECT, Verdict.CORRECT),
        "1": (Verdict.WRONG, Verdict.CORRECT),
        "3": (Verdict.WRONG, Verdict.CORRECT),
        "5": (Verdict.RUNTIME_ERROR, Verdict.CORRECT),
        "6": (Verdict.WRONG, Verdict.WRONG),
    }
    reasons = {k: r.grade.reason for k, r in fallback.items()}
    assert "conversion fallback" not in reasons["0"] and reasons["0"] == plain["0"].grade.reason
    assert reasons["1"].startswith("conversion fallback (objective sense to minimise): ")
    assert reasons["1"].endswith(f"; as written: wrong ({plain['1'].grade.reason})")
    assert reasons["3"].startswith("conversion fallback (variable types to integer): ")
    assert reasons["5"].startswith("conversion fallback (strict inequalities to non-strict): ")
    assert "as written: runtime_error" in reasons["5"]
    assert reasons["6"] == plain["6"].grade.reason
    # The sample keeps the program as the model wrote it (the rewrite is named, not stored).
    assert fallback["1"].program.code == plain["1"].program.code
    assert {r.grade.rule for r in fallback.values()} == {"optmath@3:fallback=true"}
