"""Grading a run on Ray (``run``, ``grade``, ``audit --ray-address``): the session's judge moved
onto a pool of Ray actors, everything else left where it was.

The driver (this process's :class:`~trex_eval.run.session.Session`) still generates, stores,
counts, resumes, runs repair rounds and decides which stored executions are reused; only the
grading call travels. Each actor (:class:`_GradingActor`) rebuilds the run's prepared benchmarks
from the run's :class:`~trex_eval.run.spec.RunSpec` (plans hold rule objects, caches and compiled
templates: they are never pickled, and an actor built from the spec grades exactly as the driver
would), holds a :class:`~trex_eval.sandbox.SandboxPool` of ``RunOptions.workers`` lanes and a
:class:`~trex_eval.protocols.judge.SampleJudge`, and turns one :class:`GradeRequest` (benchmark,
problem id, completion, round, and the stored execution the driver would reuse) into a
:class:`GradeAnswer` (program, execution, grade), both as JSON of the records a run stores. A
sample's record is therefore the one the local pool would have written.

Each request goes to the actor with the fewest requests in flight, and no actor is given more than
:data:`IN_FLIGHT_PER_LANE` per sandbox lane: the rest wait here, so a slow actor (a busy node)
takes fewer samples instead of a fixed share. Before anything is graded every actor's prepared
benchmarks are compared with the driver's (data sha256, rule, extractor, limits): a node whose data
differs is refused by name. ``ray`` is imported on :meth:`RayGrading.start` only (the ``ray``
extra). An actor that dies ends the run like any harness failure; ``--resume`` continues it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.errors import ConfigError
from trex_eval.protocols.judge import SampleJudge
from trex_eval.records import Completion, Execution, Grade, Problem, Program, Record
from trex_eval.run.prepare import PreparedBenchmark, prepare_benchmarks
from trex_eval.run.reuse import stored_execution
from trex_eval.run.spec import FewShotSettings, RayOptions, RunSpec
from trex_eval.sandbox import SandboxLimits, SandboxPool
from trex_eval.store import BenchmarkEntry

IN_FLIGHT_PER_LANE = 2
"""Requests an actor holds per sandbox lane: one running, one waiting for the lane, so a lane never
idles while a reply travels back and the next request travels out (a scheduler round trip is
~1 ms, a sample tens of milliseconds and up); more would only fix each actor's share early."""

START_TIMEOUT_S = 600.0
"""How long the actors may take to start (import, load the data, start their sandbox lanes)."""

CLOSE_TIMEOUT_S = 30.0
"""How long the actors may take to stop their sandbox pools before they are killed."""

_ISOLATION_RANK = {"bwrap": 0, "unshare": 1, "rlimits": 2}


class StoredRun(Record):
    """A stored program and its execution, which an actor returns instead of running the program
    again when the program it is asked to run has the same code (a re-grade's
    ``RunOptions.reuse_executions``, decided by the driver as a local session decides it)."""

    program: Program
    execution: Execution


class GradeRequest(Record):
    """One grading call: ``completion`` (which arrived) of problem ``problem_id`` of ``benchmark``
    in repair round ``round``; ``stored``: the execution the driver's run would reuse, if any."""

    benchmark: str
    problem_id: str
    completion: Completion
    round: int = 0
    stored: StoredRun | None = None


class GradeAnswer(Record):
    """What an actor's judge decided, as a local session's judge would, and how many programs it
    ran (``executed``) and how many stored executions it took instead (``reused``)."""

    program: Program
    execution: Execution
    grade: Grade
    executed: int = 0
    reused: int = 0


@dataclass(frozen=True)
class ActorSetup:
    """What every grading actor is built from: the run's spec (its benchmarks are prepared again in
    the actor), the data directory (the same path on every node), the sandbox lanes per actor, the
    isolation level asked for, whether to diagnose, the folders hidden from programs (as the local
    pool hides them), and whether the pool waits for a first program (every execution reusable)."""

    spec: RunSpec
    data_dir: str | None
    workers: int
    isolation: str
    diagnose: bool
    hidden: tuple[str, ...]
    lazy_pool: bool = False


class _GradingActor:
    """The body of one Ray actor: prepared benchmarks, a sandbox pool and a judge, spoken to in JSON."""

    def __init__(self, setup: ActorSetup) -> None:
        from trex_eval.verify import warm_up

        # Few-shot examples only shape prompts, which the driver renders; choosing them again here
        # would read a source run directory the node may not have.
        spec = dataclasses.replace(setup.spec, few_shot=FewShotSettings())
        data_dir = None if setup.data_dir is None else Path(setup.data_dir)
        prepared = prepare_benchmarks(spec, data_dir=data_dir)
        self.items: dict[str, PreparedBenchmark] = {item.bench.name: item for item in prepared}
        self.problems = {item.bench.name: {p.id: p for p in item.problems} for item in prepared}
        self.judge = SampleJudge(diagnose=setup.diagnose)
        self.pool = SandboxPool(
            limits=SandboxLimits(),
            workers=setup.workers,
            isolation=setup.isolation,  # type: ignore[arg-type]
            hidden=setup.hidden,
        )
        self.started = False
        self.lock = asyncio.Lock()
        if not setup.lazy_pool:
            # The harness's solver loads while the workers start, as in a local session.
            warming = threading.Thread(target=warm_up, daemon=True)
            warming.start()
            self.pool.start()
            self.started = True
            warming.join()

    def describe(self) -> dict[str, object]:
        """Where the actor runs, its prepared benchmarks' entries and its sandbox (once started)."""
        import ray

        return {
            "host": socket.gethostname(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "entries": [item.entry.model_dump(mode="json") for item in self.items.values()],
            "sandbox": self.pool.describe() if self.started else None,
            "warnings": list(self.pool.isolation_report.warnings) if self.started else [],
        }

    def close(self) -> None:
        """Stop the sandbox pool (its workers and their cgroups) before the actor is killed."""
        if self.started:
            self.pool.close()
            self.started = False

    async def grade(self, request: str) -> str:
        """The :class:`GradeAnswer` (JSON) of one :class:`GradeRequest` (JSON)."""
        asked = GradeRequest.model_validate_json(request)
        item = self.items[asked.benchmark]
        problem = self.problems[asked.benchmark][asked.problem_id]
        stored = None if asked.stored is None else (asked.stored.program, asked.stored.execution)
        counts = {"executed": 0, "reused": 0}

        async def run(program: Program) -> Execution:
            # The same choice as the local session's (Session._execution).
            found = stored_execution(stored, program)
            counts["reused" if found is not None else "executed"] += 1
            return found if found is not None else await self._run(item, problem, program)

        judged = await self.judge.judge(
            item.plan,
            problem,
            asked.completion,
            run=run,
            run_reference=lambda other, code: self._run(item, other, code),
        )
        answer = GradeAnswer(program=judged.program, execution=judged.execution, grade=judged.grade, **counts)
        return answer.model_dump_json()

    async def _run(self, item: PreparedBenchmark, problem: Problem, program: Program) -> Execution:
        if not self.started:
            async with self.lock:
                if not self.started:
                    await asyncio.to_thread(self.pool.start)
                    self.started = True
        return await self.pool.arun(item.plan.job(problem, program), limits=item.plan.limits_for(problem))


class RayGrading:
    """The driver's side: the actors, who holds what, and the grading provenance; see the module
    docstring. :meth:`start` before :meth:`judge`; :meth:`close` always.

    Raises (from :meth:`start`): ConfigError where ``ray`` is not installed, the cluster cannot be
    reached, an actor does not start, or an actor's prepared benchmarks differ from the driver's.
    """

    def __init__(self, options: RayOptions, setup: ActorSetup) -> None:
        self.options, self.setup = options, setup
        self.depth = IN_FLIGHT_PER_LANE * setup.workers
        self._actors: list[Any] = []
        self._in_flight: list[int] = []
        self._free = asyncio.Condition()
        self._started_ray = False
        self.placement: list[dict[str, Any]] = []

    async def start(self, expected: Sequence[BenchmarkEntry]) -> None:
        """Connect to the cluster (``ray.init``), start the actors and wait until each has its
        benchmarks prepared (and its sandbox up), then check them against ``expected``."""
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "grading on Ray (--ray-address) needs the ray package", hint='pip install "trex-eval[ray]"'
            ) from None
        if not ray.is_initialized():
            try:
                ray.init(address=self.options.address, include_dashboard=False, log_to_driver=False)
            except (ConnectionError, ValueError, RuntimeError) as error:
                raise ConfigError(
                    f"cannot reach the Ray cluster at {self.options.address!r}: {error}",
                    hint="start it (`ray start --head`) or pass its address: --ray-address HOST:PORT, "
                    "auto, or local",
                ) from None
            self._started_ray = True
        alive = [node for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
        count = self.options.actors or max(1, len(alive))
        remote = ray.remote(num_cpus=self.options.cpus_per_actor, scheduling_strategy="SPREAD")(_GradingActor)
        self._actors = [remote.remote(self.setup) for _ in range(count)]
        self._in_flight = [0] * count
        try:
            described = await asyncio.wait_for(
                asyncio.gather(*(actor.describe.remote() for actor in self._actors)), START_TIMEOUT_S
            )
        except Exception as error:
            self.close()
            raise ConfigError(
                f"the Ray grading actors did not start: {error}",
                hint="every node needs this trex-eval with the ray extra, and the benchmark data at "
                f"{self.setup.data_dir}",
            ) from None
        self.placement = list(described)
        self._check_entries(expected)

    def _check_entries(self, expected: Sequence[BenchmarkEntry]) -> None:
        ours = [entry.model_dump(mode="json") for entry in expected]
        for place in self.placement:
            if place["entries"] != ours:
                theirs = {entry["name"]: entry for entry in place["entries"]}
                differs = [
                    entry["name"]
                    for entry in ours
                    if theirs.get(entry["name"], {}).get("sha256") != entry["sha256"]
                ]
                self.close()
                raise ConfigError(
                    f"the grading actor on {place['host']} prepared the run's benchmarks differently "
                    f"({', '.join(differs) or 'rules, extractor or limits'} differ from this machine's)",
                    hint="give every node the same trex-eval and the same benchmark data at "
                    f"{self.setup.data_dir}",
                )

    async def judge(
        self,
        item: PreparedBenchmark,
        problem: Problem,
        completion: Completion,
        *,
        round_index: int,
        stored: tuple[Program, Execution] | None,
    ) -> GradeAnswer:
        """Grade ``completion`` on the least busy actor (waiting while every actor is full)."""
        request = GradeRequest(
            benchmark=item.bench.name,
            problem_id=problem.id,
            completion=completion,
            round=round_index,
            stored=None if stored is None else StoredRun(program=stored[0], execution=stored[1]),
        ).model_dump_json()
        async with self._free:
            await self._free.wait_for(lambda: min(self._in_flight) < self.depth)
            index = min(range(len(self._actors)), key=self._in_flight.__getitem__)
            self._in_flight[index] += 1
        try:
            answer: str = await self._actors[index].grade.remote(request)
        finally:
            async with self._free:
                self._in_flight[index] -= 1
                self._free.notify()
        return GradeAnswer.model_validate_json(answer)

    def sandbox(self) -> dict[str, Any] | None:
        """The sandbox of the actor with the weakest isolation (what every program ran at least
        under), as a local pool describes itself; ``None`` while no actor started its pool."""
        pools = [place["sandbox"] for place in self.placement if place["sandbox"] is not None]
        if not pools:
            return None
        return max(pools, key=lambda pool: _ISOLATION_RANK.get(pool["isolation"]["level"], 3))  # type: ignore[no-any-return]

    def notes(self) -> list[str]:
        """The progress lines of the actors' sandboxes: their isolation level(s) and warnings."""
        levels = sorted({p["sandbox"]["isolation"]["level"] for p in self.placement if p["sandbox"]})
        found = [f"sandbox isolation: {', '.join(levels)} (on each Ray actor)"] if levels else []
        return found + list(dict.fromkeys(w for place in self.placement for w in place["warnings"]))

    def describe(self) -> dict[str, object]:
        """The manifest's ``provenance.grading``: where grading ran (address, actors, lanes and
        requests per actor, each actor's host, node and isolation level)."""
        return {
            "on": "ray",
            "address": self.options.address,
            "actors": len(self.placement),
            "lanes_per_actor": self.setup.workers,
            "in_flight_per_actor": self.depth,
            "placement": [
                {
                    "host": place["host"],
                    "node_id": place["node_id"],
                    "isolation": None if place["sandbox"] is None else place["sandbox"]["isolation"]["level"],
                }
                for place in self.placement
            ],
        }

    def close(self) -> None:
        """Stop the actors (their sandboxes go with them), and Ray where :meth:`start` started it."""
        if not self._actors and not self._started_ray:
            return
        import ray

        if self._actors:
            closing = [actor.close.remote() for actor in self._actors]
            ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT_S)
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
            self._started_ray = False
