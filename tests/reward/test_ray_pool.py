"""The reward API on a real local Ray cluster: a head and a second node (two raylets, Ray's own
``cluster_utils.Cluster``), one scorer actor on each, each with its own sandbox pool; the verdicts
equal the local scorer's, rollout for rollout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_loopback import loopback_cluster

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.reward import InlineProblem, ProblemKey, RewardRequest, RewardScorer, ScorerSettings
from trex_eval.reward.ray_pool import RayPoolSettings, RayRewardPool

pytest.importorskip("ray")

BENCH = "b4o-feasible"
LP = (
    "```python\nimport pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    with loopback_cluster() as address:
        yield address


def _requests(data_dir: Path) -> list[RewardRequest]:
    rows = load_benchmark(BENCH, data_dir=data_dir).problems[:4]
    found = [
        RewardRequest(
            problem=ProblemKey(benchmark=BENCH, problem_id=p.id), completion=reference_completion_text(p)
        )
        for p in rows
    ]
    found.append(RewardRequest(problem=ProblemKey(benchmark=BENCH, problem_id=rows[0].id), completion=LP))
    found += [
        RewardRequest(problem=InlineProblem(value=11.0), completion=LP),
        RewardRequest(problem=InlineProblem(value=12.0), completion=LP),
        RewardRequest(
            problem=InlineProblem(value=11.0), completion="```python\nimport os\nwhile True: os.fork()\n```"
        ),
        RewardRequest(problem=InlineProblem(value=11.0), completion="no program"),
    ]
    return found


def test_the_ray_pool_gives_the_local_pools_verdicts(cluster: str, data_dir: Path) -> None:
    settings = ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir, workers=1)
    requests = _requests(data_dir)
    with RewardScorer(settings) as local:
        expected = local.score(requests)

    pool = RayRewardPool(settings, RayPoolSettings(address=cluster, cpus_per_actor=1))
    with pool:
        got = pool.score(requests)
        described = pool.describe()

    assert described["ray"]["actors"] == 2  # type: ignore[index]
    assert [(r.reward, r.verdict, r.rule, r.policy, r.stage) for r in got] == [
        (r.reward, r.verdict, r.rule, r.policy, r.stage) for r in expected
    ]
    assert [r.reward for r in got] == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
