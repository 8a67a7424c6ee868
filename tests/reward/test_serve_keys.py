"""``trex-eval serve`` reads a problem in every form ``trex-eval export-rl`` writes a key, on every
scoring endpoint, and scores only the benchmarks it serves unless ``--any-benchmark`` widens the
scope; the Python reward API has the same scope (``ScorerSettings.any_benchmark``). The real
command in a subprocess, real HTTP on loopback, files written by the real ``export-rl``, rollouts
graded in the real sandbox."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_process import trex_eval

from tests.reward.test_server import BENCH, Server, _start, _stop
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.loading import shipped_spec_paths
from trex_eval.errors import ConfigError
from trex_eval.records import Problem
from trex_eval.reward.catalogue import Catalogue, ScorerSettings
from trex_eval.reward.records import ProblemKey

OTHER = "optibench"
"""A shipped benchmark the module's server does not serve (its files lie in the data directory)."""

Row = dict[str, Any]
FORMS: dict[str, Callable[[Row, Row], Any]] = {
    "trl trex_problem (JSON text)": lambda trl, verl: trl["trex_problem"],
    "trl benchmark + problem_id columns": lambda trl, verl: {
        "benchmark": trl["benchmark"],
        "problem_id": trl["problem_id"],
    },
    "verl reward_model.ground_truth (JSON text)": lambda trl, verl: verl["reward_model"]["ground_truth"],
    "verl reward_model (whole)": lambda trl, verl: verl["reward_model"],
    "verl extra_info.trex_problem (JSON text)": lambda trl, verl: verl["extra_info"]["trex_problem"],
    "verl extra_info (whole)": lambda trl, verl: verl["extra_info"],
}
"""Each form of a row's key that an ``export-rl`` file holds, from its trl and verl rows."""

MANY_VALUES = json.dumps({"value": 1, "files": {f"f{i}": "" for i in range(350_000)}})
"""An inline problem as JSON text of about 700,000 values: one fits the values a body may hold
(MAX_JSON_VALUES, 1,048,576), two keys of it in one body do not."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Server]:
    started = _start(tmp_path_factory.mktemp("keys"), "--data-dir", str(data_dir), "--workers", "2")
    yield started
    assert _stop(started) == 0


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, list[Row]]:
    """``export-rl``'s rows of BENCH, by layout (the files the user trains on)."""
    folder = tmp_path_factory.mktemp("export")
    rows = {}
    for layout in ("trl", "verl"):
        path = folder / f"{layout}.jsonl"
        trex_eval(
            "export-rl", "-b", BENCH, "--layout", layout, "--out", str(path), "--data-dir", str(data_dir)
        )
        rows[layout] = [json.loads(line) for line in path.read_text().splitlines()]
    return rows


def _distinct_rows(data_dir: Path, count: int) -> list[tuple[int, Problem]]:
    """``count`` rows of BENCH (index, problem) with distinct optima: a key read as another row's
    pays the reference program of this one 0."""
    seen: set[object] = set()
    chosen = []
    for index, problem in enumerate(load_benchmark(BENCH, data_dir=data_dir).problems):
        value = problem.reference.value  # type: ignore[union-attr]
        if value not in seen:
            seen.add(value)
            chosen.append((index, problem))
        if len(chosen) == count:
            return chosen
    raise AssertionError(f"{BENCH} has fewer than {count} distinct optima")


def test_every_form_export_rl_writes_is_scored_by_every_endpoint(
    server: Server, exported: dict[str, list[Row]], data_dir: Path
) -> None:
    rows = _distinct_rows(data_dir, len(FORMS))
    got: dict[tuple[str, str], object] = {}
    with httpx.Client(timeout=180) as http:
        for (form, key_of), (index, problem) in zip(FORMS.items(), rows, strict=True):
            trl, verl = exported["trl"][index], exported["verl"][index]
            assert trl["problem_id"] == problem.id
            key, text = key_of(trl, verl), reference_completion_text(problem)
            score = http.post(
                f"{server.url}/v1/score",
                json={"requests": [{"problem": key, "completion": text, "prompt": trl["prompt"]}]},
            )
            got[form, "/v1/score"] = (
                (score.json()["records"][0]["problem_id"], score.json()["records"][0]["reward"])
                if score.status_code == 200
                else score.text[:300]
            )
            reward = http.post(
                f"{server.url}/get_reward",
                json={"query": ["PROMPT" + text], "prompts": ["PROMPT"], "labels": [key]},
            )
            got[form, "/get_reward"] = (
                (problem.id, reward.json()["rewards"][0]) if reward.status_code == 200 else reward.text[:300]
            )
    expected = {
        (form, endpoint): (problem.id, 1.0)
        for form, (_, problem) in zip(FORMS, rows, strict=True)
        for endpoint in ("/v1/score", "/get_reward")
    }
    assert got == expected


def test_a_key_outside_the_served_benchmarks_is_refused_naming_it_and_the_flag(server: Server) -> None:
    key = {"benchmark": OTHER, "problem_id": "0"}
    with httpx.Client(timeout=60) as http:
        answers = [
            http.post(f"{server.url}/v1/score", json={"requests": [{"problem": form, "completion": "x"}]})
            for form in (key, json.dumps(key))
        ] + [
            http.post(f"{server.url}/get_reward", json={"query": ["x"], "labels": [form]})
            for form in (key, json.dumps(key))
        ]
        health = http.get(f"{server.url}/health").json()

    for answer in answers:
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert '{"benchmark": "optibench", "problem_id": "0"}' in error, error
        assert f"served: {BENCH}" in error and "--any-benchmark" in error, error
    assert list(health["benchmarks"]) == [BENCH]  # nothing of OTHER was loaded


def test_any_benchmark_widens_the_scope(tmp_path: Path, data_dir: Path) -> None:
    assert "--any-benchmark" in trex_eval("serve", "--help", columns=200).stdout
    problem = load_benchmark(OTHER, data_dir=data_dir).problems[0]
    key = {"benchmark": OTHER, "problem_id": problem.id}
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "1", "--any-benchmark")
    try:
        answer = httpx.post(
            f"{server.url}/v1/score",
            json={
                "requests": [{"problem": json.dumps(key), "completion": reference_completion_text(problem)}]
            },
            timeout=180,
        )
    finally:
        assert _stop(server) == 0

    assert answer.status_code == 200, answer.text
    record = answer.json()["records"][0]
    assert (record["benchmark"], record["reward"]) == (OTHER, 1.0)


def test_key_text_is_read_under_the_bounds_of_the_body(server: Server) -> None:
    cases = [
        ("/get_reward", {"query": ["x"], "labels": ["[" * 100_000]}, "labels[0]: the key's text nests"),
        ("/v1/score", {"requests": [{"problem": "[" * 100_000, "completion": "x"}]}, "requests[0].problem"),
        ("/get_reward", {"query": ["x"], "labels": ['{"value": NaN}']}, "not a finite number"),
        (
            "/v1/score",
            {"requests": [{"problem": json.dumps("11"), "completion": "x"}]},
            "JSON text of a string",
        ),
        ("/get_reward", {"query": ["x"], "labels": ["eleven"]}, "labels[0]: the key's text is not JSON"),
        (
            "/v1/score",
            {"requests": [{"problem": {"ground_truth": MANY_VALUES}, "completion": "x"}] * 2},
            "requests[1].problem.ground_truth: the problem keys sent as JSON text hold more than",
        ),
    ]
    with httpx.Client(timeout=60) as http:
        for path, body, message in cases:
            answer = http.post(f"{server.url}{path}", json=body)
            assert answer.status_code == 400, (path, answer.text[:300])
            assert message in answer.json()["error"], answer.text[:300]
        assert http.get(f"{server.url}/health").json()["status"] == "ok"


def test_the_python_api_has_the_same_scope(data_dir: Path) -> None:
    served = Catalogue(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir))
    served.open()
    with pytest.raises(ConfigError, match=r"served: b4o-feasible[\s\S]*any_benchmark=True"):
        served.target(ProblemKey(benchmark=OTHER, problem_id="0"))
    assert served.target(ProblemKey(benchmark=BENCH, problem_id="BENCH4OPT_2")).benchmark == BENCH

    # A benchmark named by its YAML's path is served under its own name too (as keys name it).
    by_path = Catalogue(ScorerSettings(benchmarks=(str(shipped_spec_paths()[BENCH]),), data_dir=data_dir))
    by_path.open()
    assert by_path.target(ProblemKey(benchmark=BENCH, problem_id="BENCH4OPT_2")).benchmark == BENCH

    widened = ScorerSettings.from_mapping(
        {"benchmarks": [BENCH], "data_dir": str(data_dir), "any_benchmark": True}, what="reward_kwargs"
    )
    wide = Catalogue(widened)
    wide.open()
    assert wide.target(ProblemKey(benchmark=OTHER, problem_id="0")).benchmark == OTHER
    assert ScorerSettings.from_mapping(widened.as_mapping()) == widened  # as it travels to Ray actors
