"""One session of a run: what is left to do, the sandbox pool, the backend, the counters.

Every (benchmark, problem, sample) pair left is an independent asyncio task (:meth:`Session._sample`):
its completion is appended to ``completions.jsonl`` the moment it arrives, then it waits for a
sandbox slot, is graded, and its record is appended to ``samples.jsonl``. Grading happens here, on
the session's sandbox pool, or on Ray actors (``RunOptions.ray``, :mod:`trex_eval.run.ray_grading`):
only the judge's call moves, the rest of the session is the same.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from trex_eval.backends.base import Backend, GenerationRequest, ReportsEndpoints, create_backend
from trex_eval.protocols.judge import SampleJudge
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    Problem,
    Program,
    Prompt,
    SampleRecord,
    Verdict,
)
from trex_eval.run import provenance
from trex_eval.run.preflight import missing_library_notes
from trex_eval.run.prepare import PreparedBenchmark
from trex_eval.run.progress import RunProgress
from trex_eval.run.ray_grading import ActorSetup, RayGrading
from trex_eval.run.repair import RepairTemplate
from trex_eval.run.repair_rounds import RETRIED, repair_rounds
from trex_eval.run.reuse import reusable_executions, stored_execution
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.sandbox import SandboxLimits, SandboxPool
from trex_eval.store import CompletionLine, RunStore, SampleKey

REPLAY_MISSING = "no recorded completion for "
"""How the ``replay`` backend's error for a sample its file does not hold begins: such a sample is
graded :attr:`~trex_eval.records.Verdict.MISSING`, not ``api_error`` (nothing was requested)."""

logger = logging.getLogger(__name__)


def hidden_folders(run_dir: Path, bench_roots: Iterable[Path], options: RunOptions) -> tuple[str, ...]:
    """The folders a run's programs must not see, sorted: the folder of the run directories
    (other samples' grades), each benchmark's data folder and the data directory (the answers),
    and the folder of the run whose executions are reused."""
    hidden = {str(run_dir.resolve().parent), *(str(root) for root in bench_roots)}
    if options.data_dir is not None:
        hidden.add(str(options.data_dir))
    if options.reuse_executions is not None:
        hidden.add(str(options.reuse_executions.resolve().parent))
    return tuple(sorted(hidden))


class EarlyPool:
    """A run's sandbox pool, started in a thread of its own while the run loads its data and plans
    (the workers' start and the licence check then overlap the data's reading). ``hidden`` is what
    it hides (:func:`hidden_folders`, predicted from the benchmarks' YAML files): the session
    adopts the pool only where its own folders are the same, else discards it (:meth:`discard`)."""

    def __init__(self, options: RunOptions, hidden: tuple[str, ...], *, samples: int | None = None) -> None:
        """``samples``: at most how many samples the run grades (None: not known), which bounds
        its lanes (:func:`pool_lanes`)."""
        self.hidden = hidden
        self.pool = SandboxPool(
            limits=SandboxLimits(),
            workers=pool_lanes(options, samples),
            isolation=options.isolation,  # type: ignore[arg-type]
            hidden=hidden,
        )
        # An event, not a future: a waiter that is cancelled (Ctrl-C) must not cancel the start,
        # which runs on and is closed by discard() once it ends.
        self._done = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._discarded = False
        self._error: BaseException | None = None
        threading.Thread(target=self._start, name="trex-sandbox-start", daemon=True).start()

    def _start(self) -> None:
        try:
            self.pool.start()
        except BaseException as error:  # raised where the session awaits the pool
            self._error = error
        finally:
            with self._lock:
                self._done.set()
                discarded = self._discarded
            if discarded:
                self.pool.close()
                self._closed.set()

    async def started(self) -> None:
        """Wait for the start to end; raises what it raised (``SandboxError``: no isolation the
        run asked for, no worker started)."""
        await asyncio.to_thread(self._done.wait)
        if self._error is not None:
            raise self._error

    def discard(self) -> None:
        """Close the pool: now where its start has ended (a failed one included), else by the
        start's thread as soon as it ends, which this waits for. A pool is never closed while it
        starts (its workers would outlive the close): a wait cut short (Ctrl-C) leaves the closing
        to that thread."""
        with self._lock:
            self._discarded = True
            done = self._done.is_set()
        if done:
            self.pool.close()
        else:
            self._closed.wait()


def pool_lanes(options: RunOptions, samples: int | None) -> int:
    """The sandbox lanes of a run that grades at most ``samples`` samples (None: not known):
    ``RunOptions.workers``, but no more than ``samples`` (at least one). A sample's jobs (its
    program, a conversion fallback, repair rounds) run one after another, so a lane beyond the
    samples would never run a job and its worker's start (~0.1 CPU s) would be spent for nothing;
    every job still runs alone in a fresh process under the same isolation and limits."""
    if samples is None:
        return options.workers
    return max(1, min(options.workers, samples))


def _adopted(early: EarlyPool | None, hidden: tuple[str, ...]) -> EarlyPool | None:
    """``early`` where it hides exactly ``hidden``; else None, ``early`` closed (a pool that hides
    other folders than the session's is never used)."""
    if early is None or early.hidden == hidden:
        return early
    logger.info("sandbox: the pool started early hides other folders than the run's; starting another")
    early.discard()
    return None


class Session:
    """One session of a run: what is left to do, the sandbox pool, the backend, the counters.

    Every (benchmark, problem, sample) pair left is an independent task of :meth:`_sample`.
    """

    def __init__(
        self,
        spec: RunSpec,
        options: RunOptions,
        prepared: Sequence[PreparedBenchmark],
        store: RunStore,
        *,
        early: EarlyPool | None = None,
    ) -> None:
        """``early``: the pool the run started while it prepared, adopted where it hides the
        session's folders (else closed); without one the session makes its own, started in
        :meth:`execute`. Closed with the session either way."""
        self.spec, self.options, self.prepared, self.store = spec, options, prepared, store
        # A sample whose model request failed, or whose completion was not recorded, is tried
        # again when the run is resumed.
        replay = spec.model.backend == "replay"
        earlier = list(store.iter_samples())
        self.graded = {r.key for r in earlier if not retried(r, replay=replay)}
        # Every sample of the run as stored, the last of each key (what finishing the run would
        # read back), where the caller asked for the records (RunOptions.keep_records).
        self.kept: dict[SampleKey, SampleRecord] | None = (
            {r.key: r for r in earlier} if options.keep_records else None
        )
        # (sample key, round) -> the completion stored for it (the last one written wins).
        self.stored: dict[tuple[SampleKey, int], CompletionLine] = {
            (line.key, line.round): line for line in store.iter_completions() if line.completion.error is None
        }
        self.repair = RepairTemplate() if spec.repair.rounds else None
        self.todo: list[tuple[PreparedBenchmark, Problem, int]] = [
            (item, problem, i)
            for item in prepared
            for problem in item.problems
            for i in range(spec.samples)
            if (item.bench.name, problem.id, i) not in self.graded
        ]
        self.notes: list[str] = missing_library_notes(
            prepared, (line.completion.text for line in self.stored.values() if line.completion.text)
        )
        self.reusable, reuse_notes = reusable_executions(options.reuse_executions, prepared, spec)
        self.notes += reuse_notes
        # Programs must not read the answers (data directory, benchmark folders) or other
        # samples' grades (run directories).
        hidden = hidden_folders(store.root, (item.bench.root for item in prepared), options)
        self.early = _adopted(early, hidden)
        self.pool = (
            self.early.pool
            if self.early is not None
            else SandboxPool(
                limits=SandboxLimits(),
                workers=pool_lanes(options, len(self.todo)),
                isolation=options.isolation,  # type: ignore[arg-type]
                hidden=hidden,
            )
        )
        # With every execution reusable the pool starts only if a program differs after all.
        self.pool_lazy = bool(self.reusable) and all(item.bench.name in self.reusable for item in prepared)
        self.pool_started = False
        self.pool_lock = asyncio.Lock()
        self.ray = self._on_ray(set(hidden))
        # With repair, any sample left may need a round nobody has generated yet.
        needs_model = any(((item.bench.name, p.id, i), 0) not in self.stored for item, p, i in self.todo) or (
            self.repair is not None and bool(self.todo)
        )
        self.backend: Backend | None = create_backend(spec.model) if needs_model else None
        self.progress = RunProgress(
            {item.bench.name: (item.entry.title, len(item.problems) * spec.samples) for item in prepared},
            enabled=options.show_progress,
        )
        # One judge for every sample: the same sequence as the reward scorer's
        # (trex_eval.protocols.judge), sharing the parsed reference models and programs.
        self.judge = SampleJudge(diagnose=options.diagnose)
        self.generated_now = 0
        self.graded_now = 0
        self.executed_now = 0
        self.reused_now = 0
        self.endpoint_stats: list[dict[str, object]] = []

    def _on_ray(self, hidden: set[str]) -> RayGrading | None:
        """The grader seam: on Ray (``RunOptions.ray``) the actors hold the pools and judges, built
        as this session's (same spec, lanes, isolation, hidden folders), and this session's pool
        never starts; ``None``: grading here."""
        if self.options.ray is None:
            return None
        setup = ActorSetup(
            spec=self.spec,
            data_dir=None if self.options.data_dir is None else str(self.options.data_dir),
            workers=self.options.workers,
            isolation=self.options.isolation,
            diagnose=self.options.diagnose,
            hidden=tuple(sorted(hidden)),
            lazy_pool=self.pool_lazy,
        )
        return RayGrading(self.options.ray, setup)

    async def execute(self) -> None:
        """Do what is left: start the pool and backend, run every sample task, stop them."""
        # Problems, prompts and stored completions live for the whole run; moving them out of the
        # collector's reach keeps full collections (triggered by per-sample records) from
        # re-scanning them: halves the harness's per-sample overhead
        # (scripts/bench_harness_overhead.py).
        gc.collect()
        gc.freeze()
        try:
            if self.ray is not None:
                await self.ray.start([item.entry for item in self.prepared])
                for line in self.ray.notes():
                    self.progress.note(line)
            elif not self.pool_lazy:
                # No verifier process is warmed here: the first claim that a certificate does not
                # settle starts one (a start is ~0.25 CPU s, and an LP run may never re-solve).
                await self._start_pool()
            self._announce()
            if self.backend is not None:
                await self.backend.start()
            self._record_provenance()
            with self.progress:
                tasks = [asyncio.ensure_future(self._sample(*job)) for job in self.todo]
                try:
                    await asyncio.gather(*tasks)
                except BaseException:
                    # One failure ends the run: stop the others before the pool and backend go away.
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise
        finally:
            if self.backend is not None:
                if isinstance(self.backend, ReportsEndpoints):  # clients of endpoints only
                    self.endpoint_stats = list(self.backend.endpoint_stats())
                await self.backend.close()
            if self.early is not None:  # started (or starting) whether or not it was awaited
                await asyncio.to_thread(self.early.discard)
            elif self.pool_started:
                await asyncio.to_thread(self.pool.close)
            if self.ray is not None:
                self.ray.close()
            gc.unfreeze()

    async def _start_pool(self) -> None:
        async with self.pool_lock:
            if self.pool_started:
                return
            if self.early is not None:
                await self.early.started()
            else:
                await asyncio.to_thread(self.pool.start)
            self.pool_started = True
        self.progress.note(f"sandbox isolation: {self.pool.isolation}")
        for warning in self.pool.isolation_report.warnings:  # programs can read the answers
            self.progress.note(warning)

    def _announce(self) -> None:
        for note in self.notes:
            self.progress.note(f"note: {note}")
        for item in self.prepared:
            if item.bench.row_errors:
                self.progress.note(
                    f"{item.bench.name}: {len(item.bench.row_errors)} data rows skipped, first: "
                    f"{item.bench.row_errors[0]} "
                    f"(`trex-eval benchmarks validate {item.entry.source}` lists them)"
                )
        if self.graded:
            restored = [r for r in self.store.iter_samples() if r.key in self.graded]
            for item in self.prepared:
                mine = [r for r in restored if r.benchmark == item.bench.name]
                self.progress.restore(
                    item.bench.name, done=len(mine), passed=sum(r.grade.passed for r in mine)
                )

    def _record_provenance(self) -> None:
        manifest = self.store.read_manifest()
        backend = dict(self.backend.describe()) if self.backend else None
        if self.ray is not None:
            described = self.ray.sandbox()
        else:
            described = self.pool.describe() if self.pool_started else None
        sandbox: dict[str, object] = described or {
            "not_started": f"executions reused from {self.options.reuse_executions}"
        }
        if self.options.reuse_executions is not None:
            sandbox["executions_reused_from"] = str(self.options.reuse_executions)
            sandbox["reused_for"] = sorted(self.reusable)
        session = provenance.collect(self.options.data_dir, sandbox=sandbox, backend=backend)
        if self.ray is not None:
            session["grading"] = self.ray.describe()
        if manifest.provenance:
            # A resumed run: keep what every earlier session ran with.
            earlier = [*manifest.provenance.get("earlier_sessions", []), {**manifest.provenance}]
            for entry in earlier:
                entry.pop("earlier_sessions", None)
            session["earlier_sessions"] = earlier
        self.store.write_manifest(manifest.model_copy(update={"provenance": session}))

    async def _sample(self, item: PreparedBenchmark, problem: Problem, index: int) -> None:
        key: SampleKey = (item.bench.name, problem.id, index)
        line = self.stored.get((key, 0))
        if line is None:
            prompt = item.renderer.render(problem, few_shot=item.shots.get(problem.id, ()))
            line = await self._generate(item, problem, index, prompt=prompt)
        record = await self._grade(item, problem, line.prompt, line.completion)
        if self.repair is not None:
            record = await repair_rounds(
                record,
                problem=problem,
                template=self.repair,
                plan=item.plan,
                settings=self.spec.repair,
                stored=lambda number: self.stored.get((record.key, number)),
                generate=lambda prompt, number: self._generate(
                    item, problem, record.sample_index, prompt=prompt, round_index=number
                ),
                grade=lambda prompt, completion, number: self._grade(
                    item, problem, prompt, completion, round_index=number
                ),
            )
        # Held to the record budget; a record that cannot be stored becomes a harness failure.
        stored = self.store.append_sample(record, max_bytes=item.plan.limits_for(problem).record_mib << 20)
        if self.kept is not None:
            self.kept[stored.key] = stored
        if stored.grade.verdict is Verdict.HARNESS_ERROR:
            self.progress.note(f"{item.bench.name} {problem.id} sample {index}: {stored.grade.reason}")
        self.graded_now += 1
        self.progress.graded(item.bench.name, passed=stored.grade.passed)

    async def _generate(
        self, item: PreparedBenchmark, problem: Problem, index: int, *, prompt: Prompt, round_index: int = 0
    ) -> CompletionLine:
        """Ask the model for sample ``index`` of ``problem`` (round ``round_index``: ``prompt`` is
        then the whole conversation) and append the answer to ``completions.jsonl`` at once."""
        assert self.backend is not None
        sampling = self.spec.model.sampling
        seed = None if sampling.seed is None else sampling.seed + index
        completion = await self.backend.generate(
            GenerationRequest(
                problem=problem,
                prompt=prompt,
                params=sampling,
                sample_index=index,
                seed=seed,
                round=round_index,
            )
        )
        line = CompletionLine(
            benchmark=item.bench.name, prompt=prompt, completion=completion, round=round_index
        )
        self.store.append_completion(line)
        self.generated_now += 1
        if round_index == 0:  # the progress bars count samples; repair rounds are extra requests
            self.progress.generated(item.bench.name)
        return line

    async def _grade(
        self,
        item: PreparedBenchmark,
        problem: Problem,
        prompt: Prompt,
        completion: Completion,
        *,
        round_index: int = 0,
    ) -> SampleRecord:
        plan = item.plan
        if completion.error is not None:  # nothing to judge: no program, no diagnosis
            program = plan.extract(completion)
            execution = Execution(status=ExecStatus.NOT_RUN, detail=f"no completion: {completion.error}")
            if self.spec.model.backend == "replay" and completion.error.startswith(REPLAY_MISSING):
                grade = plan.failed(Verdict.MISSING, f"no completion recorded: {completion.error}")
            else:
                grade = plan.failed(Verdict.API_ERROR, f"the model request failed: {completion.error}")
        else:
            program, execution, grade = await self._judged(item, problem, completion, round_index)
        return SampleRecord(
            benchmark=item.bench.name,
            problem_id=problem.id,
            sample_index=completion.sample_index,
            prompt=prompt,
            completion=completion,
            program=program,
            execution=execution,
            grade=grade,
        )

    async def _judged(
        self, item: PreparedBenchmark, problem: Problem, completion: Completion, round_index: int
    ) -> tuple[Program, Execution, Grade]:
        """The judge's decision on ``completion``: here, on this session's pool, or on a Ray actor."""
        if self.ray is not None:
            key = (problem.id, completion.sample_index, round_index)
            answer = await self.ray.judge(
                item,
                problem,
                completion,
                round_index=round_index,
                stored=self.reusable.get(item.bench.name, {}).get(key),
            )
            self.executed_now += answer.executed
            self.reused_now += answer.reused
            return answer.program, answer.execution, answer.grade
        judged = await self.judge.judge(
            item.plan,
            problem,
            completion,
            run=lambda code: self._execution(item, problem, code, completion.sample_index, round_index),
            run_reference=lambda other, code: self._run_program(item, other, code),
        )
        return judged.program, judged.execution, judged.grade

    async def _run_program(self, item: PreparedBenchmark, problem: Problem, program: Program) -> Execution:
        """``program`` run as the plan runs it, on the pool (started on first use). Also a
        reference program's run for a diagnosis, not counted among the samples' executions."""
        if not self.pool_started:
            await self._start_pool()
        return await self.pool.arun(item.plan.job(problem, program), limits=item.plan.limits_for(problem))

    async def _execution(
        self, item: PreparedBenchmark, problem: Problem, program: Program, index: int, round_index: int = 0
    ) -> Execution:
        """The stored execution of the same program when one is reusable, else a fresh run."""
        stored = stored_execution(
            self.reusable.get(item.bench.name, {}).get((problem.id, index, round_index)), program
        )
        if stored is not None:
            self.reused_now += 1
            return stored
        self.executed_now += 1
        return await self._run_program(item, problem, program)


def retried(record: SampleRecord, *, replay: bool = False) -> bool:
    """Whether a stored sample is tried again on resume: its model request failed, or no
    completion was recorded for it, in round 0 or in its last repair round. A harness failure to
    store it is not: the same record would fail again, and a resume must be able to finish. Nor is
    a completion missing from a replayed file, or recorded there as a failed request (``replay``):
    the file is pinned by its sha256, so asking it again would only store the same record again."""
    last = record.rounds[-1].grade if record.rounds else record.grade
    again = RETRIED - {Verdict.MISSING, Verdict.API_ERROR} if replay else RETRIED
    return record.grade.verdict in again or last.verdict in again
