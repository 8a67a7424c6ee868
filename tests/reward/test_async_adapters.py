"""The awaitable adapters, awaited the way each trainer awaits them, inside a running event loop.

TRL (1.16) sorts ``reward_funcs`` with ``trl.trainer.utils.is_async_callable`` (an instance counts
when its ``__call__`` is a coroutine function), starts one event loop on a daemon thread and runs
each step's async rewards there with ``asyncio.run_coroutine_threadsafe``. verl's reward loop loads
``reward.custom_reward_function`` from its file, wraps it in ``partial(_call_with_kwargs_async,
raw_fn, reward_kwargs)`` when ``inspect.iscoroutinefunction(raw_fn)``, and awaits it once per
rollout, many at once, adding keys of its own (``reward_router_address``...). Where the TRL
virtualenv of ``.ci/run`` exists, TRL's own ``GRPOTrainer._calculate_rewards`` is run against the
real ``trex-eval serve``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from trl_setup import serving, trainer_python

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.records import Problem
from trex_eval.reward import RewardScorer, ScorerSettings
from trex_eval.reward.client import AsyncRemoteReward
from trex_eval.reward.trl import AsyncTrlReward

T = TypeVar("T")
BENCH = "b4o-feasible"
REPO = Path(__file__).resolve().parents[2]
LP = (
    "```python\nimport highspy\nh = highspy.Highs()\nh.silent()\n"
    "x = h.addVariable(lb=0, ub=3)\ny = h.addVariable(lb=0)\nh.addConstr(x + y <= 4)\n"
    "h.addConstr(x + 3 * y <= 6)\nh.maximize(3 * x + 2 * y)\n"
    "print(h.getInfo().objective_function_value)\n```"
)
"""A highspy program whose optimum is 11."""


class DaemonLoop:
    """TRL's ``start_event_loop_in_daemon``: one loop on a daemon thread, fed from the caller's."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=600)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> list[Problem]:
    return list(load_benchmark(BENCH, data_dir=data_dir).problems[:2])


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonLoop]:
    started = DaemonLoop()
    yield started
    started.close()


def _columns(rows: list[Problem]) -> dict[str, Any]:
    keys = [json.dumps({"benchmark": BENCH, "problem_id": p.id}) for p in rows]
    return {
        "prompts": [p.question for p in rows] + ["", ""],
        "completions": [reference_completion_text(p) for p in rows] + [LP, LP],
        "completion_ids": [[1]] * 4,
        "trex_problem": [*keys, json.dumps({"value": 11.0}), json.dumps({"value": 10.0})],
    }


def test_async_trl_reward_is_awaited_on_trls_loop(
    data_dir: Path, rows: list[Problem], daemon: DaemonLoop
) -> None:
    with RewardScorer(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir, workers=2)) as scorer:
        reward = AsyncTrlReward(scorer=scorer)
        assert inspect.iscoroutinefunction(reward.__call__)  # what is_async_callable reads

        async def step() -> list[list[float | None]]:  # two async reward funcs of one step, gathered
            return list(await asyncio.gather(reward(**_columns(rows)), reward(**_columns(rows))))

        assert daemon.run(step()) == [[1.0, 1.0, 1.0, 0.0]] * 2
        assert [r.verdict.value for r in reward.last_records] == ["correct", "correct", "correct", "wrong"]


def _verl_loaded(name: str, reward_kwargs: dict[str, Any]) -> Callable[..., Any]:
    """What verl's ``get_custom_reward_fn`` returns for ``reward.custom_reward_function``."""
    import trex_eval.reward.verl as shipped

    spec = importlib.util.spec_from_file_location("custom_module", shipped.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    raw_fn = getattr(module, name)

    async def call_with_kwargs_async(raw_fn: Any, extra: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        return await raw_fn(*args, **{**kwargs, **extra})

    def call_with_kwargs(raw_fn: Any, extra: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        return raw_fn(*args, **{**kwargs, **extra})

    wrapper = call_with_kwargs_async if inspect.iscoroutinefunction(raw_fn) else call_with_kwargs
    return functools.partial(wrapper, raw_fn, reward_kwargs)


def test_verl_async_compute_score_runs_inside_the_reward_loop(rows: list[Problem], data_dir: Path) -> None:
    # The settings of tests/reward/test_adapters.py: one process, one scorer (reward/shared.py).
    reward_kwargs = {"data_dir": str(data_dir), "benchmarks": [BENCH], "workers": 1}
    compute_score = _verl_loaded("compute_score_async", reward_kwargs)
    blocking = _verl_loaded("compute_score", reward_kwargs)
    assert inspect.iscoroutinefunction(compute_score)  # the reward manager's is_async_reward_score
    verl_keys = {"reward_router_address": None, "reward_model_tokenizer": None}
    items = [
        (reference_completion_text(rows[0]), json.dumps({"benchmark": BENCH, "problem_id": rows[0].id})),
        (LP, "11"),
        (LP, "12.5"),
    ]

    async def reward_loop() -> list[dict[str, float]]:
        with pytest.raises(ConfigError, match="compute_score_async"):
            blocking(data_source=BENCH, solution_str=LP, ground_truth="11", extra_info={}, **verl_keys)
        return list(
            await asyncio.gather(
                *(
                    compute_score(
                        data_source=BENCH, solution_str=text, ground_truth=truth, extra_info={}, **verl_keys
                    )
                    for text, truth in items
                )
            )
        )

    assert asyncio.run(reward_loop()) == [
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
        {"score": 0.0, "correct": 0.0, "graded": 1.0},
    ]


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[str]:
    with serving("-b", BENCH, "--data-dir", str(data_dir)) as address:
        yield address


def test_async_remote_reward_on_trls_loop_and_on_another(
    serve_url: str, rows: list[Problem], daemon: DaemonLoop
) -> None:
    reward = AsyncRemoteReward(serve_url)
    assert inspect.iscoroutinefunction(reward.__call__)

    async def step() -> list[list[float | None]]:
        return await asyncio.gather(*(reward(**_columns(rows)) for _ in range(3)))

    assert daemon.run(step()) == [[1.0, 1.0, 1.0, 0.0]] * 3
    # Another loop (a second asyncio.run) gets a client of its own: the first one's connections
    # belong to TRL's loop.
    assert asyncio.run(reward(**_columns(rows))) == [1.0, 1.0, 1.0, 0.0]
    assert [r["verdict"] for r in reward.last_records] == ["correct", "correct", "correct", "wrong"]
    daemon.run(reward.aclose())


TRL_STEP = """
import json, sys, types
import torch
from trl import GRPOTrainer
from trl.trainer.utils import is_async_callable, start_event_loop_in_daemon
from trex_eval.reward.client import AsyncRemoteReward, RemoteReward

url, columns = sys.argv[1], json.loads(sys.argv[2])
funcs = [RemoteReward(url, name="sync"), AsyncRemoteReward(url, name="async")]
trainer = types.SimpleNamespace(
    accelerator=types.SimpleNamespace(device=torch.device("cpu"), is_main_process=True),
    args=types.SimpleNamespace(report_to=[]), state=types.SimpleNamespace(global_step=0),
    reward_funcs=funcs, reward_processing_classes=[None, None], reward_func_names=["sync", "async"],
    _log_completion_extra=lambda *a, **k: None, _log_metric=lambda *a, **k: None, environments=None,
)
assert [is_async_callable(f) for f in funcs] == [False, True]
_, trainer.async_loop, ready = start_event_loop_in_daemon(name="GRPOTrainer-AsyncLoop")
ready.wait()
prompts, completions = columns.pop("prompts"), columns.pop("completions")
inputs = [{"prompt": p, **{k: v[i] for k, v in columns.items()}} for i, p in enumerate(prompts)]
steps = [
    GRPOTrainer._calculate_rewards(trainer, inputs, prompts, completions, [[1]] * len(prompts)).tolist()
    for _ in range(2)
]
print(json.dumps(steps))
"""


def test_trls_own_reward_step_awaits_async_remote_reward(serve_url: str, rows: list[Problem]) -> None:
    python = trainer_python()
    columns = _columns(rows)
    del columns["completion_ids"]
    ran = subprocess.run(
        [str(python), "-c", TRL_STEP, serve_url, json.dumps(columns)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "TQDM_DISABLE": "1"},
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    steps = json.loads(ran.stdout.strip().splitlines()[-1])
    assert steps == [[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]] * 2  # [sync, async] per rollout
