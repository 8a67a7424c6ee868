"""The ``trex-eval run`` pipeline: generate -> store -> extract -> execute -> grade -> store.

Entry point::

    result = run(RunSpec(model=spec, benchmarks=("nl4opt",)), RunOptions(data_dir=path))
    result.run_dir, result.summary

What the run is (:class:`~trex_eval.run.spec.RunSpec`) and how this process runs it
(:class:`~trex_eval.run.spec.RunOptions`) are separate: only the first is recorded as the run's
settings and must match on resume.

Every (benchmark, problem, sample) pair is an independent asyncio task: its completion is
appended to ``completions.jsonl`` the moment it arrives, then it waits for a sandbox slot, is
graded, and its :class:`~trex_eval.records.SampleRecord` is appended to ``samples.jsonl``.
Generation therefore never waits for grading (the backend bounds its own concurrency, the
sandbox pool bounds executions), and grading starts with the first completion.

Resuming (:func:`resume_spec`) re-reads the run directory: graded pairs are skipped, pairs with
a stored completion are graded without calling the model again, the rest are generated. The
settings must be identical (same model spec, sampling, benchmarks with the same data sha256,
rules, prompt set, samples, limit, protocol), so a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trex_eval.backends.base import Backend, GenerationRequest, create_backend
from trex_eval.backends.endpoints import endpoint_summary
from trex_eval.benchmarks import Benchmark, load_benchmark
from trex_eval.errors import BenchmarkError, ConfigError, StoreError
from trex_eval.grading import get_rule
from trex_eval.grading.lp import parse_lp
from trex_eval.prompting.fewshot import FewShotPool, PoolItem, SelectionPolicy, retrieval_text, select
from trex_eval.prompting.render import UPSTREAM_SET, FewShotExample, PromptRenderer
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.protocols.plan import EvaluationPlan, plan_for
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    GraderKind,
    LinearModel,
    Problem,
    Program,
    Prompt,
    RepairRound,
    SampleRecord,
    StructureReference,
    Verdict,
)
from trex_eval.report.summary import RunSummary, render_summary_markdown, summarize, summary_json
from trex_eval.run import provenance
from trex_eval.run.progress import RunProgress
from trex_eval.run.repair import FEEDBACK_MODES, RepairTemplate, conversation, repair_need
from trex_eval.run.spec import RunOptions, RunSpec, settings_diff, superseded_rule
from trex_eval.sandbox import SandboxLimits, SandboxPool, warm_up_verification
from trex_eval.store import (
    COMPLETIONS,
    LOCK,
    MANIFEST,
    SAMPLES,
    BenchmarkEntry,
    CompletionLine,
    RunManifest,
    RunSettings,
    RunStore,
    SampleKey,
)

MAX_API_ERROR_RATE = 0.10
"""A run with more than this fraction of its expected samples lost to failed model requests (or
with every request failed) is not a measurement: :attr:`RunResult.failure` says so and the CLI
exits with code 3."""

REPLAY_MISSING = "no recorded completion for "
"""How the ``replay`` backend's error for a sample its file does not hold begins: such a sample is
graded :attr:`~trex_eval.records.Verdict.MISSING`, not ``api_error`` (nothing was requested)."""


@dataclass(frozen=True)
class RunResult:
    """A finished session: where the run lives, its summary, what this session did (samples
    graded, completions generated, programs executed and stored executions reused), and
    ``failure``: ``None``, or why the numbers are not a measurement (see :data:`MAX_API_ERROR_RATE`)."""

    run_dir: Path
    summary: RunSummary
    graded_now: int
    generated_now: int
    executed_now: int = 0
    reused_now: int = 0
    failure: str | None = None
    notes: tuple[str, ...] = ()


@dataclass
class _Benchmark:
    """A benchmark prepared for a run: problems (after ``limit``), plan, renderer, entry."""

    bench: Benchmark
    problems: tuple[Problem, ...]
    plan: EvaluationPlan
    renderer: PromptRenderer
    entry: BenchmarkEntry
    shots: dict[str, tuple[FewShotExample, ...]] = field(default_factory=dict)


def run(spec: RunSpec, options: RunOptions | None = None) -> RunResult:
    """Run (or resume) an evaluation. Blocking; see :func:`run_async`."""
    return asyncio.run(run_async(spec, options))


def resume_spec(run_dir: Path) -> RunSpec:
    """The spec that continues the run in ``run_dir`` (settings come from its manifest).

    Raises:
        StoreError: a benchmark of the run was graded under a version of its rule that this
            trex-eval no longer implements (resuming would mix two rules' grades in one run).
    """
    settings = RunStore(run_dir).read_manifest().settings
    old = superseded_rule(settings)
    if old is not None:
        raise StoreError(
            f"{run_dir} graded {old.benchmark} under {old.recorded}; this trex-eval implements "
            f"{old.current}, which decides differently, so the run cannot be continued",
            hint=f"re-grade it into a new directory (stored executions are reused): "
            f"trex-eval grade {run_dir} --rule {old.current} --out NEW_DIR",
        )
    return RunSpec.from_settings(settings)


def _rules_by_kind(rules: Sequence[str]) -> dict[GraderKind, str]:
    """The override rule for each kind; each spec's kind comes from the registry."""
    chosen: dict[GraderKind, set[str]] = {}
    for spec in rules:
        rule = get_rule(spec)
        chosen.setdefault(rule.kind, set()).add(rule.spec)
    if any(len(specs) > 1 for specs in chosen.values()):
        raise ConfigError(
            f"conflicting rules {', '.join(rules)}",
            hint="give at most one objective rule and one structure rule; to compare rules, grade the "
            "finished run under several: `trex-eval grade RUN --rule A --rule B`",
        )
    return {kind: next(iter(specs)) for kind, specs in chosen.items()}


def prepare_benchmarks(spec: RunSpec, *, data_dir: Path | None) -> list[_Benchmark]:
    """Load, limit and plan every requested benchmark; render nothing yet."""
    if spec.samples < 1:
        raise ConfigError("--samples must be at least 1")
    if spec.limit is not None and spec.limit < 1:
        raise ConfigError("--limit must be at least 1")
    if spec.repair.rounds < 0:
        raise ConfigError("--repair must be 0 or more")
    if spec.repair.feedback not in FEEDBACK_MODES:
        raise ConfigError(
            f"unknown repair feedback '{spec.repair.feedback}'",
            hint=f"choose one of: {', '.join(FEEDBACK_MODES)}",
        )
    overrides = _rules_by_kind(spec.rules)
    known = {name: _problem_ids(name, ids) for name, ids in spec.problem_ids.items()}
    prepared: list[_Benchmark] = []
    for name in dict.fromkeys(spec.benchmarks):
        bench = load_benchmark(name, data_dir=data_dir)
        if not bench.problems:
            raise BenchmarkError(
                f"benchmark '{bench.name}' has no usable problems",
                where=str(bench.spec_path),
                hint=f"`trex-eval benchmarks validate {name}` lists what is wrong with its rows",
            )
        if any(item.bench.name == bench.name for item in prepared):
            raise ConfigError(
                f"two requested benchmarks are both named '{bench.name}'",
                hint="give each benchmark YAML its own `name:`",
            )
        problems = bench.problems[: spec.limit] if spec.limit else bench.problems
        chosen = known.get(name)
        if chosen is not None:
            problems = tuple(p for p in problems if p.id in chosen)
            if not problems:
                raise ConfigError(
                    f"none of the {len(chosen)} chosen problem ids is a problem of benchmark '{bench.name}'",
                    hint=f"ids look like {', '.join(repr(p.id) for p in bench.problems[:3])}",
                )
        plan = plan_for(
            bench,
            protocol=spec.protocol,
            rule=spec.rules_by_benchmark.get(name) or overrides.get(bench.spec.grader.kind),
            extractor=spec.extractor,
            limits=spec.limits,
            gurobi=spec.gurobi,
        )
        prompt_set = spec.prompt_set
        if prompt_set == UPSTREAM_SET and bench.spec.prompt.upstream is None:
            prompt_set = bench.spec.prompt.default_set
        renderer = PromptRenderer(
            bench, prompt_set, working_directory=plan.protocol.prompt_working_directory(bench)
        )
        source = str(bench.spec_path.resolve()) if name.endswith((".yaml", ".yml")) else name
        entry = BenchmarkEntry(
            name=bench.name,
            source=source,
            skipped_rows=len(bench.row_errors),
            title=bench.spec.title,
            version=bench.spec.version,
            sha256=bench.sha256,
            problems=len(problems),
            grader=bench.spec.grader.kind,
            rule=plan.rule.spec,
            rule_description=plan.rule.description,
            extractor=plan.extractor,
            prompt_set=prompt_set,
            template_sha256=renderer.template_sha256,
            limits=plan.limits,
            problem_ids=tuple(p.id for p in problems) if chosen is not None else None,
        )
        prepared.append(_Benchmark(bench, problems, plan, renderer, entry))
    if spec.few_shot.k > 0:
        for item in prepared:
            item.shots = _few_shot_examples(item, spec)
    return prepared


def _problem_ids(name: str, ids: Sequence[str]) -> frozenset[str]:
    if not ids:
        raise ConfigError(f"benchmark '{name}': an empty selection of problem ids")
    return frozenset(ids)


def _few_shot_examples(item: _Benchmark, spec: RunSpec) -> dict[str, tuple[FewShotExample, ...]]:
    pool = FewShotPool(_few_shot_pool(item, spec.few_shot.source))
    seed = spec.model.sampling.seed
    policy = SelectionPolicy(
        k=spec.few_shot.k, strategy=spec.few_shot.strategy, seed=42 if seed is None else seed
    )
    return {
        p.id: tuple(
            FewShotExample(c.problem_id, c.user, c.assistant)
            for c in select(p.id, p.question, twin_group=p.twin_group, pool=pool, policy=policy)
        )
        for p in item.problems
    }


def _few_shot_pool(item: _Benchmark, source: str) -> list[PoolItem]:
    renderer, bench = item.renderer, item.bench
    if source == "reference":
        if not any(p.reference_code for p in bench.problems):
            raise ConfigError(
                f"benchmark '{bench.name}' ships no reference programs to draw few-shot examples from",
                hint="pass --few-shot-source RUN_DIR (a previous run's correct samples are used)",
            )
        append = "\nmodel.optimize()" if bench.spec.grader.kind is GraderKind.OBJECTIVE else ""
        return [
            PoolItem(
                p.id,
                p.question,
                retrieval_text(p.question, p.reference_code),
                renderer.user_text(p),
                f"```python\n{p.reference_code.rstrip()}{append}\n```",
                p.twin_group,
            )
            for p in bench.problems
            if p.reference_code
        ]
    store = RunStore(Path(source))
    by_id = {p.id: p for p in bench.problems}
    pool: dict[str, PoolItem] = {}
    for record in store.iter_samples():
        problem = by_id.get(record.problem_id)
        if (
            record.benchmark != bench.name
            or problem is None
            or not record.grade.passed
            or record.problem_id in pool
        ):
            continue
        pool[record.problem_id] = PoolItem(
            problem.id,
            problem.question,
            retrieval_text(problem.question, problem.reference_code),
            renderer.user_text(problem),
            record.completion.text,
            problem.twin_group,
        )
    return list(pool.values())


def _settings(spec: RunSpec, prepared: Sequence[_Benchmark]) -> RunSettings:
    return RunSettings(
        model=spec.model,
        sampling=spec.model.sampling,
        samples=spec.samples,
        limit=spec.limit,
        protocol=spec.protocol,
        prompt_set=spec.prompt_set,
        extractor=spec.extractor,
        few_shot=spec.few_shot.k,
        few_shot_strategy=spec.few_shot.strategy,
        few_shot_source=spec.few_shot.source if spec.few_shot.k else None,
        gurobi=spec.gurobi,
        limits=spec.limits,
        benchmarks=tuple(item.entry for item in prepared),
        replay_sha256=_replay_sha256(spec),
        repair=spec.repair.rounds,
        repair_feedback=spec.repair.feedback,
        repair_template_sha256=RepairTemplate().sha256 if spec.repair.rounds else None,
    )


def _replay_sha256(spec: RunSpec) -> str | None:
    """The digest of the file a ``replay`` model reads (``None`` for other backends, or when the
    file cannot be read: the backend reports that with its own message when it starts)."""
    path = spec.model.options.get("path") if spec.model.backend == "replay" else None
    if not isinstance(path, str):
        return None
    try:
        return hashlib.sha256(Path(path).expanduser().read_bytes()).hexdigest()
    except OSError:
        return None


def default_run_id(spec: RunSpec, *, now: dt.datetime | None = None) -> str:
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", spec.model.name)
    protocol = "" if spec.protocol == DEFAULT_PROTOCOL else f"-{spec.protocol}"
    # The suffix keeps two runs started in the same second apart.
    return f"{name}-{spec.prompt_set}{protocol}-{stamp}-{secrets.token_hex(2)}"


def _open_store(run_dir: Path, options: RunOptions, settings: RunSettings) -> RunStore:
    if (run_dir / MANIFEST).exists():
        previous = _with_versioned_rules(RunStore(run_dir).read_manifest().settings)
        if previous != settings:
            raise StoreError(
                f"{run_dir} holds a run with different settings: {settings_diff(previous, settings)}",
                hint="resume with exactly the same settings (`trex-eval run --resume DIR` reads them "
                "from the manifest), or choose another --out",
            )
        return RunStore.open(run_dir)
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    manifest = RunManifest(run_id=run_dir.name, created_at=now, command=options.command, settings=settings)
    return RunStore.create(run_dir, manifest)


def _with_versioned_rules(settings: RunSettings) -> RunSettings:
    """``settings`` with each benchmark's rule as its canonical ``name@version`` spec: runs written
    before structure rules carried their version recorded the bare name of the same rule."""
    entries = []
    for entry in settings.benchmarks:
        try:
            canonical = get_rule(entry.rule).spec
        except ConfigError:
            canonical = entry.rule
        entries.append(entry.model_copy(update={"rule": canonical}))
    return settings.model_copy(update={"benchmarks": tuple(entries)})


class _ReferenceModels:
    """Parses each reference LP once (thread-safe enough: parsing is idempotent)."""

    def __init__(self) -> None:
        self._cache: dict[str, LinearModel] = {}

    def __call__(self, reference: StructureReference) -> LinearModel:
        model = self._cache.get(reference.lp_path)
        if model is None:
            model = parse_lp(Path(reference.lp_path).read_text(encoding="utf-8"))
            self._cache[reference.lp_path] = model
        return model


async def run_async(spec: RunSpec, options: RunOptions | None = None) -> RunResult:
    """Run or resume an evaluation (see module docstring); ``options`` default to :class:`RunOptions`."""
    options = options or RunOptions()
    prepared = prepare_benchmarks(spec, data_dir=options.data_dir)
    settings = _settings(spec, prepared)
    run_dir = options.out or Path("results") / default_run_id(spec)
    fresh = not (run_dir / MANIFEST).exists()
    store = _open_store(run_dir, options, settings)
    try:
        return await _Run(spec, options, prepared, store).execute()
    except BaseException:
        store.close()
        if fresh:
            _remove_if_empty(run_dir)
        raise
    finally:
        store.close()


def _remove_if_empty(run_dir: Path) -> None:
    """Remove a run directory this session created when it holds no completion and no sample: a
    run that failed before its first sample (a missing key, an unreachable server) must not leave
    a manifest that refuses the retry as "different settings"."""
    for name in (COMPLETIONS, SAMPLES):
        path = run_dir / name
        if path.exists() and path.stat().st_size > 0:
            return
    for name in (MANIFEST, COMPLETIONS, SAMPLES, LOCK):
        (run_dir / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the user's own files are in it: keep the folder
        run_dir.rmdir()


class _Run:
    """One session of a run: what is left to do, the sandbox pool, the backend, the counters.

    Every (benchmark, problem, sample) pair left is an independent task of :meth:`_sample`.
    """

    def __init__(
        self, spec: RunSpec, options: RunOptions, prepared: Sequence[_Benchmark], store: RunStore
    ) -> None:
        self.spec, self.options, self.prepared, self.store = spec, options, prepared, store
        # A sample whose model request failed, or whose completion was not recorded, is tried
        # again when the run is resumed.
        self.graded = {r.key for r in store.iter_samples() if not _retried(r)}
        # (sample key, round) -> the completion stored for it (the last one written wins).
        self.stored: dict[tuple[SampleKey, int], CompletionLine] = {
            (line.key, line.round): line for line in store.iter_completions() if line.completion.error is None
        }
        self.repair = RepairTemplate() if spec.repair.rounds else None
        self.todo: list[tuple[_Benchmark, Problem, int]] = [
            (item, problem, i)
            for item in prepared
            for problem in item.problems
            for i in range(spec.samples)
            if (item.bench.name, problem.id, i) not in self.graded
        ]
        self.notes: list[str] = []
        self.reusable = self._reusable_executions(options.reuse_executions)
        # Programs must not read the answers (data directory, benchmark folders) or other
        # samples' grades (run directories).
        hidden = {str(store.root.resolve().parent), *(str(item.bench.root) for item in prepared)}
        if options.data_dir is not None:
            hidden.add(str(options.data_dir))
        if options.reuse_executions is not None:
            hidden.add(str(options.reuse_executions.resolve().parent))
        self.pool = SandboxPool(
            limits=SandboxLimits(),
            workers=options.workers,
            verify=False,  # the grading step verifies (EvaluationPlan.judge)
            isolation=options.isolation,  # type: ignore[arg-type]
            hidden=tuple(sorted(hidden)),
        )
        # With every execution reusable the pool starts only if a program differs after all.
        self.pool_lazy = bool(self.reusable) and all(item.bench.name in self.reusable for item in prepared)
        self.pool_started = False
        self.pool_lock = asyncio.Lock()
        # With repair, any sample left may need a round nobody has generated yet.
        needs_model = any(((item.bench.name, p.id, i), 0) not in self.stored for item, p, i in self.todo) or (
            self.repair is not None and bool(self.todo)
        )
        self.backend: Backend | None = create_backend(spec.model) if needs_model else None
        self.progress = RunProgress(
            {item.bench.name: (item.entry.title, len(item.problems) * spec.samples) for item in prepared},
            enabled=options.show_progress,
        )
        self.references = _ReferenceModels()
        self.generated_now = 0
        self.graded_now = 0
        self.executed_now = 0
        self.reused_now = 0
        self.endpoint_stats: list[dict[str, object]] = []

    def _reusable_executions(
        self, source: Path | None
    ) -> dict[str, dict[tuple[str, int, int], tuple[Program, Execution]]]:
        """Benchmark -> (problem id, sample, round) -> the source's stored program and execution,
        for the benchmarks whose programs would run exactly as they did there; a note says why
        any other benchmark's programs run again."""
        if source is None:
            return {}
        settings = RunStore(source).read_manifest().settings
        entries = {entry.name: entry for entry in settings.benchmarks}
        usable: set[str] = set()
        for item in self.prepared:
            entry = entries.get(item.bench.name)
            differs = [
                what
                for what, same in (
                    ("the protocol", settings.protocol == self.spec.protocol),
                    ("the gurobipy policy", settings.gurobi == self.spec.gurobi),
                    ("the benchmark data", entry is not None and entry.sha256 == item.entry.sha256),
                    ("the extractor", entry is not None and entry.extractor == item.entry.extractor),
                    ("the sandbox limits", entry is not None and entry.limits == item.entry.limits),
                )
                if not same
            ]
            if differs:
                self.notes.append(
                    f"{item.bench.name}: programs run again ({', '.join(differs)} differ from {source}); "
                    "only a change of grading rule reuses the stored executions"
                )
            else:
                usable.add(item.bench.name)
        reusable: dict[str, dict[tuple[str, int, int], tuple[Program, Execution]]] = {
            name: {} for name in usable
        }
        for record in RunStore(source).iter_samples():
            if record.benchmark not in reusable:
                continue
            rounds = [(0, record.program, record.execution)]
            rounds += [(r.round, r.program, r.execution) for r in record.rounds]
            for number, program, execution in rounds:
                if program.code is not None:
                    key = (record.problem_id, record.sample_index, number)
                    reusable[record.benchmark][key] = (program, execution)
        return reusable

    async def execute(self) -> RunResult:
        # Problems, prompts and stored completions live for the whole run; moving them out of the
        # collector's reach keeps full collections (triggered by per-sample records) from
        # re-scanning them: halves the harness's per-sample overhead
        # (scripts/bench_harness_overhead.py).
        gc.collect()
        gc.freeze()
        try:
            if not self.pool_lazy:
                # The objective grader's first verification loads the harness's own solver:
                # loaded while the workers start, it no longer holds up the first grade.
                objective = any(item.plan.kind is GraderKind.OBJECTIVE for item in self.prepared)
                warming = asyncio.to_thread(warm_up_verification) if objective else asyncio.sleep(0)
                await asyncio.gather(self._start_pool(), warming)
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
                live = getattr(self.backend, "endpoint_stats", None)  # clients of endpoints only
                self.endpoint_stats = list(live()) if callable(live) else []
                await self.backend.close()
            if self.pool_started:
                await asyncio.to_thread(self.pool.close)
            gc.unfreeze()
        return self._finish()

    async def _start_pool(self) -> None:
        async with self.pool_lock:
            if self.pool_started:
                return
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
        sandbox: dict[str, object] = (
            self.pool.describe()
            if self.pool_started
            else {"not_started": f"executions reused from {self.options.reuse_executions}"}
        )
        if self.options.reuse_executions is not None:
            sandbox["executions_reused_from"] = str(self.options.reuse_executions)
            sandbox["reused_for"] = sorted(self.reusable)
        session = provenance.collect(self.options.data_dir, sandbox=sandbox, backend=backend)
        if manifest.provenance:
            # A resumed run: keep what every earlier session ran with.
            earlier = [*manifest.provenance.get("earlier_sessions", []), {**manifest.provenance}]
            for entry in earlier:
                entry.pop("earlier_sessions", None)
            session["earlier_sessions"] = earlier
        self.store.write_manifest(manifest.model_copy(update={"provenance": session}))

    async def _sample(self, item: _Benchmark, problem: Problem, index: int) -> None:
        key: SampleKey = (item.bench.name, problem.id, index)
        line = self.stored.get((key, 0))
        if line is None:
            prompt = item.renderer.render(problem, few_shot=item.shots.get(problem.id, ()))
            line = await self._generate(item, problem, index, prompt=prompt)
        record = await self._grade(item, problem, line.prompt, line.completion)
        if self.repair is not None:
            record = await self._repair(item, problem, record, self.repair)
        # Held to the record budget; a record that cannot be stored becomes a harness failure.
        stored = self.store.append_sample(record, max_bytes=item.plan.limits.record_mib << 20)
        if stored.grade.verdict is Verdict.HARNESS_ERROR:
            self.progress.note(f"{item.bench.name} {problem.id} sample {index}: {stored.grade.reason}")
        self.graded_now += 1
        self.progress.graded(item.bench.name, passed=stored.grade.passed)

    async def _repair(
        self, item: _Benchmark, problem: Problem, record: SampleRecord, template: RepairTemplate
    ) -> SampleRecord:
        """``record`` (round 0) with its repair rounds: while the last round's outcome is one the
        protocol repairs (:func:`~trex_eval.run.repair.repair_need`) and rounds are left, the
        model is asked again with the feedback appended to the conversation.

        A round's completion stored by an earlier session is reused only when it answered
        exactly the conversation asked now (a re-run program that behaves otherwise gets its
        feedback answered anew). A failed request ends the rounds; the sample is then tried again
        on resume, from its stored rounds."""
        rounds: list[RepairRound] = []
        turns: list[tuple[Completion, str]] = []
        completion, program, execution, grade = (
            record.completion,
            record.program,
            record.execution,
            record.grade,
        )
        total = self.spec.repair.rounds
        for number in range(1, total + 1):
            facts = repair_need(
                problem, program, execution, grade, grader=item.plan.kind, mode=self.spec.repair.feedback
            )
            if facts is None:
                break
            feedback = template.render(facts, round_index=number, rounds=total)
            turns.append((completion, feedback))
            prompt = conversation(record.prompt, turns)
            line = self.stored.get((record.key, number))
            if line is None or line.prompt.messages != prompt.messages:
                line = await self._generate(
                    item, problem, record.sample_index, prompt=prompt, round_index=number
                )
            graded = await self._grade(item, problem, prompt, line.completion, round_index=number)
            completion, program, execution, grade = (
                graded.completion,
                graded.program,
                graded.execution,
                graded.grade,
            )
            rounds.append(
                RepairRound(
                    round=number,
                    failure=facts.failure,
                    feedback=feedback,
                    completion=completion,
                    program=program,
                    execution=execution,
                    grade=grade,
                )
            )
            if grade.verdict in _RETRIED:
                break
        return record.model_copy(update={"rounds": tuple(rounds)})

    async def _generate(
        self, item: _Benchmark, problem: Problem, index: int, *, prompt: Prompt, round_index: int = 0
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
        item: _Benchmark,
        problem: Problem,
        prompt: Prompt,
        completion: Completion,
        *,
        round_index: int = 0,
    ) -> SampleRecord:
        plan = item.plan
        program = plan.extract(completion)
        if completion.error is not None:
            execution = Execution(status=ExecStatus.NOT_RUN, detail=f"no completion: {completion.error}")
            if self.spec.model.backend == "replay" and completion.error.startswith(REPLAY_MISSING):
                grade = plan.failed(Verdict.MISSING, f"no completion recorded: {completion.error}")
            else:
                grade = plan.failed(Verdict.API_ERROR, f"the model request failed: {completion.error}")
        elif program.code is None:
            execution = Execution(status=ExecStatus.NO_CODE, detail=program.reason)
            grade = plan.grade(problem, execution, reference_model=self.references)
        else:
            execution = await self._execution(item, problem, program, completion.sample_index, round_index)
            # Claims are verified here, off the sandbox lanes, and only where a verdict hangs on it.
            execution, grade = await asyncio.to_thread(
                plan.judge, problem, execution, reference_model=self.references
            )
            # A rule's conversion fallback (optmath:fallback=true) runs its rewrites of a miss.
            grade = await plan.fallback(
                problem,
                program,
                grade,
                run=lambda code: self._execution(item, problem, code, completion.sample_index, round_index),
                reference_model=self.references,
            )
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

    async def _execution(
        self, item: _Benchmark, problem: Problem, program: Program, index: int, round_index: int = 0
    ) -> Execution:
        """The stored execution of the same program when one is reusable, else a fresh run."""
        stored = self.reusable.get(item.bench.name, {}).get((problem.id, index, round_index))
        if stored is not None and stored[0].code == program.code:
            self.reused_now += 1
            return stored[1]
        if not self.pool_started:
            await self._start_pool()
        self.executed_now += 1
        return await self.pool.arun(item.plan.job(problem, program), limits=item.plan.limits)

    def _finish(self) -> RunResult:
        manifest = self.store.read_manifest()
        records = list(self.store.iter_samples())
        summary = summarize(manifest, records)
        self.store.write_summary(summary_json(summary), render_summary_markdown(summary))
        finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        update: dict[str, object] = {"finished_at": finished}
        # Which endpoint served what (every session's completions; this session's live counters).
        endpoints = endpoint_summary(
            (line.completion for line in self.store.iter_completions()), live=self.endpoint_stats
        )
        if endpoints is not None:
            update["provenance"] = {**manifest.provenance, "endpoints": endpoints}
        self.store.write_manifest(manifest.model_copy(update=update))
        return RunResult(
            self.store.root,
            summary,
            self.graded_now,
            self.generated_now,
            executed_now=self.executed_now,
            reused_now=self.reused_now,
            failure=_failure(summary, records),
            notes=tuple(self.notes),
        )


_RETRIED = frozenset({Verdict.API_ERROR, Verdict.MISSING})


def _retried(record: SampleRecord) -> bool:
    """Whether a stored sample is tried again on resume: its model request failed, or no
    completion was recorded for it, in round 0 or in its last repair round. A harness failure to
    store it is not: the same record would fail again, and a resume must be able to finish."""
    last = record.rounds[-1].grade if record.rounds else record.grade
    return record.grade.verdict in _RETRIED or last.verdict in _RETRIED


def _failure(summary: RunSummary, records: Sequence[SampleRecord]) -> str | None:
    """Why a finished run's numbers are not a measurement, or ``None``: every model request failed,
    or more than :data:`MAX_API_ERROR_RATE` of the expected samples did (the first error quoted)."""
    expected = sum(bench.problems * bench.samples_per_problem for bench in summary.benchmarks)
    failed = sum(bench.api_errors for bench in summary.benchmarks)
    if not expected or not failed or failed <= MAX_API_ERROR_RATE * expected:
        return None
    last: dict[SampleKey, SampleRecord] = {record.key: record for record in records}
    first = next((r.grade.reason for r in last.values() if r.grade.verdict is Verdict.API_ERROR), "")
    share = (
        "every model request failed"
        if failed == expected
        else (
            f"{failed} of {expected} model requests failed "
            f"({failed / expected:.0%} > {MAX_API_ERROR_RATE:.0%})"
        )
    )
    return f"{share}; first: {first}" if first else share
