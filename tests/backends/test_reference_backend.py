"""The ``reference`` backend on the real benchmarks; emitted programs run in real interpreters.

Expected values come from the data files (the answer labels exactly as written there) and from
golden facts G5/G13 of the reference-harness spec, never from the backend itself. Each emitted
program is checked by an epilogue that asks the solver object directly for its result.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from trex_eval.backends import BackendSpec, GenerationRequest, create_backend
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.records import (
    ChatMessage,
    Completion,
    ObjectiveReference,
    Problem,
    Prompt,
    SamplingParams,
    SolveStatus,
    StructureReference,
    Verdict,
)
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

FENCE_OPEN, FENCE_CLOSE = "```python\n", "```\n"

# Appended to an emitted program: what the solver object itself holds, as [objective, status].
RESULT_OF = {
    "gurobipy": "[model.ObjVal if model.Status == 2 else None, int(model.Status)]",
    "pulp": "[pulp.value(model.objective) if model.status == 1 else None, model.status]",
    "highspy": "[model.getInfo().objective_function_value, str(model.getModelStatus())]",
    "ortools": "[model.Objective().Value() if status == 0 else None, status]",
}
# What each library calls optimal / infeasible / unbounded, from its own documentation.
STATUS_CODES: dict[str, dict[str, int | str]] = {
    "gurobipy": {"optimal": 2, "infeasible": 3, "unbounded": 5},
    "pulp": {"optimal": 1, "infeasible": -1, "unbounded": -2},
    "highspy": {
        "optimal": "HighsModelStatus.kOptimal",
        "infeasible": "HighsModelStatus.kInfeasible",
        "unbounded": "HighsModelStatus.kUnbounded",
    },
    "ortools": {"optimal": 0, "infeasible": 2, "unbounded": 3},
}
HIGHS_BANNER = ("Running HiGHS", "Includes third-party software components")
ROTATION = ("gurobipy", "pulp", "highspy", "ortools")
FIRST_IMPORT = {
    "import gurobipy as gp": "gurobipy",
    "import pulp": "pulp",
    "import highspy": "highspy",
    "from ortools.linear_solver import pywraplp": "ortools",
}


def request_for(problem: Problem, *, sample_index: int = 0) -> GenerationRequest:
    prompt = Prompt(
        problem_id=problem.id,
        prompt_set="test",
        messages=(ChatMessage(role="user", content=problem.question),),
        template_sha256="0" * 64,
    )
    return GenerationRequest(
        problem=problem, prompt=prompt, params=SamplingParams(), sample_index=sample_index
    )


def generate(problems: Sequence[Problem], **options: str | None) -> list[Completion]:
    backend = create_backend(
        BackendSpec(name="reference", backend="reference", model="reference", options=dict(options))
    )

    async def run() -> list[Completion]:
        await backend.start()
        try:
            return [await backend.generate(request_for(p)) for p in problems]
        finally:
            await backend.close()

    return asyncio.run(run())


def code_of(completion: Completion) -> str:
    assert completion.error is None
    assert completion.text.startswith(FENCE_OPEN) and completion.text.endswith(FENCE_CLOSE)
    return completion.text[len(FENCE_OPEN) : -len(FENCE_CLOSE)]


def library_of(code: str) -> str:
    """The library an answer program uses, from its first line."""
    return FIRST_IMPORT[code.split("\n", 1)[0]]


def with_check(code: str, library: str) -> str:
    """``code`` followed by a line ``CHECK [objective, status]`` read from the solver object."""
    return f"{code}\nimport json as _json\nprint('CHECK', _json.dumps({RESULT_OF[library]}))\n"


def run_python(code: str, *, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def benchmarks(data_dir: Path) -> dict[str, tuple[Problem, ...]]:
    names = ("nl4opt", "optibench", "b4o-feasible", "b4o-orgeval")
    return {name: load_benchmark(name, data_dir=data_dir).problems for name in names}


def test_every_problem_of_every_benchmark_gets_a_reference_completion(
    benchmarks: dict[str, tuple[Problem, ...]],
) -> None:
    for name, problems in benchmarks.items():
        completions = generate(problems)
        assert [c.problem_id for c in completions] == [p.id for p in problems]
        assert {c.model for c in completions} == {"reference"}
        codes = [code_of(c) for c in completions]
        for problem, code in zip(problems, codes, strict=True):
            if problem.reference_code is not None:
                body = problem.reference_code.rstrip()
                expected = body + "\n\nmodel.optimize()\n" if name == "b4o-feasible" else body + "\n"
                assert code == expected
        if name in ("nl4opt", "optibench"):
            assert [library_of(code) for code in codes] == [ROTATION[p.index % 4] for p in problems]
            assert [p.index for p in problems] == list(range(len(problems)))


def test_answer_programs_run_cleanly_and_print_the_reference_value(
    benchmarks: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    # NL4OPT rows 0-7 cover every library twice (row 5 is the non-integer '2333.33'); OptiBench
    # 372 and 293 have rounded labels, 599 is the last row.
    picks = [benchmarks["nl4opt"][i] for i in range(8)] + [
        benchmarks["optibench"][i] for i in (293, 372, 599)
    ]
    for problem, completion in zip(picks, generate(picks), strict=True):
        code = code_of(completion)
        result = run_python(code, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        lines = [line for line in result.stdout.splitlines() if not line.startswith(HIGHS_BANNER)]
        assert isinstance(problem.reference, ObjectiveReference)
        assert lines == [f"objective: {float(problem.reference.label)!r}"]


def test_all_answer_programs_reach_the_exact_reference_value(
    benchmarks: dict[str, tuple[Problem, ...]],
) -> None:
    """All 889 NL4OPT and OptiBench answers: each program's solver ends OPTIMAL at exactly the
    label's value (one interpreter per library keeps this fast)."""
    problems = benchmarks["nl4opt"] + benchmarks["optibench"]
    jobs: dict[str, list[tuple[str, str, float]]] = {lib: [] for lib in ROTATION}
    for problem, completion in zip(problems, generate(problems), strict=True):
        code = code_of(completion)
        assert isinstance(problem.reference, ObjectiveReference)
        library = library_of(code)
        jobs[library].append((problem.id, with_check(code, library), float(problem.reference.label)))
    driver = textwrap.dedent(
        """
        import contextlib, io, json, sys
        results = []
        for pid, code, expected in json.load(sys.stdin):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, pid, "exec"), {"__name__": "__main__"})
            line = [l for l in out.getvalue().splitlines() if l.startswith("CHECK ")][-1]
            results.append([pid, expected, json.loads(line[6:])])
        print(json.dumps(results))
        """
    )
    for library, batch in jobs.items():
        proc = subprocess.run(
            [sys.executable, "-c", driver],
            input=json.dumps(batch),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        results = json.loads(proc.stdout.strip().splitlines()[-1])
        assert len(results) == len(batch) > 200
        optimal = STATUS_CODES[library]["optimal"]
        wrong = [(pid, expected, got) for pid, expected, got in results if got != [expected, optimal]]
        assert wrong == [], f"{library}: {wrong[:5]}"


@pytest.mark.parametrize("status", [SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED])
def test_infeasible_and_unbounded_references_give_models_with_that_status(
    status: SolveStatus, tmp_path: Path
) -> None:
    problems = [
        Problem(
            benchmark="synthetic",
            id=f"s{i}",
            index=i,
            question="q",
            reference=ObjectiveReference(status=status, value=None, label=status.value),
        )
        for i in range(4)
    ]
    seen = []
    for completion in generate(problems):
        code = code_of(completion)
        library = library_of(code)
        seen.append(library)
        result = run_python(with_check(code, library), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        check = next(line for line in result.stdout.splitlines() if line.startswith("CHECK "))
        assert json.loads(check[6:])[1] == STATUS_CODES[library][status.value]
        assert f"status: {status.value}" in result.stdout
    assert seen == list(ROTATION)


def test_feasible_reference_code_solves_to_the_reference_optimum(
    benchmarks: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    # G5: BENCH4OPT_2 -> 531.1536797183472, BENCH4OPT_4 -> 2557441.83620435; G13: both pass abs 1e-6.
    golden = {"BENCH4OPT_2": 531.1536797183472, "BENCH4OPT_4": 2557441.83620435}
    problems = [p for p in benchmarks["b4o-feasible"] if p.id in golden]
    for problem, completion in zip(problems, generate(problems), strict=True):
        workdir = tmp_path / problem.id
        workdir.mkdir()
        for name, content in problem.instance_files.items():
            (workdir / name).write_text(content)
        code = code_of(completion)
        assert code.rstrip().endswith("model.optimize()")
        result = run_python(code + "\nprint('CHECK', repr(model.ObjVal), model.Status)\n", cwd=workdir)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        value, status = result.stdout.splitlines()[-1].split()[1:]
        assert int(status) == 2
        assert abs(float(value) - golden[problem.id]) <= 1e-6


def test_orgeval_reference_code_writes_its_lp_file_without_solving(
    benchmarks: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    problem = benchmarks["b4o-orgeval"][0]
    (completion,) = generate([problem])
    code = code_of(completion)
    assert "optimize()" not in code
    for name, content in problem.instance_files.items():
        (tmp_path / name).write_text(content)
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    written = (tmp_path / "model.lp").read_text()
    assert written.lstrip().startswith("\\") and "Subject To" in written


def test_library_rotation_is_configurable(benchmarks: dict[str, tuple[Problem, ...]]) -> None:
    problems = benchmarks["nl4opt"][:6]
    assert {library_of(code_of(c)) for c in generate(problems, libraries="gurobipy")} == {"gurobipy"}
    assert [library_of(code_of(c)) for c in generate(problems, libraries="ortools, pulp")] == [
        "ortools",
        "pulp",
    ] * 3
    with pytest.raises(ConfigError, match="unknown library cplex"):
        generate(problems, libraries="gurobipy,cplex")
    with pytest.raises(ConfigError, match="libary"):
        generate(problems, libary="gurobipy")


def test_a_problem_without_any_usable_reference_gets_an_error_completion() -> None:
    problem = Problem(
        benchmark="synthetic",
        id="lp-only",
        index=0,
        question="q",
        reference=StructureReference(lp_path="x.lp", lp_sha256="0" * 64),
    )
    (completion,) = generate([problem])
    assert completion.text == ""
    assert completion.error is not None and completion.error.startswith("no reference solution for lp-only")


def test_describe_names_the_rotation() -> None:
    backend = create_backend(
        BackendSpec(name="reference", backend="reference", options={"libraries": "pulp"})
    )
    assert backend.describe() == {"backend": "reference", "model": "reference", "libraries": ["pulp"]}


def test_no_optimum_labels_of_the_field_benchmarks_are_answered_and_graded_correct(
    tmp_path: Path, data_dir: Path
) -> None:
    """The "no finite optimum" rows (NL4OPT-245 'No Best Solution', IndustryOR '-99999') get an
    infeasible answer program, which the sandbox runs and each benchmark's rule grades correct."""
    picked: dict[str, tuple[str, ...]] = {}
    for name in ("nl4opt-245", "industryor"):
        problems = load_benchmark(name, data_dir=data_dir).problems
        picked[name] = tuple(
            p.id
            for p in problems
            if isinstance(p.reference, ObjectiveReference) and p.reference.status is SolveStatus.INF_OR_UNBD
        )
    assert (len(picked["nl4opt-245"]), len(picked["industryor"])) == (17, 3)
    spec = RunSpec(
        model=BackendSpec(name="reference", backend="reference"),
        benchmarks=tuple(picked),
        problem_ids=picked,
    )
    result = pipeline.run(spec, RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False))
    samples = list(RunStore(result.run_dir).iter_samples())
    assert len(samples) == 20
    wrong = [(s.problem_id, s.grade.reason) for s in samples if s.grade.verdict is not Verdict.CORRECT]
    assert wrong == []
