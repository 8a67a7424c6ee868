"""The trainer adapters, called exactly the way each trainer calls its reward function.

TRL's ``GRPOTrainer`` calls every ``reward_funcs`` entry as ``f(prompts=..., completions=...,
completion_ids=..., trainer_state=..., **columns)`` with one list per dataset column, and names its
log column after ``__name__``. verl loads ``custom_reward_function.path`` with
``importlib.util.spec_from_file_location`` under the name ``custom_module``, takes
``custom_reward_function.name`` from it and calls it with ``reward_kwargs`` appended to every call.
(Neither trainer installs on this CPU-only CI without torch; these are their loaders' steps.)
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.records import Problem
from trex_eval.reward import RewardScorer, ScorerSettings
from trex_eval.reward.problems import problem_from
from trex_eval.reward.trl import TrlReward

BENCH = "b4o-feasible"
LP = (
    "Here is the model.\n```python\nimport highspy\nh = highspy.Highs()\nh.silent()\n"
    "x = h.addVariable(lb=0, ub=3)\ny = h.addVariable(lb=0)\nh.addConstr(x + y <= 4)\n"
    "h.addConstr(x + 3 * y <= 6)\nh.maximize(3 * x + 2 * y)\n"
    "print(h.getInfo().objective_function_value)\n```"
)
"""A highspy program whose optimum is 11."""


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> list[Problem]:
    return list(load_benchmark(BENCH, data_dir=data_dir).problems[:2])


@pytest.fixture(scope="module")
def scorer(data_dir: Path) -> Iterator[RewardScorer]:
    with RewardScorer(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir)) as started:
        yield started


def test_trl_reward_func_takes_grpo_trainers_call(scorer: RewardScorer, rows: list[Problem]) -> None:
    reward = TrlReward(scorer=scorer)
    # Conversational completions, as GRPOTrainer passes them for a chat dataset.
    completions = [[{"role": "assistant", "content": reference_completion_text(p)}] for p in rows]
    completions += [[{"role": "assistant", "content": LP}], [{"role": "assistant", "content": LP}]]
    keys = [json.dumps({"benchmark": BENCH, "problem_id": p.id}) for p in rows]
    keys += [json.dumps({"value": 11.0}), json.dumps({"value": 10.0})]

    rewards = reward(
        prompts=[[{"role": "user", "content": p.question}] for p in rows] + [[], []],
        completions=completions,
        completion_ids=[[1, 2, 3]] * 4,
        trainer_state=object(),
        trex_problem=keys,
        difficulty=["easy"] * 4,  # another dataset column: passed along, ignored
    )

    assert rewards == [1.0, 1.0, 1.0, 0.0]
    assert reward.__name__ == "trex_eval"
    assert [r.verdict.value for r in reward.last_records] == ["correct", "correct", "correct", "wrong"]


def test_trl_reward_func_reads_benchmark_and_problem_id_columns(
    scorer: RewardScorer, rows: list[Problem]
) -> None:
    reward = TrlReward(scorer=scorer, name="or_reward")
    rewards = reward(
        prompts=["p"] * len(rows),
        completions=[reference_completion_text(p) for p in rows],
        benchmark=[BENCH] * len(rows),
        problem_id=[p.id for p in rows],
    )
    assert rewards == [1.0] * len(rows)
    with pytest.raises(ConfigError, match="name no problem"):
        reward(prompts=["p"], completions=["x"], difficulty=["easy"])


def _verl_function(name: str) -> Callable[..., Any]:
    """What verl's ``get_custom_reward_fn`` does with ``custom_reward_function.path``/``name``."""
    import trex_eval.reward.verl as shipped

    spec = importlib.util.spec_from_file_location("custom_module", shipped.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    return getattr(module, name)  # type: ignore[no-any-return]


def test_verl_compute_score_and_batch_form_load_from_the_file(rows: list[Problem], data_dir: Path) -> None:
    reward_kwargs = {"data_dir": str(data_dir), "benchmarks": [BENCH], "workers": 1}
    compute_score = _verl_function("compute_score")
    batch = _verl_function("compute_score_batch")

    one = compute_score(
        data_source=BENCH,
        solution_str=reference_completion_text(rows[0]),
        ground_truth=json.dumps({"benchmark": BENCH, "problem_id": rows[0].id}),
        extra_info={"index": 0},
        **reward_kwargs,
    )
    many = batch(
        data_sources=["inline", "inline", BENCH],
        solution_strs=[LP, LP, reference_completion_text(rows[1])],
        ground_truths=["11", 12.5, "ignored: extra_info names the problem"],
        extra_infos=[None, {}, {"trex_problem": {"benchmark": BENCH, "problem_id": rows[1].id}}],
        **reward_kwargs,
    )

    assert one == {"score": 1.0, "correct": 1.0, "graded": 1.0}
    assert many == [
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
        {"score": 0.0, "correct": 0.0, "graded": 1.0},
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
    ]
    with pytest.raises(ConfigError, match="already scores"):
        compute_score(data_source="x", solution_str=LP, ground_truth="11", policy="staged", **reward_kwargs)
    with pytest.raises(ConfigError, match="unknown reward_kwargs: temperature"):
        compute_score(data_source="x", solution_str=LP, ground_truth="11", temperature=1.0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{not json", "is not JSON"),
        ({"benchmark": BENCH}, "field problem_id"),
        ([1, 2], "a list names no problem"),
        (True, "a bool names no problem"),
    ],
)
def test_a_label_that_names_no_problem_says_where(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        problem_from(value, where="labels[3]")
    assert "labels[3]" in str(raised.value)
