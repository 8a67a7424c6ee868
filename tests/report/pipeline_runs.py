"""Run directories made by the real pipeline (``trex_eval.run.pipeline.run``) for the report tests.

* :func:`reference_run`: ``--model reference`` over the first ``LIMIT`` problems of all four
  benchmarks (every item there is well posed, so every sample is correct).
* :func:`broken_run`: a ``replay`` run over the same problems whose completions are the reference
  ones except for a fixed set of deliberately broken answers (:data:`BREAKAGES`), written here as
  small programs whose fate is known in advance: a wrong optimum, an infeasible model, a syntax
  error, an exception, an infinite loop, no code at all, a failed API request, and a gurobipy
  model over the size-limited licence's 2000-variable cap.
* :func:`sampled_run`: a ``replay`` run with ``SAMPLES`` samples per problem whose correctness
  pattern is fixed by :data:`SAMPLE_PATTERNS`, for pass@k / acc@k / maj@k.

Expected numbers in the tests come from these constructions, never from the report code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import load_benchmark
from trex_eval.records import ObjectiveReference, Verdict
from trex_eval.run import pipeline as runner
from trex_eval.run.spec import RunOptions, RunSpec, model_for_protocol
from trex_eval.sandbox import SandboxLimits

LIMIT = 10
BENCHMARKS = ("nl4opt", "optibench", "b4o-feasible", "b4o-orgeval")
WALL_S = 4.0

WRONG = "wrong"
INFEASIBLE = "infeasible"
SYNTAX = "syntax"
RUNTIME = "runtime"
LOOP = "loop"
NO_CODE = "no_code"
API = "api"
LICENCE = "licence"

BREAKAGES: Mapping[str, Mapping[str, str]] = {
    "nl4opt": {"0": WRONG, "1": INFEASIBLE, "2": SYNTAX, "3": RUNTIME, "4": LOOP, "5": NO_CODE, "6": API},
    "optibench": {"7": WRONG, "8": LICENCE},
    "b4o-feasible": {"BENCH4OPT_2": SYNTAX},
    "b4o-orgeval": {"BENCH4OPT_1": RUNTIME, "BENCH4OPT_3": NO_CODE},
}
"""benchmark -> problem id -> how that problem's completion is broken in :func:`broken_run`."""

EXPECTED_VERDICT: Mapping[str, Verdict] = {
    WRONG: Verdict.WRONG,
    INFEASIBLE: Verdict.WRONG,
    SYNTAX: Verdict.SYNTAX_ERROR,
    RUNTIME: Verdict.RUNTIME_ERROR,
    LOOP: Verdict.TIMEOUT,
    NO_CODE: Verdict.NO_CODE,
    API: Verdict.API_ERROR,
    LICENCE: Verdict.LICENCE_ERROR,
}

SAMPLES = 4
SAMPLED_BENCHMARK = "nl4opt"
SAMPLE_PATTERNS: Mapping[str, tuple[str | None, ...]] = {
    # problem id -> per sample: None = the reference answer (correct), else a breakage.
    "0": (None, None, None, None),
    "1": (WRONG, None, WRONG, WRONG),
    "2": (WRONG, WRONG, WRONG, None),
    "3": (SYNTAX, WRONG, RUNTIME, NO_CODE),
    "4": (None, WRONG, None, SYNTAX),
}


def reference_run(out: Path, data_dir: Path, *, protocol: str = "default") -> Path:
    """``--model reference`` (gurobipy programs only under trex-compat, whose rule needs them)."""
    model, _ = model_for_protocol(BackendSpec(name="reference", backend="reference"), protocol)
    spec = RunSpec(model=model, benchmarks=BENCHMARKS, limit=LIMIT, protocol=protocol)
    runner.run(spec, RunOptions(data_dir=data_dir, out=out, show_progress=False))
    return out


def broken_run(out: Path, data_dir: Path, reference: Path) -> Path:
    """The reference run's completions with :data:`BREAKAGES` applied, replayed and graded."""
    records = []
    for line in (reference / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        breakage = BREAKAGES.get(sample["benchmark"], {}).get(sample["problem_id"])
        completion = sample["completion"]
        if breakage is not None:
            completion = _broken_completion(breakage, sample, data_dir)
        records.append(
            {"benchmark": sample["benchmark"], "problem_id": sample["problem_id"], "completion": completion}
        )
    replay = out.parent / f"{out.name}.replay.jsonl"
    replay.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return _replay(out, data_dir, replay, name="broken", benchmarks=BENCHMARKS, samples=1, gurobi="real")


def sampled_run(out: Path, data_dir: Path) -> Path:
    """``SAMPLES`` samples per problem of :data:`SAMPLED_BENCHMARK`, correct where the pattern says."""
    bench = load_benchmark(SAMPLED_BENCHMARK, data_dir=data_dir)
    records = []
    for problem in bench.problems[: len(SAMPLE_PATTERNS)]:
        reference = problem.reference
        assert isinstance(reference, ObjectiveReference) and reference.value is not None
        for index, breakage in enumerate(SAMPLE_PATTERNS[problem.id]):
            text = (
                _pulp_program(reference.value)
                if breakage is None
                else _broken_text(breakage, reference.value)
            )
            records.append(
                {
                    "benchmark": SAMPLED_BENCHMARK,
                    "problem_id": problem.id,
                    "sample_index": index,
                    "completion": text,
                }
            )
    replay = out.parent / f"{out.name}.replay.jsonl"
    replay.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return _replay(
        out,
        data_dir,
        replay,
        name="sampled",
        benchmarks=(SAMPLED_BENCHMARK,),
        samples=SAMPLES,
        limit=len(SAMPLE_PATTERNS),
    )


def _replay(
    out: Path,
    data_dir: Path,
    replay: Path,
    *,
    name: str,
    benchmarks: tuple[str, ...],
    samples: int,
    limit: int = LIMIT,
    gurobi: str = "auto",
) -> Path:
    spec = BackendSpec(name=name, backend="replay", options={"path": str(replay)})
    run_spec = RunSpec(
        model=spec,
        benchmarks=benchmarks,
        samples=samples,
        limit=limit,
        gurobi=gurobi,  # type: ignore[arg-type]
        limits=SandboxLimits(wall_s=WALL_S, cpu_s=WALL_S),
    )
    runner.run(run_spec, RunOptions(data_dir=data_dir, out=out, show_progress=False))
    return out


def _broken_completion(breakage: str, sample: Mapping[str, object], data_dir: Path) -> object:
    if breakage == API:
        return None
    value = _reference_value(str(sample["benchmark"]), str(sample["problem_id"]), data_dir)
    return _broken_text(breakage, value)


def _reference_value(benchmark: str, problem_id: str, data_dir: Path) -> float:
    bench = load_benchmark(benchmark, data_dir=data_dir)
    for problem in bench.problems:
        if problem.id == problem_id and isinstance(problem.reference, ObjectiveReference):
            return problem.reference.value or 0.0
    return 0.0


def _broken_text(breakage: str, value: float) -> str:
    if breakage == WRONG:
        return _pulp_program(2 * value + 7)
    if breakage == INFEASIBLE:
        return _fenced(
            "import pulp\nmodel = pulp.LpProblem('p', pulp.LpMinimize)\n"
            "x = pulp.LpVariable('x', lowBound=1)\nmodel += x\nmodel += x <= 0\n"
            "model.solve(pulp.PULP_CBC_CMD(msg=False))\n"
        )
    if breakage == SYNTAX:
        return _fenced("x = (1 +\nprint(x)\n")
    if breakage == RUNTIME:
        return _fenced("raise ValueError('deliberately broken')\n")
    if breakage == LOOP:
        # Asleep, not spinning: it reaches its wall-clock limit, never its CPU limit (equal to it).
        return _fenced("import time\nwhile True:\n    time.sleep(1)\n")
    if breakage == NO_CODE:
        return "I would model this as a linear program, but I will not write the code."
    if breakage == LICENCE:
        return _fenced(
            "import gurobipy as gp\nmodel = gp.Model()\nx = model.addVars(2500, name='x')\n"
            "model.setObjective(x.sum())\nmodel.optimize()\n"
        )
    raise ValueError(breakage)


def _pulp_program(optimum: float) -> str:
    return _fenced(
        "import pulp\nmodel = pulp.LpProblem('p', pulp.LpMinimize)\nx = pulp.LpVariable('x', lowBound=0)\n"
        f"model += x + {optimum!r}\nmodel.solve(pulp.PULP_CBC_CMD(msg=False))\n"
        "print('objective:', pulp.value(model.objective))\n"
    )


def _fenced(code: str) -> str:
    return f"```python\n{code}```\n"
