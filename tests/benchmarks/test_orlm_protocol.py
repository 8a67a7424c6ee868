"""The ``orlm`` protocol reproduces ORLM's harness (Cardinal-Operations/ORLM eval/execute.py), not
only its tolerance: handwritten completions for real problems of the SIRL NL4OPT-245 copy (the
ORLM suite's) and of the original IndustryOR are graded in real runs, in the real sandbox, under
``--protocol orlm`` and under the default protocol, and the verdicts that differ are asserted
with the reason ORLM's harness gives for them."""

from __future__ import annotations

import json
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.reference import answer_program
from trex_eval.benchmarks import load_benchmark
from trex_eval.grading import get_rule
from trex_eval.grading.registry import family
from trex_eval.protocols import get_protocol
from trex_eval.protocols import orlm as orlm_package
from trex_eval.protocols.orlm import ADD_SCRIPT
from trex_eval.protocols.orlm import objective as orlm_objective
from trex_eval.protocols.orlm.extract import extract_first_python
from trex_eval.protocols.plan import plan_for
from trex_eval.records import ObjectiveReference, SampleRecord, Verdict
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

ORLM_SOURCE = "Cardinal-Operations/ORLM@38712c9 eval/execute.py"


def coptpy(value: float | None, *, name: str = "model", solve: bool = True, tail: str = "") -> str:
    """A coptpy program: minimise x subject to x >= value (infeasible rows for ``None``)."""
    rows = (
        [f"{name}.addConstr(x >= {value!r})"]
        if value is not None
        else [
            f"{name}.addConstr(x >= 1)",
            f"{name}.addConstr(x <= 0)",
        ]
    )
    lines = [
        "import coptpy as cp",
        "from coptpy import COPT",
        "",
        "env = cp.Envr()",
        f'{name} = env.createModel("orlm-test")',
        f"{name}.setParam(COPT.Param.Logging, 0)",
        f'x = {name}.addVar(lb=-COPT.INFINITY, name="x")',
        *rows,
        f"{name}.setObjective(x, COPT.MINIMIZE)",
        *([f"{name}.solve()"] if solve else []),
        tail,
    ]
    return "\n".join(lines) + "\n"


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is the model.\n\n```{tag}\n{code}```\n"


def _value(problem_id: str, problems: dict[str, ObjectiveReference]) -> float:
    value = problems[problem_id].value
    assert value is not None
    return value


def _run(
    tmp_path: Path, data_dir: Path, name: str, completions: dict[str, str], protocol: str
) -> dict[str, SampleRecord]:
    recorded = tmp_path / f"{name}-{protocol}.jsonl"
    recorded.write_text(
        "".join(json.dumps({"problem_id": k, "completion": v}) + "\n" for k, v in completions.items())
    )
    model = BackendSpec(name="recorded", backend="replay", options={"path": str(recorded)})
    spec = RunSpec(model=model, benchmarks=(name,), protocol=protocol, problem_ids={name: tuple(completions)})
    out = tmp_path / f"run-{name}-{protocol}"
    result = pipeline.run(spec, RunOptions(data_dir=data_dir, out=out, show_progress=False))
    store = RunStore(result.run_dir)
    manifest = store.read_manifest()
    assert manifest.settings.protocol == protocol
    if protocol == "orlm":
        (entry,) = manifest.settings.benchmarks
        assert (entry.rule, entry.extractor) == ("orlm-compat@2", "orlm-first-python")
        assert entry.limits is not None and (entry.limits.wall_s, entry.limits.cpu_s) == (300.0, 300.0)
        assert result.summary.run.protocol == "orlm" and "orlm" in result.summary.run.display
    return {record.problem_id: record for record in store.iter_samples()}


def test_orlm_verdicts_differ_from_the_default_where_its_harness_does(tmp_path: Path, data_dir: Path) -> None:
    bench = load_benchmark("nl4opt-245", data_dir=data_dir)
    refs = {p.id: p.reference for p in bench.problems if isinstance(p.reference, ObjectiveReference)}
    assert refs["16"].label == refs["27"].label == "No Best Solution"
    v = {k: _value(k, refs) for k in ("0", "1", "2", "3", "4", "5", "7")}
    completions = {
        # Both agree: a coptpy `model` at the label.
        "0": fenced(coptpy(v["0"])),
        # ORLM runs the FIRST ```python block (a draft at twice the label); the default the last.
        "1": fenced(coptpy(2 * v["1"])) + "\nOn reflection, fixed:\n" + fenced(coptpy(v["1"])),
        # The model bound to `prob`: ORLM's appended `model.status` raises NameError.
        "2": fenced(coptpy(v["2"], name="prob")),
        # gurobipy without COPT imported: the appended `COPT.OPTIMAL` raises NameError.
        "3": fenced(answer_program(refs["3"], library="gurobipy")),
        # sys.exit() after the solve: ORLM's appended lines never run, nothing is printed.
        "4": fenced(coptpy(v["4"], tail="import sys\nsys.exit(0)")),
        # 3 % off: ORLM's round + 5 % passes it, strict (1e-4 relative) does not.
        "5": fenced(coptpy(round(v["5"] * 1.03))),
        # A ```py fence: ORLM finds no ```python, so "No code"; the default reads it.
        "7": fenced(coptpy(v["7"]), tag="py"),
        # 'No Best Solution' labels: an infeasible coptpy model passes both ...
        "16": fenced(coptpy(None)),
        # ... a model never solved prints 'No Best Solution' to ORLM, but there is nothing the
        # harness can verify: unverified (ORLM counts it; orlm-compat:unverified=true would).
        "27": fenced(coptpy(v["0"], solve=False)),
    }
    orlm = _run(tmp_path, data_dir, "nl4opt-245", completions, "orlm")
    default = _run(tmp_path, data_dir, "nl4opt-245", completions, "default")
    verdicts = {k: (default[k].grade.verdict, orlm[k].grade.verdict) for k in completions}
    assert verdicts == {
        "0": (Verdict.CORRECT, Verdict.CORRECT),
        "1": (Verdict.CORRECT, Verdict.WRONG),
        "2": (Verdict.CORRECT, Verdict.RUNTIME_ERROR),
        "3": (Verdict.CORRECT, Verdict.RUNTIME_ERROR),
        "4": (Verdict.CORRECT, Verdict.WRONG),
        "5": (Verdict.WRONG, Verdict.CORRECT),
        "7": (Verdict.CORRECT, Verdict.NO_CODE),
        "16": (Verdict.CORRECT, Verdict.CORRECT),
        "27": (Verdict.NO_SOLVE, Verdict.UNVERIFIED),
    }
    assert {r.grade.rule for r in orlm.values()} == {"orlm-compat@2"}
    reasons = {k: r.grade.reason for k, r in orlm.items()}
    # The number compared is the harness's re-solve of `model`, which the printed answer agreed with.
    assert (
        f"Just print the best solution: {v['0']!r}; graded: the harness's HiGHS re-solve {v['0']!r} vs "
        f"label {v['0']!r}: match (rounded: {round(v['0'])} vs "
    ) in reasons["0"]
    assert orlm["1"].program.reason.endswith("the first of 2 ```python block")
    assert f"Just print the best solution: {2 * v['1']!r}" in reasons["1"] and "no match" in reasons["1"]
    assert "name 'model' is not defined" in reasons["2"] and "module-level name `model`" in reasons["2"]
    assert "name 'COPT' is not defined" in reasons["3"]
    assert "sys.exit()" in reasons["4"]
    assert "(rounded: 221450 vs 215000, |Δ|/|gt| 0.03, tolerance 0.05); re-solve agrees" in reasons["5"]
    assert orlm["7"].program.code is None and "no ```python fence" in orlm["7"].program.reason
    assert "No Best Solution vs label No Best Solution: match; re-solve agrees" in reasons["16"]
    assert "not verified by the harness: no solve was observed" in reasons["27"]
    # The job is the program plus ORLM's lines, verbatim; the recorded program is what the model wrote.
    problem = next(p for p in bench.problems if p.id == "0")
    code = orlm["0"].program.code
    assert (
        code is not None
        and plan_for(bench, protocol="orlm").job(problem, orlm["0"].program).code == code + ADD_SCRIPT
    )


def test_a_numeric_sentinel_is_a_number_to_orlm(tmp_path: Path, data_dir: Path) -> None:
    """IndustryOR's -99999 ('only a model is asked for') is 'no optimum' by default, but ORLM's
    harness compares it as a number: an infeasible model's 'No Best Solution' does not match."""
    bench = load_benchmark("industryor", data_dir=data_dir)
    sentinel = next(
        p
        for p in bench.problems
        if isinstance(p.reference, ObjectiveReference) and p.reference.label.strip() == "-99999"
    )
    completions = {sentinel.id: fenced(coptpy(None))}
    default = _run(tmp_path, data_dir, "industryor", completions, "default")[sentinel.id]
    orlm = _run(tmp_path, data_dir, "industryor", completions, "orlm")[sentinel.id]
    assert (default.grade.verdict, orlm.grade.verdict) == (Verdict.CORRECT, Verdict.WRONG)
    assert "No Best Solution vs label -99999.0: no match" in orlm.grade.reason


def test_the_first_python_block_is_sliced_as_orlm_slices_it() -> None:
    assert extract_first_python("no fence at all")[0] is None
    assert extract_first_python("```python\n   \n```")[0] is None
    assert extract_first_python("```py\nx = 1\n```")[0] is None
    # Not stripped; later blocks ignored; an unclosed fence loses the last character.
    assert extract_first_python("a\n```python\nx = 1\n```\n```python\ny = 2\n```")[0] == "\nx = 1\n"
    code, reason = extract_first_python("```python\nx = 12")
    assert code == "\nx = 1" and "unclosed" in reason


def test_the_protocol_and_its_rule_name_their_source() -> None:
    assert get_protocol("orlm").name == "orlm"
    # Every deviation is stated with the file it reproduces.
    assert ORLM_SOURCE in (orlm_package.__doc__ or "") and ORLM_SOURCE in (orlm_objective.__doc__ or "")
    rule = get_rule("orlm-compat")
    assert rule.spec == "orlm-compat@2" and f"(source: {ORLM_SOURCE})" in rule.description
    assert ORLM_SOURCE in family("orlm-compat").summary
    trusting = get_rule("orlm-compat:unverified=true")
    assert trusting.spec == "orlm-compat@2:unverified=true" and get_rule(trusting.spec) == trusting
    assert "could not verify count as correct" in trusting.description


def test_unverified_true_counts_a_claim_orlm_counts(tmp_path: Path, data_dir: Path) -> None:
    """``orlm-compat:unverified=true``: the unsolved model against a 'No Best Solution' label is
    correct, as ORLM scores it, and the reason still says it was not verified."""
    recorded = tmp_path / "r.jsonl"
    recorded.write_text(
        json.dumps({"problem_id": "27", "completion": fenced(coptpy(1.0, solve=False))}) + "\n"
    )
    model = BackendSpec(name="recorded", backend="replay", options={"path": str(recorded)})
    spec = RunSpec(
        model=model,
        benchmarks=("nl4opt-245",),
        protocol="orlm",
        rules=("orlm-compat:unverified=true",),
        problem_ids={"nl4opt-245": ("27",)},
    )
    result = pipeline.run(spec, RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False))
    (record,) = RunStore(result.run_dir).iter_samples()
    assert record.grade.verdict is Verdict.CORRECT
    assert record.grade.rule == "orlm-compat@2:unverified=true"
    assert "counted although unverified: no solve was observed" in record.grade.reason
