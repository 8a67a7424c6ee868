"""Grading a YAML-only benchmark end to end with the real CLI, the real sandbox and real solvers:
reference programs, recorded programs in nine solver libraries (``--code-field``), and a recorded
coptpy completions file from "another tool" under the ``strict`` and ``orlm`` rules.

Expected verdicts are hand-checked (examples/or-word-problems/README.md explains each one)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_process import trex_eval

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "or-word-problems"
COPTPY_TEXT = "response.choices.0.message.content"
COPTPY_FIELDS = ("--id-field", "task_id", "--text-field", COPTPY_TEXT)
"""Where the example's coptpy completions file keeps the problem id and the answer text."""

# The library each recorded solution in problems.jsonl solves with (field solution_library), as
# the sandbox hooks name it.
SOLUTION_LIBRARIES = {
    "product-mix": "pulp",
    "diet": "scipy.linprog",
    "transportation": "ortools.linear_solver",
    "assignment": "pyscipopt",
    "knapsack": "highspy",
    "night-shift": "gurobipy",
    "flour-mill": "cvxpy",
    "facility-location": "pyomo",
    "overtime": "coptpy",
    "production-plan": "ortools.sat",
}

# completions-coptpy.jsonl, one line per problem: what the program does, and its verdicts.
#   product-mix        right model; prints only the number of desks (30), objective 4100
#   diet               misreads beans as 120 kcal: optimum 247.6/57 = 4.3439 vs 4.40 (-1.3 %)
#   transportation     maximises instead of minimising: 760 vs 630
#   assignment         continuous x in [0, 1]; the assignment polytope is integral: 34
#   knapsack           continuous x in [0, 1]: LP bound 23 + 24 + 15 * 7/8 = 60.125 vs 60
#   night-shift        right model: infeasible
#   flour-mill         invents a 100 t cap per flour: 30 * 100 + 20 * 100 = 5000, reference unbounded
#   facility-location  reads data.json, right model: 490
#   overtime           right model: 0
#   production-plan    no program at all, only the (right) number in prose
# strict: |Δ| <= 1e-6 + 1e-4 |ref|. orlm: round both to integers, then |Δ| <= 0.05 |ref|, so
# diet (4 vs 4) and knapsack (60 vs 60) pass under orlm only.
COPTPY_PREDICTED = {
    "product-mix": 4100.0,
    "diet": 247.6 / 57,
    "transportation": 760.0,
    "assignment": 34.0,
    "knapsack": 60.125,
    "flour-mill": 5000.0,
    "facility-location": 490.0,
    "overtime": 0.0,
}
COPTPY_STRICT = {
    "product-mix": "correct",
    "diet": "wrong",
    "transportation": "wrong",
    "assignment": "correct",
    "knapsack": "wrong",
    "night-shift": "correct",
    "flour-mill": "wrong",
    "facility-location": "correct",
    "overtime": "correct",
    "production-plan": "no_code",
}
COPTPY_ORLM = COPTPY_STRICT | {"diet": "correct", "knapsack": "correct"}


def _cli(
    *args: str, cwd: Path, data_dir: Path, config: Path | None = None
) -> subprocess.CompletedProcess[str]:
    quiet = ["--no-progress"] if args[0] in ("run", "grade") else []
    env = {"TREX_CONFIG_DIR": str(config)} if config is not None else None
    return trex_eval(*args, *quiet, "--data-dir", str(data_dir), columns=250, env=env, cwd=cwd, timeout=600)


def _samples(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    by_id = {r["problem_id"]: r for r in records}
    assert len(by_id) == len(records)
    return by_id


def _verdicts(run_dir: Path) -> dict[str, str]:
    return {pid: r["grade"]["verdict"] for pid, r in _samples(run_dir).items()}


def _summary(run_dir: Path) -> dict[str, Any]:
    (entry,) = json.loads((run_dir / "summary.json").read_text())["benchmarks"]
    return entry  # type: ignore[no-any-return]


def test_messy_benchmark_runs_with_reference_programs(tmp_path: Path, data_dir: Path) -> None:
    """``--model reference`` writes, for each reference, a program with exactly that optimum or
    status: every messy label must have been read as the value or status it means."""
    run_dir = tmp_path / "reference"
    _cli(
        "run",
        "--model",
        "reference",
        "--benchmark-file",
        str(EXAMPLE / "messy.yaml"),
        "--out",
        str(run_dir),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    samples = _samples(run_dir)
    assert {pid: r["grade"]["verdict"] for pid, r in samples.items()} == dict.fromkeys(
        SOLUTION_LIBRARIES, "correct"
    )
    statuses = {pid: r["execution"]["solves"][-1]["status"] for pid, r in samples.items()}
    assert statuses["night-shift"] == "infeasible" and statuses["flour-mill"] == "unbounded"
    assert samples["overtime"]["grade"]["evidence"]["predicted"] == 0.0
    assert samples["product-mix"]["grade"]["evidence"]["reference"] == 4100.0
    entry = _summary(run_dir)
    assert entry["benchmark"] == "or-word-problems-messy" and entry["prompt_set"] == "neutral"
    prompt = samples["facility-location"]["prompt"]["messages"][-1]["content"]
    assert "data.json" in prompt and "three candidate sites" in prompt


def test_recorded_programs_in_nine_libraries_grade_by_their_hooks(tmp_path: Path, data_dir: Path) -> None:
    """The solution field of problems.jsonl holds one complete program per problem, each in another
    library; graded as already-extracted code (``--code-field``) against the messy labels."""
    run_dir = tmp_path / "solutions"
    _cli(
        "grade",
        str(EXAMPLE / "problems.jsonl"),
        "--benchmark",
        str(EXAMPLE / "messy.yaml"),
        "--id-field",
        "id",
        "--code-field",
        "solution",
        "--out",
        str(run_dir),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    samples = _samples(run_dir)
    assert {pid: r["grade"]["verdict"] for pid, r in samples.items()} == dict.fromkeys(
        SOLUTION_LIBRARIES, "correct"
    )
    libraries = {pid: r["execution"]["solves"][-1]["library"] for pid, r in samples.items()}
    assert libraries == SOLUTION_LIBRARIES
    assert {r["program"]["extractor"] for r in samples.values()} == {"raw"}
    assert "Cardinal Optimizer" in samples["overtime"]["execution"]["stdout_tail"]  # coptpy's banner


def test_coptpy_completions_under_strict_and_orlm(tmp_path: Path, data_dir: Path) -> None:
    """A registered benchmark, a completions file with another tool's field layout (``--completions``,
    dotted ``--text-field``), graded with the benchmark's ``strict`` rule, then the same run re-graded
    with ``--rule orlm``."""
    config = tmp_path / "config"
    registered = _cli(
        "benchmarks", "add", str(EXAMPLE / "benchmark.yaml"), cwd=tmp_path, data_dir=data_dir, config=config
    )
    assert "registered benchmark 'or-word-problems'" in registered.stdout
    strict_dir, orlm_dir = tmp_path / "strict", tmp_path / "orlm"
    _cli(
        "grade",
        "--completions",
        str(EXAMPLE / "completions-coptpy.jsonl"),
        "--benchmark",
        "or-word-problems",
        *COPTPY_FIELDS,
        "--out",
        str(strict_dir),
        cwd=tmp_path,
        data_dir=data_dir,
        config=config,
    )
    _cli(
        "grade",
        str(strict_dir),
        "--rule",
        "orlm",
        "--out",
        str(orlm_dir),
        cwd=tmp_path,
        data_dir=data_dir,
        config=config,
    )

    assert _verdicts(strict_dir) == COPTPY_STRICT
    assert _verdicts(orlm_dir) == COPTPY_ORLM
    strict, orlm = _summary(strict_dir), _summary(orlm_dir)
    assert (strict["rule"], strict["correct_samples"], strict["pass_at_1"]) == ("strict@3", 5, 0.5)
    assert (orlm["rule"], orlm["correct_samples"], orlm["pass_at_1"]) == ("orlm@3", 7, 0.7)

    samples = _samples(strict_dir)
    for pid, value in COPTPY_PREDICTED.items():
        solve = samples[pid]["execution"]["solves"][-1]
        assert solve["library"] == "coptpy"
        assert solve["objective"] == pytest.approx(value, rel=1e-9, abs=1e-9), pid
    assert samples["night-shift"]["execution"]["solves"][-1]["status"] == "infeasible"
    # The hooks decide, not the printout: COPT's banner and log go to stdout, and the product-mix
    # program prints only its number of desks.
    product_mix = samples["product-mix"]["execution"]
    assert (
        "Cardinal Optimizer" in product_mix["stdout_tail"]
        and "Desks to make: 30.0" in product_mix["stdout_tail"]
    )
    assert samples["production-plan"]["execution"]["status"] == "no_code"


def test_malformed_rows_are_skipped_and_the_rest_runs(tmp_path: Path, data_dir: Path) -> None:
    run_dir = tmp_path / "malformed"
    _cli(
        "run",
        "--model",
        "reference",
        "--benchmark-file",
        str(EXAMPLE / "malformed.yaml"),
        "--out",
        str(run_dir),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    assert _verdicts(run_dir) == dict.fromkeys(["product-mix", "facility-location", "knapsack"], "correct")
    assert _summary(run_dir)["problems"] == 3


def test_partial_completions_are_counted_honestly(tmp_path: Path, data_dir: Path) -> None:
    """Issue 16: a file covering some problems is graded on those, says how many it left out, and
    names unknown ids and repeats; --all-problems keeps the denominator, the rest `missing` (‡)."""
    lines = (EXAMPLE / "completions-coptpy.jsonl").read_text().splitlines()
    stranger = json.dumps({"task_id": "no-such-problem", "response": json.loads(lines[0])["response"]})
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join([*lines[:3], lines[0], stranger]) + "\n")
    args = ("--benchmark", str(EXAMPLE / "benchmark.yaml"), *COPTPY_FIELDS)
    present = _cli(
        "grade",
        "--completions",
        str(partial),
        *args,
        "-o",
        str(tmp_path / "present"),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    warnings = " ".join(present.stderr.split())
    assert (
        "grading the 3 of 10 problems of or-word-problems that partial.jsonl holds: 7 problems are left out"
        in warnings
    )
    assert (
        "1 id(s) in partial.jsonl are not problems of or-word-problems, ignored: 'no-such-problem'"
        in warnings
    )
    assert "1 id(s) occur more than 1 time(s) in partial.jsonl, e.g. 'product-mix'" in warnings
    summary = _summary(tmp_path / "present")
    assert (summary["problems"], summary["missing_samples"], summary["api_errors"]) == (3, 0, 0)
    full = _cli(
        "grade", "--completions", str(partial), *args, "--all-problems", "-o", str(tmp_path / "all"),
        cwd=tmp_path, data_dir=data_dir,
    )  # fmt: skip
    summary = _summary(tmp_path / "all")
    assert (summary["problems"], summary["missing_samples"], summary["api_errors"]) == (10, 7, 0)
    assert summary["verdicts"]["missing"] == 7 and summary["outcomes"]["missing"] == 7
    assert "‡" in full.stdout
    # The file is pinned by its sha256: resuming asks it nothing again and stores nothing twice.
    lines_before = (tmp_path / "all" / "samples.jsonl").read_text().count("\n")
    resumed = _cli("run", "--resume", str(tmp_path / "all"), cwd=tmp_path, data_dir=data_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "all" / "samples.jsonl").read_text().count("\n") == lines_before == 10
    assert _summary(tmp_path / "all")["verdicts"]["missing"] == 7
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text(stranger + "\n")
    refused = trex_eval(
        "grade", "--completions", str(nothing), *args, "--data-dir", str(data_dir), cwd=tmp_path, expect=2
    )
    assert "none of the 1 ids in" in refused.stderr and not (tmp_path / "results").exists()


def test_several_rules_reuse_the_stored_executions(tmp_path: Path, data_dir: Path) -> None:
    """Issue 16: `grade RUN --rule orlm --rule strict` runs no program: one directory, a run per
    rule, the hand-checked verdicts of each; a protocol change says the programs run again."""
    first = tmp_path / "first"
    args = ("--benchmark", str(EXAMPLE / "benchmark.yaml"), *COPTPY_FIELDS)
    _cli(
        "grade",
        "--completions",
        str(EXAMPLE / "completions-coptpy.jsonl"),
        *args,
        "-o",
        str(first),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    rules = tmp_path / "rules"
    done = _cli(
        "grade",
        str(first),
        "--rule",
        "orlm",
        "--rule",
        "strict",
        "-o",
        str(rules),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    assert _verdicts(rules / "orlm@3") == COPTPY_ORLM and _verdicts(rules / "strict@3") == COPTPY_STRICT
    assert "(18 stored executions reused, 0 programs run)" in done.stdout
    board = (rules / "leaderboard.md").read_text()
    assert "or-word-problems[orlm@3]" in board and "or-word-problems[strict@3]" in board
    for rule in ("orlm@3", "strict@3"):
        assert json.loads((rules / rule / "manifest.json").read_text())["provenance"]["sandbox"][
            "not_started"
        ]
    again = _cli(
        "grade",
        str(first),
        "--protocol",
        "trex-compat",
        "-o",
        str(tmp_path / "compat"),
        cwd=tmp_path,
        data_dir=data_dir,
    )
    assert "programs run again (the protocol, the extractor, the sandbox limits differ" in " ".join(
        again.stderr.split()
    )


def test_unverified_passes_are_named_at_the_end_of_a_run(tmp_path: Path, data_dir: Path) -> None:
    """A passing claim the harness cannot re-derive (an SOS constraint is not captured as data) is
    ``unverified``; the run's last lines say how many, where a bare score would only look lower."""
    from trex_eval.benchmarks import load_benchmark
    from trex_eval.records import ObjectiveReference

    problem = load_benchmark("nl4opt", data_dir=data_dir).problems[0]
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
    code = "\n".join(
        [
            "import gurobipy as gp",
            "from gurobipy import GRB",
            "model = gp.Model()",
            "model.Params.OutputFlag = 0",
            'x = model.addVar(lb=-GRB.INFINITY, name="x")',
            'y = model.addVar(name="y")',
            f"model.addConstr(x >= {problem.reference.value!r})",
            "model.addSOS(GRB.SOS_TYPE1, [x, y])",
            "model.setObjective(x, GRB.MINIMIZE)",
            "model.optimize()",
        ]
    )
    completions = tmp_path / "c.jsonl"
    completions.write_text(
        json.dumps({"problem_id": problem.id, "completion": f"```python\n{code}\n```\n"}) + "\n"
    )
    done = _cli(
        "grade", "--completions", str(completions), "--benchmark", "nl4opt", "--out", str(tmp_path / "run"),
        cwd=tmp_path, data_dir=data_dir,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _verdicts(tmp_path / "run") == {problem.id: "unverified"}
    assert (
        "note: nl4opt: 1 passing claim(s) the harness could not verify, not counted as correct" in done.stderr
    )
