"""Repair as a multi-turn RL environment (``trex_eval.reward.environment``, ``POST /v1/step``):
episodes graded in the real sandbox, the real ``trex-eval serve`` spoken to over loopback HTTP,
the TRL and verl shapes driven against it. The label never reaches an answer."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.protocols.repair import RepairTemplate
from trex_eval.records import Problem
from trex_eval.reward.endpoints import HttpError
from trex_eval.reward.environment import MAX_TURNS, OVER, RepairEpisode
from trex_eval.reward.records import InlineProblem
from trex_eval.reward.repair_client import REWARDS_FIELD, RepairEnvironment, RepairTool
from trex_eval.reward.scorer import RewardScorer, ScorerSettings
from trex_eval.reward.service import RewardService, ServiceLimits
from trex_eval.reward.sessions import RepairSessions

BENCH = "b4o-feasible"
LP = (
    "```python\nimport pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
)
"""Optimum 11."""
SYNTAX = "```python\nimport pulp\np = pulp.LpProblem('lp'\n```"
NO_SOLVE = "```python\nprint('thinking about it')\n```"
CRASH = "```python\nraise ValueError('no model yet')\n```"


# ---------------------------------------------------------------------- episodes, in process


@pytest.fixture(scope="module")
def staged(data_dir: Path) -> Iterator[RewardScorer]:
    with RewardScorer(ScorerSettings(policy="staged@2", data_dir=data_dir, workers=1)) as started:
        yield started


def _episode(scorer: RewardScorer, *, turns: int) -> RepairEpisode:
    target = scorer.target(InlineProblem(value=11.0))
    return RepairEpisode(scorer, target, template=RepairTemplate(), turns=turns)


async def _play(episode: RepairEpisode, answers: list[str]) -> list[tuple[float | None, float | None, bool]]:
    played = []
    for text in answers:
        answer = await episode.step(text)
        played.append((answer.record.reward, answer.progress, answer.done))
    return played


def test_breaking_a_program_and_fixing_it_again_earns_no_progress(staged: RewardScorer) -> None:
    honest = asyncio.run(_play(_episode(staged, turns=4), [NO_SOLVE, LP]))
    gaming = asyncio.run(_play(_episode(staged, turns=4), [NO_SOLVE, CRASH, NO_SOLVE, LP]))

    assert honest == [(0.2, 0.2, False), (1.0, 0.8, True)]
    # The crash pays less than the turn before it, and the turn that only undoes it adds nothing:
    # a per-turn delta against the previous turn would have paid 0.1 for it.
    assert gaming == [(0.2, 0.2, False), (0.1, 0.0, False), (0.2, 0.0, False), (1.0, 0.8, True)]
    assert sum(p or 0.0 for _, p, _ in gaming) == sum(p or 0.0 for _, p, _ in honest) == 1.0


def test_feedback_is_the_repair_feedback_and_the_last_turn_is_paid(staged: RewardScorer) -> None:
    episode = _episode(staged, turns=2)
    first = asyncio.run(episode.step(SYNTAX))
    assert (first.turn, first.done, first.reward, first.failure) == (1, False, None, "syntax_error")
    assert first.feedback.startswith("Your program could not be run: Python reported a syntax error.")
    assert "SyntaxError" in first.feedback and "11" not in first.feedback

    last = asyncio.run(episode.step(NO_SOLVE))  # the last turn, still failing: paid as it is
    assert (last.turn, last.done, last.reward, last.feedback) == (2, True, 0.2, OVER)
    assert last.rewards == (0.1, 0.2)  # staged@2 pays a program it could extract 0.1
    with pytest.raises(ConfigError, match="over after 2 turn"):
        asyncio.run(episode.step(LP))


def _numbers_equal_to(value: object, label: float) -> list[object]:
    """Every leaf of a JSON value that is ``label``: a number equal to it, or a text holding it as
    a whole number token."""
    if isinstance(value, dict):
        return [found for item in value.values() for found in _numbers_equal_to(item, label)]
    if isinstance(value, list):
        return [found for item in value for found in _numbers_equal_to(item, label)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [value] if float(value) == label else []
    tokens = re.findall(r"(?<![\d.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\d.])", str(value))
    return [value] if any(float(token) == label for token in tokens) else []


def test_a_solved_model_ends_the_episode_without_saying_whether_it_is_right(staged: RewardScorer) -> None:
    target = staged.target(InlineProblem(value=12.0))  # the LP's optimum is 11: wrong, but optimal
    episode = RepairEpisode(staged, target, template=RepairTemplate(), turns=3)
    answer = asyncio.run(episode.step(LP))
    assert (answer.done, answer.feedback, answer.failure, answer.reward) == (True, OVER, None, 0.5)
    # The label (12) in no field: as a number, or as a number in any text (timings such as
    # 0.0129 s are not the label; a substring search once took them for it).
    assert not _numbers_equal_to(json.loads(answer.model_dump_json()), 12.0)


def test_turns_are_bounded(staged: RewardScorer) -> None:
    target = staged.target(InlineProblem(value=11.0))
    for turns in (0, MAX_TURNS + 1, True):
        with pytest.raises(ConfigError, match=f"from 1 to {MAX_TURNS}"):
            RepairEpisode(staged, target, template=RepairTemplate(), turns=turns)


def test_the_session_table_is_bounded_and_forgets_idle_sessions(staged: RewardScorer) -> None:
    now = [0.0]
    service = RewardService(staged, ServiceLimits())
    sessions = RepairSessions(service, max_sessions=2, idle_timeout_s=30.0, clock=lambda: now[0])

    async def scenario() -> None:
        opened = [await sessions.step({"problem": {"value": 11}, "completion": NO_SOLVE}) for _ in range(2)]
        ids = [str(answer["session"]) for answer in opened]
        assert len(set(ids)) == 2 and all(re.fullmatch(r"[A-Za-z0-9_-]{32}", sid) for sid in ids)
        with pytest.raises(HttpError) as full:
            await sessions.step({"problem": {"value": 11}, "completion": NO_SOLVE})
        assert full.value.status == 429 and ("retry-after", "5") in full.value.headers
        now[0] = 20.0
        await sessions.step({"session": ids[0], "completion": NO_SOLVE})  # keeps the first alive
        now[0] = 45.0  # the second has waited 45 s: forgotten
        with pytest.raises(HttpError) as expired:
            await sessions.step({"session": ids[1], "completion": LP})
        assert expired.value.status == 404 and "30 s" in expired.value.message
        assert len(sessions) == 1
        reopened = await sessions.step({"problem": {"value": 11}, "completion": LP})
        assert reopened["done"] is True and len(sessions) == 1  # a finished episode is forgotten

    asyncio.run(scenario())


# ---------------------------------------------------------------------- over HTTP, a real serve


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "serve", "-b", BENCH, "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    found = re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline())
    if found is None:
        process.kill()
        raise AssertionError(f"serve did not start: {process.communicate()[1][-2000:]}")
    try:
        yield found.group(0)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0


@pytest.fixture(scope="module")
def row(data_dir: Path) -> Problem:
    return load_benchmark(BENCH, data_dir=data_dir).problems[0]


def _step(url: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{url}/v1/step", json=body, timeout=180)


def _labels(problem: Problem) -> set[str]:
    reference = problem.reference
    value = getattr(reference, "value", None)
    found = {str(getattr(reference, "label", "") or "")} - {""}
    if isinstance(value, float):
        found |= {repr(value), f"{value:g}", f"{value:.2f}"}
    return found


def test_a_wrong_program_then_a_right_one_over_http(served: str, row: Problem) -> None:
    key = {"benchmark": BENCH, "problem_id": row.id}
    first = _step(served, {"problem": key, "completion": SYNTAX, "turns": 3})
    assert first.status_code == 200, first.text
    opened = first.json()
    assert (opened["turn"], opened["turns"], opened["done"], opened["reward"]) == (1, 3, False, None)
    assert opened["failure"] == "syntax_error" and "syntax error" in opened["feedback"]
    assert opened["record"]["verdict"] != "correct"

    second = _step(served, {"session": opened["session"], "completion": reference_completion_text(row)})
    assert second.status_code == 200, second.text
    closed = second.json()
    assert (closed["turn"], closed["done"], closed["reward"], closed["progress"]) == (2, True, 1.0, 1.0)
    assert closed["record"]["verdict"] == "correct" and closed["session"] == opened["session"]

    # The label, in every form, is in no answer: not in the feedback, the reason, the evidence.
    # (A correct program's own objective is its own; the record's ``objective`` is left out.)
    for answer in (opened, closed):
        text = json.dumps({**answer, "record": {**answer["record"], "objective": None}})
        assert not [label for label in _labels(row) if label in text], text

    again = _step(served, {"session": opened["session"], "completion": LP})
    assert again.status_code == 404 and "ended" in again.json()["error"]


def test_refusals_over_http_are_clear(served: str, row: Problem) -> None:
    key = {"benchmark": BENCH, "problem_id": row.id}
    cases: dict[int, list[dict[str, object]]] = {
        400: [
            {"completion": LP},  # neither session nor problem
            {"problem": key},  # no completion
            {"problem": key, "completion": LP, "turns": MAX_TURNS + 1},
            {"problem": {"benchmark": "nl4opt", "problem_id": "1"}, "completion": LP},
            {"problem": key, "completion": LP, "label": 3},
            {"session": 7, "completion": LP},
        ],
        404: [{"session": "x" * 32, "completion": LP}],
    }
    for status, bodies in cases.items():
        for body in bodies:
            answer = _step(served, body)
            assert answer.status_code == status, (body, answer.text)
            assert "/v1/step" in answer.json()["error"] or "benchmark" in answer.json()["error"]
    assert httpx.post(f"{served}/v1/step", content=b"{", timeout=30).status_code == 400
    assert httpx.get(f"{served}/v1/step", timeout=30).status_code == 405


def test_the_trl_environment_and_the_verl_tool_over_http(served: str, row: Problem) -> None:
    environment = RepairEnvironment.factory(served, turns=3)()
    assert environment.reset(trex_problem=json.dumps({"benchmark": BENCH, "problem_id": row.id})) is None
    feedback = environment.run_program("import pulp\np = pulp.LpProblem('lp'")  # unfenced: fenced for it
    assert "syntax error" in feedback
    code = reference_completion_text(row)
    assert environment.run_program(code) == OVER
    assert environment.get_reward() == 1.0
    assert environment.run_program(code) == OVER  # over: nothing more runs
    assert len(environment.answers) == 2
    environment.reset(benchmark=BENCH, problem_id=row.id)
    assert environment.get_reward() == 0.0  # a rollout that ran nothing earns nothing

    tool = RepairTool({"url": served, "turns": 2})
    agent = SimpleNamespace(extra_fields={})

    async def trajectory() -> list[tuple[str, float]]:
        said = []
        for program in (SYNTAX, code):  # verl creates and releases an instance around each call
            instance, _ = await tool.create(
                create_kwargs={"problem": {"benchmark": BENCH, "problem_id": row.id}}
            )
            response, reward, _ = await tool.execute(instance, {"program": program}, agent_data=agent)
            await tool.release(instance)
            said.append((response.text, reward))
        return said

    said = asyncio.run(trajectory())
    assert "syntax error" in said[0][0] and said[1] == (OVER, 1.0)
    assert agent.extra_fields[REWARDS_FIELD] == [0.0, 1.0]
    assert tool.tool_schema.model_dump()["function"]["name"] == tool.name == "run_program"
