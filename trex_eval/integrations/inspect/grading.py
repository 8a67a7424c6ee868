"""What the inspect_ai scorer grades with: the run's preparation of each benchmark, one warm
sandbox pool per process, and the run's own judge. Imports nothing from inspect_ai.

A task is prepared exactly as ``trex-eval run`` prepares it (:func:`prepare`:
:func:`~trex_eval.run.prepare.prepare_benchmarks` on a :class:`~trex_eval.run.spec.RunSpec`:
the same problems, prompts, protocol, rule, extractor and limits), and each completion is judged
exactly as a run judges a sample (:class:`Grader`: a
:class:`~trex_eval.protocols.judge.SampleJudge` whose programs run on a
:class:`~trex_eval.sandbox.SandboxPool` started as a run starts its own: default pool limits, the
plan's limits per job, the data directory, the pinned sources and every benchmark's folder hidden
from programs). So a sample's verdict under ``inspect eval`` is the verdict ``trex-eval run``
stores for the same completion.

The pools live for the process (:func:`shared_grader`): every sample of every task of one
``inspect eval`` shares one warm pool (one per distinct set of hidden folders, workers and
isolation level), started on the first completion graded and stopped when the process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import reads_data_dir
from trex_eval.benchmarks.data import resolve_data_dir, sources_root
from trex_eval.budget import fit_record
from trex_eval.errors import DataError
from trex_eval.protocols.judge import Judged, SampleJudge
from trex_eval.protocols.plan import EvaluationPlan
from trex_eval.records import (
    Completion,
    Execution,
    Problem,
    Program,
    Prompt,
    SampleRecord,
    SamplingParams,
    SandboxLimits,
)
from trex_eval.run.prepare import PreparedBenchmark, prepare_benchmarks
from trex_eval.run.spec import FewShotSettings, RunSpec
from trex_eval.sandbox import SandboxPool
from trex_eval.verify import warm_up as warm_up_verification

logger = logging.getLogger("trex_eval.integrations.inspect")

INSPECT_BACKEND = "inspect"
"""The backend an inspect task's run spec and an imported run's manifest name: the completions
came from whatever model ``inspect eval --model`` named."""

METADATA_KEY = "trex_eval"
"""The key of the task metadata a trex-eval task writes and ``trex-eval import`` reads: the run's
settings and each benchmark's manifest entry."""

TAIL_CHARS = 2000
"""Characters of stdout and stderr kept in a score's readable metadata (their ends); the whole
tails, as a run stores them, are in its ``record``."""


@dataclass(frozen=True)
class TaskSettings:
    """What an inspect task evaluates, as ``trex-eval run`` flags: ``benchmarks`` (names, suites
    or YAML paths), ``prompt_set``, ``protocol``, ``rules`` (``--rule``, each applying to the
    benchmarks of its kind), ``extractor``, ``limit`` (first n problems per benchmark),
    ``few_shot`` (k examples from the reference programs), ``samples`` (completions per problem:
    inspect's epochs), ``seed`` (the seed of sample 0; sample i is sent ``seed + i``, as a run
    sends it), ``data_dir`` (``--data-dir``; None: ``TREX_DATA_DIR`` or the checkout's)."""

    benchmarks: tuple[str, ...]
    prompt_set: str = "t-rex"
    protocol: str = "default"
    rules: tuple[str, ...] = ()
    extractor: str | None = None
    limit: int | None = None
    few_shot: int = 0
    samples: int = 1
    seed: int | None = 42
    data_dir: Path | None = None

    def run_spec(self) -> RunSpec:
        """The spec ``trex-eval run`` would build from the same flags (model: inspect's)."""
        sampling = SamplingParams(seed=self.seed)
        return RunSpec(
            model=BackendSpec(name=INSPECT_BACKEND, backend=INSPECT_BACKEND, sampling=sampling),
            benchmarks=self.benchmarks,
            prompt_set=self.prompt_set,
            samples=self.samples,
            limit=self.limit,
            protocol=self.protocol,
            rules=self.rules,
            extractor=self.extractor,
            few_shot=FewShotSettings(k=self.few_shot),
        )


@dataclass(frozen=True)
class PreparedTask:
    """A task's benchmarks prepared as a run prepares them, the data directory in force, and the
    folders programs must not see."""

    settings: TaskSettings
    spec: RunSpec
    benchmarks: tuple[PreparedBenchmark, ...]
    data_dir: Path | None
    hidden: tuple[str, ...]

    def benchmark(self, name: str) -> PreparedBenchmark:
        """The prepared benchmark named ``name`` (as loaded).

        Raises:
            KeyError: no benchmark of this task has that name (a sample from another task).
        """
        for item in self.benchmarks:
            if item.bench.name == name:
                return item
        raise KeyError(f"benchmark {name!r} is not one of this task's ({self.names()})")

    def names(self) -> str:
        return ", ".join(item.bench.name for item in self.benchmarks)


def prepare(settings: TaskSettings) -> PreparedTask:
    """Load, limit and plan the task's benchmarks (what ``trex-eval run`` does before generating).

    Raises:
        ConfigError, BenchmarkError: as ``trex-eval run`` raises them for the same flags.
        DataError: a benchmark reads the T-Rex data and none is found (``--data-dir`` or
            ``TREX_DATA_DIR``; ``trex-eval data pull`` downloads it).
    """
    spec = settings.run_spec()
    data_dir = _data_dir(spec.benchmarks, settings.data_dir)
    prepared = prepare_benchmarks(spec, data_dir=data_dir)
    # Programs must not read the answers: the data, the pinned sources, each benchmark's folder,
    # and inspect's logs (every earlier sample's grade, its reason quoting the label).
    hidden = {str(item.bench.root.resolve()) for item in prepared}
    if data_dir is not None:
        hidden |= {str(data_dir.resolve()), str(sources_root(data_dir).resolve())}
    hidden.add(str(_inspect_log_dir()))
    return PreparedTask(settings, spec, tuple(prepared), data_dir, tuple(sorted(hidden)))


def _inspect_log_dir() -> Path:
    """The folder inspect writes its logs to (``INSPECT_LOG_DIR``, else ``./logs``), created so
    that the sandbox can hide it before the first log is written."""
    log_dir = Path(os.environ.get("INSPECT_LOG_DIR") or "logs").expanduser().resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    return log_dir


def _data_dir(benchmarks: Sequence[str], explicit: Path | None) -> Path | None:
    """The data directory in force; required where a benchmark reads it (never downloaded here:
    an eval must not start a download the user did not ask for)."""
    if reads_data_dir(benchmarks):
        return resolve_data_dir(explicit)
    try:
        return resolve_data_dir(explicit)
    except DataError:
        if explicit is not None:
            raise
        return None


@dataclass(frozen=True)
class PoolKey:
    """What makes two tasks' pools interchangeable."""

    workers: int
    isolation: str
    hidden: tuple[str, ...]


class Grader:
    """A sandbox pool (started on first use) and the run's judges; safe to share between tasks,
    threads and event loops (the pool and :class:`SampleJudge` are)."""

    def __init__(self, key: PoolKey) -> None:
        self.key = key
        self.pool = SandboxPool(
            limits=SandboxLimits(),
            workers=key.workers,
            isolation=key.isolation,  # type: ignore[arg-type]
            hidden=key.hidden,
        )
        self._judges = {flag: SampleJudge(diagnose=flag) for flag in (False, True)}
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Start the pool and load the re-solver (idempotent; blocks for a few seconds).

        Raises:
            SandboxError: the isolation level asked for does not work here, or no worker started.
        """
        with self._lock:
            if self._started:
                return
            self.pool.start()
            warm_up_verification()
            self._started = True
        logger.info("trex-eval sandbox isolation: %s", self.pool.isolation)
        for warning in self.pool.isolation_report.warnings:  # programs can read the answers
            logger.warning("trex-eval sandbox: %s", warning)

    def close(self) -> None:
        """Stop the pool (idempotent)."""
        with self._lock:
            self._started = False
        self.pool.close()

    async def judge(
        self, item: PreparedBenchmark, problem: Problem, completion: Completion, *, diagnose: bool
    ) -> Judged:
        """``completion`` judged as ``trex-eval run`` judges it (the same plan and judge).

        Raises:
            Exception: the harness's failures (the sandbox, a verifier process, the data).
        """
        await asyncio.to_thread(self.start)
        run = functools.partial(self._run, item.plan)
        return await self._judges[diagnose].judge(
            item.plan, problem, completion, run=functools.partial(run, problem), run_reference=run
        )

    async def _run(self, plan: EvaluationPlan, problem: Problem, program: Program) -> Execution:
        return await self.pool.arun(plan.job(problem, program), limits=plan.limits_for(problem))


_GRADERS: dict[PoolKey, Grader] = {}
_GRADERS_LOCK = threading.Lock()


def shared_grader(task: PreparedTask, *, workers: int, isolation: str) -> Grader:
    """The process's grader for ``task`` (one per :class:`PoolKey`, stopped at exit)."""
    key = PoolKey(workers=workers, isolation=isolation, hidden=task.hidden)
    with _GRADERS_LOCK:
        grader = _GRADERS.get(key)
        if grader is None:
            if not _GRADERS:
                atexit.register(close_graders)
            grader = _GRADERS[key] = Grader(key)
    return grader


def close_graders() -> None:
    """Stop every pool this process started (registered with :mod:`atexit`)."""
    with _GRADERS_LOCK:
        graders = list(_GRADERS.values())
        _GRADERS.clear()
    for grader in graders:
        grader.close()


def sample_record(
    item: PreparedBenchmark, problem: Problem, prompt: Prompt, completion: Completion, judged: Judged
) -> SampleRecord:
    """The record ``trex-eval run`` would store for this sample, held to the record budget."""
    record = SampleRecord(
        benchmark=item.bench.name,
        problem_id=problem.id,
        sample_index=completion.sample_index,
        prompt=prompt,
        completion=completion,
        program=judged.program,
        execution=judged.execution,
        grade=judged.grade,
    )
    return fit_record(record)[0]


def score_metadata(record: SampleRecord) -> dict[str, Any]:
    """What an inspect score carries: a readable summary (what ``inspect view`` shows first) and,
    under ``record``, the program, execution and grade exactly as a run's sample record holds them
    (what ``trex-eval import`` reads back)."""
    execution, grade = record.execution, record.grade
    solve = execution.last_solve
    return {
        "benchmark": record.benchmark,
        "problem_id": record.problem_id,
        "verdict": grade.verdict.value,
        "passed": grade.passed,
        "reason": grade.reason,
        "rule": grade.rule,
        "status": execution.status.value,
        "objective": None if solve is None else solve.verified_objective,
        "program": record.program.code,
        "stdout_tail": execution.stdout_tail[-TAIL_CHARS:],
        "stderr_tail": execution.stderr_tail[-TAIL_CHARS:],
        "diagnosis": None if grade.diagnosis is None else grade.diagnosis.model_dump(mode="json"),
        "record": {
            "program": record.program.model_dump(mode="json"),
            "execution": execution.model_dump(mode="json"),
            "grade": grade.model_dump(mode="json"),
        },
    }
