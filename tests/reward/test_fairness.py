"""Fair lanes and "no reward": one request's rollouts cannot push another request past its
deadline while that request's own work fits it, and a rollout the server did not grade in time is
answered ``null`` (verdict ``not_run``), never 0.0, which each adapter maps as its trainer expects.

Real parts throughout: the real sandbox pool behind a real scorer, the service API, and the real
``trex-eval serve`` over loopback HTTP. Timing margins are at least 2x both ways: a sleeper's
seconds are wall time, not CPU, so they hold on a loaded machine.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reward.test_server import _score, _start, _stop
from trex_eval import fairness as fair
from trex_eval.errors import ConfigError
from trex_eval.records import Verdict
from trex_eval.reward import InlineProblem, RewardRecord, RewardRequest, RewardScorer, ScorerSettings
from trex_eval.reward.client import RemoteReward
from trex_eval.reward.service import RewardService, ServiceLimits
from trex_eval.reward.trl import TrlReward
from trex_eval.reward.verl import compute_score, verl_dict

LP = (
    "```python\nimport highspy\nh = highspy.Highs()\nh.silent()\nx = h.addVariable(lb=0, ub=3)\n"
    "y = h.addVariable(lb=0)\nh.addConstr(x + y <= 4)\nh.addConstr(x + 3 * y <= 6)\n"
    "h.maximize(3 * x + 2 * y)\nprint(h.getInfo().objective_function_value)\n```"
)
"""A highspy program whose optimum is 11 (well under a second in a warm lane)."""
SLEEPER = LP.replace("import highspy\n", "import time\ntime.sleep({seconds})\nimport highspy\n", 1)
"""Sleeps (wall time, no CPU), then solves the LP: correct, and slow."""
MEMORY_HOG = "```python\nx = bytearray(8 << 30)\n```"
"""Runs over its own memory limit: a failure of its own, graded and paid."""
ELEVEN = InlineProblem(value=11.0)


@pytest.fixture(scope="module")
def scorer(data_dir: Path) -> Iterator[RewardScorer]:
    with RewardScorer(ScorerSettings(data_dir=data_dir, workers=2)) as started:
        yield started


def _rollouts(*texts: str) -> list[RewardRequest]:
    return [RewardRequest(problem=ELEVEN, completion=text) for text in texts]


def test_a_free_slot_goes_to_the_request_holding_fewest() -> None:
    """The order itself: a tenant's twelve waiters do not keep another tenant's one behind them."""
    gate = fair.FairGate(2, name="lane")
    granted: list[str] = []

    async def take(tenant: str, hold: asyncio.Event) -> None:
        with fair.scope(tenant):
            grant = await gate.acquire()
        granted.append(tenant)
        await hold.wait()
        grant.release()

    async def main() -> None:
        holds = [asyncio.Event() for _ in range(13)]
        tasks = [asyncio.ensure_future(take("many", hold)) for hold in holds[:12]]
        await asyncio.sleep(0.05)
        tasks.append(asyncio.ensure_future(take("one", holds[12])))
        await asyncio.sleep(0.05)
        assert granted == ["many", "many"]  # both slots held; eleven waiters ahead of "one"
        holds[0].set()
        await asyncio.sleep(0.05)
        assert granted == ["many", "many", "one"]
        assert gate.snapshot()["held"] == {"many": 1, "one": 1}
        for hold in holds:
            hold.set()
        await asyncio.gather(*tasks)
        assert gate.snapshot()["free"] == 2 and gate.snapshot()["waiting"] == {}

    asyncio.run(main())


def test_a_waiter_whose_deadline_passes_gives_its_place_up() -> None:
    gate = fair.FairGate(1, name="lane")

    async def main() -> None:
        held = await gate.acquire()
        late = fair.scope("late", deadline=time.monotonic() + 0.2)
        with late, pytest.raises(fair.DeadlinePassed, match=r"waited \d+\.\d s for a lane"):
            await gate.acquire()
        assert gate.snapshot()["waiting"] == {}
        held.release()
        assert gate.snapshot()["free"] == 1

    asyncio.run(main())


def test_many_rollouts_of_one_request_do_not_push_an_honest_one_past_its_deadline(
    scorer: RewardScorer,
) -> None:
    """Six 3 s sleepers on two lanes take 9 s; an honest rollout sent after them with a 7 s
    deadline needs one lane to free (3 s at most) and its own second: first come first served, it
    waited for all six and missed its deadline."""

    async def main() -> tuple[list[RewardRecord], list[RewardRecord], float]:
        service = RewardService(scorer, ServiceLimits())
        many = asyncio.ensure_future(service.score(_rollouts(*[SLEEPER.format(seconds=3)] * 6)))
        await asyncio.sleep(0.5)
        sent = time.monotonic()
        honest = await service.score(_rollouts(LP), deadline_s=7.0)
        waited = time.monotonic() - sent
        return honest, await many, waited

    honest, many, waited = asyncio.run(main())

    assert [(r.reward, r.verdict) for r in honest] == [(1.0, Verdict.CORRECT)], honest[0].reason
    assert waited < 7.0
    assert [r.reward for r in many] == [1.0] * 6  # its own work fits its own (default) deadline


def test_a_rollout_not_graded_by_its_deadline_has_no_reward(scorer: RewardScorer) -> None:
    """The issue's lane hog scaled down: two 6 s sleepers hold both lanes, and an honest rollout
    with a 2.5 s deadline cannot get one. It is answered null, not_run, saying where it was; the
    hog's own memory failure, graded within its deadline, is paid 0.0."""

    async def main() -> tuple[list[RewardRecord], list[RewardRecord], str]:
        service = RewardService(scorer, ServiceLimits())
        hog = asyncio.ensure_future(service.score(_rollouts(*[SLEEPER.format(seconds=6)] * 2, MEMORY_HOG)))
        await asyncio.sleep(0.5)
        honest = await service.score(_rollouts(LP), deadline_s=2.5)
        await asyncio.sleep(0.3)
        pending = service.pending  # the honest rollout gave its place up at its deadline
        hogged = await hog
        assert pending == 3, pending
        return honest, hogged, service.metrics()

    honest, hogged, metrics = asyncio.run(main())

    [record] = honest
    assert record.reward is None and record.verdict is Verdict.NOT_RUN and record.stage == "not_graded"
    assert "deadline (2.5 s)" in record.reason and "sandbox lane" in record.reason, record.reason
    assert record.model_dump(mode="json")["reward"] is None  # JSON null on the wire
    assert [(r.reward, r.verdict) for r in hogged] == [
        (1.0, Verdict.CORRECT),
        (1.0, Verdict.CORRECT),
        (0.0, Verdict.MEMORY_LIMIT),
    ]
    assert 'trex_reward_not_graded_total{cause="deadline"} 1' in metrics
    assert 'trex_reward_not_graded_total{cause="harness_failure"} 0' in metrics


def test_a_rollout_running_at_its_deadline_gives_its_lane_back_then(scorer: RewardScorer) -> None:
    """Two 30 s sleepers in a request due in 2 s: their wall limits are cut to the deadline, so
    both lanes are free soon after it, not 30 s later, and the next request is graded in time."""

    async def main() -> tuple[list[RewardRecord], list[RewardRecord], int]:
        service = RewardService(scorer, ServiceLimits())
        slow = await service.score(_rollouts(*[SLEEPER.format(seconds=30)] * 2), deadline_s=2.0)
        after = await service.score(_rollouts(LP, LP), deadline_s=8.0)
        return slow, after, service.pending

    slow, after, pending = asyncio.run(main())

    assert [(r.reward, r.verdict) for r in slow] == [(None, Verdict.NOT_RUN)] * 2
    assert all("holding a sandbox lane" in r.reason for r in slow), [r.reason for r in slow]
    assert [(r.reward, r.verdict) for r in after] == [(1.0, Verdict.CORRECT)] * 2, [r.reason for r in after]
    assert pending == 0


def test_trl_takes_none_and_verl_a_flagged_fallback(scorer: RewardScorer) -> None:
    hog = TrlReward(scorer=scorer)
    hogging = threading.Thread(
        target=hog,
        kwargs={"completions": [SLEEPER.format(seconds=6)] * 2, "trex_problem": ['{"value": 11}'] * 2},
    )
    hogging.start()
    time.sleep(0.5)
    honest = TrlReward(scorer=scorer, deadline_s=2.0)
    rewards = honest(prompts=["p", "p"], completions=[LP, "no program"], trex_problem=['{"value": 11}'] * 2)
    hogging.join(timeout=60)

    # The program got no lane in 2 s: no reward. The answer without a program needed none: graded.
    assert rewards == [None, 0.0]
    assert [r.verdict for r in honest.last_records] == [Verdict.NOT_RUN, Verdict.NO_CODE]
    missed, graded = honest.last_records
    assert verl_dict(missed) == {"score": 0.0, "correct": 0.0, "graded": 0.0}
    assert verl_dict(missed, no_reward_score=-1.0)["score"] == -1.0
    assert verl_dict(graded) == {"score": 0.0, "correct": 0.0, "graded": 1.0}
    with pytest.raises(ConfigError, match="no_reward_score must be a finite number"):
        compute_score(data_source="x", solution_str=LP, ground_truth="11", no_reward_score=float("nan"))
    with pytest.raises(ConfigError, match="deadline_s must be a positive number"):
        compute_score(data_source="x", solution_str=LP, ground_truth="11", deadline_s=0)


def test_remote_reward_maps_the_servers_null_to_none(tmp_path: Path, data_dir: Path) -> None:
    """Over real HTTP: the server answers null for the rollout it could not grade, RemoteReward
    gives TRL None, OpenRLHF's endpoint pays 0.0 flagged graded 0.0, and /metrics counts it."""
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "2")
    try:
        hog = threading.Thread(
            target=_score,
            args=(server, [{"problem": {"value": 11}, "completion": SLEEPER.format(seconds=8)}] * 2),
        )
        hog.start()
        time.sleep(1.0)
        remote = RemoteReward(server.url, timeout_s=1.5)
        rewards = remote(completions=[LP], trex_problem=['{"value": 11}'])
        openrlhf = httpx.post(
            f"{server.url}/get_reward",
            json={"query": [LP], "labels": ['{"value": 11}'], "deadline_s": 1.5},
            timeout=60,
        )
        metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
        hog.join(timeout=60)
        remote.close()
    finally:
        code = _stop(server)

    assert code == 0
    assert rewards == [None]
    assert remote.last_records[0]["reward"] is None and remote.last_records[0]["verdict"] == "not_run"
    assert openrlhf.status_code == 200, openrlhf.text
    assert openrlhf.json()["rewards"] == [0.0] and openrlhf.json()["extra_logs"]["graded"] == [0.0]
    found = re.search(r'trex_reward_not_graded_total\{cause="deadline"\} (\d+)', metrics)
    assert found is not None and int(found.group(1)) == 2, metrics
