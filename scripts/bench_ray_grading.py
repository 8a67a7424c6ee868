#!/usr/bin/env python3
"""Grading on one machine against grading on Ray: the reference-solution audit graded by the local
sandbox pool and by Ray actors on this machine, with the constants docs/scale-out.md's formula
needs.

1. ``local``: ``trex-eval audit -b BENCHMARKS --workers 2`` (one pool, two lanes);
   ``ray``: ``trex-eval audit -b BENCHMARKS --workers 1 --ray-address local --ray-actors 2`` (a
   Ray instance started by the audit for itself, two grading actors of one lane each: the same two
   lanes). Alternating, ``--rounds`` times. Each runs in a cgroup of its own (cgroup v1 ``cpuacct``,
   as root) so that its CPU seconds are the whole process tree's: the audit, its sandbox workers,
   verifier processes, and for Ray its GCS, raylet, agents and actor processes. Prints wall and CPU
   seconds and samples per second of each, and every item whose verdict or reason differs (exit 1
   when one does).
2. ``--probe`` (also run by default, in a process of its own): Ray started in-process, then the
   wall seconds of ``ray.init``, of starting 1 and 2 grading actors (each prepares the benchmarks and
   starts its sandbox), the round trip of an actor call doing nothing, and of a grading call of a
   completion without code through :class:`~trex_eval.run.ray_grading.RayGrading` (the seam's whole
   per-sample overhead: JSON both ways, dispatch, the judge's extraction), with the driver's CPU
   seconds per call.

On a 2-core machine both runs share the same two cores: the figures measure Ray's overhead, not
scaling (docs/scale-out.md).

    python scripts/bench_ray_grading.py [-b b4o-feasible] [--rounds 1] [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trex_eval.run.prepare import PreparedBenchmark
    from trex_eval.run.ray_grading import RayGrading

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""Ray on loopback: without it Ray binds to the machine's outward address."""


def measured(command: list[str], name: str) -> tuple[float, float | None, str]:
    """Wall and CPU seconds (None where no cgroup could be made) of ``command``'s process tree,
    and its stdout."""
    group: Path | None = CPUACCT / f"trex-bench-ray-{os.getpid()}-{name}"
    try:
        group.mkdir()  # type: ignore[union-attr]
    except OSError:
        group = None

    def enter() -> None:
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    started = time.monotonic()
    done = subprocess.run(
        command, preexec_fn=enter, capture_output=True, text=True, check=False, env={**os.environ, **LOOPBACK}
    )
    wall = time.monotonic() - started
    cpu = None
    if group is not None:
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        for _ in range(200):  # Ray's processes leave a moment after the driver
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, cpu, done.stdout


def audit_command(benchmarks: list[str], out: Path, *, ray: bool) -> list[str]:
    command = [sys.executable, "-m", "trex_eval", "audit", "-b", ",".join(benchmarks), "--out", str(out)]
    command += ["--no-progress", "--workers", "1" if ray else "2"]
    return command + (["--ray-address", "local", "--ray-actors", "2"] if ray else [])


def verdicts(out: Path) -> dict[tuple[str, str], tuple[str, str]]:
    with (out / "audit.csv").open(newline="") as handle:
        return {(r["benchmark"], r["id"]): (r["verdict"], r["reason"]) for r in csv.DictReader(handle)}


def compare(benchmarks: list[str], rounds: int) -> int:
    """Alternate local and Ray audits; print their costs; return how many items differ."""
    differing = 0
    with tempfile.TemporaryDirectory() as folder:
        for number in range(rounds):
            found = {}
            for where in ("local", "ray"):
                out = Path(folder) / f"{where}-{number}"
                wall, cpu, _ = measured(
                    audit_command(benchmarks, out, ray=where == "ray"), f"{where}-{number}"
                )
                found[where] = verdicts(out)
                items = len(found[where])
                cpu_text = (
                    "n/a (no cgroup)"
                    if cpu is None
                    else f"{cpu:6.1f} CPU s ({cpu / items * 1e3:.0f} ms/item)"
                )
                print(f"round {number} {where:>5}: {items} items, {wall:6.1f} s wall, {cpu_text}, "
                      f"{items / wall:5.1f} items/s", flush=True)  # fmt: skip
            for key in sorted(found["local"].keys() | found["ray"].keys()):
                if found["local"].get(key) != found["ray"].get(key):
                    differing += 1
                    print(f"DIFFERS {key}: local {found['local'].get(key)} | ray {found['ray'].get(key)}")
    return differing


async def probe_async(benchmarks: list[str], calls: int) -> dict[str, float]:
    import ray

    from trex_eval.backends.base import BackendSpec
    from trex_eval.benchmarks.data import resolve_data_dir
    from trex_eval.records import SamplingParams
    from trex_eval.run.prepare import prepare_benchmarks
    from trex_eval.run.ray_grading import ActorSetup, RayGrading
    from trex_eval.run.spec import RayOptions, RunSpec

    figures: dict[str, float] = {}
    data_dir = resolve_data_dir()
    model = BackendSpec(name="reference", backend="reference", model="reference", sampling=SamplingParams())
    spec = RunSpec(model=model, benchmarks=tuple(benchmarks))
    prepared = prepare_benchmarks(spec, data_dir=data_dir)
    # Before Ray starts, so that its daemons' start-up does not share the cores with it.
    figures["local_steady_items_per_s"] = await _steady(prepared, grading=None, hidden=(str(data_dir),))
    started = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    figures["ray_init_s"] = time.perf_counter() - started
    setup = ActorSetup(
        spec=spec, data_dir=str(data_dir), workers=1, isolation="auto", diagnose=True, hidden=(str(data_dir),)
    )

    @ray.remote(num_cpus=0)
    class Idle:
        def nothing(self) -> None:
            return None

    idle = Idle.remote()  # type: ignore[attr-defined]
    await idle.nothing.remote()
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        await idle.nothing.remote()
        times.append(time.perf_counter() - began)
    figures["noop_call_ms_median"] = statistics.median(times) * 1e3
    figures["noop_call_ms_mean"] = statistics.fmean(times) * 1e3
    for actors in (1, 2):
        grading = RayGrading(RayOptions(address="local", actors=actors), setup)
        began = time.perf_counter()
        await grading.start([item.entry for item in prepared])
        figures[f"start_{actors}_actors_s"] = time.perf_counter() - began
        if actors == 2:
            figures.update(await _grading_calls(grading, prepared[0], calls))
            figures["ray_steady_items_per_s"] = await _steady(prepared, grading=grading)
        grading.close()
    ray.shutdown()
    return figures


async def _grading_calls(grading: RayGrading, item: PreparedBenchmark, calls: int) -> dict[str, float]:
    """Median wall ms and the driver's CPU ms per grading call of a completion without code, one
    at a time, then ``calls`` at once (the driver's ceiling in calls per second)."""
    from trex_eval.records import Completion

    problem = item.problems[0]
    text = Completion(problem_id=problem.id, text="no program here", sample_index=0)
    judge = grading.judge
    times = []
    cpu_began = time.process_time()
    for _ in range(calls):
        began = time.perf_counter()
        await judge(item, problem, text, round_index=0, stored=None)
        times.append(time.perf_counter() - began)
    cpu = time.process_time() - cpu_began
    began = time.perf_counter()
    await asyncio.gather(*(judge(item, problem, text, round_index=0, stored=None) for _ in range(calls)))
    burst = time.perf_counter() - began
    return {
        "grade_call_ms_median": statistics.median(times) * 1e3,
        "driver_cpu_ms_per_call": cpu / calls * 1e3,
        "concurrent_calls_per_s": calls / burst,
    }


async def _steady(
    prepared: list[PreparedBenchmark], *, grading: RayGrading | None, hidden: tuple[str, ...] = ()
) -> float:
    """Reference items graded per second once everything has started: all at once, on ``grading``'s
    actors, or (``None``) on a local pool of two lanes and a judge, as a session grades them."""
    from trex_eval.backends.reference import reference_completion_text
    from trex_eval.protocols.judge import SampleJudge
    from trex_eval.records import Completion, Execution, Problem, Program
    from trex_eval.sandbox import SandboxLimits, SandboxPool

    work = [
        (
            item,
            problem,
            Completion(problem_id=problem.id, text=reference_completion_text(problem), sample_index=0),
        )
        for item in prepared
        for problem in item.problems
    ]
    if grading is not None:
        began = time.perf_counter()
        await asyncio.gather(*(grading.judge(i, p, c, round_index=0, stored=None) for i, p, c in work))
        return len(work) / (time.perf_counter() - began)
    judge = SampleJudge(diagnose=True)
    with SandboxPool(limits=SandboxLimits(), workers=2, hidden=hidden) as pool:

        def run_on(item: PreparedBenchmark) -> Callable[[Problem, Program], Awaitable[Execution]]:
            return lambda problem, program: pool.arun(
                item.plan.job(problem, program), limits=item.plan.limits
            )

        began = time.perf_counter()
        await asyncio.gather(
            *(
                judge.judge(i.plan, p, c, run=functools.partial(run_on(i), p), run_reference=run_on(i))
                for i, p, c in work
            )
        )
        return len(work) / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-b", "--benchmarks", default="b4o-feasible", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="alternating local/Ray audit pairs")
    parser.add_argument("--calls", type=int, default=300, help="calls timed by the probe")
    parser.add_argument("--probe", action="store_true", help="only the probe, in this process")
    parser.add_argument("--no-probe", action="store_true", help="only the audits")
    options = parser.parse_args()
    benchmarks = [name for name in options.benchmarks.split(",") if name]
    if options.probe:
        os.environ.update(LOOPBACK)
        print(json.dumps(asyncio.run(probe_async(benchmarks, options.calls))))
        return
    differing = compare(benchmarks, options.rounds)
    if not options.no_probe:
        command = [
            sys.executable,
            __file__,
            "--probe",
            "-b",
            options.benchmarks,
            "--calls",
            str(options.calls),
        ]
        wall, cpu, stdout = measured(command, "probe")
        for key, value in json.loads(stdout.strip().splitlines()[-1]).items():
            print(f"probe {key}: {value:.2f}")
        print(f"probe in all: {wall:.1f} s wall, {'n/a' if cpu is None else f'{cpu:.1f}'} CPU s")
    print(f"verdicts differing: {differing}")
    raise SystemExit(1 if differing else 0)


if __name__ == "__main__":
    main()
