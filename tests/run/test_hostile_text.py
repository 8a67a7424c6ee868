"""Issue 28, "storing never fails": what a program (or a model) writes cannot stop a run at its
store, nor bloat its records past the budget. Real runs: replayed completions, the real sandbox,
the real rules, the real CLI where the user would meet the failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_process import trex_eval

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.records import ExecStatus, SampleRecord, SamplingParams, Verdict
from trex_eval.run import pipeline as runner
from trex_eval.run.regrade import CompletionFields, plan_regrade, run_regrade
from trex_eval.run.session import Session
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import SAMPLES, RunStore

# Python escapes in the program's source (ASCII), so each lone surrogate exists only at run time:
# in an exception message, a written file's name, a module-level variable's name and a class name.
_SURROGATES = r"""
import pulp
p = pulp.LpProblem("m", pulp.LpMinimize)
x = pulp.LpVariable("x", lowBound=0)
p += x
p += x >= 1
p.solve(pulp.PULP_CBC_CMD(msg=0))
globals()["prob\udcff"] = p
class Model:
    pass
Model.__qualname__ = "Model\udcff"
m = Model()
with open("out\udcff.lp", "w") as handle:
    handle.write("Minimize\n obj: x\nSubject To\n c: x >= 1\nEnd\n")
print("the \x00 output")
raise ValueError("message \udcff")
"""


def _samples(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / SAMPLES).read_text(encoding="utf-8").splitlines()]


def test_lone_surrogates_from_a_program_and_a_model_are_stored_graded_and_resumed(
    tmp_path: Path, data_dir: Path
) -> None:
    """A lone surrogate in an exception message, a file name, a variable name and a class name
    (and in the completion text itself) used to fail `grade` with exit 1 and no sample stored,
    and `run --resume` crashed again at the same sample. Now every sample is stored, with U+FFFD
    in place of each, and both commands finish."""
    completions = tmp_path / "completions.jsonl"
    text = "A broken character the model wrote: \udcff\n\n```python" + _SURROGATES + "```\n"
    records = [
        {"problem_id": "0", "completion": text},
        {"problem_id": "1", "completion": "```python\nprint(1)\n```"},
    ]
    # json.dumps escapes the lone surrogate ("\udcff"), as a server or another tool would.
    completions.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    run_dir = tmp_path / "run"
    common = ("--no-progress", "--data-dir", str(data_dir))
    trex_eval(
        "grade", "--completions", str(completions), "--benchmark", "nl4opt", "-o", str(run_dir), *common,
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    stored = {record["problem_id"]: record for record in _samples(run_dir)}
    assert set(stored) == {"0", "1"}
    hostile = SampleRecord.model_validate(stored["0"])
    execution = hostile.execution
    assert execution.status is ExecStatus.RUNTIME_ERROR and hostile.grade.verdict is Verdict.RUNTIME_ERROR
    assert execution.detail.startswith("ValueError: message \ufffd")
    assert {"prob\ufffd", "m"} <= {binding.name for binding in execution.bindings}
    assert "__main__.Model\ufffd" in {binding.library for binding in execution.bindings}
    assert [item.name for item in execution.written_files] == ["out\ufffd.lp"]
    assert "the \ufffd output" in execution.stdout_tail
    assert "A broken character the model wrote: \ufffd" in hostile.completion.text
    assert hostile.program.code is not None and "\\udcff" in hostile.program.code
    assert Verdict(stored["1"]["grade"]["verdict"]) is Verdict.NO_SOLVE

    # The run is interrupted before its samples are stored: the resume runs them again, to the end.
    (run_dir / SAMPLES).write_text("", encoding="utf-8")
    trex_eval("run", "--resume", str(run_dir), *common, cwd=tmp_path, timeout=300)
    assert {record["problem_id"] for record in _samples(run_dir)} == {"0", "1"}
    assert [r.execution.detail for r in RunStore(run_dir).iter_samples() if r.problem_id == "0"] == [
        execution.detail
    ]
    # A re-grade reads the stored records back and grades them again.
    trex_eval("grade", str(run_dir), "-o", str(tmp_path / "again"), *common, cwd=tmp_path, timeout=300)
    assert {r["problem_id"]: r["grade"]["verdict"] for r in _samples(tmp_path / "again")} == {
        "0": "runtime_error",
        "1": "no_solve",
    }


_PAD_TO_8_MIB = """
import os
with open("model.lp", "ab") as handle:
    handle.write(b"\\x01" * ((8 << 20) - os.path.getsize("model.lp")))
"""


def test_an_8_mib_model_file_of_control_bytes_stays_within_the_record_budget(
    tmp_path: Path, data_dir: Path
) -> None:
    """The reference program's LP file, padded after its ``End`` with control bytes to 8 MiB (the
    model-file budget): JSON spells each as ``\\u0001``, and the stored line used to take 48 MiB
    of its 16 MiB budget. Now it fits, keeps the LP at the file's start, and grades correct, in
    the run and in a re-grade that reads the stored execution."""
    problem = load_benchmark("b4o-orgeval", data_dir=data_dir).problems[0]
    text = reference_completion_text(problem).replace("\n```\n", _PAD_TO_8_MIB + "```\n")
    completions = tmp_path / "completions.jsonl"
    completions.write_text(json.dumps({"problem_id": problem.id, "completion": text}) + "\n")
    model = BackendSpec(
        name="r", backend="replay", model="x", options={"path": str(completions)}, sampling=SamplingParams()
    )
    run_dir = tmp_path / "run"
    runner.run(
        RunSpec(model=model, benchmarks=("b4o-orgeval",), limit=1),
        RunOptions(data_dir=data_dir, out=run_dir, show_progress=False),
    )
    (line,) = (run_dir / SAMPLES).read_bytes().splitlines()
    assert len(line) <= 16 << 20
    (record,) = RunStore(run_dir).iter_samples()
    assert record.grade.verdict is Verdict.CORRECT, record.grade.reason
    (written,) = record.execution.written_files
    assert written.name == "model.lp" and written.content.split("End", 1)[1].strip("\n\ufffd") == ""
    assert "model.lp: content cut to its first 8.0 of 24.0 MiB" in record.execution.detail
    regrade = plan_regrade(
        run_dir,
        data_dir=data_dir,
        rules=(),
        protocol="default",
        fields=CompletionFields(),
        out=tmp_path / "again",
        show_progress=False,
    )
    (result,) = run_regrade(regrade)
    assert result.reused_now == 1 and result.executed_now == 0
    (again,) = RunStore(tmp_path / "again").iter_samples()
    assert again.grade.verdict is Verdict.CORRECT


def test_a_record_that_cannot_be_stored_becomes_a_harness_failure_and_the_run_goes_on(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness bug hands the store a record it cannot serialise (a lone surrogate where no
    record type cleans it, put there past validation): that sample is stored as a
    ``harness_error`` saying why, the others as graded, and a resume has nothing left to do."""
    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "".join(
            json.dumps({"problem_id": str(i), "completion": "```python\nprint(1)\n```"}) + "\n"
            for i in range(2)
        )
    )
    model = BackendSpec(
        name="r", backend="replay", model="x", options={"path": str(completions)}, sampling=SamplingParams()
    )
    original = Session._grade

    async def broken(self: Any, item: Any, problem: Any, *args: Any, **kwargs: Any) -> SampleRecord:
        record: SampleRecord = await original(self, item, problem, *args, **kwargs)
        if problem.id != "0":
            return record
        execution = record.execution.model_copy(update={"isolation": "bwrap\udcff"})
        return record.model_copy(update={"execution": execution})

    monkeypatch.setattr(Session, "_grade", broken)
    spec = RunSpec(model=model, benchmarks=("nl4opt",), limit=2)
    options = RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False)
    result = runner.run(spec, options)
    assert result.graded_now == 2
    verdicts = {r.problem_id: r for r in RunStore(tmp_path / "run").iter_samples()}
    failed = verdicts["0"]
    assert failed.grade.verdict is Verdict.HARNESS_ERROR and failed.grade.verdict.is_environment_failure
    assert (
        "the harness could not store this sample's record: PydanticSerializationError" in failed.grade.reason
    )
    assert verdicts["1"].grade.verdict is Verdict.NO_SOLVE
    (bench,) = result.summary.benchmarks
    assert bench.environment_failures == 1
    resumed = runner.run(runner.resume_spec(tmp_path / "run"), options)
    assert resumed.graded_now == 0
