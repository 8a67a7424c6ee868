#!/usr/bin/env python3
"""Verified rewards per second: trex-eval's reward API vs the typical RL reward path, same run.

Two workloads of ``--batch`` rollouts each:

* tiny: PuLP programs of a two-variable LP, each rollout a different right-hand side (so no two
  models are alike and no verdict is remembered), scored against the optimum as inline problems;
* b4o: the B4O-Feasible reference programs (its first ``--batch`` rows, keyed by benchmark row).

Two reward paths, alternating round by round on the same number of lanes:

(a) the bare path most RL reward functions use (SIRL-, OR-R1-style): per rollout a fresh
    ``python program.py`` subprocess in a temporary directory holding the instance files, a
    timeout, the objective read from the last number printed (``print(model.ObjVal)`` appended to
    the B4O programs), ``|Δ| ≤ 1e-6·max(1, |ref|)``. No sandbox, no verification.
(b) :class:`trex_eval.reward.RewardScorer` (``binary`` policy): sandboxed, every pass re-derived
    by the harness's own re-solve, pool started once (start-up not timed, as a trainer keeps it).

Prints per workload and path the medians of rewards per second over the rounds, the p50/p99 of a
batch's wall time and of one rollout's latency (submission to record), the rewards paid, and the
speed-up b / a. ``scripts/bench_grading.py`` measures the ceiling the B4O programs' own solves
put on any harness.

    python scripts/bench_reward.py [--batch 256] [--rounds 3] [--workers 2] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.data import resolve_data_dir
from trex_eval.extract import extract
from trex_eval.records import Completion, ObjectiveReference
from trex_eval.reward import InlineProblem, ProblemKey, RewardRequest, RewardScorer, ScorerSettings

TINY = """import pulp
p = pulp.LpProblem("tiny", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 3)
y = pulp.LpVariable("y", 0)
p += 3 * x + 2 * y
p += x + y <= {k}
p += x + 3 * y <= 6
p.solve(pulp.PULP_CBC_CMD(msg=0))
print(pulp.value(p.objective))
"""
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class Rollout:
    """One rollout as both paths see it."""

    def __init__(self, request: RewardRequest, code: str, files: dict[str, str], label: float) -> None:
        self.request, self.code, self.files, self.label = request, code, files, label


def tiny_rollouts(count: int) -> list[Rollout]:
    import highspy

    found = []
    for index in range(count):
        k = 3.0 + (index % 97) * 0.013 + index * 1e-4  # 3 <= k < 4.3: every model distinct
        h = highspy.Highs()
        h.silent()
        x, y = h.addVariable(lb=0, ub=3), h.addVariable(lb=0)
        h.addConstr(x + y <= k)
        h.addConstr(x + 3 * y <= 6)
        h.maximize(3 * x + 2 * y)
        optimum = h.getInfo().objective_function_value
        code = TINY.format(k=repr(k))
        request = RewardRequest(problem=InlineProblem(value=optimum), completion=f"```python\n{code}```")
        found.append(Rollout(request, code, {}, optimum))
    return found


def b4o_rollouts(count: int, data_dir: Path) -> list[Rollout]:
    bench = load_benchmark("b4o-feasible", data_dir=data_dir)
    found = []
    for problem in bench.problems[:count]:
        assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
        text = reference_completion_text(problem)
        code = extract(Completion(problem_id=problem.id, sample_index=0, text=text), extractor="default").code
        assert code is not None
        request = RewardRequest(
            problem=ProblemKey(benchmark="b4o-feasible", problem_id=problem.id), completion=text
        )
        found.append(
            Rollout(
                request,
                code + "\nprint(model.ObjVal)\n",
                dict(problem.instance_files),
                problem.reference.value,
            )
        )
    return found


def bare_reward(rollout: Rollout) -> tuple[float, float]:
    """The typical RL reward path for one rollout: (reward, latency seconds)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for name, content in rollout.files.items():
            (Path(folder) / name).write_text(content)
        (Path(folder) / "program.py").write_text(rollout.code)
        try:
            done = subprocess.run(
                [sys.executable, "program.py"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            numbers = NUMBER.findall(done.stdout)
            value = float(numbers[-1]) if numbers else None
        except subprocess.TimeoutExpired:
            value = None
    ok = value is not None and abs(value - rollout.label) <= 1e-6 * max(1.0, abs(rollout.label))
    return (1.0 if ok else 0.0), time.perf_counter() - started


def bare_batch(rollouts: list[Rollout], workers: int) -> tuple[float, list[float], float]:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        results = list(executor.map(bare_reward, rollouts))
    return time.perf_counter() - started, [latency for _, latency in results], sum(r for r, _ in results)


def trex_batch(scorer: RewardScorer, rollouts: list[Rollout]) -> tuple[float, list[float], float]:
    started = time.perf_counter()
    records = scorer.score([rollout.request for rollout in rollouts])
    return (
        time.perf_counter() - started,
        [r.timings.total_s for r in records],
        sum(r.reward or 0.0 for r in records),
    )


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data_dir = resolve_data_dir(args.data_dir)
    workloads = {"tiny": tiny_rollouts(args.batch), "b4o": b4o_rollouts(args.batch, data_dir)}
    settings = ScorerSettings(benchmarks=("b4o-feasible",), data_dir=data_dir, workers=args.workers)
    print(f"batch {args.batch}, {args.workers} lanes, {os.cpu_count()} CPUs, {args.rounds} rounds")
    with RewardScorer(settings) as scorer:
        for name, rollouts in workloads.items():
            trex_batch(scorer, rollouts[: 2 * args.workers])  # warm the workers' imports
            seen: dict[str, list[tuple[float, list[float], float]]] = {"bare": [], "trex": []}
            for round_index in range(args.rounds):
                seen["bare"].append(bare_batch(rollouts, args.workers))
                seen["trex"].append(trex_batch(scorer, rollouts))
                bare, trex = seen["bare"][-1][0], seen["trex"][-1][0]
                ratio = bare / trex
                print(f"{name} round {round_index + 1}: bare {bare:.2f} s, trex {trex:.2f} s ({ratio:.2f}x)")
            rates = {}
            for path, runs in seen.items():
                walls = [wall for wall, _, _ in runs]
                latencies = [value for _, batch, _ in runs for value in batch]
                rates[path] = statistics.median(len(rollouts) / wall for wall in walls)
                print(
                    f"  {name:5s} {path:5s} {rates[path]:8.1f} rewards/s   batch wall p50 "
                    f"{_quantile(walls, 0.5):.2f} s p99 {_quantile(walls, 0.99):.2f} s   rollout latency p50 "
                    f"{_quantile(latencies, 0.5):.3f} s p99 {_quantile(latencies, 0.99):.3f} s   "
                    f"paid {runs[-1][2]:.0f}/{len(rollouts)}"
                )
            print(f"  {name}: trex-eval / bare = {rates['trex'] / rates['bare']:.2f}x (median rewards/s)")


if __name__ == "__main__":
    main()
