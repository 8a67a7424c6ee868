"""The structural half of an objective diagnosis, end to end: B4O-Feasible reference programs
with one constraint statement removed are graded by a real replayed run; where no single edit of
the captured model reaches the label, the reference program's own model (run once in the sandbox)
names the missing rows, and a verdict never changes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.records import DiagnosisCategory, SamplingParams, Verdict
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

CONSTRAINT = re.compile(r"^(\s*)\w+\.addConstr\(.*\)\s*$", re.M)
OPTIMIZE = re.compile(r"^([ \t]*)(\w+)\.optimize\(\)", re.M)


def _scaled_objective(text: str) -> str:
    """The program with its objective times 100 just before its last solve."""
    last = list(OPTIMIZE.finditer(text))[-1]
    indent, model = last.group(1), last.group(2)
    scale = (
        f"{indent}{model}.update()\n"
        f"{indent}{model}.setObjective(100 * {model}.getObjective(), {model}.ModelSense)\n"
    )
    return text[: last.start()] + scale + text[last.start() :]


def _without_first_constraint(text: str) -> str:
    for match in CONSTRAINT.finditer(text):
        if match.group(0).count("(") == match.group(0).count(")"):
            return text[: match.start()] + f"{match.group(1)}pass" + text[match.end() :]
    return text


def test_a_dropped_constraint_is_named_against_the_reference_programs_model(
    tmp_path: Path, data_dir: Path
) -> None:
    problems = load_benchmark("b4o-feasible", data_dir=data_dir).problems[:14]
    edited = {p.id: _without_first_constraint(reference_completion_text(p)) for p in problems}
    scaled_one = next(p for p in problems if getattr(p.reference, "value", None))  # 100 × 0 is no change
    edited[scaled_one.id] = _scaled_objective(reference_completion_text(scaled_one))
    recorded = tmp_path / "dropped.jsonl"
    recorded.write_text(
        "".join(json.dumps({"problem_id": i, "completion": t}) + "\n" for i, t in edited.items())
    )
    model = BackendSpec(
        name="dropped",
        backend="replay",
        model="dropped",
        options={"path": str(recorded)},
        sampling=SamplingParams(),
    )
    result = pipeline.run(
        RunSpec(model=model, benchmarks=("b4o-feasible",), limit=14),
        RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False, diagnose=True),
    )
    samples = {s.problem_id: s for s in RunStore(result.run_dir).iter_samples()}
    wrong = {i: s.grade for i, s in samples.items() if s.grade.verdict is Verdict.WRONG}
    assert len(wrong) >= 2, {i: s.grade.verdict for i, s in samples.items()}
    named = {
        i: g.diagnosis
        for i, g in wrong.items()
        if g.diagnosis and g.diagnosis.category is DiagnosisCategory.CONSTRAINT_MISSING
    }
    assert "BENCH4OPT_8" in named and "BENCH4OPT_9" in named, {i: g.diagnosis for i, g in wrong.items()}
    # Without that row BENCH4OPT_12's optimum is a tenth of the label, which the value search alone
    # calls objective_scaled; the reference program's model shows the row is missing.
    assert "BENCH4OPT_12" in named
    scaled = wrong[scaled_one.id].diagnosis  # a scaled objective stays what it is
    assert scaled is not None and scaled.category is DiagnosisCategory.OBJECTIVE_SCALED
    assert all(d.detail.startswith("against the reference program's model: ") for d in named.values())
    assert "'R0'" in named["BENCH4OPT_8"].detail  # the reference's rows, by name
    assert not any(
        g.diagnosis and g.diagnosis.category is DiagnosisCategory.UNEXPLAINED for g in wrong.values()
    )
    # The verdicts are the rule's: the same run without diagnoses grades every sample alike.
    plain = pipeline.run(
        RunSpec(model=model, benchmarks=("b4o-feasible",), limit=14),
        RunOptions(data_dir=data_dir, out=tmp_path / "plain", show_progress=False, diagnose=False),
    )
    verdicts = {s.problem_id: s.grade.verdict for s in RunStore(plain.run_dir).iter_samples()}
    assert verdicts == {i: s.grade.verdict for i, s in samples.items()}
