"""The reward log as run directories: what ``trex-eval serve --out DIR`` writes, and what
``leaderboard``, ``compare``, ``report`` and ``grade`` read like any run.

::

    DIR/epoch-0001/   a run directory (manifest.json, completions.jsonl, samples.jsonl,
    DIR/epoch-0002/   summary.json/.md), its grid the problems seen × ``per_problem`` rollouts
    ...

A rollout of problem *P* is stored in the earliest epoch whose row for *P* has a free slot (its
sample index: slots fill in the order rollouts are stored), else in a new epoch. With
``per_problem`` set to the trainer's group size (GRPO's ``num_generations``), epoch *k* holds the
*k*-th group of rollouts of every problem: one pass over the training prompts per epoch, whatever
order they come in. So
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
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trex_eval.errors import StoreError
from trex_eval.protocols.plan import EvaluationPlan, benchmark_entry
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
from trex_eval.reward.catalogue import INLINE_BENCHMARK, INLINE_SHA256, Target
from trex_eval.reward.records import ProblemKey, RewardRecord, RewardRequest, Rollout
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
    ``name@version``; ``policy_spec`` its whole spec (``RewardPolicy.manifest()``: terms, weights,
    ``sha256``), kept in each epoch manifest's provenance (``reward_policy``) with its ``sha256``
    beside the policy's name, so that a log is continued only under the same terms; ``per_problem``
    (≥ 1) the slots of each problem's row in one epoch.
    """

    def __init__(
        self,
        root: Path,
        *,
        per_problem: int,
        policy: str,
        protocol: str,
        policy_spec: dict[str, Any] | None = None,
        provenance: dict[str, object] | None = None,
        command: Sequence[str] = (),
    ) -> None:
        if per_problem < 1:
            raise StoreError(f"a reward log needs at least one rollout per problem, not {per_problem}")
        self.root = root
        self.per_problem = per_problem
        self.policy = policy
        self.policy_spec = dict(policy_spec or {})
        self.protocol = protocol
        self.provenance = dict(provenance or {})
        if self.policy_spec:
            self.provenance["reward_policy"] = self.policy_spec
        self.command = tuple(command)
        self._epochs: list[_Epoch] = []
        self._next = 1
        self._closed = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> RewardRunLog:
        """Continue the epochs already under ``root`` (none when it is new). An epoch's manifest
        is made whole again first: every problem its samples hold is selected (a crash between a
        manifest and its samples can leave either behind), and it is marked unfinished.

        Raises:
            StoreError: an epoch was written with other settings, is being written by another
                process, or its files are corrupt (no epoch is left open then).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        numbered = sorted(
            (int(path.name[len(EPOCH_PREFIX) :]), path)
            for path in self.root.glob(f"{EPOCH_PREFIX}*")
            if path.name[len(EPOCH_PREFIX) :].isdigit() and (path / MANIFEST).is_file()
        )
        try:
            for number, path in numbered:
                self._next = number + 1
                store = RunStore.open(path)
                self._epochs.append(_Epoch(store, store.read_manifest()))
                self._check_settings(path, self._epochs[-1].manifest.settings)
                self._reconcile(self._epochs[-1])
        except BaseException:
            for epoch in self._epochs:
                epoch.store.close()
            self._epochs = []
            raise
        return self

    def _reconcile(self, epoch: _Epoch) -> None:
        held: dict[str, set[str]] = {}
        for record in epoch.store.iter_samples():
            key = (record.benchmark, record.problem_id)
            epoch.filled[key] = max(epoch.filled.get(key, 0), record.sample_index + 1)
            held.setdefault(record.benchmark, set()).add(record.problem_id)
        entries = []
        for entry in epoch.manifest.settings.benchmarks:
            ids = set(entry.problem_ids or ()) | held.pop(entry.name, set())
            chosen = tuple(sorted(ids, key=natural_key))
            entries.append(entry.model_copy(update={"problems": len(chosen), "problem_ids": chosen}))
        if held:
            raise StoreError(
                f"{epoch.store.root} holds samples of {', '.join(sorted(held))}, which its manifest "
                "does not list",
                hint="the directory was edited by hand; move it away and serve again",
            )
        settings = epoch.manifest.settings.model_copy(update={"benchmarks": tuple(entries)})
        epoch.manifest = epoch.manifest.model_copy(update={"settings": settings, "finished_at": None})
        epoch.store.write_manifest(epoch.manifest)

    def __enter__(self) -> RewardRunLog:
        return self.open()

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Mark every epoch finished, write its summary, and release it (idempotent); appends
        after it raise.

        Raises:
            StoreError: some epochs could not be finished (each of the others was).
        """
        with self._lock:
            epochs, self._epochs, self._closed = self._epochs, [], True
        now = _now()
        failed = []
        for epoch in epochs:
            try:
                manifest = epoch.manifest.model_copy(update={"finished_at": now})
                epoch.store.write_manifest(manifest)
                summary = summarize(manifest, epoch.store.iter_samples())
                epoch.store.write_summary(summary_json(summary), render_summary_markdown(summary))
            except (OSError, ValueError) as error:  # StoreError is a ValueError
                failed.append(f"{epoch.store.root.name}: {error}")
            finally:
                epoch.store.close()
        if failed:
            raise StoreError("reward log epochs not finished: " + "; ".join(failed))

    @property
    def epochs(self) -> tuple[Path, ...]:
        """The epoch directories, oldest first."""
        with self._lock:
            return tuple(epoch.store.root for epoch in self._epochs)

    def check(self, plans: Iterable[EvaluationPlan], *, inline_rule: str | None = None) -> None:
        """Refuse to continue epochs that hold one of these benchmarks with other data or rule, or
        inline problems under another rule than ``inline_rule``.

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
                    elif entry.name == INLINE_BENCHMARK and inline_rule is not None:
                        _differs(epoch.store.root, entry, (entry.version, entry.sha256, inline_rule))

    # ------------------------------------------------------------------ writing

    def append(self, items: Sequence[LoggedRollout]) -> list[str]:
        """Store ``items``, each in the next free slot of its problem in the earliest epoch that
        has one (slots fill in the order rollouts are stored). Returns why items were not stored,
        one line each: an epoch holds their benchmark with other data or rule. Nothing counts as
        stored before it is: after a failed write the epochs are what their files say.

        Raises:
            StoreError: the log is closed, or a write failed.
        """
        with self._lock:
            if self._closed:
                raise StoreError(f"the reward log {self.root} is closed")
            refused: list[str] = []
            taken: Counter[tuple[int, tuple[str, str]]] = Counter()
            manifests: dict[int, RunManifest] = {}
            placed: list[tuple[int, int, LoggedRollout]] = []
            for item in items:
                key = (item.target.benchmark, item.target.problem.id)
                index = self._epoch_for(key, taken)
                epoch = self._epochs[index]
                try:
                    manifest = _selected(manifests.get(index, epoch.manifest), epoch.store.root, item.target)
                except StoreError as error:
                    refused.append(str(error))
                    continue
                if manifest is not None:
                    manifests[index] = manifest
                slot = epoch.filled.get(key, 0) + taken[(index, key)]
                taken[(index, key)] += 1
                placed.append((index, slot, item))
            for index, manifest in manifests.items():
                self._epochs[index].store.write_manifest(manifest)
                self._epochs[index].manifest = manifest
            for index, slot, item in placed:
                epoch = self._epochs[index]
                _store(epoch.store, item, slot)
                key = (item.target.benchmark, item.target.problem.id)
                epoch.filled[key] = max(epoch.filled.get(key, 0), slot + 1)
            touched = {index for index, _, _ in placed}
            for index, epoch in enumerate(self._epochs):
                if index not in touched:
                    epoch.store.release_files()  # a long log keeps one descriptor per epoch
            return refused

    def _epoch_for(self, key: tuple[str, str], taken: Counter[tuple[int, tuple[str, str]]]) -> int:
        """Index of the earliest epoch with a free slot for ``key`` (a new epoch when none has)."""
        for index, epoch in enumerate(self._epochs):
            if epoch.filled.get(key, 0) + taken[(index, key)] < self.per_problem:
                return index
        path = self.root / f"{EPOCH_PREFIX}{self._next:04d}"
        self._next += 1
        settings = RunSettings(
            model=BackendSpec(
                name="rollouts",
                backend=REWARD_LOG_BACKEND,
                options={
                    "policy": self.policy,
                    "policy_sha256": self.policy_spec.get("sha256"),
                    "per_problem": self.per_problem,
                },
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
        self._epochs.append(_Epoch(RunStore.create(path, manifest), manifest))
        return len(self._epochs) - 1

    def _check_settings(self, path: Path, settings: RunSettings) -> None:
        # A log written before policies had terms keeps no digest: its name@version decides.
        digest = settings.model.options.get("policy_sha256") or self.policy_spec.get("sha256")
        found = (
            settings.model.backend,
            settings.model.options.get("policy"),
            digest,
            settings.protocol,
            settings.samples,
        )
        wanted = (
            REWARD_LOG_BACKEND,
            self.policy,
            self.policy_spec.get("sha256"),
            self.protocol,
            self.per_problem,
        )
        if found != wanted:
            raise StoreError(
                f"{path} was written with other settings (backend, policy, its terms' sha256, protocol, "
                f"rollouts per problem: {found}; this server: {wanted})",
                hint="serve with the same settings to continue it, or choose another --out",
            )


def _selected(manifest: RunManifest, where: Path, target: Target) -> RunManifest | None:
    """``manifest`` with the target's problem selected (its benchmark entry added where new), or
    None when it is selected already.

    Raises:
        StoreError: the manifest holds the benchmark with other data or rule.
    """
    entries = list(manifest.settings.benchmarks)
    for index, entry in enumerate(entries):
        if entry.name == target.benchmark:
            _differs(where, entry, _identity(target))
            ids = entry.problem_ids or ()
            if target.problem.id in ids:
                return None
            chosen = tuple(sorted((*ids, target.problem.id), key=natural_key))
            entries[index] = entry.model_copy(update={"problems": len(chosen), "problem_ids": chosen})
            break
    else:
        entries.append(_entry(target))
    settings = manifest.settings.model_copy(update={"benchmarks": tuple(entries)})
    return manifest.model_copy(update={"settings": settings})


def unfinished_rollout(target: Target, request: RewardRequest, record: RewardRecord) -> Rollout:
    """The evidence of a rollout answered without being graded (``record`` is ``not_run``)."""
    completion = Completion(problem_id=target.problem.id, sample_index=0, text=request.completion)
    program = target.plan.extract(completion)
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
    if target.inline:
        return BenchmarkEntry(
            name=INLINE_BENCHMARK,
            title="Inline problems (each request gave its label)",
            version=_INLINE_VERSION,
            sha256=INLINE_SHA256,
            problems=1,
            grader=GraderKind.OBJECTIVE,
            rule=target.plan.rule.spec,
            rule_description=target.plan.rule.description,
            extractor="default",
            prompt_set=TRAINER_PROMPT_SET,
            template_sha256="",
            limits=SandboxLimits(),
            problem_ids=ids,
        )
    return benchmark_entry(
        target.plan,
        requested=target.key.benchmark if isinstance(target.key, ProblemKey) else target.plan.benchmark.name,
        prompt_set=TRAINER_PROMPT_SET,
        template_sha256="",
        problems=1,
        problem_ids=ids,
    )


_INLINE_VERSION = 1


def _identity(target: Target) -> tuple[int, str, str]:
    """What an epoch's entry must match to take the target's rollouts: data version, sha256, rule."""
    if target.inline:
        return (_INLINE_VERSION, INLINE_SHA256, target.plan.rule.spec)
    return (target.plan.benchmark.spec.version, target.plan.benchmark.sha256, target.plan.rule.spec)


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
