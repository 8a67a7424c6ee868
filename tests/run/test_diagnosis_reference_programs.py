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


def _without_first_constraint(text: str) -> str:
    for match in CONSTRAINT.finditer(text):
        if match.group(0).count("(") == match.group(0).count(")"):
            return text[: match.start()] + f"{match.group(1)}pass" + text[match.end() :]
    return text


def test_a_dropped_constraint_is_named_against_the_reference_programs_model(
    tmp_path: Path, data_dir: Path
) -> None:
    problems = load_benchmark("b4o-feasible", data_dir=data_dir).problems[:10]
    recorded = tmp_path / "dropped.jsonl"
    recorded.write_text(
        "".join(
            json.dumps(
                {"problem_id": p.id, "completion": _without_first_constraint(reference_completion_text(p))}
            )
            + "\n"
            for p in problems
        )
    )
    model = BackendSpec(
        name="dropped",
        backend="replay",
        model="dropped",
        options={"path": str(recorded)},
        sampling=SamplingParams(),
    )
    result = pipeline.run(
        RunSpec(model=model, benchmarks=("b4o-feasible",), limit=10),
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
    assert all(d.detail.startswith("against the reference program's model: ") for d in named.values())
    assert "'R0'" in named["BENCH4OPT_8"].detail  # the reference's rows, by name
    assert not any(
        g.diagnosis and g.diagnosis.category is DiagnosisCategory.UNEXPLAINED for g in wrong.values()
    )
    # The verdicts are the rule's: the same run without diagnoses grades every sample alike.
    plain = pipeline.run(
        RunSpec(model=model, benchmarks=("b4o-feasible",), limit=10),
        RunOptions(data_dir=data_dir, out=tmp_path / "plain", show_progress=False, diagnose=False),
    )
    verdicts = {s.problem_id: s.grade.verdict for s in RunStore(plain.run_dir).iter_samples()}
    assert verdicts == {i: s.grade.verdict for i, s in samples.items()}
