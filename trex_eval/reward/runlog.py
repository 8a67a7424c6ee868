"""The reward log as run directories: what ``trex-eval serve --out DIR`` writes, and what
``leaderboard``, ``compare``, ``report`` and ``grade`` read like any run.

::

    DIR/epoch-0001/   a run directory (manifest.json, completions.jsonl, samples.jsonl,
    DIR/epoch-0002/   summary.json/.md), its grid the problems seen × ``per_problem`` rollouts
    ...

A rollout of problem *P* is stored in the earliest epoch whose row for *P* has a free slot (its
sample index: slots fill in arrival order), else in a new epoch. With ``per_problem`` set to the
trainer's group size (GRPO's ``num_generations``), epoch *k* holds the *k*-th group of rollouts of
every problem: one pass over the training prompts per epoch, whatever order they come in. So
``trex-eval compare DIR/epoch-0001 DIR/epoch-0004`` pairs the same problems early and late in
training (``--common`` where the epochs saw different problems), and ``leaderboard DIR/epoch-*``
tracks the verified accuracy epoch by epoch.

Each sample is the one a run would store: the trainer's prompt (when the request sent one), the
completion, the extracted program, the execution and the grade with its rule. A rollout not graded
by its request's deadline is stored as answered (``not_run``). A problem enters its epoch's
manifest (the benchmark entry's ``problem_ids``) before its first rollout is stored, so a reader
never meets a sample its manifest does not select; a slot never filled (a smaller group, or the
server stopped) is missing, so counted as failed, as in any run. Summaries are written by
:meth:`RewardRunLog.close`. Opening an existing DIR continues it, after checking that it was
written with the same policy, protocol and ``per_problem`` (and, per benchmark, the same data and
rule: :meth:`RewardRunLog.check`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trex_eval.errors import StoreError
from trex_eval.extract import extract
from trex_eval.protocols.plan import EvaluationPlan
from trex_eval.records import (
    BackendSpec,
    Completion,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    Prompt,
    SampleRecord,
    SamplingParams,
    SandboxLimits,
)
from trex_eval.report.runs import natural_key
from trex_eval.report.summary import render_summary_markdown, summarize, summary_json
from trex_eval.reward.catalogue import INLINE_BENCHMARK, Target
from trex_eval.reward.records import RewardRecord, RewardRequest, Rollout
from trex_eval.store import (
    MANIFEST,
    REWARD_LOG_BACKEND,
    BenchmarkEntry,
    CompletionLine,
    RunManifest,
    RunSettings,
    RunStore,
)

EPOCH_PREFIX = "epoch-"
TRAINER_PROMPT_SET = "trainer"
"""The prompt set a reward log names: the prompts are the trainer's, not rendered by trex-eval."""


@dataclass
class _Epoch:
    store: RunStore
    manifest: RunManifest
    filled: dict[tuple[str, str], int] = field(default_factory=dict)
    """(benchmark, problem id) -> rollouts stored (the next free slot)."""


@dataclass(frozen=True)
class LoggedRollout:
    """One answered rollout to store: what it answered, what was asked and how it was scored."""

    target: Target
    request: RewardRequest
    rollout: Rollout


class RewardRunLog:
    """Writes rollouts into epoch run directories under ``root``; see the module docstring.

    Thread-safe: :meth:`append` may be called from many threads. ``policy`` is the reward policy's
    ``name@version``; ``per_problem`` (≥ 1) the slots of each problem's row in one epoch.
    """

    def __init__(
        self,
        root: Path,
        *,
        per_problem: int,
        policy: str,
        protocol: str,
        provenance: dict[str, object] | None = None,
        command: Sequence[str] = (),
    ) -> None:
        if per_problem < 1:
            raise StoreError(f"a reward log needs at least one rollout per problem, not {per_problem}")
        self.root = root
        self.per_problem = per_problem
        self.policy = policy
        self.protocol = protocol
        self.provenance = dict(provenance or {})
        self.command = tuple(command)
        self._epochs: list[_Epoch] = []
        self._next = 1
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> RewardRunLog:
        """Continue the epochs already under ``root`` (none when it is new).

        Raises:
            StoreError: an epoch was written with other settings, is being written by another
                process, or its files are corrupt.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        numbered = (
            (int(path.name[len(EPOCH_PREFIX) :]), path)
            for path in self.root.glob(f"{EPOCH_PREFIX}*")
            if path.name[len(EPOCH_PREFIX) :].isdigit() and (path / MANIFEST).is_file()
        )
        for number, path in sorted(numbered):
            self._next = number + 1
            store = RunStore.open(path)
            try:
                manifest = store.read_manifest()
                self._check_settings(path, manifest.settings)
                epoch = _Epoch(store, manifest.model_copy(update={"finished_at": None}))
                for record in store.iter_samples():
                    key = (record.benchmark, record.problem_id)
                    epoch.filled[key] = max(epoch.filled.get(key, 0), record.sample_index + 1)
            except BaseException:
                store.close()
                raise
            self._epochs.append(epoch)
        return self

    def __enter__(self) -> RewardRunLog:
        return self.open()

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Mark every epoch finished, write its summary, and release it (idempotent)."""
        with self._lock:
            epochs, self._epochs = self._epochs, []
        now = _now()
        for epoch in epochs:
            try:
                manifest = epoch.manifest.model_copy(update={"finished_at": now})
                epoch.store.write_manifest(manifest)
                summary = summarize(manifest, epoch.store.iter_samples())
                epoch.store.write_summary(summary_json(summary), render_summary_markdown(summary))
            finally:
                epoch.store.close()

    @property
    def epochs(self) -> tuple[Path, ...]:
        """The epoch directories, oldest first."""
        with self._lock:
            return tuple(epoch.store.root for epoch in self._epochs)

    def check(self, plans: Iterable[EvaluationPlan]) -> None:
        """Refuse to continue epochs that hold one of these benchmarks with other data or rule.

        Raises:
            StoreError: naming the epoch, the benchmark and what differs.
        """
        wanted = {plan.benchmark.name: plan for plan in plans}
        with self._lock:
            for epoch in self._epochs:
                for entry in epoch.manifest.settings.benchmarks:
                    plan = wanted.get(entry.name)
                    if plan is not None:
                        current = (plan.benchmark.spec.version, plan.benchmark.sha256, plan.rule.spec)
                        _differs(epoch.store.root, entry, current)

    # ------------------------------------------------------------------ writing

    def append(self, items: Sequence[LoggedRollout]) -> None:
        """Store ``items``, each in its epoch's next free slot for its problem.

        Raises:
            StoreError: the log is closed, or an epoch holds the benchmark with other data or rule.
        """
        with self._lock:
            placed: list[tuple[_Epoch, int, LoggedRollout]] = []
            touched: dict[int, _Epoch] = {}
            for item in items:
                epoch = self._epoch_for(item.target)
                key = (item.target.benchmark, item.target.problem.id)
                slot = epoch.filled.get(key, 0)
                epoch.filled[key] = slot + 1
                if slot == 0 and self._select(epoch, item.target):
                    touched[id(epoch)] = epoch
                placed.append((epoch, slot, item))
            for epoch in touched.values():
                epoch.store.write_manifest(epoch.manifest)
            for epoch, slot, item in placed:
                _store(epoch.store, item, slot)

    def _epoch_for(self, target: Target) -> _Epoch:
        key = (target.benchmark, target.problem.id)
        for epoch in self._epochs:
            if epoch.filled.get(key, 0) < self.per_problem:
                return epoch
        path = self.root / f"{EPOCH_PREFIX}{self._next:04d}"
        self._next += 1
        settings = RunSettings(
            model=BackendSpec(
                name="rollouts",
                backend=REWARD_LOG_BACKEND,
                options={"policy": self.policy, "per_problem": self.per_problem},
                sampling=SamplingParams(seed=None),
                description="rollouts of the policy under training, scored by trex-eval serve",
            ),
            sampling=SamplingParams(seed=None),
            samples=self.per_problem,
            protocol=self.protocol,
            prompt_set=TRAINER_PROMPT_SET,
            benchmarks=(),
        )
        manifest = RunManifest(
            run_id=f"{self.root.name}-{path.name}",
            created_at=_now(),
            command=self.command,
            settings=settings,
            provenance=self.provenance,
        )
        epoch = _Epoch(RunStore.create(path, manifest), manifest)
        self._epochs.append(epoch)
        return epoch

    def _select(self, epoch: _Epoch, target: Target) -> bool:
        """Add the target's problem to the epoch's benchmark entry; whether the manifest changed."""
        settings = epoch.manifest.settings
        entries = list(settings.benchmarks)
        for index, entry in enumerate(entries):
            if entry.name == target.benchmark:
                _same_benchmark(epoch.store.root, entry, _entry(target))
                ids = entry.problem_ids or ()
                if target.problem.id in ids:
                    return False
                chosen = tuple(sorted((*ids, target.problem.id), key=natural_key))
                entries[index] = entry.model_copy(update={"problems": len(chosen), "problem_ids": chosen})
                break
        else:
            entries.append(_entry(target))
        settings = settings.model_copy(update={"benchmarks": tuple(entries)})
        epoch.manifest = epoch.manifest.model_copy(update={"settings": settings})
        return True

    def _check_settings(self, path: Path, settings: RunSettings) -> None:
        found = (
            settings.model.backend,
            settings.model.options.get("policy"),
            settings.protocol,
            settings.samples,
        )
        wanted = (REWARD_LOG_BACKEND, self.policy, self.protocol, self.per_problem)
        if found != wanted:
            raise StoreError(
                f"{path} was written with other settings (backend, policy, protocol, rollouts per "
                f"problem: {found}; this server: {wanted})",
                hint="serve with the same settings to continue it, or choose another --out",
            )


def unfinished_rollout(target: Target, request: RewardRequest, record: RewardRecord) -> Rollout:
    """The evidence of a rollout answered without being graded (``record`` is ``not_run``)."""
    completion = Completion(problem_id=target.problem.id, sample_index=0, text=request.completion)
    program = target.plan.extract(completion) if target.plan else extract(completion, extractor="default")
    return Rollout(
        record=record,
        completion=completion,
        program=program,
        execution=Execution(status=ExecStatus.NOT_RUN, detail=record.reason),
        grade=Grade(verdict=record.verdict, rule=record.rule, reason=record.reason),
    )


def _store(store: RunStore, item: LoggedRollout, slot: int) -> None:
    problem_id = item.target.problem.id
    prompt = Prompt(
        problem_id=problem_id,
        prompt_set=TRAINER_PROMPT_SET,
        messages=item.request.messages(),
        template_sha256="",
    )
    completion = item.rollout.completion.model_copy(update={"sample_index": slot})
    store.append_completion(
        CompletionLine(benchmark=item.target.benchmark, prompt=prompt, completion=completion)
    )
    store.append_sample(
        SampleRecord(
            benchmark=item.target.benchmark,
            problem_id=problem_id,
            sample_index=slot,
            prompt=prompt,
            completion=completion,
            program=item.rollout.program,
            execution=item.rollout.execution,
            grade=item.rollout.grade,
        )
    )


def _entry(target: Target) -> BenchmarkEntry:
    """The manifest entry of the target's benchmark, selecting its problem only."""
    ids = (target.problem.id,)
    if target.plan is None:
        assert target.rule is not None
        return BenchmarkEntry(
            name=INLINE_BENCHMARK,
            title="Inline problems (each request gave its label)",
            version=1,
            sha256=hashlib.sha256(b"").hexdigest(),
            problems=1,
            grader=GraderKind.OBJECTIVE,
            rule=target.rule.spec,
            rule_description=target.rule.description,
            extractor="default",
            prompt_set=TRAINER_PROMPT_SET,
            template_sha256="",
            limits=SandboxLimits(),
            problem_ids=ids,
        )
    plan, bench = target.plan, target.plan.benchmark
    named = getattr(target.key, "benchmark", bench.name)
    return BenchmarkEntry(
        name=bench.name,
        source=str(bench.spec_path.resolve()) if named.endswith((".yaml", ".yml")) else named,
        skipped_rows=len(bench.row_errors),
        title=bench.spec.title,
        version=bench.spec.version,
        sha256=bench.sha256,
        problems=1,
        grader=bench.spec.grader.kind,
        rule=plan.rule.spec,
        rule_description=plan.rule.description,
        extractor=plan.extractor,
        prompt_set=TRAINER_PROMPT_SET,
        template_sha256="",
        limits=plan.limits,
        problem_ids=ids,
    )


def _same_benchmark(where: Path, entry: BenchmarkEntry, current: BenchmarkEntry) -> None:
    _differs(where, entry, (current.version, current.sha256, current.rule))


def _differs(where: Path, entry: BenchmarkEntry, wanted: tuple[int, str, str]) -> None:
    found = (entry.version, entry.sha256, entry.rule)
    if found != wanted:
        raise StoreError(
            f"{where} holds benchmark '{entry.name}' as v{found[0]} (sha256 {found[1][:12]}, rule "
            f"{found[2]}); this server grades v{wanted[0]} (sha256 {wanted[1][:12]}, rule {wanted[2]})",
            hint="choose another --out for this data or rule",
        )


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
