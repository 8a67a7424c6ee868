"""trex-eval's benchmarks under inspect_ai give the verdicts ``trex-eval run`` gives.

The real ``inspect eval`` command (a subprocess, the ``trex_eval`` entry point, no glue code) runs
``trex_eval/b4o-feasible`` and ``trex_eval/nl4opt`` (6 problems each) against an OpenAI-compatible
server on loopback that answers each prompt with a recorded completion: the reference program
(``trex_eval.backends.reference``), a program with a wrong optimum, prose with no code, or a
program that raises. ``trex-eval run --model replay`` then grades the same completions. Every
sample must get the same verdict both ways, the prompts inspect sent must be the run's, and the
inspect log imported with ``trex-eval import`` must read as a run in ``leaderboard``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_process import trex_eval
from inspect_run import inspect_eval

from trex_eval.backends.reference import answer_program, reference_completion_text
from trex_eval.integrations.inspect.grading import TaskSettings, prepare
from trex_eval.records import ObjectiveReference, Problem, SampleRecord
from trex_eval.store import RunStore

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.slow  # two real CLIs, two sandbox pools: about a minute

BENCHMARKS = ("b4o-feasible", "nl4opt")
LIMIT = 6


def _wrong_optimum(problem: Problem) -> str:
    """A program that solves to an optimum other than the reference's (or raises, for a problem
    whose reference is no finite optimum)."""
    reference = problem.reference
    assert isinstance(reference, ObjectiveReference)
    if reference.value is None:
        return _raises()
    wrong = reference.model_copy(update={"value": reference.value + 7.5})
    return f"Here is my model.\n\n```python\n{answer_program(wrong, library='pulp').rstrip()}\n```\n"


def _raises() -> str:
    return "```python\nimport gurobipy as gp\nmodel = gp.Model()\nraise RuntimeError('data missing')\n```\n"


def _completion(problem: Problem, position: int) -> str:
    """Position 0, 4: the reference; 1, 5: a wrong optimum; 2: no code; 3: a program that raises."""
    kind = position % 4
    if kind == 0:
        return reference_completion_text(problem)
    if kind == 1:
        return _wrong_optimum(problem)
    if kind == 2:
        return "The optimal objective is 42; I did not write code for it."
    return _raises()


@dataclass(frozen=True)
class Outcome:
    """Both evaluations of the same completions."""

    inspect_logs: dict[str, Path]
    run_dir: Path
    requests: list[dict[str, object]]
    prompts: dict[str, tuple[str, str]]
    """The last user message inspect sent -> (benchmark, problem id)."""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    root = tmp_path_factory.mktemp("inspect")
    prepared = prepare(TaskSettings(benchmarks=BENCHMARKS, limit=LIMIT))
    answers: dict[str, str] = {}
    prompts: dict[str, tuple[str, str]] = {}
    replay = root / "completions.jsonl"
    with replay.open("w", encoding="utf-8") as lines:
        for item in prepared.benchmarks:
            for position, problem in enumerate(item.problems):
                text = _completion(problem, position)
                user = item.renderer.render(problem).messages[-1].content
                answers[user] = text
                prompts[user] = (item.bench.name, problem.id)
                record = {"benchmark": item.bench.name, "problem_id": problem.id, "completion": text}
                lines.write(json.dumps(record) + "\n")

    logs = root / "logs"
    tasks = [f"trex_eval/{name}" for name in BENCHMARKS]
    done, requests = inspect_eval(
        answers, [*tasks, "-T", f"limit={LIMIT}", "--log-format", "json", "--no-fail-on-error"], logs=logs
    )
    assert done.returncode == 0, (
        f"inspect eval exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    found = {}
    for path in logs.glob("*.json"):
        task = json.loads(path.read_text(encoding="utf-8"))["eval"]["task"]
        found[task.rsplit("/", 1)[-1]] = path
    assert sorted(found) == sorted(BENCHMARKS), f"logs: {sorted(p.name for p in logs.iterdir())}"
    run_dir = root / "replayed"
    trex_eval(
        "run", "--model", "replay", "--opt", f"path={replay}", "-b", ",".join(BENCHMARKS),
        "--limit", str(LIMIT), "--out", str(run_dir), "--no-progress",
        timeout=240,
    )  # fmt: skip
    yield Outcome(found, run_dir, requests, prompts)


def _inspect_samples(log: Path) -> list[dict[str, object]]:
    return list(json.loads(log.read_text(encoding="utf-8"))["samples"])


def _run_records(run_dir: Path) -> dict[tuple[str, str], SampleRecord]:
    return {(r.benchmark, r.problem_id): r for r in RunStore(run_dir).iter_samples()}


def _differences(mine: object, theirs: object, where: str = "") -> list[str]:
    """Where two JSON values differ (paths), for a readable assertion; wall times (``seconds``:
    how long a diagnosis took) differ between any two gradings and are not compared."""
    if where.endswith(".seconds"):
        return []
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return [
            d
            for key in sorted(set(mine) | set(theirs))
            for d in _differences(mine.get(key), theirs.get(key), f"{where}.{key}")
        ]
    return [] if mine == theirs else [f"{where}: {str(mine)[:120]} != {str(theirs)[:120]}"]


def test_every_verdict_is_the_runs(outcome: Outcome) -> None:
    run = _run_records(outcome.run_dir)
    compared = []
    for benchmark, log in outcome.inspect_logs.items():
        samples = _inspect_samples(log)
        assert len(samples) == LIMIT
        for sample in samples:
            metadata = sample["metadata"]  # type: ignore[index]
            (score,) = sample["scores"].values()  # type: ignore[union-attr,attr-defined]
            record = run[(benchmark, metadata["problem_id"])]
            assert score["metadata"]["verdict"] == record.grade.verdict.value, (benchmark, metadata)
            assert score["metadata"]["reason"] == record.grade.reason
            assert score["metadata"]["rule"] == record.grade.rule
            assert score["metadata"]["status"] == record.execution.status.value
            assert score["metadata"]["program"] == record.program.code
            assert score["value"] == (1.0 if record.grade.passed else 0.0)
            assert score["explanation"].startswith(record.grade.verdict.value)
            compared.append(record.grade.verdict.value)
    assert len(compared) == LIMIT * len(BENCHMARKS)
    # The completions were chosen to reach several verdicts, the reference programs passing.
    assert "correct" in compared and len(set(compared)) >= 3, compared


def test_inspect_sent_the_runs_prompts_and_sampling(outcome: Outcome) -> None:
    run = _run_records(outcome.run_dir)
    assert len(outcome.requests) == LIMIT * len(BENCHMARKS)
    for body in outcome.requests:
        messages = body["messages"]
        assert isinstance(messages, list)
        key = outcome.prompts[messages[-1]["content"]]
        expected = [m.model_dump(include={"role", "content"}) for m in run[key].prompt.messages]
        assert [{"role": m["role"], "content": m["content"]} for m in messages] == expected
        assert body["temperature"] == 0.6 and body["top_p"] == 1.0 and body["seed"] == 42
        assert 9600 in (body.get("max_tokens"), body.get("max_completion_tokens"))


def test_imported_log_is_a_run_the_reports_read(outcome: Outcome, tmp_path: Path) -> None:
    run = _run_records(outcome.run_dir)
    imported = []
    for benchmark, log in outcome.inspect_logs.items():
        out = tmp_path / f"imported-{benchmark}"
        done = trex_eval("import", str(log), "--out", str(out))
        assert f"{benchmark}: {LIMIT}" in done.stdout
        records = list(RunStore(out).iter_samples())
        assert len(records) == LIMIT
        for record in records:
            mine = run[(record.benchmark, record.problem_id)]
            assert (
                _differences(record.grade.model_dump(mode="json"), mine.grade.model_dump(mode="json")) == []
            )
            assert record.program == mine.program
            assert record.prompt.messages == mine.prompt.messages
            assert record.completion.text == mine.completion.text
        imported.append(out)
    board = trex_eval("leaderboard", *map(str, imported), str(outcome.run_dir), "--no-published", columns=200)
    assert "openai-api/fake/served-model" in board.stdout
    # The same first problems, the same verdicts: `compare` finds no flip between the two.
    first = trex_eval(
        "compare", str(outcome.run_dir), str(imported[0]), "--common", "--no-published", columns=200
    )
    assert "Traceback" not in first.stderr
