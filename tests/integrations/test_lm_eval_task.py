"""lm-eval's trex tasks grade as ``trex-eval run`` does.

The real ``lm_eval`` command line runs ``trex_nl4opt`` and ``trex_b4o_feasible`` (``--limit 6``)
against an OpenAI-compatible server on loopback that serves recorded completions (reference
programs, wrong programs, prose, a program that fails); then ``trex-eval run`` replays the same
completions. Each sample's verdict and reason agree, lm-eval's requests carry the run's prompt as
chat messages and its sampling defaults, and ``pass@1`` is reported under the rule's name.
Needs the ``[integrations]`` extra (lm-eval) and the benchmark data.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ci_required import required
from cli_process import trex_eval
from fake_server import Action, FakeOpenAIServer, Reply

from trex_eval.backends.reference import answer_program, reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.integrations.lm_eval import tasks_dir
from trex_eval.integrations.lm_eval.configs import render_configs, task_name
from trex_eval.records import ObjectiveReference, Problem, SolveStatus


@pytest.fixture(scope="module", autouse=True)
def _lm_eval_installed() -> None:
    required(
        importlib.util.find_spec("lm_eval") is not None,
        "lm-eval is not installed (the [integrations] extra)",
        in_ci=".ci/run installs the [integrations] extra",
    )


BENCHMARKS = ("nl4opt", "b4o-feasible")
LIMIT = 6
NO_CODE = "This is a linear program; I would solve it with the simplex method."
FAILING = "```python\nimport json\nraise RuntimeError('the data file was not what I expected')\n```\n"


def _wrong(problem: Problem) -> str:
    """A program that solves to another optimum than the label."""
    reference = problem.reference
    assert isinstance(reference, ObjectiveReference)
    value = (reference.value or 0.0) * 2 + 7.0
    code = answer_program(
        ObjectiveReference(status=SolveStatus.OPTIMAL, value=value, label=repr(value)), library="pulp"
    )
    return f"Here is my model.\n\n```python\n{code.rstrip()}\n```\n"


def _completion(problem: Problem, position: int) -> str:
    """Problem ``position`` of a benchmark's first six: right, wrong, no code, right, wrong, failing."""
    if position in (2, 5):
        return NO_CODE if position == 2 else FAILING
    return _wrong(problem) if position % 3 == 1 else reference_completion_text(problem)


@pytest.fixture(scope="module")
def recorded(data_dir: Path) -> dict[tuple[str, str], str]:
    """(benchmark, problem id) -> the completion served for it."""
    completions = {}
    for name in BENCHMARKS:
        for position, problem in enumerate(load_benchmark(name, data_dir=data_dir).problems[:LIMIT]):
            completions[(name, problem.id)] = _completion(problem, position)
    return completions


@pytest.fixture(scope="module")
def run_samples(
    tmp_path_factory: pytest.TempPathFactory, recorded: dict[tuple[str, str], str]
) -> list[dict[str, Any]]:
    """``trex-eval run`` replaying the recorded completions: its samples.jsonl lines."""
    folder = tmp_path_factory.mktemp("trex-run")
    replay = folder / "completions.jsonl"
    replay.write_text(
        "".join(
            json.dumps({"benchmark": name, "problem_id": pid, "completion": text}) + "\n"
            for (name, pid), text in recorded.items()
        )
    )
    out = folder / "run"
    trex_eval(
        "run", "--model", "replay", "--opt", f"path={replay}", "-b", ",".join(BENCHMARKS),
        "--limit", str(LIMIT), "--out", str(out), "--no-progress",
        timeout=120,
    )  # fmt: skip
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def lm_eval_run(
    tmp_path_factory: pytest.TempPathFactory,
    recorded: dict[tuple[str, str], str],
    run_samples: list[dict[str, Any]],
) -> Iterator[tuple[Path, FakeOpenAIServer]]:
    """``lm_eval run`` of both tasks against the loopback server; its output folder and the server."""
    by_prompt = {}
    for sample in run_samples:
        user = sample["prompt"]["messages"][-1]["content"]
        assert user not in by_prompt, "two problems share a prompt: the server could not tell them apart"
        by_prompt[user] = recorded[(sample["benchmark"], sample["problem_id"])]

    def script(key: str, attempt: int) -> Action:
        return Reply(text=by_prompt.get(key, "no completion was recorded for this prompt"))

    out = tmp_path_factory.mktemp("lm-eval")
    with FakeOpenAIServer(script) as server:
        model_args = f"base_url={server.base_url}/chat/completions,model=served-model,num_concurrent=4"
        command = [
            sys.executable, "-m", "lm_eval", "run",
            "--model", "local-chat-completions", "--model_args", model_args,
            "--apply_chat_template",
            "--tasks", ",".join(task_name(name) for name in BENCHMARKS),
            "--include_path", str(tasks_dir()),
            "--limit", str(LIMIT),
            "--log_samples", "--output_path", str(out),
            "--metadata", json.dumps({"trex_workers": 2}),
        ]  # fmt: skip
        # Loopback only: no hub look-ups, and no proxy between lm-eval and the server.
        offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "NO_PROXY": "127.0.0.1"}
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=180, env={**os.environ, **offline}, check=False
        )
        assert done.returncode == 0, (
            f"lm_eval exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        )
        yield out, server


def _lm_eval_samples(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(benchmark, problem id) -> lm-eval's logged sample."""
    samples = {}
    for path in out.rglob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            sample = json.loads(line)
            samples[(sample["doc"]["benchmark"], sample["doc"]["problem_id"])] = sample
    return samples


def test_lm_eval_verdicts_are_the_runs(
    lm_eval_run: tuple[Path, FakeOpenAIServer], run_samples: list[dict[str, Any]]
) -> None:
    out, _ = lm_eval_run
    logged = _lm_eval_samples(out)
    assert len(run_samples) == len(BENCHMARKS) * LIMIT
    assert set(logged) == {(s["benchmark"], s["problem_id"]) for s in run_samples}
    verdicts = []
    for sample in run_samples:
        records = logged[(sample["benchmark"], sample["problem_id"])]["filtered_resps"][0]
        assert len(records) == 1
        record = json.loads(records[0])
        grade = sample["grade"]
        assert (record["verdict"], record["reason"], record["rule"]) == (
            grade["verdict"],
            grade["reason"],
            grade["rule"],
        ), sample["problem_id"]
        verdicts.append(record["verdict"])
        metric = logged[(sample["benchmark"], sample["problem_id"])]["pass@1"]
        assert metric == (1.0 if grade["verdict"] == "correct" else 0.0)
    # The recorded completions reach several verdicts, not only the reference programs' pass.
    assert {"correct", "wrong", "no_code", "runtime_error"} <= set(verdicts), verdicts


def test_lm_eval_sends_the_runs_prompt_and_sampling(
    lm_eval_run: tuple[Path, FakeOpenAIServer], run_samples: list[dict[str, Any]]
) -> None:
    _, server = lm_eval_run
    bodies = {seen.key: seen.body for seen in server.chat_requests()}
    for sample in run_samples:
        messages = sample["prompt"]["messages"]
        body = bodies[messages[-1]["content"]]
        assert body is not None
        assert body["messages"] == [{"role": m["role"], "content": m["content"]} for m in messages]
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.6, 1.0, 9600)
        assert body["stop"] == []


def test_lm_eval_reports_pass_at_1_under_the_rule(
    lm_eval_run: tuple[Path, FakeOpenAIServer], run_samples: list[dict[str, Any]]
) -> None:
    out, _ = lm_eval_run
    (results_file,) = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]
    for name in BENCHMARKS:
        graded = [s for s in run_samples if s["benchmark"] == name]
        passed = sum(s["grade"]["verdict"] == "correct" for s in graded)
        rule = {s["grade"]["rule"] for s in graded}.pop()
        assert results[task_name(name)][f"pass@1,{rule}"] == pytest.approx(passed / len(graded))


def test_shipped_configs_are_what_the_registry_renders() -> None:
    shipped = {path.name: path.read_text(encoding="utf-8") for path in tasks_dir().glob("*.yaml")}
    rendered = {file.name: file.text for file in render_configs()}
    assert shipped == rendered, "run `python -m trex_eval.integrations.lm_eval --write`"


def test_lm_eval_finds_every_task_and_suite_group(data_dir: Path) -> None:
    from lm_eval.tasks import TaskManager

    from trex_eval.benchmarks import shipped_spec_paths
    from trex_eval.benchmarks.suites import suites

    printed = subprocess.run(
        [sys.executable, "-m", "trex_eval.integrations.lm_eval", "--path"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert Path(printed) == tasks_dir()
    manager = TaskManager(include_path=printed, include_defaults=False)
    assert set(manager.all_subtasks) == {task_name(name) for name in shipped_spec_paths()}
    assert set(manager.all_groups) == {task_name(suite) for suite in suites()}
    # The T-Rex suite's group builds all four tasks, B4O-ORGEval (structure-graded) included,
    # each document carrying the run's prompt and the rule the task reports.
    loaded = manager.load(["trex_t_rex"])["tasks"]
    names = {task.config.task for task in loaded.values()}
    assert names == {task_name(name) for name in suites()["t-rex"]}
    orgeval = next(task for task in loaded.values() if task.config.task == "trex_b4o_orgeval")
    first = next(iter(orgeval.test_docs()))
    assert first["rule"] == "orgeval-exact@2" and first["user"] and first["benchmark"] == "b4o-orgeval"


def test_a_config_naming_another_rule_is_refused(data_dir: Path) -> None:
    from trex_eval.errors import ConfigError
    from trex_eval.integrations.lm_eval.docs import documents

    with pytest.raises(ConfigError, match=r"reports rule strict@2, but this trex-eval grades it by strict@3"):
        documents("nl4opt", rule="strict@2", data_dir=data_dir)
