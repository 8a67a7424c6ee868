"""Preparing a run: each requested benchmark loaded, limited to its selection and planned (its
protocol, rule, extractor, limits), its renderer and manifest entry made, few-shot examples chosen;
and the run's settings as the manifest records them. Nothing is rendered or run here."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trex_eval.benchmarks import Benchmark, load_benchmark
from trex_eval.errors import BenchmarkError, ConfigError
from trex_eval.grading import get_rule
from trex_eval.prompting.fewshot import FewShotPool, PoolItem, SelectionPolicy, retrieval_text, select
from trex_eval.prompting.render import UPSTREAM_SET, FewShotExample, PromptRenderer
from trex_eval.protocols.plan import EvaluationPlan, benchmark_entry, plan_for
from trex_eval.records import GraderKind, Problem
from trex_eval.run.repair import FEEDBACK_MODES, RepairTemplate
from trex_eval.run.spec import RunSpec
from trex_eval.store import BenchmarkEntry, RunSettings, RunStore


@dataclass
class PreparedBenchmark:
    """A benchmark prepared for a run: problems (after ``limit``), plan, renderer, entry."""

    bench: Benchmark
    problems: tuple[Problem, ...]
    plan: EvaluationPlan
    renderer: PromptRenderer
    entry: BenchmarkEntry
    shots: dict[str, tuple[FewShotExample, ...]] = field(default_factory=dict)


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


def prepare_benchmarks(spec: RunSpec, *, data_dir: Path | None) -> list[PreparedBenchmark]:
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
    prepared: list[PreparedBenchmark] = []
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
            _refuse_unknown_ids(bench, chosen)
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
        entry = benchmark_entry(
            plan,
            requested=name,
            prompt_set=prompt_set,
            template_sha256=renderer.template_sha256,
            problems=len(problems),
            problem_ids=tuple(p.id for p in problems) if chosen is not None else None,
        )
        prepared.append(PreparedBenchmark(bench, problems, plan, renderer, entry))
    if spec.few_shot.k > 0:
        for item in prepared:
            item.shots = _few_shot_examples(item, spec)
    return prepared


def _refuse_unknown_ids(bench: Benchmark, chosen: frozenset[str]) -> None:
    """Refuse a selection naming a problem the benchmark left out (saying why) or does not have.

    Raises:
        ConfigError: the first such id, with the reason or what ids look like.
    """
    have = {p.id for p in bench.problems}
    left_out = {Path(row.where).name: row.message for row in bench.skipped}
    for problem_id in sorted(chosen - have):
        if problem_id in left_out:
            raise ConfigError(
                f"problem '{problem_id}' of benchmark '{bench.name}' is left out: {left_out[problem_id]}"
            )
        raise ConfigError(
            f"benchmark '{bench.name}' has no problem '{problem_id}'",
            hint=f"ids look like {', '.join(repr(p.id) for p in bench.problems[:3])}",
        )


def _problem_ids(name: str, ids: Sequence[str]) -> frozenset[str]:
    if not ids:
        raise ConfigError(f"benchmark '{name}': an empty selection of problem ids")
    return frozenset(ids)


def _few_shot_examples(item: PreparedBenchmark, spec: RunSpec) -> dict[str, tuple[FewShotExample, ...]]:
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


def _few_shot_pool(item: PreparedBenchmark, source: str) -> list[PoolItem]:
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


def run_settings(spec: RunSpec, prepared: Sequence[PreparedBenchmark]) -> RunSettings:
    """What the manifest records of ``spec`` and its prepared benchmarks (compared on resume)."""
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
