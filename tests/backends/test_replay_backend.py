"""The ``replay`` backend on files built from the real benchmark problems."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from trex_eval.backends import BackendSpec, GenerationRequest, create_backend
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.records import (
    ChatMessage,
    Completion,
    ExecStatus,
    Execution,
    Grade,
    Problem,
    Program,
    Prompt,
    SampleRecord,
    SamplingParams,
    Usage,
    Verdict,
)

Option = str | int | float | bool | None


@pytest.fixture(scope="module")
def problems(data_dir: Path) -> dict[str, tuple[Problem, ...]]:
    return {
        name: load_benchmark(name, data_dir=data_dir).problems
        for name in ("nl4opt", "optibench", "b4o-orgeval")
    }


def prompt_for(problem: Problem) -> Prompt:
    return Prompt(
        problem_id=problem.id,
        prompt_set="t-rex",
        messages=(ChatMessage(role="user", content=problem.question),),
        template_sha256="0" * 64,
    )


def request_for(problem: Problem, sample_index: int = 0) -> GenerationRequest:
    return GenerationRequest(
        problem=problem, prompt=prompt_for(problem), params=SamplingParams(), sample_index=sample_index
    )


def replay(
    requests: list[GenerationRequest], **options: Option
) -> tuple[list[Completion], dict[str, object]]:
    backend = create_backend(BackendSpec(name="replay", backend="replay", options=options))

    async def run() -> list[Completion]:
        await backend.start()
        try:
            return list(await asyncio.gather(*(backend.generate(r) for r in requests)))
        finally:
            await backend.close()

    completions = asyncio.run(run())
    return completions, dict(backend.describe())


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def sample_record(problem: Problem, sample_index: int, text: str) -> SampleRecord:
    completion = Completion(
        problem_id=problem.id,
        sample_index=sample_index,
        text=text,
        reasoning=f"thinking about {problem.benchmark}/{problem.id}",
        finish_reason="stop",
        usage=Usage(prompt_tokens=100 + sample_index, completion_tokens=50, total_tokens=150 + sample_index),
        latency_s=1.5,
        model="deepseek-v4-flash",
        seed=42 + sample_index,
        attempts=2,
    )
    return SampleRecord(
        benchmark=problem.benchmark,
        problem_id=problem.id,
        sample_index=sample_index,
        prompt=prompt_for(problem),
        completion=completion,
        program=Program(code="print(1)", extractor="default", reason="last ```python fence"),
        execution=Execution(status=ExecStatus.OK),
        grade=Grade(verdict=Verdict.WRONG, rule="strict@3", reason="objective differs"),
    )


def test_replays_an_earlier_runs_samples_file_across_benchmarks_and_samples(
    problems: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    # NL4OPT and OptiBench both have ids "0".."9": the benchmark field keeps them apart.
    chosen = list(problems["nl4opt"][:10]) + list(problems["optibench"][:10])
    records = [sample_record(p, k, f"{p.benchmark}/{p.id}/{k}") for p in chosen for k in (0, 1)]
    records.reverse()  # concurrent runs write samples in completion order, not sample order
    rewritten = sample_record(chosen[0], 0, "regraded text")
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in [*records, rewritten]))

    wanted = [request_for(p, k) for p in chosen for k in (0, 1)]
    completions, description = replay(wanted, path=str(path))

    expected_texts = [f"{p.benchmark}/{p.id}/{k}" for p in chosen for k in (0, 1)]
    expected_texts[0] = "regraded text"  # a later line for the same key wins
    assert [c.text for c in completions] == expected_texts
    assert [(c.problem_id, c.sample_index) for c in completions] == [
        (p.id, k) for p in chosen for k in (0, 1)
    ]
    original = {(r.benchmark, r.problem_id, r.sample_index): r.completion for r in records}
    for request, completion in zip(wanted[1:], completions[1:], strict=True):
        assert completion == original[(request.problem.benchmark, request.problem.id, request.sample_index)]
    assert description["fields"] == {
        "id": "problem_id",
        "text": "completion",
        "sample": "sample_index",
        "benchmark": "benchmark",
    }
    assert description["records"] == 41 and description["completions"] == 40


def test_replays_reference_harness_style_rows_and_reports_missing_ids(
    problems: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    nl4opt = problems["nl4opt"]
    rows: list[dict[str, object]] = [
        {"sample_id": int(p.id), "completion": f"```python\n# {p.id}\n```"} for p in nl4opt[:5]
    ]
    path = write_jsonl(tmp_path / "nl4opt_solver.jsonl", rows)
    completions, description = replay(
        [request_for(p) for p in nl4opt[:8]], path=str(path), id_field="sample_id"
    )
    assert [c.text for c in completions[:5]] == [f"```python\n# {i}\n```" for i in range(5)]
    assert all(c.error is None for c in completions[:5])
    for missing, completion in zip(nl4opt[5:8], completions[5:], strict=True):
        assert completion.text == ""
        assert completion.error is not None
        assert completion.error.startswith(f"no recorded completion for {missing.id} (sample 0)")
    assert description["fields"] == {
        "id": "sample_id",
        "text": "completion",
        "sample": None,
        "benchmark": None,
    }


def test_dotted_paths_and_samples_in_file_order(
    problems: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    orgeval = problems["b4o-orgeval"][:3]
    rows: list[dict[str, object]] = [
        {"item": {"id": p.id}, "response": {"choices": [{"message": {"content": f"{p.id} try {k}"}}]}}
        for k in range(3)
        for p in orgeval
    ]
    path = write_jsonl(tmp_path / "raw.jsonl", rows)
    wanted = [request_for(p, k) for p in orgeval for k in range(3)]
    completions, _ = replay(
        wanted, path=str(path), id_field="item.id", text_field="response.choices.0.message.content"
    )
    assert [c.text for c in completions] == [f"{p.id} try {k}" for p in orgeval for k in range(3)]


def test_a_null_completion_replays_as_a_failed_request(
    problems: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    problem = problems["nl4opt"][0]
    path = write_jsonl(tmp_path / "r.jsonl", [{"problem_id": "0", "completion": None}])
    (completion,), _ = replay([request_for(problem)], path=str(path))
    assert completion.text == "" and completion.error == "the recorded completion is null"


def test_the_index_is_built_once_at_start(problems: dict[str, tuple[Problem, ...]], tmp_path: Path) -> None:
    problem = problems["nl4opt"][0]
    path = write_jsonl(tmp_path / "r.jsonl", [{"problem_id": "0", "completion": "first"}])
    backend = create_backend(BackendSpec(name="replay", backend="replay", options={"path": str(path)}))

    async def run() -> tuple[Completion, Completion]:
        await backend.start()
        before = await backend.generate(request_for(problem))
        write_jsonl(path, [{"problem_id": "0", "completion": "second"}])
        await backend.start()
        return before, await backend.generate(request_for(problem))

    before, after = asyncio.run(run())
    assert before.text == after.text == "first"


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            ['{"problem_id": "0", "completion": "a"}', "{oops", '{"problem_id": "1", "completion": "b"}'],
            2,
            "not valid JSON",
        ),
        (['{"problem_id": "0", "completion": "a"}', "[1, 2]"], 2, "expected a JSON object"),
        (
            ['{"problem_id": "0", "completion": "a"}', '{"id": "1", "completion": "b"}'],
            2,
            "no field 'problem_id'",
        ),
        (['{"problem_id": "0", "completion": 3}'], 1, "must be a string or a completion object"),
        (['{"problem_id": 1.5, "completion": "a"}'], 1, "must be a string or an integer"),
        (['{"problem_id": "0", "completion": {"txt": "a"}}'], 1, "not a completion record"),
        (
            [
                '{"problem_id": "0", "sample_index": 0, "completion": "a"}',
                '{"problem_id": "0", "sample_index": -1, "completion": "b"}',
            ],
            2,
            "non-negative integer",
        ),
        (['{"problem_id": "0", "completion": "a"}', '{"problem_id": "1", "compl'], 2, "not valid JSON"),
    ],
)
def test_malformed_lines_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")  # every line terminated: none of them is a torn append
    with pytest.raises(ConfigError, match=message) as error:
        replay([], path=str(path))
    assert error.value.where == f"{path}:{line}"


def test_a_torn_last_line_is_refused_by_default(
    problems: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    """Dropping a cut-off answer silently could raise the score: the file is refused, at its line."""
    path = tmp_path / "samples.jsonl"
    path.write_text('{"problem_id": "0", "completion": "kept"}\n{"problem_id": "1", "compl')
    with pytest.raises(ConfigError, match="last line is cut off") as error:
        replay([request_for(p) for p in problems["nl4opt"][:2]], path=str(path))
    assert error.value.where == f"{path}:2"
    assert "--allow-torn-line" in str(error.value)


def test_a_torn_last_line_is_skipped_when_allowed(
    problems: dict[str, tuple[Problem, ...]], tmp_path: Path
) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"problem_id": "0", "completion": "kept"}\n{"problem_id": "1", "compl')
    completions, description = replay(
        [request_for(p) for p in problems["nl4opt"][:2]], path=str(path), allow_torn=True
    )
    assert completions[0].text == "kept"
    assert completions[1].error is not None and completions[1].error.startswith(
        "no recorded completion for 1"
    )
    assert description["skipped_torn_line"] is True


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="path") as missing:
        create_backend(BackendSpec(name="replay", backend="replay"))
    assert "--opt path=" in str(missing.value)
    with pytest.raises(ConfigError, match="id_feild"):
        create_backend(BackendSpec(name="replay", backend="replay", options={"path": "x", "id_feild": "id"}))
    with pytest.raises(ConfigError, match="cannot read replay file"):
        replay([], path=str(tmp_path / "absent.jsonl"))
