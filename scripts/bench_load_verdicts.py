#!/usr/bin/env python3
"""Verdicts under load: the reference-solution audit on a quiet machine and on one saturated by
other work give the same verdict for every item, and every pass is verified in both.

Runs ``trex-eval audit BENCHMARKS --out DIR`` once with the machine as it is (``quiet``) and once
with ``--burners-per-core`` busy processes per core beside it (``loaded``; 8 a core is load ~16
on the 2-core machines, as on a shared RL node), each in a cgroup of its own where the harness
may make one (cgroup v1 ``cpuacct``, as root) so that its CPU seconds are the whole process
tree's. Prints both runs' wall and CPU seconds, the verdict counts, and every item whose verdict
or reason class differs; exits 1 when a verdict differs or a pass was not verified (a reason
naming no re-solve), else 0.

``--against TREE [--rounds 3]`` measures instead what the audit costs, this tree against another
``trex_eval`` package (a folder made by ``git archive REV trex_eval gurobipy_highs benchmarks
prompts | tar -x -C DIR``: the package finds its benchmark specs and prompts beside it),
alternating round by round, quiet: wall and CPU seconds of each run's process tree.

``--rewards N`` also scores the first N B4O-Feasible reference completions through the reward
API (:class:`~trex_eval.reward.RewardScorer`, ``binary`` policy) quiet and loaded in one process,
with the verdict memo cleared between the two, and compares every reward and verdict.

    python scripts/bench_load_verdicts.py [--burners-per-core 8] [--workers 2] [--rewards 344]
        [nl4opt optibench b4o-feasible b4o-orgeval]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from cpu_load import burning

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
ALL = ("nl4opt", "optibench", "b4o-feasible", "b4o-orgeval")


def audit(
    benchmarks: list[str], out: Path, *, workers: int, tree: str | None = None
) -> tuple[float, float | None]:
    """Wall and CPU seconds (None where no cgroup could be made) of one audit run into ``out``
    (``tree``: a folder holding another ``trex_eval`` package to run instead of this one)."""
    group = CPUACCT / f"trex-load-verdicts-{os.getpid()}-{out.name}"
    try:
        group.mkdir()
    except OSError:
        group = None  # type: ignore[assignment]
    # -P: ``python -m`` would put the working folder first on sys.path, so that run from a
    # checkout both sides would import the checkout's trex_eval, whatever ``tree`` says.
    command = [
        sys.executable,
        "-P",
        "-m",
        "trex_eval",
        "audit",
        *benchmarks,
        "--out",
        str(out),
        "--workers",
        str(workers),
    ]

    def enter() -> None:
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    started = time.monotonic()
    env = {**os.environ, **({"PYTHONPATH": os.path.abspath(tree)} if tree else {})}
    done = subprocess.run(command, preexec_fn=enter, capture_output=True, text=True, check=False, env=env)
    wall = time.monotonic() - started
    cpu = None
    if group is not None:
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        for _ in range(100):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)
    if done.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, cpu


def verdicts(out: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(benchmark, id) -> (verdict, reason) from an audit's per-item CSV."""
    with (out / "audit.csv").open(newline="") as handle:
        return {
            (row["benchmark"], row["id"]): (row["verdict"], row["reason"]) for row in csv.DictReader(handle)
        }


def unverified_passes(found: dict[tuple[str, str], tuple[str, str]]) -> list[str]:
    """Passing items whose reason names no harness value: an objective pass must cite the re-solve
    ("re-solve"), a structure pass its comparison; an ``unverified`` verdict is never a pass."""
    return [
        f"{b}/{i}: {reason[:120]}" for (b, i), (verdict, reason) in found.items() if verdict == "unverified"
    ]


def rewards(count: int, *, workers: int, per_core: int) -> int:
    """Score ``count`` reference rollouts quiet, then loaded; print and return how many differ."""
    from trex_eval import verify
    from trex_eval.backends.reference import reference_completion_text
    from trex_eval.benchmarks import load_benchmark
    from trex_eval.benchmarks.data import resolve_data_dir
    from trex_eval.reward import ProblemKey, RewardRequest, RewardScorer, ScorerSettings

    problems = load_benchmark("b4o-feasible", data_dir=resolve_data_dir()).problems[:count]
    requests = [
        RewardRequest(
            problem=ProblemKey(benchmark="b4o-feasible", problem_id=problem.id),
            completion=reference_completion_text(problem),
        )
        for problem in problems
    ]
    with RewardScorer(ScorerSettings(benchmarks=("b4o-feasible",), workers=workers)) as scorer:
        passes = []
        for loaded in (False, True):
            verify._MEMO.clear()  # each pass re-solves every model itself
            started = time.monotonic()
            if loaded:
                with burning(per_core=per_core):
                    records = scorer.score(requests)
            else:
                records = scorer.score(requests)
            passes.append([(record.reward, record.verdict.value) for record in records])
            paid = sum(record.reward or 0.0 for record in records)
            name = "loaded" if loaded else "quiet"
            print(f"rewards {name:>6}: {time.monotonic() - started:6.1f} s wall, paid {paid}")
    differing = [(p.id, a, b) for p, a, b in zip(problems, *passes, strict=True) if a != b]
    for problem_id, quiet, loaded_pair in differing:
        print(f"REWARD DIFFERS {problem_id}: quiet {quiet} | loaded {loaded_pair}")
    print(f"rewards: {len(problems)} rollouts; differing: {len(differing)}")
    return len(differing)


def cost(benchmarks: list[str], *, workers: int, tree: str, rounds: int) -> None:
    """Print the audit's wall and CPU seconds for this tree and ``tree``, alternating round by
    round on the machine as it is (the medians, and this tree's CPU over the other's)."""
    times: dict[str, list[tuple[float, float | None]]] = {"this tree": [], tree: []}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(rounds):
            for name, other in (("this tree", None), (tree, tree)):
                times[name].append(
                    audit(
                        benchmarks,
                        Path(folder) / f"{round_}-{len(times[name])}-{bool(other)}",
                        workers=workers,
                        tree=other,
                    )
                )
    for name, found in times.items():
        walls = sorted(wall for wall, _ in found)
        cpus = sorted(cpu for _, cpu in found if cpu is not None)
        cpu_text = f"{cpus[len(cpus) // 2]:.2f} CPU s" if cpus else "n/a"
        print(f"{name}: median {walls[len(walls) // 2]:.2f} s wall, {cpu_text} ({rounds} rounds)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("benchmarks", nargs="*", default=list(ALL))
    parser.add_argument("--burners-per-core", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rewards", type=int, default=0, metavar="N", help="also compare N rewards")
    parser.add_argument("--no-audit", action="store_true", help="compare rewards only")
    parser.add_argument("--against", metavar="TREE", help="instead: the audit's cost, this tree vs TREE")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of --against")
    options = parser.parse_args()
    if options.against:
        cost(options.benchmarks, workers=options.workers, tree=options.against, rounds=options.rounds)
        return
    if options.no_audit:
        raise SystemExit(
            1 if rewards(options.rewards, workers=options.workers, per_core=options.burners_per_core) else 0
        )
    with tempfile.TemporaryDirectory() as folder:
        quiet_out, loaded_out = Path(folder) / "quiet", Path(folder) / "loaded"
        quiet = audit(options.benchmarks, quiet_out, workers=options.workers)
        with burning(per_core=options.burners_per_core) as count:
            loaded = audit(options.benchmarks, loaded_out, workers=options.workers)
        first, second = verdicts(quiet_out), verdicts(loaded_out)
    print(f"benchmarks: {' '.join(options.benchmarks)}   workers: {options.workers}   burners: {count}")
    for name, (wall, cpu) in (("quiet", quiet), ("loaded", loaded)):
        cpu_text = "n/a (no cgroup)" if cpu is None else f"{cpu:.1f} CPU s"
        print(f"{name:>7}: {wall:7.1f} s wall, {cpu_text}")
    for name, found in (("quiet", first), ("loaded", second)):
        counts = Counter(verdict for verdict, _ in found.values())
        print(f"{name:>7}: " + ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items())))
    differing = sorted(
        key for key in first.keys() | second.keys() if first.get(key, ("",))[0] != second.get(key, ("",))[0]
    )
    for key in differing:
        print(f"DIFFERS {key[0]}/{key[1]}: quiet {first.get(key)} | loaded {second.get(key)}")
    unverified = unverified_passes(first) + unverified_passes(second)
    for line in unverified:
        print(f"UNVERIFIED {line}")
    print(f"items: {len(first)}; verdicts differing: {len(differing)}; unverified: {len(unverified)}")
    reward_differences = (
        rewards(options.rewards, workers=options.workers, per_core=options.burners_per_core)
        if options.rewards
        else 0
    )
    raise SystemExit(1 if differing or unverified or reward_differences else 0)


if __name__ == "__main__":
    main()
