"""``trex-eval serve``'s limits on what one request carries, as a trainer meets them: the real
command in a subprocess, over real HTTP on loopback. ``--max-batch`` refuses a larger request (413
naming the flag, on both scoring endpoints, before any rollout is read) and is refused at start-up
above ``--max-pending``; a request carrying more rollouts of one problem than ``--per-problem`` is
scored and paid whole, its rollouts past the limit stored in the next epoch, and the operator is
told once, with the flag and the group size seen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.reward.test_server import BENCH, _score, _start, _stop
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.report.runs import load_run


def _metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(f"{name} ")))


def test_max_batch_refuses_a_larger_request_on_both_endpoints_naming_the_flag(
    tmp_path: Path, data_dir: Path
) -> None:
    key = {"problem": {"value": 11}, "completion": "no program"}
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "1", "--max-batch", "2")
    try:
        over = _score(server, [key] * 3)
        fits = _score(server, [key] * 2)
        openrlhf = httpx.post(
            f"{server.url}/get_reward",
            json={"query": ["a", "b", "c"], "labels": ["11", "11", "11"]},
            timeout=60,
        )
        # Counted before any rollout is read: three unreadable ones are refused for their number.
        unread = _score(server, [{"problem": {"benchmark": "nowhere"}}] * 3)
        refused = _metric(server.url, 'trex_reward_requests_total{outcome="http_413"}')
    finally:
        code = _stop(server)

    assert code == 0
    assert fits.status_code == 200 and len(fits.json()["records"]) == 2, fits.text
    for answer, field in ((over, "requests"), (openrlhf, "query"), (unread, "requests")):
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"] == (
            f'3 rollouts in one request ("{field}"), over the server\'s limit of 2 (--max-batch): '
            "send them in smaller requests"
        )
    assert refused == 3


def test_max_batch_above_max_pending_is_refused_at_start_up(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trex_eval", "serve", "--port", "0", "--max-pending", "4", "--max-batch", "5"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "--max-batch 5 must be at least 1 and at most --max-pending (4)" in done.stderr
    assert "lower --max-batch to 4 or raise --max-pending" in done.stderr


def test_rollouts_past_per_problem_are_paid_and_stored_in_the_next_epoch_said_once(
    tmp_path: Path, data_dir: Path
) -> None:
    out = tmp_path / "rollouts"
    row = load_benchmark(BENCH, data_dir=data_dir).problems[0]
    key = {"benchmark": BENCH, "problem_id": row.id}
    right = {"problem": key, "completion": reference_completion_text(row)}
    wrong = {"problem": key, "completion": "```python\nprint(1)\n```"}
    server = _start(tmp_path, "--data-dir", str(data_dir), "--out", str(out), "--per-problem", "2")
    try:
        group = _score(server, [right, wrong, right])  # a group of 3, --per-problem 2
        past_first = _metric(server.url, "trex_reward_rollouts_past_per_problem_total")
        again = _score(server, [wrong] * 3)
        past_both = _metric(server.url, "trex_reward_rollouts_past_per_problem_total")
    finally:
        code = _stop(server)
    stderr = server.process.stderr.read() if server.process.stderr else ""

    assert code == 0, stderr[-2000:]
    assert group.status_code == 200 and again.status_code == 200, (group.text, again.text)
    assert [r["reward"] for r in group.json()["records"]] == [1.0, 0.0, 1.0]
    assert [r["reward"] for r in again.json()["records"]] == [0.0, 0.0, 0.0]
    assert (past_first, past_both) == (1, 2)
    told = (
        f"reward log: a request carried 3 rollouts of {BENCH} {row.id}, more than --per-problem 2: all "
        "are scored and paid, and those past 2 are stored in later epochs, so one group spans 2 "
        "epochs; serve with --per-problem 3 (the trainer's group size) to keep each group in one epoch"
    )
    assert stderr.count("more than --per-problem") == 1 and told in stderr, stderr[-2000:]
    # Slots fill in arrival order: 6 rollouts of one problem, 2 per epoch.
    epochs = sorted(path.name for path in out.iterdir())
    assert epochs == ["epoch-0001", "epoch-0002", "epoch-0003"]
    correct = [load_run(out / name).benchmark(BENCH).problems[0].correct for name in epochs]
    assert correct == [(True, False), (True, False), (False, False)]
