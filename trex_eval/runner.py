"""The ``trex-eval run`` pipeline: generate -> store -> extract -> execute -> grade -> store.

Entry point::

    result = run(RunRequest(model=spec, benchmarks=("nl4opt",), data_dir=path))
    result.run_dir, result.summary

Every (benchmark, problem, sample) pair is an independent asyncio task: its completion is
appended to ``completions.jsonl`` the moment it arrives, then it waits for a sandbox slot, is
graded, and its :class:`~trex_eval.records.SampleRecord` is appended to ``samples.jsonl``.
Generation therefore never waits for grading (the backend bounds its own concurrency, the
sandbox pool bounds executions), and grading starts with the first completion.

Resuming (``RunRequest.resume``) re-reads the run directory: graded pairs are skipped, pairs with
a stored completion are graded without calling the model again, the rest are generated. The
settings must be identical (same model spec, sampling, benchmarks with the same data sha256,
rules, prompt set, samples, limit, protocol), so a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trex_eval import provenance
from trex_eval.backends.base import Backend, BackendSpec, GenerationRequest, create_backend
from trex_eval.benchmark import Benchmark, load_benchmark
from trex_eval.errors import BenchmarkError, ConfigError, StoreError
from trex_eval.evaluation import EvaluationPlan, plan_for
from trex_eval.fewshot import FewShotPool, PoolItem, SelectionPolicy, Strategy, retrieval_text, select
from trex_eval.grading import STRUCTURE_VARIANTS
from trex_eval.lp import parse_lp
from trex_eval.progress import RunProgress
from trex_eval.prompting import UPSTREAM_SET, FewShotExample, PromptRenderer
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    GurobiPolicy,
    LinearModel,
    Problem,
    Prompt,
    ProtocolName,
    SampleRecord,
    StructureReference,
    Verdict,
)
from trex_eval.report.summary import RunSummary, render_summary_markdown, summarize, summary_json
from trex_eval.sandbox import SandboxLimits, SandboxPool
from trex_eval.store import BenchmarkEntry, CompletionLine, RunManifest, RunSettings, RunStore, SampleKey

ALL_BENCHMARKS = ("nl4opt", "optibench", "b4o-feasible", "b4o-orgeval")

# The reference harness's execution timeouts (reference-harness §4): 360 s for solver targets,
# 180 s for an ORGEval evaluation. trex-eval's own default is shorter: benchmark models are tiny.
COMPAT_WALL_S = {GraderKind.OBJECTIVE: 360.0, GraderKind.STRUCTURE: 180.0}


@dataclass(frozen=True)
class FewShotSettings:
    """``k`` examples per prompt, chosen by ``strategy`` from ``source``: ``"reference"`` (the
    benchmark's own reference programs) or a run directory (its correct samples)."""

    k: int = 0
    strategy: Strategy = "random"
    source: str = "reference"


@dataclass(frozen=True)
class SandboxSettings:
    """Sandbox pool parameters: ``workers`` programs at once, ``limits`` per program (``None`` =
    defaults, with the reference timeouts under the trex-compat protocol)."""

    workers: int = 2
    limits: SandboxLimits | None = None
    isolation: str = "auto"


@dataclass(frozen=True)
class RunRequest:
    """Everything that defines a run (see :class:`~trex_eval.store.RunSettings` for the record).

    ``rules`` overrides grading rules: objective rule specs apply to objective benchmarks, names of
    structure variants to structure benchmarks; ``rules_by_benchmark`` (benchmark as requested ->
    rule) takes precedence, which is how a resumed run keeps each benchmark's own rule.
    ``extractor`` overrides the protocol's extractor. ``data_dir`` is the T-Rex data directory
    (``None`` when no benchmark reads it). ``out`` is the run directory (default
    ``results/<run-id>``). ``samples`` completions per problem use seeds ``seed + i``.
    """

    model: BackendSpec
    data_dir: Path | None
    benchmarks: tuple[str, ...] = ALL_BENCHMARKS
    prompt_set: str = "t-rex"
    samples: int = 1
    limit: int | None = None
    protocol: ProtocolName = "default"
    rules: tuple[str, ...] = ()
    rules_by_benchmark: Mapping[str, str] = field(default_factory=dict)
    extractor: str | None = None
    few_shot: FewShotSettings = FewShotSettings()
    sandbox: SandboxSettings = SandboxSettings()
    gurobi: GurobiPolicy = "auto"
    out: Path | None = None
    command: tuple[str, ...] = ()
    show_progress: bool = True

    @classmethod
    def from_settings(
        cls,
        settings: RunSettings,
        *,
        data_dir: Path | None,
        out: Path | None,
        model: BackendSpec | None = None,
        protocol: ProtocolName | None = None,
        rules: tuple[str, ...] = (),
        workers: int = SandboxSettings.workers,
        command: Sequence[str] = (),
        show_progress: bool = True,
    ) -> RunRequest:
        """The request that reproduces a recorded run: resume it (``out`` = its directory), or
        re-grade its completions (another ``model`` = a replay of them, possibly another
        ``protocol`` or ``rules``; each benchmark keeps its recorded rule unless those change)."""
        same_grading = protocol in (None, settings.protocol) and not rules
        return cls(
            model=model or settings.model,
            data_dir=data_dir,
            benchmarks=tuple(b.requested for b in settings.benchmarks),
            prompt_set=settings.prompt_set,
            samples=settings.samples,
            limit=settings.limit,
            protocol=protocol or settings.protocol,
            rules=rules,
            rules_by_benchmark={b.requested: b.rule for b in settings.benchmarks} if same_grading else {},
            extractor=settings.extractor,
            few_shot=FewShotSettings(
                k=settings.few_shot,
                strategy=settings.few_shot_strategy,
                source=settings.few_shot_source or "reference",
            ),
            sandbox=SandboxSettings(workers=workers, limits=settings.limits),
            gurobi=settings.gurobi,
            out=out,
            command=tuple(command),
            show_progress=show_progress,
        )


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    summary: RunSummary
    graded_now: int
    generated_now: int


@dataclass
class _Benchmark:
    """A benchmark prepared for a run: problems (after ``limit``), plan, renderer, entry."""

    bench: Benchmark
    problems: tuple[Problem, ...]
    plan: EvaluationPlan
    renderer: PromptRenderer
    entry: BenchmarkEntry
    limits: SandboxLimits
    shots: dict[str, tuple[FewShotExample, ...]] = field(default_factory=dict)


def run(request: RunRequest) -> RunResult:
    """Run (or resume) an evaluation. Blocking; see :func:`run_async`."""
    return asyncio.run(run_async(request))


def resume_request(
    run_dir: Path,
    *,
    data_dir: Path | None,
    workers: int = SandboxSettings.workers,
    command: Sequence[str] = (),
    show_progress: bool = True,
) -> RunRequest:
    """The request that continues the run in ``run_dir`` (settings come from its manifest)."""
    settings = RunStore(run_dir).read_manifest().settings
    return RunRequest.from_settings(
        settings,
        data_dir=data_dir,
        out=run_dir,
        workers=workers,
        command=command,
        show_progress=show_progress,
    )


def _split_rules(rules: Sequence[str]) -> tuple[str | None, str | None]:
    objective = [r for r in rules if r not in STRUCTURE_VARIANTS]
    structure = [r for r in rules if r in STRUCTURE_VARIANTS]
    if len(set(objective)) > 1 or len(set(structure)) > 1:
        raise ConfigError(
            f"conflicting rules {', '.join(rules)}",
            hint="give at most one objective rule and one structure variant",
        )
    return (objective[0] if objective else None), (structure[0] if structure else None)


def prepare_benchmarks(request: RunRequest) -> list[_Benchmark]:
    """Load, limit and plan every requested benchmark; render nothing yet."""
    if request.samples < 1:
        raise ConfigError("--samples must be at least 1")
    if request.limit is not None and request.limit < 1:
        raise ConfigError("--limit must be at least 1")
    objective_rule, structure_rule = _split_rules(request.rules)
    prepared: list[_Benchmark] = []
    for name in dict.fromkeys(request.benchmarks):
        bench = load_benchmark(name, data_dir=request.data_dir)
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
        problems = bench.problems[: request.limit] if request.limit else bench.problems
        kind = bench.spec.grader.kind
        rule = request.rules_by_benchmark.get(name) or (
            structure_rule if kind is GraderKind.STRUCTURE else objective_rule
        )
        limits = request.sandbox.limits or (
            SandboxLimits(wall_s=COMPAT_WALL_S[kind], cpu_s=COMPAT_WALL_S[kind])
            if request.protocol == "trex-compat"
            else SandboxLimits()
        )
        plan = plan_for(
            bench, protocol=request.protocol, rule=rule, extractor=request.extractor, gurobi=request.gurobi
        )
        prompt_set = request.prompt_set
        if prompt_set == UPSTREAM_SET and bench.spec.prompt.upstream is None:
            prompt_set = bench.spec.prompt.default_set
        renderer = PromptRenderer(bench, prompt_set)
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
            rule=plan.rule,
            rule_description=plan.rule_description,
            extractor=plan.extractor,
            prompt_set=prompt_set,
            template_sha256=renderer.template_sha256,
            limits=limits,
        )
        prepared.append(_Benchmark(bench, problems, plan, renderer, entry, limits))
    if request.few_shot.k > 0:
        for item in prepared:
            item.shots = _few_shot_examples(item, request)
    return prepared


def _few_shot_examples(item: _Benchmark, request: RunRequest) -> dict[str, tuple[FewShotExample, ...]]:
    pool = FewShotPool(_few_shot_pool(item, request.few_shot.source))
    seed = request.model.sampling.seed
    policy = SelectionPolicy(
        k=request.few_shot.k, strategy=request.few_shot.strategy, seed=42 if seed is None else seed
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


def _settings(request: RunRequest, prepared: Sequence[_Benchmark]) -> RunSettings:
    return RunSettings(
        model=request.model,
        sampling=request.model.sampling,
        samples=request.samples,
        limit=request.limit,
        protocol=request.protocol,
        prompt_set=request.prompt_set,
        extractor=request.extractor,
        few_shot=request.few_shot.k,
        few_shot_strategy=request.few_shot.strategy,
        few_shot_source=request.few_shot.source if request.few_shot.k else None,
        gurobi=request.gurobi,
        limits=request.sandbox.limits,
        benchmarks=tuple(item.entry for item in prepared),
    )


def default_run_id(request: RunRequest, *, now: dt.datetime | None = None) -> str:
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", request.model.name)
    protocol = "" if request.protocol == "default" else f"-{request.protocol}"
    # The suffix keeps two runs started in the same second apart.
    return f"{name}-{request.prompt_set}{protocol}-{stamp}-{secrets.token_hex(2)}"


def _open_store(request: RunRequest, settings: RunSettings) -> RunStore:
    run_dir = request.out or Path("results") / default_run_id(request)
    if (run_dir / "manifest.json").exists():
        previous = RunStore(run_dir).read_manifest().settings
        if previous != settings:
            raise StoreError(
                f"{run_dir} holds a run with different settings: {_settings_diff(previous, settings)}",
                hint="resume with exactly the same settings (`trex-eval run --resume DIR` reads them "
                "from the manifest), or choose another --out",
            )
        return RunStore.open(run_dir)
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    manifest = RunManifest(run_id=run_dir.name, created_at=now, command=request.command, settings=settings)
    return RunStore.create(run_dir, manifest)


def _settings_diff(old: RunSettings, new: RunSettings) -> str:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    changed = [key for key in a if a[key] != b.get(key)]
    if "benchmarks" in changed:
        for x, y in zip(a["benchmarks"], b["benchmarks"], strict=False):
            diff = [k for k in x if x[k] != y.get(k)]
            if diff:
                return f"benchmark {x['name']}: {', '.join(diff)} differ"
    return ", ".join(changed) + " differ"


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


async def run_async(request: RunRequest) -> RunResult:
    """Run or resume an evaluation (see module docstring)."""
    prepared = prepare_benchmarks(request)
    settings = _settings(request, prepared)
    store = _open_store(request, settings)
    try:
        return await _execute(request, prepared, settings, store)
    finally:
        store.close()


async def _execute(
    request: RunRequest, prepared: Sequence[_Benchmark], settings: RunSettings, store: RunStore
) -> RunResult:
    # A sample whose model request failed is tried again when the run is resumed.
    graded = {r.key for r in store.iter_samples() if r.grade.verdict is not Verdict.API_ERROR}
    stored = {line.key: line for line in store.iter_completions() if line.completion.error is None}
    # Problems, prompts and stored completions live for the whole run; moving them out of the
    # collector's reach keeps full collections (triggered by per-sample records) from re-scanning
    # them: halves the harness's per-sample overhead (scripts/bench_harness_overhead.py).
    gc.collect()
    gc.freeze()
    todo: list[tuple[_Benchmark, Problem, int]] = [
        (item, problem, i)
        for item in prepared
        for problem in item.problems
        for i in range(request.samples)
        if (item.bench.name, problem.id, i) not in graded
    ]
    # Programs must not read the answers (data directory, benchmark folders) or other samples'
    # grades (run directories).
    hidden = {str(store.root.resolve().parent), *(str(item.bench.root) for item in prepared)}
    if request.data_dir is not None:
        hidden.add(str(request.data_dir))
    pool = SandboxPool(
        limits=SandboxLimits(),
        workers=request.sandbox.workers,
        isolation=request.sandbox.isolation,  # type: ignore[arg-type]
        hidden=tuple(sorted(hidden)),
    )
    needs_model = any((item.bench.name, p.id, i) not in stored for item, p, i in todo)
    backend = create_backend(request.model) if needs_model else None
    progress = RunProgress(
        {item.bench.name: (item.entry.title, len(item.problems) * request.samples) for item in prepared},
        enabled=request.show_progress,
    )
    counters = {"generated": 0, "graded": 0}
    await asyncio.to_thread(pool.start)
    try:
        progress.note(f"sandbox isolation: {pool.isolation}")
        for item in prepared:
            if item.bench.row_errors:
                progress.note(
                    f"{item.bench.name}: {len(item.bench.row_errors)} data rows skipped, first: "
                    f"{item.bench.row_errors[0]} "
                    f"(`trex-eval benchmarks validate {item.entry.source}` lists them)"
                )
        if backend is not None:
            await backend.start()
        manifest = store.read_manifest()
        session = provenance.collect(
            request.data_dir, sandbox=pool.describe(), backend=dict(backend.describe()) if backend else None
        )
        if manifest.provenance:
            # A resumed run: keep what every earlier session ran with.
            earlier = [*manifest.provenance.get("earlier_sessions", []), {**manifest.provenance}]
            for entry in earlier:
                entry.pop("earlier_sessions", None)
            session["earlier_sessions"] = earlier
        store.write_manifest(manifest.model_copy(update={"provenance": session}))
        if graded:
            passed = [r.benchmark for r in store.iter_samples() if r.grade.passed]
            for item in prepared:
                done = sum(1 for (name, _, _) in graded if name == item.bench.name)
                progress.restore(item.bench.name, done=done, passed=passed.count(item.bench.name))
        references = _ReferenceModels()
        with progress:
            tasks = [
                asyncio.ensure_future(
                    _one_sample(
                        item,
                        problem,
                        i,
                        request,
                        store,
                        pool,
                        backend,
                        stored,
                        references,
                        progress,
                        counters,
                    )
                )
                for item, problem, i in todo
            ]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                # One failure ends the run: stop the others before the pool and backend go away.
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
    finally:
        if backend is not None:
            await backend.close()
        await asyncio.to_thread(pool.close)
        gc.unfreeze()
    return _finish(store, settings, counters)


async def _one_sample(
    item: _Benchmark,
    problem: Problem,
    index: int,
    request: RunRequest,
    store: RunStore,
    pool: SandboxPool,
    backend: Backend | None,
    stored: dict[SampleKey, CompletionLine],
    references: Callable[[StructureReference], LinearModel],
    progress: RunProgress,
    counters: dict[str, int],
) -> None:
    key = (item.bench.name, problem.id, index)
    line = stored.get(key)
    if line is None:
        assert backend is not None
        prompt = item.renderer.render(problem, few_shot=item.shots.get(problem.id, ()))
        seed = None if request.model.sampling.seed is None else request.model.sampling.seed + index
        completion = await backend.generate(
            GenerationRequest(
                problem=problem, prompt=prompt, params=request.model.sampling, sample_index=index, seed=seed
            )
        )
        line = CompletionLine(benchmark=item.bench.name, prompt=prompt, completion=completion)
        store.append_completion(line)
        counters["generated"] += 1
        progress.generated(item.bench.name)
    record = await _grade(item, problem, line.prompt, line.completion, pool, references)
    store.append_sample(record)
    counters["graded"] += 1
    progress.graded(item.bench.name, passed=record.grade.passed)


async def _grade(
    item: _Benchmark,
    problem: Problem,
    prompt: Prompt,
    completion: Completion,
    pool: SandboxPool,
    references: Callable[[StructureReference], LinearModel],
) -> SampleRecord:
    plan = item.plan
    program = plan.extract(completion)
    if completion.error is not None:
        execution = Execution(status=ExecStatus.NOT_RUN, detail=f"no completion: {completion.error}")
        grade = _api_error(plan, completion.error)
    elif program.code is None:
        execution = Execution(status=ExecStatus.NO_CODE, detail=program.reason)
        grade = plan.grade(problem, execution, reference_model=references)
    else:
        execution = await pool.arun(plan.job(problem, program), limits=item.limits)
        grade = await asyncio.to_thread(plan.grade, problem, execution, reference_model=references)
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


def _api_error(plan: EvaluationPlan, error: str) -> Grade:
    return Grade(verdict=Verdict.API_ERROR, rule=plan.rule, reason=f"the model request failed: {error}")


def _finish(store: RunStore, settings: RunSettings, counters: dict[str, int]) -> RunResult:
    manifest = store.read_manifest()
    summary = summarize(manifest, store.iter_samples())
    store.write_summary(summary_json(summary), render_summary_markdown(summary))
    finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    store.write_manifest(manifest.model_copy(update={"finished_at": finished}))
    return RunResult(store.root, summary, counters["graded"], counters["generated"])
